"""Every VJP rule of the registry swept against central finite differences (float64), to second
order where the rule is itself made of tnp operations: the idea of HIPS autograd's
``unary_ufunc_check`` / ``binary_ufunc_check``, driven by the registry.

``test_every_rule_is_swept`` enumerates ``registry.VJPS``: a rule registered later fails it
until it has a generated case (the elementwise, reduction and axis tables below: scalar,
vector, matrix and broadcast shapes, ``axis``/``keepdims`` variants), a hand-written case
(``CASES``), or an exclusion with its reason (``EXCLUDED``). A new elementwise ufunc rule needs
none of these: ``_auto_elementwise`` sweeps it over the real line.

Inputs are drawn inside each function's domain and away from its kinks (``DOMAINS``). Complex
rules are checked as the other autodiff tests check them: the input is built from two real
arrays (``re + im * 1j``; ``1j * im`` of a 0-d ``im`` stays a tnp value too, see the test at
the end) and a complex output is read out through real, nonlinear functions of its parts, so the
tape's convention (autograd's: the cotangent of ``z`` is ``dL/dx - i dL/dy``) is checked
through both parts. Every output goes through a nonlinear read-out (``y * y + y``), so the
second-order check also differentiates each rule in its cotangent.
"""
import zlib

import numpy as np
import pytest

import tnp
from tnp_train.autodiff import GradientTape, check_grads, registry

# the tape casts the complex cotangent of a real input to its dtype with astype (which warns)
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")


# ============================================================================ domains
def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _signed(lo, hi):
    """Values of either sign with lo <= |x| <= hi (away from 0: kinks of abs, poles of 1/x)."""
    return lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(lo, hi, shape)


def _with_nan(rng, shape):
    x = rng.standard_normal(shape)
    if x.size >= 4:
        x.flat[1] = np.nan      # every slice of the shapes below keeps a number
    return x


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "pos": _uniform(0.5, 2.0),              # log, sqrt, power's base
    "unit": _uniform(-0.9, 0.9),            # arcsin, arccos, arctanh
    "gt1": _uniform(1.2, 3.0),              # arccosh
    "nonzero": _signed(0.5, 2.0),           # abs, cbrt, reciprocal, copysign
    "tan": _uniform(-1.2, 1.2),             # away from the poles at +-pi/2
    "small": _uniform(-0.5, 0.5),           # complex arcsin...: away from the branch cuts
    "base": _uniform(1.5, 3.0),             # logn's base, away from 1
    "dividend": _signed(2.3, 2.6),          # with "divisor": x / y inside (2, 2.6), no jump
    "divisor": _uniform(1.0, 1.1),
    "wide_unit": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * np.where(
        rng.random(shape) < 0.5, rng.uniform(0.1, 0.8, shape), rng.uniform(1.3, 2.0, shape)),
    "nan": _with_nan,
}
# complex inputs: (real part, imaginary part)
CDOMAINS = {
    "c": ("real", "real"),
    "right": ("pos", "real"),               # log, sqrt: away from the cut on the negative axis
    "cgt1": ("gt1", "small"),               # arccosh: away from the cut x < 1
    "csmall": ("small", "small"),           # arcsin, arccos, arctanh, arcsinh, tan
    "cnz": ("nonzero", "nonzero"),          # power: any quadrant, away from 0 and the cut
}

_SEED = [0]


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    """Draws inside a test depend on its name only, not on which tests ran before it (xdist
    splits and orders them differently from run to run)."""
    _SEED[0] = zlib.crc32(request.node.name.encode()) * 1000


def draw(domain, shape, seed=None):
    """A float64 tnp array of ``shape`` inside ``domain``."""
    if seed is None:
        _SEED[0] += 1
        seed = _SEED[0]
    return tnp.asarray(np.asarray(DOMAINS[domain](np.random.default_rng(seed), shape),
                                  dtype=np.float64))


def R(*shape, seed=None):
    return draw("real", shape, seed)


def P(*shape, seed=None):
    return draw("pos", shape, seed)


def readout(y):
    """Real, nonlinear functions of every floating output (integer outputs are left out)."""
    ys = y if isinstance(y, (tuple, list)) else [y]
    out = []
    for t in ys:
        if isinstance(t, (tuple, list)):
            out.extend(readout(t))
            continue
        if not isinstance(t, tnp.ndarray) or not np.issubdtype(t.dtype, np.inexact):
            continue
        if np.issubdtype(t.dtype, np.complexfloating):
            re, im = tnp.real(t), tnp.imag(t)
            out.extend([re * re + im, re * im])
        else:
            out.append(t * t + t)
    return out


def resolve(name):
    """The tnp callable of a registry name (``'sin'``, ``'linalg.inv'``, ``'add.reduce'``)."""
    obj = tnp
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def run_check(label, f, args, order):
    try:
        check_grads(f, order=order)(*args)
        compiled_equals_eager(f, args)
    except AssertionError as e:
        shapes = [tuple(a.shape) if hasattr(a, "shape") else a for a in args]
        raise AssertionError(f"{label}, input shapes {shapes}, order {order}: {e}") from None


COMPILED = {"compiled": 0, "eager": 0}     # how many sweep cases compiled (see the last test)


def compiled_equals_eager(f, args):
    """The gradient of ``sum(f(*args))`` computed by a compiled function (``tt.function``: the
    forward and the tape's backward traced into one program) equals the eager tape's: the
    same dtypes and shapes, values to 1e-10 relative (the fused kernels may round libm calls
    differently from NumPy's loops by an ulp). A function that cannot be compiled is counted
    and checked eagerly (``fit`` would run it eagerly too)."""
    import warnings

    import tnp_train as tt

    def grads(*a):
        with GradientTape() as tape:
            for x in a:
                tape.watch(x)
            loss = 0.0
            for y in f(*a):
                loss = loss + tnp.sum(y)
        return tape.gradient(loss, list(a))

    with np.errstate(all="ignore"):
        eager = grads(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn = tt.function(grads, autograph=False)
            compiled = fn(*args)
    COMPILED["compiled" if fn.experimental_get_tracing_count() else "eager"] += 1
    for c, e in zip(compiled, eager):
        assert (c is None) == (e is None), "compiled and eager disagree on a None gradient"
        if e is None:
            continue
        assert c.dtype == e.dtype and c.shape == e.shape, (c.dtype, c.shape, e.dtype, e.shape)
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-10, atol=1e-12,
                                   err_msg="compiled gradient")


# ============================================================================ elementwise
# name: (real domain or None, complex domain or None)
UNARY = {
    "absolute": ("nonzero", "c"), "fabs": ("nonzero", None),
    "negative": ("real", "c"), "positive": ("real", "c"), "conjugate": ("real", "c"),
    "reciprocal": ("nonzero", "c"), "square": ("real", "c"),
    "sqrt": ("pos", "right"), "cbrt": ("nonzero", None),
    "exp": ("real", "c"), "exp2": ("real", "c"), "expm1": ("real", "c"),
    "log": ("pos", "right"), "log2": ("pos", "right"), "log10": ("pos", "right"),
    "log1p": ("pos", "right"),
    "sin": ("real", "c"), "cos": ("real", "c"), "tan": ("tan", "csmall"),
    "arcsin": ("unit", "csmall"), "arccos": ("unit", "csmall"), "arctan": ("real", "csmall"),
    "sinh": ("real", "c"), "cosh": ("real", "c"), "tanh": ("real", "csmall"),
    "arcsinh": ("real", "csmall"), "arccosh": ("gt1", "cgt1"), "arctanh": ("unit", "csmall"),
    "degrees": ("real", None), "rad2deg": ("real", None),
    "radians": ("real", None), "deg2rad": ("real", None),
    "sinc": ("real", None), "i0": ("real", None),
    "angle": ("real", "c"), "real": ("real", "c"), "imag": ("real", "c"),
    "real_if_close": ("real", "c"), "nan_to_num": ("nan", "c"),
    "modf": ("nonzero", None), "frexp": ("nonzero", None),
    "sign": ("nonzero", "c"),    # zero on the reals; z / |z|, smooth, for complex z
    # emath: negative (or |x| > 1) real inputs give complex outputs, checked as well
    "emath.sqrt": ("nonzero", "right"), "emath.log": ("nonzero", "right"),
    "emath.log2": ("nonzero", "right"), "emath.log10": ("nonzero", "right"),
    "emath.arcsin": ("wide_unit", "csmall"), "emath.arccos": ("wide_unit", "csmall"),
    "emath.arctanh": ("wide_unit", "csmall"),
}
UNARY_SHAPES = [(), (3,), (2, 3)]

