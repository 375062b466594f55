"""How a recorded operation is run again: the callable a replay calls, and on what.

tnp's dispatch, on the CPU, unwraps its arguments and calls a NumPy function; a replay calls that
NumPy function directly on NumPy arrays ('numpy' mode), which is what makes a replay cheaper than
eager tnp. It is decided here, from the operation the listeners saw (its registry name and the
callable ``_report`` was given), which NumPy callable that is. Whatever is not recognised is
replayed by calling the tnp operation itself on tnp arrays ('eager' mode): slower, and exact by
construction.
"""
from __future__ import annotations

import operator

import numpy as np

from .._core import dispatch as _dispatch, operators as _operators
from .._core.ndarray import ndarray as _ndarray

__all__ = ["resolve", "PY_OPERATORS"]

_DISPATCH_FILE = _dispatch.__file__
_OPERATORS_FILE = _operators.__file__

# an operator's method name (the function _report is given) -> what Python computes; reported
# arguments are in the order the user wrote them (``2 ** x`` is ``('power', (2, x))``)
PY_OPERATORS = {
    "__add__": operator.add, "__radd__": operator.add, "__iadd__": operator.iadd,
    "__sub__": operator.sub, "__rsub__": operator.sub, "__isub__": operator.isub,
    "__mul__": operator.mul, "__rmul__": operator.mul, "__imul__": operator.imul,
    "__truediv__": operator.truediv, "__rtruediv__": operator.truediv,
    "__itruediv__": operator.itruediv,
    "__floordiv__": operator.floordiv, "__rfloordiv__": operator.floordiv,
    "__ifloordiv__": operator.ifloordiv,
    "__mod__": operator.mod, "__rmod__": operator.mod, "__imod__": operator.imod,
    "__pow__": operator.pow, "__rpow__": operator.pow, "__ipow__": operator.ipow,
    "__matmul__": operator.matmul, "__rmatmul__": operator.matmul,
    "__imatmul__": operator.imatmul,
    "__and__": operator.and_, "__rand__": operator.and_, "__iand__": operator.iand,
    "__or__": operator.or_, "__ror__": operator.or_, "__ior__": operator.ior,
    "__xor__": operator.xor, "__rxor__": operator.xor, "__ixor__": operator.ixor,
    "__lshift__": operator.lshift, "__rlshift__": operator.lshift,
    "__ilshift__": operator.ilshift,
    "__rshift__": operator.rshift, "__rrshift__": operator.rshift,
    "__irshift__": operator.irshift,
    "__divmod__": divmod, "__rdivmod__": divmod,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt,
    "__le__": operator.le, "__gt__": operator.gt, "__ge__": operator.ge,
    "__negative__": operator.neg, "__positive__": operator.pos, "__absolute__": abs,
    "__invert__": operator.invert,
}


def _reshape(a, *shape, order="C", copy=None):
    if copy is None:
        return a.reshape(*shape, order=order)
    return a.reshape(*shape, order=order, copy=copy)


def _transpose(a, *axes):
    return a.transpose(*axes)


def _view(a, dtype=None, type=None):
    return a.view() if dtype is None else a.view(dtype)


def _astype(a, dtype, *args, **kwargs):
    return a.astype(dtype, *args, **kwargs)


def _fill(a, value):
    a.fill(value)


def _sort(a, axis=-1, **kw):
    a.sort(axis, **kw)


def _partition(a, kth, axis=-1, kind="introselect", order=None):
    a.partition(kth, axis, kind, order)


def _put(a, indices, values, mode="raise"):
    a.put(indices, values, mode)


def _copy(a, order="C"):
    return a.copy(order)


def _flatten(a, order="C"):
    return a.flatten(order)


def _T(a):
    return a.T


def _mT(a):
    return a.swapaxes(-1, -2)


def _real(a):
    return a.real


def _imag(a):
    return a.imag


