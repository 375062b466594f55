"""Array creation routines, differentially against NumPy.

Each test builds the same array with ``xp=numpy`` and ``xp=tnp`` (``same``, over ``both``) and checks
values, dtype, shape and array-vs-scalar kind; bad arguments must raise NumPy's exception type.
"""
import math

import hypothesis.extra.numpy as hnp
import numpy
import pytest
from hypothesis import given, strategies as st

import tnp
from tnp.testing import assert_same
from tnp.testing.differential import same

DTYPES = [numpy.int32, numpy.float64, numpy.complex64, numpy.bool_]
SHAPES = [(), (4,), (2, 3), (2, 0, 3)]
SQUARE_SHAPES = [(3, 3), (2, 4), (4, 2), (2, 3, 3)]
D1 = tnp.device("cpu:1")   # the fake second CPU device


def sample(shape, dtype=numpy.int64):
    """A small array of ``shape`` and ``dtype`` with varied values (negatives, zeros, repeats)."""
    return (numpy.arange(math.prod(shape)) % 7 - 3).reshape(shape).astype(dtype)


small_arrays = hnp.arrays(st.sampled_from([numpy.int16, numpy.float32, numpy.float64, numpy.bool_]),
                          hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))


# ---------------------------------------------------------------------------- from existing data
@pytest.mark.parametrize("data", [
    [1, 2, 3], [1.5, -2.0], [[1, 2], [3, 4]], [[True, False]], [1 + 2j, 3], 7, 2.5, [], [[]],
    [[[1], [2]], [[3], [4]]],
])
@pytest.mark.parametrize("dtype", [None, numpy.int8, numpy.float32, numpy.complex128])
def test_array_from_python_data(data, dtype):
    same(lambda xp: xp.array(data, dtype=dtype))


@pytest.mark.parametrize("ndmin", [0, 1, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_array_ndmin(shape, ndmin):
    same(lambda xp, a: xp.array(a, ndmin=ndmin), sample(shape, numpy.float32))


@given(small_arrays)
def test_array_and_asarray_round_trip_any_array(a):
    same(lambda xp: xp.array(a))
    same(lambda xp: xp.asarray(a))


def test_array_of_tnp_arrays_and_scalars():
    assert_same(numpy.array([[0, 1, 2], [0, 1, 2]]), tnp.array([tnp.arange(3), tnp.arange(3)]))
    assert_same(numpy.array([numpy.float32(1), numpy.float32(3)]),
                tnp.array([tnp.float32(1), tnp.arange(3, dtype=tnp.float32).sum()]))


def test_array_copies_a_tnp_array():
    x = tnp.arange(4)
    y = tnp.array(x)
    y[0] = 99
    assert_same(numpy.arange(4), x)
    assert not numpy.shares_memory(x, y)


@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float32])
def test_asarray_of_numpy_array_is_zero_copy(dtype):
    a = sample((2, 3), dtype)
    with tnp.default_device("cpu"):   # (on a GPU the data has to move)
        t, u = tnp.asarray(a), tnp.array(a, copy=False)
    assert isinstance(t, tnp.ndarray)
    assert numpy.shares_memory(a, t) and numpy.shares_memory(a, u)
    t[0, 0] = 42
    assert a[0, 0] == 42


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
def test_asarray_of_tnp_array_is_zero_copy(shape):
    x = tnp.asarray(sample(shape, numpy.float64))
    assert numpy.shares_memory(tnp.asarray(x), x)
    assert numpy.shares_memory(tnp.asarray(x, dtype=numpy.float64), x)
    assert not numpy.shares_memory(tnp.asarray(x, dtype=numpy.float32), x)


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
def test_asarray_dtype_and_copy_flags(shape):
    a = sample(shape, numpy.float64) + 0.5
    same(lambda xp, x: xp.asarray(x, dtype=numpy.int16), a)
    same(lambda xp, x: xp.asarray(x, copy=True), a)
    same(lambda xp, x: xp.asarray(x, dtype=numpy.int16, copy=False), a)   # ValueError: needs a copy
    same(lambda xp: xp.asarray([1.5, 2.5], copy=False))                    # ValueError: list needs a copy


@pytest.mark.parametrize("data", [[[1], [1, 2]], [[1, 2], [3]]])
def test_array_of_ragged_list_raises_value_error(data):
    same(lambda xp: xp.array(data))


