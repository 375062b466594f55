"""``tt.vectorized_map``: TF's ``tf.vectorized_map`` on ``tnp.vmap``.

``fn`` is traced once on one element of ``elems`` and run on all of them as one program (TF's
pfor): the operations with a batching rule work on the whole batch at once, the others once per
element (TF's while-loop fallback, announced by one ``VmapFallbackWarning`` each). A
``GradientTape`` inside ``fn`` is traced with its backward pass, so per-example gradients are one
vectorized program.
"""
from __future__ import annotations

import warnings
import weakref

import tnp
from tnp.extend import VmapFallbackWarning, is_tnp_array

__all__ = ["vectorized_map"]

_cache = weakref.WeakKeyDictionary()   # fn -> its tnp.vmap (one trace per signature, kept)


def vectorized_map(fn, elems, fallback_to_while_loop=True):
    """Mirrors ``tf.vectorized_map(fn, elems, fallback_to_while_loop=True)``: ``fn`` applied to
    every element of ``elems`` (an array, or a nested structure of arrays with one size along
    axis 0; ``fn`` receives one element of the same structure), results stacked on axis 0.
    ``fallback_to_while_loop=False``: an operation without a batching rule, or a function that
    cannot be traced, raises ValueError instead of running once per element."""
    if not callable(fn):
        raise TypeError(f"vectorized_map: fn must be callable, got {type(fn).__name__}")
    elems = _as_arrays(elems)
    try:
        mapped = _cache.get(fn)
    except TypeError:          # not weak-referenceable
        mapped = None
    if mapped is None:
        mapped = tnp.vmap(fn)
        try:
            _cache[fn] = mapped
        except TypeError:
            pass
    if fallback_to_while_loop:
        return mapped(elems)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        try:
            return mapped(elems)
        except VmapFallbackWarning as w:
            raise ValueError(f"vectorized_map: {w} (fallback_to_while_loop=False)") from None


def _as_arrays(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_as_arrays(e) for e in x)
    if isinstance(x, dict):
        return {k: _as_arrays(v) for k, v in x.items()}
    return x if is_tnp_array(x) else tnp.asarray(x)
