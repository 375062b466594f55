"""Differential tests of tnp's statistics against NumPy: order statistics, averages and
variances, correlation and covariance, histograms. Each body runs with ``xp=numpy`` and
``xp=tnp``; values, dtype, shape and array-vs-scalar kind must match exactly (tnp computes with
NumPy on the CPU), or both must raise the same exception type. Reductions to 0-d return
``tnp.Scalar`` values that print as NumPy's scalars.
"""
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
from tnp import _statistics
from tnp.testing import assert_same, both
from tnp.testing.differential import both_labelled as _both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = [(7,), (3, 4), (2, 3, 4)]
AXES = [None, 0, -1, (0, 1)]


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _data(dtype, shape, key="", lo=-10, hi=10):
    rng = _rng(dtype, shape, key)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(max(lo, 0) if dt.kind == "u" else lo, hi, size=shape).astype(dt)
    x = rng.uniform(lo, hi, size=shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(lo, hi, size=shape)
    return x.astype(dt)


def _with_nans(a, every=3):
    a = a.astype(a.dtype, copy=True)
    a.flat[::every] = np.nan
    return a


def _arr(xp, x):
    return xp.array(x, copy=True)


def test_statistics_table_is_all_tested_here():
    tested = set(MOMENTS) | set(EXTREMA) | {"ptp", "median", "nanmedian", "percentile",
                                            "nanpercentile", "quantile", "nanquantile",
                                            "average", "corrcoef", "cov", "correlate",
                                            "histogram", "histogram2d", "histogramdd",
                                            "histogram_bin_edges", "bincount", "digitize"}
    assert set(_statistics.FUNCTIONS) == tested


# ------------------------------------------------------------------------------- moments
MOMENTS = ["mean", "std", "var", "nanmean", "nanstd", "nanvar"]


@pytest.mark.parametrize("name", MOMENTS)
@pytest.mark.parametrize("dtype", ["int16", "float16", "float32", "float64", "complex64", "bool"])
def test_mean_std_var(name, dtype):
    """Axes and keepdims; int and bool inputs average in float64, float16/float32 keep their
    dtype; ``nan*`` skip NaNs; reductions to 0-d are scalars."""
    for shape in SHAPES:
        a = _data(dtype, shape, name)
        if name.startswith("nan") and a.dtype.kind in "fc":
            a = _with_nans(a)
        for axis in AXES:
            for keepdims in (False, True):
                _both((shape, axis, keepdims), lambda xp: getattr(xp, name)(
                    _arr(xp, a), axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", ["std", "var", "nanstd", "nanvar"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_std_var_ddof_dtype_correction_mean(name, dtype):
    a = _data(dtype, (4, 5), name)
    for ddof in (0, 1, 4.5):
        _both(ddof, lambda xp: getattr(xp, name)(_arr(xp, a), ddof=ddof))
        _both(ddof, lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, ddof=ddof))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=0, dtype="float64"))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), correction=1))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), ddof=1, correction=1))  # ValueError
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, keepdims=True,
                                      mean=xp.mean(_arr(xp, a), axis=1, keepdims=True)))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), where=_arr(xp, a > 0)))


@pytest.mark.parametrize("name", ["mean", "nanmean"])
def test_mean_dtype_where_out(name):
    a = _data("int8", (3, 5), name)
    both(lambda xp: getattr(xp, name)(_arr(xp, a), dtype="float32"))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=0, dtype=xp.float16))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), where=_arr(xp, a > 0)))

    def with_out(xp):
        o = xp.zeros(3)
        assert getattr(xp, name)(_arr(xp, a), axis=1, out=o) is o
        return o
    both(with_out)


def test_moments_of_empty_and_all_nan_inputs():
    """NaN (with a RuntimeWarning) where NumPy gives NaN; the same shapes and dtypes."""
    for name in MOMENTS:
        _both(name, lambda xp: getattr(xp, name)(xp.zeros((0, 3)), axis=0))
        _both(name, lambda xp: getattr(xp, name)(xp.zeros(0)))
    for name in ("nanmean", "nanstd", "nanvar"):
        _both(name, lambda xp: getattr(xp, name)(xp.full((2, 3), xp.nan), axis=1))


def test_moments_refuse_what_numpy_refuses():
    both(lambda xp: xp.mean(xp.ones((2, 3)), axis=2))
    both(lambda xp: xp.mean(xp.asarray(["a", "b"])))
    both(lambda xp: xp.std(xp.ones(3), dtype="int8"))
    both(lambda xp: xp.var(xp.ones(3), axis=(0, 0)))


