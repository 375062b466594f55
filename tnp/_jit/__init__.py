"""Compiled NumPy code: ``tnp.jit`` traces a function of tnp arrays into a graph of tnp
operations, fuses its elementwise chains and row reductions into Numba kernels that compute
exactly what NumPy computes, and replays it without tnp's dispatch. ``tnp.vectorize`` uses the
same tracer to replace NumPy's per-element Python loop by one fused call where it can.

Nothing heavy is imported with tnp: the tracer and compiler load at the first ``tnp.jit``,
Numba at the first kernel. See ``docs/compile.md``.
"""
__all__ = ["jit", "JitFunction", "Lowered", "TraceError", "UnsupportedTrace",
           "JitFallbackWarning", "RetraceWarning", "vmap", "VmapFallbackWarning"]


def jit(fn=None, *, static_argnums=(), donate_argnums=(), fuse=True):
    """Compile ``fn`` for the signatures it is called with; mirrors ``jax.jit``.

    ``@tnp.jit``, ``@tnp.jit(static_argnums=1)`` and ``tnp.jit(f)`` all work. The result equals
    the eager call's (values bit for bit, dtypes, shapes); see ``docs/compile.md``.

    * ``static_argnums``: positions of arguments whose *values* the trace may use (Python
      control flow, shapes); each new value traces again. Python numbers, strings and other
      non-array arguments are always part of the signature by value.
    * ``donate_argnums``: arguments whose memory an output may take over (an Adam step
      updating ``p, m, v`` then allocates nothing); their contents are undefined afterwards,
      as with ``jax.jit``.
    * ``fuse``: False compiles the replay without fused kernels (for comparison).

    The returned function has ``.lower(*args)`` (the program for that signature:
    ``.as_text()``, ``.kernels``, ``.fused_nodes``), ``.trace_count``, ``.clear_cache()``.
    """
    from .api import jit as _jit

    return _jit(fn, static_argnums=static_argnums, donate_argnums=donate_argnums, fuse=fuse)


def vmap(fn, in_axes=0):
    """``fn`` of one example run on a batch of examples as one program; mirrors ``jax.vmap``
    (``in_axes`` 0 or None, per argument or for all; outputs stacked on axis 0):
    ``tnp.vmap(f)(xs)`` equals ``tnp.stack([f(x) for x in xs])``. See ``docs/compile.md``."""
    from .batching import vmap as _vmap

    return _vmap(fn, in_axes)


def __getattr__(name):
    if name == "VmapFallbackWarning":
        from .batching import VmapFallbackWarning

        return VmapFallbackWarning
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tnp._jit' has no attribute {name!r}")
