"""VJP rules and declarations of the logic, sorting, sets, io, misc, datetime, bits, polynomial,
functional and random sections."""
import io

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape, check_grads, registry

SECTIONS = ("logic", "sorting", "sets", "io", "misc", "datetime", "bits", "polynomial",
            "functional", "random")


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def P(*shape, seed=0):
    """Positive, away from zero."""
    return tnp.asarray(np.random.default_rng(seed).uniform(0.5, 2.0, shape))


def sq(fn):
    """Square the (first) output: the second-order check then differentiates the rule in its
    cotangent too."""
    def f(*a):
        y = fn(*a)
        return [t * t for t in y] if isinstance(y, (list, tuple)) else y * y
    return f


def grad(f, x):
    with GradientTape() as t:
        t.watch(x)
        y = f(x)
    return t.gradient(y, x)


def not_differentiable(out):
    """An integer/boolean/datetime/string array, or no array at all."""
    if isinstance(out, (tuple, list)):
        return all(not_differentiable(o) for o in out)
    if not isinstance(out, (tnp.ndarray, np.ndarray)):
        return True
    return not np.issubdtype(np.asarray(out).dtype, np.inexact)


def test_sections_complete():
    missing = [n for n in registry.missing() if tnp.REGISTRY[n].section in SECTIONS]
    assert missing == []


# ------------------------------------------------------------------------------ logic
def _logic_calls(x, y):
    return {
        "isfinite": lambda: tnp.isfinite(x), "isinf": lambda: tnp.isinf(x),
        "isnan": lambda: tnp.isnan(x), "isneginf": lambda: tnp.isneginf(x),
        "isposinf": lambda: tnp.isposinf(x), "iscomplex": lambda: tnp.iscomplex(x),
        "isreal": lambda: tnp.isreal(x), "isclose": lambda: tnp.isclose(x, y),
        "isnat": lambda: tnp.isnat(tnp.asarray(np.array(["2020-01-01"], dtype="M8[D]"))),
        "logical_and": lambda: tnp.logical_and(x, y), "logical_or": lambda: tnp.logical_or(x, y),
        "logical_not": lambda: tnp.logical_not(x), "logical_xor": lambda: tnp.logical_xor(x, y),
        "greater": lambda: x > y, "greater_equal": lambda: x >= y, "less": lambda: x < y,
        "less_equal": lambda: x <= y, "equal": lambda: x == y, "not_equal": lambda: x != y,
        "all": lambda: tnp.all(x), "any": lambda: tnp.any(x),
        "iscomplexobj": lambda: tnp.iscomplexobj(x), "isrealobj": lambda: tnp.isrealobj(x),
        "isfortran": lambda: tnp.isfortran(x), "isscalar": lambda: tnp.isscalar(x),
        "allclose": lambda: tnp.allclose(x, y), "array_equal": lambda: tnp.array_equal(x, y),
        "array_equiv": lambda: tnp.array_equiv(x, y),
    }


def test_logic_outputs_are_boolean():
    x, y = R(4), R(4, seed=1)
    calls = _logic_calls(x, y)
    names = [n for n, i in tnp.REGISTRY.items() if i.section == "logic"]
    assert sorted(calls) == sorted(names)
    for n, call in calls.items():
        assert registry.is_nondifferentiable(n), n
        assert not_differentiable(call()), n
    with GradientTape() as t:
        t.watch(x)
        m = tnp.isclose(x, y)
    assert t.gradient(m, x) is None


# ------------------------------------------------------------------------------ sorting
@pytest.mark.parametrize("shape,kw", [((6,), {}), ((4, 3), dict(axis=0)), ((3, 4), dict(axis=None)),
                                      ((3, 4), dict(descending=True))])
def test_sort(shape, kw):
    check_grads(sq(lambda x: tnp.sort(x, **kw)), order=2)(R(*shape))


def test_sort_formula():
    x = tnp.asarray([3.0, 1.0, 2.0])
    w = tnp.asarray([10.0, 20.0, 30.0])
    g = grad(lambda a: tnp.sum(tnp.sort(a) * w), x)
    assert np.allclose(np.asarray(g), [30.0, 10.0, 20.0])


