"""``tnp.extend``: the public door into tnp for libraries built on it.

``tnp_train`` (autodiff, layers, optimizers, strategies, the profiler) and any other library
reach tnp's internals only through this module; nothing outside ``tnp`` reads a private field
of a tnp array or imports ``tnp._core``. What is here:

* **backend arrays**: :func:`backend_array` (the NumPy or CuPy array under a tnp array),
  :func:`device_of`, :func:`wrap` (a backend array as a tnp array on a device, no copy),
  :func:`array_module` (``numpy`` or ``cupy`` for an array or a device) and :func:`cupy` (the
  CuPy module when tnp's GPU backend runs, else None);
* **dtypes**: :func:`is_floating` and :func:`is_inexact`, tnp's floating dtypes (NumPy's and
  ``bfloat16``, which NumPy sees as kind ``'V'``);
* **version counters**: :func:`version` and :func:`bump_version`. Every in-place write through
  tnp bumps the counter shared by an array and its views; a library that writes into
  :func:`backend_array` directly must call :func:`bump_version` afterwards, so a tape that saved
  the old value refuses to differentiate through it;
* **operation listeners**: :func:`add_op_listener` (see its docstring and ``docs/extend.md``);
* **vectorizable math for Numba loops**: ``vecmath`` (``exp_f32``, ``expm1_f32``, ``log_f32``,
  ``tanh_f32``, ``sigmoid_f32``: float32 functions that LLVM vectorizes, within an ulp of the
  exact value; loading it loads Numba).
"""
from __future__ import annotations

import sys as _sys

import numpy as _np

from ._core import backend as _backends
from ._core.dtypes import dtype_from_name as _dtype_from_name
from ._core.ndarray import (
    ndarray as _ndarray, _BASEW, _new, bump_version as _bump, version_of as _version_of,
    wrap as _wrap,
)
from ._core.devices import Device, device as _device, get_default_device
from ._core.listeners import OpListenerHandle, add_op_listener, op_listeners, reporting_suspended

__all__ = ["backend_array", "device_of", "wrap", "array_module", "version", "bump_version",
           "add_op_listener", "OpListenerHandle", "op_listeners", "reporting_suspended",
           "get_default_device", "Device", "is_tnp_array", "cupy", "is_floating", "is_inexact"]


def is_tnp_array(x):
    """Whether ``x`` is a tnp array (``tnp.ndarray`` or a subclass, scalars included)."""
    return isinstance(x, _ndarray)


def _need(x, what):
    if not isinstance(x, _ndarray):
        raise TypeError(f"tnp.extend.{what}: expected a tnp array, got {type(x).__name__}")


def backend_array(x):
    """The backend array (``numpy.ndarray``/NumPy scalar on the CPU, ``cupy.ndarray`` on a GPU)
    that tnp array ``x`` wraps; no copy, so writes into it show in ``x``.

    While this thread traces a function (``tnp.jit``, ``tnp_train.function``), it raises
    ``tnp.extend.UnsupportedTrace`` for every array, and the compiled function runs that
    signature eagerly: a traced array has no values yet, and what a library computes from any
    other array's backend is not seen by the tracer, so the compiled function would repeat the
    value it had while tracing (a variable's, a metric's). A library computes with tnp
    operations instead while :func:`tracing`, or reads :func:`storage` for bookkeeping."""
    if _traces and (type(x) in _trace_types or _tracing_here()):
        _refuse_traced(x, "backend_array")
    try:
        return x._a
    except AttributeError:
        _need(x, "backend_array")
        raise


def storage(x):
    """The backend array under tnp array ``x``, for bookkeeping only: its identity (which
    buffer, which views), its version counter, its shape and dtype, never its values. Unlike
    :func:`backend_array` it also answers for a traced array (whose values are placeholders'
    dummies): what a tape uses to follow arrays through a function being compiled."""
    try:
        return x._a
    except AttributeError:
        _need(x, "storage")
        raise


def unwrap(x):
    """The backend array of a tnp array; anything else is returned unchanged (a traced array:
    as :func:`backend_array`)."""
    if _traces and isinstance(x, _ndarray) and (type(x) in _trace_types or _tracing_here()):
        _refuse_traced(x, "unwrap")
    return x._a if isinstance(x, _ndarray) else x


# --------------------------------------------------------------------------- traces
_traces = 0               # traces running now, in any thread
_trace_types = ()         # the tracer classes (set at the first trace)
_trace_lock = __import__("threading").Lock()


def _trace_started(*types):
    global _traces, _trace_types
    with _trace_lock:
        _trace_types = types
        _traces += 1


def _trace_ended():
    global _traces
    with _trace_lock:
        _traces -= 1


