"""``tnp.jit``: compile a function of tnp arrays for the signature it is called with.

The first call with a new *signature* (shape, dtype, strides and device of each array
argument; value of every other argument) traces the function (:mod:`.tracer`), fuses what can be
fused (:mod:`.fusion`, :mod:`.kernel`) and builds a replay (:mod:`.program`); every later call
with that signature only replays. Where the function cannot be compiled (see
:class:`UnsupportedTrace`), that signature runs eagerly, with one warning that says why.
"""
from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from .._core import listeners as _listeners
from .._core.devices import CPU, get_default_device
from .._core.ndarray import ndarray as _ndarray
from .._core.scalar import Scalar as _Scalar
from .program import build_program
from .tracer import TraceError, UnsupportedTrace, make_placeholder, trace as _trace

__all__ = ["jit", "JitFunction", "Lowered", "TraceError", "UnsupportedTrace",
           "JitFallbackWarning", "RetraceWarning"]


class JitFallbackWarning(UserWarning):
    """A function (for one signature) runs eagerly: ``tnp.jit`` could not compile it; or (once
    per process) compiled functions run without fused kernels, Numba being unavailable."""


class RetraceWarning(UserWarning):
    """A compiled function traced again and again: a Python number or a shape changes."""


_RETRACE_WARN = 8
_EAGER = object()


class _ArgSpec:
    """How the arguments of one call are laid out: the positions of arrays, the rest by value."""

    __slots__ = ("key", "arrays", "objs")

    def __init__(self):
        self.key = []
        self.arrays = []     # backend arrays, in order
        self.objs = []       # the caller's objects for them


def _float_key(x):
    return ("f", x.hex()) if x == x else ("f", "nan")


def _describe_arg(x, spec):
    """Append ``x``'s part of the signature to ``spec``; arrays become placeholders' slots."""
    t = type(x)
    if t is _ndarray or t is _Scalar:
        a = x._a
        if x._dev is not CPU:
            spec.key.append(("dev", str(x._dev)))
            raise UnsupportedTrace(f"tnp.jit: an argument lives on {x._dev}; compiled "
                                   f"functions run on the CPU for now")
        if isinstance(a, np.ndarray):
            spec.key.append(("a", a.shape, a.strides, a.dtype, False))
        else:
            spec.key.append(("a", (), (), a.dtype, True))
        spec.arrays.append(a)
        spec.objs.append(x)
        return
    if t is np.ndarray:
        spec.key.append(("n", x.shape, x.strides, x.dtype))
        spec.arrays.append(x)
        spec.objs.append(x)
        return
    if isinstance(x, _ndarray):
        raise UnsupportedTrace(f"tnp.jit: an argument is a {t.__name__} (a subclass of "
                               f"tnp.ndarray)")
    if t is float:
        spec.key.append(_float_key(x))
    elif t is int or t is bool or t is str or x is None:
        spec.key.append((t.__name__, x))
    elif t is complex:
        spec.key.append(("c", _float_key(x.real), _float_key(x.imag)))
    elif t is tuple or t is list:
        spec.key.append((t.__name__, len(x)))
        for e in x:
            _describe_arg(e, spec)
    elif t is dict:
        spec.key.append(("dict", tuple(x.keys())))
        for e in x.values():
            _describe_arg(e, spec)
    elif isinstance(x, np.generic):
        spec.key.append(("g", x.dtype, x.tobytes()))
    elif isinstance(x, np.ndarray):
        raise UnsupportedTrace(f"tnp.jit: an argument is a {t.__name__} (a NumPy subclass)")
    else:
        try:
            hash(x)
            spec.key.append(("o", t, x))
        except TypeError:
            spec.key.append(("id", t, id(x)))


