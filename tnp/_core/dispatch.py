"""The one dispatch mechanism: every public tnp function is made here, from a table, by the same
wrapper.

A wrapped call
  1. unwraps ``tnp.ndarray`` arguments (also inside lists/tuples and keyword arguments) to backend
     arrays, checking that they all live on one device;
  2. picks the backend function for that device (NumPy's on the CPU, CuPy's on a GPU; NumPy arrays
     and Python scalars are moved to the device);
  3. wraps the results (arrays -> ``ndarray``, NumPy scalars -> ``Scalar``; ``out=`` returns the
     given array);
  4. reports the call to the operation listeners (:mod:`.listeners`), only if any is installed:
     each made function starts with that one check of ``_HOOK``.

Fast paths for one positional array argument keep per-call overhead small. Every made function
is entered in :data:`REGISTRY` (name -> :class:`FunctionInfo`), the list the autodiff rules and the
coverage tests are checked against.
"""
from __future__ import annotations

import sys as _sys

import warnings

import numpy as _np

from . import operators as _operators, state as _state
from .listeners import PASS
from .devices import CPU, get_default_device, device as _to_device
from .ndarray import (
    Scalar, _gpu_types, _nda, bump_version, device_mismatch, ndarray, relate, wrap, wrap_args,
    wrap_like, wrap_scalarize, _prefix_error,
)
from .overrides import (
    _SubclassProbe, _argument_answered, _from_probe, _from_probes, _function_overrides,
    _override_function,
)

__all__ = ["FunctionInfo", "REGISTRY", "make_function", "ufunc", "register", "numpy_ufunc_to_tnp",
           "call_numpy_function"]

_HOOK = None
_state.register_hot_module(globals())


class FunctionInfo:
    """What the registry knows of one public function."""

    __slots__ = ("name", "function", "numpy_function", "section", "kind")

    def __init__(self, name, function, numpy_function, section, kind):
        self.name = name                      # registry name: 'add', 'linalg.inv', 'random.normal'
        self.function = function              # the public tnp callable
        self.numpy_function = numpy_function  # what it mirrors (None for tnp-only functions)
        self.section = section                # NumPy reference section ('math', 'manipulation', ...)
        self.kind = kind                      # 'ufunc' | 'function' | 'creation' | 'composite' | 'meta'

    def __repr__(self):
        return f"FunctionInfo({self.name!r}, section={self.section!r}, kind={self.kind!r})"


REGISTRY: dict = {}
_NUMPY_TO_TNP: dict = {}   # numpy callable -> tnp callable, for __array_function__/__array_ufunc__


def register(name, function, numpy_function, section, kind):
    """Enter a public function in the registry (made here or written by hand)."""
    REGISTRY[name] = FunctionInfo(name, function, numpy_function, section, kind)
    if numpy_function is not None:
        try:
            _NUMPY_TO_TNP[numpy_function] = function
        except TypeError:  # unhashable callables
            pass
    return function


# ---------------------------------------------------------------------------- argument handling
class _Ctx:
    __slots__ = ("dev", "name", "template", "first", "probes")

    def __init__(self, name):
        self.dev = None
        self.name = name
        self.template = None
        self.first = None
        self.probes = None    # [(probe, tnp subclass instance)], see _SubclassProbe


def _mismatch(ctx, d):
    device_mismatch(ctx.name, ctx.dev, d)


def _unwrap_top(x, ctx):
    """Creation functions: only top-level arrays are unwrapped; nested lists are left for the
    backend's ``array`` (which reads tnp elements through ``__array__``), so converting a long
    Python list costs what NumPy's conversion costs."""
    if isinstance(x, ndarray):
        return _unwrap(x, ctx)
    return x


def _unwrap(x, ctx):
    if isinstance(x, ndarray):
        d = x._dev
        if ctx.dev is None:
            ctx.dev = d
            ctx.first = x
        elif ctx.dev is not d:
            _mismatch(ctx, d)
        t = type(x)
        if t is not ndarray and t is not Scalar and t._subclass_results:
            a = x._a
            if type(a) is _nda:
                p = a.view(_SubclassProbe)
                if ctx.probes is None:
                    ctx.probes = []
                ctx.probes.append((p, x))
                return p
            if ctx.template is None:
                ctx.template = x     # (GPU arrays: results of the subclass, as ufuncs give)
        return x._a
    t = type(x)
    if t is list or t is tuple:
        for e in x:
            if isinstance(e, (ndarray, list, tuple)):
                return t(_unwrap(e, ctx) for e in x)
        return x
    if t is dict:
        return {k: _unwrap(v, ctx) for k, v in x.items()}
    if t is _np.poly1d and isinstance(x.coeffs, ndarray):
        # NumPy's class built of a tnp array keeps it (``np.poly1d(tnp_array)``); handed to
        # NumPy as it is, each of NumPy's inner calls on it would dispatch back here
        return _np.poly1d(_host(_unwrap(x.coeffs, ctx)), variable=x.variable)
    return x


