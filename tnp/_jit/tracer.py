"""The tracer: run a Python function on placeholder arrays and record the tnp operations it makes.

A placeholder is a :class:`Tracer`, a ``tnp.ndarray`` whose backend array holds dummy values
of the argument's shape, dtype and strides. The function runs as it would eagerly: every tnp
operation really computes (on the dummies, which is how shapes and dtypes are known: NumPy's own
rules decide them), and an operation listener records each one as a graph node. What an
operation returns becomes a Tracer too, so the whole computation stays traced.

What a trace cannot see is refused rather than guessed: Python asking for a value
(``bool(x)``, ``int(x)``, ``x.item()``, iterating over ``x``, ``numpy.asarray(x)``) raises
:class:`TraceError` naming the user's line; operations whose result *shape* depends on the
values (``nonzero``, boolean masks, ``unique``) raise :class:`UnsupportedTrace`, which the
compiled function turns into an eager call. A trace leaves no trace: arrays from outside that
the function writes into, and random generators it draws from, are put back as they were.
"""
from __future__ import annotations

import linecache
import os
import sys
import threading
import warnings

import numpy as np

import tnp as _tnp_pkg
from .. import extend as _extend
from .._core import listeners as _listeners
from .._core.devices import CPU
from .._core.dispatch import REGISTRY
from .._core.ndarray import ndarray as _ndarray
from .._core.scalar import Scalar as _Scalar
from .graph import Cap, Graph, Node, Ref
from .replay import resolve

__all__ = ["Tracer", "ScalarTracer", "TraceError", "UnsupportedTrace", "trace", "is_tracer",
           "user_location", "tracing", "Opaque", "NOT_TRACING"]

_TNP_DIR = os.path.dirname(os.path.abspath(_tnp_pkg.__file__)) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_REPORT_CODE = _listeners._report.__code__


class TraceError(TypeError):
    """Python needed the value of a traced array (``bool(x)``, ``int(x)``, ``x.item()``...)
    while ``tnp.jit`` was tracing: the value is only known when the compiled function runs."""


class UnsupportedTrace(Exception):
    """The function does something a compiled replay cannot reproduce (an operation whose
    result shape depends on the data, a leaked tracer...): it runs eagerly instead."""


def user_location():
    """``(filename, lineno, source line, function)`` of the innermost frame outside tnp and
    NumPy: the user's line that led to the current operation."""
    f = sys._getframe(1)
    while f is not None:
        fname = f.f_code.co_filename
        if not (fname.startswith(_TNP_DIR) or fname.startswith(_NUMPY_DIR) or
                fname.startswith("<frozen")) or os.sep + "tests" + os.sep in fname:
            if not fname.startswith(_TNP_DIR) or os.sep + "_jit" + os.sep not in fname:
                line = linecache.getline(fname, f.f_lineno).strip()
                return (fname, f.f_lineno, line, f.f_code.co_name)
        f = f.f_back
    return None


def _at(where):
    if not where:
        return ""
    return f' at {where[0]}:{where[1]}, in {where[3]}: "{where[2]}"'


def _concrete(x, what, advice=None):
    where = user_location()
    adv = advice or ("Use tnp.where(cond, a, b) for a choice that depends on the data, or mark "
                     "the argument static (tnp.jit(f, static_argnums=...)) if its value should "
                     "be known while tracing (each new value then traces again)")
    raise TraceError(f"tnp.jit: {what} of a traced array ({_describe(x)}){_at(where)}. Its value "
                     f"is not known while the function is traced. {adv}.")


def _describe(x):
    a = x._a
    return f"{a.dtype}{list(np.shape(a))}"


