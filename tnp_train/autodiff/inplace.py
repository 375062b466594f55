"""Gradients through in-place writes: what the tape records when NumPy code writes into arrays.

PyTorch's design, over this tape's records (which name arrays by Python object):

* **A write is a new version of the same object.** ``y += b``, ``y[mask] = 0``, ``out=y``,
  ``tnp.add.at(y, i, v)``, ``tnp.copyto(y, v)``, ``y.sort()`` ... are recorded as a node whose
  input is ``y``'s old version and whose output is ``y``'s new version. Both are keyed by
  ``id(y)``: the backward pass walks the records in reverse program order, and such a node
  *takes* ``y``'s cotangent (everything later nodes gave the new version) and leaves the old
  version's in its place, for the earlier nodes that read the old value.
* **Views share their base's history.** A write changes every array that shares the memory
  written (a view, its base, other views). Each tracked array overlapping the written elements
  gets a node of its own (a *merge*: its old version, except the elements just written, which
  come from the written array), so later reads of any of them see the write, as PyTorch's
  CopySlices does. An untracked view of written memory (``v = buf[:2]`` made before ``buf``
  received a tracked value) is brought in the same way when an operation first reads it.
  Element positions are compared as offsets into the buffer, so slices, transposes, reshapes
  and strided views of any depth are covered.
* **Saved values are checked** by the version counters (``tnp.extend.version``): a node whose
  rule reads a value (:data:`READS` says which ones it does not) raises at ``gradient`` if that
  value was overwritten afterwards ("modified by an inplace operation"). The counter is per
  buffer; where it moved, the tape's log of its recorded writes (what each wrote) tells
  whether the saved elements themselves were written, so ``out[i] = f(out[i - 1])`` passes
  where PyTorch refuses it. An array a node produced but does not read back may be
  overwritten by a write the tape recorded; a write the tape did not record (under
  ``stop_recording``, into the backend array) still raises. A ``custom_gradient`` backward
  reads what its closure keeps: when a recorded write comes into the memory of an input or
  output it keeps, its node is given that array's version then (nothing is scanned when
  hand-written ops are recorded, the hot path of Keras layers).
* **In-place operators** reuse the out-of-place rule (``y *= c`` is ``multiply``). Where that
  rule reads the old value (``y *= c`` with ``c`` tracked needs the old ``y``), the old value is
  copied before the write (PyTorch's ``original_self``), and the copy is recorded on every
  tape that follows ``y``, so gradients of gradients see it.
"""
from __future__ import annotations

import inspect

import numpy as _np

import tnp
from tnp import ndarray
from tnp.extend import array_module, backend_array as _backend, device_of as _dev_of, wrap

__all__ = ["READS", "reads", "positions", "backend_positions", "root_of", "FnRule", "copy_write", "bind_copy_write",
           "COPY_WRITES", "ARITH", "AT_WRITES", "source_index"]

# ---------------------------------------------------------------------------- saved values
# name -> {position: the argument positions whose *values* that position's rule reads}. A name
# listed here has rules that never read the output's values (``ans``); a position missing from
# its dict is treated as reading everything. Names not listed: every argument and the output
# count as saved (the conservative default). tests/tnp_train/autodiff/test_inplace.py checks
# every entry by changing the values said not to be read and comparing the rule's result.
READS: dict = {}


def reads(names, **per_position):
    """Declare what the rules of ``names`` read: ``reads("multiply", p0=(1,), p1=(0,))``."""
    table = {int(k[1:]): tuple(v) for k, v in per_position.items()}
    for n in (names if isinstance(names, (list, tuple)) else (names,)):
        READS[n] = table


reads(["add", "subtract"], p0=(), p1=())
reads(["negative", "positive", "conjugate"], p0=())
reads("multiply", p0=(1,), p1=(0,))
reads("divide", p0=(1,), p1=(0, 1))
reads("matmul", p0=(1,), p1=(0,))
reads("dot", p0=(1,), p1=(0,))
reads(["square", "absolute", "log", "sin", "cos"], p0=(0,))
reads(["sum", "mean", "cumsum"], p0=())
reads(["reshape", "ravel", "squeeze", "expand_dims", "transpose", "matrix_transpose",
       "swapaxes", "moveaxis", "broadcast_to", "copy", "astype"], p0=())
reads(["concatenate", "stack"], p0=())
reads("getitem", p0=(1,))            # the key (index arrays) is read, the array's values are not
reads("where", p1=(0,), p2=(0,))     # the condition