def _move(x, dev):
    """Second pass on a GPU: host arrays (and lists of them) move to the device."""
    if isinstance(x, (_nda, _np.generic)):
        return dev.backend.xp.asarray(x)
    t = type(x)
    if t is list or t is tuple:
        if any(isinstance(e, (_nda, list, tuple)) for e in x):
            return t(_move(e, dev) for e in x)
    return x


def _move_input(x, dev):
    """A ufunc's input on a GPU: as :func:`_move`, and a list or tuple is an array there (CuPy's
    ufuncs take no lists, NumPy's do)."""
    x = _move(x, dev)
    t = type(x)
    return dev.backend.xp.asarray(x) if t is list or t is tuple else x


_missing_on_gpu_warned: set = set()


def _gpu_function(name, resolve, dev, host_ok=False):
    fn = resolve(dev.backend)
    if fn is None and not host_ok:
        if name not in _missing_on_gpu_warned:
            _missing_on_gpu_warned.add(name)
            warnings.warn(f"tnp.{name}: CuPy has no implementation; computing on the host and "
                          f"copying the result back", RuntimeWarning, stacklevel=4)
    return fn


def _host(x):
    if _gpu_types and type(x) in _gpu_types:
        return x.get()
    t = type(x)
    if t is list or t is tuple:
        return t(_host(e) for e in x)
    if t is dict:
        return {k: _host(v) for k, v in x.items()}
    return x


_ML_DTYPE_NAMES = ("bfloat16", "float8_", "float4_", "float6_", "int2", "int4", "uint2",
                   "uint4")


def _loaded_ml_dtypes_for(e):
    """Whether ``e`` is NumPy not knowing an ml_dtypes name (``dtype="bfloat16"``) because
    ml_dtypes, which tnp imports only when first needed, was not loaded yet: it is now, and
    the call can be made again."""
    if type(e) is not TypeError or "ml_dtypes" in _sys.modules:
        return False
    msg = str(e)
    if "data type" not in msg or not any(f"'{n}" in msg for n in _ML_DTYPE_NAMES):
        return False
    import ml_dtypes  # noqa: F401 - registers its dtypes with NumPy
    return True


