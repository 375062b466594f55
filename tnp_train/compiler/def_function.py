"""``tt.function``: TF 2.4's ``tf.function`` on tnp's compiler (``tnp.jit``).

The first call with a new signature traces the Python function on placeholder arrays into a
graph of tnp operations, which tnp's compiler fuses and replays without Python-level dispatch.
What a training step does keeps its meaning:

* a ``GradientTape`` inside the function records the traced operations, and its backward pass
  is traced too, so the compiled replay computes forward and backward together;
* writes into state are *effects*, repeated at every call with that call's values, never done
  once while tracing: ``Variable.assign*``/``update`` (BatchNormalization's statistics, a
  metric's accumulators) and ``Optimizer.apply_gradients``, which runs its whole step (the
  learning-rate schedule, the step count, clipping, loss scaling, a strategy's aggregation)
  eagerly on the replayed gradients;
* with ``autograph=True`` (the default) the function's ``if``, ``while`` and ``for`` statements
  whose condition or iterable is a traced value become ``tt.cond`` / ``tt.while_loop`` nodes
  (:mod:`.autograph`); any other value Python asks for (``float(loss)``) cannot be known while
  tracing: with the default ``jit_compile=None`` that signature runs eagerly, after one
  warning naming the line; with ``jit_compile=True`` it is an error, as is anything the
  compiler cannot replay.

Python side effects (``print``, appending to a list) happen while tracing only, as in TF.
"""
from __future__ import annotations

import collections
import functools
import warnings

import numpy as _np

import tnp
from tnp.extend import JitFallbackWarning, RetraceWarning
from tnp.extend import tracing as _in_trace

from ..utils import tracing as _tracing
from . import autograph as _autograph
from . import config as _config
from . import spans as _spans

__all__ = ["function", "Function", "ConcreteFunction", "RetraceWarning", "JitFallbackWarning",
           "step_function"]

_RETRACE_WINDOW = 5     # TF 2.4: 5 of the last 5 calls traced -> a warning


class Function:
    """What ``tt.function(f)`` returns (``tf.function``'s ``Function``): call it like ``f``."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 jit_compile=None, experimental_relax_shapes=False,
                 experimental_implements=None, experimental_autograph_options=None,
                 experimental_follow_type_hints=None):
        if not callable(python_function):
            raise TypeError(f"function: expected a callable, got "
                            f"{type(python_function).__name__}")
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = _signature_tuple(input_signature)
        self._autograph = bool(autograph)
        self._jit_compile = jit_compile
        self._relax_shapes = bool(experimental_relax_shapes)
        self._implements = experimental_implements
        self._autograph_options = experimental_autograph_options
        self._follow_type_hints = experimental_follow_type_hints
        # AutoGraph: if/while/for on traced values become tt.cond / tt.while_loop
        compiled = _autograph.convert(python_function) if self._autograph else python_function

        def traced(*a, **k):
            if not _in_trace():          # a signature that runs eagerly
                return compiled(*a, **k)
            with _spans.tracing_spans():     # the profiler's spans: markers of the program
                return compiled(*a, **k)

        jit = tnp.jit(traced)
        jit.__name__ = self._name
        # jit_compile=True: everything compiled or a clear error; else a signature that cannot
        # be compiled runs eagerly (one warning), and so does one whose Python code needs a value
        jit.fallback = "raise" if jit_compile else "warn"
        jit.eager_on_trace_error = not jit_compile
        jit.retrace_warning_at = None
        self._jit = jit
        self._recent = collections.deque(maxlen=_RETRACE_WINDOW)
        self._warned_retrace = False
        functools.update_wrapper(self, python_function)

    # -- the call ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _config.functions_run_eagerly():
            return self._python_function(*args, **kwargs)
        if self._input_signature is not None:
            _check_signature(self._name, self._input_signature, args, kwargs)
        before = self._jit.trace_count
        rec = _tracing.active_recorder
        if rec is None:
            result = self._jit(*args, **kwargs)
        else:       # a profiler records: a span per call, the program's markers inside it
            result = _spans.call_recorded(rec, self._name, lambda: self._jit(*args, **kwargs),
                                          self._jit)
        self._recent.append(self._jit.trace_count != before)
        if (not self._warned_retrace and len(self._recent) == _RETRACE_WINDOW
                and all(self._recent) and self._jit.trace_count > 1):
            self._warned_retrace = True
            warnings.warn(
                f"{_RETRACE_WINDOW} out of the last {_RETRACE_WINDOW} calls to {self._name} "
                f"triggered tt.function retracing. Tracing is expensive; the usual causes: "
                f"(1) creating the tt.function repeatedly in a loop, (2) passing arrays of "
                f"different shapes or dtypes, (3) passing Python numbers or objects that change "
                f"(they are part of the signature by value: pass them as 0-d tnp arrays)",
                RetraceWarning, stacklevel=2)
        return result

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        # a method: one compiled function per instance, as TF's
        cache = obj.__dict__.setdefault("_tt_function_bound", {}) if hasattr(obj, "__dict__") \
            else {}
        bound = cache.get(id(self))
        if bound is None:
            bound = Function(functools.partial(self._python_function, obj), self._name,
                             self._input_signature, self._autograph, self._jit_compile,
                             self._relax_shapes, self._implements, self._autograph_options,
                             self._follow_type_hints)
            cache[id(self)] = bound
        return bound

    # -- introspection (TF's names) ---------------------------------------------------------
    @property
    def python_function(self):
        """The Python function this compiles."""
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_spec(self):
        return self._input_signature

    def experimental_get_tracing_count(self):
        """How many times the function has been traced (one per new signature)."""
        return self._jit.trace_count

    def compiled_signature_count(self):
        """How many of the signatures traced so far run compiled; the others run eagerly (an
        operation the tracer cannot follow, with the default ``jit_compile``). tnp_train's own
        introspection (TF has no equivalent)."""
        return self._jit.compiled_count()

    def get_concrete_function(self, *args, **kwargs):
        """The compiled function for these arguments' signature (traced now if new); with an
        ``input_signature`` and no arguments, for that signature (its ``None`` dimensions as 1)."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(_example(s) for s in self._input_signature)
        if self._input_signature is not None:
            _check_signature(self._name, self._input_signature, args, kwargs)
        return ConcreteFunction(self, args, kwargs)

    def experimental_get_compiler_ir(self, *args, **kwargs):
        """The compiled program of this signature as text (TF gives XLA's HLO; here tnp's
        graph, its fused kernels and their steps)."""
        return lambda stage="hlo": self._jit.lower(*args, **kwargs).as_text()

    def __repr__(self):
        return f"<tt.function {self._name}>"