@pytest.mark.parametrize("shape,kth,axis", [((7,), 3, -1), ((4, 5), [1, 3], 0)])
def test_partition(shape, kth, axis):
    check_grads(sq(lambda x: tnp.partition(x, kth, axis=axis)), order=2)(R(*shape))


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # the tape's complex->real cast
@pytest.mark.parametrize("shape", [(6,), (2, 5)])
def test_sort_complex(shape):
    check_grads(sq(lambda x: tnp.real(tnp.sort_complex(x))), order=2)(R(*shape))


@pytest.mark.parametrize("shape", [(3, 4), (7,)])
def test_extract(shape):
    x = R(*shape)
    cond = np.asarray(x) > 0
    check_grads(sq(lambda a: tnp.extract(cond, a)), order=2)(x)
    check_grads(sq(lambda a: tnp.extract(tnp.asarray(cond).ravel(), a)), order=2)(x)


def test_where():
    x, y = R(3, 4), R(4, seed=1)
    cond = np.asarray(x) > 0
    check_grads(sq(lambda a, b: tnp.where(cond, a, b)), order=2)(x, y)
    check_grads(sq(lambda a: tnp.where(cond, a, 2.0)), order=2)(x)
    g = grad(lambda a: tnp.sum(tnp.where(cond, 0.0, a)), x)
    assert np.allclose(np.asarray(g), ~cond)
    assert not_differentiable(tnp.where(x > 0))


def test_sorting_index_outputs():
    x = R(3, 4)
    outs = {
        "argsort": tnp.argsort(x), "argpartition": tnp.argpartition(x, 1),
        "lexsort": tnp.lexsort((x[0], x[1])), "argmax": tnp.argmax(x), "argmin": tnp.argmin(x),
        "nanargmax": tnp.nanargmax(x), "nanargmin": tnp.nanargmin(x), "argwhere": tnp.argwhere(x),
        "nonzero": tnp.nonzero(x), "flatnonzero": tnp.flatnonzero(x),
        "searchsorted": tnp.searchsorted(tnp.sort(x[0]), x[1]),
        "count_nonzero": tnp.count_nonzero(x),
    }
    for n, o in outs.items():
        assert n in registry.NONDIFF and not_differentiable(o), n


# ------------------------------------------------------------------------------ sets
@pytest.mark.parametrize("shape", [(6,), (2, 3)])
def test_unique_distinct(shape):
    check_grads(sq(lambda x: tnp.unique(x)), order=2)(R(*shape))
    check_grads(sq(lambda x: tnp.unique(x, return_inverse=True, return_counts=True)[0]),
                order=2)(R(*shape))
    for fn in (tnp.unique_values, lambda x: tnp.unique_all(x).values,
               lambda x: tnp.unique_counts(x)[0], lambda x: tnp.unique_inverse(x)[0]):
        check_grads(sq(fn), order=2)(R(*shape))


def test_unique_ties_share():
    # perturbations that keep ties: the base values are watched, the input repeats them
    idx = np.array([0, 2, 1, 2, 0, 0, 3])
    base = R(4)
    check_grads(sq(lambda b: tnp.unique(b[idx])), order=2)(base)
    check_grads(sq(lambda b: tnp.unique_values(b[idx])), order=2)(base)
    x = tnp.asarray([2.0, 1.0, 2.0, 2.0])
    g = grad(lambda a: tnp.sum(tnp.unique(a) * tnp.asarray([10.0, 30.0])), x)
    assert np.allclose(np.asarray(g), [10.0, 10.0, 10.0, 10.0])


def test_unique_axis():
    rows = R(3, 4)
    idx = np.array([0, 1, 0, 2])
    check_grads(sq(lambda r: tnp.unique(r[idx], axis=0)), order=2)(rows)
    check_grads(sq(lambda r: tnp.unique(r[:, idx], axis=1)), order=2)(rows)


SETS = [("intersect1d", [0, 1, 2, 3], [2, 4, 0]), ("union1d", [0, 1, 1, 2], [2, 3]),
        ("setdiff1d", [0, 1, 2, 3, 1], [2, 4]), ("setxor1d", [0, 1, 2], [2, 3, 4])]


