"""Compiled against eager, across the registry: every ufunc on several dtypes, and a table of
functions and methods, give the same values (bit for bit), dtypes and shapes (or the same
error), whether an operation runs alone or inside a fused chain."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
from tnp._core.dispatch import REGISTRY
from tnp._jit import JitFallbackWarning


def outcome(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                r = fn(*args)
            except Exception as e:     # the same error, eagerly and compiled
                return ("raised", type(e))
    return ("value", _flat(r))


def _flat(r):
    if isinstance(r, (tuple, list)):
        return tuple(_flat(e) for e in r)
    if isinstance(r, tnp.ndarray):
        a = np.asarray(r)
        return (type(r).__name__, a.dtype.str, a.shape, a.tobytes())
    return r


def check(fn, *args):
    want = outcome(fn, *args)
    got = outcome(tnp.jit(fn), *args)
    assert got == want, (got, want)


_RNG = np.random.default_rng(5)
_INPUTS = {
    "f8": tnp.asarray(np.concatenate([_RNG.standard_normal(9) * 3, [0.0, -0.0, 0.5, 2.0]])),
    "f4": tnp.asarray((np.concatenate([_RNG.standard_normal(9) * 3, [0.0, -0.0, 0.5, 2.0]]))
                      .astype(np.float32)),
    "i4": tnp.asarray(_RNG.integers(-20, 20, 13).astype(np.int32)),
    "u1": tnp.asarray(_RNG.integers(0, 255, 13).astype(np.uint8)),
    "b": tnp.asarray(_RNG.random(13) < 0.5),
}
_UFUNCS = sorted(n for n, i in REGISTRY.items() if i.kind == "ufunc")


def _ufunc(name):
    return getattr(tnp, name)


@pytest.mark.parametrize("dt", sorted(_INPUTS))
@pytest.mark.parametrize("name", _UFUNCS)
def test_every_ufunc_alone(name, dt):
    u = _ufunc(name)
    x = _INPUTS[dt]
    if u.nin == 1:
        check(lambda a: u(a), x)
    elif u.nin == 2:
        check(lambda a, b: u(a, b), x, x[::-1].copy())
        check(lambda a: u(a, 2), x)       # a Python number (NEP 50)


def _valid(names, dt, call):
    ok = []
    for n in names:
        if outcome(lambda: call(_ufunc(n)))[0] == "value":
            ok.append(n)
    return ok


@pytest.mark.parametrize("dt", ["f4", "f8", "i4"])
def test_every_ufunc_inside_fused_chains(dt):
    """Each ufunc between other operations (where it is fused: inline, or a call of NumPy's
    own loop), all of one dtype in one compiled function."""
    x = _INPUTS[dt]
    y = x[::-1].copy()
    unary = _valid([n for n in _UFUNCS if _ufunc(n).nin == 1 and _ufunc(n).nout == 1], dt,
                   lambda u: u(x + x))
    binary = _valid([n for n in _UFUNCS if _ufunc(n).nin == 2 and _ufunc(n).nout == 1], dt,
                    lambda u: u(x * 1, y))
    with_number = _valid(binary, dt, lambda u: u(x * 1, 2))
    assert len(unary) > 20 and len(binary) > 20

    def chains(a, b):
        c = a + a
        d = a * 1
        return (tuple(_ufunc(n)(c) * 1 for n in unary),
                tuple(_ufunc(n)(d, b) + 0 for n in binary),
                tuple(_ufunc(n)(d, 2) for n in with_number))

    check(chains, x, y)
    assert len(tnp.jit(chains).lower(x, y).kernels) >= 1


def _m():
    return tnp.asarray(_RNG.standard_normal((4, 5)))


_FUNCTIONS = [
    ("sum", lambda a: tnp.sum(a, axis=1)), ("sum keepdims", lambda a: a.sum(-1, keepdims=True)),
    ("mean", lambda a: tnp.mean(a, axis=0)), ("std", lambda a: a.std(axis=1)),
    ("var", lambda a: tnp.var(a)), ("max", lambda a: a.max(axis=-1)),
    ("min", lambda a: tnp.min(a)), ("argmax", lambda a: tnp.argmax(a, axis=1)),
    ("cumsum", lambda a: tnp.cumsum(a, axis=1)), ("prod", lambda a: tnp.prod(a, axis=0)),
    ("reshape", lambda a: a.reshape(5, 4) + 1), ("ravel", lambda a: tnp.ravel(a) * 2),
    ("transpose", lambda a: a.T @ a), ("concatenate", lambda a: tnp.concatenate([a, a * 2])),
    ("stack", lambda a: tnp.stack([a, -a], axis=-1)), ("where", lambda a: tnp.where(a > 0, a, 0.0)),
    ("clip", lambda a: tnp.clip(a, -0.5, 0.5)), ("sort", lambda a: tnp.sort(a, axis=1)),
    ("argsort", lambda a: tnp.argsort(a, axis=0)), ("take", lambda a: tnp.take(a, [0, 2], axis=1)),
    ("matmul", lambda a: tnp.matmul(a, a.T)), ("dot", lambda a: tnp.dot(a[0], a[1])),
    ("einsum", lambda a: tnp.einsum("ij,ij->i", a, a)),
    ("linalg.inv", lambda a: tnp.linalg.inv(a[:, :4] @ a[:, :4].T + tnp.eye(4))),
    ("linalg.norm", lambda a: tnp.linalg.norm(a, axis=1)),
    ("fft.rfft", lambda a: tnp.fft.rfft(a, axis=-1).real), ("tile", lambda a: tnp.tile(a, (2, 1))),
    ("repeat", lambda a: tnp.repeat(a, 2, axis=0)), ("pad", lambda a: tnp.pad(a, 1)),
    ("roll", lambda a: tnp.roll(a, 2, axis=1)), ("diff", lambda a: tnp.diff(a, axis=1)),
    ("outer", lambda a: tnp.outer(a[0], a[1])), ("trace", lambda a: tnp.trace(a)),
    ("tril", lambda a: tnp.tril(a)), ("flip", lambda a: tnp.flip(a, axis=0)),
    ("expand_dims", lambda a: tnp.expand_dims(a, 0) * 2),
    ("broadcast_to", lambda a: tnp.broadcast_to(a[0], (3, 5)) + 1),
    ("astype", lambda a: (a * 10).astype(tnp.int32)), ("round", lambda a: tnp.round(a, 2)),
    ("nan_to_num", lambda a: tnp.nan_to_num(tnp.log(a))),
    ("median", lambda a: tnp.median(a, axis=1)), ("percentile", lambda a: tnp.percentile(a, 30)),
    ("getitem", lambda a: a[1:3, ::2] * a[0, 1]), ("newaxis", lambda a: a[:, None, :] - a[None]),
    ("fancy index", lambda a: a[[0, 3, 1]] + a[:, [4, 0]].sum()),
    ("setitem", lambda a: _set(a)), ("zeros_like", lambda a: tnp.zeros_like(a) + a),
    ("arange", lambda a: tnp.arange(5.0) * a), ("linspace", lambda a: tnp.linspace(0, 1, 5) + a),
    ("eye", lambda a: tnp.eye(4, 5) * a), ("full", lambda a: tnp.full((4, 5), 2.5) - a),
    ("meshgrid", lambda a: tnp.meshgrid(a[0], a[1, :3])[0] * 2),
    ("cross", lambda a: tnp.cross(a[:, :3], a[:, 1:4])), ("sign", lambda a: tnp.sign(a) * a),
    ("logical", lambda a: tnp.logical_and(a > 0, a < 1).astype(tnp.float64) + a),
    ("complex", lambda a: tnp.abs(a * 1j + a)), ("real", lambda a: (a + 2j * a).imag),
    ("float32 mix", lambda a: a.astype(tnp.float32) * 2 + tnp.float32(1)),
    ("int mix", lambda a: (a * 3).astype(tnp.int64) // 2 + (a > 0)),
    ("divmod", lambda a: divmod(a, 0.7)), ("pow", lambda a: a ** 2 + a ** 3 + 2 ** a),
]


def _set(a):
    b = a.copy()
    b[0] = 7.0
    b[:, 1] += 1.0
    return b


@pytest.mark.parametrize("name, fn", _FUNCTIONS, ids=[n for n, _ in _FUNCTIONS])
def test_functions_compiled_equal_eager(name, fn):
    check(fn, _m())


def test_refused_functions_still_give_eager_results():
    for fn in (lambda a: tnp.unique(a), lambda a: a[a > 0], lambda a: tnp.histogram(a)[0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            check(fn, _m())


@pytest.mark.parametrize("fn, inputs", [
    # the dtype depends on the values: real for x >= 0, complex below
    (lambda x: tnp.emath.sqrt(x) * 2, ([4.0, 9.0], [-4.0, 9.0])),
    (lambda x: tnp.emath.arccos(x) + 1, ([0.5], [2.0])),
    (lambda x: tnp.emath.logn(2.0, x), ([4.0], [-4.0])),
    (lambda z: tnp.real_if_close(z) * 2, ([1 + 0j], [1 + 1j])),
    # the length depends on the values
    (lambda a: tnp.arange(a, 4.5) * 2, (0.1, -1.0)),
    (lambda r: tnp.repeat(tnp.asarray([1.0, 2.0]), r), ([1, 2], [3, 1])),
])
def test_value_dependent_dtypes_and_lengths_run_eagerly(fn, inputs):
    """A compiled program fixes dtypes and shapes at trace time: an operation whose result dtype
    or length depends on the values is refused (the call runs eagerly, with a warning) rather
    than replayed with the first call's dtype or length (a crash in a fused kernel, or values
    silently cut). Eager results, dtypes and shapes, for both inputs."""
    f = tnp.jit(fn)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        outs = [f(tnp.asarray(x)) for x in inputs]
    assert any(issubclass(w.category, JitFallbackWarning) and "depend" in str(w.message)
               for w in seen), [str(w.message) for w in seen]
    for x, got in zip(inputs, outs):
        want = fn(tnp.asarray(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_complex_emath_and_python_repeats_still_compile():
    f = tnp.jit(lambda z: tnp.emath.sqrt(z) * 2)
    z = tnp.asarray([-4 + 0j, 9 + 0j])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        np.testing.assert_array_equal(np.asarray(f(z)), np.asarray(tnp.emath.sqrt(z) * 2))
        g = tnp.jit(lambda x: tnp.repeat(x, 2) * 2)
        np.testing.assert_array_equal(np.asarray(g(tnp.asarray([1.0, 2.0]))), [2, 2, 4, 4])


_shapes = st.sampled_from([(1,), (5,), (3, 1), (3, 5), (2, 3, 5)])


@settings(max_examples=12)
@given(st.tuples(_shapes, _shapes), st.sampled_from(["f4", "f8"]),
       st.integers(0, 2 ** 31 - 1))
def test_broadcasting_chains_fuse_exactly(shapes, dt, seed):
    """A fused chain over operands of different shapes (full, row, column, scalar
    broadcasts) equals eager, bit for bit, or raises as eagerly."""
    rng = np.random.default_rng(seed)
    a = tnp.asarray(rng.standard_normal(shapes[0]).astype(dt))
    b = tnp.asarray(rng.standard_normal(shapes[1]).astype(dt))

    def chain(a, b):
        c = a * b + 0.5
        d = tnp.exp(c) - b
        return tnp.where(d > 0, d, c * 2.0) / (1.0 + a * a)

    check(chain, a, b)


@given(st.sampled_from([(2, 2), (3, 7), (5, 8), (2, 9), (4, 129), (1, 1000), (2, 3, 33)]),
       st.booleans(), st.sampled_from(["f4", "f8"]), st.integers(0, 2 ** 31 - 1))
def test_row_reductions_fuse_exactly(shape, keepdims, dt, seed):
    """sum, mean, max and min over the last axis, inside chains (the patterns of softmax and
    layer norm), equal eager bit for bit: the kernel calls NumPy's own reduce loops."""
    x = tnp.asarray((np.random.default_rng(seed).standard_normal(shape) * 4).astype(dt))

    def rows(x):
        m = x.max(axis=-1, keepdims=True)
        e = tnp.exp(x - m)
        s = e / e.sum(axis=-1, keepdims=True)
        mu = tnp.mean(x, axis=-1, keepdims=True)
        v = tnp.mean((x - mu) ** 2, axis=-1, keepdims=keepdims)
        return s, v, tnp.min(x * 2, axis=-1, keepdims=keepdims)

    check(rows, x)
