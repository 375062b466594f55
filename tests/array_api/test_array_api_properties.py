"""Array API property tests: tnp against NumPy on the data hypothesis generates through the
standard's own strategies (``hypothesis.extra.array_api`` driving tnp as an array API namespace).

The conformance suite (data-apis/array-api-tests, see ``conformance/``) needs a checkout CI cannot
fetch; these tests keep the parts of it that matter most in CI: every elementwise function and
operator, reductions, manipulation, indexing, sorting, creation with ``dtype=``/``device=``/
``copy=``, ``to_device``, DLPack and the inspection namespace. Each result is compared with
NumPy's on the same data: value (bit for bit), dtype, shape, device, and for views whether the
result shares memory with its input. Where NumPy raises, tnp must raise the same exception type.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, note, strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import tnp

API_VERSION = "2025.12"
xps = make_strategies_namespace(tnp, api_version=API_VERSION)

CPU = tnp.device("cpu")
CPU1 = tnp.device("cpu:1")  # a fake second device: NumPy memory that tnp treats as elsewhere

shapes = xps.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
nonempty_shapes = xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
any_dtype = xps.scalar_dtypes()
numeric = xps.numeric_dtypes()
real = xps.real_dtypes()
ints = xps.integer_dtypes() | xps.unsigned_integer_dtypes()


def arrays(dtype=any_dtype, shape=shapes, **kw):
    return xps.arrays(dtype=dtype, shape=shape, **kw)


# ------------------------------------------------------------------------------------ comparison
def _run(fn):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 (compared with NumPy's below)
            return None, e


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


def assert_same(r, expected, device=CPU, where="result"):
    """``r`` (tnp) holds what ``expected`` (NumPy) holds, on ``device``."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(r, (tuple, list)) and len(r) == len(expected), (where, r, expected)
        for i, (a, b) in enumerate(zip(r, expected)):
            assert_same(a, b, device, f"{where}[{i}]")
        return
    assert isinstance(r, tnp.ndarray), f"{where}: {type(r).__name__} is not a tnp array"
    assert r.device == device, f"{where}: on {r.device}, expected {device}"
    a = np.asarray(r.to_device("cpu"))
    b = np.asarray(expected)
    assert a.dtype == b.dtype, f"{where}: dtype {a.dtype}, NumPy gives {b.dtype}"
    assert a.shape == b.shape, f"{where}: shape {a.shape}, NumPy gives {b.shape}"
    assert _bits(a) == _bits(b), f"{where}: values differ\n tnp:   {a!r}\n numpy: {b!r}"


def check(tnp_call, np_call, device=CPU):
    """Run both; the same exception type, or the same result."""
    r, e = _run(tnp_call)
    expected, ee = _run(np_call)
    if ee is not None:
        assert e is not None, f"NumPy raised {ee!r}; tnp returned {r!r}"
        assert isinstance(e, type(ee)), f"tnp raised {e!r}; NumPy raised {ee!r}"
        return None, None
    assert e is None, f"tnp raised {e!r}; NumPy returned {expected!r}"
    assert_same(r, expected, device)
    return r, expected


def host(x):
    """A NumPy copy of a tnp array (so nothing NumPy does can touch tnp's memory)."""
    return np.array(x.to_device("cpu"))


# ------------------------------------------------------------------------------------ elementwise
UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil",
         "conj", "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan",
         "log", "log1p", "log2", "log10", "logical_not", "negative", "positive", "real",
         "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc"]
BINARY = ["add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or",
          "bitwise_right_shift", "bitwise_xor", "copysign", "divide", "equal", "floor_divide",
          "greater", "greater_equal", "hypot", "less", "less_equal", "logaddexp", "logical_and",
          "logical_or", "logical_xor", "maximum", "minimum", "multiply", "nextafter",
          "not_equal", "pow", "remainder", "subtract"]


@pytest.mark.parametrize("name", UNARY)
@given(x=arrays())
def test_unary_elementwise(name, x):
    check(lambda: getattr(tnp, name)(x), lambda: getattr(np, name)(host(x)))


