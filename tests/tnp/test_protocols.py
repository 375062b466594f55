"""Python protocols of tnp.ndarray beside numpy.ndarray's (issue 17, item 1 and part of 4): the
sequence protocol (with and without the C base), the buffer protocol and __array_interface__
(zero-copy, writable iff the array is; none on a GPU), numpy.asarray staying exact for the
dtypes whose buffer NumPy would misread, ndarray[...] in annotations, and ``**`` giving the bits
of NumPy's operator (which special-cases some exponents) with its warnings."""
import ctypes
import os
import struct
import subprocess
import sys
import textwrap
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import tnp
from tnp.extend import wrap

SPEEDUPS = tnp._core.ndarray.SPEEDUPS
HAS_BUFFER = SPEEDUPS or sys.version_info >= (3, 12)
needs_buffer = pytest.mark.skipif(not HAS_BUFFER, reason="pure-Python build before Python 3.12: no buffer")


# ---------------------------------------------------------------------------- sequence protocol
SEQUENCE_CASES = [np.arange(5.0), np.arange(6).reshape(2, 3), np.array([True, False, True]),
                  np.array(["ab", "c"])]


@pytest.mark.parametrize("a", SEQUENCE_CASES, ids=lambda a: f"{a.dtype}{a.shape}")
def test_reversed_iter_in_match_numpy(a):
    x = tnp.asarray(a)
    got = list(reversed(x))
    ref = list(reversed(a))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(g), r)
        assert np.asarray(g).dtype == r.dtype
    assert [np.asarray(e).tolist() for e in x] == [e.tolist() for e in a]
    first = a.flat[0]
    assert (first in x) == (first in a) is True
    missing = "zz" if a.dtype.kind == "U" else 99
    assert (missing in x) == (missing in a) is False


def test_reversed_of_0d_raises_numpys_type_error():
    for xp in (np, tnp):
        with pytest.raises(TypeError, match="unsized"):
            reversed(xp.asarray(3.0))
    with pytest.raises(TypeError):
        reversed(tnp.arange(3.0).sum())   # a scalar is not a sequence (NumPy: not reversible)


PURE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tnp
    assert tnp._core.ndarray.SPEEDUPS is False
    x = tnp.asarray(np.arange(6).reshape(2, 3))
    assert [r.tolist() for r in reversed(x)] == [[3, 4, 5], [0, 1, 2]]
    assert 4 in x and 9 not in x
    assert [int(v) for v in reversed(tnp.arange(3))] == [2, 1, 0]
    a = tnp.arange(4.0)
    if sys.version_info >= (3, 12):
        m = memoryview(a)
        m[0] = 7.0
        assert a[0] == 7.0 and m.format == "d" and not m.readonly
    else:
        try:
            memoryview(a)
        except TypeError:
            pass
        else:
            raise AssertionError("no buffer expected from a Python class before 3.12")
    assert a.__array_interface__ == a.numpy().__array_interface__
    print("ok")