def _fast_key(args):
    """``(key, backend arrays, their objects)`` for arguments that are tnp arrays on the CPU,
    or tuples and lists of them (and of None), else None: a key that determines the full
    signature (:meth:`JitFunction._signature`) of such arguments, cheaper to make."""
    key = []
    arrays = []
    objs = []
    for a in args:
        t = type(a)
        if (t is _ndarray or t is _Scalar) and a._dev is CPU:
            b = a._a
            key += (t, b.shape, b.dtype, b.strides if t is _ndarray else None)
            arrays.append(b)
            objs.append(a)
        elif t is tuple or t is list:
            key += (t, len(a))
            for e in a:
                te = type(e)
                if (te is _ndarray or te is _Scalar) and e._dev is CPU:
                    b = e._a
                    key += (te, b.shape, b.dtype, b.strides if te is _ndarray else None)
                    arrays.append(b)
                    objs.append(e)
                elif e is None:
                    key.append(None)
                else:
                    return None
        else:
            return None
    key.append(get_default_device())
    return tuple(key), arrays, objs


def _replace_arrays(x, it):
    """``x`` with its arrays replaced, in order, by what ``it`` yields."""
    t = type(x)
    if t is _ndarray or t is _Scalar or t is np.ndarray:
        return next(it)
    if t is tuple or t is list:
        return t(_replace_arrays(e, it) for e in x)
    if t is dict:
        return {k: _replace_arrays(e, it) for k, e in x.items()}
    return x


class Lowered:
    """What ``f.lower(*args)`` gives: the compiled program of one signature, to read.

    ``graph``: the traced :class:`~tnp._jit.graph.Graph`; ``kernels``: the fused kernels (each
    with ``source``, its Numba source, and ``nodes``); ``fused_nodes`` / ``unfused_nodes``: the
    registry names of the operations inside and outside kernels; ``as_text()``: the program with
    each kernel's members; ``eager``: the reason it runs eagerly (None when compiled).
    """

    def __init__(self, program=None, reason=None):
        self.program = program
        self.eager = reason

    @property
    def graph(self):
        return None if self.program is None else self.program.graph

    @property
    def kernels(self):
        return [] if self.program is None else list(self.program.specs)

    @property
    def fused_nodes(self):
        return [n.name for g in (self.program.groups if self.program else ()) for n in g.nodes]

    @property
    def unfused_nodes(self):
        if self.program is None:
            return []
        fused = {n.id for g in self.program.groups for n in g.nodes}
        return [n.name for n in self.program.graph.nodes if n.id not in fused]

    def as_text(self):
        if self.program is None:
            return f"(runs eagerly: {self.eager})"
        text = self.program.graph.as_text(self.program.groups)
        for spec in self.program.specs:
            text += (f"\nkernel k{spec.group.id}: {spec.R} rows x {spec.N}, tile {spec.T}"
                     f"{' (flat)' if spec.flat else ''}; steps per "
                     f"{'tile' if not spec.group.has_reduction else 'row'}:\n  "
                     + "\n  ".join(spec.steps_text))
        return text

    def replay_source(self):
        """The generated Python function that replays the program."""
        return None if self.program is None else self.program.source

    def __repr__(self):
        if self.program is None:
            return f"<tnp.jit Lowered: eager ({self.eager})>"
        return (f"<tnp.jit Lowered: {len(self.program.graph.nodes)} nodes, "
                f"{len(self.program.specs)} kernels>")


