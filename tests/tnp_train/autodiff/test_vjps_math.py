"""VJP rules of the "math" section added for the remaining functions (angle ... unwrap), the
ufunc methods the tape sees for reductions/accumulations/outer products, and the corrected
``where=`` / complex rules: finite-difference checks to second order (``check_grads``) over
several shapes and axes, and comparisons with hand-derived NumPy formulas."""
import sys

import numpy as np
import pytest

import tnp
from tnp_train.autodiff import GradientTape, check_grads, registry
from tnp_train.autodiff.check import grad_of


def arr(shape, seed=0, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    return tnp.asarray(rng.standard_normal(shape) * scale + shift)


def sq(y):
    return y * y


def jacobian_T_dot(np_f, x, g):
    """J^T g for a function linear in x, its Jacobian read off NumPy on unit vectors."""
    xh = np.asarray(x)
    cols = []
    for k in range(xh.size):
        e = np.zeros(xh.size)
        e[k] = 1.0
        cols.append(np.ravel(np_f(e.reshape(xh.shape))))
    J = np.stack(cols, axis=1)
    return (J.T @ np.ravel(np.asarray(g))).reshape(xh.shape)


# ---------------------------------------------------------------------------- coverage
MATH_NAMES = ["angle", "convolve", "cross", "diff", "ediff1d", "gradient", "i0", "imag", "interp",
              "nan_to_num", "nancumprod", "nancumsum", "real", "real_if_close", "sinc",
              "trapezoid", "unwrap"]
UFUNC_METHODS = ["add.reduce", "add.accumulate", "multiply.reduce", "multiply.accumulate",
                 "maximum.reduce", "minimum.reduce", "fmax.reduce", "fmin.reduce",
                 "logaddexp.reduce", "logaddexp2.reduce", "add.outer", "subtract.outer",
                 "multiply.outer", "divide.outer"]


@pytest.mark.parametrize("name", MATH_NAMES + UFUNC_METHODS)
def test_rule_is_registered(name):
    assert registry.get_rule(name) is not None
    if name in tnp.REGISTRY:
        assert registry.get_rule(name).section == "math"


def test_the_math_section_has_no_missing_name_of_this_module():
    assert [n for n in registry.missing() if n in MATH_NAMES] == []


# ---------------------------------------------------------------------------- complex parts
@pytest.mark.parametrize("shape", [(4,), (2, 3)])
@pytest.mark.parametrize("deg", [False, True])
def test_angle(shape, deg):
    x, y = arr(shape, 1), arr(shape, 2)
    check_grads(lambda x, y: tnp.angle(x + 1j * y, deg=deg), order=2)(x, y)
    # d angle(x + iy)/dx = -y / r^2 (hand-derived)
    gx = grad_of(lambda x, y: tnp.angle(x + 1j * y), x, y)
    xh, yh = np.asarray(x), np.asarray(y)
    np.testing.assert_allclose(np.asarray(gx), -yh / (xh * xh + yh * yh), rtol=1e-12)


def test_angle_of_real_input_has_zero_gradient():
    x = arr((5,), 3)
    check_grads(lambda x: tnp.angle(x * 2.0), order=2)(x)
    g = grad_of(tnp.angle, x)
    assert np.all(np.asarray(g) == 0)


@pytest.mark.parametrize("shape", [(3,), (2, 4)])
@pytest.mark.parametrize("part", ["real", "imag", "real_if_close", "attr_real", "attr_imag"])
def test_real_imag(shape, part):
    fn = {"real": tnp.real, "imag": tnp.imag, "real_if_close": tnp.real_if_close,
          "attr_real": lambda z: z.real, "attr_imag": lambda z: z.imag}[part]
    x, y = arr(shape, 4), arr(shape, 5)
    check_grads(lambda x, y: fn(sq(x + 1j * y)) if part != "real_if_close"
                else tnp.real(fn(sq(x + 1j * y))), order=2)(x, y)


def test_real_if_close_of_nearly_real_input():
    x, y = arr((4,), 6), arr((4,), 7)
    f = lambda x, y: tnp.real_if_close(x * x + 1e-20j * y)   # noqa: E731
    assert not np.iscomplexobj(np.asarray(f(x, y)))
    check_grads(f, order=2)(x, y)


def test_imag_of_real_input_has_zero_gradient():
    x = arr((3,), 8)
    assert np.all(np.asarray(grad_of(tnp.imag, x)) == 0)
    check_grads(lambda x: tnp.imag(x) + x, order=2)(x)


def test_absolute_of_complex_input():
    x, y = arr((3, 2), 9), arr((3, 2), 10)
    check_grads(lambda x, y: tnp.absolute(x + 1j * y), order=2)(x, y)
    gx = grad_of(lambda x, y: tnp.absolute(x + 1j * y), x, y)
    xh, yh = np.asarray(x), np.asarray(y)
    np.testing.assert_allclose(np.asarray(gx), xh / np.hypot(xh, yh), rtol=1e-12)


# ---------------------------------------------------------------------------- special functions
@pytest.mark.parametrize("x", [arr((3, 4), 11),
                               tnp.asarray([0.0, 1e-4, -3e-3, 0.0099, 0.0101, -1.5])])
def test_sinc(x):
    check_grads(tnp.sinc, order=2)(x)
    xh = np.asarray(x)
    with np.errstate(all="ignore"):
        want = np.where(xh == 0, 0.0, (np.cos(np.pi * xh) - np.sinc(xh)) / np.where(xh == 0, 1, xh))
    np.testing.assert_allclose(np.asarray(grad_of(tnp.sinc, x)), want, rtol=1e-7, atol=1e-12)


def test_sinc_second_derivative_at_zero():
    x = tnp.asarray([0.0])
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(tnp.sinc(x))
        g = inner.gradient(y, x)
        s = tnp.sum(g)
    h = outer.gradient(s, x)
    np.testing.assert_allclose(np.asarray(h), [-np.pi ** 2 / 3], rtol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_i0(shape):
    pytest.importorskip("scipy")
    from scipy.special import i1

    x = arr(shape, 12, scale=2.0)
    check_grads(tnp.i0, order=2)(x)
    np.testing.assert_allclose(np.asarray(grad_of(tnp.i0, x)), i1(np.asarray(x)), rtol=1e-12)
    check_grads(tnp.i0, order=2)(tnp.asarray([0.0, 0.5]))


def test_i0_gradient_without_scipy_raises_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    x = arr((3,), 13)
    with pytest.raises(NotImplementedError, match="scipy"):
        grad_of(tnp.i0, x)


# ---------------------------------------------------------------------------- nan handling, phase
def with_nans(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    x.ravel()[::3] = np.nan
    return tnp.asarray(x)


@pytest.mark.parametrize("shape", [(7,), (3, 4)])
def test_nan_to_num(shape):
    x = with_nans(shape, 14)
    xi = np.asarray(x).copy()
    xi.ravel()[1::5] = np.inf
    xi = tnp.asarray(xi)
    check_grads(lambda x: tnp.nan_to_num(sq(x)), order=2)(arr(shape, 15))
    g = grad_of(lambda x: tnp.nan_to_num(x, posinf=7.0), xi)
    np.testing.assert_array_equal(np.asarray(g), np.isfinite(np.asarray(xi)).astype(float))


def test_nan_to_num_fill_values_get_gradients():
    x = tnp.asarray([np.nan, 1.0, np.inf, -np.inf, np.nan])
    v = tnp.asarray(2.0)
    for kw, count in (("nan", 2), ("posinf", 1), ("neginf", 1)):
        g = grad_of(lambda v: tnp.nan_to_num(x, **{kw: v * 3.0}), v)
        assert float(g) == 3.0 * count


def test_nan_to_num_of_complex_input():
    x, y = arr((4,), 16), arr((4,), 17)
    check_grads(lambda x, y: tnp.real(tnp.nan_to_num(sq(x + 1j * y)) * (1 - 2j)), order=2)(x, y)


@pytest.mark.parametrize("shape,axis", [((7,), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 2), None)])
@pytest.mark.parametrize("fn", ["nancumsum", "nancumprod"])
def test_nancum(fn, shape, axis):
    f = getattr(tnp, fn)
    check_grads(lambda x: f(x, axis=axis), order=2)(with_nans(shape, 18))
    check_grads(lambda x: sq(f(x, axis=axis)), order=2)(arr(shape, 19))


def test_nancumsum_hand_derived():
    x = with_nans((5,), 20)
    u = tnp.asarray([1.0, 2.0, 3.0, 4.0, 5.0])
    g = grad_of(lambda x: tnp.nancumsum(x), x, u=u)
    want = np.cumsum(np.asarray(u)[::-1])[::-1] * ~np.isnan(np.asarray(x))
    np.testing.assert_allclose(np.asarray(g), want)


@pytest.mark.parametrize("shape,axis", [((9,), -1), ((3, 8), 0), ((3, 8), 1)])
def test_unwrap(shape, axis):
    x = arr(shape, 21, scale=3.0)      # jumps of more than pi: unwrap adds multiples of 2 pi
    assert not np.allclose(np.unwrap(np.asarray(x), axis=axis), np.asarray(x))
    check_grads(lambda x: sq(tnp.unwrap(x, axis=axis)), order=2)(x)


# ---------------------------------------------------------------------------- differences
@pytest.mark.parametrize("shape,axis", [((6,), -1), ((4, 5), 0), ((4, 5), -1), ((3, 4, 5), 1)])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_diff(shape, axis, n):
    check_grads(lambda x: sq(tnp.diff(x, n=n, axis=axis)), order=2)(arr(shape, 22))


@pytest.mark.parametrize("n", [1, 2])
def test_diff_prepend_append(n):
    x, p, q = arr((3, 4), 23), arr((3, 2), 24), arr((), 25)
    f = lambda x, p, q: sq(tnp.diff(x, n=n, axis=1, prepend=p, append=q))   # noqa: E731
    check_grads(f, order=2)(x, p, q)
    check_grads(lambda x, p: sq(tnp.diff(x, axis=0, prepend=p)), order=2)(x, arr((1, 4), 26))


def test_diff_hand_derived():
    x = arr((6,), 27)
    u = arr((4,), 28)
    g = grad_of(lambda x: tnp.diff(x, n=2), x, u=u)
    D = np.diff(np.eye(6), n=2, axis=0)       # the matrix of the second difference
    np.testing.assert_allclose(np.asarray(g), D.T @ np.asarray(u), rtol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (1,)])
def test_ediff1d(shape):
    x, b, e = arr(shape, 29), arr((2,), 30), arr((1, 2), 31)
    check_grads(lambda x: sq(tnp.ediff1d(x)) if x.size > 1 else tnp.ediff1d(x, to_end=x),
                order=2)(x)
    check_grads(lambda x, b, e: sq(tnp.ediff1d(x, to_end=e, to_begin=b)), order=2)(x, b, e)
    check_grads(lambda x, b: sq(tnp.ediff1d(x, None, b)), order=2)(x, b)


GRADIENT_CASES = [
    ((7,), (), {}),
    ((7,), (0.5,), {"edge_order": 2}),
    ((4, 5), (), {}),
    ((4, 5), (2.0,), {"axis": -1}),
    ((4, 5), (np.array([0.0, 0.4, 1.0, 1.1]), 0.3), {"edge_order": 2}),
    ((3, 4, 5), (), {"axis": (0, 2)}),
    ((3, 4, 5), (np.array([0.0, 1.0, 2.5, 2.75, 4.0]),), {"axis": 2, "edge_order": 1}),
]


def _sum_sq(out):
    outs = out if isinstance(out, (list, tuple)) else [out]
    total = None
    for k, o in enumerate(outs):
        t = tnp.sum(sq(o)) * (k + 1)
        total = t if total is None else total + t
    return total


@pytest.mark.parametrize("shape,spacing,kw", GRADIENT_CASES)
def test_gradient(shape, spacing, kw):
    x = arr(shape, 32)
    check_grads(lambda x: _sum_sq(tnp.gradient(x, *spacing, **kw)), order=2)(x)
    check_grads(lambda x: tnp.gradient(x, *spacing, **kw), order=2)(x)


@pytest.mark.parametrize("spacing,edge_order", [(1.0, 1), (0.5, 2),
                                                (np.array([0.0, 0.3, 1.0, 1.2, 2.0, 3.5]), 2),
                                                (np.array([0.0, 0.3, 1.0, 1.2, 2.0, 3.5]), 1)])
def test_gradient_hand_derived(spacing, edge_order):
    x = arr((6,), 33)
    u = arr((6,), 34)
    g = grad_of(lambda x: tnp.gradient(x, spacing, edge_order=edge_order), x, u=u)
    M = np.gradient(np.eye(6), spacing, axis=0, edge_order=edge_order)   # column j: gradient of e_j
    np.testing.assert_allclose(np.asarray(g), M.T @ np.asarray(u), rtol=1e-12, atol=1e-12)


CROSS_CASES = [((4, 3), (4, 3), {}), ((3,), (5, 3), {}), ((4, 2), (3,), {}), ((3,), (4, 2), {}),
               ((4, 2), (2,), {}), ((3, 5), (2, 3, 5), {"axisa": 0, "axisb": 1, "axisc": 0}),
               ((2, 5), (2, 3, 5), {"axisa": 0, "axisb": 1, "axisc": -1}),
               ((3, 4), (3, 4), {"axis": 0})]


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("sa,sb,kw", CROSS_CASES)
def test_cross(sa, sb, kw):
    check_grads(lambda a, b: sq(tnp.cross(a, b, **kw)), order=2)(arr(sa, 35), arr(sb, 36))


def test_cross_hand_derived():
    a, b, u = arr((4, 3), 37), arr((4, 3), 38), arr((4, 3), 39)
    ga = grad_of(lambda a: tnp.cross(a, b), a, u=u)
    gb = grad_of(lambda b: tnp.cross(a, b), b, u=u)
    np.testing.assert_allclose(np.asarray(ga), np.cross(np.asarray(b), np.asarray(u)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gb), np.cross(np.asarray(u), np.asarray(a)), rtol=1e-12)


# ---------------------------------------------------------------------------- integration
@pytest.mark.parametrize("shape,axis", [((6,), -1), ((5, 3), 0), ((3, 5), -1), ((2, 4, 3), 1)])
def test_trapezoid(shape, axis):
    y = arr(shape, 40)
    n = shape[axis]
    check_grads(lambda y: sq(tnp.trapezoid(sq(y), axis=axis)), order=2)(y)
    x1 = tnp.asarray(np.cumsum(np.random.default_rng(41).random(n) + 0.1))
    check_grads(lambda y, x: sq(tnp.trapezoid(sq(y), x, axis=axis)), order=2)(y, x1)
    xn = arr(shape, 42)
    check_grads(lambda y, x: tnp.trapezoid(sq(y), x=x, axis=axis), order=2)(y, xn)
    check_grads(lambda y, d: tnp.trapezoid(sq(y), dx=d * d, axis=axis), order=2)(y, arr((), 43))


def test_trapezoid_hand_derived():
    y = arr((5,), 44)
    x = tnp.asarray([0.0, 0.5, 1.5, 1.75, 3.0])
    g = grad_of(lambda y: tnp.trapezoid(y, x), y)
    d = np.diff(np.asarray(x))
    np.testing.assert_allclose(np.asarray(g), (np.r_[0, d] + np.r_[d, 0]) / 2, rtol=1e-12)
    gx = grad_of(lambda x: tnp.trapezoid(y, x), x)
    yh = np.asarray(y)
    m = (yh[1:] + yh[:-1]) / 2
    np.testing.assert_allclose(np.asarray(gx), np.r_[0, m] - np.r_[m, 0], rtol=1e-12)


# ---------------------------------------------------------------------------- interpolation
XP = tnp.asarray([-1.0, 0.0, 0.5, 2.0, 2.2])


@pytest.mark.parametrize("shape", [(9,), (3, 4), ()])
@pytest.mark.parametrize("kw", [{}, {"period": 2.7}])
def test_interp(shape, kw):
    x, fp = arr(shape, 45, scale=1.5), arr((5,), 46)
    check_grads(lambda x, fp: sq(tnp.interp(x, XP, sq(fp), **kw)), order=2)(x, fp)


def test_interp_left_right():
    x = tnp.asarray(np.linspace(-2.5, 3.3, 11) + 0.01 * np.asarray(arr((11,), 47)))
    fp = arr((5,), 48)
    l, r = arr((), 49), arr((), 50)
    assert (np.asarray(x) < -1).any() and (np.asarray(x) > 2.2).any()
    check_grads(lambda x, fp, l, r: sq(tnp.interp(x, XP, fp, left=l, right=r * r)), order=2)(
        x, fp, l, r)
    check_grads(lambda x, fp: sq(tnp.interp(x, XP, fp)), order=2)(x, fp)


def test_interp_hand_derived():
    x = arr((11,), 51, scale=2.0)
    fp, u = arr((5,), 52), arr((11,), 53)
    g = grad_of(lambda fp: tnp.interp(x, XP, fp), fp, u=u)
    want = jacobian_T_dot(lambda f: np.interp(np.asarray(x), np.asarray(XP), f), fp, u)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-14)
    assert grad_of(lambda xp: tnp.interp(x, xp, fp), tnp.asarray(np.asarray(XP))) is None