@given(a=hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64]),
                    hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.integers(-1000, 1000)), data=st.data())
def test_moments_over_any_axis(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    ddof = data.draw(st.integers(0, 2))
    for name in ("mean", "std", "var"):
        kw = {"ddof": ddof} if name != "mean" else {}
        _both(name, lambda xp: getattr(xp, name)(_arr(xp, a), axis=axis, **kw))


def test_reductions_to_0d_are_scalars_printing_like_numpy():
    """``repr(tnp.mean(x))`` is ``np.float64(...)``, exactly NumPy's text, for each dtype."""
    for dtype in ("int8", "float16", "float32", "float64", "complex64", "bool"):
        a = _data(dtype, (3, 4), "repr")
        for name in ("mean", "std", "var", "max", "min", "amax", "ptp", "median", "average",
                     "nanmean", "nanmax"):
            if (dtype == "bool" and name in ("ptp",)) or (dtype == "complex64" and name in ("nanmax",)):
                continue
            expected = getattr(np, name)(a)
            got = getattr(tnp, name)(tnp.asarray(a))
            assert type(got) is tnp.Scalar, (dtype, name)
            assert repr(got) == repr(expected), (dtype, name)
            assert str(got) == str(expected), (dtype, name)
            assert_same(expected, got)


# ------------------------------------------------------------------------------- extrema
EXTREMA = ["min", "max", "amin", "amax", "nanmin", "nanmax"]


@pytest.mark.parametrize("name", EXTREMA)
@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "bool", "datetime64[s]"])
def test_min_max(name, dtype):
    """NaN propagates in min/max and is skipped by nanmin/nanmax; the dtype is kept."""
    for shape in SHAPES:
        a = _data(dtype, shape, name) if dtype[0] != "d" else \
            _data("int64", shape, name).astype(dtype)
        if a.dtype.kind == "f":
            a = _with_nans(a, every=5)
        for axis in AXES:
            for keepdims in (False, True):
                _both((shape, axis, keepdims), lambda xp: getattr(xp, name)(
                    _arr(xp, a), axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("name", EXTREMA)
def test_min_max_initial_where_out_and_empty(name):
    a = _data("float64", (3, 4), name)
    both(lambda xp: getattr(xp, name)(_arr(xp, a), initial=0.5))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, initial=100.0, where=_arr(xp, a > 0)))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), axis=1, where=_arr(xp, a > 0)))  # no initial
    both(lambda xp: getattr(xp, name)(xp.zeros((0, 3)), axis=0))  # empty: ValueError
    both(lambda xp: getattr(xp, name)(xp.zeros((0, 3)), axis=1))
    both(lambda xp: getattr(xp, name)([[3, 1], [2, 5]], axis=0))  # lists

    def with_out(xp):
        o = xp.zeros(4)
        assert getattr(xp, name)(_arr(xp, a), axis=0, out=o) is o
        return o
    both(with_out)


def test_min_max_methods():
    a = _data("int32", (3, 4), "method")
    both(lambda xp: _arr(xp, a).max())
    both(lambda xp: _arr(xp, a).min(axis=0, keepdims=True))
    both(lambda xp: _arr(xp, a).max(axis=(0, 1)))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "float64", "complex128"])
def test_ptp(dtype):
    """Peak to peak keeps the dtype (int8 wraps around, as in NumPy)."""
    for shape in SHAPES:
        a = _data(dtype, shape, "ptp", lo=-100, hi=100)
        for axis in AXES:
            _both((shape, axis), lambda xp: xp.ptp(_arr(xp, a), axis=axis))
        _both(shape, lambda xp: xp.ptp(_arr(xp, a), axis=0, keepdims=True))
    both(lambda xp: xp.ptp(xp.ones(3, dtype=bool)))  # TypeError: no boolean subtract


# ------------------------------------------------------------------------------- order statistics
QUANTILE_METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
                    "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
                    "hazen", "weibull", "median_unbiased", "normal_unbiased"]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_median(name, dtype):
    for shape in SHAPES:
        a = _data(dtype, shape, name)
        if name == "nanmedian" and a.dtype.kind == "f":
            a = _with_nans(a, every=4)
        for axis in AXES:
            for keepdims in (False, True):
                _both((shape, axis, keepdims), lambda xp: getattr(xp, name)(
                    _arr(xp, a), axis=axis, keepdims=keepdims))


