"""NumPy/SciPy interoperability of tnp arrays: __array__, __array_ufunc__, __array_function__,
__array_namespace__, the inspection namespace, and DLPack."""
import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
from tnp.testing import assert_same, both


def pair(a, dtype=None):
    a = numpy.array(a, dtype=dtype)
    return a.copy(), tnp.asarray(a.copy())


def is_tnp_array(x):
    return isinstance(x, tnp.ndarray) and not isinstance(x, tnp.Scalar)


# ============================================================================ __array__
def test_asarray_shares_memory():
    t = tnp.arange(6.0).reshape(2, 3)
    a = numpy.asarray(t)
    assert type(a) is numpy.ndarray
    assert_same(numpy.arange(6.0).reshape(2, 3), tnp.asarray(a))
    a[0, 0] = 42  # zero-copy: writes through to the tnp array
    assert t[0, 0] == 42
    t[1, 2] = -1
    assert a[1, 2] == -1
    assert numpy.shares_memory(a, numpy.asarray(t))


def test_asarray_of_view_shares_memory():
    t = tnp.arange(12).reshape(3, 4)
    v = t[:, 1::2].T
    a = numpy.asarray(v)
    assert a.shape == (2, 3) and a.strides == v.strides
    a[...] = 0
    assert int(t.sum()) == sum(range(12)) - (1 + 3 + 5 + 7 + 9 + 11)


def test_copy_false_and_true():
    t = tnp.arange(4.0)
    a = numpy.asarray(t, copy=False)
    a[0] = 7
    assert t[0] == 7
    b = numpy.array(t, copy=True)
    b[1] = 9
    assert t[1] == 1
    c = numpy.array(t)  # default copies
    c[2] = 9
    assert t[2] == 2
    # copy=False with a dtype change cannot be honoured: ValueError, as for NumPy arrays
    with pytest.raises(ValueError):
        numpy.asarray(numpy.arange(4.0), dtype="float32", copy=False)
    with pytest.raises(ValueError):
        numpy.asarray(t, dtype="float32", copy=False)


def test_dunder_array_dtype():
    n, t = pair([1.5, 2.5, -3.0])
    for dtype in (None, "float32", "int64", "complex128", numpy.float16, "bool"):
        exp = n.__array__(dtype) if dtype is not None else n.__array__()
        got = t.__array__(dtype) if dtype is not None else t.__array__()
        assert type(got) is numpy.ndarray
        numpy.testing.assert_array_equal(got, exp, strict=True)
        got2 = numpy.asarray(t, dtype=dtype)
        numpy.testing.assert_array_equal(got2, numpy.asarray(n, dtype=dtype), strict=True)
    # same dtype: still zero-copy
    assert numpy.shares_memory(t.__array__("float64"), numpy.asarray(t))
    assert numpy.shares_memory(t.__array__(copy=False), numpy.asarray(t))
    assert not numpy.shares_memory(t.__array__(copy=True), numpy.asarray(t))
    assert not numpy.shares_memory(t.__array__("float32"), numpy.asarray(t))


def test_array_of_scalar_and_lists_of_tnp():
    s = tnp.arange(5.0).sum()
    a = numpy.asarray(s)
    assert a.shape == () and a.dtype == numpy.float64 and a == 10.0
    nested = numpy.array([tnp.arange(3), tnp.arange(3) * 2])
    numpy.testing.assert_array_equal(nested, [[0, 1, 2], [0, 2, 4]], strict=False)
    assert nested.dtype == numpy.arange(3).dtype
    assert numpy.array([tnp.arange(2)[1], tnp.arange(2)[0]]).tolist() == [1, 0]


