"""tt.backend against tf-keras's backend: values, dtypes and gradients of each function on the
cases in tests/fixtures/keras_utils.npz/.json (written by
tests/fixtures/make_keras_utils_fixtures.py under tf-keras 2.21, whose backend functions are
TF 2.4's), plus the stateful and random functions checked by their contracts."""
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

K = tt.backend
FIX = Path(__file__).resolve().parents[1] / "fixtures"
REF = np.load(FIX / "keras_utils.npz")
META = json.loads((FIX / "keras_utils.json").read_text())
CASES = META["backend"]

# the functions the fixture passes to map_fn/foldl/foldr, by name (as in the fixture script)
FNS = {
    "square": lambda x: x * x,
    "add": lambda a, x: a + x,
    "scaled_sub": lambda a, x: a * 0.5 - x,
}


def _args(case):
    out = []
    for i, spec in enumerate(CASES[case]["args"]):
        if isinstance(spec, str) and spec.startswith("fn:"):
            out.append(FNS[spec[3:]])
        elif isinstance(spec, dict) and "arrays" in spec:
            out.append([tnp.asarray(REF[f"backend/{case}/arg{i}_{j}"])
                        for j in range(spec["arrays"])])
        elif isinstance(spec, dict):
            out.append(tnp.asarray(REF[f"backend/{case}/arg{i}"]))
        else:
            out.append(spec)        # JSON: a tuple of the fixture script arrives as a list
    return out


def _tol(ref):
    return (1e-5, 1e-6) if ref.dtype in (np.float32, np.float16) else (1e-9, 1e-10)


