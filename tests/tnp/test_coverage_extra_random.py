"""``tnp.random`` against ``numpy.random``: on the CPU every stream is NumPy's, so after the same
seed every legacy function, every ``Generator``/``RandomState`` method and every bit generator
gives NumPy's numbers exactly (values, dtype, shape, array-vs-scalar), for scalar and array
parameters of two dtypes and several ``size=`` shapes; bad parameters raise NumPy's exception
type."""
import pickle

import numpy as np
import pytest

import tnp  # noqa: F401 (the namespace under test, through both())
from tnp.testing import both

SIZES = [None, (4,), (2, 3)]
PDTYPES = {"f": ("float32", "float64"), "i": ("int32", "int64")}

# legacy distribution -> parameters, each (value, kind): 'f' real, 'i' integer
DISTRIBUTIONS = {
    "beta": ((0.5, "f"), (2.0, "f")),
    "binomial": ((10, "i"), (0.3, "f")),
    "chisquare": ((3.0, "f"),),
    "exponential": ((2.0, "f"),),
    "f": ((3.0, "f"), (5.0, "f")),
    "gamma": ((2.0, "f"), (1.5, "f")),
    "geometric": ((0.3, "f"),),
    "gumbel": ((0.5, "f"), (2.0, "f")),
    "hypergeometric": ((7, "i"), (5, "i"), (4, "i")),
    "laplace": ((0.5, "f"), (2.0, "f")),
    "logistic": ((0.5, "f"), (2.0, "f")),
    "lognormal": ((0.5, "f"), (0.7, "f")),
    "logseries": ((0.6, "f"),),
    "negative_binomial": ((5, "i"), (0.4, "f")),
    "noncentral_chisquare": ((3.0, "f"), (1.5, "f")),
    "noncentral_f": ((3.0, "f"), (5.0, "f"), (1.5, "f")),
    "normal": ((0.5, "f"), (2.0, "f")),
    "pareto": ((3.0, "f"),),
    "poisson": ((4.0, "f"),),
    "power": ((2.0, "f"),),
    "rayleigh": ((1.5, "f"),),
    "standard_cauchy": (),
    "standard_exponential": (),
    "standard_gamma": ((2.5, "f"),),
    "standard_normal": (),
    "standard_t": ((4.0, "f"),),
    "triangular": ((-1.0, "f"), (0.0, "f"), (2.0, "f")),
    "uniform": ((-1.0, "f"), (3.0, "f")),
    "vonmises": ((0.5, "f"), (2.0, "f")),
    "wald": ((1.0, "f"), (2.0, "f")),
    "weibull": ((1.5, "f"),),
    "zipf": ((2.5, "f"),),
}
# size-only functions of the legacy interface
SIZE_ONLY = ["random", "random_sample", "ranf", "sample"]
# a bad parameter for each distribution that has one (NumPy raises ValueError)
BAD = {"beta": (-1.0, 2.0), "binomial": (10, 1.5), "chisquare": (-1.0,), "exponential": (-1.0,),
       "gamma": (-2.0, 1.0), "geometric": (0.0,), "normal": (0.0, -1.0), "poisson": (-1.0,),
       "uniform": (0.0, np.inf), "zipf": (0.5,), "hypergeometric": (2, 2, 10),
       "logseries": (1.5,), "wald": (-1.0, 1.0), "triangular": (2.0, 1.0, 0.0)}


def _params(xp, spec, dtype_kind, shape):
    """The parameters as Python scalars (``dtype_kind`` None) or as xp arrays of one dtype,
    broadcasting over the last axis of ``shape``."""
    out = []
    for value, kind in spec:
        if dtype_kind is None:
            out.append(value)
        else:
            dt = PDTYPES[kind][dtype_kind]
            n = shape[-1] if shape else 1
            out.append(xp.full((n,), value, dtype=dt))
    return out


def _seed(xp, seed=12345):
    """Seed the legacy global stream (returns None, so ``_seed(xp) or xp.random.f(...)``)."""
    xp.random.seed(seed)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_legacy_distributions_scalar_params(name, size):
    spec = DISTRIBUTIONS[name]
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(*_params(xp, spec, None, size), size=size))