class _TracerMethods:
    """What a Tracer does differently from ``tnp.ndarray``: everything that would hand Python
    the dummy values raises."""

    __slots__ = ()
    _subclass_results = False

    def __bool__(self):
        _concrete(self, "bool()")

    def __int__(self):
        _concrete(self, "int()")

    def __float__(self):
        _concrete(self, "float()")

    def __complex__(self):
        _concrete(self, "complex()")

    def __index__(self):
        _concrete(self, "using as an index or a size (__index__)",
                  "Give the index or size as a Python int (a static argument), or use "
                  "tnp.take / tnp.where with the traced array")

    def item(self, *args):
        _concrete(self, ".item()")

    def tolist(self):
        _concrete(self, ".tolist()")

    def __iter__(self):
        _concrete(self, "iterating over the values",
                  "Index it with Python ints instead (x[i] for i in range(len(x)): the shape is "
                  "known), or use a vectorized operation")

    def __array__(self, dtype=None, copy=None):
        _concrete(self, "numpy.asarray() (or another conversion to a NumPy array)",
                  "Use tnp functions on it (they are traced); NumPy and other libraries "
                  "only see values when the compiled function runs")

    @property
    def __array_interface__(self):
        raise AttributeError("a traced array has no __array_interface__")

    def __buffer__(self, flags):
        _concrete(self, "memoryview()")

    def __dlpack__(self, *args, **kwargs):
        _concrete(self, "__dlpack__()")

    def numpy(self):
        _concrete(self, ".numpy()")

    def get(self):
        _concrete(self, ".get()")

    def tobytes(self, order="C"):
        _concrete(self, ".tobytes()")

    def tofile(self, *args, **kwargs):
        _concrete(self, ".tofile()")

    def __format__(self, spec):
        if not spec:
            return repr(self)
        _concrete(self, "format()")

    def __round__(self, ndigits=None):
        if self._a.ndim == 0 or isinstance(self._a, np.generic):
            _concrete(self, "round()")
        return _ndarray.__round__(self, ndigits)

    def __repr__(self):
        return f"Traced<{_describe(self)}>"

    __str__ = __repr__

    def __reduce__(self):
        _concrete(self, "pickling")

    def __deepcopy__(self, memo):
        _concrete(self, "copy.deepcopy()", "Use x.copy(), which is traced")

    @property
    def base(self):
        # tnp itself walks .base to relate views to their arrays; to the user's code a
        # base made of dummies would be a wrong value
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith(_TNP_DIR):
            return _ndarray.base.fget(self)
        _concrete(self, ".base")

    @property
    def flat(self):
        _concrete(self, ".flat", "Use x.ravel() or x.reshape(-1), which are traced")

    @property
    def ctypes(self):
        _concrete(self, ".ctypes")

    @property
    def data(self):
        _concrete(self, ".data")

    def to_device(self, device, /, *, stream=None):
        from .._core.devices import device as _device

        if _device(device) is self._dev:
            return self
        raise UnsupportedTrace("tnp.jit: moving a traced array to another device is not "
                               "compiled" + _at(user_location()))

    def _refuse(self, *args, **kwargs):
        raise UnsupportedTrace("tnp.jit: this method of a traced array is not compiled"
                               + _at(user_location()))

    setflags = resize = setfield = getfield = byteswap = dump = _refuse


class Tracer(_TracerMethods, _ndarray):
    """A traced tnp array: shape, dtype and strides are known, values are not."""

    __slots__ = ()

    def __hash__(self):
        raise TypeError("unhashable type: a traced tnp array")


class ScalarTracer(_TracerMethods, _Scalar):
    """A traced tnp scalar (what a reduction to 0-d or integer indexing gives).

    tnp keeps one ``Scalar`` for True and one for False; while a trace makes one of them a
    result, it is a ScalarTracer, in every thread: the other threads see a plain scalar (see
    :func:`_shared_scalar_methods`)."""

    __slots__ = ()

    def __hash__(self):
        _concrete(self, "hash()")

    def __trunc__(self):
        _concrete(self, "math.trunc()")

    def __floor__(self):
        _concrete(self, "math.floor()")

    def __ceil__(self):
        _concrete(self, "math.ceil()")

    def is_integer(self):
        _concrete(self, ".is_integer()")

    def as_integer_ratio(self):
        _concrete(self, ".as_integer_ratio()")


def _shared_scalar_methods():
    """A shared scalar (tnp's True or False) turned tracer for a trace acts as a tracer only
    in the tracing thread."""
    def outside(name):
        traced = getattr(ScalarTracer, name)
        plain = getattr(_Scalar, name)

        def method(self, *args, **kwargs):
            ctx = _state.ctx
            if ctx is None or ctx.thread != threading.get_ident():
                return plain(self, *args, **kwargs)
            return traced(self, *args, **kwargs)

        method.__name__ = name
        return method

    for name in ("__bool__", "__int__", "__float__", "__complex__", "__index__", "item",
                 "tolist", "__hash__", "__format__", "__repr__", "__str__", "__array__",
                 "__reduce__"):
        setattr(ScalarTracer, name, outside(name))