@given(hnp.arrays(st.sampled_from([numpy.int8, numpy.uint16, numpy.float32, numpy.float64, numpy.complex64,
                                   numpy.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
def test_asarray_roundtrip(a):
    t = tnp.asarray(a)
    back = numpy.asarray(t)
    numpy.testing.assert_array_equal(back, a, strict=True)
    assert back.dtype == a.dtype and back.shape == a.shape


# ============================================================================ __array_ufunc__
UFUNC_CASES = [
    lambda np_x, t_x: (np_x + t_x),
    lambda np_x, t_x: (t_x + np_x),
    lambda np_x, t_x: (np_x * t_x),
    lambda np_x, t_x: (np_x - t_x),
    lambda np_x, t_x: (np_x / t_x),
    lambda np_x, t_x: (np_x ** t_x),
    lambda np_x, t_x: (np_x @ t_x.T),
    lambda np_x, t_x: (np_x < t_x),
    lambda np_x, t_x: numpy.add(np_x, t_x),
    lambda np_x, t_x: numpy.add(t_x, np_x),
    lambda np_x, t_x: numpy.exp(t_x),
    lambda np_x, t_x: numpy.maximum(np_x, t_x),
    lambda np_x, t_x: numpy.add.reduce(t_x, axis=1),
    lambda np_x, t_x: numpy.add.accumulate(t_x, axis=0),
    lambda np_x, t_x: numpy.multiply.outer(t_x[0], np_x[1]),
    lambda np_x, t_x: numpy.sqrt(t_x, where=t_x > 2, out=numpy.zeros((2, 3))),
]


@pytest.mark.parametrize("k", range(len(UFUNC_CASES)))
def test_numpy_ufuncs_on_tnp_give_tnp(k):
    f = UFUNC_CASES[k]
    n = numpy.arange(1.0, 7.0).reshape(2, 3)
    expected = f(n.copy(), n.copy())
    got = f(n.copy(), tnp.asarray(n.copy()))
    if k == len(UFUNC_CASES) - 1:
        # out= a NumPy array: that array is returned
        numpy.testing.assert_array_equal(numpy.asarray(got), expected)
        return
    assert is_tnp_array(got) or isinstance(got, tnp.Scalar), type(got)
    assert_same(expected, got)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "float64", "complex64"])
def test_mixed_numpy_tnp_binary_dtypes(dtype):
    n = numpy.arange(1, 5, dtype=dtype)
    m = numpy.arange(2, 6, dtype="int16")
    t = tnp.asarray(n)
    assert_same(n + m, t + m)
    assert_same(m + n, m + t)
    assert_same(m * n, numpy.multiply(m, t))
    assert_same(n - m[0], t - m[0])           # a NumPy scalar on the right
    assert_same(m[0] - n, m[0] - t)           # and on the left
    assert_same(numpy.float32(2) * n, numpy.float32(2) * t)
    assert_same(numpy.int64(3) * n, numpy.int64(3) * t)
    assert_same(n * numpy.float64(0.5), t * numpy.float64(0.5))


def test_numpy_scalar_times_tnp_array():
    t = tnp.arange(4, dtype="float32")
    r = numpy.float32(1.5) * t
    assert is_tnp_array(r)
    assert_same(numpy.float32(1.5) * numpy.arange(4, dtype="float32"), r)
    r = numpy.float64(2.0) ** t
    assert_same(numpy.float64(2.0) ** numpy.arange(4, dtype="float32"), r)


def test_numpy_inplace_with_tnp_operand():
    n = numpy.arange(3.0)
    n += tnp.arange(3.0)
    assert type(n) is numpy.ndarray  # NumPy's in-place op keeps the NumPy array
    numpy.testing.assert_array_equal(n, [0.0, 2.0, 4.0])
    t = tnp.arange(3.0)
    t += numpy.arange(3.0)
    assert_same(numpy.asarray([0.0, 2.0, 4.0]), t)


def test_numpy_ufunc_out_tnp():
    t = tnp.zeros(3)
    before = t._version
    r = numpy.add(numpy.arange(3.0), 1, out=t)
    assert r is t
    assert_same(numpy.arange(3.0) + 1, t)
    assert t._version > before
    r = numpy.negative(t, out=t)
    assert r is t
    assert_same(-(numpy.arange(3.0) + 1), t)


def test_numpy_ufunc_at_on_tnp():
    t = tnp.zeros(4)
    before = t._version
    numpy.add.at(t, [0, 0, 2], 1)
    assert_same(numpy.asarray([2.0, 0, 1, 0]), t)
    assert t._version > before


# ============================================================================ __array_function__
FUNC_CASES = {
    "sum": lambda xp, x: numpy.sum(x),
    "sum_axis": lambda xp, x: numpy.sum(x, axis=1),
    "mean_axis0": lambda xp, x: numpy.mean(x, axis=0),
    "concatenate": lambda xp, x: numpy.concatenate([x, x]),
    "concatenate_mixed": lambda xp, x: numpy.concatenate([x, numpy.ones((1, 3))]),
    "stack": lambda xp, x: numpy.stack([x, x], axis=-1),
    "where": lambda xp, x: numpy.where(x > 2, x, -x),
    "reshape": lambda xp, x: numpy.reshape(x, (3, 2)),
    "transpose": lambda xp, x: numpy.transpose(x),
    "dot": lambda xp, x: numpy.dot(x, x.T),
    "argsort": lambda xp, x: numpy.argsort(-x, axis=None),
    "linalg.norm": lambda xp, x: numpy.linalg.norm(x),
    "linalg.inv": lambda xp, x: numpy.linalg.inv(x[:, :2] + numpy.eye(2)),
    "fft": lambda xp, x: numpy.fft.fft(x),
    "unique": lambda xp, x: numpy.unique(x % 2),
    "cumsum": lambda xp, x: numpy.cumsum(x),
    "isclose": lambda xp, x: numpy.isclose(x, 2.0),
    "allclose": lambda xp, x: numpy.allclose(x, x),
    "pad": lambda xp, x: numpy.pad(x, 1),
    "einsum": lambda xp, x: numpy.einsum("ij->j", x),
    "percentile": lambda xp, x: numpy.percentile(x, 50),
    "shape": lambda xp, x: numpy.shape(x),
    "ndim": lambda xp, x: numpy.ndim(x),
    "split": lambda xp, x: numpy.split(x, 3, axis=1),
    "nonzero": lambda xp, x: numpy.nonzero(x > 2),
    "histogram": lambda xp, x: numpy.histogram(x, bins=3),
    "sliding_window_view": lambda xp, x: numpy.lib.stride_tricks.sliding_window_view(x, 2, axis=1),
    "apply_along_axis": lambda xp, x: numpy.apply_along_axis(numpy.sum, 0, x),
    "round": lambda xp, x: numpy.round(x / 3, 2),
    "clip": lambda xp, x: numpy.clip(x, 1, 3),
    "diff": lambda xp, x: numpy.diff(x, axis=1),
    "trapezoid": lambda xp, x: numpy.trapezoid(x, axis=1),
}


@pytest.mark.parametrize("name", list(FUNC_CASES), ids=list(FUNC_CASES))
def test_numpy_functions_on_tnp_return_tnp(name):
    n = numpy.arange(6.0).reshape(2, 3)
    t = tnp.asarray(n.copy())
    f = FUNC_CASES[name]
    expected = f(numpy, n)
    got = f(tnp, t)
    assert_same(expected, got, rtol=1e-12)


def test_numpy_functions_tnp_does_not_wrap_run_on_host_and_return_tnp():
    import numpy.lib.recfunctions as rf
    from tnp._core.dispatch import _NUMPY_TO_TNP
    cases = [
        (rf.structured_to_unstructured, (numpy.array([(1, 2.0), (3, 4.5)], dtype=[("a", "i4"), ("b", "f8")]),)),
        (numpy.polynomial.polynomial.polyval2d, (numpy.asarray([1.0, 2.0]), numpy.asarray([2.0, 0.5]),
                                                 numpy.arange(4.0).reshape(2, 2))),
    ]
    for f, args in cases:
        assert f not in _NUMPY_TO_TNP  # the fallback path, not a tnp function
        expected = f(*args)
        got = f(*[tnp.asarray(a) for a in args])
        assert_same(expected, got)
        on1 = f(*[tnp.asarray(a, device="cpu:1") for a in args])
        assert on1.device == tnp.device("cpu:1")  # results stay on the inputs' device


def test_numpy_function_errors_keep_type():
    t = tnp.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError):
        numpy.concatenate([t, tnp.ones((2, 2))], axis=0)
    with pytest.raises(numpy.exceptions.AxisError):
        numpy.sum(t, axis=5)
    with pytest.raises(numpy.linalg.LinAlgError):
        numpy.linalg.inv(tnp.zeros((2, 2)))


def test_numpy_function_out_tnp():
    t = tnp.arange(6.0).reshape(2, 3)
    o = tnp.zeros(3)
    r = numpy.sum(t, axis=0, out=o)
    assert r is o
    assert_same(numpy.arange(6.0).reshape(2, 3).sum(axis=0), o)


# ============================================================================ SciPy
def test_scipy_special_ufuncs():
    special = pytest.importorskip("scipy.special")
    n = numpy.linspace(-3, 3, 7)
    t = tnp.asarray(n)
    for f in (special.expit, special.erf, special.gammaln, special.logit):
        with numpy.errstate(all="ignore"):
            assert_same(f(n), f(t))
            assert is_tnp_array(f(t))
    assert_same(special.xlogy(n, n + 4), special.xlogy(t, t + 4))
    assert float(special.logsumexp(t)) == float(special.logsumexp(n))  # SciPy's own result type


def test_scipy_functions_accept_tnp():
    linalg = pytest.importorskip("scipy.linalg")
    n = numpy.asarray([[4.0, 1.0], [1.0, 3.0]])
    t = tnp.asarray(n)
    assert float(linalg.norm(t)) == float(linalg.norm(n))
    numpy.testing.assert_allclose(numpy.asarray(linalg.inv(t)), linalg.inv(n))
    numpy.testing.assert_allclose(numpy.asarray(linalg.cholesky(t)), linalg.cholesky(n))
    numpy.testing.assert_allclose(numpy.asarray(linalg.solve(t, tnp.ones(2))), linalg.solve(n, numpy.ones(2)))
    import scipy.signal
    import scipy.stats
    numpy.testing.assert_allclose(numpy.asarray(scipy.signal.convolve(tnp.arange(4.0), tnp.ones(2))),
                                  scipy.signal.convolve(numpy.arange(4.0), numpy.ones(2)))
    assert float(scipy.stats.pearsonr(tnp.arange(5.0), tnp.arange(5.0) ** 2)[0]) == pytest.approx(
        float(scipy.stats.pearsonr(numpy.arange(5.0), numpy.arange(5.0) ** 2)[0]))


# ============================================================================ array API
def test_array_namespace():
    t = tnp.arange(3)
    assert t.__array_namespace__() is tnp
    for v in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        assert t.__array_namespace__(api_version=v) is tnp
    for bad in ("2020.01", "1.0", "2099.12", ""):
        with pytest.raises(ValueError):
            t.__array_namespace__(api_version=bad)
    assert tnp.arange(3).sum().__array_namespace__() is tnp
    # NumPy arrays name NumPy; the two are different namespaces
    assert numpy.arange(3).__array_namespace__() is numpy


def test_array_namespace_info():
    info = tnp.__array_namespace_info__()
    devs = info.devices()
    assert tnp.device("cpu") in devs
    assert all(isinstance(d, tnp.Device) for d in devs)
    assert info.default_device() is tnp.get_default_device()
    with tnp.default_device("cpu:1"):
        assert info.default_device() is tnp.device("cpu:1")
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert isinstance(caps.get("max dimensions"), int) and caps["max dimensions"] >= 32
    dd = info.default_dtypes()
    npinfo = numpy.__array_namespace_info__()
    assert dd == npinfo.default_dtypes()
    assert dd["real floating"] == numpy.float64 and dd["indexing"] == numpy.intp
    all_dtypes = info.dtypes()
    assert all_dtypes == npinfo.dtypes()
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                 "complex floating", "numeric", ("real floating", "complex floating")):
        assert info.dtypes(kind=kind) == npinfo.dtypes(kind=kind), kind
    with pytest.raises(ValueError):
        info.dtypes(kind="no such kind")
    assert info.dtypes(device=tnp.device("cpu")) == all_dtypes