# name: (domain of x, domain of y, complex domain or None); a None rule gets a zero gradient,
# which finite differences check too (copysign's sign, ldexp's integer exponent)
BINARY = {
    "add": ("real", "real", "c"), "subtract": ("real", "real", "c"),
    "multiply": ("real", "real", "c"), "divide": ("real", "nonzero", "c"),
    "power": ("pos", "real", "cnz"), "float_power": ("pos", "real", "cnz"),
    "remainder": ("dividend", "divisor", None), "fmod": ("dividend", "divisor", None),
    "divmod": ("dividend", "divisor", None),
    "arctan2": ("nonzero", "nonzero", None), "hypot": ("nonzero", "nonzero", None),
    "logaddexp": ("real", "real", None), "logaddexp2": ("real", "real", None),
    "maximum": ("real", "real", None), "minimum": ("real", "real", None),
    "fmax": ("real", "real", None), "fmin": ("real", "real", None),
    "copysign": ("nonzero", "nonzero", None), "nextafter": ("real", "real", None),
    "emath.logn": ("base", "nonzero", None), "emath.power": ("nonzero", "real", None),
}
BINARY_SHAPES = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((2, 1), (3,)), ((), (2, 3)),
                 ((2, 3), ())]


def _auto_elementwise():
    """Elementwise ufuncs with a rule and no entry anywhere in this file: swept over the real
    line, so a new ufunc rule is checked without a test being written (one whose domain is
    smaller then fails here until UNARY or BINARY gives it its domain)."""
    from tnp_train.autodiff import vjps  # noqa: F401 - fills the registry

    listed = set(UNARY) | set(BINARY) | set(CASES) | set(EXCLUDED) | {"ldexp"}
    for name in sorted(registry.VJPS):
        info = tnp.REGISTRY.get(name)
        if name in listed or info is None or info.kind != "ufunc":
            continue
        nin = getattr(resolve(name), "nin", None)
        if nin == 1:
            UNARY[name] = ("real", None)
        elif nin == 2:
            BINARY[name] = ("real", "real", None)


def _complex_input(cdomain, shape):
    re_dom, im_dom = CDOMAINS[cdomain]
    return draw(re_dom, shape), draw(im_dom, shape)


def test_unary(name):
    fn = resolve(name)
    dom, cdom = UNARY[name]
    for shape in UNARY_SHAPES:
        if name == "i0" and shape == ():
            continue     # numpy.i0 of a 0-d array returns a 1-d one (a NumPy quirk)
        if name == "i0":
            pytest.importorskip("scipy.special", reason="i0's rule takes i1 from SciPy")
        x = draw(dom, shape)
        run_check(f"{name}(x) real", lambda x: readout(fn(x)), [x], 2)
        if cdom is not None:
            re, im = _complex_input(cdom, shape)
            run_check(f"{name}(z) complex", lambda re, im: readout(fn(re + im * 1j)), [re, im], 2)


def test_ldexp():
    for sx, sn in BINARY_SHAPES:
        n = tnp.asarray(np.random.default_rng(1).integers(-3, 4, sn))
        run_check("ldexp", lambda x: readout(tnp.ldexp(x, n)), [R(*sx)], 2)


def test_binary(name):
    fn = resolve(name)
    dx, dy, cdom = BINARY[name]
    for sx, sy in BINARY_SHAPES:
        run_check(f"{name}(x, y) real", lambda x, y: readout(fn(x, y)),
                  [draw(dx, sx), draw(dy, sy)], 2)
        if cdom is not None:
            xr, xi = _complex_input(cdom, sx)
            yr, yi = _complex_input(cdom, sy)
            if name == "divide":   # away from 0
                yr = yr + 3.0 * tnp.sign(yr)
            run_check(f"{name}(z, w) complex",
                      lambda a, b, c, d: readout(fn(a + b * 1j, c + d * 1j)), [xr, xi, yr, yi], 2)


def test_power_of_negative_base_and_integer_exponent():
    x = draw("nonzero", (2, 3))
    run_check("power(x, 3)", lambda x: readout(tnp.power(x, 3.0)), [x], 2)
    run_check("power(x, 0)", lambda x: readout(tnp.power(x, 0.0) + x), [x], 2)


# ============================================================================ reductions
# name: (domain, extra keywords); each is checked over REDUCTION_AXES x keepdims
REDUCTIONS = {
    "sum": ("real", {}), "prod": ("nonzero", {}), "mean": ("real", {}),
    "std": ("real", {}), "var": ("real", {}),
    "max": ("real", {}), "min": ("real", {}), "amax": ("real", {}), "amin": ("real", {}),
    "ptp": ("real", {}), "median": ("real", {}), "average": ("real", {}),
    "percentile": ("real", {"q": 30.0}), "quantile": ("real", {"q": 0.7}),
    "nansum": ("nan", {}), "nanprod": ("nan", {}), "nanmean": ("nan", {}),
    "nanstd": ("nan", {}), "nanvar": ("nan", {}), "nanmax": ("nan", {}), "nanmin": ("nan", {}),
    "nanmedian": ("nan", {}), "nanpercentile": ("nan", {"q": 30.0}),
    "nanquantile": ("nan", {"q": 0.7}),
    "linalg.vector_norm": ("nonzero", {}),
    "add.reduce": ("real", {}), "multiply.reduce": ("nonzero", {}),
    "maximum.reduce": ("real", {}), "minimum.reduce": ("real", {}),
    "fmax.reduce": ("real", {}), "fmin.reduce": ("real", {}),
    "logaddexp.reduce": ("real", {}), "logaddexp2.reduce": ("real", {}),
}
# reductions and scans whose rules take complex inputs too
COMPLEX_OK = {"sum", "prod", "mean", "var", "std", "average", "linalg.vector_norm", "add.reduce",
              "multiply.reduce", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
              "add.accumulate", "multiply.accumulate", "diff", "trapezoid", "flip", "roll"}
REDUCTION_AXES = [((), None), ((4,), None), ((4,), 0), ((2, 3), None), ((2, 3), 0),
                  ((2, 3), -1), ((2, 3, 2), (0, 2)), ((2, 3, 2), 1)]


def _forward_ok(fn, x, kwargs):
    """Whether NumPy accepts this variant (``logaddexp.reduce`` takes one axis only, ...)."""
    try:
        with np.errstate(all="ignore"):
            fn(x, **kwargs)
        return True
    except (TypeError, ValueError, np.exceptions.AxisError):
        return False


