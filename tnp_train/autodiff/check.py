"""Finite-difference checks of VJP rules (``check_grads``), as HIPS autograd's.

``check_grads(f, order=2)(*args)`` compares the tape's vector-Jacobian products of ``f`` with
central differences along random directions, in float64, for every float or complex argument;
with ``order=2`` it checks the gradient of the gradient too (nested tapes).
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import is_inexact

from .tape import GradientTape

__all__ = ["check_grads", "numerical_vjp_dot", "grad", "grad_of"]


def _float_positions(args):
    return [i for i, a in enumerate(args)
            if isinstance(a, tnp.ndarray) and is_inexact(a.dtype)]


def _random_like(rng, shape, dtype):
    """A standard normal draw of ``shape`` (complex dtypes: independent real and imaginary
    parts)."""
    r = rng.standard_normal(shape)
    if _np.issubdtype(dtype, _np.complexfloating):
        r = r + 1j * rng.standard_normal(shape)
    return r.astype(dtype)


def _as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def _dot(us, ys):
    """``sum(real(u * y))`` over the outputs: a real function of every output, so its gradient
    is defined for complex ones too."""
    total = 0.0
    for u, y in zip(us, ys):
        if u is None:
            continue
        t = tnp.sum(u * y)
        total = total + (tnp.real(t) if _np.iscomplexobj(t) else t)
    return total


def check_grads(f, order=1, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0, argnums=None):
    """Returns ``check(*args)`` that raises AssertionError if a VJP of ``f`` differs from finite
    differences (``u . f(x + e v) - u . f(x - e v)) / 2e`` against ``vjp(u) . v``).

    Complex arguments and outputs are checked too, in the tape's convention (HIPS autograd's:
    the cotangent of ``z = x + iy`` is ``dL/dx - i dL/dy``): ``u . y`` is ``real(sum(u y))`` and
    ``vjp(u) . v`` is ``real(sum(vjp(u) v))``, ``u`` and ``v`` with random real and imaginary
    parts."""

    def check(*args, **kwargs):
        rng = _np.random.default_rng(seed)
        positions = _float_positions(args) if argnums is None else list(argnums)
        if not positions:
            raise ValueError("check_grads: no floating-point array argument to differentiate")
        y0 = _as_list(f(*args, **kwargs))
        us = [tnp.asarray(_random_like(rng, _np.shape(y), _np.asarray(y).dtype))
              if is_inexact(_np.asarray(y).dtype) else None for y in y0]
        for p in positions:
            x = args[p]
            v = tnp.asarray(_random_like(rng, x.shape, x.dtype))

            def shifted(delta):
                a = list(args)
                a[p] = x + delta * v
                return _as_list(f(*a, **kwargs))

            numeric = (float(_dot(us, shifted(eps))) - float(_dot(us, shifted(-eps)))) / (2 * eps)
            with GradientTape() as tape:
                tape.watch(x)
                ys = _as_list(f(*args, **kwargs))
                target = _dot(us, ys)
            g = tape.gradient(target, x)
            analytic = 0.0 if g is None else float(tnp.real(tnp.sum(g * v)))
            tol = atol + rtol * max(abs(numeric), abs(analytic))
            if not abs(numeric - analytic) <= tol:
                raise AssertionError(
                    f"check_grads: argument {p} of {getattr(f, '__name__', f)}: "
                    f"VJP . v = {analytic!r}, finite differences = {numeric!r} (eps={eps})")
            if order > 1:
                def grad_f(*a, _p=p, **kw):
                    xx = a[_p]
                    with GradientTape() as t2:
                        t2.watch(xx)
                        t = _dot(us, _as_list(f(*a, **kw)))
                    gg = t2.gradient(t, xx)
                    return gg if gg is not None else tnp.zeros_like(xx)
                check_grads(grad_f, order=order - 1, eps=eps, rtol=rtol * 10, atol=atol * 10,
                            seed=seed + 1, argnums=[p])(*args, **kwargs)

    return check


def numerical_vjp_dot(f, x, u, v, eps=1e-6):
    """``u . (f(x + e v) - f(x - e v)) / 2e``: a directional derivative, for tests."""
    hi = f(x + eps * v)
    lo = f(x - eps * v)
    return float(tnp.sum(u * (hi - lo))) / (2 * eps)


def grad(f, *xs):
    """The gradients of ``f(*xs)`` with respect to every ``x`` (each watched on a fresh tape)."""
    with GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
    return tape.gradient(y, list(xs))


def grad_of(f, x, *rest, u=None):
    """The gradient of ``sum(u * f(x, *rest))`` with respect to ``x`` (``u``: ones by default)."""
    with GradientTape() as t:
        t.watch(x)
        y = f(x, *rest)
        target = tnp.sum(y if u is None else y * u)
    return t.gradient(target, x)