class JitFunction:
    """A function compiled per signature by :func:`jit` (see its docstring)."""

    def __init__(self, fn, static_argnums=(), donate_argnums=(), fuse=True):
        self.fn = fn
        self.static_argnums = _argnums(static_argnums)
        self.donate_argnums = _argnums(donate_argnums)
        self.fuse = fuse
        self._cache = {}
        self._fast = {}
        self._last_prog = None
        self._lock = threading.Lock()
        self.trace_count = 0
        self._warned = set()
        # what a signature that cannot be compiled does: "warn" (run eagerly, one
        # JitFallbackWarning), "quiet" (run eagerly), "raise" (UnsupportedTrace); and whether
        # Python asking for a traced value (TraceError) also falls back to eager execution
        self.fallback = "warn"
        self.eager_on_trace_error = False
        self.retrace_warning_at = _RETRACE_WARN   # None: the caller warns in its own words
        # False: a function that draws random numbers runs eagerly (a caller that wants the
        # eager stream of draws kept by construction, whatever replaces a generator later)
        self.compile_random = True
        functools.update_wrapper(self, fn)

    # -- the call -------------------------------------------------------------------------
    def _signature(self, args, kwargs):
        spec = _ArgSpec()
        n = len(args)
        static = {i if i >= 0 else n + i for i in self.static_argnums}
        for i, a in enumerate(args):
            if i in static:
                try:
                    hash(a)
                except TypeError:
                    raise TypeError(f"tnp.jit: static argument {i} must be hashable, got "
                                    f"{type(a).__name__}") from None
                spec.key.append(("static", type(a), a))
            else:
                _describe_arg(a, spec)
        if kwargs:
            spec.key.append(("kw", tuple(sorted(kwargs))))
            for k in sorted(kwargs):
                _describe_arg(kwargs[k], spec)
        if self.donate_argnums:
            # an output may be written into a donated array: only where it is writable
            spec.key.append(tuple(getattr(getattr(a, "flags", None), "writeable", False)
                                  for a in spec.arrays))
        spec.key.append(get_default_device())
        return spec

    def __call__(self, *args, **kwargs):
        if _listeners._blocking:
            # a tape, an outer trace (or any listener but an observer, such as the profiler)
            # must see every operation: eagerly
            return self.fn(*args, **kwargs)
        if not kwargs and not self.static_argnums and not self.donate_argnums:
            # the common call, tnp arrays on the CPU (positional, or in tuples and lists such
            # as fit's batches): a cheaper key, its own table
            fast = _fast_key(args)
            if fast is not None:
                key, arrays, objs = fast
                prog = self._fast.get(key)
                if prog is not None and (not prog._capture_checks or prog.captures_unchanged()):
                    return prog.call(arrays, objs)
                r = self._slow_call(args, kwargs)
                prog = self._last_prog
                if prog is not None:
                    self._fast[key] = prog
                return r
        return self._slow_call(args, kwargs)

    def _slow_call(self, args, kwargs):
        self._last_prog = None
        try:
            spec = self._signature(args, kwargs)
        except UnsupportedTrace as e:
            self._warn_once(("sig", str(e)), str(e), e)
            return self.fn(*args, **kwargs)
        key = tuple(spec.key)
        prog = self._cache.get(key)
        if prog is None or (prog is not _EAGER and not prog.captures_unchanged()):
            prog = self._compile(key, spec, args, kwargs)
            if prog is _RAN_EAGERLY:
                return self._last_result.pop()
        if prog is _EAGER:
            return self.fn(*args, **kwargs)
        self._last_prog = prog
        return prog.call(spec.arrays, spec.objs)

    def _warn_once(self, key, msg, exc=None):
        if self.fallback == "raise":
            raise exc if isinstance(exc, (UnsupportedTrace, TraceError)) else \
                UnsupportedTrace(msg) from exc
        if self.fallback == "quiet":
            return
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(msg + "; running eagerly", JitFallbackWarning,
                          stacklevel=_user_stacklevel())

    def _compile(self, key, spec, args, kwargs):
        n = len(args)
        static = {i if i >= 0 else n + i for i in self.static_argnums}
        donate = {i if i >= 0 else n + i for i in self.donate_argnums}
        fn = self.fn

        donated_flat = set()
        current_arg = [None]

        def make_inputs(ctx):
            it = iter(spec.arrays)
            k = [0]

            def placeholder():
                a = next(it)
                t = make_placeholder(a)
                ctx.add_input(t, k[0])
                if current_arg[0] in donate and getattr(getattr(a, "flags", None),
                                                        "writeable", False):
                    donated_flat.add(k[0])
                k[0] += 1
                return t

            class _Gen:
                def __iter__(self):
                    return self

                def __next__(self):
                    return placeholder()

            gen = _Gen()
            new_args = []
            for i, a in enumerate(args):
                current_arg[0] = i
                new_args.append(a if i in static else _replace_arrays(a, gen))
            current_arg[0] = None
            new_kwargs = {kk: _replace_arrays(kwargs[kk], gen) for kk in sorted(kwargs)}
            return tuple(new_args), new_kwargs

        self.trace_count += 1
        if self.trace_count == self.retrace_warning_at:
            warnings.warn(f"tnp.jit: {getattr(fn, '__name__', 'function')} has been traced "
                          f"{_RETRACE_WARN} times: each new shape, dtype or Python value of an "
                          f"argument traces again (pass numbers that change as 0-d arrays)",
                          RetraceWarning, stacklevel=_user_stacklevel())
        try:
            graph = _trace(fn, args, kwargs, make_inputs, getattr(fn, "__name__", "f"))
        except TraceError as e:
            if not self.eager_on_trace_error or self.fallback == "raise":
                raise
            self._warn_once(("trace", str(e)), str(e), e)
            self._cache[key] = _EAGER
            return _EAGER
        except UnsupportedTrace as e:
            self._warn_once(("trace", str(e)), str(e), e)
            self._cache[key] = _EAGER
            return _EAGER
        except Exception as e:
            # maybe the dummy values (an inverse of zeros...), maybe the user's own error:
            # the eager call tells which (an error that says it is the user's: raised)
            if self.fallback == "raise" or getattr(e, "tnp_trace_final", False):
                raise
            r = fn(*args, **kwargs)
            self._warn_once(("trace", repr(e)), f"tnp.jit: tracing {getattr(fn, '__name__', 'f')}"
                            f" failed on placeholder values ({type(e).__name__}: {e})")
            self._cache[key] = _EAGER
            self._last_result = [r]
            return _RAN_EAGERLY
        if not self.compile_random and any(
                n.name.startswith(("random.", "inplace_random.")) for n in graph.nodes):
            self._warn_once(("random",), f"tnp.jit: {getattr(fn, '__name__', 'f')} draws "
                            f"random numbers", UnsupportedTrace("random draws"))
            self._cache[key] = _EAGER
            return _EAGER
        try:
            prog = build_program(graph, fuse=self.fuse, donated=donated_flat)
        except Exception as e:
            try:
                prog = build_program(graph, fuse=False)
                self._warn_once(("fuse", repr(e)), f"tnp.jit: fusion failed ({type(e).__name__}:"
                                f" {e}); compiled without kernels")
            except Exception as e2:
                self._warn_once(("build", repr(e2)), f"tnp.jit: could not compile "
                                f"({type(e2).__name__}: {e2})")
                self._cache[key] = _EAGER
                return _EAGER
        prog.donated = self.donate_argnums
        self._cache[key] = prog
        return prog

    # -- introspection ----------------------------------------------------------------------
    def lower(self, *args, **kwargs):
        """The :class:`Lowered` program for this call's signature (traced and compiled if it is
        new; nothing is run)."""
        try:
            spec = self._signature(args, kwargs)
        except UnsupportedTrace as e:
            return Lowered(None, str(e))
        key = tuple(spec.key)
        prog = self._cache.get(key)
        if prog is None:
            prog = self._compile(key, spec, args, kwargs)
            if prog is _RAN_EAGERLY:
                self._last_result.pop()
                prog = _EAGER
        if prog is _EAGER:
            return Lowered(None, "could not be compiled (see the JitFallbackWarning)")
        return Lowered(prog)

    def clear_cache(self):
        """Forget every compiled signature (the next calls trace again)."""
        self._cache.clear()
        self._fast.clear()

    @property
    def cache_size(self):
        return len(self._cache)

    def compiled_count(self):
        """How many of the signatures seen so far run compiled (the others run eagerly)."""
        return sum(1 for v in list(self._cache.values()) if v is not _EAGER)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<tnp.jit of {getattr(self.fn, '__qualname__', self.fn)!r}>"


_RAN_EAGERLY = object()


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside this package (the user's call)."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    f = sys._getframe(1)
    level = 1
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == here:
        f = f.f_back
        level += 1
    return level


def _argnums(x):
    if x is None:
        return ()
    if isinstance(x, int):
        return (x,)
    return tuple(int(i) for i in x)


def jit(fn=None, *, static_argnums=(), donate_argnums=(), fuse=True):
    """``tnp.jit`` (its documentation is ``tnp._jit.jit``'s)."""
    if fn is None:
        return lambda f: JitFunction(f, static_argnums, donate_argnums, fuse)
    if isinstance(fn, JitFunction):
        return fn
    return JitFunction(fn, static_argnums, donate_argnums, fuse)