# ---------------------------------------------------------------------------- convolution
@pytest.mark.parametrize("n,m", [(6, 3), (3, 6), (4, 4), (5, 1)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve(n, m, mode):
    a, v = arr((n,), 54), arr((m,), 55)
    check_grads(lambda a, v: sq(tnp.convolve(a, v, mode)), order=2)(a, v)
    u = arr(np.convolve(np.asarray(a), np.asarray(v), mode).shape, 56)
    g = grad_of(lambda a: tnp.convolve(a, v, mode), a, u=u)
    want = jacobian_T_dot(lambda e: np.convolve(e, np.asarray(v), mode), a, u)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------- ufunc methods
REDUCE_AXES = [((5,), {}), ((3, 4), {"axis": 1}), ((3, 4), {"axis": -1, "keepdims": True}),
               ((2, 3, 4), {"axis": (0, 2)}), ((2, 3, 4), {"axis": None})]


@pytest.mark.parametrize("shape,kw", REDUCE_AXES)
@pytest.mark.parametrize("name", ["add", "multiply", "logaddexp", "logaddexp2", "maximum",
                                  "minimum", "fmax", "fmin"])
def test_ufunc_reduce(name, shape, kw):
    u = getattr(tnp, name)
    x = arr(shape, 57)
    if name == "multiply" and kw.get("axis", 0) is None:
        x = x * 0.5 + 1.0
    check_grads(lambda x: sq(u.reduce(x, **kw)), order=2)(x)


def test_ufunc_reduce_where_and_initial():
    x = arr((3, 4), 58)
    w = tnp.asarray(np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 1, 0]], bool))
    for name in ("add", "multiply", "logaddexp"):
        check_grads(lambda x: sq(getattr(tnp, name).reduce(x, axis=1, where=w)), order=2)(x)
    check_grads(lambda x: sq(tnp.maximum.reduce(x, axis=1, where=w, initial=-5.0)), order=2)(x)
    check_grads(lambda x: sq(tnp.fmin.reduce(x, axis=0, where=w, initial=5.0)), order=2)(x)