def test_reduction(name):
    fn = resolve(name)
    dom, extra = REDUCTIONS[name]
    checked = 0
    for shape, axis in REDUCTION_AXES:
        for keepdims in (False, True):
            x = draw(dom, shape)
            kw = dict(extra, axis=axis, keepdims=keepdims)
            if name in ("std", "var", "nanstd", "nanvar"):
                kw["ddof"] = 1 if x.size > 2 and axis is None else 0
            if not _forward_ok(fn, x, kw):
                continue
            run_check(f"{name}(x, **{kw})", lambda x: readout(fn(x, **kw)), [x], 2)
            checked += 1
            if name in COMPLEX_OK and not keepdims:
                re, im = _complex_input("c", shape)
                run_check(f"{name}(z, **{kw}) complex",
                          lambda re, im: readout(fn(re + im * 1j, **kw)), [re, im], 2)
    assert checked >= 8, f"{name}: only {checked} variants ran"


# name: (domain, whether axis=None is accepted, extra keywords)
ALONG_AXIS = {
    "cumsum": ("real", True, {}), "cumprod": ("nonzero", True, {}),
    "cumulative_sum": ("real", False, {}), "cumulative_prod": ("nonzero", False, {}),
    "nancumsum": ("nan", True, {}), "nancumprod": ("nan", True, {}),
    "add.accumulate": ("real", False, {}), "multiply.accumulate": ("nonzero", False, {}),
    "diff": ("real", False, {}), "trapezoid": ("real", False, {}),
    "sort": ("real", True, {}), "flip": ("real", True, {}),
    "unwrap": ("real", False, {}), "gradient": ("real", True, {}),
    "roll": ("real", True, {"shift": 2}), "partition": ("real", False, {"kth": 1}),
}
ALONG_SHAPES = [(4,), (2, 3), (3, 2, 4)]


def test_along_axis(name):
    fn = resolve(name)
    dom, none_ok, extra = ALONG_AXIS[name]
    axes = ([None] if none_ok else []) + [0, -1, 1]
    checked = 0
    for shape in ALONG_SHAPES:
        for axis in axes:
            if axis == 1 and len(shape) < 2:
                continue
            x = draw(dom, shape)
            if name == "unwrap":
                x = x * 3.0      # jumps of more than pi, so periods are added
            kw = dict(extra, axis=axis)
            if axis is None and len(shape) == 1 and name not in ("sort", "roll"):
                kw.pop("axis")
            run_check(f"{name}(x, **{kw})", lambda x: readout(fn(x, **kw)), [x], 2)
            checked += 1
            if name in COMPLEX_OK:
                re, im = _complex_input("c", shape)
                run_check(f"{name}(z, **{kw}) complex",
                          lambda re, im: readout(fn(re + im * 1j, **kw)), [re, im], 2)
    assert checked >= 6


# ufunc.outer(A, B)[i..., j...] = op(A[i...], B[j...])
OUTER = {"add.outer": "real", "subtract.outer": "real", "multiply.outer": "real",
         "divide.outer": "nonzero"}


def test_outer(name):
    fn = resolve(name)
    for sa, sb in [((3,), (2,)), ((2, 2), (3,)), ((), (3,)), ((2,), (2, 1))]:
        run_check(f"{name}(A, B)", lambda a, b: readout(fn(a, b)),
                  [R(*sa), draw(OUTER[name], sb)], 2)


# ============================================================================ hand-written cases
class Case:
    """``fn(*args)`` checked to ``order`` (its outputs read out nonlinearly)."""

    def __init__(self, fn, *args, order=2):
        self.fn, self.args, self.order = fn, args, order

    def check(self, name):
        run_check(name, lambda *a: readout(self.fn(*a)), list(self.args), self.order)


def C(fn, *args, order=2):
    return Case(fn, *args, order=order)


def cplx(fn):
    """``fn`` of complex inputs made of pairs of real arrays."""
    return lambda *parts: fn(*[parts[i] + parts[i + 1] * 1j for i in range(0, len(parts), 2)])


def seeded(fn, seed=3):
    def f(*a):
        tnp.random.seed(seed)
        return fn(*a)
    return f


def spd(a):
    """A symmetric positive-definite matrix made of any square ``a`` (tnp operations)."""
    n = a.shape[-1]
    return tnp.matmul(a, tnp.swapaxes(a, -1, -2)) + n * tnp.eye(n)


def sym(a):
    return (a + tnp.swapaxes(a, -1, -2)) / 2


