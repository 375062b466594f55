"""VJPs of indexing: ``x[key]`` (basic, advanced, boolean) and tnp's indexing routines."""
from __future__ import annotations

import tnp
from tnp._core.ndarray import ndarray

from ..registry import defvjp, section
from ..tape import custom_gradient

section("indexing")


def untake(g, key, shape):
    """Scatter-add ``g`` into zeros of ``shape`` at ``key`` (the adjoint of ``x[key]``).

    A differentiable primitive of its own (its VJP is indexing again), so gradients of
    gradients through indexing work; repeated advanced indices accumulate, as they must.
    """
    return _untake(g, key, tuple(shape))


@custom_gradient
def _untake(g, key, shape):
    gx = tnp.zeros(shape, dtype=g.dtype, device=g.device)
    tnp.add.at(gx, key, g)
    return gx, lambda dy: (dy[key], None, None)


def _getitem_vjp(ans, x, key):
    return lambda g: untake(g, key, x.shape)


defvjp("getitem", _getitem_vjp)