def test_array_api_style_usage():
    def standardise(x):
        xp = x.__array_namespace__()
        return (x - xp.mean(x)) / xp.std(x)
    n = numpy.arange(5.0)
    assert_same(standardise(n), standardise(tnp.asarray(n)))


# ============================================================================ DLPack
def test_numpy_from_dlpack_shares_memory():
    t = tnp.arange(6.0).reshape(2, 3)
    a = numpy.from_dlpack(t)
    assert type(a) is numpy.ndarray
    numpy.testing.assert_array_equal(a, numpy.arange(6.0).reshape(2, 3))
    t[0, 1] = 50
    assert a[0, 1] == 50
    assert numpy.shares_memory(a, numpy.asarray(t))
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    # a strided view travels with its strides
    v = t[:, ::2]
    b = numpy.from_dlpack(v)
    numpy.testing.assert_array_equal(b, numpy.asarray(v))
    assert numpy.shares_memory(b, numpy.asarray(t))


def test_tnp_from_dlpack_shares_memory():
    n = numpy.arange(5, dtype="int32")
    t = tnp.from_dlpack(n)
    assert is_tnp_array(t) and t.device == tnp.device("cpu")
    assert_same(numpy.arange(5, dtype="int32"), t)
    n[2] = 99
    assert t[2] == 99
    t[0] = -1
    assert n[0] == -1
    # copy=True gives independent memory
    c = tnp.from_dlpack(n, copy=True)
    n[1] = 77
    assert c[1] == 1
    # from another tnp array, and onto another device
    assert tnp.from_dlpack(t) is t or numpy.shares_memory(numpy.asarray(tnp.from_dlpack(t)), n)
    d = tnp.from_dlpack(n, device="cpu:1")
    assert d.device == tnp.device("cpu:1")
    assert_same(n, d)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "complex128"])
def test_dlpack_roundtrip_dtypes(dtype):
    n = numpy.arange(4).astype(dtype)
    t = tnp.from_dlpack(n)
    assert_same(n, t)
    assert_same(n, tnp.asarray(numpy.from_dlpack(t)))


def test_dlpack_of_scalar_and_readonly():
    s = tnp.arange(3)[1]
    a = numpy.from_dlpack(s)
    assert a.shape == () and a == 1
    ro = numpy.arange(3.0)
    ro.flags.writeable = False
    both(lambda xp: xp.from_dlpack(ro).sum())


def test_cuda_array_interface_absent_on_cpu():
    t = tnp.arange(3)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError):
        t.__cuda_array_interface__