@pytest.mark.parametrize("name", BINARY)
@given(data=st.data(), shapes=xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
def test_binary_elementwise(name, data, shapes):
    dtype = data.draw(any_dtype, label="dtype")
    dtype2 = data.draw(st.just(dtype) | any_dtype, label="dtype2")
    x1 = data.draw(arrays(dtype, shapes.input_shapes[0]), label="x1")
    x2 = data.draw(arrays(dtype2, shapes.input_shapes[1]), label="x2")
    check(lambda: getattr(tnp, name)(x1, x2), lambda: getattr(np, name)(host(x1), host(x2)))


BINARY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
              "&": operator.and_, "|": operator.or_, "^": operator.xor,
              "<<": operator.lshift, ">>": operator.rshift, "<": operator.lt,
              "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
              "!=": operator.ne, "@": operator.matmul}
INPLACE_OPS = {"+": operator.iadd, "-": operator.isub, "*": operator.imul,
               "/": operator.itruediv, "//": operator.ifloordiv, "%": operator.imod,
               "**": operator.ipow, "&": operator.iand, "|": operator.ior, "^": operator.ixor,
               "<<": operator.ilshift, ">>": operator.irshift}


@pytest.mark.parametrize("op", list(BINARY_OPS))
@given(data=st.data(), shapes=xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
def test_binary_operator(op, data, shapes):
    f = BINARY_OPS[op]
    dtype = data.draw(any_dtype, label="dtype")
    x1 = data.draw(arrays(dtype, shapes.input_shapes[0]), label="x1")
    x2 = data.draw(arrays(st.just(dtype) | any_dtype, shapes.input_shapes[1]), label="x2")
    check(lambda: f(x1, x2), lambda: f(host(x1), host(x2)))


def python_scalars(dtype):
    if dtype == tnp.bool:
        return st.booleans()
    if tnp.isdtype(dtype, "integral"):
        return st.integers(-300, 300)
    if tnp.isdtype(dtype, "real floating"):
        return st.floats(-1e3, 1e3, allow_subnormal=False) | st.integers(-5, 5)
    return st.complex_numbers(max_magnitude=1e3, allow_subnormal=False) | st.floats(-5, 5)


@pytest.mark.parametrize("op", [o for o in BINARY_OPS if o != "@"])
@given(data=st.data())
def test_operator_with_python_scalar(op, data):
    f = BINARY_OPS[op]
    x = data.draw(arrays(), label="x")
    s = data.draw(python_scalars(x.dtype), label="scalar")
    check(lambda: f(x, s), lambda: f(host(x), s))
    check(lambda: f(s, x), lambda: f(s, host(x)))


@pytest.mark.parametrize("op", list(INPLACE_OPS))
@given(data=st.data())
def test_inplace_operator(op, data):
    """In-place operators keep the left operand's dtype, shape and identity, or raise as NumPy."""
    f = INPLACE_OPS[op]
    x = data.draw(arrays(shape=xps.array_shapes(min_dims=0, max_dims=3, max_side=3)), label="x")
    rhs = data.draw(st.one_of(
        arrays(shape=xps.broadcastable_shapes(x.shape, max_dims=x.ndim)),
        python_scalars(x.dtype)), label="rhs")
    y, ny = tnp.asarray(x, copy=True), host(x)
    nrhs = host(rhs) if isinstance(rhs, tnp.ndarray) else rhs
    r, e = _run(lambda: f(y, rhs))
    expected, ee = _run(lambda: f(ny, nrhs))
    if ee is not None:
        assert isinstance(e, type(ee)), f"tnp gave {e!r} / {r!r}; NumPy raised {ee!r}"
        return
    assert e is None, f"tnp raised {e!r}"
    assert r is y
    assert_same(y, expected)
    assert y.dtype == x.dtype and y.shape == x.shape


@pytest.mark.parametrize("op", ["-", "+", "~", "abs"])
@given(x=arrays())
def test_unary_operator(op, x):
    f = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "abs": abs}[op]
    check(lambda: f(x), lambda: f(host(x)))


# ------------------------------------------------------------------------------------ reductions
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "std", "var", "all", "any"]


@pytest.mark.parametrize("name", REDUCTIONS)
@given(data=st.data())
def test_reduction(name, data):
    x = data.draw(arrays(), label="x")
    kw = {}
    axis = data.draw(st.none() | xps.valid_tuple_axes(x.ndim), label="axis")
    if axis is not None:
        kw["axis"] = axis
    if data.draw(st.booleans(), label="keepdims"):
        kw["keepdims"] = True
    if name in ("std", "var") and data.draw(st.booleans(), label="with correction"):
        kw["correction"] = data.draw(st.sampled_from([0, 1, 0.5]), label="correction")
    if name in ("sum", "prod") and data.draw(st.booleans(), label="with dtype"):
        kw["dtype"] = data.draw(numeric, label="dtype")
    check(lambda: getattr(tnp, name)(x, **kw), lambda: getattr(np, name)(host(x), **kw))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod", "argmax", "argmin",
                                  "count_nonzero"])