# ---------------------------------------------------------------------------- from shape or value
@pytest.mark.parametrize("dtype", [None] + DTYPES)
@pytest.mark.parametrize("shape", [3, (), (2, 3), (0,), [2, 1, 2]])
@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_zeros_ones(name, shape, dtype):
    same(lambda xp: getattr(xp, name)(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", [None] + DTYPES)
@pytest.mark.parametrize("shape", [3, (), (2, 3), (0,)])
def test_empty_has_shape_and_dtype(shape, dtype):
    e, t = numpy.empty(shape, dtype=dtype), tnp.empty(shape, dtype=dtype)
    assert isinstance(t, tnp.ndarray) and (t.shape, t.dtype) == (e.shape, e.dtype)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("fill", [0, -2.5, True, 1 + 1j, [1, 2, 3]])
@pytest.mark.parametrize("dtype", [None, numpy.int16, numpy.float32, numpy.complex128])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_full(shape, dtype, fill):
    same(lambda xp: xp.full(shape, fill, dtype=dtype))


def test_full_with_a_tnp_fill_value():
    assert_same(numpy.full((2, 2), 3.0), tnp.full((2, 2), tnp.float64(3.0)))
    assert_same(numpy.full((2, 2), [1, 2]), tnp.full((2, 2), tnp.array([1, 2])))


@pytest.mark.parametrize("bad", [
    lambda xp: xp.zeros(-1), lambda xp: xp.ones((2, -3)), lambda xp: xp.full((2,), [1, 2, 3]),
    lambda xp: xp.zeros(3, dtype="not-a-dtype"), lambda xp: xp.empty((2.5,)),
])
def test_bad_shape_or_dtype_raises_like_numpy(bad):
    same(bad)


@pytest.mark.parametrize("kwargs", [{}, {"dtype": numpy.float32}, {"shape": (4,)},
                                    {"dtype": numpy.int8, "shape": (2, 1, 2)}])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.complex128])
def test_zeros_ones_full_like(dtype, shape, kwargs):
    a = sample(shape, dtype)
    same(lambda xp, x: xp.zeros_like(x, **kwargs), a)
    same(lambda xp, x: xp.ones_like(x, **kwargs), a)
    same(lambda xp, x: xp.full_like(x, 7, **kwargs), a)
    e, t = numpy.empty_like(a, **kwargs), tnp.empty_like(tnp.asarray(a), **kwargs)
    assert isinstance(t, tnp.ndarray) and (t.shape, t.dtype) == (e.shape, e.dtype)


def test_like_of_a_scalar_is_a_0d_array():
    assert_same(numpy.zeros_like(numpy.float32(2)), tnp.zeros_like(tnp.float32(2)))
    assert_same(numpy.ones_like(numpy.int64(1)), tnp.ones_like(tnp.arange(3).sum()))


# ---------------------------------------------------------------------------- numerical ranges
@pytest.mark.parametrize("args", [
    (5,), (2, 7), (0, 1, 0.25), (10, 0, -3), (3, 3), (1.5, 4), (5, 0), (-2, 2, 0.5), (0, 5, 1.5),
])
@pytest.mark.parametrize("dtype", [None, numpy.int16, numpy.float32, numpy.complex64])
def test_arange(args, dtype):
    same(lambda xp: xp.arange(*args, dtype=dtype))


@pytest.mark.parametrize("bad", [lambda xp: xp.arange(0, 10, 0), lambda xp: xp.arange(),
                                 lambda xp: xp.arange(0, numpy.inf)])
def test_arange_bad_arguments(bad):
    same(bad)


@pytest.mark.parametrize("kwargs", [{}, {"num": 1}, {"num": 0}, {"num": 7, "endpoint": False},
                                    {"num": 5, "dtype": numpy.int32}, {"num": 4, "dtype": numpy.float32}])
@pytest.mark.parametrize("start, stop", [(0, 1), (-3, 9), (2.5, -2.5)])
def test_linspace(start, stop, kwargs):
    same(lambda xp: xp.linspace(start, stop, **kwargs), rtol=1e-12)


@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("num", [1, 5])
def test_linspace_retstep_returns_array_and_scalar_step(num, endpoint):
    same(lambda xp: xp.linspace(0, 2, num, endpoint=endpoint, retstep=True))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", ["linspace", "logspace", "geomspace"])