""")


def test_pure_python_build_has_the_sequence_protocol_and_interface():
    env = dict(os.environ, TNP_PURE_PYTHON="1")
    r = subprocess.run([sys.executable, "-c", PURE_SCRIPT], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ---------------------------------------------------------------------------- buffer protocol
BUFFER_CASES = [np.arange(6.0), np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2],
                np.array([1 + 2j, 3 - 1j], dtype=np.complex64), np.arange(3, dtype=">f8"),
                np.array([True, False]), np.array(["ab", "c"]), np.float16([1.5, 2.5])]


@needs_buffer
@pytest.mark.parametrize("a", BUFFER_CASES, ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_memoryview_is_numpys_zero_copy(a):
    x = tnp.asarray(a)
    m, ref = memoryview(x), memoryview(a)
    assert (m.format, m.shape, m.strides, m.itemsize, m.readonly) == \
        (ref.format, ref.shape, ref.strides, ref.itemsize, ref.readonly)
    assert m.tobytes() == ref.tobytes()
    back = np.asarray(m)                 # the same memory, seen again
    assert np.shares_memory(back, a) and back.dtype == a.dtype


@needs_buffer
def test_buffer_writes_show_and_readonly_arrays_refuse():
    x = tnp.arange(4.0)
    m = memoryview(x)
    m[1] = 10.0
    assert x[1] == 10.0
    struct.pack_into("d", x, 16, -1.0)          # a writable buffer consumer
    assert x[2] == -1.0
    assert bytes(tnp.arange(3, dtype=np.uint8)) == bytes(np.arange(3, dtype=np.uint8))
    ro = tnp.broadcast_to(tnp.arange(3.0), (2, 3))
    assert memoryview(ro).readonly and memoryview(np.broadcast_to(np.arange(3.0), (2, 3))).readonly
    with pytest.raises(TypeError):
        struct.pack_into("d", ro, 0, 1.0)
    c = (ctypes.c_double * 4).from_buffer(x)    # needs a writable buffer
    c[3] = 5.0
    assert x[3] == 5.0


@needs_buffer
def test_scalars_export_no_buffer_so_numpy_asarray_is_writable_as_for_numpy_scalars():
    s = tnp.arange(3.0).sum()
    with pytest.raises(TypeError):
        memoryview(s)
    arr = np.asarray(s)          # as numpy.asarray(np.float64(3.0)): a writable 0-d array
    ref = np.asarray(np.float64(3.0))
    assert arr.flags.writeable == ref.flags.writeable is True
    assert arr.dtype == ref.dtype and arr.shape == () and arr == 3.0
    assert np.array([s, s]).dtype == np.float64


@needs_buffer
def test_no_buffer_for_v_dtypes_so_numpy_asarray_stays_exact():
    titled = np.zeros(2, np.dtype({"names": ["a", "b"], "formats": ["i1", "f8"], "offsets": [0, 8],
                                   "titles": ["T", "U"]}))
    aligned = np.zeros(2, np.dtype([("a", "i1"), ("b", "f8")], align=True))
    for a in (titled, aligned, np.arange(3).astype(ml_dtypes.bfloat16), np.zeros(2, "V3")):
        with pytest.raises((BufferError, ValueError)):   # (NumPy itself refuses bfloat16: ValueError)
            memoryview(tnp.asarray(a))
        b = np.asarray(tnp.asarray(a))      # NumPy's buffer reading would drop titles, bfloat16...
        assert b.dtype == a.dtype and np.shares_memory(b, a)
    # ...as NumPy's own buffer round trip shows, where it has one
    assert np.asarray(memoryview(titled)).dtype != titled.dtype


@pytest.mark.parametrize("a", [np.array(["a", "bb"], dtype=np.dtypes.StringDType()),
                               np.array(["2020-01-01"], dtype="M8[D]"), np.array([1, None], dtype=object),
                               np.arange(3).astype(ml_dtypes.bfloat16)], ids=lambda a: str(a.dtype))
def test_numpy_asarray_keeps_every_dtype(a):
    b = np.asarray(tnp.asarray(a))
    assert b.dtype == a.dtype and b.shape == a.shape
    if a.dtype.kind != "O":
        assert np.shares_memory(b, a)


class _FakeGpuArray:
    """Stands for a CuPy array: no host memory, no buffer."""
    shape, ndim, dtype = (3,), 1, np.dtype(np.float64)


def test_gpu_arrays_export_no_buffer_nor_interface():
    x = wrap(_FakeGpuArray(), tnp.device("gpu:0"), cls=tnp.ndarray)
    assert isinstance(x, tnp.ndarray) and str(x.device) == "gpu:0"
    if HAS_BUFFER:
        with pytest.raises(TypeError, match="gpu:0"):
            memoryview(x)
    with pytest.raises(AttributeError, match="gpu:0"):
        x.__array_interface__
    assert not hasattr(x, "__array_interface__")


def test_fake_second_cpu_stands_for_memory_elsewhere():
    # cpu:1 holds a NumPy array but stands for another device: no buffer, no interface, and
    # numpy.asarray goes through __array__ (where tests of device code watch for host copies)
    x = tnp.arange(3.0).to_device("cpu:1")
    if HAS_BUFFER:
        with pytest.raises(TypeError, match="cpu:1"):
            memoryview(x)
    assert not hasattr(x, "__array_interface__")
    seen = []
    original = tnp.ndarray.__array__

    def watched(self, *args, **kwargs):
        seen.append(self)
        return original(self, *args, **kwargs)
    tnp.ndarray.__array__ = watched
    try:
        assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]
        assert np.asarray(tnp.arange(2.0)).tolist() == [0.0, 1.0]
    finally:
        tnp.ndarray.__array__ = original
    assert len(seen) == 1 and seen[0] is x   # the cpu array: through its buffer or interface


# ---------------------------------------------------------------------------- __array_interface__
class _Consumer:
    """Code that reads __array_interface__ (as PIL.Image.fromarray does): NumPy reads it back."""

    def __init__(self, iface):
        self.__array_interface__ = iface


@pytest.mark.parametrize("a", BUFFER_CASES + [np.array(["2020-01-01"], dtype="M8[D]")],
                         ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_array_interface_is_numpys(a):
    x = tnp.asarray(a)
    assert x.__array_interface__ == a.__array_interface__
    back = np.asarray(_Consumer(x.__array_interface__))
    assert back.dtype == a.dtype and np.shares_memory(back, a)
    np.testing.assert_array_equal(back, a)


def test_array_interface_absent_where_numpy_would_misread_it():
    for a in (np.arange(3).astype(ml_dtypes.bfloat16), np.array(["a"], dtype=np.dtypes.StringDType()),
              np.zeros(2, [("a", "i1"), ("b", "f8")])):
        assert not hasattr(tnp.asarray(a), "__array_interface__")
    assert not hasattr(tnp.arange(3.0).sum(), "__array_interface__")


def test_resize_refuses_while_numpy_holds_the_memory():
    # numpy.asarray(x) through x's interface (datetimes have no buffer) holds the tnp array, not
    # its NumPy array: resizing then (which gives the tnp array new memory) would leave that
    # NumPy array reading freed memory
    x = tnp.asarray(np.array(["2020-01-01", "2021-01-01"], dtype="M8[D]"))
    view = np.asarray(x)
    assert view.base is x
    with pytest.raises(ValueError, match="cannot resize"):
        x.resize(4)
    y = tnp.arange(4.0)
    through_asarray = np.asarray(y)       # the buffer (C base) or the interface
    with pytest.raises(ValueError, match="cannot resize"):
        y.resize(8)
    assert through_asarray.tolist() == [0.0, 1.0, 2.0, 3.0] and view.shape == (2,)
    z = tnp.arange(4.0)
    z.resize(6)                           # one holder: resized in place, as NumPy does
    assert z.tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 0.0]
    for xp in (np, tnp):                  # a second reference: NumPy refuses, so does tnp
        w = xp.arange(4.0)
        alias = w
        with pytest.raises(ValueError, match="cannot resize"):
            w.resize(6)
        w.resize(6, refcheck=False)
        assert alias.shape == (6,)


# ---------------------------------------------------------------------------- annotations
def test_class_getitem_as_numpy():
    for args in (float, (tuple[int], np.dtype[np.float64])):
        g, ref = tnp.ndarray[args], np.ndarray[args]
        assert isinstance(g, types.GenericAlias) and g.__origin__ is tnp.ndarray
        assert g.__args__ == ref.__args__
    with pytest.raises(TypeError, match="Too many arguments for tnp.ndarray"):
        tnp.ndarray[int, int, int]
    with pytest.raises(TypeError, match="Too many arguments"):
        np.ndarray[int, int, int]

    def f(x: tnp.ndarray[tuple[int], np.dtype[np.float64]]) -> tnp.ndarray[float]:
        return x
    assert f.__annotations__["return"] == tnp.ndarray[float]


# ---------------------------------------------------------------------------- ** as NumPy's operator
_rng = np.random.default_rng(17)
Z = _rng.standard_normal(4000) * 3 + 1j * _rng.standard_normal(4000) * 3


def _bits(a):
    return np.asarray(a).view(np.uint8)


@pytest.mark.parametrize("e", [2, -1, 0.5, 3, -2, 0, 1, 2.0, -1.0, -0.5, 1.5, np.float64(0.5)],
                         ids=repr)
@pytest.mark.parametrize("dt", [np.complex128, np.complex64, np.float64, np.float32])
def test_power_operator_bits_are_numpys(e, dt):
    a = Z.astype(dt) if dt in (np.complex128, np.complex64) else np.abs(Z).astype(dt)
    with np.errstate(all="ignore"):
        ref = a ** e
        got = tnp.asarray(a) ** e
        assert np.asarray(got).dtype == ref.dtype
        assert np.array_equal(_bits(got), _bits(ref))
        b, y = a.copy(), tnp.asarray(a.copy())
        b **= e
        y **= e
        assert np.array_equal(_bits(y), _bits(b))


def test_the_special_cases_differ_from_the_power_ufunc():
    # the test above could not fail if NumPy's operator were its power ufunc: it is not
    with np.errstate(all="ignore"):
        assert not np.array_equal(_bits(Z ** 2), _bits(np.power(Z, 2)))
        assert np.array_equal(_bits(tnp.power(tnp.asarray(Z), 2)), _bits(np.power(Z, 2)))


def test_power_operator_warnings_name_numpys_ufunc():
    def messages(xp):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            xp.array([1e200]) ** 2
            xp.array([0.0]) ** -1
            xp.array([-1.0]) ** 0.5
        return [(x.category, str(x.message)) for x in w]
    ref = messages(np)
    assert ref == messages(tnp)
    assert "overflow encountered in square" in [m for _, m in ref]