def _call(name, np_fn, resolve, args, kwargs, creation=False, host_ok=False, inputs=False):
    """The general path: unwrap everything, choose the device and backend, call, wrap.
    ``inputs``: the positional arguments are array-likes (a ufunc's inputs)."""
    if _HOOK is not None:
        r = _HOOK(name, args, kwargs, _call, (name, np_fn, resolve, args, kwargs, creation,
                                               host_ok, inputs), {})
        if r is not PASS:
            return r
    if not creation:
        ov = _function_overrides(args, kwargs)
        if ov:
            return _override_function(ov, name, np_fn, args, kwargs)
    ctx = _Ctx(name)
    unw = _unwrap_top if creation else _unwrap
    uargs = tuple([unw(a, ctx) for a in args])
    ukw = {k: unw(v, ctx) for k, v in kwargs.items()} if kwargs else {}
    if creation:
        dev = ukw.pop("device", None)
        like = ukw.pop("like", None)
        if dev is not None:
            dev = _to_device(dev)
            if ctx.dev is not None and ctx.dev is not dev and ctx.first is not None:
                # arrays given to a creation function are copied to the requested device
                if ukw.get("copy") is False:
                    raise ValueError(f"{name}: copy=False, but moving an array from {ctx.dev} "
                                     f"to {dev} needs a copy")
                uargs = tuple(_host(a) for a in uargs)
                if dev.kind == "cpu" and ctx.dev.kind == "cpu":  # fake CPUs share host memory
                    uargs = tuple(a.copy() if isinstance(a, _nda) else a for a in uargs)
                ctx.dev = dev
        elif like is not None:
            dev = like.device if isinstance(like, ndarray) else (ctx.dev or get_default_device())
        else:
            dev = ctx.dev or get_default_device()
    else:
        dev = ctx.dev or get_default_device()
    out = kwargs.get("out") if kwargs else None
    try:
        if dev.kind == "cpu":
            if _gpu_types:
                uargs = tuple(_host(a) for a in uargs) if ctx.dev is not dev else uargs
            r = np_fn(*uargs, **ukw)
        else:
            fn = _gpu_function(name, resolve, dev, host_ok)
            if fn is None:
                r = np_fn(*_host(uargs), **_host(ukw))
                r = _move(r, dev) if not isinstance(r, tuple) else type(r)(_move(x, dev) for x in r)
            else:
                xp = dev.backend.xp
                move = _move_input if inputs else _move
                with xp.cuda.Device(dev.index):
                    r = fn(*[move(a, dev) for a in uargs], **{k: _move(v, dev) for k, v in ukw.items()})
    except Exception as e:
        if _loaded_ml_dtypes_for(e):    # "bfloat16" before ml_dtypes was loaded: once more
            return _call(name, np_fn, resolve, args, kwargs, creation, host_ok, inputs)
        _prefix_error(e, name)
        raise
    if out is not None:
        _bump_out(out)   # (whatever answered was given the outputs to write)
        if _answered_by_another_library(r):
            return r
        # each output is the array given for it where the backend wrote and returned that one
        # (outputs given as None, ``out=(None, o2)``, are the ones NumPy made; and a function
        # that made a new array instead, as NumPy's FFTs do for an ``out`` of another shape,
        # answers with that array, as NumPy's does, never with the untouched ``out``)
        outs = out if isinstance(out, tuple) else (out,)
        rs = r if isinstance(r, tuple) and len(outs) > 1 else (r,)
        if ctx.probes:
            res = tuple(o if isinstance(o, ndarray) and _from_probe(x, ctx) is o._a else
                        _from_probes(x, dev, ctx) for o, x in zip(outs, rs))
            return res[0] if len(res) == 1 else res
        res = tuple(o if o is x or isinstance(o, ndarray) and o._a is x else
                    (wrap_scalarize(x, dev) if not isinstance(o, ndarray) or
                     not isinstance(x, (_nda, *_gpu_types)) else relate(wrap(x, dev), args))
                    for o, x in zip(outs, rs))
        return res[0] if len(res) == 1 else res
    if ctx.probes:
        return _from_probes(r, dev, ctx)
    same = _argument_answered(r, args, creation and name != "asanyarray" and not ukw.get("subok"))
    if same is not None:
        return same
    if ctx.template is not None and not creation:
        res = wrap_like(r, dev, ctx.template) if type(r) is _nda or (_gpu_types and type(r) in _gpu_types) \
            else (wrap(r, dev) if dev.kind == "cpu" else wrap_scalarize(r, dev))
    elif ctx.dev is None and not creation and dev is CPU and (
            isinstance(r, _np.generic) or _foreign_array_in(args, kwargs)):
        # no tnp array in: a NumPy number out is NumPy's own number, and given another
        # library's array-like (a pandas Series) the result is whatever NumPy returns
        # (``np.nan_to_num(series)`` a NumPy array, ``np.mean(series)`` ``series.mean()``). No
        # tape can follow a value made of no tnp array, and a tnp value there would turn a
        # pandas float column into an object column (``series.apply(np.sqrt)``,
        # ``groupby(...).agg(lambda x: np.mean(np.nan_to_num(x)))``)
        res = r
    elif dev.kind == "cpu" or creation:
        res = wrap(r, dev)
    else:
        res = wrap_scalarize(r, dev)
    return relate(res, args)


_OWN_MODULES = ("numpy", "tnp", "builtins")


def _foreign_array_in(args, kwargs):
    """Whether an argument is an array-like of another library (its type has ``__array__`` and
    is neither NumPy's nor tnp's)."""
    for x in (*args, *(kwargs.values() if kwargs else ())):
        t = type(x)
        if t.__module__.partition(".")[0] not in _OWN_MODULES and hasattr(t, "__array__"):
            return True
    return False


def _answered_by_another_library(r):
    """Whether a call given ``out=`` returned what no backend returns there (its outputs, arrays):
    an ``__array_ufunc__`` of another library's object answered, and NumPy returns its answer."""
    if isinstance(r, tuple):
        return not all(isinstance(x, (_nda, *_gpu_types)) for x in r)
    return not isinstance(r, (_nda, _np.generic, *_gpu_types))