def _tracing_here():
    from ._jit.tracer import tracing as _tracing

    return _tracing()


def _refuse_traced(x, what):
    from ._jit.tracer import UnsupportedTrace, _at, is_tracer, user_location

    kind = "a traced array" if is_tracer(x) else "an array (while tracing)"
    raise UnsupportedTrace(f"tnp.jit: tnp.extend.{what}() of {kind} "
                           f"({x._a.dtype}{list(_np.shape(x._a))}): code working on backend "
                           f"arrays is not traced (its values would be fixed at trace "
                           f"time)" + _at(user_location()))


def tracing():
    """Whether this thread is tracing a function for ``tnp.jit`` (or ``tnp_train.function``)
    now. A library whose operation works on backend arrays (where the tracer cannot follow)
    can then compute it with tnp operations instead, which are traced and compiled."""
    if not _traces:
        return False
    from ._jit.tracer import tracing as _tracing

    return _tracing()


def effect(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` for its effect: now, or, while this thread traces a
    function, at every run of the compiled function (with that run's values in place of the
    traced arrays among the arguments), and not while tracing. Returns ``fn``'s result when
    called now, else None. For writes into state a compiled function must repeat at every
    call: a variable's update, an optimizer step, a metric's accumulation."""
    if _traces:
        from ._jit.records import record_effect

        if record_effect(fn, args, kwargs):
            return None
    return fn(*args, **kwargs)


def backend_update(fn, args, writes):
    """``fn(*args)`` on backend arrays, writing in place into the arrays ``writes`` (tnp
    arrays, among those of ``args``): now, or, while this thread traces a function, as ONE node
    of the compiled program that calls ``fn`` at every run with that run's backend arrays and
    no wrapping, and that the compiler knows writes ``writes`` (nothing that reads them is
    moved past it). Every tnp array in ``args``, also inside lists and tuples, is handed to
    ``fn`` as its backend array; the versions of ``writes`` are bumped after each call. For a
    library's fused in-place kernels (an optimizer's update of all its variables) in a
    compiled step at the cost of one call. ``fn`` must write nothing else and return nothing
    the caller uses (None is returned)."""
    if _traces:
        from ._jit.records import record_backend_update

        if record_backend_update(fn, args, writes):
            return None
    fn(*_backends_in(args))
    for w in writes:
        _bump(w._a)
    return None


def _backends_in(x):
    t = type(x)
    if t is tuple or t is list:
        return t(_backends_in(e) for e in x)
    if isinstance(x, _ndarray):
        return x._a
    return x


def observe(fn, *args, level=1, **kwargs):
    """Call ``fn(*args, **kwargs)`` to observe the program, not to change it (a profiler's span
    markers): now, or, while this thread traces a function, as an *observation* of the compiled
    program, called in its place at every run made while a replay observer of ``level`` or
    more is installed (:func:`set_replay_observer`), and left out of the runs made without one,
    at no cost. The arguments are plain Python values (a traced array among them is refused);
    an observation changes neither the fusion nor the memory plan, so a fused kernel that spans
    it runs where its last operation was. Returns ``fn``'s result when called now, else None."""
    if _traces:
        from ._jit.records import record_observe

        if record_observe(fn, args, kwargs, level):
            return None
    return fn(*args, **kwargs)


def set_replay_observer(observer):
    """Install ``observer`` (None removes it) for the compiled programs' replays; returns the
    one it replaces. At each call of a compiled function, the replay reads
    ``observer.level`` (an int: the :func:`observe` calls of that level or less run in place)
    and ``observer.time_nodes`` (true: each fused kernel and each other node is timed, then
    ``observer.node_time(label, t_start, t_end)`` is called with ``time.perf_counter()``
    values). These replays share the plain one's kernels and buffers; with no observer the
    plain replay runs, unchanged."""
    from ._jit.program import set_replay_observer as _set

    return _set(observer)


def device_of(x):
    """The :class:`tnp.Device` of tnp array ``x``."""
    try:
        return x._dev
    except AttributeError:
        _need(x, "device_of")
        raise


def wrap(a, device=None, cls=None):
    """Backend array ``a`` as a tnp array on ``device`` (default: the default device), no copy.

    NumPy scalars become tnp scalars, tuples and lists are wrapped element-wise (as tnp wraps
    its own results). With ``cls`` (a subclass of ``tnp.ndarray``), ``a`` must be one backend
    array and the result is an instance of ``cls`` made without calling its ``__new__``: how a
    library builds its own array types (``tnp_train.Variable``) over a backend array.
    """
    dev = get_default_device() if device is None else (
        device if isinstance(device, Device) else _device(device))
    if cls is None:
        return _wrap(a, dev)
    if not (isinstance(cls, type) and issubclass(cls, _ndarray)):
        raise TypeError(f"tnp.extend.wrap: cls must be a subclass of tnp.ndarray, got {cls!r}")
    o = _new(cls)
    o._a = a
    o._dev = dev
    return o


def set_backend_array(x, a):
    """Point tnp array ``x`` at backend array ``a`` on the same device (for array types that
    rebind their buffer, such as a variable restored from a checkpoint)."""
    _need(x, "set_backend_array")
    x._a = a
    _BASEW.__set__(x, None)   # what it was a view of, it no longer is


def array_module(x=None):
    """``numpy`` or ``cupy``: the array module of a tnp array, a backend array, a device (or
    its name), or, with no argument, of the default device."""
    if x is None:
        return get_default_device().backend.xp
    if isinstance(x, _ndarray):
        return x._dev.backend.xp
    if isinstance(x, Device):
        return x.backend.xp
    if isinstance(x, str):
        return _device(x).backend.xp
    if type(x).__module__.split(".", 1)[0] == "cupy":
        return _sys.modules["cupy"]     # imported already: x is one of its arrays
    return _np


def cupy():
    """The ``cupy`` module when tnp's GPU backend runs (a GPU device has been used), else None.

    Never imports CuPy itself (that takes seconds and initialises CUDA): code with a GPU path
    asks ``extend.cupy()`` and takes the NumPy path on None; no CuPy array exists before."""
    gpu = _backends.active_cupy_backend()
    return None if gpu is None else gpu.xp


# dtype-like -> bool, filled by _classify: these run for every recorded operation
_FLOATING: dict = {}
_INEXACT: dict = {}


def _classify(dtype):
    d = _np.dtype(_dtype_from_name(dtype) if isinstance(dtype, str) else dtype)
    # NumPy's classes, not kinds: ml_dtypes gives bfloat16 kind 'V' and float8_e5m2 kind 'f'.
    # Without ml_dtypes loaded no array can be a bfloat16 (loading it costs a second).
    ml = _sys.modules.get("ml_dtypes")
    floating = bool(_np.issubdtype(d, _np.floating)) or (
        ml is not None and d == _np.dtype(ml.bfloat16))
    inexact = floating or bool(_np.issubdtype(d, _np.complexfloating))
    try:
        _FLOATING[dtype], _INEXACT[dtype] = floating, inexact
    except TypeError:     # an unhashable dtype-like
        pass
    return floating, inexact


def is_floating(dtype):
    """Whether ``dtype`` (a dtype, a scalar type or a name) is a real floating dtype of tnp's:
    ``tnp.issubdtype(dtype, tnp.floating)`` or ``bfloat16``, which NumPy sees as kind ``'V'``."""
    r = _FLOATING.get(dtype)
    return _classify(dtype)[0] if r is None else r


def is_inexact(dtype):
    """Whether ``dtype`` is floating (:func:`is_floating`) or complex: the dtypes that carry
    gradients."""
    r = _INEXACT.get(dtype)
    return _classify(dtype)[1] if r is None else r


def version(x):
    """The write count of the buffer under ``x`` (a tnp array or a backend array); it is shared
    by an array and all its views, and grows with every in-place write."""
    return _version_of(x._a if isinstance(x, _ndarray) else x)


def bump_version(x):
    """Count an in-place write into ``x`` (a tnp array or a backend array) and its views."""
    _bump(x._a if isinstance(x, _ndarray) else x)


def host_call(fn, *args, shape, dtype, **kwargs):
    """``fn(*args, **kwargs)``, an array of ``shape`` and ``dtype`` computed on the host (a
    random draw from a library's own generator): returned as is now, or, while this thread
    traces a function, a traced array whose value ``fn`` computes at every run of the compiled
    function (never while tracing). Without it such a value would be computed once, while
    tracing, and every run would reuse it."""
    if _traces:
        from ._jit.records import record_call

        t = record_call(fn, args, kwargs, shape, dtype)
        if t is not None:
            return t
    return fn(*args, **kwargs)


def primitive(fn, *args, name=None, **kwargs):
    """``fn(*args, **kwargs)``, a library operation computed on backend arrays (NumPy, Numba or
    CuPy kernels), callable inside compiled functions: now, or, while this thread traces a
    function, as ONE node of the compiled program that runs ``fn`` at every call with that
    call's values.

    ``fn`` takes tnp arrays (it may read their :func:`backend_array`) and returns a tnp array or
    a list/tuple/dict of them; None stays None; any other object it returns (its caches, a
    closure over them: what a hand-written backward needs) is, while tracing, an opaque value,
    made anew by every run and handed to the later primitives given it, so a forward's saved
    values flow to its backward node. While tracing, ``fn`` also runs once on the trace-time
    values (placeholders' dummies), which tells the shapes and dtypes of its results: it must
    be a pure function of its arguments (no writes into them, no state; use :func:`effect` for
    those) whose results' structure, shapes and dtypes do not depend on the values, and must
    not close over a traced array (pass it as an argument). ``name`` labels the node."""
    if _traces:
        from ._jit.records import record_primitive
        from ._jit.tracer import NOT_TRACING

        r = record_primitive(fn, args, kwargs, name)
        if r is not NOT_TRACING:
            return r
    return fn(*args, **kwargs)


def is_traced(x):
    """Whether ``x`` is a tnp array whose value a function being traced by this thread only
    knows when it runs (a traced array, or an array read from outside, which may hold other
    values at the next call): where a library decides between :func:`control_switch` /
    :func:`control_while` and plain Python control flow."""
    if not _traces or not isinstance(x, _ndarray):
        return False
    from ._jit.control import is_traced as _is_traced

    return _is_traced(x)


def control_switch(index, branches, default=None, check=None, name="switch", taped=False):
    """While this thread traces: one node of the compiled function that runs, at every run,
    only the branch ``branches[index]`` chooses (a traced boolean index: ``[false, true]``);
    each branch is a function of no arguments returning a flat sequence of arrays, traced once
    on its own. Returns the traced outputs (a list). ``taped``: the caller differentiates the
    node (:func:`control_switch_backward`), so a recording tape does not refuse it. See
    ``tnp._jit.control.switch``."""
    from ._jit.control import switch

    return switch(index, branches, default=default, check=check, name=name, taped=taped)


def control_while(cond, body, loop_vars, maximum_iterations=None, check=None,
                  name="while_loop", taped=False):
    """While this thread traces: one node of the compiled function that repeats ``loop_vars =
    body(*loop_vars)`` while ``cond(*loop_vars)`` holds, at every run (``loop_vars``: a flat
    sequence of arrays). Returns the traced final loop variables (a list). See
    ``tnp._jit.control.while_loop``; ``taped``: see :func:`control_loop_backward`."""
    from ._jit.control import while_loop

    return while_loop(cond, body, loop_vars, maximum_iterations=maximum_iterations,
                      check=check, name=name, taped=taped)


def control_switch_backward(forward, branches, name="switch_grad"):
    """While this thread traces: the backward of the switch node that gave traced output
    ``forward``, one more switch node whose branch ``i`` (a function of no arguments returning
    a flat sequence of arrays) may read what forward branch ``i`` computed; each run takes the
    branch the forward run took. See ``tnp._jit.control.switch_backward``."""
    from ._jit.control import switch_backward

    return switch_backward(forward, branches, name=name)


def control_loop_backward(forward, body, carry, name="while_loop_grad"):
    """While this thread traces: the backward of the loop node that gave traced output
    ``forward``: ``carry = body(*carry)`` once per forward iteration, the last first, ``body``
    reading what that iteration of the forward body computed (kept on a stack). See
    ``tnp._jit.control.loop_backward``."""
    from ._jit.control import loop_backward

    return loop_backward(forward, body, carry, name=name)


def forget_traced(x):
    """Tell the tracer of this thread that traced value ``x`` will not be used again (a
    condition evaluated only to learn that it is traced). tnp answers every boolean scalar
    result with one of two shared objects; a later operation giving the same object is then
    not ambiguous."""
    if not _traces or not isinstance(x, _ndarray):
        return
    from ._jit.control import forget

    forget(x)


__all__ += ["set_backend_array", "unwrap", "tracing", "effect", "storage", "host_call", "primitive",
            "backend_update", "is_traced", "control_switch", "control_while",
            "control_switch_backward", "control_loop_backward", "forget_traced", "observe",
            "set_replay_observer"]


_JIT_NAMES = ("JitFallbackWarning", "RetraceWarning", "TraceError", "UnsupportedTrace",
              "VmapFallbackWarning")
__all__ += list(_JIT_NAMES)


def __getattr__(name):
    # the compiler's exceptions and warnings, for libraries that compile (loaded on first use:
    # ``import tnp`` does not load the compiler)
    if name == "vecmath":
        # float32 exp/expm1/log/tanh/sigmoid for Numba loops that vectorize; loads Numba, so
        # it is not in __all__ (a star import stays cheap, and works without Numba)
        from ._jit import vecmath

        return vecmath
    if name in _JIT_NAMES:
        from ._jit import api, batching

        return getattr(batching if name == "VmapFallbackWarning" else api, name)
    raise AttributeError(f"module 'tnp.extend' has no attribute {name!r}")
