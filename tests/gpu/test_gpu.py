"""GPU checks (CuPy backend): run only where CuPy finds a CUDA device; tests/conftest.py skips
every test marked ``gpu`` elsewhere. Values are compared with NumPy on the host."""
import numpy
import pytest

import tnp
from tnp.testing import assert_same

pytestmark = pytest.mark.gpu

GPU = "gpu:0"


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def gpu(a, dtype=None):
    """A tnp array on the GPU with the values of ``a``."""
    return tnp.asarray(numpy.asarray(a, dtype=dtype)).to_device(GPU)


def host(a):
    return numpy.asarray(a.to_device("cpu")) if isinstance(a, tnp.ndarray) else numpy.asarray(a)


@pytest.mark.gpu
def test_default_device_creates_cupy_arrays(cp):
    before = tnp.get_default_device()
    with tnp.default_device(GPU):
        made = [tnp.arange(6.0), tnp.zeros((2, 3)), tnp.ones(4, dtype="float32"), tnp.full(3, 7),
                tnp.asarray([1, 2, 3]), tnp.asarray(numpy.arange(3.0)), tnp.linspace(0, 1, 5), tnp.eye(3),
                tnp.empty(2)]
        for x in made:
            assert x.device is tnp.device(GPU)
            assert isinstance(x._a, cp.ndarray)
        assert tnp.get_default_device() is tnp.device(GPU)
    assert tnp.get_default_device() is before  # restored after the block
    assert_same(numpy.arange(6.0), made[0])
    assert_same(numpy.eye(3), made[7])


@pytest.mark.gpu
def test_elementwise_and_reductions_match_numpy(cp):
    n = numpy.arange(12.0).reshape(3, 4) / 7
    x = gpu(n)
    assert isinstance(x._a, cp.ndarray)
    assert_same(n + n, x + x)
    assert_same(n + 1.5, x + 1.5)
    assert_same(2 * n, 2 * x)
    assert_same(numpy.exp(n), tnp.exp(x), rtol=1e-14)
    assert_same(n.sum(axis=0), x.sum(axis=0), rtol=1e-14)
    assert_same(n.max(axis=1), x.max(axis=1))
    assert_same(n.mean(), x.mean(), rtol=1e-14)
    assert_same(n @ n.T, x @ x.T, rtol=1e-13)
    assert_same(numpy.matmul(n, n.T), tnp.matmul(x, x.T), rtol=1e-13)
    assert_same(numpy.where(n > 0.5, n, -n), tnp.where(x > 0.5, x, -x))
    assert_same(numpy.concatenate([n, n], axis=1), tnp.concatenate([x, x], axis=1))
    assert_same(n.astype("float32"), x.astype("float32"))
    assert_same(n.astype("int16"), x.astype("int16"))
    for r in (tnp.exp(x), x + x, x.sum(axis=0), tnp.concatenate([x, x]), x.astype("float32")):
        assert r.device is tnp.device(GPU) and isinstance(r._a, cp.ndarray)


@pytest.mark.gpu
def test_reductions_return_scalars_on_gpu(cp):
    x = gpu(numpy.arange(10))
    s = x.sum()
    assert isinstance(s, tnp.Scalar)
    assert s.device is tnp.device(GPU)
    assert repr(s) == "np.int64(45)" and str(s) == "45"
    assert int(s) == 45 and float(s) == 45.0 and bool(s) and f"{s:>4}" == "  45"
    assert hash(s) == hash(45)
    assert [0, 1, 2][x[2]] == 2  # __index__ through the host
    for r in (x.max(), x.argmin(), x.mean(), x[3], (x > 4).any(), x.std()):
        assert isinstance(r, tnp.Scalar), type(r)
        assert r.device is tnp.device(GPU)
    assert_same(numpy.arange(10).mean(), x.mean())
    assert_same(numpy.arange(10)[3], x[3])


@pytest.mark.gpu
def test_indexing_matches_numpy(cp):
    n = numpy.arange(24).reshape(2, 3, 4)
    x = gpu(n)
    for key in [1, (0, 2), (slice(None), 1), (Ellipsis, 2), (None, 1), (slice(None, None, -1),),
                ([0, 1], [2, 0]), (n > 10,), (slice(None), [2, 0, 1])]:
        tkey = tuple(gpu(k) if isinstance(k, numpy.ndarray) else k for k in key)
        assert_same(n[key], x[tkey])
    # NumPy index arrays move to the GPU
    assert_same(n[numpy.asarray([1, 0])], x[numpy.asarray([1, 0])])
    n2, x2 = n.copy(), gpu(n)
    n2[:, 1] = -1
    x2[:, 1] = -1
    n2[n2 > 20] = 0
    x2[x2 > 20] = 0
    n2[0, [0, 2]] = numpy.asarray([7, 8])
    x2[0, [0, 2]] = numpy.asarray([7, 8])
    assert_same(n2, x2)
    with pytest.raises(IndexError):
        x[5]


