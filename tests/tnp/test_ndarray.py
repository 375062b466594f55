"""tnp.ndarray against numpy.ndarray: attributes, methods, indexing, views, in-place writes,
the version counter, printing, pickling, Python protocols and subclasses."""
import copy
import operator
import pickle

import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
from tnp.testing import assert_same, both


def pair(a, dtype=None):
    """The same data as a NumPy array and as a tnp array (independent buffers)."""
    a = numpy.array(a, dtype=dtype)
    return a.copy(), tnp.asarray(a.copy())


def host(x):
    return x._a if isinstance(x, tnp.ndarray) else x


def data24(xp, dtype="float64"):
    return (xp.arange(24) - 7).astype(dtype).reshape(2, 3, 4)


# ============================================================================ attributes
ATTR_CASES = {
    "c2d": lambda xp: xp.arange(12, dtype="int32").reshape(3, 4),
    "T": lambda xp: xp.arange(12, dtype="int16").reshape(3, 4).T,
    "strided": lambda xp: xp.arange(30.0).reshape(5, 6)[::2, 1::3],
    "0d": lambda xp: xp.asarray(3.5),
    "empty": lambda xp: xp.zeros((0, 3), dtype="complex64"),
    "fortran": lambda xp: xp.asfortranarray(xp.ones((2, 3), dtype="uint8")),
    "bool3d": lambda xp: xp.ones((2, 1, 3), dtype=bool),
    "str": lambda xp: xp.asarray(["a", "bcd"]),
}


@pytest.mark.parametrize("case", list(ATTR_CASES), ids=list(ATTR_CASES))
def test_attributes(case):
    n = ATTR_CASES[case](numpy)
    t = ATTR_CASES[case](tnp)
    assert isinstance(t, tnp.ndarray)
    for name in ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides"):
        assert getattr(t, name) == getattr(n, name), name
        assert type(getattr(t, name)) is type(getattr(n, name)), name
    for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED"):
        assert t.flags[flag] == n.flags[flag], flag
    assert t.flags.c_contiguous == n.flags.c_contiguous
    assert t.flags.f_contiguous == n.flags.f_contiguous
    assert len(t.shape) == t.ndim


def test_shape_setter():
    n, t = pair(numpy.arange(12))
    n.shape = (3, 4)
    t.shape = (3, 4)
    assert_same(n, t)
    n.shape = (2, -1)
    t.shape = (2, -1)
    assert_same(n, t)
    with pytest.raises(ValueError):
        n.shape = (5, 5)
    with pytest.raises(ValueError):
        t.shape = (5, 5)
    assert t.shape == (2, 6)
    # a non-contiguous view cannot be reshaped in place
    with pytest.raises(AttributeError):
        n.T.shape = (12,)
    with pytest.raises(AttributeError):
        t.T.shape = (12,)


def test_shape_setter_writes_through_to_view_base():
    t = tnp.arange(6)
    v = t[:]
    v.shape = (2, 3)
    assert t.shape == (6,)
    v[1, 0] = 100
    assert t[3] == 100


def test_base():
    n = numpy.arange(6)
    t = tnp.arange(6)
    assert t.base is None and tnp.zeros(3).base is None
    for f in (lambda a: a[1:], lambda a: a.T, lambda a: a.reshape(2, 3), lambda a: a.view(),
              lambda a: a[::2], lambda a: a[None]):
        assert (f(n).base is None) == (f(t).base is None)
        assert f(t).base is not None
        assert isinstance(f(t).base, tnp.ndarray)
    # a copy (also through fancy indexing) has no base
    assert (t[[0, 1]].base is None) == (n[[0, 1]].base is None)
    assert t.copy().base is None
    # the base is the same memory: writing into it shows in the view
    v = t[2:]
    v.base[3] = -1
    assert v[1] == -1


def test_T_and_mT():
    both(lambda xp: data24(xp).T)
    both(lambda xp: data24(xp).mT)
    both(lambda xp: xp.arange(3).T)
    both(lambda xp: xp.arange(3).mT)  # ValueError in both
    both(lambda xp: xp.arange(6).reshape(2, 3).mT)


def test_T_is_view():
    t = tnp.arange(6).reshape(2, 3)
    t.T[2, 1] = 50
    assert t[1, 2] == 50


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "int64"])
def test_real_imag_get(dtype):
    def f(xp):
        a = xp.asarray([1 + 2j, -3.5 + 0.5j, 0j]) if dtype.startswith("complex") else xp.arange(3)
        return a.astype(dtype)
    both(lambda xp: f(xp).real)
    both(lambda xp: f(xp).imag)


def test_real_imag_set():
    n, t = pair([1 + 2j, 3 - 4j, 5j])
    n.real = [9, 8, 7]
    t.real = [9, 8, 7]
    n.imag = 0.5
    t.imag = 0.5
    assert_same(n, t)
    t.real = tnp.asarray([1.0, 2.0, 3.0])
    n.real = numpy.asarray([1.0, 2.0, 3.0])
    assert_same(n, t)
    # the real part of a complex array is a view
    t.real[0] = -100
    assert t[0] == -100 + 0.5j
    # a real array has a read-only imaginary part: NumPy raises TypeError
    n2, t2 = pair([1.0, 2.0])
    with pytest.raises(TypeError):
        n2.imag = 1
    with pytest.raises(TypeError):
        t2.imag = 1
    n2.real = [5, 6]
    t2.real = [5, 6]
    assert_same(n2, t2)


def test_flat_get():
    both(lambda xp: data24(xp).flat[5])
    both(lambda xp: data24(xp).flat[-1])
    both(lambda xp: data24(xp).flat[3:9])
    both(lambda xp: data24(xp).flat[[0, 5, 23]])
    both(lambda xp: data24(xp).T.flat[1:5])
    both(lambda xp: data24(xp).flat[24])  # IndexError in both
    assert len(tnp.ones((2, 3)).flat) == 6


def test_flat_iterate():
    n = data24(numpy).transpose(2, 0, 1)
    t = data24(tnp).transpose(2, 0, 1)
    got = list(t.flat)
    exp = list(n.flat)
    assert len(got) == len(exp)
    for e, g in zip(exp, got):
        assert_same(e, g)


def test_flat_set():
    n, t = pair(numpy.zeros((3, 4)))
    n.flat[5] = 1
    t.flat[5] = 1
    n.flat[[0, 11]] = [7, 8]
    t.flat[[0, 11]] = [7, 8]
    n.flat[1:3] = -2
    t.flat[1:3] = -2
    assert_same(n, t)
    # assigning to the flat attribute fills the array, repeating the values
    n.flat = [1, 2, 3]
    t.flat = [1, 2, 3]
    assert_same(n, t)
    # through a transposed view
    nt, tt = n.T, t.T
    nt.flat[1] = 99
    tt.flat[1] = 99
    assert_same(n, t)