def test_ranges_between_array_endpoints(name, axis):
    start, stop = numpy.array([1.0, 2.0, 4.0]), numpy.array([[8.0, 16.0, 32.0], [2.0, 3.0, 5.0]])
    same(lambda xp, a, b: getattr(xp, name)(a, b, num=4, axis=axis), start, stop, rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"base": 2.0, "num": 5}, {"endpoint": False, "num": 3},
                                    {"num": 4, "dtype": numpy.float32}, {"num": 4, "dtype": numpy.int64}])
@pytest.mark.parametrize("start, stop", [(0, 2), (1, -1)])
def test_logspace(start, stop, kwargs):
    same(lambda xp: xp.logspace(start, stop, **kwargs), rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"num": 3}, {"num": 4, "endpoint": False},
                                    {"num": 4, "dtype": numpy.float32}, {"num": 3, "dtype": numpy.complex128}])
@pytest.mark.parametrize("start, stop", [(1, 1000), (-1, -16), (2, 0.5)])
def test_geomspace(start, stop, kwargs):
    same(lambda xp: xp.geomspace(start, stop, **kwargs), rtol=1e-12)


@pytest.mark.parametrize("bad", [lambda xp: xp.geomspace(0, 1), lambda xp: xp.linspace(0, 1, -1),
                                 lambda xp: xp.logspace(0, 1, num=-2), lambda xp: xp.linspace(0, 1, 2.5)])
def test_ranges_bad_arguments(bad):
    same(bad)


@pytest.mark.parametrize("kwargs", [{}, {"indexing": "ij"}, {"sparse": True},
                                    {"indexing": "ij", "sparse": True}, {"copy": False}])
@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_meshgrid(dtype, kwargs):
    x, y, z = numpy.arange(3, dtype=dtype), numpy.arange(2, dtype=dtype) - 5, numpy.arange(4, dtype=dtype)
    same(lambda xp, *a: xp.meshgrid(*a, **kwargs), x, y)
    same(lambda xp, *a: xp.meshgrid(*a, **kwargs), x, y, z)
    same(lambda xp: xp.meshgrid())


def test_meshgrid_bad_indexing():
    same(lambda xp, x: xp.meshgrid(x, x, indexing="xyz"), numpy.arange(2))


@pytest.mark.parametrize("kwargs", [{}, {"dtype": numpy.int8}, {"sparse": True}, {"dtype": float, "sparse": True}])
@pytest.mark.parametrize("dims", [(3,), (2, 3), (2, 1, 3), ()])
def test_indices(dims, kwargs):
    same(lambda xp: xp.indices(dims, **kwargs))


def test_indices_negative_dimension():
    same(lambda xp: xp.indices((2, -1)))


# ---------------------------------------------------------------------------- building matrices
@pytest.mark.parametrize("dtype", [None, numpy.int32, numpy.complex64])
@pytest.mark.parametrize("N, M, k", [(3, None, 0), (3, 4, 1), (4, 2, -1), (2, 2, 5), (0, None, 0)])
def test_eye(N, M, k, dtype):
    same(lambda xp: xp.eye(N, M, k, dtype=dtype))


@pytest.mark.parametrize("dtype", [None, numpy.int8, bool])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_identity(n, dtype):
    same(lambda xp: xp.identity(n, dtype=dtype))


@pytest.mark.parametrize("k", [0, 1, -2, 5])
@pytest.mark.parametrize("shape", [(3,), (4,), (3, 3), (2, 4)])
@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float32])
def test_diag(dtype, shape, k):
    same(lambda xp, a: xp.diag(a, k), sample(shape, dtype))


@pytest.mark.parametrize("k", [0, 1, -1])
@pytest.mark.parametrize("shape", [(3,), (2, 2), ()])
@pytest.mark.parametrize("dtype", [numpy.int16, numpy.complex128])
def test_diagflat(dtype, shape, k):
    same(lambda xp, a: xp.diagflat(a, k), sample(shape, dtype))


def test_diag_of_3d_input_raises_value_error():
    same(lambda xp, a: xp.diag(a), sample((2, 2, 2)))


@pytest.mark.parametrize("dtype", [None, numpy.int32, numpy.float32])
@pytest.mark.parametrize("N, M, k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (1, 1, 0), (0, 3, 0)])
def test_tri(N, M, k, dtype):
    same(lambda xp: xp.tri(N, M, k, dtype=dtype))


@pytest.mark.parametrize("k", [0, 1, -1, 4])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (2, 3, 3), (4,)])
@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float64, numpy.bool_])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu(name, dtype, shape, k):
    same(lambda xp, a: getattr(xp, name)(a, k), sample(shape, dtype))