def _no_buffer(cls):
    from .._core import ndarray as _ndmod

    if _ndmod.SPEEDUPS and hasattr(_ndmod._speedups, "drop_buffer"):
        _ndmod._speedups.drop_buffer(cls)   # numpy.asarray then asks __array__, which refuses


_no_buffer(Tracer)
_no_buffer(ScalarTracer)
_shared_scalar_methods()


def is_tracer(x):
    return type(x) is Tracer or type(x) is ScalarTracer


# ----------------------------------------------------------------------------- placeholders
def dummy_like(shape, dtype, strides):
    """A writable array of ``shape``/``dtype`` laid out with ``strides`` (so views and copies
    happen as for the real argument), holding values that keep common operations quiet: zeros,
    and the identity in square float matrices (so ``linalg.inv`` and friends trace)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) if shape else 1
    c = np.zeros(shape, dtype)
    if strides is None or c.strides == tuple(strides) or n <= 1:
        out = c
    else:
        f = np.zeros(shape, dtype, order="F")
        if f.strides == tuple(strides):
            out = f
        else:   # any other layout (a slice, a transpose, a broadcast): the same strides
            lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
            hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + dtype.itemsize
            buf = np.zeros(hi - lo, np.uint8)
            out = np.ndarray(shape, dtype, buffer=buf, offset=-lo, strides=strides)
    if dtype.kind in "fc" and len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 0 \
            and out.size:
        try:
            out[...] = np.eye(shape[-1], dtype=dtype)
        except ValueError:   # overlapping strides: leave zeros
            pass
    return out


def make_placeholder(backend):
    """A Tracer standing for argument value ``backend`` (a NumPy array or scalar)."""
    if isinstance(backend, np.generic):
        return _wrap_as(ScalarTracer, backend.dtype.type(0))
    d = dummy_like(backend.shape, backend.dtype, backend.strides)
    return _wrap_as(Tracer, d)


def _wrap_as(cls, a):
    from .._core.ndarray import _wrapper

    return _wrapper(cls, a, CPU)


# ----------------------------------------------------------------------------- what is refused
# operations whose result shape (or length) depends on the values
_DATA_SHAPED = {
    "nonzero", "argwhere", "flatnonzero", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "compress", "extract", "trim_zeros", "setdiff1d",
    "setxor1d", "union1d", "intersect1d", "bincount", "histogram", "histogram2d",
    "histogramdd", "histogram_bin_edges", "roots", "in1d",
    "arange",                          # its length is ceil((stop - start) / step)
}
# operations whose result shape depends on the values of ONE argument (its position, its name)
_DATA_SHAPED_BY = {"repeat": (1, "repeats")}
# operations whose result DTYPE depends on the values: numpy.emath (scimath) answers in complex
# where a real input leaves the real function's domain (sqrt(-1) = 1j), else in real;
# real_if_close drops the imaginary part only where it is small enough
_DATA_TYPED = {"emath." + n for n in np.emath.__all__} | {"real_if_close"}
# functions whose Python result (not an array) is known from shapes and dtypes alone
_STATIC_RESULTS = {
    "shape", "ndim", "size", "result_type", "can_cast", "promote_types", "iterable",
    "isdtype", "issubdtype", "common_type", "mintypecode", "typename", "isscalar", "isrealobj",
    "iscomplexobj", "broadcast_shapes", "isfortran", "finfo", "iinfo", "ndim", "get_include",
    "geterr", "getbufsize", "datetime_data",
}
def _shared_scalars():
    a = np.asarray([True, False])
    from .._core.ndarray import wrap_scalarize

    t, f = wrap_scalarize(a[0], CPU), wrap_scalarize(a[1], CPU)
    t2 = wrap_scalarize(np.True_, CPU)
    return (t, f) if t is t2 else ()


_SHARED = _shared_scalars()


def _is_shared_scalar(r):
    return any(r is s for s in _SHARED)


def _is_ufunc_name(name):
    base = name.split(".", 1)[0]
    info = REGISTRY.get(base)
    return info is not None and info.kind == "ufunc"


# ----------------------------------------------------------------------------- the trace
class _State(threading.local):
    ctx = None


_state = _State()


class TraceContext:
    """One trace in progress (in one thread): the graph being built and what to restore."""

    def __init__(self, fn_name="f", vectorize_rules=None):
        self.graph = Graph()
        self.graph.fn_name = fn_name
        self.thread = threading.get_ident()
        self.values = {}        # id(tracer) -> Value
        self.keep = []          # the tracers (their ids stay theirs while the trace runs)
        self.backends = {}      # value id -> the array it had while tracing
        self.captured = {}      # id(obj) -> Value
        self.snapshots = []     # (backend array, copy): captured arrays written while tracing
        self.rng_states = {}    # id(generator) -> (generator, state)
        self.global_rng = None
        self.vectorize_rules = vectorize_rules
        self.shared = {}        # id -> tnp's True/False Scalar made a tracer (put back after)
        self.ambiguous = set()  # ids of shared scalars that two operations returned
        self.listener = None    # this trace's listener (``before``), to tell it from others
        self.scopes = []        # the sub-programs being traced now (control.py), innermost last
        self.scope_of = {}      # value id -> the sub-program it was made in (closed ones too)
        self.closed_scopes = []  # those closed since the last control node was made
        self.readable = []      # closed sub-programs a backward being traced may read

    # -- values ------------------------------------------------------------------------
    def add_input(self, tracer, index):
        v = self.graph.new_value(tracer._a, "input", index=index)
        self.graph.inputs.append(v)
        self.values[id(tracer)] = v
        self.keep.append(tracer)
        self.backends[v.id] = tracer._a
        return v

    def _capture(self, obj):
        v = self.captured.get(id(obj))
        if v is None:
            backend = obj._a if isinstance(obj, _ndarray) else obj
            v = self.graph.new_value(backend, "capture", index=len(self.graph.captures))
            self.graph.captures.append(v)
            self.graph.capture_objs.append(obj)
            self.captured[id(obj)] = v
            self.keep.append(obj)
            self.backends[v.id] = backend
        return v

    def template(self, x):
        """The argument ``x`` as a template: tracers become Refs, arrays from outside Caps."""
        t = type(x)
        if t is Opaque:
            v = self.values.get(id(x))
            if v is None:
                raise UnsupportedTrace("tnp.jit: an opaque value of another trace (or a leaked "
                                       "one) was used" + _at(user_location()))
            return Ref(v)
        if t is Tracer or t is ScalarTracer:
            if id(x) in self.ambiguous:
                raise UnsupportedTrace(
                    "tnp.jit: two operations gave a boolean scalar, and tnp answers both with "
                    "one shared object: which one is used here is unknown" + _at(user_location()))
            v = self.values.get(id(x))
            if v is None:
                raise UnsupportedTrace("tnp.jit: a traced array from another trace (or a "
                                       "leaked one) was used" + _at(user_location()))
            if self.scope_of:
                s = self.scope_of.get(v.id)
                if s is not None and not any(s is o for o in self.scopes) and \
                        not any(s is o for o in self.readable):
                    raise UnsupportedTrace(
                        f"tnp.jit: a value computed inside {s.what} (a branch, loop condition "
                        f"or body traced on its own) is used outside it"
                        + _at(user_location()) + "; return it from the branch or body instead")
            return Ref(v)
        if isinstance(x, _ndarray):
            if x._dev is not CPU:
                raise UnsupportedTrace(f"tnp.jit: an array on {x._dev} is used: compiled "
                                       f"functions run on the CPU for now")
            if t is not _ndarray and t is not _Scalar and t._subclass_results:
                raise UnsupportedTrace(f"tnp.jit: an instance of {t.__name__} (a subclass of "
                                       f"tnp.ndarray) is used" + _at(user_location()))
            return Cap(self._capture(x), x)
        if t is np.ndarray:
            return Cap(self._capture(x), x)
        if t is list or t is tuple:
            return t(self.template(e) for e in x)
        if t is dict:
            return {k: self.template(e) for k, e in x.items()}
        if t is slice:
            return slice(self.template(x.start), self.template(x.stop), self.template(x.step))
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return t(*(self.template(e) for e in x))
        if isinstance(x, np.ndarray):   # NumPy subclasses (masked arrays, matrix): not compiled
            raise UnsupportedTrace(f"tnp.jit: a {t.__name__} (a NumPy array subclass) is used"
                                   + _at(user_location()))
        return x

    # -- listener callbacks --------------------------------------------------------------
    def before(self, name, args, kwargs):
        f = sys._getframe(2)
        fn = fargs = fkwargs = None
        if f.f_code is _REPORT_CODE:
            loc = f.f_locals
            fn, fargs, fkwargs = loc.get("fn"), loc.get("fargs"), loc.get("fkwargs")
        where = user_location()
        self._refuse_data_shaped(name, args, kwargs, where)
        for target in _written(name, args, kwargs):
            self._protect(target)
        if name.startswith("random.") or name.startswith("inplace_random."):
            self._save_rng(fn, fargs)
        return (fn, fargs, fkwargs, where)

    def after(self, tok, name, args, kwargs, result):
        fn, fargs, fkwargs, where = tok
        call, mode, cargs, ckwargs, opname = resolve(name, fn, fargs, fkwargs, args, kwargs)
        if call is None:
            raise UnsupportedTrace(f"tnp.jit: cannot tell how to run {name} again"
                                   + _at(where))
        node = Node(len(self.graph.nodes), name, call, mode, self.template(tuple(cargs)),
                    self.template(dict(ckwargs or {})), where)
        node.operator = opname
        for target in _written(name, args, kwargs):
            tt = self.template(target)
            if type(tt) is Ref or type(tt) is Cap:
                node.writes.append(tt.value)
        inputs_traced = self._touches_traced(args, kwargs)
        node.result = self._result(result, node, args, kwargs, name, inputs_traced, where)
        if self.vectorize_rules is not None:
            self.vectorize_rules(self, node, args, kwargs, result)
        if not node.writes and node.operator is None and not _is_ufunc_name(name):
            self._perturbation_check(node, args, kwargs, result, where)
        self.graph.nodes.append(node)

    # -- helpers -------------------------------------------------------------------------
    def _touches_traced(self, args, kwargs):
        return next(_arrays_in((args, kwargs)), None) is not None

    def _result(self, r, node, args, kwargs, name, arrays_in, where):
        t = type(r)
        if (t is _Scalar or t is ScalarTracer) and _is_shared_scalar(r):
            # tnp's one True (or False) Scalar: every boolean scalar result is that object
            if id(r) in self.shared and id(r) in self.values:
                self.ambiguous.add(id(r))
            self.shared[id(r)] = r
            v = self.graph.new_value(r._a, "node", node=node)
            r.__class__ = ScalarTracer
            self.values[id(r)] = v
            node.outputs.append(v)
            return Ref(v)
        if t is Tracer or t is ScalarTracer:
            v = self.values.get(id(r))
            if v is None:
                raise UnsupportedTrace("tnp.jit: a leaked traced array was returned by "
                                       + name + _at(where))
            return Ref(v)
        if isinstance(r, _ndarray):
            if id(r) in self.captured or any(r is a for a in _flat(args, kwargs)):
                return Cap(self._capture(r), r)
            if t is not _ndarray and t is not _Scalar:
                raise UnsupportedTrace(f"tnp.jit: {name} gave a {t.__name__}, a subclass of "
                                       f"tnp.ndarray" + _at(where))
            if r._dev is not CPU:
                raise UnsupportedTrace(f"tnp.jit: {name} gave an array on {r._dev}" + _at(where))
            v = self.graph.new_value(r._a, "node", node=node)
            self._share_storage(v, r._a, node)
            r.__class__ = ScalarTracer if t is _Scalar else Tracer
            self.values[id(r)] = v
            self.keep.append(r)
            self.backends[v.id] = r._a
            node.outputs.append(v)
            return Ref(v)
        if t is tuple or t is list:
            return t(self._result(e, node, args, kwargs, name, arrays_in, where) for e in r)
        if isinstance(r, tuple) and hasattr(r, "_fields"):
            return t(*(self._result(e, node, args, kwargs, name, arrays_in, where) for e in r))
        if r is None:
            return None
        if isinstance(r, np.ndarray):
            raise UnsupportedTrace(f"tnp.jit: {name} gave a NumPy array (not a tnp array), "
                                   f"whose values would be fixed at trace time" + _at(where))
        base = name.split(".")[-1] if not name.startswith("random.") else name
        if arrays_in and base not in _STATIC_RESULTS and name not in _STATIC_RESULTS:
            raise TraceError(f"tnp.jit: tnp.{name} gives a Python {type(r).__name__} computed "
                             f"from the values of traced arrays{_at(where)}; it is not known "
                             f"while tracing. Use array operations (tnp.where, tnp.all(...) as "
                             f"an array) or run that part outside the compiled function.")
        if name.startswith("random."):
            raise UnsupportedTrace(f"tnp.jit: tnp.{name} gave a Python {type(r).__name__}; "
                                   f"a compiled function would repeat that one draw. Pass size= "
                                   f"to get an array" + _at(where))
        return r

    def _share_storage(self, v, a, node):
        """A result that is a view of an input lives in that input's memory."""
        if isinstance(a, np.generic):
            return
        for inp in node.inputs():
            if inp.scalar:
                continue
            other = self._backend_of(inp)
            if other is not None and isinstance(other, np.ndarray) and \
                    np.may_share_memory(a, other):
                v.storage = inp.storage
                return

    def _backend_of(self, value):
        return self.backends.get(value.id)

    def _refuse_data_shaped(self, name, args, kwargs, where):
        base = name[len("inplace_"):] if name.startswith("inplace_") else name
        if base in _DATA_SHAPED and self._touches_traced(args, kwargs):
            raise UnsupportedTrace(f"tnp.jit: tnp.{base} gives a result whose shape depends on "
                                   f"the values{_at(where)}")
        if base in _DATA_SHAPED_BY:
            pos, key = _DATA_SHAPED_BY[base]
            arg = args[pos] if len(args) > pos else kwargs.get(key)
            if arg is not None and self._touches_traced((arg,), {}):
                raise UnsupportedTrace(f"tnp.jit: tnp.{base} with a traced {key!r} gives a "
                                       f"result whose shape depends on the values{_at(where)}")
        if base in _DATA_TYPED and self._touches_traced(args, kwargs) and (
                base == "real_if_close" or not all(
                    np.issubdtype(a.dtype, np.complexfloating)
                    for a in list(args) + list(kwargs.values()) if hasattr(a, "dtype"))):
            raise UnsupportedTrace(
                f"tnp.jit: tnp.{base} gives a real or a complex result depending on the "
                f"values{_at(where)}; compile it with complex inputs (or use the real function "
                f"on real ones)")
        if name == "where" and len(args) == 1 and not kwargs:
            raise UnsupportedTrace(f"tnp.jit: tnp.where(cond) with one argument (nonzero) gives "
                                   f"a result whose shape depends on the values{_at(where)}")
        if name in ("getitem", "setitem") and len(args) >= 2 and name == "getitem":
            if _has_mask(args[1]):
                raise UnsupportedTrace(
                    f"tnp.jit: indexing with a boolean mask gives a result whose shape depends "
                    f"on the values{_at(where)}; tnp.where(mask, x, 0) keeps the shape")

    def _protect(self, target):
        """Before a write into an array from outside: keep its values, to put them back once
        the trace is over (the trace wrote dummies; the compiled run writes the real ones)."""
        if is_tracer(target) or not isinstance(target, (_ndarray, np.ndarray)):
            return
        a = target._a if isinstance(target, _ndarray) else target
        if isinstance(a, np.ndarray):
            self.snapshots.append((a, a.copy()))

    def _save_rng(self, fn, fargs):
        gen = None
        np_fn = fargs[1] if fargs is not None and len(fargs) > 1 else None
        owner = getattr(np_fn, "__self__", None)
        if isinstance(owner, (np.random.Generator, np.random.RandomState)):
            gen = owner
        if gen is None:
            if self.global_rng is None:
                self.global_rng = np.random.get_state()
            return
        if id(gen) not in self.rng_states:
            st = gen.bit_generator.state if isinstance(gen, np.random.Generator) else \
                gen.get_state()
            self.rng_states[id(gen)] = (gen, st)

    def restore(self):
        for r in self.shared.values():
            r.__class__ = _Scalar
        self.shared.clear()
        for a, saved in reversed(self.snapshots):
            a[...] = saved
        self.snapshots.clear()
        for gen, st in self.rng_states.values():
            if isinstance(gen, np.random.Generator):
                gen.bit_generator.state = st
            else:
                gen.set_state(st)
        if self.global_rng is not None:
            np.random.set_state(self.global_rng)

    def _perturbation_check(self, node, args, kwargs, result, where):
        """Run the operation again with the values of its integer and boolean traced arguments
        changed: a different result shape means the values decide the shape (``tnp.zeros(n)``,
        ``tnp.repeat(x, counts)``), which a compiled replay cannot follow."""
        changed = [False]
        eager = node.mode != "numpy"

        def alt(x):
            t = type(x)
            if t is Tracer or t is ScalarTracer:
                a = x._a
                if a.dtype.kind in "iu":
                    changed[0] = True
                    a = a + a.dtype.type(1)
                elif a.dtype.kind == "b":
                    changed[0] = True
                    a = np.logical_not(a)
                return _wrap_as(_ndarray if t is Tracer else _Scalar, a) if eager else a
            if isinstance(x, _ndarray):
                return x if eager else x._a
            if t is list or t is tuple:
                return t(alt(e) for e in x)
            if t is dict:
                return {k: alt(e) for k, e in x.items()}
            return x

        call_args = _raw_args(node, args, kwargs)
        a2 = alt(call_args[0])
        k2 = alt(call_args[1])
        if not changed[0]:
            return
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r2 = node.call(*a2, **k2)
        except Exception:
            return    # the other values are not valid for it: nothing learnt
        if eager:
            r2 = _backend_tree(r2)
        if _shapes(r2) != _shapes(_backend_tree(result)):
            raise UnsupportedTrace(f"tnp.jit: tnp.{node.name} gives a result whose shape depends "
                                   f"on the values of its arguments{_at(where)}")


