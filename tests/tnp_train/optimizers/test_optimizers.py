"""tt.optimizers: every optimizer's first steps against its published update formula written out
in NumPy (fused Numba kernel and in-place NumPy path, float32 and float64), the base class's
gradient pipeline (aggregation, clipping, transformers, weight decay), learning rates, configs,
checkpoint hooks and errors."""
import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp._core.ndarray import version_of
from tnp_train.optimizers import kernels

BIG = (64, 80)     # 5120 elements: the fused kernel
SMALL = (7, 5)     # plain NumPy
assert BIG[0] * BIG[1] >= kernels.FUSED_MIN_SIZE > SMALL[0] * SMALL[1]


def rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- reference formulas (NumPy)
# Each takes (w, g, state dict, t (1-based step), lr, **hyper) on arrays of the tested dtype and
# returns the new w; Python-float coefficients keep the arithmetic in that dtype (NEP 50).

def ref_sgd(w, g, s, t, lr, momentum=0.0, nesterov=False):
    if not momentum:
        return w - lr * g
    s["m"] = momentum * s.get("m", np.zeros_like(w)) - lr * g
    return w + (momentum * s["m"] - lr * g if nesterov else s["m"])


def ref_adam(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    m = beta_1 * s.get("m", np.zeros_like(w)) + (1 - beta_1) * g
    v = beta_2 * s.get("v", np.zeros_like(w)) + (1 - beta_2) * (g * g)
    s["m"], s["v"] = m, v
    alpha = lr * (math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t))
    if amsgrad:
        s["vhat"] = np.maximum(s.get("vhat", np.zeros_like(w)), v)
        v = s["vhat"]
    return w - alpha * m / (np.sqrt(v) + epsilon)


def ref_adamw(w, g, s, t, lr, weight_decay=0.004, **kw):
    return ref_adam(w - w * weight_decay * lr, g, s, t, lr, **kw)