@pytest.mark.parametrize("dtype_kind", [0, 1])
@pytest.mark.parametrize("size", [(4,), (2, 3)])
@pytest.mark.parametrize("name", sorted(n for n, s in DISTRIBUTIONS.items() if s))
def test_legacy_distributions_array_params(name, size, dtype_kind):
    """Parameters given as tnp arrays (float32/float64 or int32/int64) broadcast as in NumPy."""
    spec = DISTRIBUTIONS[name]
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(*_params(xp, spec, dtype_kind, size),
                                                          size=size))
    # without size=: the shape of the parameters
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(*_params(xp, spec, dtype_kind, size)))


@pytest.mark.parametrize("name", sorted(BAD))
def test_legacy_bad_parameters_raise_like_numpy(name):
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(*BAD[name], size=3))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", SIZE_ONLY)
def test_legacy_size_only(name, size):
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(size))
    both(lambda xp: _seed(xp) or getattr(xp.random, name)(size=size))


def test_legacy_rand_randn_randint_random_integers():
    both(lambda xp: _seed(xp) or xp.random.rand())
    both(lambda xp: _seed(xp) or xp.random.rand(3, 2))
    both(lambda xp: _seed(xp) or xp.random.randn())
    both(lambda xp: _seed(xp) or xp.random.randn(2, 4))
    for dtype in ("int8", "int64", "uint16", bool):
        both(lambda xp: _seed(xp) or xp.random.randint(0, 2 if dtype is bool else 100, size=(3, 2), dtype=dtype))
    both(lambda xp: _seed(xp) or xp.random.randint(7))
    both(lambda xp: _seed(xp) or xp.random.randint(xp.asarray([3, 10]), xp.asarray([[5], [20]])))
    both(lambda xp: _seed(xp) or xp.random.randint(5, 2))                       # ValueError: low >= high
    both(lambda xp: _seed(xp) or xp.random.randint(0, 300, dtype="int8"))       # ValueError: out of bounds
    with pytest.warns(DeprecationWarning):
        both(lambda xp: _seed(xp) or xp.random.random_integers(1, 6, size=(2, 3)))


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_legacy_choice_permutation_shuffle(dtype):
    a = np.arange(10, dtype=dtype)
    both(lambda xp: _seed(xp) or xp.random.choice(5))
    both(lambda xp: _seed(xp) or xp.random.choice(5, 3))
    both(lambda xp: _seed(xp) or xp.random.choice(xp.asarray(a), (2, 3)))
    both(lambda xp: _seed(xp) or xp.random.choice(xp.asarray(a), 4, replace=False))
    p = np.linspace(1, 2, 10)
    both(lambda xp: _seed(xp) or xp.random.choice(xp.asarray(a), 6, p=xp.asarray(p / p.sum())))
    both(lambda xp: _seed(xp) or xp.random.choice(xp.asarray(a), 20, replace=False))   # ValueError
    both(lambda xp: _seed(xp) or xp.random.choice(xp.asarray(a), 3, p=[0.5] * 10))     # ValueError
    both(lambda xp: _seed(xp) or xp.random.permutation(7))
    both(lambda xp: _seed(xp) or xp.random.permutation(xp.asarray(a.reshape(5, 2))))

    def shuffled(xp, shape):
        x = xp.asarray(a.reshape(shape))
        assert _seed(xp) or xp.random.shuffle(x) is None
        return x
    both(shuffled, (10,))
    both(shuffled, (5, 2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_legacy_multivariate(dtype):
    mean = np.array([1.0, -1.0], dtype=dtype)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]], dtype=dtype)
    both(lambda xp: _seed(xp) or xp.random.multivariate_normal(xp.asarray(mean), xp.asarray(cov)))
    both(lambda xp: _seed(xp) or xp.random.multivariate_normal(xp.asarray(mean), xp.asarray(cov), size=(2, 3)))
    both(lambda xp: _seed(xp) or xp.random.multinomial(20, xp.asarray(np.array([0.2, 0.3, 0.5], dtype=dtype))))
    both(lambda xp: _seed(xp) or xp.random.multinomial(20, [0.25] * 4, size=(3, 2)))
    both(lambda xp: _seed(xp) or xp.random.dirichlet(xp.asarray(np.array([0.5, 1.0, 2.0], dtype=dtype))))
    both(lambda xp: _seed(xp) or xp.random.dirichlet([1.0, 2.0], size=(2, 3)))
    both(lambda xp: _seed(xp) or xp.random.dirichlet([-1.0, 2.0]))                       # ValueError