# ============================================================================ methods
METHOD_CASES = {
    # item / tolist / tobytes
    "item_flat": lambda xp: data24(xp).item(5),
    "item_nd": lambda xp: data24(xp, "int32").item(1, 2, 3),
    "item_0d": lambda xp: xp.asarray(2.5).item(),
    "item_size1": lambda xp: xp.ones((1, 1), dtype="complex64").item(),
    "item_err": lambda xp: data24(xp).item(),
    "item_bool": lambda xp: xp.asarray([True, False]).item(1),
    "tolist": lambda xp: data24(xp, "int16").tolist(),
    "tolist_0d": lambda xp: xp.asarray(3, dtype="uint8").tolist(),
    "tolist_complex": lambda xp: xp.asarray([1j, 2]).tolist(),
    "tobytes": lambda xp: data24(xp, "int32").tobytes(),
    "tobytes_F": lambda xp: data24(xp, "float32").tobytes(order="F"),
    "tobytes_T": lambda xp: data24(xp, "int8").T.tobytes(),
    # dtype views
    "view_int16": lambda xp: xp.arange(4, dtype="int32").view("int16"),
    "view_uint8": lambda xp: xp.arange(3, dtype="float32").view(xp.uint8),
    "view_f4": lambda xp: xp.arange(6, dtype="int32").reshape(2, 3).view("float32"),
    "view_wider": lambda xp: xp.arange(8, dtype="int16").reshape(2, 4).view("int64"),
    "view_complex": lambda xp: xp.arange(4.0).view("complex128"),
    "view_bad": lambda xp: xp.arange(6, dtype="int16").reshape(2, 3).view("int32"),
    "view_noncontig": lambda xp: xp.arange(12, dtype="int32").reshape(3, 4).T.view("int16"),
    "view_same": lambda xp: data24(xp).view(),
    # shape
    "reshape_args": lambda xp: data24(xp).reshape(4, 6),
    "reshape_tuple": lambda xp: data24(xp).reshape((6, -1)),
    "reshape_F": lambda xp: data24(xp).reshape(3, 8, order="F"),
    "reshape_flat": lambda xp: data24(xp).reshape(-1),
    "reshape_bad": lambda xp: data24(xp).reshape(5, 5),
    "reshape_two_minus": lambda xp: data24(xp).reshape(-1, -1),
    "reshape_0d": lambda xp: xp.asarray([7]).reshape(()),
    "flatten": lambda xp: data24(xp).flatten(),
    "flatten_F": lambda xp: data24(xp).flatten("F"),
    "ravel": lambda xp: data24(xp).T.ravel(),
    "ravel_F": lambda xp: data24(xp).ravel("F"),
    "ravel_K": lambda xp: data24(xp).T.ravel("K"),
    "squeeze": lambda xp: xp.ones((1, 3, 1)).squeeze(),
    "squeeze_axis": lambda xp: xp.ones((1, 3, 1)).squeeze(axis=2),
    "squeeze_axes": lambda xp: xp.ones((1, 3, 1)).squeeze(axis=(0, 2)),
    "squeeze_bad": lambda xp: xp.ones((1, 3, 1)).squeeze(axis=1),
    "swapaxes": lambda xp: data24(xp).swapaxes(0, 2),
    "swapaxes_neg": lambda xp: data24(xp).swapaxes(-1, 1),
    "swapaxes_bad": lambda xp: data24(xp).swapaxes(0, 3),
    "transpose": lambda xp: data24(xp).transpose(),
    "transpose_args": lambda xp: data24(xp).transpose(1, 2, 0),
    "transpose_tuple": lambda xp: data24(xp).transpose((2, 0, 1)),
    "transpose_list": lambda xp: data24(xp).transpose([0, 2, 1]),
    "transpose_none": lambda xp: data24(xp).transpose(None),
    "transpose_bad": lambda xp: data24(xp).transpose(0, 1),
    "transpose_dup": lambda xp: data24(xp).transpose(0, 0, 1),
    # conversion
    "astype_int": lambda xp: data24(xp).astype("int8"),
    "astype_f32_F": lambda xp: data24(xp).astype(xp.float32, order="F"),
    "astype_bool": lambda xp: data24(xp).astype(bool),
    "astype_complex": lambda xp: data24(xp, "int64").astype("complex64"),
    "astype_str": lambda xp: xp.arange(3).astype(str),
    "astype_safe_err": lambda xp: data24(xp).astype("int32", casting="safe"),
    "astype_same_kind": lambda xp: data24(xp).astype("float32", casting="same_kind"),
    "copy": lambda xp: data24(xp).T.copy(),
    "copy_F": lambda xp: data24(xp).copy(order="F"),
    # repeat / take / clip / round
    "repeat": lambda xp: xp.arange(4).repeat(2),
    "repeat_axis": lambda xp: data24(xp).repeat([1, 0, 2], axis=1),
    "repeat_bad": lambda xp: data24(xp).repeat([1, 2], axis=1),
    "take": lambda xp: data24(xp).take([0, 5, 23]),
    "take_axis": lambda xp: data24(xp).take([[2, 0], [1, 1]], axis=2),
    "take_clip": lambda xp: xp.arange(5).take([-3, 10], mode="clip"),
    "take_wrap": lambda xp: xp.arange(5).take([-3, 10], mode="wrap"),
    "take_raise": lambda xp: xp.arange(5).take([7]),
    "take_scalar": lambda xp: xp.arange(5).take(2),
    "clip": lambda xp: data24(xp).clip(-2, 5),
    "clip_min": lambda xp: data24(xp, "int32").clip(min=0),
    "clip_max": lambda xp: data24(xp, "int32").clip(max=3),
    "clip_arr": lambda xp: xp.arange(4.0).clip(xp.asarray([1, 1, 5, 5]), 4),
    "round": lambda xp: (data24(xp) / 7).round(),
    "round_dec": lambda xp: (data24(xp) / 7).round(2),
    "round_neg": lambda xp: (data24(xp, "int64") * 37).round(-1),
    "round_int": lambda xp: data24(xp, "int16").round(),
    # cumulative
    "cumsum": lambda xp: data24(xp).cumsum(),
    "cumsum_axis": lambda xp: data24(xp, "int8").cumsum(axis=1),
    "cumsum_dtype": lambda xp: data24(xp, "int8").cumsum(axis=-1, dtype="float32"),
    "cumprod": lambda xp: (data24(xp) / 10).cumprod(axis=2),
    "cumsum_bool": lambda xp: (data24(xp) > 0).cumsum(),
    # selection
    "nonzero": lambda xp: data24(xp, "int32").nonzero(),
    "nonzero_1d": lambda xp: xp.asarray([0, 3, 0, 1]).nonzero(),
    "compress": lambda xp: data24(xp).compress([True, False, True], axis=1),
    "compress_flat": lambda xp: data24(xp).compress([False, True, True]),
    "compress_bad": lambda xp: xp.arange(3).compress([True, True, True, True], axis=0),
    "diagonal": lambda xp: data24(xp).diagonal(),
    "diagonal_off": lambda xp: data24(xp).diagonal(offset=1, axis1=1, axis2=2),
    "diagonal_neg": lambda xp: xp.arange(16).reshape(4, 4).diagonal(-2),
    "trace": lambda xp: xp.arange(16).reshape(4, 4).trace(),
    "trace_off": lambda xp: data24(xp).trace(offset=1, axis1=1, axis2=2),
    "trace_dtype": lambda xp: xp.arange(9, dtype="int8").reshape(3, 3).trace(dtype="float32"),
    "dot": lambda xp: data24(xp)[0].dot(xp.arange(4.0)),
    "dot_2d": lambda xp: data24(xp)[0].dot(data24(xp)[1].T),
    "dot_scalar": lambda xp: xp.arange(3).dot(2),
    "dot_1d": lambda xp: xp.arange(3).dot(xp.arange(3)),
    "dot_bad": lambda xp: xp.arange(3).dot(xp.arange(4)),
    # ordering
    "argsort": lambda xp: xp.asarray([3, 1, 2, 1, 0]).argsort(kind="stable"),
    "argsort_axis": lambda xp: (data24(xp) % 5).argsort(axis=1, kind="stable"),
    "argsort_none": lambda xp: (data24(xp) % 5).argsort(axis=None, kind="stable"),
    "argsort_stable_kw": lambda xp: (data24(xp) % 3).argsort(stable=True),
    "searchsorted": lambda xp: xp.asarray([1, 3, 5, 7]).searchsorted([0, 3, 8]),
    "searchsorted_right": lambda xp: xp.asarray([1, 3, 3, 7]).searchsorted([3, 4], side="right"),
    "searchsorted_scalar": lambda xp: xp.asarray([1.0, 3.0]).searchsorted(2.0),
    "searchsorted_sorter": lambda xp: xp.asarray([3, 1, 2]).searchsorted(2, sorter=[1, 2, 0]),
    # byte order / fields
    "byteswap": lambda xp: xp.arange(4, dtype="int16").byteswap(),
    "byteswap_f": lambda xp: xp.asarray([1.5, -2.0]).byteswap(),
    "getfield_low": lambda xp: xp.asarray([1, 65536 + 7, -1], dtype="int32").getfield("int16", 0),
    "getfield_high": lambda xp: xp.asarray([1, 65536 + 7, -1], dtype="int32").getfield("int16", 2),
    "getfield_imag": lambda xp: xp.asarray([1 + 2j, 3 - 4j]).getfield("float64", 8),
    "getfield_bad": lambda xp: xp.asarray([1, 2], dtype="int16").getfield("int32", 0),
}