def test_median_out_overwrite_input_and_nan():
    a = _data("float64", (4, 5), "median")

    def with_out(xp):
        o = xp.zeros(5)
        assert xp.median(_arr(xp, a), axis=0, out=o) is o
        return o
    both(with_out)
    both(lambda xp: xp.median(_arr(xp, a), overwrite_input=True))
    both(lambda xp: xp.median(_arr(xp, a), axis=0, overwrite_input=True))
    both(lambda xp: xp.median(xp.asarray([1.0, xp.nan, 3.0])))
    both(lambda xp: xp.nanmedian(xp.asarray([1.0, xp.nan, 3.0])))
    both(lambda xp: xp.median(xp.zeros(0)))


@pytest.mark.parametrize("name,args", [("median", ()), ("nanmedian", ()), ("percentile", (40,)),
                                       ("nanpercentile", (40,)), ("quantile", (0.4,)),
                                       ("nanquantile", (0.4,))])
def test_overwrite_input_may_reorder_the_input_and_counts_as_a_write(name, args):
    """With ``overwrite_input=True`` NumPy partially sorts its input in place: tnp leaves the
    input as NumPy does and increases its ``_version``; without it the input is untouched."""
    a = _with_nans(_data("float64", (9,), name), every=4)

    def body(xp, **kw):
        x = _arr(xp, a)
        return getattr(xp, name)(x, *args, **kw), x
    both(body, overwrite_input=True)
    both(body)
    x = tnp.asarray(a)
    v0 = x._version
    getattr(tnp, name)(x, *args)
    assert x._version == v0
    getattr(tnp, name)(x, *args, overwrite_input=True)
    assert x._version > v0


@pytest.mark.parametrize("name", ["percentile", "quantile", "nanpercentile", "nanquantile"])
@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_percentile_and_quantile_methods(name, method):
    """Every interpolation method, scalar and array ``q``, axes and keepdims, on int and float
    data (with NaNs for the nan* variants)."""
    scale = 100 if "percentile" in name else 1
    for dtype in ("int64", "float32", "float64"):
        for shape in SHAPES[:2]:
            a = _data(dtype, shape, name)
            if name.startswith("nan") and a.dtype.kind == "f":
                a = _with_nans(a, every=4)
            for q in (0.3 * scale, [0.0, 0.25 * scale, 0.5 * scale, scale]):
                for axis in (None, -1):
                    _both((dtype, shape, q, axis), lambda xp: getattr(xp, name)(
                        _arr(xp, a), q, axis=axis, method=method))
            _both((dtype, shape, "keepdims"), lambda xp: getattr(xp, name)(
                _arr(xp, a), _arr(xp, np.array([0.1, 0.9]) * scale), axis=0, keepdims=True,
                method=method))


@pytest.mark.parametrize("name", ["percentile", "quantile"])
def test_weighted_quantiles_and_bad_q(name):
    scale = 100 if name == "percentile" else 1
    a = _data("float64", (3, 6), name)
    w = _data("float64", (3, 6), name + "w", lo=0, hi=3)
    both(lambda xp: getattr(xp, name)(_arr(xp, a), 0.5 * scale, axis=1, weights=_arr(xp, w),
                                      method="inverted_cdf"))
    both(lambda xp: getattr(xp, name)(_arr(xp, a), 0.5 * scale, weights=_arr(xp, w)))  # linear: ValueError
    both(lambda xp: getattr(xp, name)(_arr(xp, a), 2 * scale))                        # q out of range
    both(lambda xp: getattr(xp, name)(_arr(xp, a), 0.5 * scale, method="bogus"))

    def with_out(xp):
        o = xp.zeros(6)
        assert getattr(xp, name)(_arr(xp, a), 0.5 * scale, axis=0, out=o) is o
        return o
    both(with_out)


# ------------------------------------------------------------------------------- average
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
def test_average(dtype):
    """Weights (full and 1-d along the axis), ``returned=True`` gives ``(average, sum of
    weights)``, keepdims."""
    for shape in SHAPES[:2]:
        a = _data(dtype, shape, "average")
        for axis in (None, 0, -1):
            _both((shape, axis), lambda xp: xp.average(_arr(xp, a), axis=axis))
            w = _data("float64", shape, "w", lo=0.1, hi=2)
            _both((shape, axis, "w"), lambda xp: xp.average(_arr(xp, a), axis=axis, weights=_arr(xp, w)))
            got = _both((shape, axis, "returned"), lambda xp: xp.average(
                _arr(xp, a), axis=axis, weights=_arr(xp, w), returned=True))
            assert isinstance(got, tuple) and len(got) == 2
            _both((shape, axis, "keepdims"), lambda xp: xp.average(_arr(xp, a), axis=axis, keepdims=True))
        w1 = _data("int64", shape[-1:], "w1", lo=1, hi=4)
        _both((shape, "1-d weights"), lambda xp: xp.average(_arr(xp, a), axis=-1, weights=w1.tolist()))


