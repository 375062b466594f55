"""The rest of the main namespace against NumPy: constants and type tables used in computations,
``exceptions``/``dtypes``, floating-point error handling (``errstate``, ``seterr``,
``seterrcall``), buffer size, datetime helpers (``datetime_data``, ``busdaycalendar``), index
helpers (``s_``, ``index_exp``), conversions (``asanyarray``, ``asarray_chkfinite``,
``require``), ``row_stack`` and ``poly1d`` over tnp arrays, for two dtypes and two shapes where
the name takes arrays."""
import math

import numpy as np
import pytest

import tnp  # noqa: F401 (the namespace under test, through both())
from tnp.testing import both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = ["int16", "float32"]
SHAPES = [(4,), (2, 3)]


def _a(xp, dtype, shape):
    return (xp.arange(math.prod(shape)) - 1).reshape(shape).astype(dtype)


# ------------------------------------------------------------------------------ constants
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_constants_in_computations(dtype, shape):
    def body(xp):
        a = _a(xp, dtype, shape)
        return (a * xp.euler_gamma, a + xp.e, a * xp.pi, xp.where(a > 0, a, xp.inf),
                xp.where(a > 0, xp.nan, a), a[xp.newaxis].shape, (a > 0) == xp.True_,
                (a > 100) == xp.False_, xp.asarray(xp.True_), xp.asarray(xp.False_) | (a > 0))
    both(body)


def test_type_tables():
    def body(xp):
        return (xp.little_endian, xp.typecodes["AllFloat"], xp.typecodes["AllInteger"],
                sorted(k for k in xp.sctypeDict if isinstance(k, str))[:20],
                xp.sctypeDict["float32"] is xp.float32, xp.sctypeDict["i8"] is xp.int64,
                [t.__name__ for t in xp.ScalarType], float in xp.ScalarType,
                xp.True_ is xp.bool_(True), type(xp.False_).__name__)
    both(body)

    def by_typecode(xp):
        # arrays made for every floating typecode and every (portable) integer typecode
        return [xp.ones(2, dtype=c) for c in xp.typecodes["Float"] + xp.typecodes["Integer"]
                if c not in "gG"]
    both(by_typecode)
    both(lambda xp: [xp.zeros(1, dtype=xp.sctypeDict[k]) for k in ("uint8", "complex64", "bool")])
    both(lambda xp: xp.asarray([1, 2], dtype="<i4" if xp.little_endian else ">i4").dtype.isnative)


def test_exceptions_and_dtypes_modules():
    both(lambda xp: xp.sum(xp.ones((2, 2)), axis=3))                         # AxisError
    both(lambda xp: xp.exceptions.AxisError is np.exceptions.AxisError)

    def caught(xp):
        try:
            xp.moveaxis(xp.ones((2, 2)), 5, 0)
        except xp.exceptions.AxisError as e:
            return type(e).__name__, e.axis, e.ndim
    both(caught)

    def complex_warning(xp):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            xp.asarray([1 + 1j]).astype("float64")
        return [x.category is xp.exceptions.ComplexWarning for x in w]
    both(complex_warning)

    def dtype_classes(xp):
        return (type(xp.dtype("float32")) is xp.dtypes.Float32DType,
                type(xp.ones(2, dtype="int16").dtype) is xp.dtypes.Int16DType,
                isinstance(xp.arange(3).dtype, xp.dtypes.Int64DType),
                xp.dtypes.StringDType() == xp.dtypes.StringDType(),
                xp.asarray(["a", "bc"], dtype=xp.dtypes.StringDType()).tolist())
    both(dtype_classes)


# ------------------------------------------------------------------------------ errors, buffers
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_errstate_seterr(dtype):
    def body(xp, **kw):
        a = xp.asarray([1.0, 0.0, -1.0], dtype=dtype)
        with xp.errstate(**kw):
            return a / 0, xp.geterr()
    both(body, divide="ignore", invalid="ignore")
    both(body, divide="raise")                                      # FloatingPointError
    both(body, all="raise")

    def via_seterr(xp):
        old = xp.seterr(over="raise")
        try:
            return xp.asarray([3e38], dtype="float32") * 10
        finally:
            assert xp.seterr(**old)["over"] == "raise"
    both(via_seterr)
    both(lambda xp: xp.seterr(divide="sometimes"))                   # ValueError


def test_seterrcall_geterrcall():
    def body(xp):
        seen = []
        old = xp.seterrcall(lambda kind, flag: seen.append(kind))
        try:
            with xp.errstate(divide="call", invalid="call"):
                r = xp.asarray([1.0, 0.0]) / xp.asarray([0.0, 0.0])
                called = xp.geterrcall()
            return r, seen, callable(called), xp.geterr()["divide"]
        finally:
            xp.seterrcall(old)

    both(body)

    class Log:
        def __init__(self):
            self.msgs = []

        def write(self, msg):
            self.msgs.append(msg)

    def writer(xp):
        log = Log()
        old = xp.seterrcall(log)
        try:
            with xp.errstate(over="log"):
                xp.asarray([1e308]) * 10
            return log.msgs, xp.geterrcall() is log
        finally:
            xp.seterrcall(old)
    both(writer)
    both(lambda xp: xp.seterrcall(42))                                 # ValueError