def _arrays_in(x):
    """The tnp and NumPy arrays (tracers included) in nested lists, tuples and dicts."""
    t = type(x)
    if isinstance(x, (_ndarray, np.ndarray)):
        yield x
    elif t in (list, tuple) or isinstance(x, tuple):
        for e in x:
            yield from _arrays_in(e)
    elif t is dict:
        for e in x.values():
            yield from _arrays_in(e)


def _raw_args(node, args, kwargs):
    # the node's own argument structure (the template) over the original objects: rebuilt
    # from the template by matching its leaves with the objects in the reported arguments
    objs = {}
    for x in _arrays_in((args, kwargs)):
        objs.setdefault(id(x), x)
    ctx = _state.ctx
    by_value = {}
    for oid, o in objs.items():
        v = ctx.values.get(oid) or ctx.captured.get(oid)
        if v is not None:
            by_value[v.id] = o

    def back(t):
        tt = type(t)
        if tt is Ref or tt is Cap:
            return by_value.get(t.value.id, t.obj if tt is Cap else None)
        if tt is list or tt is tuple:
            return tt(back(e) for e in t)
        if tt is dict:
            return {k: back(e) for k, e in t.items()}
        if tt is slice:
            return slice(back(t.start), back(t.stop), back(t.step))
        return t

    return back(node.args), back(node.kwargs)


