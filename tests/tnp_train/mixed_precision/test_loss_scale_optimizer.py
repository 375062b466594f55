"""LossScaleOptimizer (tt.mixed_precision, TF 2.4's API): the dynamic loss-scale state machine
on crafted gradients, skipping, delegation, aggregation order, every optimizer, fit, checkpoints
and the float16 underflow that loss scaling exists for."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tnp
import tnp_train as tt
from tnp_train.mixed_precision import LossScaleOptimizer

ALL_OPTIMIZERS = [
    ("SGD", dict(learning_rate=0.1)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(learning_rate=0.01)),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.01)),
    ("RMSprop", dict(learning_rate=0.01, momentum=0.5)),
    ("Adagrad", dict(learning_rate=0.1)),
    ("Adadelta", dict(learning_rate=1.0)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Nadam", dict(learning_rate=0.01)),
    ("Lion", dict(learning_rate=0.001)),
]


@pytest.fixture
def global_policy():
    """Set a global policy inside a test; the previous one comes back afterwards."""
    before = tt.mixed_precision.global_policy()
    yield tt.mixed_precision.set_global_policy
    tt.mixed_precision.set_global_policy(before)


def _vars(seed=0):
    rng = np.random.default_rng(seed)
    return [tt.Variable(rng.standard_normal(s).astype(np.float32), name=f"v{i}")
            for i, s in enumerate([(3,), (2, 4), ()])]


def _grads(seed=1, bad=None, where=None):
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(s).astype(np.float32) for s in [(3,), (2, 4), ()]]
    if bad is not None:
        g = gs[where]
        if g.ndim:
            g.flat[-1] = bad
        else:
            gs[where] = np.float32(bad)
    return [tnp.asarray(g) for g in gs]


def _slot_values(opt, vs):
    out = {}
    for v in vs:
        for n in opt.get_slot_names():
            out[(v.name, n)] = opt.get_slot(v, n).numpy()
    return out


# ----------------------------------------------------------------------------- state machine
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", [0, 1, 2])
def test_non_finite_gradient_skips_step_and_halves_scale(bad, where):
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.Adam(0.1), initial_scale=1024.0)
    opt.apply_gradients(zip(_grads(), vs))             # slots exist, one finite step counted
    assert float(opt.loss_scale) == 1024.0 and int(opt.dynamic_counter) == 1
    before = [v.numpy() for v in vs]
    slots = _slot_values(opt, vs)
    assert slots
    it = opt.apply_gradients(zip(_grads(2, bad, where), vs))
    assert int(it) == 1 and int(opt.iterations.numpy()) == 1   # as TF 2.4: not incremented
    for v, b in zip(vs, before):
        np.testing.assert_array_equal(v.numpy(), b)
    for k, s in _slot_values(opt, vs).items():
        np.testing.assert_array_equal(s, slots[k])
    assert float(opt.loss_scale) == 512.0
    assert int(opt.dynamic_counter) == 0


def test_skipped_first_step_creates_no_slots():
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1, momentum=0.9))
    opt.apply_gradients(zip(_grads(bad=np.nan, where=1), vs))
    assert opt.get_slot_names() == []
    with pytest.raises(KeyError):
        opt.get_slot(vs[0], "momentum")
    opt.apply_gradients(zip(_grads(), vs))
    assert opt.get_slot_names() == ["momentum"]


def _reference_scale_run(flags, initial, growth):
    """TF 2.4's DynamicLossScale.update written out by hand: [(scale, counter, applied)]."""
    scale, counter, out = initial, 0, []
    for finite in flags:
        if finite:
            counter += 1
            if counter >= growth:
                if scale * 2 <= np.finfo(np.float32).max:
                    scale *= 2
                counter = 0
        else:
            scale = max(scale / 2, 1.0)
            counter = 0
        out.append((scale, counter, finite))
    return out


def test_long_finite_run_doubles_every_n_steps():
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(1e-3), initial_scale=8.0, dynamic_growth_steps=3)
    scales = []
    for _ in range(10):
        opt.apply_gradients(zip(_grads(), vs))
        scales.append(float(opt.loss_scale))
    assert scales == [8, 8, 16, 16, 16, 32, 32, 32, 64, 64]
    assert int(opt.iterations.numpy()) == 10
    assert int(opt.dynamic_counter) == 1


@given(st.lists(st.booleans(), min_size=1, max_size=30), st.integers(1, 4),
       st.sampled_from([1.0, 4.0, 2.0 ** 15, 2.0 ** 127]))