def saved_positions(name, tracked_positions):
    """The argument positions whose values the rules for ``tracked_positions`` read, or None
    when unknown (then everything, the output included, counts as read)."""
    table = READS.get(name)
    if table is None:
        return None
    out = set()
    for p in tracked_positions:
        r = table.get(p) if isinstance(p, int) else None
        if r is None:
            return None
        out.update(r)
    return out


# ---------------------------------------------------------------------------- buffer positions
def root_of(b):
    """The array that owns the memory of backend array ``b`` (the end of its ``.base`` chain),
    as tnp's version counters find it."""
    base = b.base
    while base is not None and (isinstance(base, _np.ndarray) or array_module(base) is not _np):
        b = base
        base = b.base
    return b


def _address(b):
    if isinstance(b, _np.ndarray):
        return b.__array_interface__["data"][0]
    return b.data.ptr   # CuPy


def positions(x, what="in-place write"):
    """For every element of tnp array ``x``, its offset (in elements) in the memory of the
    array that owns it: views of one buffer are compared through these (NumPy ``intp``)."""
    return backend_positions(_backend(x), what)


def backend_positions(b, what="in-place write"):
    """:func:`positions` of a backend array."""
    if isinstance(b, _np.generic):
        return _np.zeros((), _np.intp)
    r = root_of(b)
    n = b.itemsize
    off = _address(b) - _address(r)
    if r.itemsize != n or off % n or any(s % n for s in b.strides):
        raise RuntimeError(
            f"GradientTape: {what} through a view of a different dtype or alignment than its "
            f"base (shape {tuple(b.shape)}, dtype {b.dtype}, base dtype {r.dtype}: "
            f"x.view(dtype), .real/.imag of a complex array) is not differentiable; "
            f"write into a copy instead")
    pos = _np.full(tuple(b.shape), off // n, dtype=_np.intp)
    for d, (size, stride) in enumerate(zip(b.shape, b.strides)):
        shape = [1] * b.ndim
        shape[d] = size
        pos = pos + (_np.arange(size, dtype=_np.intp) * (stride // n)).reshape(shape)
    return pos


def source_index(pos_t, pos_s):
    """For every element of an array at positions ``pos_t``, the flat index of an element of
    another array at ``pos_s`` in the same memory (-1 where none is)."""
    src = _np.full(pos_t.shape, -1, dtype=_np.intp)
    if pos_s.size == 0 or pos_t.size == 0:
        return src
    lo, hi = int(pos_s.min()), int(pos_s.max())
    inv = _np.full(hi - lo + 1, -1, dtype=_np.intp)
    inv[pos_s.reshape(-1) - lo] = _np.arange(pos_s.size, dtype=_np.intp)
    inside = (pos_t >= lo) & (pos_t <= hi)
    src[inside] = inv[pos_t[inside] - lo]
    return src


# ---------------------------------------------------------------------------- rules
class FnRule:
    """A node's rule given as one function of the cotangent per argument position."""
    __slots__ = ("fns", "opname")

    def __init__(self, opname, fns):
        self.opname = opname
        self.fns = fns

    def for_position(self, i):
        f = self.fns.get(i)
        if f is None:
            return None
        return lambda ans, *args, **kwargs: f

    def for_keyword(self, name):
        return None


def _on(g, a):
    """Host array ``a`` on the device of cotangent ``g``."""
    return tnp.asarray(a, device=_dev_of(g)) if isinstance(g, ndarray) else tnp.asarray(a)


def _keep(mask):
    """g -> g where ``mask`` (host bool, the shape of g) is False, else 0."""
    def f(g):
        return tnp.where(_on(g, mask), 0, g)
    return f


def _scatter(mask, src, shape):
    """g -> for each element of an array of ``shape``: the sum of g over the elements (where
    ``mask``) that ``src`` says it was copied to."""
    from .vjps.indexing import untake

    size = int(_np.prod(shape, dtype=_np.int64))
    sel = src[mask]

    def f(g):
        if sel.size == 0:
            return tnp.zeros(shape, dtype=g.dtype, device=_dev_of(g))
        return tnp.reshape(untake(g[_on(g, mask)], sel, (size,)), shape)
    return f


def merge_rule(mask, src, s_shape):
    """The rule of ``t_new = t_old, except t_new[mask] = s.ravel()[src[mask]]`` (a write into
    ``s`` seen by ``t``, an array sharing its memory): position 0 is ``t_old``, 1 is ``s``."""
    return FnRule("in-place write through a view", {0: _keep(mask), 1: _scatter(mask, src, s_shape)})


# ---------------------------------------------------------------------------- copying writes
def _bound(fn, args, kwargs):
    try:
        return inspect.signature(fn).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None


def _host(x):
    from .vjps.indexing import host
    return host(x)


# name -> (the numpy function the arguments are bound to, target, value, simulate(marker, vidx,
# bound arguments) doing the same write into an integer marker array on the host)
COPY_WRITES = {
    "setitem": (lambda x, key, value: None, "x", "value",
                lambda m, v, b: m.__setitem__(_host(b["key"]), v)),
    "inplace_put": (_np.put, "a", "v",
                    lambda m, v, b: _np.put(m, _host(b["ind"]), v, mode=b.get("mode", "raise"))),
    "inplace_place": (_np.place, "arr", "vals",
                      lambda m, v, b: _np.place(m, _host(b["mask"]), v)),
    "inplace_putmask": (_np.putmask, "a", "values",
                        lambda m, v, b: _np.putmask(m, _host(b["mask"]), v)),
    "inplace_copyto": (_np.copyto, "dst", "src",
                       lambda m, v, b: _np.copyto(m, v, casting="unsafe",
                                                  where=_host(b.get("where", True)))),
    "inplace_put_along_axis": (_np.put_along_axis, "arr", "values",
                               lambda m, v, b: _np.put_along_axis(m, _host(b["indices"]), v,
                                                                  b["axis"])),
    "inplace_fill_diagonal": (_np.fill_diagonal, "a", "val",
                              lambda m, v, b: _np.fill_diagonal(m, v, wrap=b.get("wrap", False))),
}

ARITH = {"add", "subtract", "multiply", "divide", "power", "matmul", "remainder", "floor_divide"}
AT_WRITES = {"inplace_add.at": 1, "inplace_subtract.at": -1}


def bind_copy_write(name, args, kwargs):
    """(target, value, bound arguments) of a copying write, or None if the call does not bind
    (NumPy then raises its own error)."""
    fn, t, v, _ = COPY_WRITES[name]
    b = _bound(fn, args, kwargs)
    if b is None or t not in b:
        return None
    return b[t], b.get(v), b


def copy_write(name, target, value, bound):
    """(written, src) for a copying write into ``target``: ``written`` (host bool, target's
    shape) marks the elements written, ``src`` the flat index into ``value`` (as an array,
    broadcast as NumPy does) each came from."""
    sim = COPY_WRITES[name][3]
    m = _np.full(tuple(target.shape), -1, dtype=_np.intp)
    vshape = tuple(getattr(value, "shape", ())) if isinstance(value, ndarray) else \
        _np.shape(_host(value)) if value is not None else ()
    vidx = _np.arange(int(_np.prod(vshape, dtype=_np.int64)), dtype=_np.intp).reshape(vshape)
    sim(m, vidx, bound)
    return m >= 0, m


def copy_rule(name, written, src, target_pos, value_pos, value_shape):
    fns = {target_pos: _keep(written)}
    if value_pos is not None:
        fns[value_pos] = _scatter(written, src, tuple(value_shape))
    return FnRule(name, fns)


def at_rule(name, sign, key, a_pos=0, b_pos=2):
    """``ufunc.at(a, key, b)`` for add/subtract: a's old value passes through, b gets the
    cotangent of every element it was added to (repeated indices accumulate)."""
    def gb(g):
        r = g[key]
        return -r if sign < 0 else r
    return FnRule(name, {a_pos: lambda g: g, b_pos: gb})


def perm_rule(name, idx, shape):
    """A write that permutes an array in place (``x.sort()``, ``x.partition(k)``): ``idx``
    (host) holds for every element of the new value the flat index it came from."""
    from .vjps.indexing import gather_vjp
    return FnRule(name, {0: lambda g: gather_vjp(g, idx, shape)})


class CutRule:
    """A write whose new value carries no gradient (an integer or piecewise-constant op's
    ``out=``): the old version gets nothing from the new one."""
    __slots__ = ("opname",)

    def __init__(self, opname):
        self.opname = opname

    def for_position(self, i):
        return None

    def for_keyword(self, name):
        return None


def snapshot(x):
    """A copy of ``x``'s current value (made before a write that overwrites it)."""
    return wrap(_backend(x).copy(), _dev_of(x))