class ConcreteFunction:
    """One traced signature of a :class:`Function` (``tf.types.experimental.ConcreteFunction``):
    callable with arguments of that signature; ``graph`` (tnp's traced graph), ``as_text()``."""

    def __init__(self, function, args, kwargs):
        self._function = function
        self._lowered = function._jit.lower(*args, **kwargs)
        self._key = _shapes_of((args, kwargs))
        self.structured_input_signature = (tuple(_spec_of(a) for a in args),
                                           {k: _spec_of(v) for k, v in kwargs.items()})

    @property
    def graph(self):
        return self._lowered.graph

    def as_text(self):
        return self._lowered.as_text()

    def __call__(self, *args, **kwargs):
        if _shapes_of((args, kwargs)) != self._key:
            raise TypeError(f"ConcreteFunction {self._function._name}: the arguments' "
                            f"signature {_shapes_of((args, kwargs))} is not the traced one "
                            f"{self._key}")
        return self._function(*args, **kwargs)

    def __repr__(self):
        return f"<ConcreteFunction {self._function._name} {self.structured_input_signature}>"


def step_function(step, name, strict):
    """A :class:`Function` for a training loop's step (``fit``'s ``train_function``): with
    ``strict``, a signature that cannot be compiled is an error (``jit_compile=True``); without,
    it runs eagerly, silently, as the step always ran, and so does a step that draws random
    numbers."""
    # library code, whose conditions are Python's: not converted by AutoGraph
    fn = Function(step, name=name, jit_compile=bool(strict), autograph=False)
    if not strict:
        fn._jit.fallback = "quiet"
        # conservative: a step that draws random numbers (Dropout, noise layers) keeps
        # running eagerly, its draws where they always were
        fn._jit.compile_random = False
    return fn