@given(data=st.data())
def test_axis_function(name, data):
    x = data.draw(arrays(numeric, nonempty_shapes), label="x")
    kw = {}
    if name.startswith("cumulative"):
        kw["axis"] = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
        kw["include_initial"] = data.draw(st.booleans(), label="include_initial")
    elif name == "count_nonzero":
        kw["axis"] = data.draw(st.none() | xps.valid_tuple_axes(x.ndim), label="axis")
        kw["keepdims"] = data.draw(st.booleans(), label="keepdims")
    else:
        kw["axis"] = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1), label="axis")
        kw["keepdims"] = data.draw(st.booleans(), label="keepdims")
    check(lambda: getattr(tnp, name)(x, **kw), lambda: getattr(np, name)(host(x), **kw))


@given(data=st.data())
def test_linalg_products(data):
    n, m, k = (data.draw(st.integers(1, 4), label=s) for s in "nmk")
    dtype = data.draw(real, label="dtype")
    a = data.draw(arrays(dtype, (n, k), elements={"min_value": 0, "max_value": 5}), label="a")
    b = data.draw(arrays(dtype, (k, m), elements={"min_value": 0, "max_value": 5}), label="b")
    check(lambda: tnp.matmul(a, b), lambda: np.matmul(host(a), host(b)))
    check(lambda: tnp.tensordot(a, b, axes=1), lambda: np.tensordot(host(a), host(b), axes=1))
    check(lambda: tnp.vecdot(a, a), lambda: np.vecdot(host(a), host(a)))
    check(lambda: tnp.matrix_transpose(a), lambda: np.matrix_transpose(host(a)))
    check(lambda: a.mT, lambda: host(a).mT)


# ------------------------------------------------------------------------------------ manipulation
def _check_view(r, expected, x, nx):
    """A view in NumPy is a view in tnp (writes through it reach the original) and vice versa."""
    if isinstance(r, tnp.ndarray) and isinstance(expected, np.ndarray):
        assert np.shares_memory(np.asarray(r), np.asarray(x)) == np.shares_memory(expected, nx)


@given(data=st.data())
def test_manipulation(data):
    x = data.draw(arrays(), label="x")
    nx = np.asarray(x)  # a view: used to compare memory sharing
    nd = x.ndim
    perm = data.draw(st.permutations(range(nd)), label="perm")
    ax = data.draw(st.integers(-nd - 1, nd), label="expand axis")
    cases = [
        ("reshape(-1)", lambda m, a: m.reshape(a, (-1,))),
        ("reshape(1+shape)", lambda m, a: m.reshape(a, (1,) + a.shape)),
        ("permute_dims", lambda m, a: m.permute_dims(a, tuple(perm))),
        ("expand_dims", lambda m, a: m.expand_dims(a, axis=ax)),
        ("squeeze", lambda m, a: m.squeeze(a, axis=tuple(i for i, s in enumerate(a.shape) if s == 1))),
        ("flip", lambda m, a: m.flip(a)),
        ("flip(0)", lambda m, a: m.flip(a, axis=0)),
        ("roll", lambda m, a: m.roll(a, 2)),
        ("moveaxis", lambda m, a: m.moveaxis(a, 0, -1)),
        ("broadcast_to", lambda m, a: m.broadcast_to(a, (2,) + a.shape)),
        ("tile", lambda m, a: m.tile(a, (2,))),
        ("repeat", lambda m, a: m.repeat(a, 2)),
        ("repeat(axis)", lambda m, a: m.repeat(a, 2, axis=-1)),
        ("concat", lambda m, a: m.concat([a, a], axis=None)),
        ("concat(0)", lambda m, a: m.concat([a, a], axis=0)),
        ("stack", lambda m, a: m.stack([a, a], axis=-1)),
        ("unstack", lambda m, a: m.unstack(a, axis=0)),
        ("broadcast_arrays", lambda m, a: m.broadcast_arrays(a, m.ones((1,) * a.ndim))),
        ("swapaxes", lambda m, a: m.swapaxes(a, 0, -1)),
        ("ravel", lambda m, a: m.ravel(a)),
        ("astype", lambda m, a: m.astype(a, m.float32)),
        ("astype(copy=False)", lambda m, a: m.astype(a, a.dtype, copy=False)),
    ]
    for label, f in cases:
        note(label)
        r, expected = check(lambda: f(tnp, x), lambda: f(np, nx))
        _check_view(r, expected, x, nx)