def _same(got, ref, what, rtol=None):
    got_a = np.asarray(got)
    if ref.dtype.kind in "fc":
        rtol, atol = _tol(ref) if rtol is None else (rtol, rtol)
        np.testing.assert_allclose(got_a, ref, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(got_a, ref, err_msg=what)
    if isinstance(got, (tnp.ndarray, np.ndarray)):
        assert got_a.dtype == ref.dtype, f"{what}: dtype {got_a.dtype}, Keras {ref.dtype}"
    assert got_a.shape == ref.shape, f"{what}: shape {got_a.shape}, Keras {ref.shape}"


PAIRS = sorted((c["fn"], name) for name, c in CASES.items())


@pytest.mark.parametrize("name,case", PAIRS)
def test_backend_function_matches_keras(name, case):
    meta = CASES[case]
    args = _args(case)
    fn = getattr(K, name)
    wrt = meta["grad"]
    if wrt is None:
        out = fn(*args, **meta["kwargs"])
    else:
        with tt.GradientTape() as tape:
            tape.watch(args[wrt])
            out = fn(*args, **meta["kwargs"])
            ref0 = REF[f"backend/{case}/out0"]
            w = np.linspace(-1.0, 1.0, ref0.size).reshape(ref0.shape)
            loss = tnp.sum(tnp.asarray(out).astype("float64") * w)
        grad = tape.gradient(loss, args[wrt])
        # TF computes some gradients in float32 inside (the bilinear resize's)
        _same(grad, REF[f"backend/{case}/grad"], f"{case}: gradient", rtol=1e-6)
    outs = list(out) if meta["n_out"] else [out]
    for j, o in enumerate(outs):
        _same(o, REF[f"backend/{case}/out{j}"], f"{case}: output {j}")
    assert isinstance(out, tt.Variable) == meta["variable"], case


@pytest.mark.parametrize("case", sorted(META["backend_rnn"]))
def test_rnn_matches_keras(case):
    W, U = (tnp.asarray(REF[f"backend/rnn/{k}"]) for k in ("W", "U"))
    kw = dict(META["backend_rnn"][case])
    if f"backend/rnn/{case}/mask" in REF:
        kw["mask"] = tnp.asarray(REF[f"backend/rnn/{case}/mask"])
    x = tnp.asarray(REF[f"backend/rnn/{case}/x"])

    def step(xt, states):
        h = K.tanh(K.dot(xt, W) + K.dot(states[0], U))
        return h, [h]

    with tt.GradientTape() as tape:
        tape.watch(x)
        last, outs, states = K.rnn(step, x, [tnp.zeros((2, 4))], **kw)
        loss = tnp.sum(outs * tnp.asarray(np.linspace(-1, 1, outs.shape[-1])))
    _same(last, REF[f"backend/rnn/{case}/last"], "last")
    _same(outs, REF[f"backend/rnn/{case}/outputs"], "outputs")
    _same(states[0], REF[f"backend/rnn/{case}/state"], "state")
    _same(tape.gradient(loss, x), REF[f"backend/rnn/{case}/grad"], "gradient")


def test_ctc_matches_keras():
    r = {k: REF[f"backend/ctc/{k}"] for k in ("y_pred", "labels", "in_len", "lab_len", "cost",
                                               "grad", "decoded", "decode_logp",
                                               "sparse_indices", "sparse_values",
                                               "sparse_shape")}
    y = tnp.asarray(r["y_pred"])
    with tt.GradientTape() as tape:
        tape.watch(y)
        cost = K.ctc_batch_cost(r["labels"], y, r["in_len"], r["lab_len"])
        total = tnp.sum(cost)
    # TF's CTC kernel runs in float32 whatever the input's dtype
    _same(cost, r["cost"], "ctc_batch_cost", rtol=1e-6)
    _same(tape.gradient(total, y), r["grad"], "ctc_batch_cost gradient", rtol=1e-5)
    decoded, logp = K.ctc_decode(y, np.array([6, 5]))
    _same(decoded[0], r["decoded"], "ctc_decode paths")
    np.testing.assert_allclose(np.asarray(logp), r["decode_logp"], rtol=1e-6)
    indices, values, shape = K.ctc_label_dense_to_sparse(r["labels"].astype("int32"), [3, 1])
    _same(indices, r["sparse_indices"], "indices")
    _same(values, r["sparse_values"], "values")
    _same(shape, r["sparse_shape"], "dense_shape")
    with pytest.raises(ValueError, match="greedy"):
        K.ctc_decode(y, np.array([6, 5]), greedy=False)


# ------------------------------------------------------------------------ state and config
def test_config_functions():
    assert K.floatx() == "float32" and K.epsilon() == 1e-7
    assert K.image_data_format() == "channels_last" and K.backend() == "tensorflow"
    try:
        K.set_epsilon(1e-5)
        assert K.epsilon() == 1e-5
        K.set_image_data_format("channels_first")
        assert K.image_data_format() == "channels_first"
        # the default data format reaches the functions that take data_format=None
        x = np.arange(8.0).reshape(1, 2, 2, 2)
        np.testing.assert_array_equal(np.asarray(K.bias_add(x, [1.0, 2.0])),
                                      x + np.array([1.0, 2.0]).reshape(1, 2, 1, 1))
        K.set_floatx("float64")
        assert K.floatx() == "float64" and K.zeros((2,)).dtype == np.float64
        assert K.cast_to_floatx([1, 2]).dtype == np.float64
    finally:
        K.set_epsilon(1e-7)
        K.set_image_data_format("channels_last")
        K.set_floatx("float32")
    with pytest.raises(ValueError, match="Unknown data_format: NCHW"):
        K.set_image_data_format("NCHW")
    with pytest.raises(ValueError, match="Unknown floatx type: int8"):
        K.set_floatx("int8")
    with pytest.raises(ValueError, match="Invalid `data_format` argument: nope"):
        K.conv2d(np.ones((1, 3, 3, 1)), np.ones((2, 2, 1, 1)), data_format="nope")


def test_uids_and_clear_session():
    K.reset_uids()
    assert [K.get_uid("a"), K.get_uid("a"), K.get_uid("b"), K.get_uid()] == [1, 2, 1, 1]
    K.reset_uids()
    assert K.get_uid("a") == 1
    tt.layers.Dense(1)
    K.clear_session()
    assert tt.layers.Dense(1).name == "dense" and K.get_uid("a") == 1


def test_learning_phase_and_train_phase():
    assert K.learning_phase() == 0
    assert K.in_train_phase(lambda: "train", "test") == "test"
    assert K.in_test_phase("test", lambda: "train") == "test"
    assert K.in_train_phase("train", "test", training=True) == "train"
    with pytest.warns(DeprecationWarning):
        with K.learning_phase_scope(1):
            assert K.learning_phase() == 1 and K.in_train_phase(1, 0) == 1
    assert K.learning_phase() == 0
    with pytest.warns(DeprecationWarning):
        K.set_learning_phase(1)
    try:
        assert K.learning_phase() == 1
    finally:
        K.clear_session()
    assert K.learning_phase() == 0
    with pytest.raises(ValueError, match="Expected learning phase to be 0 or 1."):
        with pytest.warns(DeprecationWarning):
            K.set_learning_phase(2)
    # an array flag selects element-wise, as switch does
    got = K.in_train_phase(tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0]),
                           training=tnp.asarray([True, False]))
    np.testing.assert_array_equal(np.asarray(got), [1.0, 4.0])