def _backend_tree(r):
    if isinstance(r, _ndarray):
        return r._a
    if type(r) in (list, tuple):
        return type(r)(_backend_tree(e) for e in r)
    return r


def _shapes(r):
    if isinstance(r, (np.ndarray, np.generic)):
        return (np.shape(r), r.dtype)
    if isinstance(r, (list, tuple)):
        return tuple(_shapes(e) for e in r)
    return type(r)


def _has_mask(key):
    t = type(key)
    if t is tuple:
        return any(_has_mask(k) for k in key)
    if isinstance(key, _ndarray):
        return key._a.dtype.kind == "b" and np.ndim(key._a) > 0 or \
            key._a.dtype.kind == "b" and is_tracer(key)
    if isinstance(key, np.ndarray):
        return key.dtype.kind == "b"
    if t is list:
        return any(isinstance(e, (bool, np.bool_)) for e in key) or \
            any(_has_mask(e) for e in key if isinstance(e, (_ndarray, np.ndarray)))
    return False


def _flat(args, kwargs):
    for x in (*args, *(kwargs.values() if kwargs else ())):
        if type(x) in (list, tuple):
            yield from _flat(x, None)
        else:
            yield x


def _written(name, args, kwargs):
    """The arrays an operation writes into (its reported name and ``out=`` say so)."""
    out = []
    if (name.startswith("inplace_") or name == "setitem") and args:
        out.append(args[0])
    o = kwargs.get("out") if kwargs else None
    if o is not None:
        out.extend(o if isinstance(o, tuple) else (o,))
    return out