@given(hnp.arrays(st.sampled_from([numpy.int32, numpy.float64]),
                  hnp.array_shapes(min_dims=2, max_dims=3, max_side=4)),
       st.integers(-4, 4))
def test_tril_triu_any_matrix(a, k):
    same(lambda xp, x: xp.tril(x, k), a)
    same(lambda xp, x: xp.triu(x, k), a)


@pytest.mark.parametrize("kwargs", [{}, {"N": 2}, {"N": 5}, {"increasing": True}, {"N": 0}])
@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float64, numpy.complex128])
def test_vander(dtype, kwargs):
    same(lambda xp, x: xp.vander(x, **kwargs), sample((4,), dtype))


def test_vander_of_2d_input_raises_value_error():
    same(lambda xp, x: xp.vander(x), sample((2, 2)))


# ---------------------------------------------------------------------------- from functions, iterators, buffers
@pytest.mark.parametrize("dtype", [float, numpy.int32])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 2, 2)])
def test_fromfunction(shape, dtype):
    same(lambda xp: xp.fromfunction(lambda *ix: sum(i * 10 ** n for n, i in enumerate(ix)), shape, dtype=dtype))


@pytest.mark.parametrize("count", [-1, 0, 3])
@pytest.mark.parametrize("dtype", [numpy.int16, numpy.float64, numpy.complex64])
def test_fromiter(dtype, count):
    same(lambda xp: xp.fromiter((i * i for i in range(5)), dtype=dtype, count=count))


def test_fromiter_errors():
    same(lambda xp: xp.fromiter(iter([1, 2]), dtype=int, count=5))   # ValueError: iterator too short
    same(lambda xp: xp.fromiter(iter([1, 2])))                        # TypeError: dtype is required


@pytest.mark.parametrize("kwargs", [{}, {"count": 2}, {"offset": 4}, {"offset": 4, "count": 1}])
@pytest.mark.parametrize("dtype", [numpy.uint8, numpy.int32, numpy.float32])
def test_frombuffer(dtype, kwargs):
    buf = numpy.arange(4, dtype=numpy.int32).tobytes() * 2
    same(lambda xp: xp.frombuffer(buf, dtype=dtype, **kwargs))


def test_frombuffer_errors():
    same(lambda xp: xp.frombuffer(b"abc", dtype=numpy.int16))                 # not a multiple of 2
    same(lambda xp: xp.frombuffer(b"abcd", dtype=numpy.uint8, offset=9))      # offset past the end


def test_frombuffer_shares_the_buffer():
    buf = bytearray(b"\x01\x02\x03")
    with tnp.default_device("cpu"):
        t = tnp.frombuffer(buf, dtype=numpy.uint8)
    buf[0] = 9
    assert_same(numpy.array([9, 2, 3], dtype=numpy.uint8), t)