def test_scale_state_machine_matches_reference(flags, growth, initial):
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(1e-3), initial_scale=initial,
                             dynamic_growth_steps=growth)
    ref = _reference_scale_run(flags, initial, growth)
    applied = 0
    for finite, (scale, counter, _) in zip(flags, ref):
        opt.apply_gradients(zip(_grads() if finite else _grads(bad=np.inf, where=0), vs))
        applied += finite
        assert float(opt.loss_scale) == scale
        assert int(opt.dynamic_counter) == counter
        assert float(opt.loss_scale) >= 1.0
    assert int(opt.iterations.numpy()) == applied


def test_scale_never_below_one():
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1), initial_scale=4.0)
    seen = []
    for _ in range(5):
        opt.apply_gradients(zip(_grads(bad=np.nan, where=2), vs))
        seen.append(float(opt.loss_scale))
    assert seen == [2.0, 1.0, 1.0, 1.0, 1.0]


def test_fixed_scale():
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1), dynamic=False, initial_scale=128)
    assert not opt.dynamic and opt.dynamic_counter is None and opt.dynamic_growth_steps is None
    for _ in range(5):
        opt.apply_gradients(zip(_grads(), vs))
    assert float(opt.loss_scale) == 128.0 and int(opt.iterations.numpy()) == 5
    # TF 2.4's FixedLossScale never skips: a non-finite gradient reaches the variables
    opt.apply_gradients(zip(_grads(bad=np.inf, where=0), vs))
    assert float(opt.loss_scale) == 128.0 and int(opt.iterations.numpy()) == 6
    assert not np.isfinite(vs[0].numpy()).all()


def test_constructor_checks():
    sgd = tt.optimizers.SGD()
    with pytest.raises(TypeError):
        LossScaleOptimizer(LossScaleOptimizer(sgd))
    with pytest.raises(TypeError):
        LossScaleOptimizer("sgd")
    with pytest.raises(TypeError):
        LossScaleOptimizer(sgd, dynamic=1)
    with pytest.raises(ValueError, match="initial_scale"):
        LossScaleOptimizer(sgd, dynamic=False)
    with pytest.raises(ValueError, match="dynamic_growth_steps"):
        LossScaleOptimizer(sgd, dynamic=False, initial_scale=2, dynamic_growth_steps=10)
    with pytest.raises(ValueError):
        LossScaleOptimizer(sgd, dynamic_growth_steps=0)
    with pytest.raises(ValueError):
        LossScaleOptimizer(sgd, initial_scale=float("inf"))
    with pytest.raises(ValueError):
        LossScaleOptimizer(sgd, dynamic=False, initial_scale=0.5)
    opt = LossScaleOptimizer(sgd)
    assert opt.inner_optimizer is sgd and opt.dynamic
    assert opt.initial_scale == 2.0 ** 15 and opt.dynamic_growth_steps == 2000
    assert float(opt.loss_scale) == 2.0 ** 15 and opt.loss_scale.dtype == np.float32


# ----------------------------------------------------------------------------- API pieces
def test_scaled_loss_and_unscaled_gradients():
    opt = LossScaleOptimizer(tt.optimizers.SGD(), initial_scale=64.0)
    loss = tnp.asarray(np.float32(0.25))
    assert float(opt.get_scaled_loss(loss)) == 16.0
    assert float(opt.get_scaled_loss(lambda: loss)()) == 16.0
    g16 = tnp.asarray(np.array([64.0, -128.0], np.float16))
    out = opt.get_unscaled_gradients([tnp.asarray(np.float32([64.0, 32.0])), None, g16])
    np.testing.assert_array_equal(np.asarray(out[0]), [1.0, 0.5])
    assert out[1] is None
    assert out[2].dtype == np.float16
    np.testing.assert_array_equal(np.asarray(out[2]), [1.0, -2.0])


def test_delegation_to_inner_optimizer():
    inner = tt.optimizers.Adam(0.01, beta_1=0.8)
    opt = LossScaleOptimizer(inner)
    assert opt.beta_1 == 0.8
    assert opt.iterations is inner.iterations
    assert float(opt.learning_rate) == pytest.approx(0.01)
    opt.learning_rate = 0.05
    assert float(inner.learning_rate) == pytest.approx(0.05)
    opt.beta_1 = 0.7
    assert inner.beta_1 == 0.7
    vs = _vars()
    opt.apply_gradients(zip(_grads(), vs))
    assert opt.get_slot(vs[0], "m") is inner.get_slot(vs[0], "m")
    assert opt.get_slot_names() == inner.get_slot_names()
    assert [id(v) for v in opt.variables()] == [id(v) for v in inner.variables()]
    assert tt.optimizers.get(opt) is opt
    cfg = opt.get_config()
    again = LossScaleOptimizer.from_config(cfg)
    assert isinstance(again.inner_optimizer, tt.optimizers.Adam)
    assert again.inner_optimizer.beta_1 == 0.7 and again.dynamic
    assert again.dynamic_growth_steps == 2000 and again.initial_scale == 2.0 ** 15