# ----------------------------------------------------------------------------- tracing
def tracing():
    """Whether this thread is tracing a function now."""
    ctx = _state.ctx
    return ctx is not None and ctx.thread == threading.get_ident()


# ----------------------------------------------------------------------------- primitives
NOT_TRACING = object()


class Opaque:
    """What a traced primitive returned that is not an array (its caches, a closure over them):
    at every run, the object that run's call made, handed to the later primitives given it
    (a backward pass). ``trace_value`` is the object of the trace-time call."""

    __slots__ = ("trace_value", "label")

    def __init__(self, trace_value, label):
        self.trace_value = trace_value
        self.label = label

    def __repr__(self):
        return f"Opaque<{type(self.trace_value).__name__} from {self.label}>"

    def __getattr__(self, name):
        raise TraceError(f"tnp.jit: {self!r} is only known when the compiled function runs: "
                         f"pass it to a primitive (tnp.extend.primitive) instead of reading "
                         f".{name}" + _at(user_location()))


# ----------------------------------------------------------------------------- entry point
def _listener_for(ctx):
    """The listener of one trace: it records only the operations of that trace's thread (two
    threads may trace at once, each with its own listener)."""
    def before(name, args, kwargs):
        if _state.ctx is not ctx:
            return None
        return ctx.before(name, args, kwargs)

    def after(tok, name, args, kwargs, result):
        if tok is not None:
            ctx.after(tok, name, args, kwargs, result)

    ctx.listener = before
    return before, after