def test_maximum_reduce_ties_share_the_gradient():
    x = tnp.asarray([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    g = grad_of(lambda x: tnp.maximum.reduce(x, axis=1), x)
    np.testing.assert_allclose(np.asarray(g), [[0, 0.5, 0.5, 0], [0.25] * 4])


def test_ufunc_reduce_nan_slices_give_no_exception():
    x = tnp.asarray([[np.nan, np.nan], [1.0, np.nan]])
    g = grad_of(lambda x: tnp.fmax.reduce(x, axis=1), x)
    np.testing.assert_array_equal(np.asarray(g), [[0, 0], [1, 0]])


@pytest.mark.parametrize("shape,axis", [((6,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 2), -1)])
@pytest.mark.parametrize("name", ["add", "multiply"])
def test_ufunc_accumulate(name, shape, axis):
    check_grads(lambda x: sq(getattr(tnp, name).accumulate(x, axis=axis)), order=2)(arr(shape, 59))


def test_add_accumulate_hand_derived():
    x, u = arr((5,), 60), arr((5,), 61)
    g = grad_of(lambda x: tnp.add.accumulate(x), x, u=u)
    np.testing.assert_allclose(np.asarray(g), np.triu(np.ones((5, 5))) @ np.asarray(u))


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (4,)), ((3,), (2, 2)), ((), (3,))])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_ufunc_outer(name, sa, sb):
    a, b = arr(sa, 62), arr(sb, 63, shift=3.0)
    check_grads(lambda a, b: sq(getattr(tnp, name).outer(a, b)), order=2)(a, b)