def test_bufsize():
    def body(xp, size):
        old = xp.setbufsize(size)
        try:
            return xp.getbufsize(), (xp.arange(20000.0) * 2).sum()
        finally:
            xp.setbufsize(old)
    both(body, 16384)
    both(body, 8192 * 4)
    both(lambda xp: xp.setbufsize(-1))                                # ValueError
    both(lambda xp: xp.getbufsize())


# ------------------------------------------------------------------------------ datetime
def test_datetime_data_and_busdaycalendar():
    for unit in ("D", "ns", "25s", "2h"):
        both(lambda xp: xp.datetime_data(f"M8[{unit}]"))
        both(lambda xp: xp.datetime_data(xp.dtype(f"m8[{unit}]")))
    both(lambda xp: xp.datetime_data(xp.arange("2024-01", "2024-03", dtype="M8[M]").dtype))
    both(lambda xp: xp.datetime_data("f8"))                            # TypeError

    def cal(xp, weekmask, holidays):
        c = xp.busdaycalendar(weekmask=weekmask, holidays=holidays)
        days = xp.arange("2024-01-01", "2024-01-15", dtype="M8[D]")
        # busdaycalendar is NumPy's class: its attributes are NumPy arrays on both sides
        return (c.weekmask.tolist(), c.holidays.tolist(), xp.is_busday(days, busdaycal=c),
                xp.busday_count("2024-01-01", "2024-03-01", busdaycal=c),
                xp.busday_offset(days[:3], 2, roll="forward", busdaycal=c))
    both(cal, "1111100", ["2024-01-01", "2024-01-09"])
    both(cal, "Mon Wed Fri", [])
    both(cal, [1, 1, 1, 1, 1, 1, 0], ["2024-02-29"])
    both(lambda xp: xp.busdaycalendar(weekmask="0000000"))             # ValueError


# ------------------------------------------------------------------------------ index helpers
@pytest.mark.parametrize("shape", [(6,), (4, 5)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_s_and_index_exp(dtype, shape):
    def body(xp):
        a = _a(xp, dtype, shape)
        return (a[xp.s_[1:4]], a[xp.s_[::-2]], a[xp.index_exp[1:]], a[xp.s_[..., 0]],
                xp.s_[1:2, ::3], xp.index_exp[2], xp.s_[2], a[xp.index_exp[xp.newaxis, :2]])
    both(body)
    both(lambda xp: _a(xp, dtype, shape)[xp.s_[10]])                    # IndexError


# ------------------------------------------------------------------------------ conversions
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_asanyarray_chkfinite_require(dtype, shape):
    a = np.arange(math.prod(shape)).reshape(shape).astype(dtype)
    both(lambda xp: xp.asanyarray(xp.asarray(a)))
    both(lambda xp: xp.asanyarray(a.tolist(), dtype="float64"))
    both(lambda xp: xp.asanyarray(xp.asarray(a), order="F").flags.f_contiguous)
    both(lambda xp: xp.asarray_chkfinite(xp.asarray(a)))
    both(lambda xp: xp.asarray_chkfinite(a.tolist(), dtype="complex64"))
    both(lambda xp: xp.asarray_chkfinite(xp.asarray(a, dtype="float64") / 0))   # ValueError
    both(lambda xp: xp.asarray_chkfinite([1.0, np.nan]))                         # ValueError
    for req in (None, "C", ["F", "A"], ["W", "O", "E"], "F"):
        def body(xp):
            r = xp.require(xp.asarray(a)[..., ::-1], dtype="float64" if req == "F" else None,
                           requirements=req)
            return r, r.flags.c_contiguous, r.flags.f_contiguous, r.flags.writeable, r.flags.owndata
        both(body)
    both(lambda xp: xp.require(xp.asarray(a), requirements=["X"]))              # KeyError


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_stack(dtype):
    for shape in SHAPES:
        with pytest.warns(DeprecationWarning):
            both(lambda xp: xp.row_stack([_a(xp, dtype, shape), _a(xp, dtype, shape) * 2]))
    with pytest.warns(DeprecationWarning):
        both(lambda xp: xp.row_stack([xp.ones(2), xp.ones(3)]))                 # ValueError


# ------------------------------------------------------------------------------ poly1d
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_poly1d_over_tnp_arrays(dtype):
    c = np.array([2, -3, 1], dtype=dtype)
    for shape in SHAPES:
        def body(xp):
            p = xp.poly1d(xp.asarray(c))
            x = _a(xp, dtype, shape)
            q = p * p - xp.poly1d([1, 1])
            return (p(x), q(x), xp.polyval(q, x), p.deriv()(x), p.integ(k=1)(x), p.order,
                    str(p), p.roots.round(6).tolist(), (p ** 2).coeffs.tolist(), p(2.5))
        both(body)
    both(lambda xp: xp.poly1d([[1, 2], [3, 4]]))                                  # ValueError
    both(lambda xp: xp.poly1d(xp.asarray(c), variable="z").__str__())
    both(lambda xp: (xp.poly1d([1, 0, -1], r=True)).coeffs.tolist())