REDUCTIONS = ["sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "all", "any"]
for _r in REDUCTIONS:
    METHOD_CASES[f"{_r}"] = (lambda r: lambda xp: getattr(data24(xp), r)())(_r)
    METHOD_CASES[f"{_r}_axis0"] = (lambda r: lambda xp: getattr(data24(xp), r)(axis=0))(_r)
    METHOD_CASES[f"{_r}_axis-1_int"] = (lambda r: lambda xp: getattr(data24(xp, "int16"), r)(axis=-1))(_r)
    METHOD_CASES[f"{_r}_bool"] = (lambda r: lambda xp: getattr(data24(xp) > 2, r)())(_r)
    METHOD_CASES[f"{_r}_badaxis"] = (lambda r: lambda xp: getattr(data24(xp), r)(axis=3))(_r)
    if _r not in ("argmin", "argmax"):
        METHOD_CASES[f"{_r}_keepdims"] = (
            lambda r: lambda xp: getattr(data24(xp), r)(axis=(0, 2), keepdims=True))(_r)
    else:
        METHOD_CASES[f"{_r}_keepdims"] = (
            lambda r: lambda xp: getattr(data24(xp), r)(axis=1, keepdims=True))(_r)
for _r in ("min", "max", "argmin", "argmax"):
    METHOD_CASES[f"{_r}_empty"] = (lambda r: lambda xp: getattr(xp.zeros((0, 3)), r)())(_r)
    METHOD_CASES[f"{_r}_nan"] = (lambda r: lambda xp: getattr(xp.asarray([1.0, xp.nan, 0.0]), r)())(_r)
for _r in ("sum", "prod", "mean", "std", "var"):
    METHOD_CASES[f"{_r}_dtype"] = (lambda r: lambda xp: getattr(data24(xp, "int8"), r)(dtype="float32"))(_r)
    METHOD_CASES[f"{_r}_complex"] = (
        lambda r: lambda xp: getattr(data24(xp, "complex64") * (1 + 1j), r)(axis=1))(_r)
METHOD_CASES["std_ddof"] = lambda xp: data24(xp).std(ddof=1, axis=2)
METHOD_CASES["var_ddof"] = lambda xp: data24(xp).var(ddof=2)
METHOD_CASES["mean_int"] = lambda xp: data24(xp, "int32").mean()
METHOD_CASES["sum_where"] = lambda xp: data24(xp).sum(where=data24(xp) > 0)
METHOD_CASES["max_initial"] = lambda xp: xp.zeros((0, 3)).max(initial=-1.0, axis=0)
METHOD_CASES["sum_uint8"] = lambda xp: xp.full(300, 200, dtype="uint8").sum()
METHOD_CASES["prod_int8"] = lambda xp: xp.full(3, 7, dtype="int8").prod()


@pytest.mark.parametrize("case", list(METHOD_CASES), ids=list(METHOD_CASES))
def test_method(case):
    tol = {"rtol": 1e-6} if any(k in case for k in ("std", "var", "mean", "cumprod")) else {}
    if "complex" in case and any(k in case for k in ("prod", "std", "var")):
        tol = {"rtol": 1e-5}
    both(METHOD_CASES[case], **tol)


def test_method_results_are_views_where_numpy_gives_views():
    for f in (lambda a: a.reshape(4, 6), lambda a: a.ravel(), lambda a: a.T, lambda a: a.squeeze(),
              lambda a: a.swapaxes(0, 1), lambda a: a.transpose(1, 0, 2), lambda a: a.diagonal(),
              lambda a: a.view("int64"), lambda a: a.real):
        n = data24(numpy)
        t = data24(tnp)
        rn = f(n)
        rt = f(t)
        assert numpy.shares_memory(n, rn) == numpy.shares_memory(host(t), host(rt))
        assert isinstance(rt, tnp.ndarray)
    # copies do not share memory
    t = data24(tnp)
    for r in (t.flatten(), t.copy(), t.astype("float32"), t.take([0, 1]), t.repeat(2)):
        assert not numpy.shares_memory(host(t), host(r))


def test_astype_copy_false_returns_self():
    n = numpy.arange(3.0)
    t = tnp.arange(3.0)
    assert (n.astype("float64", copy=False) is n) and (t.astype("float64", copy=False) is t)
    assert t.astype("float32", copy=False) is not t
    assert t.astype("float64") is not t


def test_view_dtype_writes_through():
    n, t = pair(numpy.zeros(2, dtype="int32"))
    n.view("int16")[1] = 1
    t.view("int16")[1] = 1
    assert_same(n, t)
    n.view("uint8")[0] = 255
    t.view(tnp.uint8)[0] = 255
    assert_same(n, t)


def test_fill():
    for dtype in ("float64", "int8", "bool", "complex64"):
        n, t = pair(numpy.zeros((2, 3), dtype))
        n.fill(1)
        t.fill(1)
        assert_same(n, t)
    n, t = pair(numpy.zeros(3))
    n.fill(numpy.float32(2.5))
    t.fill(tnp.asarray([2.5], dtype="float32")[0])
    assert_same(n, t)
    # fill of a view writes into its base
    n, t = pair(numpy.zeros((3, 3)))
    n[:, 1].fill(7)
    t[:, 1].fill(7)
    assert_same(n, t)


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": -1}, {"kind": "stable"},
                                    {"axis": None}, {"stable": True}, {"axis": 3}])
def test_sort(kwargs):
    rng = numpy.random.default_rng(1)
    data = rng.integers(0, 5, size=(3, 4, 5)).astype("float32")

    def f(xp):
        a = xp.asarray(data.copy())
        r = a.sort(**kwargs)
        assert r is None
        return a
    both(f)


def test_sort_view_writes_base():
    n, t = pair([[3, 1, 2], [9, 8, 7]])
    n[1].sort()
    t[1].sort()
    assert_same(n, t)
    n[:, 0:2].sort(axis=0)
    t[:, 0:2].sort(axis=0)
    assert_same(n, t)


@pytest.mark.parametrize("kth", [0, 2, -1, [1, 3]])
def test_partition(kth):
    data = numpy.asarray([5, 1, 4, 2, 3, 0, 9, 7])

    def f(xp):
        a = xp.asarray(data.copy())
        assert a.partition(kth) is None
        return a
    both(f)
    both(lambda xp: xp.asarray(data.copy()).partition(8))  # ValueError