# ------------------------------------------------------------------------------------ indexing
@given(data=st.data())
def test_basic_indexing(data):
    x = data.draw(arrays(), label="x")
    nx = np.asarray(x)
    idx = data.draw(xps.indices(x.shape, allow_newaxis=True), label="index")
    r, expected = check(lambda: x[idx], lambda: nx[idx])
    _check_view(r, expected, x, nx)
    if r is not None:
        # integer indexing to 0-d gives a tnp 0-d value (NumPy: a NumPy scalar), never a Python one
        assert isinstance(r, tnp.ndarray) and r.shape == np.shape(expected)


@given(data=st.data())
def test_setitem(data):
    x = data.draw(arrays(shape=nonempty_shapes), label="x")
    idx = data.draw(xps.indices(x.shape), label="index")
    y, ny = tnp.asarray(x, copy=True), host(x)
    value = data.draw(st.one_of(
        python_scalars(x.dtype),
        arrays(x.dtype, st.just(np.empty(x.shape)[idx].shape))), label="value")
    nvalue = host(value) if isinstance(value, tnp.ndarray) else value
    r, e = _run(lambda: y.__setitem__(idx, value))
    _, ee = _run(lambda: ny.__setitem__(idx, nvalue))
    if ee is not None:
        assert isinstance(e, type(ee)), (e, ee)
        return
    assert e is None, e
    assert_same(y, ny)


@given(data=st.data())
def test_boolean_and_integer_array_indexing(data):
    x = data.draw(arrays(shape=nonempty_shapes), label="x")
    nx = host(x)
    mask = data.draw(arrays(tnp.bool, x.shape), label="mask")
    check(lambda: x[mask], lambda: nx[host(mask)])
    y, ny = tnp.asarray(x, copy=True), host(x)
    y[mask] = tnp.zeros((), dtype=x.dtype)
    ny[host(mask)] = 0
    assert_same(y, ny)
    n = x.shape[0]
    ind = data.draw(arrays(tnp.int64, st.integers(0, 5).map(lambda k: (k,)),
                           elements={"min_value": -n, "max_value": n - 1}), label="indices")
    check(lambda: tnp.take(x, ind, axis=0), lambda: np.take(nx, host(ind), axis=0))
    check(lambda: x[ind], lambda: nx[host(ind)])
    lead = tuple(i % s for i, s in zip(range(x.ndim), x.shape))
    check(lambda: x[lead], lambda: nx[lead])
    check(lambda: tnp.nonzero(mask), lambda: np.nonzero(host(mask)))
    check(lambda: tnp.where(mask, x, tnp.zeros((), dtype=x.dtype)),
          lambda: np.where(host(mask), nx, np.zeros((), dtype=nx.dtype)))


# ------------------------------------------------------------------------------------ sorting, sets, searching
@given(data=st.data())
def test_sort_and_argsort(data):
    x = data.draw(arrays(real, nonempty_shapes, elements={"allow_nan": False}), label="x")
    nx = host(x)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    check(lambda: tnp.sort(x, axis=axis), lambda: np.sort(nx, axis=axis))
    check(lambda: tnp.argsort(x, axis=axis, stable=True), lambda: np.argsort(nx, axis=axis, stable=True))
    # descending: the order reversed (as values; equal elements, such as -0.0 and 0.0, keep
    # their original order when stable)
    down = tnp.sort(x, axis=axis, descending=True, stable=True)
    assert np.array_equal(np.asarray(down), np.flip(np.sort(nx, axis=axis), axis=axis))
    idx = tnp.argsort(x, axis=axis, descending=True, stable=True)
    assert_same(down, np.take_along_axis(nx, host(idx), axis=axis))
    # descending and stable: equal elements keep their order (Python's sort, reverse=True, does)
    v = nx.reshape(-1).tolist()
    expected = np.asarray(sorted(range(len(v)), key=v.__getitem__, reverse=True), dtype=np.intp)
    check(lambda: tnp.argsort(x, axis=None, descending=True, stable=True), lambda: expected)
    assert_same(x.argsort(axis=None, descending=True, stable=True), expected)