def test_multiply_outer_hand_derived():
    a, b, u = arr((3,), 64), arr((4,), 65), arr((3, 4), 66)
    ga = grad_of(lambda a: tnp.multiply.outer(a, b), a, u=u)
    np.testing.assert_allclose(np.asarray(ga), np.asarray(u) @ np.asarray(b), rtol=1e-12)


@pytest.mark.parametrize("call", [lambda x: tnp.logical_and.reduce(x > 0, axis=0),
                                  lambda x: tnp.logical_or.accumulate(x > 0, axis=1),
                                  lambda x: tnp.logical_xor.reduce(x > 0),
                                  lambda x: tnp.greater.outer(x[0], x[1]),
                                  lambda x: tnp.equal.outer(x[0], x[1]),
                                  lambda x: tnp.bitwise_or.reduce(tnp.astype(x > 0, tnp.int64))])
def test_declared_ufunc_methods_give_integer_or_boolean_output(call):
    x = arr((2, 3), 67)
    out = call(x)
    assert np.asarray(out).dtype.kind in "biu"


def test_floor_divide_reduce_is_piecewise_constant():
    x = arr((3, 4), 68, shift=3.0)
    y = np.asarray(tnp.floor_divide.reduce(x, axis=1))
    y2 = np.asarray(tnp.floor_divide.reduce(x + 1e-9 * arr((3, 4), 69), axis=1))
    np.testing.assert_array_equal(y, y2)
    for name in ("floor_divide.reduce", "logical_and.reduce", "greater.outer",
                 "bitwise_or.reduce"):
        assert registry.is_nondifferentiable(name)


# ---------------------------------------------------------------------------- corrected rules
MASK = tnp.asarray(np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 1, 1]], bool))


@pytest.mark.parametrize("fn", ["prod", "nanprod", "nansum", "sum"])
@pytest.mark.parametrize("kw", [{"axis": 1}, {"axis": None}, {"axis": 0, "keepdims": True}])
def test_reductions_with_where(fn, kw):
    x = arr((3, 4), 70, scale=0.5, shift=1.0)
    check_grads(lambda x: sq(getattr(tnp, fn)(x, where=MASK, **kw)), order=2)(x)
    g = grad_of(lambda x: getattr(tnp, fn)(x, where=MASK, **kw), x)
    assert np.all(np.asarray(g)[~np.asarray(MASK)] == 0)