def test_aggregated_gradients_decide_the_skip():
    """The inner optimizer's aggregator runs once, before the finiteness check: a replica's
    inf (simulated by the aggregator) makes every replica skip."""
    calls = []

    def aggregator(pairs):
        calls.append(len(pairs))
        other_replica = [np.inf if i == 0 else 0.0 for i in range(len(pairs))]
        return [(g + o, v) for (g, v), o in zip(pairs, other_replica)]

    vs = _vars()
    before = [v.numpy() for v in vs]
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1, gradient_aggregator=aggregator),
                             initial_scale=256.0)
    opt.apply_gradients(zip(_grads(), vs))                 # local gradients are finite
    assert calls == [3]
    assert float(opt.loss_scale) == 128.0 and int(opt.iterations.numpy()) == 0
    for v, b in zip(vs, before):
        np.testing.assert_array_equal(v.numpy(), b)
    # experimental_aggregate_gradients=False: no aggregation, finite, applied
    opt.apply_gradients(zip(_grads(), vs), experimental_aggregate_gradients=False)
    assert calls == [3] and int(opt.iterations.numpy()) == 1


def test_apply_gradients_errors_and_none_gradients():
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1))
    with pytest.raises(ValueError):
        opt.apply_gradients([(None, vs[0])])
    with pytest.raises(TypeError):
        opt.apply_gradients([(tnp.ones(3), np.ones(3))])
    g = _grads()
    opt.apply_gradients([(g[0], vs[0]), (None, vs[1])])
    assert int(opt.iterations.numpy()) == 1


# ----------------------------------------------------------------------------- every optimizer
def _loss(vs, c):
    return (tnp.sum(c[0] * vs[0] ** 2) + tnp.sum(tnp.sin(vs[1]) * c[1])
            + (vs[2] - 0.5) ** 2)


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS, ids=[f"{n}{i}" for i, (n, _) in
                                                              enumerate(ALL_OPTIMIZERS)])
def test_lso_step_equals_inner_step(name, kwargs):
    cls = getattr(tt.optimizers, name)
    rng = np.random.default_rng(3)
    c = [tnp.asarray(rng.standard_normal(s).astype(np.float32)) for s in [(3,), (2, 4)]]
    a, b = _vars(), _vars()
    lso, plain = LossScaleOptimizer(cls(**kwargs)), cls(**kwargs)
    for step in range(3):
        with tt.GradientTape() as t1:
            l1 = _loss(a, c)
        lso.minimize(l1, a, tape=t1)
        if step == 1:   # the callable form too
            plain.minimize(lambda: _loss(b, c), b)
        else:
            with tt.GradientTape() as t2:
                l2 = _loss(b, c)
            plain.minimize(l2, b, tape=t2)
        for va, vb in zip(a, b):
            np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=2e-6, atol=1e-7)
    assert int(lso.iterations.numpy()) == 3 == int(plain.iterations.numpy())
    assert lso.get_slot_names() == plain.get_slot_names()