@pytest.mark.parametrize("name,i1,i2", SETS)
def test_set_functions(name, i1, i2):
    base = R(5)
    fn = getattr(tnp, name)
    check_grads(sq(lambda b: fn(b[np.array(i1)], b[np.array(i2)])), order=2)(base)
    if name != "intersect1d":   # directly in both arguments (no value shared between them)
        check_grads(sq(fn), order=2)(R(4, seed=1), R(3, seed=2))


def test_intersect_shares_and_isin():
    x, y = tnp.asarray([1.0, 2.0, 3.0]), tnp.asarray([3.0, 5.0])
    with GradientTape(persistent=True) as t:
        t.watch([x, y])
        v, i1, i2 = tnp.intersect1d(x, y, return_indices=True)
        s = tnp.sum(v * 4.0)
    assert np.allclose(np.asarray(t.gradient(s, x)), [0, 0, 2.0])
    assert np.allclose(np.asarray(t.gradient(s, y)), [2.0, 0])
    assert not_differentiable(tnp.isin(x, y)) and "isin" in registry.NONDIFF


# ------------------------------------------------------------------------------ io, misc, datetime, bits
def test_io_misc_datetime_bits(tmp_path):
    x = R(2, 3)
    f = tmp_path / "a.npy"
    outs = {
        "save": tnp.save(f, x), "savez": tnp.savez(tmp_path / "b.npz", x=x),
        "savez_compressed": tnp.savez_compressed(tmp_path / "c.npz", x=x),
        "savetxt": tnp.savetxt(tmp_path / "d.txt", x),
        "array2string": tnp.array2string(x), "array_repr": tnp.array_repr(x),
        "array_str": tnp.array_str(x), "format_float_positional": tnp.format_float_positional(1.5),
        "format_float_scientific": tnp.format_float_scientific(1.5),
        "binary_repr": tnp.binary_repr(5), "base_repr": tnp.base_repr(5, 3),
        "can_cast": tnp.can_cast(x, np.float32), "promote_types": tnp.promote_types("f4", "f8"),
        "min_scalar_type": tnp.min_scalar_type(3), "result_type": tnp.result_type(x, 1),
        "common_type": tnp.common_type(x), "issubdtype": tnp.issubdtype(x.dtype, np.floating),
        "isdtype": tnp.isdtype(x.dtype, "real floating"), "typename": tnp.typename("d"),
        "mintypecode": tnp.mintypecode("fd"), "iterable": tnp.iterable(x),
        "datetime_data": tnp.datetime_data(np.dtype("M8[s]")),
        "shares_memory": tnp.shares_memory(x, x), "may_share_memory": tnp.may_share_memory(x, x),
        "geterr": tnp.geterr(), "getbufsize": tnp.getbufsize(), "geterrcall": tnp.geterrcall(),
        "get_include": tnp.get_include(),
        "busday_count": tnp.busday_count("2020-01-01", "2020-02-01"),
        "busday_offset": tnp.busday_offset("2020-01-01", 3),
        "is_busday": tnp.is_busday("2020-01-01"),
        "datetime_as_string": tnp.datetime_as_string(tnp.asarray(np.array(["2020-01-01"], "M8[D]"))),
        "packbits": tnp.packbits(x > 0), "unpackbits": tnp.unpackbits(tnp.packbits(x > 0)),
    }
    for n, o in outs.items():
        assert registry.is_nondifferentiable(n), n
        assert not_differentiable(o), n
    # readers: no array input, the same values whatever is watched
    assert np.allclose(np.asarray(tnp.load(f)), np.asarray(x))
    assert np.allclose(np.asarray(tnp.loadtxt(tmp_path / "d.txt")), np.asarray(x))
    assert np.asarray(tnp.genfromtxt(io.StringIO("1 2\n3 4"))).shape == (2, 2)
    assert np.asarray(tnp.fromregex(io.StringIO("1 2"), r"(\d)", [("a", "i8")])).size == 2
    # setters (restored), printers, frompyfunc: no array comes back
    old = tnp.seterr(all="ignore")
    assert not_differentiable(old) and not_differentiable(tnp.seterr(**old))
    assert not_differentiable(tnp.setbufsize(tnp.setbufsize(8192)))
    assert not_differentiable(tnp.seterrcall(tnp.seterrcall(None)))
    assert not_differentiable(tnp.frompyfunc(lambda v: v, 1, 1))
    for n in ("load", "loadtxt", "genfromtxt", "fromregex", "seterr", "setbufsize", "seterrcall",
              "show_config", "show_runtime", "info", "frompyfunc"):
        assert registry.is_nondifferentiable(n), n
    names = [n for n, i in tnp.REGISTRY.items() if i.section in ("io", "misc", "datetime", "bits")]
    assert sorted(names) == sorted(set(outs) | {"load", "loadtxt", "genfromtxt", "fromregex",
                                                 "seterr", "setbufsize", "seterrcall", "show_config",
                                                 "show_runtime", "info", "frompyfunc"})