def trace(fn, args, kwargs, make_inputs, fn_name=None, vectorize_rules=None):
    """Trace ``fn``: ``make_inputs(ctx)`` gives the (args, kwargs) to call it with (placeholders
    registered through ``ctx.add_input``); returns ``(graph, result)``, the result as a
    template of the values the function returned."""
    if _state.ctx is not None:
        raise UnsupportedTrace("tnp.jit: nested traces in one thread")
    ctx = TraceContext(fn_name or getattr(fn, "__name__", "f"), vectorize_rules)
    _register_numba_refusal()
    call_args, call_kwargs = make_inputs(ctx)
    _state.ctx = ctx
    handle = _listeners.add_op_listener(*_listener_for(ctx))
    _extend._trace_started(Tracer, ScalarTracer)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = fn(*call_args, **call_kwargs)
        ctx.graph.output = _output_template(ctx, result)
    finally:
        _extend._trace_ended()
        handle.remove()
        _state.ctx = None
        ctx.restore()
    _check_generators(ctx)
    return ctx.graph


def _output_template(ctx, r):
    t = type(r)
    if t is Opaque:
        raise UnsupportedTrace(f"tnp.jit: the function returned {r!r}, a value a primitive "
                               f"made for a later primitive; return arrays")
    if t is Tracer or t is ScalarTracer:
        return ctx.template(r)
    if isinstance(r, _ndarray):
        return ctx.template(r)
    if t is np.ndarray:
        raise UnsupportedTrace("tnp.jit: the function returned a NumPy array made while "
                               "tracing; its values would be fixed at trace time")
    if t is tuple or t is list:
        return t(_output_template(ctx, e) for e in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):
        return t(*(_output_template(ctx, e) for e in r))
    if t is dict:
        return {k: _output_template(ctx, e) for k, e in r.items()}
    return r