@given(x=arrays(real, nonempty_shapes, elements={"allow_nan": False}))
def test_sets_and_searching(x):
    nx = host(x)
    for name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
        check(lambda: getattr(tnp, name)(x), lambda: getattr(np, name)(nx))
    s = tnp.sort(tnp.reshape(x, (-1,)))
    check(lambda: tnp.searchsorted(s, x), lambda: np.searchsorted(np.sort(nx.ravel()), nx))
    check(lambda: tnp.clip(x, 0, 5), lambda: np.clip(nx, 0, 5))
    check(lambda: tnp.clip(x, min=1), lambda: np.clip(nx, min=1))


# ------------------------------------------------------------------------------------ creation, devices, copy
devices = st.sampled_from([None, "cpu", CPU, CPU1, "cpu:1"])


@given(dtype=any_dtype, shape=xps.array_shapes(min_dims=0, max_dims=3, max_side=4),
       device=devices)
def test_creation_with_dtype_and_device(dtype, shape, device):
    want = CPU if device is None else tnp.device(device)
    kw = {"dtype": dtype, "device": device}
    npkw = {"dtype": dtype}
    fill = True if dtype == tnp.bool else 1
    for label, tf, nf in [
        ("zeros", lambda: tnp.zeros(shape, **kw), lambda: np.zeros(shape, **npkw)),
        ("ones", lambda: tnp.ones(shape, **kw), lambda: np.ones(shape, **npkw)),
        ("full", lambda: tnp.full(shape, fill, **kw), lambda: np.full(shape, fill, **npkw)),
        ("eye", lambda: tnp.eye(3, 4, k=1, **kw), lambda: np.eye(3, 4, k=1, **npkw)),
        ("asarray", lambda: tnp.asarray([[fill, 0]], **kw), lambda: np.asarray([[fill, 0]], **npkw)),
    ]:
        note(label)
        check(tf, nf, device=want)
    r = tnp.empty(shape, **kw)
    assert (r.shape, r.dtype, r.device) == (shape, np.dtype(dtype), want)
    if dtype != tnp.bool:
        check(lambda: tnp.arange(5, **kw), lambda: np.arange(5, **npkw), device=want)
    if tnp.isdtype(dtype, ("real floating", "complex floating")):
        check(lambda: tnp.linspace(0, 1, 7, **kw), lambda: np.linspace(0, 1, 7, **npkw),
              device=want)


@given(x=arrays(), device=devices, dtype=st.none() | any_dtype)
def test_like_functions_and_astype(x, device, dtype):
    nx = host(x)
    want = x.device if device is None else tnp.device(device)
    for name in ("zeros_like", "ones_like"):
        check(lambda: getattr(tnp, name)(x, dtype=dtype, device=device),
              lambda: getattr(np, name)(nx, dtype=dtype), device=want)
    check(lambda: tnp.full_like(x, 0, dtype=dtype, device=device),
          lambda: np.full_like(nx, 0, dtype=dtype), device=want)
    r = tnp.empty_like(x, dtype=dtype, device=device)
    assert (r.shape, r.device) == (x.shape, want)
    if dtype is not None:
        check(lambda: tnp.astype(x, dtype, device=device), lambda: np.astype(nx, dtype),
              device=want)
        check(lambda: x.astype(dtype, device=device), lambda: nx.astype(dtype), device=want)


@given(x=arrays(shape=nonempty_shapes))
def test_copy_keyword_and_to_device(x):
    nx = np.asarray(x)
    # copy=True: new memory; copy=False / None on the same device: the same memory
    assert not np.shares_memory(np.asarray(tnp.asarray(x, copy=True)), nx)
    assert np.shares_memory(np.asarray(tnp.asarray(x, copy=False)), nx)
    assert np.shares_memory(np.asarray(tnp.asarray(x)), nx)
    with pytest.raises(ValueError):
        tnp.asarray(x, dtype=tnp.complex128 if x.dtype != tnp.complex128 else tnp.int8, copy=False)
    # to_device: values and dtype survive a round trip; moving copies; devices do not mix
    y = x.to_device(CPU1)
    assert y.device == CPU1 and not np.shares_memory(np.asarray(y), nx)
    assert_same(y.to_device(CPU), nx)
    assert x.to_device(x.device) is x
    assert_same(tnp.asarray(y, device=CPU), nx)
    assert not np.shares_memory(np.asarray(tnp.asarray(y, device=CPU)), np.asarray(y))
    with pytest.raises(ValueError):
        tnp.asarray(y, device=CPU, copy=False)
    with pytest.raises(ValueError):
        x + y
    check(lambda: y + y, lambda: nx + nx, device=CPU1)
    check(lambda: tnp.sum(y), lambda: np.sum(nx), device=CPU1)
    check(lambda: y[0], lambda: nx[0], device=CPU1)