def _distinct_real_eigen(n=3, seed=0):
    """A matrix with well-separated real eigenvalues (3, 1, -1 ... + a similarity)."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((n, n)) + n * np.eye(n)
    return tnp.asarray(V @ np.diag(np.arange(n, 0, -1) * 2.0 - n) @ np.linalg.inv(V))


def _random_cases(prefix, make):
    """Sampler cases under one of the three APIs: ``make()`` returns a freshly seeded generator
    (or the seeded module), so every call of a case draws the same noise and the draw is a
    smooth function of the parameters."""
    def s(name):
        return lambda *a, **k: getattr(make(), name)(*a, **k)

    return {
        prefix + "normal": [C(lambda m, sd: s("normal")(m, sd), R(3), P(3)),
                            C(lambda m, sd: s("normal")(loc=m, scale=sd, size=(2, 3)), R(3), P(3))],
        prefix + "laplace": [C(lambda m, sd: s("laplace")(m, sd), R(3), P(3))],
        prefix + "logistic": [C(lambda m, sd: s("logistic")(m, sd), R(3), P(3))],
        prefix + "gumbel": [C(lambda m, sd: s("gumbel")(m, sd), R(3), P(3))],
        prefix + "uniform": [C(lambda lo, w: s("uniform")(lo, lo + w), R(3), P(3)),
                             C(lambda lo, w: s("uniform")(low=lo, high=w + 3, size=(2, 3)),
                               R(3), P(3))],
        prefix + "exponential": [C(lambda sc: s("exponential")(sc), P(4)),
                                 C(lambda sc: s("exponential")(scale=sc, size=(2, 4)), P(4))],
        prefix + "rayleigh": [C(lambda sc: s("rayleigh")(sc), P(4))],
        prefix + "lognormal": [C(lambda m, sg: s("lognormal")(m, sg), R(3) * 0.3, P(3))],
        prefix + "triangular": [C(lambda lft, m, r: s("triangular")(lft, lft + m, lft + m + r,
                                                                    size=(5, 3)),
                                  R(3), P(3), P(3))],
        prefix + "gamma": [C(lambda sc: s("gamma")(2.5, sc, size=(2, 3)), P(3))],
        prefix + "vonmises": [C(lambda m: s("vonmises")(m, 2.0), R(4) * 0.3)],
        prefix + "choice": [C(lambda a: s("choice")(a, size=(6,)), R(5))],
        prefix + "permutation": [C(lambda a: s("permutation")(a), R(5))],
    }


def _legacy():
    tnp.random.seed(3)
    return tnp.random


CASES = {
    # ---------------------------------------------------------------- math
    "clip": [C(lambda x: tnp.clip(x, -0.5, 0.7), draw("real", (3, 4))),
             C(lambda x, lo, hi: tnp.clip(x, lo, hi), R(2, 3), R(2, 3) - 2.0, R(2, 3) + 2.0)],
    "matmul": [C(tnp.matmul, R(2, 3), R(3, 4)), C(tnp.matmul, R(3), R(3, 2)),
               C(tnp.matmul, R(2, 3), R(3)), C(tnp.matmul, R(3), R(3)),
               C(tnp.matmul, R(2, 2, 3), R(3, 2)),
               C(cplx(tnp.matmul), R(2, 3), R(2, 3), R(3, 2), R(3, 2))],
    "vecdot": [C(tnp.vecdot, R(2, 3), R(3)),
               C(lambda a, b: tnp.vecdot(a, b, axis=0), R(3, 2), R(3, 2)),
               C(cplx(tnp.vecdot), R(2, 3), R(2, 3), R(3), R(3))],
    "matvec": [C(tnp.matvec, R(2, 3), R(3)), C(tnp.matvec, R(4, 2, 3), R(4, 3)),
               C(cplx(tnp.matvec), R(2, 3), R(2, 3), R(3), R(3))],
    "vecmat": [C(tnp.vecmat, R(2), R(2, 3)), C(tnp.vecmat, R(4, 2), R(4, 2, 3)),
               C(cplx(tnp.vecmat), R(2), R(2), R(2, 3), R(2, 3))],
    "convolve": [C(tnp.convolve, R(5), R(3)),
                 C(lambda a, v: tnp.convolve(a, v, "same"), R(5), R(3)),
                 C(lambda a, v: tnp.convolve(a, v, "valid"), R(3), R(5)),
                 C(cplx(tnp.convolve), R(4), R(4), R(2), R(2))],
    "cross": [C(tnp.cross, R(3), R(3)), C(tnp.cross, R(4, 3), R(3)),
              C(lambda a, b: tnp.cross(a, b, axisa=0, axisb=0), R(3, 2), R(2, 2)),
              C(tnp.cross, R(2, 2), R(2, 2))],
    "ediff1d": [C(tnp.ediff1d, R(5)), C(lambda a, b, e: tnp.ediff1d(a, to_end=e, to_begin=b),
                                        R(2, 3), R(2), R(1))],
    "interp": [C(lambda x, fp: tnp.interp(x, tnp.asarray([-1.0, 0.0, 0.5, 2.0]), fp),
                 draw("unit", (5,)), R(4)),
               C(lambda x, fp: tnp.interp(x, tnp.asarray([0.0, 1.0, 2.5]), fp, period=3.0),
                 draw("pos", (4,)), R(3))],
    # an exact zero: the product of the others, not 0 / 0 (TF's reduce_prod gradient). First
    # order: the second-order pass goes through cumprod's rule, which divides by x (as TF's)
    "prod": [C(lambda x: tnp.prod(x, axis=1), tnp.asarray([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]]),
               order=1),
             C(lambda x: tnp.prod(x, where=tnp.asarray([True, False, True])),
               tnp.asarray([1.5, 0.0, -2.0])),
             C(lambda x: tnp.prod(x, axis=(0, 2), initial=2.0), draw("nonzero", (2, 3, 2)))],
    "nanprod": [C(lambda x: tnp.nanprod(x, axis=1),
                  tnp.asarray([[2.0, np.nan, 0.0], [1.0, 4.0, 5.0]]), order=1)],
    "multiply.reduce": [C(lambda x: tnp.multiply.reduce(x, axis=0),
                          tnp.asarray([[0.0, 2.0], [3.0, 1.5]]), order=1)],
    # ---------------------------------------------------------------- manipulation
    "append": [C(tnp.append, R(2, 3), R(4)),
               C(lambda a, b: tnp.append(a, b, axis=0), R(2, 3), R(1, 3))],
    "array_split": [C(lambda x: tnp.array_split(x, 3), R(7)),
                    C(lambda x: tnp.array_split(x, [1, 2], axis=1), R(2, 4))],
    "split": [C(lambda x: tnp.split(x, 2, axis=1), R(3, 4))],
    "hsplit": [C(lambda x: tnp.hsplit(x, 2), R(3, 4))],
    "vsplit": [C(lambda x: tnp.vsplit(x, [1]), R(3, 4))],
    "dsplit": [C(lambda x: tnp.dsplit(x, 2), R(2, 2, 4))],
    "astype": [C(lambda x: x.astype(np.complex128).astype(np.float64) * x, R(2, 3)),
               C(lambda x: tnp.astype(x, np.complex128) * (1 + 2j), R(3))],
    "atleast_1d": [C(tnp.atleast_1d, R())], "atleast_2d": [C(tnp.atleast_2d, R(3))],
    "atleast_3d": [C(tnp.atleast_3d, R(2, 3)), C(lambda a, b: tnp.atleast_3d(a, b), R(3), R())],
    "block": [C(lambda a, b, c: tnp.block([[a, b], [c]]), R(2, 2), R(2, 1), R(1, 3))],
    "broadcast_arrays": [C(tnp.broadcast_arrays, R(2, 1), R(3))],
    "broadcast_to": [C(lambda x: tnp.broadcast_to(x, (2, 2, 3)), R(1, 3))],
    "column_stack": [C(lambda a, b: tnp.column_stack([a, b]), R(3), R(3, 2))],
    "concat": [C(lambda a, b: tnp.concat([a, b], axis=1), R(2, 1), R(2, 3))],
    "concatenate": [C(lambda a, b: tnp.concatenate([a, b]), R(2, 3), R(1, 3)),
                    C(lambda a, b: tnp.concatenate((a, b), axis=None), R(2, 3), R(2))],
    "delete": [C(lambda x: tnp.delete(x, [0, 2], axis=1), R(2, 4)),
               C(lambda x: tnp.delete(x, 1), R(5))],
    "insert": [C(lambda x, v: tnp.insert(x, 1, v, axis=0), R(3, 2), R(2)),
               C(lambda x, v: tnp.insert(x, [0, 2], v), R(4), R(2))],
    "dstack": [C(lambda a, b: tnp.dstack([a, b]), R(2, 3), R(2, 3))],
    "hstack": [C(lambda a, b: tnp.hstack([a, b]), R(2), R(3))],
    "vstack": [C(lambda a, b: tnp.vstack([a, b]), R(3), R(2, 3))],
    "row_stack": [C(lambda a, b: tnp.row_stack([a, b]), R(3), R(2, 3))],
    "stack": [C(lambda a, b: tnp.stack([a, b], axis=1), R(2, 3), R(2, 3))],
    "unstack": [C(lambda x: tnp.unstack(x, axis=1), R(2, 3))],
    "expand_dims": [C(lambda x: tnp.expand_dims(x, (0, 2)), R(2, 3))],
    "squeeze": [C(tnp.squeeze, R(1, 3, 1)), C(lambda x: tnp.squeeze(x, axis=0), R(1, 3, 1))],
    "fliplr": [C(tnp.fliplr, R(2, 3))], "flipud": [C(tnp.flipud, R(2, 3))],
    "rot90": [C(tnp.rot90, R(2, 3)), C(lambda x: tnp.rot90(x, 3, axes=(1, 2)), R(2, 3, 2))],
    "lib.stride_tricks.as_strided": [
        C(lambda x: tnp.lib.stride_tricks.as_strided(x, (3, 2), (8, 8)), R(4))],
    "lib.stride_tricks.sliding_window_view": [
        C(lambda x: tnp.lib.stride_tricks.sliding_window_view(x, 3), R(5)),
        C(lambda x: tnp.lib.stride_tricks.sliding_window_view(x, (2, 2)), R(3, 3))],
    "matrix_transpose": [C(tnp.matrix_transpose, R(2, 3, 4))],
    "moveaxis": [C(lambda x: tnp.moveaxis(x, 0, -1), R(2, 3, 4))],
    "rollaxis": [C(lambda x: tnp.rollaxis(x, 2), R(2, 3, 4))],
    "swapaxes": [C(lambda x: tnp.swapaxes(x, 0, 2), R(2, 3, 4))],
    "permute_dims": [C(lambda x: tnp.permute_dims(x, (1, 2, 0)), R(2, 3, 4))],
    "transpose": [C(tnp.transpose, R(2, 3)), C(lambda x: x.T, R(2, 3, 2))],
    "pad": [C(lambda x: tnp.pad(x, ((1, 0), (2, 1))), R(2, 3)),
            C(lambda x: tnp.pad(x, 2, mode="reflect"), R(4)),
            C(lambda x: tnp.pad(x, 1, mode="edge"), R(2, 3)),
            C(lambda x: tnp.pad(x, (1, 2), mode="wrap"), R(3))],
    "ravel": [C(tnp.ravel, R(2, 3)), C(lambda x: tnp.ravel(x, order="F"), R(2, 3))],
    "reshape": [C(lambda x: tnp.reshape(x, (3, 2)), R(2, 3)), C(lambda x: x.reshape(-1), R(2, 3))],
    "repeat": [C(lambda x: tnp.repeat(x, 2), R(3)),
               C(lambda x: tnp.repeat(x, [1, 3], axis=0), R(2, 3))],
    "resize": [C(lambda x: tnp.resize(x, (3, 3)), R(2, 2)), C(lambda x: tnp.resize(x, (2,)), R(5))],
    "tile": [C(lambda x: tnp.tile(x, (2, 1, 2)), R(2, 3))],
    "trim_zeros": [C(lambda x: tnp.trim_zeros(x * tnp.asarray([0.0, 1, 1, 1, 0])), P(5))],
    "view": [C(lambda x: x.view() * 2.0, R(2, 3))],
    # ---------------------------------------------------------------- creation
    "array": [C(lambda a, b: tnp.array([a, b]), R(3), R(3)), C(lambda x: tnp.array(x), R(2, 2))],
    "asarray": [C(tnp.asarray, R(2, 3)), C(lambda a, b: tnp.asarray([a, b]), R(), R())],
    "asanyarray": [C(tnp.asanyarray, R(3))],
    "asarray_chkfinite": [C(tnp.asarray_chkfinite, R(3))],
    "ascontiguousarray": [C(lambda x: tnp.ascontiguousarray(x.T), R(2, 3))],
    "asfortranarray": [C(tnp.asfortranarray, R(2, 3))],
    "require": [C(lambda x: tnp.require(x, requirements="F"), R(2, 3))],
    "copy": [C(tnp.copy, R(2, 3)), C(lambda x: x.copy(), R(3))],
    "from_dlpack": [C(tnp.from_dlpack, R(2, 3))],
    "frombuffer": [C(lambda x: tnp.frombuffer(x, dtype=np.float64, count=3, offset=8), R(5))],
    "fromiter": [C(lambda x: tnp.fromiter(x, dtype=np.float64), R(4))],
    "diag": [C(tnp.diag, R(3)),
             C(lambda x: tnp.diag(x, 1), R(3, 3)), C(lambda x: tnp.diag(x, -1), R(2))],
    "diagflat": [C(lambda x: tnp.diagflat(x, 1), R(2, 2))],
    "tril": [C(tnp.tril, R(3, 3)), C(lambda x: tnp.tril(x, -1), R(2, 3, 3))],
    "triu": [C(lambda x: tnp.triu(x, 1), R(3, 4))],
    "vander": [C(tnp.vander, R(3)), C(lambda x: tnp.vander(x, 4, increasing=True), R(3))],
    "full": [C(lambda v: tnp.full((2, 3), v), R()), C(lambda v: tnp.full((2, 3), v), R(3))],
    "full_like": [C(lambda a, v: tnp.full_like(a, v) * a, R(2, 3), R())],
    "linspace": [C(lambda a, b: tnp.linspace(a, b, 5), R(), R()),
                 C(lambda a, b: tnp.linspace(a, b, 4, endpoint=False, axis=1), R(2), R(2))],
    "logspace": [C(lambda a, b: tnp.logspace(a, b, 4), R(), R()),
                 C(lambda a, b: tnp.logspace(a, b, 3, base=2.0), R(2), R(2))],
    "geomspace": [C(lambda a, b: tnp.geomspace(a, b, 4), P(), P()),
                  C(lambda a, b: tnp.geomspace(-a, -b, 3), P(2), P(2))],
    "arange": [C(lambda a, s: tnp.arange(a, a + 3.05, 0.5 + 0.1 * s), R(), draw("unit", ())),
               C(lambda a: tnp.arange(a, 4.5), draw("unit", ()))],
    "meshgrid": [C(lambda a, b: tnp.meshgrid(a, b), R(2), R(3)),
                 C(lambda a, b, c: tnp.meshgrid(a, b, c, indexing="ij"), R(2), R(3), R(2))],
    "kaiser": [C(lambda b: tnp.kaiser(5, b), P())],
    # ---------------------------------------------------------------- indexing
    "getitem": [C(lambda x: x[1], R(3, 2)), C(lambda x: x[:, ::2], R(2, 5)),
                C(lambda x: x[tnp.asarray([0, 2, 0])], R(3, 2)),
                C(lambda x: x[x > 0], R(6)), C(lambda x: x[..., None, 1], R(2, 3))],
    "take": [C(lambda x: tnp.take(x, tnp.asarray([2, 0, 2])), R(4)),
             C(lambda x: tnp.take(x, [[0, 1]], axis=1), R(2, 3))],
    "take_along_axis": [C(lambda x: tnp.take_along_axis(x, tnp.asarray([[0, 0], [2, 1]]), axis=1),
                          R(2, 3))],
    "compress": [C(lambda x: tnp.compress([True, False, True], x, axis=1), R(2, 3))],
    "diagonal": [C(tnp.diagonal, R(3, 3)), C(lambda x: tnp.diagonal(x, 1, 0, 2), R(2, 3, 3))],
    "choose": [C(lambda a, b: tnp.choose(tnp.asarray([0, 1, 1, 0]), [a, b]), R(4), R(4))],
    "select": [C(lambda a, b, d: tnp.select([tnp.asarray([True, False, False]),
                                             tnp.asarray([False, True, False])], [a, b], d),
                 R(3), R(3), R(3))],
    "ix_": [C(lambda a, b: tnp.ix_(a, b), R(2), R(3))],
    # ---------------------------------------------------------------- sorting, searching
    "extract": [C(lambda x: tnp.extract(tnp.asarray([True, False, True, True]), x), R(4))],
    "where": [C(lambda x, y: tnp.where(x > 0, x, y), R(2, 3), R(3)),
              C(lambda x: tnp.where(tnp.asarray([True, False]), x, 2.0), R(2))],
    "sort_complex": [C(lambda x: tnp.sort_complex(x), R(5))],
    # ---------------------------------------------------------------- sets (distinct values)
    "unique": [C(lambda x: tnp.unique(x), R(5)),
               C(lambda x: tnp.unique(x, return_counts=True), R(5))],
    "unique_all": [C(lambda x: tnp.unique_all(x), R(5))],
    "unique_counts": [C(lambda x: tnp.unique_counts(x), R(5))],
    "unique_inverse": [C(lambda x: tnp.unique_inverse(x), R(2, 3))],
    "unique_values": [C(lambda x: tnp.unique_values(x), R(5))],
    "union1d": [C(tnp.union1d, R(3), R(4))],
    "setdiff1d": [C(tnp.setdiff1d, R(4), R(3))],
    "setxor1d": [C(tnp.setxor1d, R(3), R(4))],
    # common values exist only where the two inputs are equal: both made of one x, so a
    # perturbation keeps them common (the rule's two parts are checked together)
    "intersect1d": [C(lambda x: tnp.intersect1d(x, tnp.flip(x[1:4])), R(5)),
                    C(lambda x: tnp.intersect1d(x, x[:2] * 1.0, return_indices=True), R(4))],
    # ---------------------------------------------------------------- statistics
    "average": [C(lambda x, w: tnp.average(x, axis=1, weights=w), R(2, 3), P(3)),
                C(lambda x, w: tnp.average(x, weights=w, returned=True), R(4), P(4))],
    "cov": [C(tnp.cov, R(3, 5)), C(cplx(tnp.cov), R(2, 4), R(2, 4)),
            C(lambda x, y: tnp.cov(x, y, rowvar=False), R(4, 2), R(4, 1)),
            C(lambda x: tnp.cov(x, bias=True, ddof=0), R(2, 4))],
    "corrcoef": [C(tnp.corrcoef, R(3, 5)), C(tnp.corrcoef, R(4), R(4)),
                 C(cplx(tnp.corrcoef), R(3, 4), R(3, 4))],
    "correlate": [C(tnp.correlate, R(5), R(3)),
                  C(lambda a, v: tnp.correlate(a, v, "full"), R(4), R(2)),
                  C(cplx(lambda a, v: tnp.correlate(a, v, "same")), R(4), R(4), R(3), R(3))],
    "bincount": [C(lambda w: tnp.bincount(tnp.asarray([0, 2, 2, 1]), weights=w, minlength=4),
                   R(4))],
    "histogram": [C(lambda w: tnp.histogram(tnp.asarray([0.1, 0.5, 0.7, 0.2]), bins=3,
                                            range=(0.0, 1.0), weights=w)[0], R(4))],
    "histogram2d": [C(lambda w: tnp.histogram2d(tnp.asarray([0.1, 0.5, 0.7]),
                                                tnp.asarray([0.2, 0.9, 0.4]), bins=2,
                                                range=[[0, 1], [0, 1]], weights=w)[0], R(3))],
    "histogramdd": [C(lambda w: tnp.histogramdd(tnp.asarray([[0.1, 0.2], [0.5, 0.9], [0.7, 0.4]]),
                                                bins=2, range=[[0, 1], [0, 1]], weights=w)[0],
                      R(3))],
    "histogram_bin_edges": [C(lambda x: tnp.histogram_bin_edges(x, bins=3), R(5))],
    # ---------------------------------------------------------------- linalg
    "dot": [C(tnp.dot, R(2, 3), R(3, 2)), C(tnp.dot, R(3), R(3)), C(tnp.dot, R(), R(2, 2)),
            C(tnp.dot, R(2, 2, 3), R(3))],
    "inner": [C(tnp.inner, R(2, 3), R(4, 3)), C(tnp.inner, R(3), R(3))],
    "outer": [C(tnp.outer, R(3), R(2, 2)), C(cplx(tnp.outer), R(2), R(2), R(3), R(3))],
    "linalg.outer": [C(tnp.linalg.outer, R(3), R(2))],
    "vdot": [C(tnp.vdot, R(2, 2), R(4)), C(cplx(tnp.vdot), R(3), R(3), R(3), R(3))],
    "kron": [C(tnp.kron, R(2, 2), R(2, 3)), C(tnp.kron, R(2), R(3, 1))],
    "tensordot": [C(lambda a, b: tnp.tensordot(a, b, axes=([1, 0], [0, 1])), R(3, 4, 2), R(4, 3))],
    "linalg.tensordot": [C(lambda a, b: tnp.linalg.tensordot(a, b, axes=1), R(2, 3), R(3, 2))],
    "einsum": [C(lambda a, b: tnp.einsum("ij,jk->ik", a, b), R(2, 3), R(3, 2)),
               C(lambda a: tnp.einsum("ii->", a), R(3, 3)),
               C(lambda a, b: tnp.einsum("...i,i", a, b), R(2, 3), R(3))],
    "trace": [C(tnp.trace, R(3, 3)), C(lambda x: tnp.trace(x, 1, 1, 2), R(2, 3, 3))],
    "linalg.trace": [C(tnp.linalg.trace, R(2, 3, 3))],
    "linalg.diagonal": [C(lambda x: tnp.linalg.diagonal(x, offset=-1), R(2, 3, 3))],
    "linalg.matrix_transpose": [C(tnp.linalg.matrix_transpose, R(2, 3))],
    "linalg.matmul": [C(tnp.linalg.matmul, R(2, 3), R(3, 2))],
    "linalg.vecdot": [C(tnp.linalg.vecdot, R(2, 3), R(2, 3))],
    "linalg.cross": [C(tnp.linalg.cross, R(2, 3), R(2, 3))],
    "linalg.inv": [C(tnp.linalg.inv, spd(R(3, 3)) + R(3, 3) * 0.1),
                   C(cplx(tnp.linalg.inv), spd(R(3, 3)), R(3, 3)),
                   C(tnp.linalg.inv, spd(R(2, 2, 2)))],
    "linalg.solve": [C(tnp.linalg.solve, spd(R(3, 3)), R(3, 2)),
                     C(tnp.linalg.solve, spd(R(3, 3)), R(3))],
    "linalg.det": [C(tnp.linalg.det, R(3, 3)), C(tnp.linalg.det, R(2, 2, 2)),
                   C(cplx(tnp.linalg.det), R(3, 3), R(3, 3))],
    "linalg.slogdet": [C(lambda a: tnp.linalg.slogdet(a), R(3, 3)),
                       C(cplx(lambda a: tnp.linalg.slogdet(a)), R(3, 3), R(3, 3))],
    "linalg.cholesky": [C(lambda a: tnp.linalg.cholesky(spd(a)), R(3, 3)),
                        C(lambda a: tnp.linalg.cholesky(spd(a), upper=True), R(2, 3, 3))],
    "linalg.eigh": [C(lambda a: [tnp.linalg.eigh(sym(a))[0], tnp.linalg.eigh(sym(a))[1] ** 2],
                      R(3, 3))],
    "linalg.eigvalsh": [C(lambda a: tnp.linalg.eigvalsh(sym(a)), R(3, 3))],
    "linalg.eig": [C(lambda a: [tnp.real(tnp.linalg.eig(a)[0]),
                                tnp.absolute(tnp.linalg.eig(a)[1]) ** 2], _distinct_real_eigen())],
    "linalg.eigvals": [C(lambda a: tnp.real(tnp.linalg.eigvals(a)), _distinct_real_eigen(seed=1)),
                       C(cplx(tnp.linalg.eigvals), _distinct_real_eigen(seed=2), R(3, 3) * 0.1)],
    "linalg.svd": [C(lambda a: [tnp.linalg.svd(a)[1], tnp.linalg.svd(a)[0] ** 2,
                                tnp.linalg.svd(a)[2] ** 2], R(3, 3)),
                   C(lambda a: [tnp.linalg.svd(a, full_matrices=False)[1],
                                tnp.linalg.svd(a, full_matrices=False)[0] ** 2], R(4, 2))],
    "linalg.svdvals": [C(tnp.linalg.svdvals, R(3, 2))],
    "linalg.qr": [C(lambda a: list(tnp.linalg.qr(a)), R(3, 3)),
                  C(lambda a: list(tnp.linalg.qr(a)), R(4, 2))],
    "linalg.pinv": [C(tnp.linalg.pinv, R(3, 2)), C(tnp.linalg.pinv, R(2, 2))],
    "linalg.lstsq": [C(lambda a, b: tnp.linalg.lstsq(a, b)[0], R(4, 2), R(4))],
    "linalg.norm": [C(tnp.linalg.norm, R(2, 3)),
                    C(lambda x: tnp.linalg.norm(x, axis=1, keepdims=True), R(2, 3)),
                    C(lambda x: tnp.linalg.norm(x, 1), draw("nonzero", (3,))),
                    C(lambda x: tnp.linalg.norm(x, "nuc"), R(3, 2)),
                    C(lambda x: tnp.linalg.norm(x, 3), R(4))],
    "linalg.vector_norm": [C(lambda x: tnp.linalg.vector_norm(x, ord=1), draw("nonzero", (2, 3))),
                           C(cplx(lambda z: tnp.linalg.vector_norm(z, ord=1)), R(4), R(4)),
                           C(lambda x: tnp.linalg.vector_norm(x, ord=3, axis=0), R(2, 3))],
    "linalg.matrix_norm": [C(tnp.linalg.matrix_norm, R(2, 3)),
                           C(lambda x: tnp.linalg.matrix_norm(x, ord=2), R(3, 2))],
    "linalg.cond": [C(tnp.linalg.cond, spd(R(3, 3)))],
    "linalg.matrix_power": [C(lambda a: tnp.linalg.matrix_power(a, 3), R(2, 2)),
                            C(lambda a: tnp.linalg.matrix_power(a, -2), spd(R(2, 2)))],
    "linalg.multi_dot": [C(lambda a, b, c: tnp.linalg.multi_dot([a, b, c]),
                           R(2, 3), R(3, 4), R(4))],
    "linalg.tensorinv": [C(lambda a: tnp.linalg.tensorinv(a, ind=2),
                           tnp.reshape(spd(R(4, 4)), (2, 2, 4)))],
    "linalg.tensorsolve": [C(tnp.linalg.tensorsolve, tnp.reshape(spd(R(4, 4)), (2, 2, 2, 2)),
                             R(2, 2))],
    # ---------------------------------------------------------------- fft (complex parts)
    "fft.fft": [C(tnp.fft.fft, R(5)),
                C(cplx(lambda z: tnp.fft.fft(z, n=4, norm="ortho")), R(2, 5), R(2, 5))],
    "fft.ifft": [C(tnp.fft.ifft, R(5)),
                 C(cplx(lambda z: tnp.fft.ifft(z, n=7, axis=0)), R(4, 2), R(4, 2))],
    "fft.fft2": [C(cplx(tnp.fft.fft2), R(3, 4), R(3, 4))],
    "fft.ifft2": [C(cplx(lambda z: tnp.fft.ifft2(z, s=(2, 5))), R(3, 4), R(3, 4))],
    "fft.fftn": [C(cplx(lambda z: tnp.fft.fftn(z, axes=(0, 2))), R(2, 3, 2), R(2, 3, 2))],
    "fft.ifftn": [C(cplx(tnp.fft.ifftn), R(2, 3), R(2, 3))],
    "fft.rfft": [C(tnp.fft.rfft, R(6)), C(lambda x: tnp.fft.rfft(x, n=5, axis=0), R(4, 2))],
    "fft.irfft": [C(cplx(tnp.fft.irfft), R(4), R(4)),
                  C(cplx(lambda z: tnp.fft.irfft(z, n=5)), R(3), R(3))],
    "fft.rfft2": [C(tnp.fft.rfft2, R(3, 4))],
    "fft.irfft2": [C(cplx(tnp.fft.irfft2), R(3, 3), R(3, 3))],
    "fft.rfftn": [C(lambda x: tnp.fft.rfftn(x, norm="forward"), R(2, 3, 4))],
    "fft.irfftn": [C(cplx(lambda z: tnp.fft.irfftn(z, s=(3, 4))), R(3, 3), R(3, 3))],
    "fft.hfft": [C(cplx(tnp.fft.hfft), R(4), R(4))],
    "fft.ihfft": [C(tnp.fft.ihfft, R(5))],
    "fft.fftshift": [C(tnp.fft.fftshift, R(2, 5)),
                     C(lambda x: tnp.fft.fftshift(x, axes=0), R(3, 2))],
    "fft.ifftshift": [C(tnp.fft.ifftshift, R(5))],
    "fft.fftfreq": [C(lambda d: tnp.fft.fftfreq(5, d), P())],
    "fft.rfftfreq": [C(lambda d: tnp.fft.rfftfreq(6, d), P())],
    # ---------------------------------------------------------------- polynomials
    "poly": [C(tnp.poly, R(3))],
    "roots": [C(lambda p: tnp.roots(p) ** 2 + tnp.roots(p) ** 3,
                tnp.asarray(np.poly([-1.5, 0.5, 2.0])) + R(4) * 0.01)],
    "polyval": [C(tnp.polyval, R(3), R(4))],
    "polyadd": [C(tnp.polyadd, R(3), R(2))], "polysub": [C(tnp.polysub, R(2), R(4))],
    "polymul": [C(tnp.polymul, R(3), R(2))],
    "polyder": [C(tnp.polyder, R(4)), C(lambda p: tnp.polyder(p, 2), R(4))],
    "polyint": [C(tnp.polyint, R(3)), C(lambda p, k: tnp.polyint(p, 1, k), R(3), R())],
    "polydiv": [C(lambda u, v: list(tnp.polydiv(u, v)), R(4), draw("nonzero", (2,)))],
    "polyfit": [C(lambda x, y: tnp.polyfit(x, y, 2),
                  tnp.asarray([0.0, 1.0, 2.0, 3.5, 4.0]) + R(5) * 0.01, R(5)),
                C(lambda x, y, w: tnp.polyfit(x, y, 1, w=w),
                  tnp.asarray([0.0, 1.0, 2.5]), R(3), P(3))],
    # ---------------------------------------------------------------- functional
    # a constant on each piece: zero almost everywhere (callables: OPAQUE below)
    "piecewise": [C(lambda x: tnp.piecewise(x, [x < 0, x >= 0], [-1.5, 2.0]) * x,
                    draw("nonzero", (5,)))],
    # ---------------------------------------------------------------- random (fixed seeds)
    "random.multivariate_normal": [
        C(seeded(lambda m, c: tnp.random.multivariate_normal(m, spd(c), size=4)), R(2), R(2, 2))],
    "random.RandomState.multivariate_normal": [
        C(lambda m, c: tnp.random.RandomState(5).multivariate_normal(m, spd(c), size=3),
          R(3), R(3, 3))],
}
CASES.update(_random_cases("random.", _legacy))
CASES.update(_random_cases("random.RandomState.", lambda: tnp.random.RandomState(3)))
CASES.update(_random_cases("random.Generator.", lambda: tnp.random.default_rng(3)))

# samplers whose draw depends on a shape parameter: name -> number of parameters
_SHAPE_SAMPLERS = {"beta": 2, "chisquare": 1, "dirichlet": 1, "f": 2, "noncentral_chisquare": 2,
                   "noncentral_f": 3, "pareto": 1, "power": 1, "standard_gamma": 1,
                   "standard_t": 1, "wald": 2, "weibull": 1}
# Functions that run a Python callable on NumPy values: their rules raise LookupError (checked
# by test_opaque_functions_refuse_a_gradient), name: a call of it on x
OPAQUE = {
    "apply_along_axis": lambda x: tnp.apply_along_axis(lambda r: r * 2.0, 0, x),
    "apply_over_axes": lambda x: tnp.apply_over_axes(tnp.sum, x, [0]),
    "vectorize": lambda x: tnp.vectorize(lambda a: a * 2.0)(x),
    "piecewise": lambda x: tnp.piecewise(x, [x < 0, x >= 0], [lambda t: t, lambda t: 2 * t]),
}
# Differentiable names neither generated nor hand-written above, and why; each reason is itself
# checked (the rule raises, see the two tests named in it)
EXCLUDED = {
    "apply_along_axis": "runs a Python callable on NumPy values: the rule raises LookupError "
                        "(test_opaque_functions_refuse_a_gradient)",
    "apply_over_axes": "runs a Python callable on NumPy values: the rule raises LookupError",
    "vectorize": "runs a Python callable on NumPy values: the rule raises LookupError",
}
for _p in ("random.", "random.RandomState.", "random.Generator."):
    for _n in _SHAPE_SAMPLERS:
        EXCLUDED[_p + _n] = ("random draw with a shape parameter: no pathwise gradient, the rule "
                             "raises LookupError (test_shape_samplers_refuse_a_gradient)")


_auto_elementwise()


def pytest_generate_tests(metafunc):
    """Each sweep test runs once per name of its table (read after the tables are complete)."""
    table = {"test_unary": UNARY, "test_binary": BINARY, "test_reduction": REDUCTIONS,
             "test_along_axis": ALONG_AXIS, "test_outer": OUTER, "test_case": CASES,
             "test_opaque_functions_refuse_a_gradient": OPAQUE}.get(metafunc.function.__name__)
    if table is not None:
        metafunc.parametrize("name", sorted(table))


# ============================================================================ coverage
GENERATED = set(UNARY) | set(BINARY) | {"ldexp"} | set(REDUCTIONS) | set(ALONG_AXIS) | set(OUTER)


def test_every_rule_is_swept():
    """Each name with a VJP rule has a generated case, a hand-written case or an exclusion."""
    from tnp_train.autodiff import vjps  # noqa: F401 - fills the registry

    rules = set(registry.VJPS)
    covered = GENERATED | set(CASES) | set(EXCLUDED)
    unchecked = sorted(rules - covered)
    assert not unchecked, (f"rules that no sweep checks (give each a case in CASES, a domain in "
                           f"a generated table, or an EXCLUDED reason): {unchecked}")
    stale = sorted(covered - rules)
    assert not stale, f"sweep entries for names that have no rule: {stale}"
    assert sorted(set(EXCLUDED) & (GENERATED | set(CASES))) == []
    assert COMPLEX_OK <= set(REDUCTIONS) | set(ALONG_AXIS)
    samplers = {p + n for p in ("random.", "random.RandomState.", "random.Generator.")
                for n in _SHAPE_SAMPLERS}
    assert sorted(set(EXCLUDED) - set(OPAQUE) - samplers) == [], "exclusions that no test checks"


def test_case(name):
    for i, case in enumerate(CASES[name]):
        case.check(f"{name} (case {i})")


@pytest.mark.parametrize("prefix", ["random.", "random.RandomState.", "random.Generator."])
def test_shape_samplers_refuse_a_gradient(prefix):
    """The excluded samplers: a gradient through a shape parameter is an error, never None."""
    make = {"random.": _legacy, "random.RandomState.": lambda: tnp.random.RandomState(0),
            "random.Generator.": lambda: tnp.random.default_rng(0)}[prefix]
    for name, nargs in sorted(_SHAPE_SAMPLERS.items()) + [("gamma", 2)]:
        params = [P(3) + 1.0 for _ in range(nargs)]
        with GradientTape() as tape:
            tape.watch(params[0])
            y = getattr(make(), name)(*params)
        with pytest.raises(LookupError, match="No gradient for tnp.*" + name):
            tape.gradient(tnp.sum(y), params[0])


def test_opaque_functions_refuse_a_gradient(name):
    """A gradient through a Python callable the tape cannot see is an error, never None."""
    x = R(2, 3)
    with GradientTape() as tape:
        tape.watch(x)
        y = OPAQUE[name](x)
    with pytest.raises(LookupError, match="No gradient for tnp." + name):
        tape.gradient(tnp.sum(y), x)


# ============================================================================ the checker itself
def test_check_grads_takes_complex_arguments_and_catches_a_missing_conjugate():
    from tnp_train.autodiff import custom_gradient

    z = tnp.asarray(np.array([0.3 + 0.5j, -0.7 + 0.2j, 1.1 - 0.4j]))
    for f in (tnp.sin, tnp.log, tnp.conjugate, tnp.absolute, lambda z: tnp.vecdot(z, z * 2)):
        check_grads(f, order=2)(z)

    @custom_gradient
    def conj_without_conjugate(z):
        return tnp.conjugate(z), lambda g: g          # the rule should return conj(g)

    with pytest.raises(AssertionError, match="finite differences"):
        check_grads(conj_without_conjugate)(z)


def test_product_of_the_others_without_division():
    """The products prod's rule uses when a group holds a zero (and always on a device)."""
    from tnp_train.autodiff.vjps.math import _prod_of_others

    x = draw("nonzero", (2, 3, 2))
    xh = np.asarray(x)
    for axis in (None, 0, (0, 2), -1):
        want = np.prod(xh, axis=axis, keepdims=True) / xh
        np.testing.assert_allclose(np.asarray(_prod_of_others(x, axis)), want, rtol=1e-12)
    run_check("_prod_of_others", lambda x: readout(_prod_of_others(x, (0, 2))), [x], 2)