# ------------------------------------------------------------------------------ polynomial
@pytest.mark.parametrize("np_,xs", [(4, (3,)), (1, (2, 2))])
def test_polyval(np_, xs):
    check_grads(sq(tnp.polyval), order=2)(R(np_), R(*xs, seed=1))


def test_polyval_formula():
    p, x = R(3), tnp.asarray(1.5)
    g = grad(lambda q: tnp.polyval(q, x), p)
    assert np.allclose(np.asarray(g), [2.25, 1.5, 1.0])


@pytest.mark.parametrize("n1,n2", [(4, 2), (3, 3)])
def test_polyadd_sub_mul(n1, n2):
    for fn in (tnp.polyadd, tnp.polysub, tnp.polymul):
        check_grads(sq(fn), order=2)(R(n1), R(n2, seed=1))


@pytest.mark.parametrize("m", [1, 2])
def test_polyder_polyint(m):
    check_grads(sq(lambda p: tnp.polyder(p, m)), order=2)(R(5))
    check_grads(sq(lambda p: tnp.polyint(p, m)), order=2)(R(4))
    check_grads(sq(lambda p, k: tnp.polyint(p, m, k=k)), order=2)(R(4), R(m, seed=1))


@pytest.mark.parametrize("nu,nv", [(5, 3), (2, 3)])
def test_polydiv(nu, nv):
    v = R(nv, seed=1) + tnp.asarray(np.eye(nv)[0] * 3)
    check_grads(sq(tnp.polydiv), order=2)(R(nu), v)


@pytest.mark.parametrize("kw", [dict(), dict(w=True), dict(full=True), dict(cov=True),
                                dict(cov="unscaled")])
def test_polyfit(kw):
    x, y, w = R(8), R(8, seed=1), P(8, seed=2)
    kw = dict(kw)
    if kw.pop("w", False):
        check_grads(sq(lambda a, b, c: tnp.polyfit(a, b, 2, w=c)), order=2)(x, y, w)
        return

    def f(a, b):
        r = tnp.polyfit(a, b, 2, **kw)
        return [r[0], r[1], r[3]] if kw.get("full") else r
    check_grads(sq(f), order=2)(x, y)
    check_grads(sq(lambda b: tnp.polyfit(x, b, 1)), order=2)(R(8, 2, seed=3))


@pytest.mark.parametrize("shape", [(4,), (3, 3)])
def test_poly(shape):
    check_grads(sq(tnp.poly), order=2)(R(*shape))


@pytest.mark.parametrize("roots", [[1.0, 2.0, -3.5], [0.5, -1.0]])
def test_roots(roots):
    p = tnp.asarray(np.poly(roots) * 1.3)
    check_grads(sq(tnp.roots), order=2)(p)


# ------------------------------------------------------------------------------ functional
def test_functional():
    x = R(3, 4)
    with pytest.raises(LookupError, match="vectorised tnp"):
        grad(lambda a: tnp.sum(tnp.apply_along_axis(np.sum, 0, a)), x)
    with pytest.raises(LookupError, match="vectorised tnp"):
        grad(lambda a: tnp.sum(tnp.apply_over_axes(np.sum, a, [0])), x)
    with pytest.raises(LookupError, match="vectorised tnp"):
        grad(lambda a: tnp.sum(tnp.piecewise(a, [np.asarray(a) > 0], [lambda v: v * 2, 0.0])), x)
    g = grad(lambda a: tnp.sum(tnp.piecewise(a, [np.asarray(a) > 0], [1.0, -1.0])), x)
    assert g is None or np.allclose(np.asarray(g), 0)