@given(x=arrays(numeric, shapes))
def test_dlpack(x):
    nx = np.asarray(x)
    assert x.__dlpack_device__() == nx.__dlpack_device__()
    back = np.from_dlpack(x)
    assert back.dtype == nx.dtype and back.shape == nx.shape and _bits(back) == _bits(nx)
    t = tnp.from_dlpack(nx)
    assert isinstance(t, tnp.ndarray) and t.device == CPU
    assert_same(t, nx)
    if nx.size:
        assert np.shares_memory(np.asarray(t), nx)
    c = tnp.from_dlpack(x, copy=True)
    assert_same(c, nx)
    if nx.size:
        assert not np.shares_memory(np.asarray(c), nx)


@given(n=st.integers(1, 20), d=st.floats(0.1, 10), dtype=st.none() | xps.floating_dtypes(),
       device=devices)
def test_fftfreq_dtype_and_device(n, d, dtype, device):
    want = CPU if device is None else tnp.device(device)
    for name in ("fftfreq", "rfftfreq"):
        r = getattr(tnp.fft, name)(n, d=d, dtype=dtype, device=device)
        expected = getattr(np.fft, name)(n, d)
        if dtype is not None:
            expected = expected.astype(dtype)
        assert_same(r, expected, device=want)


# ------------------------------------------------------------------------------------ namespace
def test_namespace_and_inspection():
    x = tnp.asarray([1.0])
    assert x.__array_namespace__() is tnp
    assert x.__array_namespace__(api_version="2024.12") is tnp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")
    assert tnp.__array_api_version__ == API_VERSION
    info = tnp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert caps["max dimensions"] is None or caps["max dimensions"] >= 32
    devs = info.devices()
    assert isinstance(devs, tuple) and info.default_device() in devs
    defaults = info.default_dtypes()
    assert set(defaults) >= {"real floating", "complex floating", "integral", "indexing"}
    assert tnp.asarray(1.0).dtype == defaults["real floating"]
    assert tnp.asarray(1).dtype == defaults["integral"]
    assert tnp.asarray(1j).dtype == defaults["complex floating"]
    assert tnp.arange(3).dtype == defaults["indexing"]
    all_dtypes = info.dtypes()
    assert set(all_dtypes) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                               "uint32", "uint64", "float32", "float64", "complex64",
                               "complex128"}
    for name, dt in all_dtypes.items():
        assert dt == getattr(tnp, name)
    assert set(info.dtypes(kind="integral")) == {n for n in all_dtypes if "int" in n}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64",
                                                                   "complex128"}
    with pytest.raises(ValueError):
        info.dtypes(kind="strings")


@given(dtype=any_dtype, kind=st.sampled_from(["bool", "signed integer", "unsigned integer",
                                              "integral", "real floating", "complex floating",
                                              "numeric"]))
def test_isdtype_and_finfo_iinfo(dtype, kind):
    assert tnp.isdtype(dtype, kind) == np.isdtype(dtype, kind)
    assert (dtype in tnp.__array_namespace_info__().dtypes(kind=kind).values()) == \
        np.isdtype(dtype, kind)
    if tnp.isdtype(dtype, ("real floating", "complex floating")):
        f, nf = tnp.finfo(dtype), np.finfo(dtype)
        assert (f.bits, f.eps, f.max, f.min, f.smallest_normal, f.dtype) == \
            (nf.bits, nf.eps, nf.max, nf.min, nf.smallest_normal, nf.dtype)
    elif tnp.isdtype(dtype, "integral"):
        i, ni = tnp.iinfo(dtype), np.iinfo(dtype)
        assert (i.bits, i.max, i.min, i.dtype) == (ni.bits, ni.max, ni.min, ni.dtype)


@given(x=arrays(shape=st.just(())))
def test_zero_d_conversions(x):
    """0-d arrays convert as NumPy's do: bool/int/float/complex/index, item(), tolist()."""
    nx = host(x)
    for conv in (bool, int, float, complex, operator.index):
        r, e = _run(lambda: conv(x))
        expected, ee = _run(lambda: conv(nx))
        if ee is not None:
            assert isinstance(e, type(ee)), (conv, e, ee)
        else:
            assert e is None, e
            assert type(r) is type(expected)
            assert r == expected or (r != r and expected != expected)