def test_legacy_bytes_and_state():
    both(lambda xp: _seed(xp) or xp.random.bytes(0))
    both(lambda xp: _seed(xp) or xp.random.bytes(13))

    def state_roundtrip(xp):
        _seed(xp, 7)
        r = xp.random
        st = r.get_state()
        first = r.normal(size=5)
        r.set_state(st)
        again = r.normal(size=5)
        assert (first == again).all()
        d = r.get_state(legacy=False)
        return again, st[0], st[1], st[2:], d["state"]["key"].tolist(), d["bit_generator"]
    both(state_roundtrip)
    both(lambda xp: xp.random.seed(-1))                                   # ValueError
    both(lambda xp: xp.random.seed(2 ** 40) or xp.random.get_state()[1][:4])
    both(lambda xp: xp.random.seed([1, 2, 3]) or xp.random.random(3))
    both(lambda xp: type(xp.random.get_bit_generator()).__name__)

    def set_bitgen(xp):
        old = xp.random.get_bit_generator()
        try:
            xp.random.set_bit_generator(xp.random.PCG64(5))
            return xp.random.normal(size=3)
        finally:
            xp.random.set_bit_generator(old)
    both(set_bitgen)


# ------------------------------------------------------------------------------------ Generator
GEN_METHODS = {
    "beta": ((0.5, 2.0), {}), "binomial": ((10, 0.3), {}), "chisquare": ((3.0,), {}),
    "exponential": ((2.0,), {}), "f": ((3.0, 5.0), {}), "gamma": ((2.0, 1.5), {}),
    "geometric": ((0.3,), {}), "gumbel": ((0.5, 2.0), {}), "hypergeometric": ((7, 5, 4), {}),
    "integers": ((0, 100), {}), "laplace": ((0.5, 2.0), {}), "logistic": ((0.5, 2.0), {}),
    "lognormal": ((0.5, 0.7), {}), "logseries": ((0.6,), {}),
    "negative_binomial": ((5, 0.4), {}), "noncentral_chisquare": ((3.0, 1.5), {}),
    "noncentral_f": ((3.0, 5.0, 1.5), {}), "normal": ((0.5, 2.0), {}), "pareto": ((3.0,), {}),
    "poisson": ((4.0,), {}), "power": ((2.0,), {}), "random": ((), {}), "rayleigh": ((1.5,), {}),
    "standard_cauchy": ((), {}), "standard_exponential": ((), {}),
    "standard_gamma": ((2.5,), {}), "standard_normal": ((), {}), "standard_t": ((4.0,), {}),
    "triangular": ((-1.0, 0.0, 2.0), {}), "uniform": ((-1.0, 3.0), {}),
    "vonmises": ((0.5, 2.0), {}), "wald": ((1.0, 2.0), {}), "weibull": ((1.5,), {}),
    "zipf": ((2.5,), {}),
}
GEN_SPECIAL = {"bytes", "choice", "dirichlet", "multinomial", "multivariate_hypergeometric",
               "multivariate_normal", "permutation", "permuted", "shuffle", "spawn",
               "bit_generator"}
BITGENS = ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"]


def test_every_generator_method_is_swept():
    public = {m for m in dir(np.random.Generator) if not m.startswith("_")}
    assert public == set(GEN_METHODS) | GEN_SPECIAL


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("method", sorted(GEN_METHODS))
def test_generator_methods(method, size):
    args, kw = GEN_METHODS[method]
    both(lambda xp: getattr(xp.random.default_rng(2024), method)(*args, size=size, **kw))