# ------------------------------------------------------------------------------ random
def seeded(fn, seed=3):
    def f(*a):
        tnp.random.seed(seed)
        return fn(*a)
    return f


LOC_SCALE = ["normal", "laplace", "logistic", "gumbel"]


@pytest.mark.parametrize("name", LOC_SCALE)
def test_location_scale(name):
    fn = getattr(tnp.random, name)
    check_grads(sq(seeded(lambda m, s: fn(m, s, size=(2, 3)))), order=2)(R(3), P(3))
    check_grads(sq(seeded(lambda m, s: fn(loc=m, scale=s))), order=2)(R(3), P(3))
    check_grads(sq(lambda m, s: getattr(tnp.random.default_rng(4), name)(m, s)), order=2)(R(3), P(3))


def test_normal_formula():
    m, s = R(3), P(3)
    tnp.random.seed(0)
    with GradientTape(persistent=True) as t:
        t.watch([m, s])
        y = tnp.random.normal(m, s)
    assert np.allclose(np.asarray(t.gradient(y, m)), 1.0)
    assert np.allclose(np.asarray(t.gradient(y, s)), (np.asarray(y) - np.asarray(m)) / np.asarray(s))


def test_uniform_exponential_rayleigh_lognormal():
    check_grads(sq(seeded(lambda a, b: tnp.random.uniform(a, a + b))), order=2)(R(3), P(3))
    check_grads(sq(seeded(lambda a, b: tnp.random.uniform(low=a, high=b + 3, size=(2, 3)))),
                order=2)(R(3), P(3))
    for n in ("exponential", "rayleigh"):
        check_grads(sq(seeded(lambda s: getattr(tnp.random, n)(s))), order=2)(P(4))
        check_grads(sq(seeded(lambda s: getattr(tnp.random, n)(scale=s, size=(2, 4)))), order=2)(P(4))
    check_grads(sq(seeded(lambda m, s: tnp.random.lognormal(m, s))), order=2)(R(3) * 0.3, P(3))
    check_grads(sq(lambda m, s: tnp.random.RandomState(1).lognormal(m, s)), order=2)(R(3) * 0.3, P(3))


def test_triangular_gamma_vonmises():
    check_grads(sq(seeded(lambda l, m, r: tnp.random.triangular(l, l + m, l + m + r, size=(5, 3)))),
                order=2)(R(3), P(3), P(3, seed=1))
    check_grads(sq(seeded(lambda s: tnp.random.gamma(2.5, s, size=(2, 3)))), order=2)(P(3))
    check_grads(sq(seeded(lambda m: tnp.random.vonmises(m, 2.0))), order=2)(R(4) * 0.3)


def test_multivariate_normal():
    c = np.random.default_rng(0).standard_normal((3, 3))
    cov = tnp.asarray(c @ c.T + 3 * np.eye(3))

    def f(m, cv):
        return tnp.random.multivariate_normal(m, (cv + tnp.linalg.matrix_transpose(cv)) * 0.5, size=4)
    check_grads(sq(seeded(f)), order=2)(R(3), cov)
    check_grads(sq(seeded(lambda m: tnp.random.multivariate_normal(m, cov))), order=2)(R(3))


def test_choice_permutation_of_floats():
    check_grads(sq(seeded(lambda a: tnp.random.choice(a, size=7))), order=2)(R(5))
    check_grads(sq(seeded(lambda a: tnp.random.permutation(a))), order=2)(R(2, 3))
    check_grads(sq(lambda a: tnp.random.default_rng(2).permutation(a)), order=2)(R(5))
    a = R(3)
    tnp.random.seed(1)
    with GradientTape() as t:
        t.watch(a)
        y = tnp.random.choice(a, size=50)
    g = t.gradient(tnp.sum(y), a)
    counts = [int(np.sum(np.asarray(y) == v)) for v in np.asarray(a)]
    assert np.allclose(np.asarray(g), counts)