def test_variables_and_their_updates():
    v = K.variable([[1, 2], [3, 4]], name="v")
    assert isinstance(v, tt.Variable) and v.dtype == np.float32 and "v" in v.name
    assert K.variable(1, dtype="float64").dtype == np.float64
    assert isinstance(K.zeros((2, 0)), tnp.ndarray) and not isinstance(K.zeros((2, 0)),
                                                                       tt.Variable)
    assert isinstance(K.ones((2, 2)), tt.Variable) and isinstance(K.eye(2), tt.Variable)
    K.set_value(v, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(K.get_value(v), [[0, 1], [2, 3]])
    assert isinstance(K.get_value(v), np.ndarray) and isinstance(K.eval(v), np.ndarray)
    w = K.variable([1.0])
    K.batch_set_value([(v, np.ones((2, 2))), (w, [5.0])])
    a, b = K.batch_get_value([v, w])
    np.testing.assert_array_equal(a, np.ones((2, 2)))
    np.testing.assert_array_equal(b, [5.0])
    assert K.update(w, [2.0]) is w and K.update_add(w, [3.0]) is w
    assert K.update_sub(w, [1.0]) is w
    np.testing.assert_array_equal(K.get_value(w), [4.0])
    # TF 2's assign_moving_average: x - (x - value) * (1 - momentum)
    m = K.variable([10.0, 0.0])
    K.moving_average_update(m, [0.0, 10.0], 0.9)
    np.testing.assert_allclose(K.get_value(m), [9.0, 1.0], rtol=1e-6)
    c = K.variable([-1.0, 2.0], constraint=tt.constraints.NonNeg())
    assert isinstance(c.constraint, tt.constraints.NonNeg)
    with pytest.raises(TypeError, match="eye"):
        K.eye((2, 3))


def test_random_functions_draw_the_asked_distribution():
    # statistics with a fixed seed (TF's streams differ: only the distributions are Keras's)
    n = 20000
    u = np.asarray(K.random_uniform((n,), -2.0, 3.0, seed=1))
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.05
    g = np.asarray(K.random_normal((n,), 1.0, 2.0, dtype="float64", seed=2))
    assert g.dtype == np.float64 and abs(g.mean() - 1) < 0.05 and abs(g.std() - 2) < 0.05
    t = np.asarray(K.truncated_normal((n,), 0.0, 1.5, seed=3))
    assert np.abs(t).max() <= 3.0 and 1.5 * 0.85 < t.std() < 1.5 * 0.9
    b = np.asarray(K.random_bernoulli((n,), p=0.3, seed=4))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    with pytest.warns(DeprecationWarning):
        bb = np.asarray(K.random_binomial((10,), p=1.0, seed=4))
    np.testing.assert_array_equal(bb, np.ones(10))
    np.testing.assert_array_equal(np.asarray(K.random_normal((5,), seed=9)),
                                  np.asarray(K.random_normal((5,), seed=9)))
    rv = K.random_uniform_variable((3, 2), 0, 1, seed=5)
    nv = K.random_normal_variable((3, 2), 0, 1, seed=5)
    assert isinstance(rv, tt.Variable) and isinstance(nv, tt.Variable) and rv.shape == (3, 2)


def test_dropout_keeps_and_scales():
    x = tnp.ones((200, 50))
    y = np.asarray(K.dropout(x, 0.25, seed=3))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02
    # a noise shape drops whole columns
    z = np.asarray(K.dropout(x, 0.5, noise_shape=(1, 50), seed=4))
    assert ((z == 0).all(axis=0) | (z != 0).all(axis=0)).all()


def test_symbolic_functions():
    p = K.placeholder(shape=(None, 3))
    assert K.is_keras_tensor(p) and K.int_shape(p) == (None, 3) and K.ndim(p) == 2
    assert K.placeholder(ndim=3).shape == (None, None, None)
    assert not K.is_keras_tensor(tnp.ones(2))
    with pytest.raises(ValueError, match="Expected a symbolic tensor instance"):
        K.is_keras_tensor(np.ones(2))
    with pytest.raises(ValueError, match="sparse"):
        K.placeholder((2,), sparse=True)
    assert K.dtype(tnp.ones(2, dtype="float16")) == "float16"
    assert not K.is_sparse(tnp.ones(2)) and K.to_dense(p) is p
    # K.function: the graph from inputs to outputs, values back as NumPy
    inp = tt.Input((2,))
    dense = tt.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")
    out = dense(inp)
    f = K.function([inp], [out])
    got = f([np.array([[1.0, 2.0]], "float32")])
    assert isinstance(got, list) and isinstance(got[0], np.ndarray)
    np.testing.assert_array_equal(got[0], [[3.0]])
    with pytest.raises(ValueError, match="`updates` argument is not supported"):
        K.function([inp], [out], updates=[1])
    with pytest.raises(ValueError, match="Session keyword arguments"):
        K.function([inp], [out], feed_dict={})
    with pytest.raises(RuntimeError, match="GradientTape"):
        K.gradients(out, [inp])


def test_print_tensor_name_scope_stop_gradient(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buf)
    x = tnp.asarray([1.0, 2.0])
    assert K.print_tensor(x, message="x is") is x
    assert buf.getvalue() == "x is [1. 2.]\n"
    with K.name_scope("block") as scope:
        assert scope == "block"
    v = tt.Variable([3.0])
    with tt.GradientTape() as tape:
        y = K.stop_gradient(v * 2) * v
        a, b = K.stop_gradient([v, v])
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, v)), [6.0])
    K.manual_variable_initialization(True)
    K.manual_variable_initialization(False)


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="Cannot do batch_dot on inputs with shapes"):
        K.batch_dot(np.ones((2, 3, 4)), np.ones((2, 5, 6)))
    with pytest.raises(ValueError, match="Cannot perform batch_dot over axis 0"):
        K.batch_dot(np.ones((2, 3)), np.ones((2, 3)), axes=(0, 0))
    with pytest.raises(ValueError, match="rank < 2"):
        K.batch_dot(np.ones(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="Rank of `condition`"):
        K.switch(np.ones((2, 2, 2), bool), np.ones((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError):             # (2,) against (2, 3): broadcast from the right
        K.switch(np.array([True, False]), np.ones((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Invalid pooling mode: median"):
        K.pool2d(np.ones((1, 2, 2, 1)), (2, 2), pool_mode="median")
    with pytest.raises(ValueError, match='"nearest" or "bilinear"'):
        K.resize_images(np.ones((1, 2, 2, 1)), 2, 2, "channels_last", "bicubic")
    with pytest.raises(ValueError, match="Unexpected bias dimensions 3"):
        K.bias_add(np.ones((2, 3, 4)), np.ones((1, 3, 4)))
    with pytest.raises(ValueError, match="label value outside"):
        K.sparse_categorical_crossentropy(np.array([3]), np.full((1, 3), 1 / 3))