def test_average_refuses_what_numpy_refuses():
    both(lambda xp: xp.average(xp.ones(3), weights=xp.zeros(3)))          # ZeroDivisionError
    both(lambda xp: xp.average(xp.ones((2, 3)), weights=xp.ones(3)))      # axis needed: TypeError
    both(lambda xp: xp.average(xp.ones((2, 3)), axis=1, weights=xp.ones(2)))  # ValueError
    both(lambda xp: xp.average(xp.ones(3), returned=True))


# ------------------------------------------------------------------------------- correlation
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
def test_cov_and_corrcoef(dtype):
    for shape in [(3, 6), (2, 5)]:
        m = _data(dtype, shape, "cov")
        y = _data(dtype, shape, "cov-y")
        for name in ("cov", "corrcoef"):
            _both((shape, name), lambda xp: getattr(xp, name)(_arr(xp, m)))
            _both((shape, name, "y"), lambda xp: getattr(xp, name)(_arr(xp, m), _arr(xp, y)))
            _both((shape, name, "rowvar"), lambda xp: getattr(xp, name)(_arr(xp, m), rowvar=False))
            _both((shape, name, "dtype"), lambda xp: getattr(xp, name)(_arr(xp, m), dtype="float32"))
        _both((shape, "1-d"), lambda xp: xp.cov(_arr(xp, m[0])))  # 0-d result: an array
        fw = _data("int64", shape[-1:], "fw", lo=1, hi=4)
        aw = _data("float64", shape[-1:], "aw", lo=0.5, hi=2)
        for kw in ({"bias": True}, {"ddof": 2}, {"fweights": fw}, {"aweights": aw},
                   {"fweights": fw, "aweights": aw, "ddof": 0}):
            _both((shape, sorted(kw)), lambda xp: xp.cov(_arr(xp, m), **{
                k: _arr(xp, v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}))


def test_cov_refuses_what_numpy_refuses():
    both(lambda xp: xp.cov(xp.ones((2, 2, 2))))
    both(lambda xp: xp.cov(xp.ones((2, 4)), fweights=xp.asarray([1.5, 1, 1, 1])))
    both(lambda xp: xp.cov(xp.ones((2, 4)), aweights=-xp.ones(4)))
    both(lambda xp: xp.corrcoef(xp.ones((2, 3)), xp.ones((2, 4))))


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "complex128"])
@pytest.mark.parametrize("mode", ["valid", "same", "full"])
def test_correlate(dtype, mode):
    for na, nv in [(7, 3), (4, 4), (2, 5)]:
        a = _data(dtype, (na,), "corr-a")
        v = _data(dtype, (nv,), "corr-v")
        _both((na, nv), lambda xp: xp.correlate(_arr(xp, a), _arr(xp, v), mode=mode))
        _both((na, nv, "list"), lambda xp: xp.correlate(_arr(xp, a), v.tolist(), mode=mode))
    both(lambda xp: xp.correlate(xp.ones(3), xp.ones(0), mode=mode))  # ValueError


# ------------------------------------------------------------------------------- histograms
HIST_BINS = [10, 3, [-5.0, 0.0, 2.0, 10.0], "auto", "fd", "sturges", "sqrt"]


