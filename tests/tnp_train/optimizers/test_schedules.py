"""tt.optimizers.schedules: each schedule against its formula written out here, at steps drawn by
hypothesis; configs, serialization, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt

S = tt.optimizers.schedules
steps = st.integers(0, 5000)


def value(schedule, step):
    out = schedule(step)
    assert isinstance(out, tnp.ndarray) and out.dtype == np.float32 and out.shape == ()
    return float(out)


def close(got, want):
    assert got == pytest.approx(want, rel=2e-7, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(steps, st.booleans())
def test_exponential_decay(step, staircase):
    s = S.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.9, staircase=staircase)
    p = step // 100 if staircase else step / 100
    close(value(s, step), 0.1 * 0.9 ** p)


@settings(max_examples=60, deadline=None)
@given(steps, st.booleans())
def test_inverse_time_decay(step, staircase):
    s = S.InverseTimeDecay(0.5, decay_steps=30, decay_rate=2.0, staircase=staircase)
    p = step // 30 if staircase else step / 30
    close(value(s, step), 0.5 / (1 + 2.0 * p))


@settings(max_examples=60, deadline=None)
@given(steps)
def test_piecewise_constant_decay(step):
    s = S.PiecewiseConstantDecay([100, 1000, 2000], [1.0, 0.5, 0.1, 0.01])
    want = 1.0 if step <= 100 else 0.5 if step <= 1000 else 0.1 if step <= 2000 else 0.01
    close(value(s, step), want)


@settings(max_examples=80, deadline=None)
@given(steps, st.booleans(), st.sampled_from([1.0, 0.5, 2.0]))
def test_polynomial_decay(step, cycle, power):
    s = S.PolynomialDecay(0.1, decay_steps=700, end_learning_rate=0.001, power=power, cycle=cycle)
    if cycle:
        horizon = 700 * max(1, math.ceil(step / 700))
        frac = step / horizon
    else:
        frac = min(step, 700) / 700
    close(value(s, step), (0.1 - 0.001) * (1 - frac) ** power + 0.001)


@settings(max_examples=60, deadline=None)
@given(steps, st.sampled_from([0.0, 0.1]))
def test_cosine_decay(step, alpha):
    s = S.CosineDecay(0.2, decay_steps=1000, alpha=alpha)
    done = min(step, 1000) / 1000
    close(value(s, step), 0.2 * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * done)) + alpha))


@settings(max_examples=60, deadline=None)
@given(steps)
def test_cosine_decay_with_warmup(step):
    s = S.CosineDecay(0.0, decay_steps=1000, alpha=0.1, warmup_target=0.4, warmup_steps=200)
    if step < 200:
        want = 0.4 * step / 200
    else:
        done = min(step - 200, 1000) / 1000
        want = 0.4 * (0.9 * 0.5 * (1 + math.cos(math.pi * done)) + 0.1)
    close(value(s, step), want)


def _restart_reference(step, first, t_mul, m_mul, alpha, lr0):
    """Walk the periods one by one: period i lasts first * t_mul**i steps."""
    start, length, i = 0.0, float(first), 0
    while step >= start + length:
        start += length
        length *= t_mul
        i += 1
    frac = (step - start) / length
    return lr0 * ((1 - alpha) * 0.5 * m_mul ** i * (1 + math.cos(math.pi * frac)) + alpha)


@settings(max_examples=100, deadline=None)
@given(steps, st.sampled_from([1.0, 2.0, 3.0, 1.5]), st.sampled_from([1.0, 0.5]))
def test_cosine_decay_restarts(step, t_mul, m_mul):
    s = S.CosineDecayRestarts(0.3, first_decay_steps=50, t_mul=t_mul, m_mul=m_mul, alpha=0.05)
    close(value(s, step), _restart_reference(step, 50, t_mul, m_mul, 0.05, 0.3))


def test_restart_boundaries_restart():
    s = S.CosineDecayRestarts(1.0, first_decay_steps=10, t_mul=3.0)
    for boundary in (10, 40, 130, 400):                 # 10, 10 + 30, + 90, + 270
        assert value(s, boundary) == 1.0


def test_steps_may_be_arrays_and_variables():
    s = S.ExponentialDecay(1.0, 10, 0.5)
    close(value(s, tnp.asarray(10)), 0.5)
    close(value(s, np.int64(20)), 0.25)
    close(value(s, tt.Variable(np.int64(30), trainable=False)), 0.125)
    with pytest.raises(ValueError, match="scalar"):
        s(np.array([1, 2]))


ALL = [S.ExponentialDecay(0.1, 10, 0.96, staircase=True, name="e"),
       S.PiecewiseConstantDecay([5, 10], [0.3, 0.2, 0.1]),
       S.InverseTimeDecay(0.1, 10, 0.5),
       S.PolynomialDecay(0.1, 100, 0.01, power=2.0, cycle=True),
       S.CosineDecay(0.1, 100, alpha=0.2, warmup_target=0.5, warmup_steps=10),
       S.CosineDecayRestarts(0.1, 20, t_mul=1.5, m_mul=0.9, alpha=0.01)]


@pytest.mark.parametrize("schedule", ALL, ids=lambda s: type(s).__name__)
def test_config_round_trips(schedule):
    cfg = schedule.get_config()
    again = type(schedule).from_config(cfg)
    assert again.get_config() == cfg
    ser = S.serialize(schedule)
    assert ser == {"class_name": type(schedule).__name__, "config": cfg}
    back = S.deserialize(ser)
    assert type(back) is type(schedule)
    for step in (0, 7, 55, 123):
        assert value(back, step) == value(schedule, step)


def test_optimizer_learning_rate_follows_its_schedule():
    sched = S.InverseTimeDecay(0.5, decay_steps=1, decay_rate=1.0)
    opt = tt.optimizers.SGD(learning_rate=sched)
    v = tt.Variable([0.0])
    for _ in range(3):
        opt.apply_gradients([(tnp.asarray([1.0]), v)])
    want = -sum(float(np.float32(0.5 / (1 + k))) for k in range(3))
    assert v.numpy()[0] == pytest.approx(want, rel=1e-12)


def test_errors_and_custom_schedules():
    with pytest.raises(ValueError, match="one more"):
        S.PiecewiseConstantDecay([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="increasing"):
        S.PiecewiseConstantDecay([2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="decay_steps"):
        S.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="Unknown decay"):
        S.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError):
        S.serialize(lambda step: 0.1)

    class Halve(S.LearningRateSchedule):
        def __init__(self, lr0):
            self.lr0 = lr0

        def __call__(self, step):
            return tnp.asarray(np.float32(self.lr0 / 2 ** int(step)))

        def get_config(self):
            return {"lr0": self.lr0}

    opt = tt.optimizers.SGD(learning_rate=Halve(1.0))
    v = tt.Variable([0.0])
    opt.apply_gradients([(tnp.asarray([1.0]), v)])
    opt.apply_gradients([(tnp.asarray([1.0]), v)])
    assert v.numpy()[0] == -1.5
    cfg = tt.optimizers.serialize(opt)
    back = tt.optimizers.deserialize(cfg, custom_objects={"Halve": Halve})
    assert isinstance(back._lr_fn, Halve) and back._lr_fn.lr0 == 1.0