def function(func=None, input_signature=None, autograph=True, experimental_implements=None,
             experimental_autograph_options=None, experimental_relax_shapes=False,
             experimental_compile=None, experimental_follow_type_hints=None, jit_compile=None):
    """Mirrors ``tf.function(func=None, input_signature=None, autograph=True,
    experimental_implements=None, experimental_autograph_options=None,
    experimental_relax_shapes=False, experimental_compile=None,
    experimental_follow_type_hints=None)`` (TF 2.4), plus TF 2.5's ``jit_compile`` (the new name
    of ``experimental_compile``). A decorator with or without arguments.

    ``jit_compile=True``: the whole function is compiled or the call fails with the reason (an
    operation the compiler cannot replay, a value Python asks for). Otherwise such a signature
    runs eagerly after one ``JitFallbackWarning``. ``input_signature``: a sequence of
    ``tt.TensorSpec`` the arguments must match (``None`` dimensions match any size; each size
    still traces once, since tnp compiles for concrete shapes). ``experimental_relax_shapes``,
    ``experimental_implements``, ``experimental_autograph_options`` and
    ``experimental_follow_type_hints`` are accepted and change nothing here. See
    ``docs/compile.md``.
    """
    if experimental_compile is not None and jit_compile is not None and \
            bool(experimental_compile) != bool(jit_compile):
        raise ValueError("function: experimental_compile and jit_compile disagree; "
                         "jit_compile is the new name of experimental_compile, give one")
    if jit_compile is None:
        jit_compile = experimental_compile

    def decorate(f):
        return Function(f, input_signature=input_signature, autograph=autograph,
                        jit_compile=jit_compile,
                        experimental_relax_shapes=experimental_relax_shapes,
                        experimental_implements=experimental_implements,
                        experimental_autograph_options=experimental_autograph_options,
                        experimental_follow_type_hints=experimental_follow_type_hints)

    return decorate if func is None else decorate(func)


# ---------------------------------------------------------------------------- signatures
def _signature_tuple(sig):
    if sig is None:
        return None
    if not isinstance(sig, (list, tuple)):
        raise TypeError(f"function: input_signature must be a list or tuple of TensorSpec, got "
                        f"{type(sig).__name__}")
    for s in _leaves(sig):
        if not (hasattr(s, "shape") and hasattr(s, "dtype")):
            raise TypeError(f"function: every element of input_signature must be a TensorSpec, "
                            f"got {type(s).__name__}")
    return tuple(sig)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _leaves(e)
    elif isinstance(x, dict):
        for e in x.values():
            yield from _leaves(e)
    else:
        yield x


def _fits(spec, value):
    if isinstance(spec, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(spec) == len(value) and \
            all(_fits(s, v) for s, v in zip(spec, value))
    if isinstance(spec, dict):
        return isinstance(value, dict) and set(spec) == set(value) and \
            all(_fits(spec[k], value[k]) for k in spec)
    shape = getattr(value, "shape", None)
    if shape is None:
        try:
            a = _np.asarray(value)
        except Exception:
            return False
        shape, dtype = a.shape, a.dtype
    else:
        dtype = value.dtype
    want = spec.shape
    if want is not None:
        want = tuple(want)
        if len(want) != len(shape) or any(w is not None and w != d for w, d in zip(want, shape)):
            return False
    return spec.dtype is None or _np.dtype(spec.dtype) == _np.dtype(dtype) or \
        (not hasattr(value, "dtype") and _np.can_cast(dtype, spec.dtype, "same_kind"))


def _check_signature(name, sig, args, kwargs):
    if kwargs or len(args) != len(sig) or not all(_fits(s, a) for s, a in zip(sig, args)):
        shown = tuple(_spec_of(a) for a in args) + tuple(f"{k}={_spec_of(v)}"
                                                         for k, v in kwargs.items())
        raise ValueError(f"Python inputs incompatible with input_signature of {name}:\n"
                         f"  inputs: {shown}\n  input_signature: {sig}")


def _spec_of(a):
    if isinstance(a, (list, tuple)):
        return type(a)(_spec_of(e) for e in a)
    if isinstance(a, dict):
        return {k: _spec_of(v) for k, v in a.items()}
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return f"{_np.dtype(a.dtype)}{list(a.shape)}"
    return a


def _shapes_of(x):
    if isinstance(x, (list, tuple)):
        return tuple(_shapes_of(e) for e in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _shapes_of(v)) for k, v in x.items()))
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return (tuple(x.shape), str(x.dtype))
    return ("value", repr(x))


def _example(spec):
    if isinstance(spec, (list, tuple)):
        return type(spec)(_example(s) for s in spec)
    shape = () if spec.shape is None else tuple(1 if d is None else d for d in spec.shape)
    return tnp.zeros(shape, dtype=spec.dtype or "float32")