@pytest.mark.parametrize("name", ["histogram", "histogram_bin_edges"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_histogram(name, dtype):
    """Bin counts or specs (edges, estimator names), range, density, weights; ``histogram``
    returns ``(counts, edges)``."""
    for shape in [(50,), (6, 7)]:
        a = _data(dtype, shape, name)
        w = _data("float64", shape, name + "w", lo=0, hi=2)
        for bins in HIST_BINS:
            _both((shape, bins), lambda xp: getattr(xp, name)(_arr(xp, a), bins=bins))
        _both((shape, "range"), lambda xp: getattr(xp, name)(_arr(xp, a), bins=4, range=(-2, 3)))
        _both((shape, "weights"), lambda xp: getattr(xp, name)(_arr(xp, a), bins=5, weights=_arr(xp, w)))
        if name == "histogram":
            got = _both((shape, "density"), lambda xp: xp.histogram(_arr(xp, a), bins=6, density=True))
            assert isinstance(got, tuple)
            _both((shape, "tnp edges"), lambda xp: xp.histogram(
                _arr(xp, a), bins=_arr(xp, np.array([-10.0, -1.0, 1.0, 10.0]))))


def test_histogram_refuses_what_numpy_refuses():
    both(lambda xp: xp.histogram(xp.ones(3), bins=[3.0, 1.0]))      # decreasing edges
    both(lambda xp: xp.histogram(xp.ones(3), bins=0))
    both(lambda xp: xp.histogram(xp.ones(3), range=(2, 1)))
    both(lambda xp: xp.histogram(xp.asarray([1.0, xp.nan])))         # range of NaN
    both(lambda xp: xp.histogram(xp.ones(3), bins="bogus"))
    both(lambda xp: xp.histogram(xp.ones(3), weights=xp.ones(4)))


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_histogram2d(dtype):
    for n in (20, 7):
        x, y = _data(dtype, (n,), "x"), _data(dtype, (n,), "y")
        w = _data("float64", (n,), "w", lo=0, hi=2)
        for bins in (5, [3, 4], [[-10.0, 0.0, 10.0], 4]):
            _both((n, bins), lambda xp: xp.histogram2d(_arr(xp, x), _arr(xp, y), bins=bins))
        _both((n, "range"), lambda xp: xp.histogram2d(_arr(xp, x), _arr(xp, y), bins=3,
                                                      range=[[-5, 5], [0, 8]]))
        _both((n, "w"), lambda xp: xp.histogram2d(_arr(xp, x), _arr(xp, y), bins=3, density=True,
                                                  weights=_arr(xp, w)))
    both(lambda xp: xp.histogram2d(xp.ones(3), xp.ones(4)))


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_histogramdd(dtype):
    """``(counts, [edges per dimension])``: the edges come back as a list of tnp arrays."""
    for shape in [(30, 2), (12, 3)]:
        s = _data(dtype, shape, "dd")
        for bins in (4, [2] * shape[1], [np.array([-10.0, 0.0, 10.0])] * shape[1]):
            got = _both((shape, "bins"), lambda xp: xp.histogramdd(_arr(xp, s), bins=bins))
            assert isinstance(got[1], list)
        w = _data("float64", shape[:1], "dd-w", lo=0, hi=2)
        _both((shape, "w"), lambda xp: xp.histogramdd(_arr(xp, s), bins=3, weights=_arr(xp, w),
                                                     density=True))
        _both((shape, "range"), lambda xp: xp.histogramdd(_arr(xp, s), bins=3,
                                                         range=[(-5, 5)] * shape[1]))
    both(lambda xp: xp.histogramdd(xp.ones((4, 2)), bins=[2, 2, 2]))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "bool"])
def test_bincount(dtype):
    for n in (1, 9, 40):
        x = _data(dtype, (n,), "bincount", lo=0, hi=12)
        w = _data("float32", (n,), "bincount-w", lo=-1, hi=1)
        _both(n, lambda xp: xp.bincount(_arr(xp, x)))
        _both((n, "w"), lambda xp: xp.bincount(_arr(xp, x), weights=_arr(xp, w)))
        _both((n, "minlength"), lambda xp: xp.bincount(_arr(xp, x), minlength=20))
    both(lambda xp: xp.bincount(xp.asarray([], dtype="int64")))


def test_bincount_refuses_what_numpy_refuses():
    both(lambda xp: xp.bincount(xp.asarray([1, -1])))          # ValueError: negative
    both(lambda xp: xp.bincount(xp.asarray([1.5, 2.0])))       # TypeError: not integers
    both(lambda xp: xp.bincount(xp.ones((2, 2), dtype=int)))   # ValueError: not 1-d
    both(lambda xp: xp.bincount(xp.asarray([1, 2]), minlength=-1))
    both(lambda xp: xp.bincount(xp.asarray([1, 2]), weights=xp.ones(3)))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("right", [False, True])
def test_digitize(dtype, right):
    """Increasing and decreasing bins, values on the edges, 0-d input (a scalar)."""
    for shape in [(), (9,), (3, 4)]:
        x = _data(dtype, shape, "digitize", lo=-6, hi=6)
        for bins in ([-4.0, -1.0, 0.0, 2.0, 5.0], [5, 2, 0, -1, -4], [0.0]):
            _both((shape, bins), lambda xp: xp.digitize(_arr(xp, x), bins, right=right))
            _both((shape, bins, "tnp"), lambda xp: xp.digitize(
                _arr(xp, x), _arr(xp, np.array(bins)), right=right))
    both(lambda xp: xp.digitize(xp.ones(3), [1.0, 3.0, 2.0]))   # not monotonic: ValueError
    both(lambda xp: xp.digitize(xp.ones(3), xp.ones((2, 2))))   # bins not 1-d
    both(lambda xp: xp.digitize(xp.asarray([1j]), [1.0, 2.0]))  # complex: TypeError