def test_python_complex_times_a_0d_tnp_value_keeps_its_gradient():
    # NumPy's scalar rule makes 1j * np.float64(2) a Python complex; tnp gives a tnp scalar of
    # that value (docs/differences.md, Scalars), so the tape follows it
    s = tnp.sum(R(3))                      # a 0-d tnp value
    with GradientTape() as tape:
        tape.watch(s)
        z = 1j * s
        y = tnp.real(z * z)                # -s**2
    g = tape.gradient(y, s)
    assert g is not None and np.isclose(float(g), -2 * float(s))


COMPLEX_REFUSED = {   # name: a call; their rules are real-only and say so for complex input
    "linalg.cholesky": lambda z: tnp.linalg.cholesky(z @ tnp.conjugate(z.T) + 3 * tnp.eye(3)),
    "linalg.eigh": lambda z: tnp.linalg.eigh(z + tnp.conjugate(z.T))[0],
    "linalg.svd": lambda z: tnp.linalg.svd(z)[1],
    "linalg.qr": lambda z: tnp.linalg.qr(z)[1],
    "linalg.pinv": tnp.linalg.pinv,
}


def test_real_only_linalg_rules_refuse_complex_inputs():
    """A complex input to a real-only rule is an error that says so, never a wrong number."""
    for name, call in COMPLEX_REFUSED.items():
        re, im = R(3, 3), R(3, 3)
        with GradientTape() as tape:
            tape.watch(re)
            y = call(re + im * 1j)
            loss = tnp.sum(tnp.real(y * tnp.conjugate(y)))
        with pytest.raises(NotImplementedError, match="real inputs only"):
            tape.gradient(loss, re)


def test_the_sweep_compiles():
    """The compiled half of the sweep is not vacuous: the elementwise rules' gradients compile
    (a traced forward and backward in one program), not just run eagerly again."""
    before = dict(COMPILED)
    for name, (dom, _) in sorted(UNARY.items()):
        if name == "i0":
            continue
        fn = resolve(name)
        compiled_equals_eager(lambda x, fn=fn: readout(fn(x)), [draw(dom, (3,))])
    for name, (dx, dy, _) in sorted(BINARY.items()):
        fn = resolve(name)
        compiled_equals_eager(lambda x, y, fn=fn: readout(fn(x, y)), [draw(dx, (2, 3)),
                                                                       draw(dy, (3,))])
    done = COMPILED["compiled"] - before["compiled"]
    eager = COMPILED["eager"] - before["eager"]
    assert done >= 0.9 * (done + eager), (done, eager)