def _bump_out(out):
    if isinstance(out, ndarray):
        bump_version(out._a)
    elif isinstance(out, tuple):
        for o in out:
            if isinstance(o, ndarray):
                bump_version(o._a)


# ---------------------------------------------------------------------------- fast path
# The fast paths return through ``wrap``, which the C base makes a C function (cheaper than
# the four lines it stands for, written out in Python).
def _fast_unwrap(args, kwargs):
    """Backend arguments for the common call on the CPU: exact tnp arrays (or flat lists of
    them) and plain Python values; keyword values hold no arrays. ``None`` means: take the
    general path (no array at all, other devices, subclasses, NumPy arrays, ``out=``...)."""
    if kwargs:
        for v in kwargs.values():
            t = type(v)
            if not (t is int or t is bool or t is str or t is float or v is None or t is tuple
                    and not any(isinstance(e, ndarray) for e in v)):
                if not isinstance(v, _np.dtype) and not (isinstance(v, type) and issubclass(v, _np.generic)):
                    return None
    ua = []
    found = False
    for a in args:
        t = type(a)
        if t is ndarray or t is Scalar:
            if a._dev is not CPU:
                return None
            ua.append(a._a)
            found = True
        elif t is list or t is tuple:
            inner = []
            for e in a:
                te = type(e)
                if (te is ndarray or te is Scalar) and e._dev is CPU:
                    inner.append(e._a)
                    found = True
                elif te is int or te is float or te is bool:
                    inner.append(e)
                else:
                    return None
            ua.append(inner if t is list else tuple(inner))
        elif t is int or t is float or t is bool or t is str or a is None:
            ua.append(a)
        else:
            return None
    return ua if found else None


# ---------------------------------------------------------------------------- function factory
def _numpy_attr(qualname):
    obj = _np
    for p in qualname.split("."):
        obj = getattr(obj, p)
    return obj


def _resolver(qualname):
    def resolve(backend):
        try:
            return backend.function(qualname)
        except AttributeError:
            return None
    return resolve


def _positional_out(np_fn):
    """Where NumPy's function takes ``out`` positionally (``clip(a, lo, hi, out)``): its index
    and the names of the positional parameters from there on; ``(None, ())`` if nowhere."""
    # Read from the code object where there is one: inspect.signature on the ~400 functions
    # made at import was a sizeable part of ``import tnp``.
    f = np_fn
    while not hasattr(f, "__signature__") and getattr(f, "__wrapped__", None) is not None:
        f = f.__wrapped__
    code = getattr(f, "__code__", None)
    if code is not None and not hasattr(f, "__signature__"):
        if code.co_posonlyargcount:
            return None, ()
        names = code.co_varnames[:code.co_argcount]
        if "out" not in names:
            return None, ()
        i = names.index("out")
        return i, tuple(names[i:])
    import inspect

    try:
        params = list(inspect.signature(np_fn).parameters.values())
    except (TypeError, ValueError):
        return None, ()
    for i, p in enumerate(params):
        if p.kind is not p.POSITIONAL_OR_KEYWORD:
            break
        if p.name == "out":
            rest = []
            for q in params[i:]:
                if q.kind is not q.POSITIONAL_OR_KEYWORD:
                    break
                rest.append(q.name)
            return i, tuple(rest)
    return None, ()


def _out_as_keyword(args, kwargs, at, names):
    """An output array given positionally is passed as ``out=`` (and the positional arguments
    after it by name), so the call returns it and counts the write, as ``out=`` does."""
    if len(args) - at > len(names) or any(n in kwargs for n in names):
        return args, kwargs  # NumPy raises its own TypeError
    kwargs = dict(kwargs)
    kwargs.update(zip(names, args[at:]))
    return args[:at], kwargs