# ---------------------------------------------------------------------------- copy
@pytest.mark.parametrize("order", ["C", "F", "K"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("dtype", [numpy.int8, numpy.float64])
def test_copy_is_equal_and_independent(dtype, shape, order):
    a = sample(shape, dtype)
    same(lambda xp, x: xp.copy(x, order=order), a)
    x = tnp.asarray(a)
    c = tnp.copy(x, order=order)
    assert not numpy.shares_memory(c, x)
    if c.ndim:
        c[...] = 1
        assert_same(sample(shape, dtype), x)
    assert c.flags.f_contiguous == numpy.copy(a, order=order).flags.f_contiguous


# ---------------------------------------------------------------------------- window functions
@pytest.mark.parametrize("M", [-1, 0, 1, 2, 7, 8])
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_window_functions(name, M):
    same(lambda xp: getattr(xp, name)(M))


@pytest.mark.parametrize("beta", [0, 5.0, 14])
@pytest.mark.parametrize("M", [0, 1, 6])
def test_kaiser(M, beta):
    same(lambda xp: xp.kaiser(M, beta))


def test_window_bad_argument():
    same(lambda xp: xp.kaiser(3))           # TypeError: beta is required
    same(lambda xp: xp.hanning("3"))        # TypeError


# ---------------------------------------------------------------------------- device=
@pytest.mark.parametrize("make", [
    lambda xp, **d: xp.zeros(3, **d), lambda xp, **d: xp.ones((2, 2), dtype=numpy.int8, **d),
    lambda xp, **d: xp.empty(0, **d), lambda xp, **d: xp.full((2,), 1.5, **d),
    lambda xp, **d: xp.arange(5, **d), lambda xp, **d: xp.linspace(0, 1, 3, **d),
    lambda xp, **d: xp.eye(3, **d), lambda xp, **d: xp.array([[1, 2]], **d),
    lambda xp, **d: xp.asarray([1.0, 2.0], **d), lambda xp, **d: xp.asarray(numpy.arange(3), **d),
], ids=["zeros", "ones", "empty", "full", "arange", "linspace", "eye", "array", "asarray-list",
        "asarray-numpy"])
def test_device_argument_places_the_array(make):
    t = make(tnp, device="cpu:1")
    assert t.device == tnp.device("cpu:1")
    if t.size:
        assert_same(make(numpy), t.to_device("cpu"))
    assert make(tnp, device=tnp.device("cpu:1")).device == D1
    assert make(tnp).device == tnp.get_default_device()


def test_like_functions_create_on_the_prototype_device():
    x = tnp.arange(4, device="cpu:1")
    for name in ["zeros_like", "ones_like", "empty_like"]:
        assert getattr(tnp, name)(x).device == D1
    assert tnp.full_like(x, 2).device == D1
    assert tnp.copy(x).device == D1
    assert tnp.tril(tnp.ones((2, 2), device="cpu:1")).device == D1


def test_device_argument_moves_an_existing_array():
    x = tnp.arange(3)
    y = tnp.asarray(x, device="cpu:1")
    assert (x.device, y.device) == (tnp.get_default_device(), D1)
    assert_same(numpy.arange(3), y.to_device("cpu"))


def test_arrays_on_two_devices_do_not_mix():
    with pytest.raises(ValueError):
        tnp.zeros(3, device="cpu:1") + tnp.zeros(3)


def test_bad_device_name_raises_value_error():
    with pytest.raises(ValueError):
        tnp.zeros(3, device="tpu:0")


# ---------------------------------------------------------------------------- index-expression builders
@pytest.mark.parametrize("key", [
    (slice(0, 3),), (slice(0, 3), slice(0, 2)), (slice(-1, 1, 5j),), (slice(0, 4, 2), slice(1, 2, 3j)),
    (slice(1.0, 2.0, 0.25),), (slice(3),),
])
@pytest.mark.parametrize("name", ["mgrid", "ogrid"])
def test_mgrid_ogrid(name, key):
    same(lambda xp: getattr(xp, name)[key if len(key) > 1 else key[0]])


@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_r_(dtype):
    a, b = numpy.arange(3, dtype=dtype), numpy.array([[1, 2], [3, 4]], dtype=dtype)
    same(lambda xp, x: xp.r_[x, 0, x], a)
    same(lambda xp, x: xp.r_[x, 1:4, -1], a)
    same(lambda xp, x: xp.r_["0,2", x, x], a)
    same(lambda xp, x: xp.r_["-1", x, x], b)
    same(lambda xp: xp.r_[0:1:5j, 7])
    same(lambda xp: xp.r_[[]])
    same(lambda xp, x, y: xp.r_[x, y], a, b)   # ValueError: dimensions differ


@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64])
def test_c_(dtype):
    a, b = numpy.arange(3, dtype=dtype), numpy.arange(6, dtype=dtype).reshape(2, 3)
    same(lambda xp, x: xp.c_[x, x * 2], a)
    same(lambda xp, x: xp.c_[x, x], b)
    same(lambda xp, x: xp.c_[x, 0, x], a)
    same(lambda xp, x, y: xp.c_[x, y], a, b)   # ValueError: dimensions differ


def test_index_builders_keep_the_device():
    x = tnp.arange(3, device="cpu:1")
    assert tnp.r_[x, x].device == D1
    assert tnp.c_[x, x].device == D1


@pytest.mark.gpu
def test_index_builders_on_a_gpu_give_gpu_arrays():
    cp = pytest.importorskip("cupy")
    with tnp.default_device("gpu:0"):
        made = [tnp.mgrid[0:3, 0:2], tnp.r_[1, 2], tnp.c_[[1], [2]], *tnp.ogrid[0:2, 0:3]]
    x = tnp.arange(3, device="gpu:0")
    made.append(tnp.r_[x, 5])
    for r in made:
        assert r.device == tnp.device("gpu:0") and isinstance(r._a, cp.ndarray)
    assert_same(numpy.r_[numpy.arange(3), 5], made[-1])