def _method_table():
    """ndarray's own methods that report (keyed by the function _report is given) -> what they
    compute on the backend array, given the method's own arguments."""
    t = {
        _ndarray._getitem_py: operator.getitem,
        _ndarray.__setitem__: operator.setitem,
        _ndarray.fill: _fill,
        _ndarray._reshape_py: _reshape,
        _ndarray.transpose: _transpose,
        _ndarray._T_py: _T,
        _ndarray.astype: _astype,
        _ndarray.sort: _sort,
        _ndarray.partition: _partition,
        _ndarray.put: _put,
        _ndarray.copy: _copy,
        _ndarray.mT.fget: _mT,
        _ndarray.real.fget: _real,
        _ndarray.imag.fget: _imag,
        _ndarray.view: _view,
    }
    fl = getattr(_ndarray, "flatten", None)
    if fl is not None:
        t[fl] = _flatten
    return t


_METHODS = None


def _creation_needs_tnp(kwargs):
    return bool(kwargs) and ("device" in kwargs or "like" in kwargs)


def resolve(name, fn, fargs, fkwargs, args, kwargs):
    """What replays operation ``name``: ``(call, mode, call_args, call_kwargs, operator)``.

    ``fn``, ``fargs``, ``fkwargs``: what the listeners' ``_report`` was given (the operation and,
    where its own arguments differ from the reported ones, those); ``args``, ``kwargs``: the
    reported arguments. ``call_args``/``call_kwargs`` still hold tnp arrays: the tracer turns them
    into templates.
    """
    global _METHODS
    if _METHODS is None:
        _METHODS = _method_table()
    if fn is None:
        return None, "eager", args, kwargs, None
    if fn is _dispatch._call and fargs is not None:
        # (name, np_fn, resolve, args, kwargs, creation, host_ok, inputs)
        np_fn, a, kw, creation = fargs[1], fargs[3], fargs[4], fargs[5]
        if creation and _creation_needs_tnp(kw):
            return fn, "eager", fargs, fkwargs or {}, None
        return np_fn, "numpy", a, kw or {}, None
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_filename == _DISPATCH_FILE:
        np_fn = getattr(fn, "__wrapped__", None)
        if code.co_name == "u" and np_fn is not None:
            return np_fn, "numpy", args, kwargs, None
        if code.co_name == "f" and np_fn is not None:
            info = _dispatch.REGISTRY.get(name[len("inplace_"):] if name.startswith("inplace_")
                                          else name)
            if info is not None and info.kind == "creation" and _creation_needs_tnp(kwargs):
                return fn, "eager", args, kwargs, None
            return np_fn, "numpy", args, kwargs, None
    func = getattr(fn, "__func__", None)
    if func is _dispatch._UfuncImpl.at:
        return fn.__self__._np.at, "numpy", args, {}, None
    if code is not None and code.co_filename == _OPERATORS_FILE:
        op = PY_OPERATORS.get(fn.__name__)
        if op is not None:
            return op, "numpy", args, kwargs, fn.__name__
    m = _METHODS.get(fn)
    if m is not None:
        call_args = fargs if fargs is not None else args
        call_kwargs = fkwargs if fkwargs is not None else kwargs
        if m is _view and (len(call_args) > 2 and call_args[2] is not None or
                           isinstance(call_args[1] if len(call_args) > 1 else None, type)):
            return fn, "eager", call_args, call_kwargs, None
        if m is _astype and ("device" in call_kwargs or not _numpy_knows(call_args[1])):
            return fn, "eager", call_args, call_kwargs, None
        return m, "numpy", call_args, call_kwargs, None
    return fn, "eager", fargs if fargs is not None else args, \
        fkwargs if fkwargs is not None else kwargs, None


def _numpy_knows(dtype):
    """Whether NumPy reads ``dtype`` itself (tnp maps the ml_dtypes names, "bfloat16", first)."""
    if not isinstance(dtype, str):
        return True
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True