def make_function(name, section, numpy_function=None, kind="function", doc_extra=""):
    """Make the public tnp function ``name`` (a NumPy qualified name such as ``'linalg.inv'``)."""
    np_fn = numpy_function if numpy_function is not None else _numpy_attr(name)
    resolve = _resolver(name)
    creation = kind == "creation"

    if kind == "inplace":
        def f(*args, **kwargs):
            target = args[0] if args else None
            if not isinstance(target, ndarray):
                raise TypeError(f"{name}: the array to modify must be a tnp array, "
                                f"got {type(target).__name__}")
            if _HOOK is not None:  # an in-place write: a tape refuses it in ``before``
                r = _HOOK("inplace_" + name, args, kwargs, f)
                if r is not PASS:
                    return r
            _call(name, np_fn, resolve, args, kwargs)
            bump_version(target._a)
    elif creation and name in ("asarray", "asanyarray"):
        def f(*args, **kwargs):
            if _HOOK is not None:
                r = _HOOK(name, args, kwargs, f)
                if r is not PASS:
                    return r
            # the common call in library code: wrap a NumPy array on the (CPU) default device
            if not kwargs and len(args) == 1 and type(args[0]) is _nda and \
                    get_default_device() is CPU:
                return wrap(args[0], CPU)
            return _call(name, np_fn, resolve, args, kwargs, creation=True)
    elif creation:
        def f(*args, **kwargs):
            return _call(name, np_fn, resolve, args, kwargs, creation=True)
    else:
        out_at, after_out = _positional_out(np_fn)

        def f(*args, **kwargs):
            if out_at is not None and len(args) > out_at and args[out_at] is not None:
                args, kwargs = _out_as_keyword(args, kwargs, out_at, after_out)
            if _HOOK is not None:   # (an output given positionally is reported as out=)
                r = _HOOK(name, args, kwargs, f)
                if r is not PASS:
                    return r
            ua = _fast_unwrap(args, kwargs)
            if ua is not None:
                try:
                    r = np_fn(*ua, **kwargs)
                except Exception as e:
                    if _loaded_ml_dtypes_for(e):
                        return f(*args, **kwargs)
                    _prefix_error(e, name)
                    raise
                return wrap_args(r, CPU, args)   # an argument itself, or a linked view
            return _call(name, np_fn, resolve, args, kwargs)

    short = name.rsplit(".", 1)[-1]
    f.__name__ = short
    f.__qualname__ = short
    f.__module__ = "tnp" if "." not in name else "tnp." + name.rsplit(".", 1)[0]
    f.__doc__ = (f"tnp.{name}: mirrors ``numpy.{name}`` on tnp arrays (any device).{doc_extra}\n\n"
                 f"NumPy's documentation:\n\n{getattr(np_fn, '__doc__', '') or ''}")
    f.__wrapped__ = np_fn
    return register(name, f, np_fn, section, kind)


def make_functions(names, section, namespace, kind="function"):
    """Make and place several functions; names NumPy lacks (older NumPy) are skipped."""
    made = []
    for n in names:
        try:
            _numpy_attr(n)
        except AttributeError:
            continue
        f = make_function(n, section, kind=kind)
        namespace[n.rsplit(".", 1)[-1]] = f
        made.append(n.rsplit(".", 1)[-1])
    return made


def composite(name, section, numpy_function=None):
    """Decorator for hand-written public functions built from other tnp operations.

    They are registered (kind ``'composite'``) but not recorded themselves: the tape sees the
    tnp operations they are made of.
    """
    def deco(fn):
        np_fn = numpy_function
        if np_fn is None:
            try:
                np_fn = _numpy_attr(name)
            except AttributeError:
                np_fn = None
        if np_fn is not None and not fn.__doc__:
            fn.__doc__ = f"tnp.{name}: mirrors ``numpy.{name}``."
        fn.__wrapped__ = np_fn
        return register(name, fn, np_fn, section, "composite")
    return deco


# ---------------------------------------------------------------------------- ufuncs
class _UfuncType(type):
    def __instancecheck__(cls, obj):
        return isinstance(getattr(obj, "_tnp_ufunc", None), _UfuncImpl) or \
            type.__instancecheck__(cls, obj)


class ufunc(metaclass=_UfuncType):
    """The type of tnp's universal functions: ``isinstance(tnp.exp, tnp.ufunc)`` is True.

    A tnp ufunc mirrors ``numpy.ufunc``: ``__call__`` (``out=``, ``where=``, ``dtype=``,
    ``casting=``), ``reduce``, ``accumulate``, ``outer``, ``at``, ``reduceat``, ``nin``, ``nout``,
    ``nargs``, ``identity``, ``signature``, ``types``. Each one is a Python function carrying
    these as attributes (a call of a function is cheaper than a call of an object with
    ``__call__``, and every elementwise operation pays it); its repr is a function's.
    """

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'tnp.ufunc' instances; use the ones tnp provides")