def test_put():
    for idx, vals, mode in [([0, 2], [10, 20], "raise"), ([1, -1], 5, "raise"), ([0, 30], [1, 2], "clip"),
                            ([7, -9], [3, 4], "wrap"), ([1, 1, 1], [1, 2, 3], "raise")]:
        n, t = pair(numpy.arange(12).reshape(3, 4))
        n.put(idx, vals, mode=mode)
        t.put(idx, vals, mode=mode)
        assert_same(n, t)
    n, t = pair(numpy.arange(4.0))
    n.put(numpy.asarray([0, 1]), numpy.asarray([9.0, 8.0]))
    t.put(tnp.asarray([0, 1]), tnp.asarray([9.0, 8.0]))
    assert_same(n, t)
    with pytest.raises(IndexError):
        numpy.arange(3).put([5], 1)
    with pytest.raises(IndexError):
        tnp.arange(3).put([5], 1)


def test_resize():
    n, t = pair(numpy.arange(6))
    n.resize(2, 4)
    t.resize(2, 4)
    assert_same(n, t)
    n.resize((3,))
    t.resize((3,))
    assert_same(n, t)
    n.resize([2, 2], refcheck=False)
    t.resize([2, 2], refcheck=False)
    assert_same(n, t)
    # a view does not own its memory: NumPy refuses
    with pytest.raises(ValueError):
        numpy.arange(6)[::2].resize(5)
    with pytest.raises(ValueError):
        tnp.arange(6)[::2].resize(5)


def test_resize_after_writes_and_with_views():
    # the version counter must not stop a resize (NumPy refuses arrays with weak references)
    n, t = pair(numpy.arange(6.0))
    for k in range(3):
        n[k] = -k
        t[k] = -k
        n.resize((k + 2, 3))
        t.resize((k + 2, 3))
        assert_same(n, t)
    before = t._version
    t.resize(4)
    n.resize(4)
    assert t._version > before
    # a live view (or a NumPy alias) blocks a checked resize, as in NumPy
    v = t[:2]
    with pytest.raises(ValueError):
        t.resize(8)
    nv = n[:2]
    with pytest.raises(ValueError):
        n.resize(8)
    del nv
    alias = numpy.asarray(t)
    with pytest.raises(ValueError):
        t.resize(8)
    del alias
    t.resize(8, refcheck=False)
    n.resize(8, refcheck=False)
    assert_same(n, t)
    assert_same(numpy.asarray([0.0, 1.0]), v)  # the view keeps the old buffer
    both(lambda xp: xp.zeros(3).resize(-1))  # ValueError
    t2 = tnp.asfortranarray(tnp.arange(6).reshape(2, 3))
    n2 = numpy.asfortranarray(numpy.arange(6).reshape(2, 3))
    t2[0, 0] = 9
    n2[0, 0] = 9
    t2.resize(3, 3)
    n2.resize(3, 3)
    assert_same(n2, t2)


def test_byteswap_inplace():
    n, t = pair(numpy.arange(3, dtype="int32"))
    rn = n.byteswap(inplace=True)
    rt = t.byteswap(inplace=True)
    assert rn is n and rt is t
    assert_same(n, t)
    # not in place: a new array, the original untouched
    r = t.byteswap()
    assert_same(numpy.arange(3, dtype="int32"), r)
    assert_same(n, t)


def test_setfield():
    n, t = pair(numpy.zeros(3, dtype="int32"))
    n.setfield(7, "int16", 2)
    t.setfield(7, "int16", 2)
    assert_same(n, t)
    n, t = pair(numpy.zeros(2, dtype="complex128"))
    n.setfield([1.5, 2.5], "float64", 8)
    t.setfield([1.5, 2.5], "float64", 8)
    assert_same(n, t)
    with pytest.raises(ValueError):
        numpy.zeros(2, "int16").setfield(1, "int32", 0)
    with pytest.raises(ValueError):
        tnp.zeros(2, "int16").setfield(1, "int32", 0)


def test_nonzero_and_methods_return_tnp():
    t = data24(tnp)
    for r in (t.sum(), t.max(axis=0), t.nonzero()[0], t.argsort(), t.cumsum(), t.diagonal(), t.clip(0, 1)):
        assert isinstance(r, tnp.ndarray)


# ============================================================================ indexing
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def _to_tnp_key(key, as_numpy_arrays=False):
    if isinstance(key, tuple):
        return tuple(_to_tnp_key(k, as_numpy_arrays) for k in key)
    if isinstance(key, numpy.ndarray) and not as_numpy_arrays:
        return tnp.asarray(key)
    return key


def _check_get_and_set(shape, key, numpy_key_arrays, scalar_value):
    n = numpy.arange(int(numpy.prod(shape)), dtype="int64").reshape(shape)
    t = tnp.asarray(n.copy())
    tkey = _to_tnp_key(key, numpy_key_arrays)
    try:
        expected = n[key]
    except Exception as e:
        with pytest.raises(type(e)):
            t[tkey]
        return
    got = t[tkey]
    assert_same(expected, got)
    # setitem with the same key: a scalar, or an array of the indexed shape (or a broadcastable one)
    if scalar_value or numpy.ndim(expected) == 0:
        val_n = val_t = -5
    else:
        val_n = -(numpy.arange(expected.size).reshape(expected.shape) + 1)
        val_t = tnp.asarray(val_n)
    n[key] = val_n
    t[tkey] = val_t
    assert_same(n, t)
    # a broadcast value (the last axis only)
    if numpy.ndim(expected) >= 1 and expected.shape[-1] > 0:
        row = numpy.arange(expected.shape[-1]) * 10
        n[key] = row
        t[tkey] = list(row.tolist())
        assert_same(n, t)


@given(data=st.data(), shape=shapes)
def test_getitem_setitem_basic(data, shape):
    key = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    _check_get_and_set(shape, key, False, data.draw(st.booleans()))


@given(data=st.data(), shape=shapes)
def test_getitem_setitem_integer_arrays(data, shape):
    key = data.draw(hnp.integer_array_indices(
        shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)))
    _check_get_and_set(shape, key, data.draw(st.booleans()), data.draw(st.booleans()))


@given(data=st.data(), shape=shapes)
def test_getitem_setitem_boolean_masks(data, shape):
    k = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(bool, shape[:k]))
    lead = data.draw(st.sampled_from(["none", "ellipsis_after", "slice_before"]))
    if lead == "ellipsis_after":
        key = (mask, Ellipsis)
    elif lead == "slice_before" and k < len(shape):
        mask = data.draw(hnp.arrays(bool, shape[1:k + 1]))
        key = (slice(None), mask)
    else:
        key = mask
    _check_get_and_set(shape, key, data.draw(st.booleans()), data.draw(st.booleans()))


@st.composite
def mixed_keys(draw, shape):
    m = draw(st.integers(1, 3))
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "array", "list"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            key.append(draw(st.slices(n)))
        elif kind == "array":
            key.append(draw(hnp.arrays(numpy.intp, (m,), elements=st.integers(-n, n - 1))))
        else:
            key.append([draw(st.integers(-n, n - 1)) for _ in range(m)])
    extra = draw(st.sampled_from(["", "newaxis", "ellipsis"]))
    pos = draw(st.integers(0, len(key)))
    if extra == "newaxis":
        key.insert(pos, None)
    elif extra == "ellipsis":
        key.insert(pos, Ellipsis)
    return tuple(key)