def _mlp(policy, seed=0):
    tt.utils.set_random_seed(seed)
    return tt.Sequential([tt.layers.Dense(16, activation="relu", dtype=policy),
                          tt.layers.Dense(3, dtype=policy)])


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS[::2])
def test_fit_under_mixed_float16_wraps_and_trains(global_policy, name, kwargs):
    global_policy("mixed_float16")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    model = _mlp(None)
    model.compile(getattr(tt.optimizers, name)(**kwargs),
                  tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert isinstance(model.optimizer, LossScaleOptimizer)
    hist = model.fit(x, y, batch_size=16, epochs=4, verbose=0, shuffle=False)
    assert model.layers[0].kernel.dtype == np.float32
    assert model.predict(x[:4], verbose=0).dtype == np.float16
    losses = hist.history["loss"]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
    assert int(model.optimizer.iterations.numpy()) > 0


def test_compile_keeps_a_given_loss_scale_optimizer(global_policy):
    global_policy("mixed_float16")
    model = _mlp(None)
    opt = LossScaleOptimizer(tt.optimizers.SGD(0.1), initial_scale=16.0)
    model.compile(opt, "mse")
    assert model.optimizer is opt


def test_mixed_bfloat16_fit_is_not_wrapped(global_policy):
    global_policy("mixed_bfloat16")
    model = _mlp(None)
    model.compile(tt.optimizers.SGD(0.1), "mse")
    assert not isinstance(model.optimizer, LossScaleOptimizer)


# ----------------------------------------------------------------------------- underflow
def _tiny_regression(use_lso, steps=20):
    rng = np.random.default_rng(0)
    n = 256
    x = rng.uniform(0.5, 1.5, (n, 4)).astype(np.float32)
    # targets ~1e-6: with an MSE over 256 samples dL/dy = 2 (y - t) / 256 <= 1.6e-8, below half
    # float16's smallest subnormal (5.96e-8): the float16 backward pass rounds it to 0
    t = (1e-6 * (1 + rng.random((n, 1)))).astype(np.float32)
    layer = tt.layers.Dense(1, use_bias=False, kernel_initializer="zeros", dtype="mixed_float16")
    sgd = tt.optimizers.SGD(0.1)
    opt = LossScaleOptimizer(sgd) if use_lso else sgd
    mse = tt.losses.MeanSquaredError()
    losses = []
    for _ in range(steps):
        with tt.GradientTape() as tape:
            y = layer(x)
            loss = mse(t, y)
        assert y.dtype == np.float16 and loss.dtype == np.float32
        losses.append(float(loss))
        if not use_lso and not losses[1:]:
            g = tape.gradient(loss, layer.trainable_variables)[0]
            assert not np.any(np.asarray(g)), "the float16 gradient was expected to underflow"
            with tt.GradientTape() as tape:
                loss = mse(t, layer(x))
        opt.minimize(loss, layer.trainable_variables, tape=tape)
    return losses, layer.kernel.numpy()


def test_loss_scaling_rescues_underflowing_float16_gradients():
    plain_losses, plain_w = _tiny_regression(False)
    np.testing.assert_array_equal(plain_w, 0)              # gradients exactly zero: no move
    assert plain_losses[-1] == plain_losses[0]
    lso_losses, lso_w = _tiny_regression(True)
    assert np.all(lso_w > 0)
    assert lso_losses[-1] < 0.5 * lso_losses[0]


# ----------------------------------------------------------------------------- checkpoints
def test_trackable_children_and_slots_forwarded():
    opt = LossScaleOptimizer(tt.optimizers.Adam())
    kids = opt._trackable_children()
    assert list(kids) == ["inner_optimizer", "loss_scale", "good_steps"]
    assert kids["inner_optimizer"] is opt.inner_optimizer
    assert kids["loss_scale"].dtype == np.float32 and kids["good_steps"].dtype == np.int64
    vs = _vars()
    opt.apply_gradients(zip(_grads(), vs))
    assert opt._slot_variables() == opt.inner_optimizer._slot_variables()


def test_checkpoint_round_trip_of_scale_counter_and_slots(tmp_path):
    vs = _vars()
    opt = LossScaleOptimizer(tt.optimizers.Adam(0.1), initial_scale=64.0, dynamic_growth_steps=5)
    for bad in (None, None, np.inf, None, None, None):
        opt.apply_gradients(zip(_grads(bad=bad, where=0), vs))
    assert float(opt.loss_scale) == 32.0 and int(opt.dynamic_counter) == 3
    ckpt = tt.train.Checkpoint(optimizer=opt, v0=vs[0], v1=vs[1], v2=vs[2])
    path = ckpt.save(str(tmp_path / "ckpt"))

    vs2 = _vars(seed=9)
    opt2 = LossScaleOptimizer(tt.optimizers.Adam(0.1), initial_scale=64.0, dynamic_growth_steps=5)
    tt.train.Checkpoint(optimizer=opt2, v0=vs2[0], v1=vs2[1], v2=vs2[2]).restore(path)
    assert float(opt2.loss_scale) == 32.0 and int(opt2.dynamic_counter) == 3
    assert int(opt2.iterations.numpy()) == 5
    for a, b in zip(vs, vs2):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the slots are restored when the inner optimizer creates them (deferred)
    g = _grads(4)
    opt.apply_gradients(zip(g, vs))
    opt2.apply_gradients(zip(g, vs2))
    for a, b in zip(vs, vs2):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for v, w in zip(vs, vs2):
        np.testing.assert_array_equal(opt.get_slot(v, "m").numpy(), opt2.get_slot(w, "m").numpy())
    assert int(opt2.dynamic_counter) == 4