class _UfuncImpl:
    """The state and methods behind one tnp ufunc (see :class:`ufunc`)."""

    __slots__ = ("_np", "__name__", "_name", "nin", "nout", "nargs", "identity", "signature",
                 "_public", "_kernel", "__dict__")

    def __init__(self, np_ufunc, name=None, kernel=None):
        self._np = np_ufunc
        # what a call computes on backend values, where it is not the ufunc itself: an
        # operator's own kernel (``a ** b`` is NumPy's operator, not its power ufunc)
        self._kernel = kernel
        self._name = name or np_ufunc.__name__
        self.__name__ = self._name
        self.nin = np_ufunc.nin
        self.nout = np_ufunc.nout
        self.nargs = np_ufunc.nargs
        self.identity = np_ufunc.identity
        self.signature = np_ufunc.signature
        self.__doc__ = f"tnp.{self._name}: ufunc mirroring ``numpy.{self._name}``.\n\n{np_ufunc.__doc__ or ''}"
        self.__wrapped__ = np_ufunc

    @property
    def ntypes(self):
        return self._np.ntypes

    @property
    def types(self):
        return self._np.types

    def _slow(self, method, args, kwargs):
        # out= is passed as given: NumPy raises TypeError for one array given to a nout=2 ufunc
        if method == "__call__" and self.nin < len(args) <= self.nargs and \
                (not kwargs or kwargs.get("out") is None):
            # outputs given positionally (``exp(x, x)``) become out=, so they are the result
            outs = tuple(args[self.nin:]) + (None,) * (self.nargs - len(args))
            kwargs = dict(kwargs or {})
            kwargs["out"] = outs if self.nout > 1 else outs[0]
            args = args[:self.nin]
        ov = ufunc_overrides(args, kwargs)
        if ov:
            return self._override(ov, method, args, kwargs)
        call = method == "__call__"
        name = self._name if call else f"{self._name}.{method}"
        kernel = self._kernel
        if call and kernel is not None:
            # an operator's kernel is Python's operator, which each backend's arrays implement
            return _call(name, kernel, lambda backend: kernel, args, kwargs, inputs=True)
        np_m = self._np if call else getattr(self._np, method)
        uname = self._name

        def resolve(backend):
            f = getattr(backend.xp, uname, None)
            if f is None:
                return None
            return f if call else getattr(f, method, None)

        # (``at``'s indices may be a tuple of index arrays: not an array of them)
        return _call(name, np_m, resolve, args, kwargs, inputs=method != "at")

    def _override(self, overriders, method, args, kwargs):
        """NEP 13: hand the call to the ``__array_ufunc__`` of tnp subclass arguments that
        define their own (subclasses before their bases, then left to right), as NumPy does."""
        kwargs = dict(kwargs or {})
        out = kwargs.get("out")
        if out is not None and not isinstance(out, tuple):
            kwargs["out"] = (out,)
        for x in overriders:
            if type(x).__array_ufunc__ is None:   # NumPy refuses such an operand at once
                raise TypeError(f"operand '{type(x).__name__}' does not support ufuncs "
                                f"(__array_ufunc__=None)")
        for x in overriders:
            f = type(x).__array_ufunc__
            # a tnp subclass gets tnp's ufunc (its super() call comes back here); another
            # library gets NumPy's, which is what it knows and compares against
            u = self._public if isinstance(x, ndarray) else self._np
            r = f(x, u, method, *args, **kwargs)
            if r is not NotImplemented:
                if out is not None and not isinstance(x, ndarray):
                    _bump_out(kwargs["out"])   # another library was given tnp outputs to write
                return r
        raise TypeError(f"operand type(s) all returned NotImplemented from __array_ufunc__"
                        f"(<ufunc {self._name!r}>, {method!r}, ...): "
                        + ", ".join(f"'{type(a).__name__}'" for a in args))

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=_np._NoValue,
               where=True):
        kw = dict(axis=axis, dtype=dtype, keepdims=keepdims)
        if initial is not _np._NoValue:
            kw["initial"] = initial
        if where is not True:
            kw["where"] = where
        if out is not None:
            kw["out"] = out
        return self._slow("reduce", (array,), kw)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        kw = dict(axis=axis, dtype=dtype)
        if out is not None:
            kw["out"] = out
        return self._slow("accumulate", (array,), kw)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        kw = dict(axis=axis, dtype=dtype)
        if out is not None:
            kw["out"] = out
        return self._slow("reduceat", (array, indices), kw)

    def outer(self, A, B, /, **kwargs):
        return self._slow("outer", (A, B), kwargs)

    def at(self, a, indices, b=None, /):
        args = (a, indices) if b is None else (a, indices, b)
        if not isinstance(a, ndarray):
            raise TypeError(f"{self._name}.at: the first argument must be a tnp array to modify "
                            f"in place, got {type(a).__name__}")
        if _HOOK is not None:  # an in-place write: a tape refuses it in ``before``
            r = _HOOK(f"inplace_{self._name}.at", args, {}, self.at)
            if r is not PASS:
                return r
        self._slow("at", args, {})
        bump_version(a._a)