@given(data=st.data(), shape=shapes)
def test_getitem_setitem_mixed(data, shape):
    key = data.draw(mixed_keys(shape))
    _check_get_and_set(shape, key, data.draw(st.booleans()), data.draw(st.booleans()))


@given(data=st.data(), shape=shapes)
def test_index_out_of_range(data, shape):
    ax = data.draw(st.integers(0, len(shape) - 1))
    n = shape[ax]
    i = data.draw(st.one_of(st.integers(n, n + 5), st.integers(-n - 5, -n - 1)))
    key = (slice(None),) * ax + (i,)
    as_array = data.draw(st.booleans())
    if as_array:
        key = (slice(None),) * ax + (numpy.asarray([0, i]),)
    t = tnp.zeros(shape)
    nn = numpy.zeros(shape)
    with pytest.raises(IndexError):
        nn[key]
    with pytest.raises(IndexError):
        t[_to_tnp_key(key)]
    with pytest.raises(IndexError):
        t[_to_tnp_key(key)] = 1
    with pytest.raises(IndexError):
        t[(0,) * (len(shape) + 1)]  # too many indices


def test_index_errors_match_numpy():
    cases = [
        lambda xp: xp.arange(5)[1.5],                         # IndexError (float)
        lambda xp: xp.arange(5)[xp.asarray([1.0])],           # IndexError
        lambda xp: xp.arange(5)[xp.asarray([True, False])],   # IndexError (mask shape)
        lambda xp: xp.arange(6).reshape(2, 3)[[0, 1], [0, 1, 2]],  # IndexError (broadcast)
        lambda xp: xp.arange(5)[..., ...],                    # IndexError
        lambda xp: xp.arange(5)["a"],                         # IndexError
        lambda xp: xp.asarray(5)[0],                          # IndexError (0-d)
        lambda xp: xp.asarray(5)[()],
        lambda xp: xp.asarray(5)[...],
        lambda xp: xp.asarray(5)[None],
        lambda xp: xp.arange(5)[xp.asarray(2)],               # 0-d integer array index
        lambda xp: xp.arange(5)[xp.asarray(True)],            # 0-d boolean
        lambda xp: xp.arange(5)[[]],
        lambda xp: xp.arange(6).reshape(2, 3)[xp.asarray([[True, False, True], [False, False, True]])],
    ]
    for f in cases:
        both(f)


def test_setitem_value_errors_match_numpy():
    def setter(key, value):
        def f(xp):
            a = xp.zeros((2, 3), dtype="int32")
            a[key] = value
            return a
        return f
    both(setter(0, [1, 2]))              # ValueError: shape mismatch
    both(setter(slice(None), "abc"))     # ValueError: invalid literal
    both(setter(0, 2.7))                 # truncation
    both(setter((0, 0), 1e20))           # OverflowError? (NumPy decides)
    both(setter(Ellipsis, [[1], [2]]))   # broadcast
    both(setter((slice(None), [0, 2]), [[5, 6], [7, 8]]))


def test_setitem_with_tnp_scalar_and_numpy_values():
    n, t = pair(numpy.zeros(4))
    s = tnp.arange(5.0).sum()
    n[1] = 10.0
    t[1] = s
    n[2:] = numpy.asarray([1.5, 2.5])
    t[2:] = numpy.asarray([1.5, 2.5])
    assert_same(n, t)
    t[0] = numpy.float32(3.0)
    n[0] = numpy.float32(3.0)
    assert_same(n, t)


# ============================================================================ views write through
def test_views_write_through_both_ways():
    t = tnp.arange(12.0).reshape(3, 4)
    n = numpy.arange(12.0).reshape(3, 4)
    views = [lambda a: a[1], lambda a: a[:, 1:3], lambda a: a.T, lambda a: a.reshape(4, 3),
             lambda a: a[::-1, ::2], lambda a: a[None, ..., 0], lambda a: a.ravel(), lambda a: a.view()]
    for k, f in enumerate(views):
        vt, vn = f(t), f(n)
        # write into the view: the base sees it
        vt[...] = -k
        vn[...] = -k
        assert_same(n, t)
        # write into the base: the view sees it
        t[...] = numpy.arange(12.0).reshape(3, 4) * (k + 1)
        n[...] = numpy.arange(12.0).reshape(3, 4) * (k + 1)
        assert_same(vn, vt)


def test_view_of_view_and_fancy_copy():
    t = tnp.arange(10)
    v = t[2:8][::2]
    v[1] = 100
    assert t[4] == 100
    c = t[[1, 2, 3]]  # advanced indexing makes a copy
    c[0] = -1
    assert t[1] == 1
    m = t[t > 5]
    m[:] = 0
    assert int((t > 5).sum()) == 5


# ============================================================================ in-place operators
INPLACE = [
    ("iadd", operator.iadd, "float64", 2.5), ("isub", operator.isub, "int32", 3),
    ("imul", operator.imul, "complex64", 1j), ("itruediv", operator.itruediv, "float32", 4),
    ("ifloordiv", operator.ifloordiv, "int64", 3), ("imod", operator.imod, "int16", 4),
    ("ipow", operator.ipow, "float64", 2), ("iand", operator.iand, "int8", 6),
    ("ior", operator.ior, "uint8", 9), ("ixor", operator.ixor, "bool", True),
    ("ilshift", operator.ilshift, "int32", 2), ("irshift", operator.irshift, "uint16", 1),
]


@pytest.mark.parametrize("name,op,dtype,value", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_operators(name, op, dtype, value):
    base = numpy.arange(1, 7).reshape(2, 3).astype(dtype)
    for rhs_n, rhs_t in [(value, value), (base[0].copy(), tnp.asarray(base[0].copy())),
                         (base[0].copy(), base[0].copy()), (base[0].tolist(), base[0].tolist())]:
        n, t = pair(base)
        t0 = t
        try:
            n = op(n, rhs_n)
        except Exception as e:  # a list of Python ints is int64: it does not cast into uint8
            with pytest.raises(type(e)):
                op(t, rhs_t)
            continue
        t = op(t, rhs_t)
        assert t is t0
        assert_same(n, t)


def test_inplace_casting_errors_match_numpy():
    for op, value in [(operator.iadd, 1.5), (operator.itruediv, 2), (operator.imul, 1j)]:
        def f(xp):
            a = xp.arange(3)
            a = op(a, value)
            return a
        both(f)  # UFuncTypeError (a TypeError) in both
    both(lambda xp: operator.iadd(xp.ones((2, 3)), xp.ones((3, 2))))  # ValueError: broadcast
    both(lambda xp: operator.iadd(xp.ones(3), xp.ones((2, 3))))  # output shape


def test_inplace_matmul():
    n, t = pair(numpy.arange(4.0).reshape(2, 2))
    n @= numpy.asarray([[1.0, 2.0], [3.0, 4.0]])
    t0 = t
    t @= tnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert t is t0
    assert_same(n, t)


def test_inplace_on_view_changes_base():
    n, t = pair(numpy.zeros((3, 3)))
    vn, vt = n[1:, ::2], t[1:, ::2]
    vn += 4
    vt += 4
    vn *= numpy.asarray([1, 2])
    vt *= tnp.asarray([1, 2])
    assert_same(n, t)


def test_binary_operators_match_numpy():
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
               operator.mod, operator.pow, operator.lt, operator.le, operator.eq, operator.ne,
               operator.gt, operator.ge, divmod):
        for dt in ("int8", "uint16", "float32", "float64"):
            both(lambda xp: op(xp.arange(1, 7, dtype=dt).reshape(2, 3), xp.asarray([1, 2, 3], dtype=dt)))
            both(lambda xp: op(xp.arange(1, 7, dtype=dt), 3))
            both(lambda xp: op(2, xp.arange(1, 7, dtype=dt)))
            both(lambda xp: op(xp.arange(1, 7, dtype=dt), 2.5))
    for op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
        both(lambda xp: op(xp.arange(6, dtype="int16"), 3))
        both(lambda xp: op(7, xp.arange(6, dtype="uint8")))
    for op in (operator.neg, operator.pos, abs, operator.invert):
        both(lambda xp: op(xp.arange(-3, 3, dtype="int8")))
    both(lambda xp: ~xp.asarray([True, False]))
    both(lambda xp: xp.arange(6.0).reshape(2, 3) @ xp.arange(3.0))
    both(lambda xp: xp.ones(3) + xp.ones(4))  # ValueError