@pytest.mark.gpu
def test_to_device_round_trip(cp):
    n = numpy.arange(6.0).reshape(2, 3)
    c = tnp.asarray(n)
    g = c.to_device(GPU)
    assert g.device is tnp.device(GPU) and isinstance(g._a, cp.ndarray)
    assert g.to_device(GPU) is g
    back = g.to_device("cpu")
    assert back.device is tnp.device("cpu") and type(back._a) is numpy.ndarray
    assert_same(n, back)
    g[0, 0] = 100  # a copy: the CPU array is untouched
    assert c[0, 0] == 0
    s = g.sum().to_device("cpu")
    assert isinstance(s, tnp.Scalar) and s == n.sum() + 100
    assert g.sum().to_device("cpu").device is tnp.device("cpu")


@pytest.mark.gpu
def test_cuda_array_interface(cp):
    x = gpu(numpy.arange(4.0))
    cai = x.__cuda_array_interface__
    assert tuple(cai["shape"]) == (4,)
    assert numpy.dtype(cai["typestr"]) == numpy.float64
    assert cai["data"][0] == x._a.data.ptr
    c = cp.asarray(x)  # zero-copy through the interface
    c[1] = 42
    assert float(x[1]) == 42.0
    assert not hasattr(tnp.arange(3), "__cuda_array_interface__")


@pytest.mark.gpu
def test_from_dlpack_of_cupy(cp):
    c = cp.arange(5, dtype=cp.float32)
    t = tnp.from_dlpack(c)
    assert t.device is tnp.device(GPU)
    assert isinstance(t._a, cp.ndarray)
    assert_same(numpy.arange(5, dtype="float32"), t)
    c[0] = 9  # shares memory
    assert float(t[0]) == 9.0
    assert t.__dlpack_device__()[0] == 2  # kDLCUDA
    back = cp.from_dlpack(t)
    back[1] = -1
    assert float(t[1]) == -1.0


@pytest.mark.gpu
def test_numpy_array_with_gpu_array_moves_to_gpu(cp):
    x = gpu(numpy.arange(3.0))
    n = numpy.ones(3)
    for r in (n + x, x + n, numpy.add(n, x), tnp.add(x, n), numpy.float64(2) * x, x * 2,
              tnp.concatenate([x, n]), tnp.where(n > 0, x, n)):
        assert r.device is tnp.device(GPU), r
        assert isinstance(r._a, cp.ndarray)
    assert_same(numpy.ones(3) + numpy.arange(3.0), n + x)
    assert_same(numpy.concatenate([numpy.arange(3.0), n]), tnp.concatenate([x, n]))


@pytest.mark.gpu
def test_numpy_asarray_copies_to_host(cp):
    x = gpu(numpy.arange(4.0))
    a = numpy.asarray(x)
    assert type(a) is numpy.ndarray
    numpy.testing.assert_array_equal(a, numpy.arange(4.0))
    a[0] = 99
    assert float(x[0]) == 0.0
    with pytest.raises(ValueError):
        numpy.asarray(x, copy=False)
    numpy.testing.assert_array_equal(x.get(), numpy.arange(4.0))
    assert numpy.sum(x).device is tnp.device(GPU)  # NumPy functions dispatch to tnp on the GPU


@pytest.mark.gpu
def test_mixed_cpu_gpu_raises(cp):
    g = gpu(numpy.arange(3.0))
    c = tnp.arange(3.0)
    for f in (lambda: g + c, lambda: c + g, lambda: tnp.concatenate([c, g]), lambda: tnp.add(g, c),
              lambda: tnp.matmul(c, g), lambda: c.__setitem__(0, g[0]), lambda: tnp.where(c > 0, g, c)):
        with pytest.raises(ValueError) as ei:
            f()
        assert "gpu:0" in str(ei.value) and "cpu" in str(ei.value)


@pytest.mark.gpu
def test_tensor_float_32_toggle(cp):
    before = tnp.config.tensor_float_32_execution_enabled()
    try:
        tnp.config.enable_tensor_float_32_execution(True)
        assert tnp.config.tensor_float_32_execution_enabled() is True
        a = gpu(numpy.ones((64, 64)), dtype="float32")
        r = a @ a
        assert r.dtype == numpy.float32
        numpy.testing.assert_allclose(host(r), numpy.full((64, 64), 64.0, dtype="float32"), rtol=1e-2)
        tnp.config.enable_tensor_float_32_execution(False)
        assert tnp.config.tensor_float_32_execution_enabled() is False
        assert_same(numpy.full((64, 64), 64.0, dtype="float32"), a @ a)
    finally:
        tnp.config.enable_tensor_float_32_execution(before)