def ref_rmsprop(w, g, s, t, lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    ms = rho * s.get("ms", np.zeros_like(w)) + (1 - rho) * (g * g)
    s["ms"] = ms
    d = ms
    if centered:
        s["mg"] = rho * s.get("mg", np.zeros_like(w)) + (1 - rho) * g
        d = ms - s["mg"] * s["mg"]
    if momentum:
        s["mom"] = momentum * s.get("mom", np.zeros_like(w)) + lr * g / np.sqrt(d + epsilon)
        return w - s["mom"]
    return w - lr * g / (np.sqrt(d) + epsilon)


def ref_adagrad(w, g, s, t, lr, initial_accumulator_value=0.1, epsilon=1e-7):
    s["acc"] = s.get("acc", np.full_like(w, initial_accumulator_value)) + g * g
    return w - lr * g / (np.sqrt(s["acc"]) + epsilon)


def ref_adadelta(w, g, s, t, lr, rho=0.95, epsilon=1e-7):
    acc = rho * s.get("acc", np.zeros_like(w)) + (1 - rho) * (g * g)
    accu = s.get("accu", np.zeros_like(w))
    upd = np.sqrt(accu + epsilon) / np.sqrt(acc + epsilon) * g
    s["acc"], s["accu"] = acc, rho * accu + (1 - rho) * (upd * upd)
    return w - lr * upd


def ref_adamax(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    s["m"] = beta_1 * s.get("m", np.zeros_like(w)) + (1 - beta_1) * g
    s["u"] = np.maximum(beta_2 * s.get("u", np.zeros_like(w)), np.abs(g))
    return w - lr / (1 - beta_1 ** t) * s["m"] / (s["u"] + epsilon)


def ref_nadam(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    mu = [beta_1 * (1 - 0.5 * 0.96 ** (0.004 * k)) for k in range(t + 2)]
    sched = math.prod(mu[1:t + 1])
    g_prime = g / (1 - sched)
    m = beta_1 * s.get("m", np.zeros_like(w)) + (1 - beta_1) * g
    v = beta_2 * s.get("v", np.zeros_like(w)) + (1 - beta_2) * (g * g)
    s["m"], s["v"] = m, v
    m_prime = m / (1 - sched * mu[t + 1])
    v_prime = v / (1 - beta_2 ** t)
    m_bar = (1 - mu[t]) * g_prime + mu[t + 1] * m_prime
    return w - lr * m_bar / (np.sqrt(v_prime) + epsilon)


def ref_lion(w, g, s, t, lr, beta_1=0.9, beta_2=0.99):
    m = s.get("m", np.zeros_like(w))
    w = w - lr * np.sign(beta_1 * m + (1 - beta_1) * g)
    s["m"] = beta_2 * m + (1 - beta_2) * g
    return w


CASES = [
    ("SGD", ref_sgd, dict(learning_rate=0.1)),
    ("SGD", ref_sgd, dict(learning_rate=0.1, momentum=0.9)),
    ("SGD", ref_sgd, dict(learning_rate=0.05, momentum=0.7, nesterov=True)),
    ("Adam", ref_adam, dict(learning_rate=0.01)),
    ("Adam", ref_adam, dict(learning_rate=0.01, beta_1=0.8, epsilon=1e-3, amsgrad=True)),
    ("AdamW", ref_adamw, dict(learning_rate=0.01, weight_decay=0.1)),
    ("RMSprop", ref_rmsprop, dict(learning_rate=0.01)),
    ("RMSprop", ref_rmsprop, dict(learning_rate=0.01, momentum=0.5)),
    ("RMSprop", ref_rmsprop, dict(learning_rate=0.01, centered=True, epsilon=1e-3)),
    ("RMSprop", ref_rmsprop, dict(learning_rate=0.01, centered=True, momentum=0.3, epsilon=1e-3)),
    ("Adagrad", ref_adagrad, dict(learning_rate=0.1)),
    ("Adadelta", ref_adadelta, dict(learning_rate=1.0, rho=0.9)),
    ("Adamax", ref_adamax, dict(learning_rate=0.01)),
    ("Nadam", ref_nadam, dict(learning_rate=0.01)),
    ("Lion", ref_lion, dict(learning_rate=0.01)),
]
TOL = {"float64": dict(rtol=1e-12, atol=1e-14), "float32": dict(rtol=1e-6, atol=1e-7)}


def _case_id(c):
    return c[0] + "-" + ",".join(f"{k}={v}" for k, v in c[2].items() if k != "learning_rate")


@pytest.mark.parametrize("shape", [BIG, SMALL, ()], ids=["fused", "numpy", "scalar"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_first_three_steps_follow_the_published_formula(case, dtype, shape):
    name, ref, hyper = case
    r = rng(zlib.crc32(f"{_case_id(case)}-{dtype}-{shape}".encode()))
    w0 = np.asarray(r.standard_normal(shape), dtype=dtype)
    grads = [np.asarray(r.standard_normal(shape), dtype=dtype) for _ in range(3)]
    v = tt.Variable(w0)
    opt = getattr(tt.optimizers, name)(**hyper)
    assert kernels.uses_fused(v._a) == (shape == BIG and kernels.fused_available())
    kw = {k: x for k, x in hyper.items() if k != "learning_rate"}
    w, state = w0.copy(), {}
    for t, g in enumerate(grads, start=1):
        opt.apply_gradients([(tnp.asarray(g), v)])
        w = ref(w, g, state, t, hyper["learning_rate"], **kw)
        assert w.dtype == np.dtype(dtype)
        np.testing.assert_allclose(v.numpy(), w, **TOL[dtype], err_msg=f"{name} step {t}")
    assert v.dtype == np.dtype(dtype) and int(opt.iterations) == 3
    for _, _, slot in opt._slot_variables():
        assert slot.dtype == np.dtype(dtype) and slot.shape == shape and not slot.trainable


def test_defaults_are_tf_24s():
    O = tt.optimizers
    cfg = {c: getattr(O, c)().get_config() for c in
           ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion")}
    assert cfg["SGD"]["learning_rate"] == 0.01 and cfg["SGD"]["momentum"] == 0.0
    assert (cfg["Adam"]["learning_rate"], cfg["Adam"]["beta_1"], cfg["Adam"]["beta_2"],
            cfg["Adam"]["epsilon"], cfg["Adam"]["amsgrad"]) == (0.001, 0.9, 0.999, 1e-7, False)
    assert cfg["AdamW"]["weight_decay"] == 0.004
    assert (cfg["RMSprop"]["rho"], cfg["RMSprop"]["momentum"], cfg["RMSprop"]["centered"]) == \
        (0.9, 0.0, False)
    assert cfg["Adagrad"]["initial_accumulator_value"] == 0.1
    assert cfg["Adadelta"]["rho"] == 0.95 and cfg["Adadelta"]["learning_rate"] == 0.001
    assert cfg["Lion"]["learning_rate"] == 0.0001 and cfg["Lion"]["beta_2"] == 0.99
    assert all(c["name"] == n for n, c in cfg.items())


def test_sgd_momentum_keras_formula_on_the_mlp_shapes_float32():
    """The benchmark's MLP (784x512, 512, 512x512, 512, 512x10, 10): both paths, Keras's form."""
    r = rng(0)
    shapes = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    ws = [r.standard_normal(s).astype(np.float32) for s in shapes]
    vs = [tt.Variable(w) for w in ws]
    opt = tt.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    ms = [np.zeros_like(w) for w in ws]
    for _ in range(3):
        gs = [r.standard_normal(s).astype(np.float32) for s in shapes]
        opt.apply_gradients(zip([tnp.asarray(g) for g in gs], vs))
        for i, g in enumerate(gs):
            ms[i] = 0.9 * ms[i] - 0.01 * g
            ws[i] = ws[i] + ms[i]
    for v, w in zip(vs, ws):
        np.testing.assert_allclose(v.numpy(), w, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- the gradient pipeline
def test_clipvalue_clipnorm_global_clipnorm():
    a, b = tt.Variable([0.0, 0.0]), tt.Variable([0.0])
    ga, gb = tnp.asarray([3.0, 4.0]), tnp.asarray([12.0])
    tt.optimizers.SGD(1.0, clipvalue=3.5).apply_gradients([(ga, a), (gb, b)])
    np.testing.assert_allclose(a.numpy(), [-3.0, -3.5])
    np.testing.assert_allclose(b.numpy(), [-3.5])
    a.assign([0.0, 0.0]), b.assign([0.0])
    tt.optimizers.SGD(1.0, clipnorm=2.0).apply_gradients([(ga, a), (gb, b)])   # per gradient
    np.testing.assert_allclose(a.numpy(), [-1.2, -1.6])
    np.testing.assert_allclose(b.numpy(), [-2.0])
    a.assign([0.0, 0.0]), b.assign([0.0])
    tt.optimizers.SGD(1.0, global_clipnorm=2.6).apply_gradients([(ga, a), (gb, b)])  # norm 13
    np.testing.assert_allclose(np.concatenate([a.numpy(), b.numpy()]), [-0.6, -0.8, -2.4])
    a.assign([0.0, 0.0])
    tt.optimizers.SGD(1.0, global_clipnorm=100.0).apply_gradients([(ga, a)])   # under: as is
    np.testing.assert_allclose(a.numpy(), [-3.0, -4.0])
    # clipvalue first, then clipnorm (TF 2.4's order)
    a.assign([0.0, 0.0])
    tt.optimizers.SGD(1.0, clipvalue=3.0, clipnorm=1.0).apply_gradients([(ga, a)])
    np.testing.assert_allclose(a.numpy(), [-1 / math.sqrt(2)] * 2)
    with pytest.raises(ValueError, match="clipnorm.*global_clipnorm"):
        tt.optimizers.Adam(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="clipvalue"):
        tt.optimizers.SGD(clipvalue=-1.0)


def test_clipnorm_on_a_fused_variable():
    g = rng(1).standard_normal(BIG).astype(np.float32)
    v = tt.Variable(np.zeros(BIG, np.float32))
    tt.optimizers.SGD(1.0, clipnorm=0.5).apply_gradients([(tnp.asarray(g), v)])
    np.testing.assert_allclose(np.linalg.norm(v.numpy()), 0.5, rtol=1e-5)
    np.testing.assert_allclose(v.numpy(), -g * (0.5 / np.linalg.norm(g.astype(np.float64))),
                               rtol=1e-5, atol=1e-8)


def test_aggregator_then_clipping_then_transformers_are_called_in_order():
    calls = []

    def aggregator(pairs):
        calls.append(("agg", [np.asarray(g).copy() for g, _ in pairs]))
        return [(g * 2.0, v) for g, v in pairs]

    def transformer(pairs):
        calls.append(("tr", [np.asarray(g).copy() for g, _ in pairs]))
        return [(g + 1.0, v) for g, v in pairs]

    v = tt.Variable([0.0, 0.0])
    opt = tt.optimizers.SGD(1.0, gradient_aggregator=aggregator, gradient_transformers=[transformer],
                            clipvalue=5.0)
    opt.apply_gradients([(tnp.asarray([1.0, 4.0]), v)])
    assert [c[0] for c in calls] == ["agg", "tr"]
    np.testing.assert_allclose(calls[0][1][0], [1.0, 4.0])
    np.testing.assert_allclose(calls[1][1][0], [2.0, 5.0])        # doubled, then clipped at 5
    np.testing.assert_allclose(v.numpy(), [-3.0, -6.0])
    calls.clear()
    opt.apply_gradients([(tnp.asarray([1.0, 1.0]), v)], experimental_aggregate_gradients=False)
    assert [c[0] for c in calls] == ["tr"]                         # aggregation skipped


def test_default_aggregator_is_the_overridable_method():
    seen = []

    class Replicated(tt.optimizers.SGD):
        def aggregate_gradients(self, grads_and_vars):
            seen.append(len(grads_and_vars))
            return [(g * 0.5, v) for g, v in grads_and_vars]

    v = tt.Variable([0.0])
    Replicated(1.0).apply_gradients([(tnp.asarray([4.0]), v)])
    assert seen == [1] and v.numpy()[0] == -2.0


@pytest.mark.parametrize("shape", [BIG, SMALL], ids=["fused", "numpy"])
def test_decoupled_weight_decay_for_every_optimizer_and_the_base_path(shape):
    r = rng(2)
    w0 = r.standard_normal(shape)
    g = r.standard_normal(shape)
    for name in ("SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion"):
        plain, decayed = (getattr(tt.optimizers, name)(learning_rate=0.1, **kw)
                          for kw in ({}, {"weight_decay": 0.3}))
        a, b = tt.Variable(w0), tt.Variable(w0 - w0 * 0.3 * 0.1)   # decay first, then the step
        decayed.apply_gradients([(tnp.asarray(g), a)])
        plain.apply_gradients([(tnp.asarray(g), b)])
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14, err_msg=name)

    class Plain(tt.optimizers.Optimizer):          # a subclass that writes only update_step
        def __init__(self, **kw):
            super().__init__("Plain", **kw)

        def update_step(self, gradient, variable, learning_rate):
            variable.assign_sub(learning_rate * gradient)

    v = tt.Variable(w0)
    Plain(learning_rate=0.1, weight_decay=0.3).apply_gradients([(tnp.asarray(g), v)])
    np.testing.assert_allclose(v.numpy(), (w0 - w0 * 0.03) - 0.1 * g, rtol=1e-12)


def test_exclude_from_weight_decay():
    a, b = tt.Variable([1.0], name="dense/kernel"), tt.Variable([1.0], name="dense/bias")
    opt = tt.optimizers.AdamW(learning_rate=0.5, weight_decay=0.2)
    opt.exclude_from_weight_decay(var_names=["bias"])
    zero = tnp.asarray([0.0])
    opt.apply_gradients([(zero, a), (zero, b)])                # Adam step of a zero gradient is 0
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [0.9, 1.0])


def test_float16_gradients_are_cast_to_the_variable_dtype():
    for shape in (BIG, SMALL):
        g = rng(3).standard_normal(shape).astype(np.float16)
        v = tt.Variable(np.zeros(shape, np.float32))
        tt.optimizers.SGD(0.5).apply_gradients([(tnp.asarray(g), v)])
        assert v.dtype == np.float32
        np.testing.assert_array_equal(v.numpy(), -0.5 * g.astype(np.float32))


def test_numpy_gradients_and_none_are_accepted():
    a, b = tt.Variable([1.0, 1.0]), tt.Variable([5.0])
    opt = tt.optimizers.SGD(1.0)
    opt.apply_gradients([(np.array([0.5, 0.25]), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.5, 0.75])
    assert b.numpy()[0] == 5.0 and opt.get_slot_names() == []


def test_constraint_applies_after_the_update():
    v = tt.Variable([0.5, -0.5], constraint=lambda x: tnp.clip(x, 0.0, 1.0))
    tt.optimizers.SGD(1.0).apply_gradients([(tnp.asarray([-2.0, 0.2]), v)])
    np.testing.assert_allclose(v.numpy(), [1.0, 0.0])


def test_updates_bump_the_version_tapes_check():
    for shape in (BIG, SMALL):
        v = tt.Variable(np.ones(shape))
        opt = tt.optimizers.Adam()
        before = version_of(v._a)
        opt.apply_gradients([(tnp.ones(shape), v)])
        assert version_of(v._a) > before
        m = opt.get_slot(v, "m")
        assert version_of(m._a) > 0


def test_minimize_with_callables_and_grad_loss():
    v = tt.Variable([3.0])
    opt = tt.optimizers.SGD(0.25)
    opt.minimize(lambda: tnp.sum(v * v), lambda: [v])
    np.testing.assert_allclose(v.numpy(), [1.5])
    with tt.GradientTape() as tape:
        loss = v * v
    opt.minimize(loss, [v], grad_loss=tnp.asarray([2.0]), tape=tape)
    np.testing.assert_allclose(v.numpy(), [1.5 - 0.25 * 2 * 3.0])
    w = tt.Variable([1.0], trainable=False)           # watched by minimize itself
    opt.minimize(lambda: tnp.sum(w * 4.0), [w])
    np.testing.assert_allclose(w.numpy(), [0.0])


# ---------------------------------------------------------------- learning rate
def test_float_learning_rate_is_a_float32_variable_and_settable():
    opt = tt.optimizers.Adam(learning_rate=0.01)
    lr = opt.learning_rate
    assert isinstance(lr, tt.Variable) and lr.dtype == np.float32 and not lr.trainable
    assert float(opt.learning_rate) == pytest.approx(0.01) and opt.lr is lr
    assert opt._trackable_children()["learning_rate"] is lr
    opt.learning_rate = 1e-4
    assert float(opt.lr) == pytest.approx(1e-4) and opt.learning_rate is lr
    opt.lr = 0.5
    v = tt.Variable([0.0])
    sgd = tt.optimizers.SGD(1.0)
    sgd.learning_rate = 0.5
    sgd.apply_gradients([(tnp.asarray([1.0]), v)])
    assert v.numpy()[0] == -0.5
    sgd.learning_rate.assign(0.25)                    # as a restored checkpoint would
    sgd.apply_gradients([(tnp.asarray([1.0]), v)])
    assert v.numpy()[0] == -0.75
    assert tt.optimizers.SGD(lr=0.3).get_config()["learning_rate"] == 0.3   # TF 2.4 alias
    with pytest.raises(TypeError, match="learning_rate"):
        tt.optimizers.SGD(learning_rate="fast")


def test_schedule_learning_rate_is_evaluated_at_iterations():
    sched = tt.optimizers.schedules.PiecewiseConstantDecay([1], [1.0, 0.5])
    opt = tt.optimizers.SGD(learning_rate=sched)
    v = tt.Variable([0.0])
    steps = []
    for _ in range(3):
        steps.append(float(opt.learning_rate))
        opt.apply_gradients([(tnp.asarray([1.0]), v)])
    assert steps == [1.0, 1.0, 0.5]                   # step 0 and 1 <= boundary 1
    np.testing.assert_allclose(v.numpy(), [-2.5])
    assert "learning_rate" not in opt._trackable_children()
    with pytest.raises(TypeError, match="schedule"):
        opt.learning_rate = 0.1
    calls = tt.optimizers.SGD(learning_rate=lambda: 0.5)
    w = tt.Variable([1.0])
    calls.apply_gradients([(tnp.asarray([1.0]), w)])
    assert w.numpy()[0] == 0.5 and float(calls.learning_rate) == 0.5


def test_tf24_decay_argument():
    opt = tt.optimizers.SGD(1.0, decay=0.5)
    v = tt.Variable([0.0])
    for _ in range(3):
        opt.apply_gradients([(tnp.asarray([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-(1 + 1 / 1.5 + 1 / 2.0)])


def test_iterations_is_an_int64_non_trainable_variable():
    opt = tt.optimizers.SGD()
    assert isinstance(opt.iterations, tt.Variable) and opt.iterations.dtype == np.int64
    assert not opt.iterations.trainable
    assert opt.apply_gradients([(tnp.asarray([1.0]), tt.Variable([0.0]))]) is opt.iterations
    assert int(opt.iterations) == 1


# ---------------------------------------------------------------- configs and get
ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion"]


@pytest.mark.parametrize("name", ALL)
def test_get_config_round_trips(name):
    cls = getattr(tt.optimizers, name)
    opt = cls(learning_rate=0.0123, clipnorm=2.0, weight_decay=0.01)
    cfg = opt.get_config()
    assert cfg["learning_rate"] == 0.0123 and cfg["clipnorm"] == 2.0
    again = cls.from_config(cfg)
    assert type(again) is cls and again.get_config() == cfg
    ser = tt.optimizers.serialize(opt)
    assert ser["class_name"] == name
    assert tt.optimizers.deserialize(ser).get_config() == cfg
    assert type(tt.optimizers.get(name.lower())) is cls
    assert tt.optimizers.get(ser).get_config() == cfg
    assert tt.optimizers.get(opt) is opt


def test_config_with_a_schedule():
    sched = tt.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    opt = tt.optimizers.Adam(learning_rate=sched, amsgrad=True)
    cfg = opt.get_config()
    assert cfg["learning_rate"] == {"class_name": "ExponentialDecay",
                                    "config": sched.get_config()}
    again = tt.optimizers.Adam.from_config(cfg)
    assert isinstance(again._lr_fn, tt.optimizers.schedules.ExponentialDecay)
    assert again.get_config() == cfg
    assert tt.optimizers.Adam.from_config({"lr": 0.5}).get_config()["learning_rate"] == 0.5


def test_get_rejects_unknown_identifiers():
    with pytest.raises(ValueError, match="Unknown optimizer"):
        tt.optimizers.get("adamm")
    with pytest.raises(ValueError, match="Could not interpret"):
        tt.optimizers.get(3)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        tt.optimizers.deserialize({"class_name": "Nope", "config": {}})


# ---------------------------------------------------------------- slots and checkpoint hooks
def test_slots_are_lazy_and_listed():
    a, b = tt.Variable(np.ones(3), name="a"), tt.Variable(np.ones((2, 2)), name="b")
    opt = tt.optimizers.RMSprop(momentum=0.5, centered=True)
    assert opt._slot_variables() == [] and opt.get_slot_names() == []
    opt.apply_gradients([(tnp.ones(3), a)])
    assert opt.get_slot_names() == ["rms", "momentum", "mg"]
    with pytest.raises(KeyError, match="b"):
        opt.get_slot(b, "rms")
    opt.apply_gradients([(tnp.ones(3), a), (tnp.ones((2, 2)), b)])
    triples = opt._slot_variables()
    assert len(triples) == 6
    assert {(v.name, n) for v, n, _ in triples} == {(x, n) for x in "ab" for n in
                                                    ("rms", "momentum", "mg")}
    for v, n, s in triples:
        assert opt.get_slot(v, n) is s and s.shape == v.shape
    assert tt.optimizers.Adagrad().add_slot(a, "acc", 0.1).numpy().tolist() == [0.1] * 3
    assert opt.variables()[0] is opt.iterations and len(opt.variables()) == 2 + 6


def test_trackable_children_include_stateful_non_slot_variables():
    nadam = tt.optimizers.Nadam()
    kids = nadam._trackable_children()
    assert kids["iter"] is nadam.iterations and "learning_rate" in kids
    assert "momentum_cache" in kids and float(kids["momentum_cache"]) == 1.0
    nadam.apply_gradients([(tnp.ones(2), tt.Variable(np.zeros(2)))])
    assert float(kids["momentum_cache"]) == pytest.approx(0.9 * (1 - 0.5 * 0.96 ** 0.004))


def test_deferred_slot_restoration_then_training_continues_identically():
    r = rng(4)
    w0, g1, g2 = (r.standard_normal(BIG).astype(np.float32) for _ in range(3))
    # reference: two steps in a row
    ref_v = tt.Variable(w0)
    ref = tt.optimizers.Adam(0.01)
    ref.apply_gradients([(tnp.asarray(g1), ref_v)])
    saved = {n: s.numpy() for v, n, s in ref._slot_variables()}
    saved_w, saved_it = ref_v.numpy(), int(ref.iterations)
    ref.apply_gradients([(tnp.asarray(g2), ref_v)])
    # restore into a fresh optimizer before its slots exist, then take the second step
    v = tt.Variable(saved_w)
    opt = tt.optimizers.Adam(0.01)
    for n, val in saved.items():
        opt._restore_slot(v, n, val)
    assert opt._slot_variables() == []
    opt._trackable_children()["iter"].assign(saved_it)
    opt.apply_gradients([(tnp.asarray(g2), v)])
    np.testing.assert_array_equal(v.numpy(), ref_v.numpy())
    # an existing slot is assigned at once; wrong shapes are refused
    opt._restore_slot(v, "m", np.zeros(BIG, np.float32))
    assert not opt.get_slot(v, "m").numpy().any()
    with pytest.raises(ValueError, match="shape"):
        opt._restore_slot(v, "v", np.zeros(3))


def test_get_and_set_weights():
    v = tt.Variable(np.ones(4))
    opt = tt.optimizers.SGD(0.1, momentum=0.9)
    opt.apply_gradients([(tnp.ones(4), v)])
    ws = opt.get_weights()
    other = tt.optimizers.SGD(0.1, momentum=0.9)
    other.ensure_built([v])
    other.set_weights(ws)
    assert int(other.iterations) == 1
    np.testing.assert_array_equal(other.get_slot(v, "momentum").numpy(), [-0.1] * 4)
    with pytest.raises(ValueError, match="optimizer variables"):
        other.set_weights(ws[:1])


# ---------------------------------------------------------------- errors
def test_bad_inputs():
    v = tt.Variable(np.zeros((2, 3)), name="kernel")
    opt = tt.optimizers.Adam()
    with pytest.raises(ValueError, match=r"kernel.*\(2, 3\)|\(3, 2\).*kernel"):
        opt.apply_gradients([(tnp.zeros((3, 2)), v)])
    with pytest.raises(TypeError, match="tt.Variable"):
        opt.apply_gradients([(tnp.zeros(2), tnp.zeros(2))])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([tnp.zeros(3)])
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients([(None, v)])
    with pytest.raises(ValueError, match="no \\(gradient, variable\\) pairs"):
        opt.apply_gradients([])
    with pytest.raises(TypeError, match="unexpected keyword"):
        tt.optimizers.SGD(momentun=0.9)
    with pytest.raises(ValueError, match="momentum"):
        tt.optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="beta_1"):
        tt.optimizers.Adam(beta_1=1.0)
    with pytest.raises(ValueError, match="rho"):
        tt.optimizers.RMSprop(rho=-0.1)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        tt.optimizers.Adagrad(initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="beta_1"):
        tt.optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="weight_decay"):
        tt.optimizers.AdamW(weight_decay=None)
    with pytest.raises(TypeError, match="gradient_transformers"):
        tt.optimizers.SGD(gradient_transformers=[3])
    with pytest.raises(NotImplementedError):
        tt.optimizers.Optimizer("Bare").apply_gradients([(tnp.ones(1), tt.Variable([0.0]))])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.sampled_from(["float32", "float64"]))
def test_fused_and_numpy_paths_agree(n_steps, dtype):
    """The same updates through the kernel (big) and NumPy (a slice of the same values)."""
    r = rng(n_steps)
    w0 = r.standard_normal(BIG).astype(dtype)
    gs = [r.standard_normal(BIG).astype(dtype) for _ in range(n_steps)]
    for name, _, hyper in CASES[::2]:
        big, small = tt.Variable(w0), tt.Variable(w0[:5, :5])
        ob, osm = (getattr(tt.optimizers, name)(**hyper) for _ in range(2))
        for g in gs:
            ob.apply_gradients([(tnp.asarray(g), big)])
            osm.apply_gradients([(tnp.asarray(np.ascontiguousarray(g[:5, :5])), small)])
        np.testing.assert_allclose(big.numpy()[:5, :5], small.numpy(), **TOL[dtype], err_msg=name)
