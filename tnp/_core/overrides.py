"""What the dispatch wrapper does beyond unwrapping and wrapping, for calls that involve other
kinds of arrays: subclass instances of ``tnp.ndarray`` (NumPy decides their results through a
probe subclass) and other libraries' objects that override NumPy's functions (NEP 18), which
are called with the objects the user passed. ``dispatch`` imports this module, never the
reverse."""
from __future__ import annotations

from . import ndarray as _ndmod
from .ndarray import Scalar, _nda, ndarray, wrap

import numpy as _np

_NUMPY_AF = _nda.__array_function__


class _SubclassProbe(_nda):
    """A NumPy subclass with no behaviour of its own. A tnp subclass instance's host array is
    handed to NumPy as one of these, so that NumPy's own rules decide, call by call, which
    results are instances of the subclass (``a.sum(0)``, ``np.split(a)``, a 0-d ``a.sum()``,
    ``zeros_like(a)``), which are plain arrays (``concatenate``, ``np.copy``, ``asarray``) and
    which are the argument itself (``asanyarray``, ``squeeze`` of nothing)."""

    __slots__ = ()


def _argument_answered(r, args, converts):
    """The argument NumPy's call answered with: the tnp array or scalar whose backend value
    ``r`` is. Host instances of array subclasses are decided through their probes (see
    _from_probes); a container subclass (a training Variable, whose results are plain arrays)
    is answered with as NumPy answers with a subclass instance: by every function that returns
    its input, but not by one that ``converts`` to a plain array (``asarray``,
    ``ascontiguousarray``: a plain array over its memory, whose ``.base`` is it)."""
    for a in args:
        if isinstance(a, ndarray) and a._a is r:
            t = type(a)
            if t is ndarray or t is Scalar or not converts:
                return a
            return None
    return None


def _from_probe(r, ctx):
    """The backend value ``r`` stands for: a subclass instance's own array where ``r`` is its
    probe (so that ``out=`` and identity compare with it)."""
    for p, src in ctx.probes:
        if r is p:
            return src._a
    return r


def _probe_source(r, ctx):
    """The tnp subclass instance whose memory backend result ``r`` is a view of, or None."""
    b = r.base
    while isinstance(b, _nda):
        for p, src in ctx.probes:
            if b is p or b is src._a or b is src._a.base:   # (NumPy collapses bases)
                return src
        b = b.base
    return None


def _from_probes(r, dev, ctx):
    """Wrap what NumPy returned for a call given probes (see _SubclassProbe): the subclass
    instance itself where NumPy answered with its probe; a new instance of the subclass (with
    ``__array_finalize__`` called with the instance it came from) where NumPy's result is of
    the probe's class; a plain tnp array otherwise; views linked to what they were made of."""
    t = type(r)
    if t is _SubclassProbe or t is _nda:
        for p, src in ctx.probes:
            if r is p:
                return src
        src = _probe_source(r, ctx)
        if t is _SubclassProbe:
            template = src if src is not None else ctx.probes[0][1]
            o = _ndmod._wrapper(type(template), r.view(_nda), dev)
        else:
            o = wrap(r, dev)
        if src is not None:
            _ndmod.set_view_base(o, src)
        if t is _SubclassProbe:
            o.__array_finalize__(template)
        return o
    if t is tuple or t is list:
        return t([_from_probes(e, dev, ctx) for e in r])
    if isinstance(r, tuple) and hasattr(r, "_fields"):   # namedtuple results (linalg)
        return t(*(_from_probes(e, dev, ctx) for e in r))
    if isinstance(r, _SubclassProbe):                     # (NumPy's own subclasses of it: none)
        return wrap(r.view(_nda), dev)
    return wrap(r, dev)


# argument types that never override a NumPy function: checked first, so the calls tnp computes
# itself (every call on a training Variable takes this path) pay one set lookup per argument
_PLAIN_TYPES = frozenset({int, float, bool, complex, str, type(None), _nda})


def _function_overrides(args, kwargs):
    """Another library's objects among the arguments (inside lists and tuples too) whose type
    defines ``__array_function__`` (NEP 18: dask, CuPy arrays given beside tnp arrays...), one
    per type, subclasses before their bases, else left to right, as NumPy orders them. Empty
    for the calls tnp computes itself."""
    found = []
    for a in args:
        if type(a) not in _PLAIN_TYPES and not isinstance(a, ndarray):
            _visit(a, found)
    if kwargs:
        for v in kwargs.values():
            if type(v) not in _PLAIN_TYPES and not isinstance(v, ndarray):
                _visit(v, found)
    return found


def _visit(x, found):
    t = type(x)
    if t is list or t is tuple:
        for e in x:
            _visit(e, found)
        return
    if t in _PLAIN_TYPES or isinstance(x, ndarray):
        return
    f = getattr(t, "__array_function__", None)
    if f is None or f is _NUMPY_AF or isinstance(x, (_np.generic, _nda)) or \
            any(type(y) is t for y in found):
        return
    for i, y in enumerate(found):
        if issubclass(t, type(y)):
            found.insert(i, x)
            return
    found.append(x)


def _override_function(overriders, name, np_fn, args, kwargs):
    """NEP 18: hand the call, with the objects the user passed, to each overriding object's
    ``__array_function__`` in NumPy's order; the first answer that is not NotImplemented wins."""
    func = np_fn      # the public NumPy function (with its dispatcher), as NumPy passes it
    types = tuple(dict.fromkeys(
        [type(x) for x in _flat(args, kwargs) if hasattr(type(x), "__array_function__")]))
    for x in overriders:
        r = type(x).__array_function__(x, func, types, args, dict(kwargs or {}))
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for 'numpy.{name}' on types that implement "
                    f"__array_function__: {list(types)}")


def _flat(args, kwargs):
    for x in (*args, *(kwargs.values() if kwargs else ())):
        if type(x) is list or type(x) is tuple:
            yield from _flat(x, None)
        else:
            yield x