INT_SAMPLERS = {
    "binomial": lambda: tnp.random.binomial(5, 0.3, 4), "poisson": lambda: tnp.random.poisson(2.0, 4),
    "randint": lambda: tnp.random.randint(0, 5, 4), "random_integers": None,
    "geometric": lambda: tnp.random.geometric(0.3, 4),
    "hypergeometric": lambda: tnp.random.hypergeometric(5, 4, 3, 4),
    "negative_binomial": lambda: tnp.random.negative_binomial(3, 0.4, 4),
    "zipf": lambda: tnp.random.zipf(2.0, 4), "logseries": lambda: tnp.random.logseries(0.5, 4),
    "multinomial": lambda: tnp.random.multinomial(5, [0.2, 0.8]),
}
SHAPE_SAMPLERS = ["beta", "chisquare", "dirichlet", "f", "noncentral_chisquare", "noncentral_f",
                  "pareto", "power", "standard_gamma", "standard_t", "wald", "weibull"]
NO_PARAM = ["rand", "randn", "random", "random_sample", "ranf", "sample", "standard_normal",
            "standard_cauchy", "standard_exponential"]


def test_random_declarations():
    for n, call in INT_SAMPLERS.items():
        assert "random." + n in registry.NONDIFF
        if call is not None:
            assert not_differentiable(call()), n
    for n in SHAPE_SAMPLERS:   # non-zero derivative: a rule that stops with a clear error
        assert "random." + n in registry.VJPS and "random." + n not in registry.NONDIFF, n
    for n in NO_PARAM:
        assert "random." + n in registry.NONDIFF
        tnp.random.seed(0)
        a = np.asarray(getattr(tnp.random, n)(3) if n not in ("rand", "randn") else getattr(tnp.random, n)(3))
        tnp.random.seed(0)
        b = np.asarray(getattr(tnp.random, n)(3))
        assert np.array_equal(a, b)
    for n in ("seed", "get_state", "set_state", "default_rng", "get_bit_generator",
              "set_bit_generator", "bytes", "shuffle"):
        assert "random." + n in registry.NO_ARRAY_OUTPUT
    assert isinstance(tnp.random.bytes(3), bytes)
    assert tnp.random.shuffle(tnp.arange(3.0)) is None


SHAPE_CALLS = {
    "beta": lambda a: tnp.random.beta(a, a), "chisquare": lambda a: tnp.random.chisquare(a),
    "dirichlet": lambda a: tnp.random.dirichlet(a), "f": lambda a: tnp.random.f(a, a),
    "noncentral_chisquare": lambda a: tnp.random.noncentral_chisquare(a, a),
    "noncentral_f": lambda a: tnp.random.noncentral_f(a, a, a),
    "pareto": lambda a: tnp.random.pareto(a), "power": lambda a: tnp.random.power(a),
    "standard_gamma": lambda a: tnp.random.standard_gamma(a),
    "standard_t": lambda a: tnp.random.standard_t(a), "wald": lambda a: tnp.random.wald(a, a),
    "weibull": lambda a: tnp.random.weibull(a), "gamma (shape)": lambda a: tnp.random.gamma(a),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CALLS))
def test_a_gradient_through_a_shape_parameter_stops_with_a_clear_error(name):
    a = P(3)
    tnp.random.seed(0)
    with GradientTape(persistent=True) as t:
        t.watch(a)
        y = SHAPE_CALLS[name](a)
        d = SHAPE_CALLS[name](tt.stop_gradient(a))    # the documented way around it
        z = d * a
    assert np.all(np.isfinite(np.asarray(y)))
    with pytest.raises(LookupError, match="shape parameter"):
        t.gradient(tnp.sum(y), a)
    expected = np.asarray(d) if np.ndim(d) == 1 else np.asarray(d).sum(axis=0)
    np.testing.assert_allclose(np.asarray(t.gradient(tnp.sum(z), a)), expected)


def test_arrays_passed_by_keyword():
    check_grads(sq(lambda p, x: tnp.polyval(p=p, x=x)), order=2)(R(3), R(2, seed=1))
    check_grads(sq(lambda x: tnp.sort(a=x)), order=2)(R(4))
    check_grads(sq(seeded(lambda a: tnp.random.choice(a=a, size=3))), order=2)(R(4))