_UFUNCS: dict = {}
_CORES: dict = {}      # (name, kernel) -> (_UfuncImpl, its two-operand call or None)
_PY_NUMBERS = frozenset({float, int, bool, complex})


def _ufunc_core(name, kernel=None):
    """The state of ufunc ``name`` (:class:`_UfuncImpl`) and, for a ufunc of two inputs, its
    two-operand call ``two(a, b, out=None)``: ``tnp.add(a, b)`` and ``a + b`` are that one
    function. ``kernel``: an operator's own (see :class:`_UfuncImpl`). Made once."""
    made = _CORES.get((name, kernel))
    if made is not None:
        return made
    np_u = getattr(_np, name)
    impl = _UfuncImpl(np_u, name, kernel)
    fn = np_u if kernel is None else kernel
    slow = impl._slow

    def two(a, b, out=None):
        # the fast path: tnp arrays and scalars on the CPU (exactly those classes) and Python
        # numbers, ``out=`` one such array; the rest goes to _two_other, and from there to the
        # general path, which has the one device check and message and the one GPU context
        ta = type(a)
        tb = type(b)
        if (ta is ndarray or ta is Scalar) and a._dev is CPU:
            x = a._a
            if (tb is ndarray or tb is Scalar) and b._dev is CPU:
                y = b._a
            elif tb in _PY_NUMBERS:
                y = b
            else:
                return _two_other(slow, fn, name, a, b, out)
        elif (tb is ndarray or tb is Scalar) and b._dev is CPU and ta in _PY_NUMBERS:
            x = a
            y = b._a
        else:
            return _two_other(slow, fn, name, a, b, out)
        if out is None:
            try:
                r = fn(x, y)
            except Exception as e:
                _prefix_error(e, name)
                raise
            return wrap(r, CPU)
        if type(out) is not ndarray or out._dev is not CPU:
            return _two_other(slow, fn, name, a, b, out)
        try:
            fn(x, y, out=out._a)
        except Exception as e:
            _prefix_error(e, name)
            raise
        bump_version(out._a)
        return out

    _CORES[(name, kernel)] = made = (impl, two if np_u.nin == 2 else None)
    return made


def _cpu_operand(x):
    """``x`` as the CPU fast path computes with it (a backend value), or ``_GENERAL``: a tnp
    array on the CPU whose class keeps tnp's ufunc handling (a training Variable), a NumPy
    array or scalar, a Python number."""
    if isinstance(x, ndarray):
        if x._dev is CPU and type(x).__array_ufunc__ is _DEFAULT_AUF:
            return x._a
        return _GENERAL
    if type(x) is _nda or type(x) in _PY_NUMBERS or isinstance(x, _np.generic):
        return x
    return _GENERAL


_GENERAL = object()


def _two_other(slow, fn, name, a, b, out):
    """What the fast path of a two-operand call leaves: tnp subclasses that keep tnp's ufunc
    handling (results of their class where ``_subclass_results``), NumPy arrays and scalars
    beside a tnp array on the CPU, computed as the fast path computes; the rest (other devices,
    ``__array_ufunc__`` overrides, lists, other objects, no tnp array, ``out=``) on the general
    path, :meth:`_UfuncImpl._slow`."""
    x = _cpu_operand(a)
    y = _cpu_operand(b) if x is not _GENERAL else _GENERAL
    if y is _GENERAL or (x is a and y is b) or out is not None:
        return slow("__call__", (a, b), {} if out is None else {"out": out})
    try:
        r = fn(x, y)
    except Exception as e:
        _prefix_error(e, name)
        raise
    for t in (a, b):
        if isinstance(t, ndarray) and type(t) is not ndarray and type(t) is not Scalar and \
                type(t)._subclass_results:
            return wrap_like(r, CPU, t)
    return wrap(r, CPU)


