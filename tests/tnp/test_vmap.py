"""tnp.vmap: a function of one example run on a batch equals the stack of per-example calls
(values, shapes, dtypes), through batching rules where they exist and a per-example loop for
one operation (with a warning) or the whole function (untraceable) otherwise."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
from tnp.extend import VmapFallbackWarning


def _loop(f, *xs, in_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(xs)
    n = len(next(x for x, a in zip(xs, axes) if a is not None))
    outs = [f(*(x[i] if a is not None else x for x, a in zip(xs, axes))) for i in range(n)]
    if isinstance(outs[0], (tuple, list)):
        return [np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0]))]
    return np.stack([np.asarray(o) for o in outs])


def _check(f, *xs, in_axes=0, rtol=1e-6, strict=True):
    with warnings.catch_warnings():
        if strict:
            warnings.simplefilter("error", VmapFallbackWarning)
        got = tnp.vmap(f, in_axes=in_axes)(*xs)
    want = _loop(f, *xs, in_axes=in_axes)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-6)
    else:
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-6)


RNG = np.random.default_rng(0)
X = tnp.asarray(RNG.standard_normal((5, 3, 4)).astype(np.float32))
W = tnp.asarray(RNG.standard_normal((4, 6)).astype(np.float32))
V = tnp.asarray(RNG.standard_normal((5, 4)).astype(np.float32))


@pytest.mark.parametrize("f", [
    lambda x: tnp.tanh(x) * 2.0 + 1.0,
    lambda x: tnp.sum(x, axis=-1),
    lambda x: tnp.sum(x),
    lambda x: x.mean(axis=0, keepdims=True),
    lambda x: tnp.max(x, axis=1) - tnp.min(x),
    lambda x: tnp.argmax(x),
    lambda x: tnp.argmax(x, axis=0),
    lambda x: x @ W,
    lambda x: W.T @ x.T,
    lambda x: x.T,
    lambda x: tnp.transpose(x, (1, 0)),
    lambda x: x.reshape(-1),
    lambda x: x.reshape(4, 3)[1:, ::2],
    lambda x: x[..., None] * x[:, None, :],
    lambda x: tnp.expand_dims(x, 0) + 1,
    lambda x: tnp.squeeze(x[:1]),
    lambda x: tnp.broadcast_to(x[0], (2, 4)),
    lambda x: tnp.concatenate([x, tnp.ones((1, 4), dtype=x.dtype)], axis=0),
    lambda x: tnp.stack([x, x * 2], axis=-1),
    lambda x: tnp.where(x > 0, x, 0.0),
    lambda x: tnp.swapaxes(x, 0, 1),
    lambda x: (x.astype(tnp.float64) ** 2, tnp.exp(x)),
    lambda x: tnp.take_along_axis(x, tnp.argmax(x, axis=-1)[:, None], axis=-1),
])
def test_rules_equal_the_per_example_loop(f):
    _check(f, X)


def test_two_mapped_arguments_and_an_unmapped_one():
    _check(lambda x, v, w: (x @ v) + w.sum(), X, V, W, in_axes=(0, 0, None))
    _check(lambda v, x: v @ x.T, V, X)


def test_vector_matmuls():
    a = tnp.asarray(RNG.standard_normal((5, 4)).astype(np.float32))
    _check(lambda u, v: u @ v, a, V)                       # per-example dot: (5,)
    _check(lambda u: W.T @ u, a)                           # matrix @ mapped vector
    _check(lambda u: u[:, None] @ u[None, :], a)           # outer products


def test_an_operation_without_a_rule_runs_per_example_with_one_warning():
    f = lambda x: tnp.sort(x, axis=-1) + tnp.cumsum(x, axis=0)   # noqa: E731
    with pytest.warns(VmapFallbackWarning, match="sort"):
        got = tnp.vmap(f)(X)
    np.testing.assert_allclose(np.asarray(got), _loop(f, X), rtol=1e-6)


def test_an_untraceable_function_runs_as_a_loop():
    def f(x):
        return x * 2 if float(x.sum()) > 0 else -x
    with pytest.warns(VmapFallbackWarning, match="once per example"):
        got = tnp.vmap(f)(V)
    np.testing.assert_allclose(np.asarray(got), _loop(f, V))


def test_bad_batches():
    with pytest.raises(ValueError, match="one size along axis 0"):
        tnp.vmap(lambda a, b: a + b)(X, V[:3])
    with pytest.raises(ValueError, match="in_axes"):
        tnp.vmap(lambda a: a, in_axes=(0, 0))(X)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5),
       st.sampled_from(["sum0", "sum1", "matmul", "ew", "T"]))
def test_shapes_from_hypothesis(b, m, n, op):
    rng = np.random.default_rng(b * 100 + m * 10 + n)
    x = tnp.asarray(rng.standard_normal((b, m, n)))
    w = tnp.asarray(rng.standard_normal((n, 3)))
    f = {"sum0": lambda a: a.sum(axis=0), "sum1": lambda a: a.sum(axis=-1, keepdims=True),
         "matmul": lambda a: a @ w, "ew": lambda a: tnp.log1p(tnp.abs(a)) * a, "T": lambda a: a.T}[op]
    _check(f, x)
