"""tt.initializers: statistics, limits, fans, orthogonality, reproducibility, lookup."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt

I = tt.initializers  # noqa: E741


def draw(init, shape, dtype="float32"):
    out = init(shape, dtype=dtype)
    assert isinstance(out, tnp.ndarray) and out.shape == tuple(shape) and out.dtype == np.dtype(dtype)
    return np.asarray(out).astype(np.float64)


def test_constant_initializers():
    np.testing.assert_array_equal(draw(I.Zeros(), (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(draw(I.Ones(), (4,), "float64"), np.ones(4))
    np.testing.assert_array_equal(draw(I.Constant(2.5), (2, 2)), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(draw(I.Constant([1.0, 2.0]), (3, 2)), np.tile([1.0, 2.0], (3, 1)))
    assert I.Zeros()((2,), dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(draw(I.Identity(gain=2.0), (2, 3)), 2 * np.eye(2, 3))
    with pytest.raises(ValueError, match="Identity.*2-D"):
        I.Identity()((2, 2, 2))
    with pytest.raises(ValueError, match="Constant"):
        I.Constant([1.0, 2.0])((3, 3))
    assert I.Zeros()((2,)).dtype == np.float32  # floatx by default


N = (200, 300)


@pytest.mark.parametrize("init,mean,std,limit", [
    (I.RandomNormal(seed=1), 0.0, 0.05, None),
    (I.RandomNormal(mean=1.0, stddev=0.2, seed=1), 1.0, 0.2, None),
    (I.RandomUniform(seed=2), 0.0, 0.1 / math.sqrt(12), (-0.05, 0.05)),
    (I.RandomUniform(-1.0, 3.0, seed=2), 1.0, 4 / math.sqrt(12), (-1.0, 3.0)),
    # a normal truncated at two standard deviations keeps 0.8796 of its stddev
    (I.TruncatedNormal(seed=3), 0.0, 0.05 * 0.87962566, (-0.1, 0.1)),
    (I.GlorotUniform(seed=4), 0.0, math.sqrt(2 / 500), (-math.sqrt(6 / 500), math.sqrt(6 / 500))),
    (I.GlorotNormal(seed=5), 0.0, math.sqrt(2 / 500), None),
    (I.HeUniform(seed=6), 0.0, math.sqrt(2 / 200), (-math.sqrt(6 / 200), math.sqrt(6 / 200))),
    (I.HeNormal(seed=7), 0.0, math.sqrt(2 / 200), None),
    (I.LecunUniform(seed=8), 0.0, math.sqrt(1 / 200), (-math.sqrt(3 / 200), math.sqrt(3 / 200))),
    (I.LecunNormal(seed=9), 0.0, math.sqrt(1 / 200), None),
    (I.VarianceScaling(2.0, "fan_out", "untruncated_normal", seed=10), 0.0, math.sqrt(2 / 300), None),
    (I.VarianceScaling(3.0, "fan_avg", "uniform", seed=11), 0.0, math.sqrt(3 / 250), None),
])
def test_random_statistics(init, mean, std, limit):
    w = draw(init, N)
    assert abs(w.mean() - mean) < 4 * std / math.sqrt(w.size) + 1e-6
    assert w.std() == pytest.approx(std, rel=0.02)
    if limit is not None:
        lo, hi = limit
        assert w.min() >= lo - 1e-7 and w.max() <= hi + 1e-7
        assert w.min() < lo + 0.01 * (hi - lo) and w.max() > hi - 0.01 * (hi - lo)


def test_truncated_normal_variance_scaling_bounds():
    w = draw(I.HeNormal(seed=0), N)
    std = math.sqrt(2 / 200) / 0.87962566103423978
    assert np.abs(w).max() <= 2 * std + 1e-6


def test_conv_kernel_fans_count_the_receptive_field():
    # Conv2D kernel (kh, kw, cin, cout): fan_in = 3*3*16, fan_out = 3*3*32
    w = draw(I.GlorotUniform(seed=0), (3, 3, 16, 32))
    limit = math.sqrt(6 / (3 * 3 * 16 + 3 * 3 * 32))
    assert w.max() <= limit + 1e-7 and w.max() > 0.98 * limit
    w = draw(I.HeNormal(seed=0), (5, 8, 64))
    assert w.std() == pytest.approx(math.sqrt(2 / (5 * 8)), rel=0.05)
    w = draw(I.LecunUniform(seed=0), (1000,))  # 1-D: fan_in = fan_out = n
    assert np.abs(w).max() <= math.sqrt(3 / 1000) + 1e-7


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), gain=st.floats(0.5, 2.0))
def test_orthogonal(rows, cols, gain):
    w = draw(I.Orthogonal(gain=gain, seed=rows * 13 + cols), (rows, cols), "float64")
    if rows >= cols:
        np.testing.assert_allclose(w.T @ w, gain ** 2 * np.eye(cols), atol=1e-10)
    else:
        np.testing.assert_allclose(w @ w.T, gain ** 2 * np.eye(rows), atol=1e-10)


def test_orthogonal_flattens_leading_dims_and_rejects_vectors():
    w = draw(I.Orthogonal(seed=0), (2, 3, 4), "float64").reshape(6, 4)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-10)
    with pytest.raises(ValueError, match="Orthogonal"):
        I.Orthogonal()((5,))


@pytest.mark.parametrize("cls", [I.RandomNormal, I.RandomUniform, I.TruncatedNormal, I.GlorotUniform,
                                 I.GlorotNormal, I.HeNormal, I.HeUniform, I.LecunNormal,
                                 I.LecunUniform, I.Orthogonal, I.VarianceScaling])
def test_reproducibility(cls):
    a = draw(cls(seed=3), (4, 5))
    np.testing.assert_array_equal(a, draw(cls(seed=3), (4, 5)))
    init = cls(seed=3)
    np.testing.assert_array_equal(draw(init, (4, 5)), draw(init, (4, 5)))  # stateless, as TF
    assert not np.array_equal(a, draw(cls(seed=4), (4, 5)))
    tt.utils.set_random_seed(11)
    b = draw(cls(), (4, 5))
    c = draw(cls(), (4, 5))
    assert not np.array_equal(b, c)
    tt.utils.set_random_seed(11)
    np.testing.assert_array_equal(draw(cls(), (4, 5)), b)
    np.testing.assert_array_equal(draw(cls(), (4, 5)), c)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_dtypes(dtype):
    w = I.GlorotUniform(seed=0)((8, 8), dtype=dtype)
    assert w.dtype == np.dtype(dtype)
    with pytest.raises(ValueError, match="floating"):
        I.GlorotUniform()((2, 2), dtype="int32")


def test_variance_scaling_validation():
    with pytest.raises(ValueError, match="scale"):
        I.VarianceScaling(scale=0)
    with pytest.raises(ValueError, match="mode"):
        I.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="distribution"):
        I.VarianceScaling(distribution="cauchy")
    with pytest.raises(TypeError, match="seed"):
        I.RandomNormal(seed=1.5)


def test_get_aliases_serialize_deserialize():
    for name, cls in [("glorot_uniform", I.GlorotUniform), ("glorot_normal", I.GlorotNormal),
                      ("he_normal", I.HeNormal), ("he_uniform", I.HeUniform),
                      ("lecun_normal", I.LecunNormal), ("lecun_uniform", I.LecunUniform),
                      ("uniform", I.RandomUniform), ("random_uniform", I.RandomUniform),
                      ("normal", I.RandomNormal), ("random_normal", I.RandomNormal),
                      ("truncated_normal", I.TruncatedNormal), ("orthogonal", I.Orthogonal),
                      ("identity", I.Identity), ("zeros", I.Zeros), ("ones", I.Ones),
                      ("constant", I.Constant), ("variance_scaling", I.VarianceScaling),
                      ("GlorotUniform", I.GlorotUniform)]:
        assert type(I.get(name)) is cls, name
    assert I.get(None) is None
    init = I.VarianceScaling(2.0, "fan_out", "uniform", seed=5)
    assert I.get(init) is init
    assert I.get(I.HeNormal).get_config() == {"seed": None}
    s = I.serialize(init)
    assert s == {"class_name": "VarianceScaling",
                 "config": {"scale": 2.0, "mode": "fan_out", "distribution": "uniform", "seed": 5}}
    back = I.deserialize(s)
    np.testing.assert_array_equal(draw(back, (3, 3)), draw(init, (3, 3)))
    for cls in (I.Zeros, I.Ones, I.Constant, I.RandomNormal, I.RandomUniform, I.TruncatedNormal,
                I.GlorotUniform, I.Orthogonal, I.Identity, I.HeNormal):
        obj = cls()
        assert type(I.get(I.serialize(obj))) is cls
        assert I.get(I.serialize(obj)).get_config() == obj.get_config()
    with pytest.raises(ValueError, match="Unknown initializer"):
        I.get("glorot")
    assert I.glorot_uniform is I.GlorotUniform and I.uniform is I.RandomUniform


def test_dense_and_layers_use_them():
    layer = tt.layers.Dense(4, kernel_initializer="orthogonal", bias_initializer=I.Constant(0.5))
    layer(tnp.ones((1, 4), dtype="float32"))
    W, b = layer.get_weights()
    np.testing.assert_allclose(W.T @ W, np.eye(4), atol=1e-5)
    np.testing.assert_array_equal(b, np.full(4, 0.5, np.float32))