def make_ufunc(name, section="math"):
    np_u = getattr(_np, name)
    impl, two = _ufunc_core(name)
    slow = impl._slow
    binary = np_u.nin == 2
    nin = np_u.nin

    def u(*args, **kwargs):
        # outputs given positionally (``exp(x, x)``) are reported by the general path, which
        # turns them into out=
        if _HOOK is not None and len(args) <= nin:
            r = _HOOK(name, args, kwargs, u)
            if r is not PASS:
                return r
        n = len(args)
        if not kwargs:
            if n == 1:
                a = args[0]
                if type(a) is ndarray and a._dev is CPU:
                    try:
                        r = np_u(a._a)
                    except Exception as e:
                        _prefix_error(e, name)
                        raise
                    return wrap(r, CPU)
            elif n == 2 and binary:
                return two(*args)
        elif n == 2 and binary and len(kwargs) == 1 and "out" in kwargs:
            return two(args[0], args[1], kwargs["out"])
        return slow("__call__", args, kwargs)

    u.__name__ = u.__qualname__ = name
    u.__module__ = "tnp"
    u.__doc__ = impl.__doc__
    u.__wrapped__ = np_u
    u._tnp_ufunc = impl
    impl._public = u  # what a subclass's __array_ufunc__ receives as ``ufunc``
    for attr in ("reduce", "accumulate", "reduceat", "outer", "at"):
        setattr(u, attr, getattr(impl, attr))
    for attr in ("nin", "nout", "nargs", "identity", "signature"):
        setattr(u, attr, getattr(impl, attr))
    u.ntypes = np_u.ntypes
    u.types = np_u.types
    _UFUNCS[name] = u
    register(name, u, np_u, section, "ufunc")
    _operators.bind(name, u, two)
    return u


def _overrides_ufuncs(x):
    """Whether ``x`` takes part in NEP 13 as an override: a tnp subclass with an
    ``__array_ufunc__`` of its own, or another library's object with one (xarray, dask, pint,
    pandas: anything but NumPy's and tnp's own arrays)."""
    t = type(x)
    if t is ndarray or t is Scalar or t is _nda or t in _PY_NUMBERS:
        return False
    f = getattr(t, "__array_ufunc__", _DEFAULT_AUF)
    if isinstance(x, ndarray):
        return f is not _DEFAULT_AUF
    return f is not _DEFAULT_AUF and f is not _NUMPY_AUF and not isinstance(x, _np.generic)


def ufunc_overrides(args, kwargs):
    """The arguments (inputs and ``out=``) that override ``__array_ufunc__`` (see
    :func:`_overrides_ufuncs`), one per class, subclasses before their bases (NumPy's order).
    Each is called with the objects the user passed, as NumPy calls them."""
    found = []
    for x in (*args, *_outs_of(kwargs)):
        if _overrides_ufuncs(x):
            t = type(x)
            if all(type(y) is not t for y in found):
                for i, y in enumerate(found):
                    if issubclass(t, type(y)):
                        found.insert(i, x)
                        break
                else:
                    found.append(x)
    return found


def _outs_of(kwargs):
    out = kwargs.get("out") if kwargs else None
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


_DEFAULT_AUF = ndarray.__array_ufunc__
_NUMPY_AUF = _nda.__array_ufunc__


def numpy_ufunc_to_tnp(np_ufunc):
    """The tnp ufunc for a NumPy ufunc (``__array_ufunc__``), or a host fallback for foreign
    ufuncs (SciPy's, for example)."""
    if isinstance(np_ufunc, ufunc):  # a subclass's __array_ufunc__ calling super() with tnp's
        return np_ufunc
    u = _NUMPY_TO_TNP.get(np_ufunc)
    if isinstance(u, ufunc):
        return u
    return _ForeignUfunc(np_ufunc)


class _ForeignUfunc:
    """A ufunc tnp does not know (``scipy.special.expit``): computed by it, results wrapped."""

    __slots__ = ("_u",)

    def __init__(self, u):
        self._u = u

    def __getattr__(self, method):
        u = self._u
        fn = u if method == "__call__" else getattr(u, method)
        name = getattr(u, "__name__", "ufunc")

        def call(*args, **kwargs):
            return _call(name, fn, lambda backend: None, args, kwargs)
        return call


def call_numpy_function(func, types, args, kwargs):
    """``__array_function__``: a NumPy function called on tnp arrays runs tnp's version; NumPy
    functions tnp has not wrapped run on the host values and return tnp arrays."""
    f = _NUMPY_TO_TNP.get(func)
    if f is not None:
        return f(*args, **kwargs)
    name = getattr(func, "__name__", "function")
    if _function_overrides(args, kwargs):
        return NotImplemented   # NumPy then calls the other library's, with the user's objects
    impl = getattr(func, "_implementation", func)
    return _call(name, impl, _resolver(name), args, kwargs)