@pytest.mark.parametrize("pdtype", ["float32", "float64"])
@pytest.mark.parametrize("method", sorted(m for m, (a, _) in GEN_METHODS.items() if a))
def test_generator_methods_array_params(method, pdtype):
    args, _ = GEN_METHODS[method]
    dt = (lambda v: "int64" if isinstance(v, int) else pdtype)

    def body(xp):
        rng = xp.random.default_rng(99)
        ps = [xp.full((3,), v, dtype=dt(v)) for v in args]
        return getattr(rng, method)(*ps), getattr(rng, method)(*ps, size=(2, 3))
    both(body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", ["random", "standard_normal", "standard_exponential",
                                    "standard_gamma"])
def test_generator_dtype_and_out(method, dtype):
    args = (2.5,) if method == "standard_gamma" else ()
    both(lambda xp: getattr(xp.random.default_rng(1), method)(*args, size=(2, 3), dtype=dtype))

    def into_out(xp):
        out = xp.zeros((4,), dtype=dtype)
        r = getattr(xp.random.default_rng(1), method)(*args, out=out, dtype=dtype)
        assert r is out
        return out
    both(into_out)
    both(lambda xp: getattr(xp.random.default_rng(1), method)(*args, dtype="int32"))  # TypeError


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", bool])
def test_generator_integers(dtype):
    hi = 2 if dtype is bool else 100
    both(lambda xp: xp.random.default_rng(3).integers(hi, size=(3, 2), dtype=dtype))
    both(lambda xp: xp.random.default_rng(3).integers(0, hi, size=5, dtype=dtype, endpoint=True))
    both(lambda xp: xp.random.default_rng(3).integers(xp.asarray([0, 10]), xp.asarray([[5], [50]]),
                                                      dtype=dtype if dtype is not bool else "int8"))
    both(lambda xp: xp.random.default_rng(3).integers(5, 2))                  # ValueError


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_generator_choice_permutation_shuffle_permuted(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    rng = lambda xp: xp.random.default_rng(5)  # noqa: E731
    both(lambda xp: rng(xp).choice(5))
    both(lambda xp: rng(xp).choice(xp.asarray(a), 2))
    both(lambda xp: rng(xp).choice(xp.asarray(a), 3, axis=1, replace=False))
    both(lambda xp: rng(xp).choice(xp.asarray(a.ravel()), (2, 2), p=xp.full(12, 1 / 12), shuffle=False))
    both(lambda xp: rng(xp).choice(xp.asarray(a), 9, replace=False))                 # ValueError
    both(lambda xp: rng(xp).permutation(6))
    both(lambda xp: rng(xp).permutation(xp.asarray(a), axis=1))

    def shuffled(xp, axis):
        x = xp.asarray(a.copy())
        assert rng(xp).shuffle(x, axis=axis) is None
        return x
    both(shuffled, 0)
    both(shuffled, 1)

    def permuted(xp, axis, inplace):
        x = xp.asarray(a.copy())
        if inplace:
            r = rng(xp).permuted(x, axis=axis, out=x)
            assert r is x
        else:
            r = rng(xp).permuted(x, axis=axis)
        return r, x
    for axis in (None, 0, 1):
        both(permuted, axis, False)
        both(permuted, axis, True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generator_multivariate(dtype):
    mean = np.array([1.0, -1.0], dtype=dtype)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]], dtype=dtype)
    rng = lambda xp: xp.random.default_rng(8)  # noqa: E731
    for method in ("svd", "eigh", "cholesky"):
        both(lambda xp: rng(xp).multivariate_normal(xp.asarray(mean), xp.asarray(cov), size=(2, 3),
                                                    method=method))
    both(lambda xp: rng(xp).multinomial(20, xp.asarray(np.array([0.2, 0.3, 0.5], dtype=dtype))))
    both(lambda xp: rng(xp).multinomial(xp.asarray([10, 20]), [0.25] * 4, size=(3, 2)))
    both(lambda xp: rng(xp).dirichlet(xp.asarray(np.array([0.5, 1.0, 2.0], dtype=dtype)), size=4))
    both(lambda xp: rng(xp).multivariate_hypergeometric([4, 5, 6], 7))
    both(lambda xp: rng(xp).multivariate_hypergeometric(xp.asarray([4, 5, 6]), 7, size=(2, 3),
                                                        method="count"))
    both(lambda xp: rng(xp).bytes(9))