def _check_generators(ctx):
    """A random generator made inside the function (``default_rng(0)``) is made anew by every
    eager call, where a replay would go on drawing from the one made while tracing: refused.
    Once the function has returned, such a generator is held only by the graph's nodes."""
    gens = {}
    for node in ctx.graph.nodes:
        owner = getattr(node.call, "__self__", None)
        if isinstance(owner, (np.random.Generator, np.random.RandomState)):
            gens.setdefault(id(owner), [owner, 0])[1] += 1
    ctx.rng_states.clear()
    for entry in gens.values():
        owner, uses = entry
        entry[0] = None
        # held here by: ``owner``, getrefcount's argument, and one bound method per node
        if sys.getrefcount(owner) - 2 - uses <= 0:
            raise UnsupportedTrace("tnp.jit: the function draws from a random generator it "
                                   "makes itself; each eager call makes a new one. Make the "
                                   "generator outside the function")


_numba_registered = [False]


def _register_numba_refusal():
    """A @numba.njit function given a Tracer would compute on its dummy values: refuse."""
    if _numba_registered[0] or "numba" not in sys.modules:
        return
    try:
        from numba.extending import typeof_impl

        def refuse(val, c):
            _concrete(val, "passing to a @numba.njit function",
                      "Numba functions need values; call them outside the compiled function")

        typeof_impl.register(Tracer)(refuse)
        typeof_impl.register(ScalarTracer)(refuse)
        _numba_registered[0] = True
    except Exception:
        pass