# ============================================================================ out=
def test_out_argument():
    for fn in (lambda xp, o: xp.add(xp.arange(3.0), 1, out=o), lambda xp, o: xp.exp(xp.arange(3.0), out=o),
               lambda xp, o: xp.multiply(xp.arange(3.0), xp.arange(3.0), out=(o,)),
               lambda xp, o: xp.sum(xp.ones((2, 3)), axis=0, out=o),
               lambda xp, o: xp.ones((3, 3)).max(axis=1, out=o),
               lambda xp, o: xp.arange(3.0).cumsum(out=o),
               lambda xp, o: xp.arange(3.0).clip(1, 1.5, out=o),
               lambda xp, o: xp.arange(3.0).round(out=o),
               lambda xp, o: xp.negative(xp.arange(3), out=o, casting="unsafe"),
               lambda xp, o: xp.add.reduce(xp.ones((3, 3)), axis=0, out=o),
               lambda xp, o: xp.ones((3, 3)).mean(axis=0, out=o)):
        on, ot = numpy.zeros(3), tnp.zeros(3)
        rn, rt = fn(numpy, on), fn(tnp, ot)
        assert rn is on
        assert rt is ot
        assert_same(on, ot)


def test_out_into_view():
    n, t = pair(numpy.zeros((2, 3)))
    numpy.add(numpy.ones(3), 2, out=n[1])
    tnp.add(tnp.ones(3), 2, out=t[1])
    assert_same(n, t)


def test_out_errors_match_numpy():
    both(lambda xp: xp.add(xp.ones(3), 1, out=xp.zeros(4)))                 # ValueError
    both(lambda xp: xp.add(xp.ones(3), 1.5, out=xp.zeros(3, dtype=int)))   # UFuncTypeError
    both(lambda xp: xp.divmod(xp.ones(3), 2, out=(xp.zeros(3), xp.zeros(3))))


def test_out_numpy_array_into_tnp_function():
    o = numpy.zeros(3)
    r = tnp.add(tnp.arange(3.0), 1, out=o)
    assert r is o
    assert_same(numpy.arange(3.0) + 1, tnp.asarray(o))


# ============================================================================ version counter
def _bumped(action, make=lambda: tnp.arange(12.0).reshape(3, 4), on_view=False):
    x = make()
    v = x[1:]
    target = v if on_view else x
    before_x, before_v = x._version, v._version
    action(target)
    assert x._version == v._version, "an array and its views share one counter"
    return x._version > before_x and v._version > before_v


WRITES = {
    "setitem": lambda a: a.__setitem__(0, 5),
    "setitem_fancy": lambda a: a.__setitem__(([0], [1]), 5),
    "setitem_mask": lambda a: a.__setitem__(a > 3, 0),
    "iadd": lambda a: operator.iadd(a, 1),
    "imul_array": lambda a: operator.imul(a, tnp.ones(4)),
    "ipow": lambda a: operator.ipow(a, 2),
    "out": lambda a: tnp.add(1.0, 2.0, out=a),
    "out_reduce": lambda a: tnp.sum(tnp.ones((2,) + a.shape), axis=0, out=a),
    "method_out": lambda a: tnp.ones(a.shape).cumsum(axis=0, out=a),
    "fill": lambda a: a.fill(3),
    "sort": lambda a: a.sort(),
    "partition": lambda a: a.partition(1),
    "ufunc_at": lambda a: tnp.add.at(a, (0, 0), 1),
    "put": lambda a: a.put([0], [9]),
    "flat_setitem": lambda a: a.flat.__setitem__(0, 1),
    "real_set": lambda a: setattr(a, "real", 0),
    "byteswap_inplace": lambda a: a.byteswap(inplace=True),
    "setfield": lambda a: a.setfield(1.0, "float64"),
    "copyto": lambda a: tnp.copyto(a, 1.0),
    "place": lambda a: tnp.place(a, a > 2, [0]),
    "putmask": lambda a: tnp.putmask(a, a > 2, 0),
    "put_along_axis": lambda a: tnp.put_along_axis(a, tnp.zeros((a.shape[0], 1), dtype=int), 1.0, axis=1),
    "fill_diagonal": lambda a: tnp.fill_diagonal(a, 0),
}


@pytest.mark.parametrize("on_view", [False, True], ids=["base", "view"])
@pytest.mark.parametrize("name", list(WRITES), ids=list(WRITES))
def test_version_bumped_by_writes(name, on_view):
    assert _bumped(WRITES[name], on_view=on_view)


def test_version_resize_bumps():
    x = tnp.arange(6)
    before = x._version
    x.resize(3)
    assert x._version > before


READS = {
    "getitem": lambda a: a[0], "slice": lambda a: a[1:], "fancy": lambda a: a[[0, 1]],
    "mask": lambda a: a[a > 2], "sum": lambda a: a.sum(), "ufunc": lambda a: tnp.exp(a),
    "binop": lambda a: a + 1, "repr": repr, "str": str, "asarray": numpy.asarray,
    "copy": lambda a: a.copy(), "tolist": lambda a: a.tolist(), "iter": lambda a: list(a),
    "astype": lambda a: a.astype(int), "T": lambda a: a.T, "reshape": lambda a: a.reshape(-1),
    "contains": lambda a: 3.0 in a, "item": lambda a: a.item(0), "flat": lambda a: list(a.flat),
    "argsort": lambda a: a.argsort(), "pickle": lambda a: pickle.dumps(a), "out_other": lambda a: tnp.add(a, 1, out=tnp.zeros(a.shape)),
}


@pytest.mark.parametrize("name", list(READS), ids=list(READS))
def test_version_not_bumped_by_reads(name):
    assert not _bumped(READS[name], on_view=False)
    assert not _bumped(READS[name], on_view=True)


def test_version_counts_each_write_and_is_separate_per_buffer():
    x = tnp.zeros(4)
    y = tnp.zeros(4)
    c = x.copy()
    v0 = x._version
    for k in range(3):
        x[k] = 1
    assert x._version == v0 + 3
    assert y._version == 0
    y0 = y._version
    x += 1
    assert y._version == y0
    assert c._version == 0
    # views of views share the root's counter
    w = x[1:][::2]
    w[0] = 7
    assert x._version == w._version == v0 + 5


def test_version_of_fresh_array_is_zero():
    assert tnp.zeros(3)._version == 0
    assert tnp.arange(5).reshape(5, 1)._version == 0