def test_generator_spawn_and_bit_generator():
    def body(xp):
        rng = xp.random.default_rng(11)
        kids = rng.spawn(2)
        assert all(isinstance(k, xp.random.Generator) for k in kids)
        return [k.normal(size=3) for k in kids] + [rng.normal(size=2),
                                                   rng.bit_generator.state["state"]["state"]]
    both(body)
    both(lambda xp: xp.random.default_rng(xp.random.default_rng(3)).random(3))  # passes through


@pytest.mark.parametrize("name", BITGENS)
def test_bit_generators_drive_identical_streams(name):
    def body(xp):
        bg = getattr(xp.random, name)(42)
        g = xp.random.Generator(bg)
        r = g.normal(size=(2, 3)), g.integers(0, 10, size=4), g.random(dtype="float32")
        j = getattr(xp.random, name)(42)
        if hasattr(j, "jumped"):
            r += (xp.random.Generator(j.jumped()).random(2),)
        # bit generators are NumPy's own objects: their methods give NumPy arrays (both sides)
        r += (bg.random_raw(3).tolist(), bg.state["bit_generator"])
        assert isinstance(bg, xp.random.BitGenerator) and type(bg) is getattr(np.random, name)
        return r
    both(body)
    both(lambda xp: getattr(xp.random, name)(-3))        # ValueError


def test_seed_sequence_and_bit_generator_class():
    def body(xp):
        ss = xp.random.SeedSequence(1234)
        kids = ss.spawn(2)
        return (ss.generate_state(4).tolist(), kids[1].generate_state(2, dtype="uint64").tolist(),
                ss.entropy,
                xp.random.Generator(xp.random.PCG64(kids[0])).random(3))
    both(body)
    both(lambda xp: xp.random.BitGenerator(1))            # NotImplementedError (abstract base)
    both(lambda xp: issubclass(xp.random.SFC64, xp.random.BitGenerator))


@pytest.mark.parametrize("seed", [0, 2 ** 31, [3, 4]])
def test_random_state(seed):
    def body(xp):
        rs = xp.random.RandomState(seed)
        return (rs.normal(size=(2, 2)), rs.randint(10, size=3, dtype="int16"), rs.rand(),
                rs.tomaxint(2), rs.random_sample(3), rs.standard_t(xp.asarray([2.0, 5.0])),
                rs.choice(xp.arange(6, dtype="float32"), 3, replace=False), rs.permutation(4))
    both(body)
    both(lambda xp: xp.random.RandomState(xp.asarray(seed)).random(3))
    both(lambda xp: xp.random.RandomState(xp.random.MT19937(seed)).random(2))
    both(lambda xp: xp.random.RandomState("x"))           # TypeError


def test_every_legacy_name_is_swept():
    """Every function of numpy.random has a test above (this file's tables plus the special
    cases), so a new NumPy function fails here first."""
    special = {"bytes", "choice", "dirichlet", "multinomial", "multivariate_normal", "permutation",
               "rand", "randint", "randn", "random_integers", "shuffle", "seed", "get_state",
               "set_state", "get_bit_generator", "set_bit_generator"}
    classes = {"Generator", "RandomState", "SeedSequence", "MT19937", "Philox", "PCG64",
               "PCG64DXSM", "SFC64", "default_rng", "BitGenerator"}
    assert set(np.random.__all__) <= set(DISTRIBUTIONS) | set(SIZE_ONLY) | special | classes


def test_generators_pickle_and_repr():
    def body(xp):
        g = pickle.loads(pickle.dumps(xp.random.default_rng(4)))
        rs = pickle.loads(pickle.dumps(xp.random.RandomState(4)))
        g.random(2)
        g3 = pickle.loads(pickle.dumps(g))          # the state travels with the pickle
        return (g.random(3), g3.random(3), rs.random(2), type(g).__name__,
                repr(xp.random.default_rng(4)).split(" at ")[0])
    both(body)
