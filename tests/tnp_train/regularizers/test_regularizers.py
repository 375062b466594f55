"""tt.regularizers against NumPy; gradients on the tape."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

R = tt.regularizers


def ref_orthogonal(x, factor, mode):
    if mode == "columns":
        x = x.T
    u = x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-12))
    n = x.shape[0]
    total = sum(abs(u[i] @ u[j]) for i in range(n) for j in range(i + 1, n))
    return factor * total / (n * (n - 1) / 2)


@settings(max_examples=15, deadline=None)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)),
                elements=st.floats(-3, 3)),
       l1=st.floats(0, 1), l2=st.floats(0, 1))
def test_values_match_numpy(x, l1, l2):
    assert float(R.L1(l1)(x)) == pytest.approx(l1 * np.abs(x).sum(), abs=1e-12)
    assert float(R.L2(l2)(x)) == pytest.approx(l2 * (x * x).sum(), abs=1e-12)
    want = l1 * np.abs(x).sum() + l2 * (x * x).sum()
    assert float(R.L1L2(l1, l2)(tnp.asarray(x))) == pytest.approx(want, abs=1e-12)


def test_defaults_and_scalar_results():
    x = np.arange(-3.0, 3.0).reshape(2, 3).astype(np.float32)
    assert float(R.L1()(x)) == pytest.approx(0.01 * 9)
    assert float(R.L2()(x)) == pytest.approx(0.01 * 19)
    assert float(R.L1L2()(x)) == 0.0
    assert float(R.l1_l2()(x)) == pytest.approx(0.01 * 9 + 0.01 * 19)
    out = R.L2()(tnp.asarray(x))
    assert out.shape == () and out.dtype == np.float32
    assert R.L1(l=0.5).l1 == 0.5  # TF 2.4's alias
    with pytest.raises(ValueError, match="l2"):
        R.L2(-1.0)


def test_gradients_on_the_tape():
    x = np.array([[0.5, -1.5], [2.0, -0.25]])
    check_grads(R.L1L2(0.3, 0.7))(tnp.asarray(x))
    check_grads(R.OrthogonalRegularizer(0.2))(tnp.asarray(x))
    v = tt.Variable(x)
    with tt.GradientTape() as tape:
        penalty = R.L2(0.5)(v)
    np.testing.assert_allclose(np.asarray(tape.gradient(penalty, v)), x)


@pytest.mark.parametrize("mode", ["rows", "columns"])
def test_orthogonal_regularizer(mode):
    x = np.random.default_rng(0).normal(size=(4, 3))
    got = R.OrthogonalRegularizer(factor=0.3, mode=mode)(x)
    assert float(got) == pytest.approx(ref_orthogonal(x, 0.3, mode), rel=1e-10)
    q = np.linalg.qr(np.random.default_rng(1).normal(size=(5, 5)))[0]
    assert float(R.OrthogonalRegularizer(1.0)(q)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="2-D"):
        R.OrthogonalRegularizer()(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="mode"):
        R.OrthogonalRegularizer(mode="diag")


def test_get_serialize_deserialize():
    assert type(R.get("l1")) is R.L1 and R.get("l1").l1 == 0.01
    assert type(R.get("l2")) is R.L2 and R.get("l2").l2 == 0.01
    l1l2 = R.get("l1_l2")
    assert type(l1l2) is R.L1L2 and (l1l2.l1, l1l2.l2) == (0.01, 0.01)
    assert R.get(None) is None
    reg = R.L1L2(l1=0.1, l2=0.2)
    assert R.get(reg) is reg
    assert R.serialize(reg) == {"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}}
    for obj in (reg, R.L1(0.3), R.L2(0.4), R.OrthogonalRegularizer(0.5, "columns")):
        back = R.deserialize(R.serialize(obj))
        assert type(back) is type(obj) and back.get_config() == obj.get_config()
    with pytest.raises(ValueError, match="Unknown regularizer"):
        R.get("l3")