# ============================================================================ repr / str
REPR_ARRAYS = {
    "bool": numpy.array([True, False, True]),
    "bool2d": numpy.array([[True, False], [False, True]]),
    "int8": numpy.arange(-3, 4, dtype="int8"),
    "uint8": numpy.arange(250, 256, dtype="uint8"),
    "int16": numpy.arange(-5, 5, dtype="int16").reshape(2, 5),
    "int32": numpy.array([1, -2, 300000], dtype="int32"),
    "int64": numpy.array([0, 2**40, -7], dtype="int64"),
    "uint64": numpy.array([0, 2**64 - 1], dtype="uint64"),
    "float64": numpy.array([0.0, 1.5, -2.25, 1e-10, 3.14159265358979]),
    "float64_big": numpy.array([1e20, 1.0, 1e-5]),
    "float64_special": numpy.array([numpy.nan, numpy.inf, -numpy.inf, -0.0]),
    "float32": numpy.array([1 / 3, 2 / 3, 100.0], dtype="float32"),
    "float16": numpy.array([0.1, 1.0, 65504.0], dtype="float16"),
    "complex128": numpy.array([1 + 2j, -3.5j, numpy.nan + 1j]),
    "complex64": numpy.array([[0.5 + 0.25j, 1.0], [2j, -1]], dtype="complex64"),
    "longdouble": numpy.array([1.0, 2.5], dtype=numpy.longdouble),
    "str": numpy.array(["a", "bb", "c d"]),
    "str2d": numpy.array([["x", "yy"], ["zzz", ""]]),
    "bytes": numpy.array([b"ab", b"c"]),
    "object": numpy.array([1, "a", None, [1, 2], {"k": 3}], dtype=object),
    "datetime": numpy.array(["2020-01-01", "2021-06-15"], dtype="datetime64[D]"),
    "timedelta": numpy.array([1, 2], dtype="timedelta64[s]"),
    "structured": numpy.array([(1, 2.5), (3, -1.0)], dtype=[("a", "i4"), ("b", "f8")]),
    "0d_float": numpy.array(3.25),
    "0d_int": numpy.array(7, dtype="int16"),
    "0d_bool": numpy.array(False),
    "0d_str": numpy.array("hello"),
    "empty": numpy.zeros((0,)),
    "empty2d": numpy.zeros((0, 3), dtype="int8"),
    "empty_int": numpy.zeros((2, 0), dtype="int64"),
    "3d": numpy.arange(24).reshape(2, 3, 4),
    "3d_float": numpy.arange(24.0).reshape(2, 3, 4) / 7,
    "large1d": numpy.arange(2000),
    "large2d": numpy.arange(3000.0).reshape(30, 100) / 3,
    "large3d": numpy.arange(2400, dtype="int32").reshape(10, 12, 20),
    "wide_line": numpy.linspace(0, 1, 40),
    "noncontig": numpy.arange(20.0).reshape(4, 5)[::2, ::-2],
    "neg_float": numpy.array([-1.123456789, 2.0]),
    "tiny": numpy.array([1e-20, 1.0]),
}


@pytest.mark.parametrize("name", list(REPR_ARRAYS), ids=list(REPR_ARRAYS))
def test_repr_str_like_numpy(name):
    n = REPR_ARRAYS[name]
    t = tnp.asarray(n)
    assert t.dtype == n.dtype
    assert repr(t) == repr(n)
    assert str(t) == str(n)
    with numpy.printoptions(precision=3, suppress=True):
        assert repr(t) == repr(n)
        assert str(t) == str(n)
    with tnp.printoptions(threshold=5, edgeitems=1, linewidth=40):
        assert repr(t) == repr(n)
        assert str(t) == str(n)


def test_printoptions_affect_tnp_like_numpy():
    n = numpy.array([1.123456789, 1e-8, 123456.5])
    t = tnp.asarray(n)
    with tnp.printoptions(precision=3, suppress=True):
        assert repr(t) == repr(n) == "array([     1.123,      0.   , 123456.5  ])"
    with numpy.printoptions(legacy="1.25"):
        assert repr(t) == repr(n)
        assert repr(t.sum()) == repr(n.sum())
    assert "{}".format(t) == "{}".format(n)
    assert f"{t}" == str(n)


# ============================================================================ pickling / copying
PICKLE_ARRAYS = [numpy.arange(6.0).reshape(2, 3), numpy.arange(12, dtype="int8").reshape(3, 4).T,
                 numpy.array(5.5), numpy.zeros((0, 2)), numpy.array(["a", "bc"]),
                 numpy.array([1 + 1j], dtype="complex64"), numpy.asfortranarray(numpy.ones((2, 3))),
                 numpy.array([(1, 2.0)], dtype=[("x", "i2"), ("y", "f4")]),
                 numpy.array([None, "x", 3], dtype=object)]


@pytest.mark.parametrize("k", range(len(PICKLE_ARRAYS)))
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_roundtrip(k, protocol):
    n = PICKLE_ARRAYS[k]
    t = tnp.asarray(n)
    r = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert type(r) is tnp.ndarray
    assert r.device == t.device
    assert_same(n, r)
    # the unpickled array is independent and writeable
    if r.size and r.dtype.kind in "fiuc":
        r[...] = 0
        assert_same(n, t)


def test_pickle_roundtrip_of_view_keeps_values_only():
    t = tnp.arange(10)[2:7:2]
    r = pickle.loads(pickle.dumps(t))
    assert_same(numpy.arange(10)[2:7:2], r)
    r[0] = 100
    assert t[0] == 2


@pytest.mark.parametrize("value", [numpy.float64(2.5), numpy.int8(-3), numpy.complex64(1 - 2j),
                                   numpy.bool_(True), numpy.uint64(2**63), numpy.float16(0.5)])
def test_pickle_scalar(value):
    s = tnp.asarray([value])[0]
    assert isinstance(s, tnp.Scalar)
    r = pickle.loads(pickle.dumps(s))
    assert isinstance(r, tnp.Scalar)
    assert repr(r) == repr(value)
    assert r == s and hash(r) == hash(value)
    assert copy.copy(s) == s and copy.deepcopy(s) == s


def test_copy_and_deepcopy():
    n, t = pair(numpy.arange(6.0).reshape(2, 3))
    for f in (copy.copy, copy.deepcopy):
        c = f(t)
        assert type(c) is tnp.ndarray
        assert_same(n, c)
        c[0, 0] = 99
        assert t[0, 0] == 0
    # of a view: the copy is a fresh C-contiguous array
    c = copy.copy(t.T)
    assert_same(n.T.copy(), c)
    assert c.flags.owndata
    # deepcopy copies the objects inside an object array, copy does not
    inner = [1, 2]
    o = tnp.asarray(numpy.array([inner, None], dtype=object))
    assert copy.copy(o)[0] is inner
    d = copy.deepcopy(o)
    assert d[0] == inner and d[0] is not inner


# ============================================================================ Python protocols
def test_len_iter_contains():
    both(lambda xp: len(xp.zeros((4, 2))))
    both(lambda xp: len(xp.zeros(0)))
    both(lambda xp: len(xp.asarray(3.0)))  # TypeError
    both(lambda xp: list(data24(xp)))
    both(lambda xp: list(data24(xp)[0, 0]))
    both(lambda xp: list(xp.zeros((0, 3))))
    both(lambda xp: iter(xp.asarray(1)))  # TypeError
    both(lambda xp: [r.sum() for r in data24(xp)[0]])
    for v in (3.0, 3, 2.5, -7, 100, numpy.float32(4.0), [-7, -6, -5, -4]):
        both(lambda xp: v in data24(xp))
    both(lambda xp: [1, 2] in xp.asarray([[1, 2], [3, 4]]))
    both(lambda xp: [1, 2, 3] in xp.asarray([[1, 2], [3, 4]]))  # ValueError? let NumPy decide


def test_iter_yields_views():
    t = tnp.zeros((2, 3))
    for row in t:
        row[0] = 1
    assert_same(numpy.asarray([[1.0, 0, 0], [1, 0, 0]]), t)


@pytest.mark.parametrize("make", [
    lambda xp: xp.asarray([0]), lambda xp: xp.asarray([[2.5]]), lambda xp: xp.asarray(0.0),
    lambda xp: xp.asarray(True), lambda xp: xp.asarray([1, 2]), lambda xp: xp.zeros((0,)),
    lambda xp: xp.zeros((2, 2)), lambda xp: xp.asarray([xp.nan]), lambda xp: xp.asarray(["a"]),
    lambda xp: xp.asarray([""]),
])
def test_bool(make):
    both(lambda xp: bool(make(xp)))  # ValueError for ambiguous truth values in both
    both(lambda xp: int(make(xp)) if make(xp).dtype.kind not in "U" else 0)
    both(lambda xp: float(make(xp)) if make(xp).dtype.kind not in "U" else 0.0)


def test_if_array_raises_like_numpy():
    with pytest.raises(ValueError, match="ambiguous"):
        if tnp.arange(3) > 1:
            pass
    with pytest.raises(ValueError, match="ambiguous"):
        tnp.arange(3) > 1 and True  # noqa: B015
    assert (tnp.asarray([5]) > 1) and True


def test_int_index_conversions():
    both(lambda xp: operator.index(xp.asarray(3)))
    both(lambda xp: operator.index(xp.asarray([3])))  # TypeError
    both(lambda xp: operator.index(xp.asarray(3.0)))  # TypeError
    both(lambda xp: [10, 20, 30][xp.asarray(2)])
    both(lambda xp: complex(xp.asarray([1 + 2j])))


def test_hash_is_unhashable():
    with pytest.raises(TypeError):
        hash(numpy.arange(3))
    with pytest.raises(TypeError):
        hash(tnp.arange(3))


# ============================================================================ subclasses
class InfoArray(tnp.ndarray):
    def __array_finalize__(self, obj):
        self.info = getattr(obj, "info", None)


class NumpyInfoArray(numpy.ndarray):
    def __array_finalize__(self, obj):
        self.info = getattr(obj, "info", None)


NumpyInfoArray.__name__ = "InfoArray"


def info_pair(data=None):
    data = numpy.arange(6.0).reshape(2, 3) if data is None else numpy.asarray(data)
    n = data.copy().view(NumpyInfoArray)
    t = tnp.asarray(data.copy()).view(InfoArray)
    n.info = t.info = "meta"
    return n, t


def _same_sub(rn, rt):
    assert isinstance(rn, NumpyInfoArray)
    assert type(rt) is InfoArray, type(rt)
    assert rt.info == rn.info == "meta"
    assert_same(rn.view(numpy.ndarray), rt.view(tnp.ndarray))


SUB_OPS = {
    "slice": lambda a, xp: a[1:],
    "row": lambda a, xp: a[0],
    "fancy": lambda a, xp: a[[1, 0]],
    "mask": lambda a, xp: a[a > 2],
    "newaxis": lambda a, xp: a[None, :, 1],
    "add": lambda a, xp: a + 1,
    "radd": lambda a, xp: 1 + a,
    "mul_self": lambda a, xp: a * a,
    "neg": lambda a, xp: -a,
    "compare": lambda a, xp: a > 2,
    "exp": lambda a, xp: xp.exp(a),
    "ufunc2": lambda a, xp: xp.maximum(a, 2.0),
    "T": lambda a, xp: a.T,
    "reshape": lambda a, xp: a.reshape(3, 2),
    "copy": lambda a, xp: a.copy(),
    "astype": lambda a, xp: a.astype("float32"),
    "view": lambda a, xp: a.view(),
    "sum_axis": lambda a, xp: a.sum(axis=0),
    "cumsum": lambda a, xp: a.cumsum(),
    "ravel": lambda a, xp: a.ravel(),
    "flatten": lambda a, xp: a.flatten(),
    "clip": lambda a, xp: a.clip(1, 3),
    "transpose": lambda a, xp: a.transpose(1, 0),
    "squeeze": lambda a, xp: a[None].squeeze(),
    "real": lambda a, xp: a.real,
}


@pytest.mark.parametrize("name", list(SUB_OPS), ids=list(SUB_OPS))
def test_subclass_ops_keep_class_and_attribute(name):
    n, t = info_pair()
    _same_sub(SUB_OPS[name](n, numpy), SUB_OPS[name](t, tnp))


def test_subclass_full_reduction_is_0d_subclass():
    # NumPy decides through the probe: reductions written with ufuncs give a 0-d instance
    n, t = info_pair()
    _same_sub(n.sum(), t.sum())
    _same_sub(n.mean(), t.mean())
    _same_sub(numpy.max(n), tnp.max(t))


def test_subclass_scalar_results_like_numpy():
    n, t = info_pair()
    # integer indexing and argmax give plain scalars in NumPy too
    assert_same(n[0, 1], t[0, 1])
    assert_same(n.argmax(), t.argmax())
    assert_same(n.view(numpy.ndarray), t.view(tnp.ndarray))


def test_subclass_construct_and_new():
    t = InfoArray((2, 3), dtype="int8")
    assert type(t) is InfoArray and t.shape == (2, 3) and t.dtype == numpy.int8
    assert t.info is None  # __array_finalize__(None) on construction, as NumPy
    n = NumpyInfoArray((2, 3), dtype="int8")
    assert n.info is None
    v = tnp.arange(3).view(InfoArray)
    assert type(v) is InfoArray and v.info is None
    # view(type=...) and view(dtype, type)
    v2 = tnp.arange(4, dtype="int32").view("int16", InfoArray)
    assert type(v2) is InfoArray and v2.shape == (8,)
    v3 = tnp.arange(3).view(type=InfoArray)
    assert type(v3) is InfoArray
    # back to the base class
    b = v.view(tnp.ndarray)
    assert type(b) is tnp.ndarray


def test_subclass_views_write_through():
    _, t = info_pair()
    s = t[1]
    s[0] = -1
    assert t[1, 0] == -1
    plain = tnp.zeros(3)
    sub = plain.view(InfoArray)
    sub[1] = 5
    assert plain[1] == 5


@pytest.mark.parametrize("data", [numpy.arange(6.0).reshape(2, 3), numpy.exp(numpy.arange(6.0)),
                                  numpy.arange(3000.0).reshape(30, 100) / 7, numpy.arange(4, dtype="int8"),
                                  numpy.zeros((0, 3)), numpy.arange(24).reshape(2, 3, 4),
                                  numpy.array(["a", "b"]), numpy.array(2.5)])
def test_subclass_repr_uses_class_name(data):
    n, t = info_pair(data)
    assert repr(t) == repr(n)
    assert repr(t).startswith("InfoArray(")
    assert str(t) == str(n)


def test_subclass_pickle_and_copy_keep_attributes():
    n, t = info_pair()
    t.extra = [1, 2]
    for r in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert type(r) is InfoArray
        assert r.info == "meta" and r.extra == [1, 2]
        assert_same(n.view(numpy.ndarray), r.view(tnp.ndarray))
    d = copy.deepcopy(t)
    assert d.extra is not t.extra
    d[0, 0] = 100
    assert t[0, 0] == 0


def test_subclass_isinstance_and_functions():
    _, t = info_pair()
    assert isinstance(t, tnp.ndarray)
    r = tnp.concatenate([t, t])
    assert isinstance(r, tnp.ndarray)
    assert_same(numpy.concatenate([numpy.arange(6.0).reshape(2, 3)] * 2), r.view(tnp.ndarray))
