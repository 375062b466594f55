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

The module has two halves. The first knows NumPy, not tapes: which values each rule reads
(:data:`READS`), element positions in a buffer, the rules of writes. The second is the tape's
side: the recording listener (:mod:`.recording`) hands every write to :func:`prepare_writes`
before it runs and to :func:`record_write` after; the backward pass (:mod:`.backward`) asks a
tape's :class:`Writes` whether a saved value that changed was only written where the rule does
not read. These functions take the tape as an argument (``rec``: its ``_nodes``, ``_watched``,
``_tracks`` and ``_scan``) rather than keeping it, so no cycle keeps a tape alive: a tape is
freed as soon as its last reference goes, which ends its following of arrays after its block.
"""
from __future__ import annotations

import inspect
import itertools
import types as _types

import numpy as _np

import tnp
from tnp import ndarray
from tnp import extend as _ext
from tnp.extend import array_module, backend_array as _backend, device_of as _dev_of, wrap
from tnp.extend import is_inexact as _inexact, version as version_of

from ..utils.tree import flatten
from . import registry as _registry
from .nodes import Node, arrays_in, is_arraylike, versions_of

__all__ = ["READS", "reads", "positions", "backend_positions", "root_of", "FnRule", "copy_write", "bind_copy_write",
           "COPY_WRITES", "ARITH", "AT_WRITES", "source_index", "INPLACE_PREFIX", "WritePrep",
           "Writes", "writes_of", "prepare_writes", "prepare_write", "record_write", "write_label"]

INPLACE_PREFIX = "inplace_"     # tnp reports ``x += y`` as "inplace_add", ``x.sort()`` as "inplace_sort"

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


# ============================================================================ the tape's side
class WritePrep:
    """What a tape decided before an in-place write: the kind of write, its target(s) and the
    values it will need afterwards."""
    __slots__ = ("kind", "name", "args", "kwargs", "targets", "value", "bound", "need_snap",
                 "snaps", "arrays", "extra")

    def __init__(self, kind, name, args, kwargs, targets):
        self.kind = kind
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.targets = targets
        self.value = None
        self.bound = None
        self.need_snap = ()
        self.snaps = {}
        self.arrays = {}
        self.extra = None


class Writes:
    """A tape's state for in-place writes: the memory its recorded writes went into, what each
    wrote, and the indexes that find the tracked arrays sharing written memory.

    Made for a tape the first time a write concerns it (:func:`writes_of`): a tape that never
    sees one keeps ``rec._writes`` None, and its recording hook looks no further. The indexes
    are brought up to date when a write needs them, never on the recording path."""
    __slots__ = ("roots", "log", "alias_index", "alias_seen", "pos_cache", "custom_index",
                 "custom_seen")

    def __init__(self):
        self.roots = {}             # id(root) -> root: memory that received a recorded write
        self.log = {}               # id(root) -> versions its recorded writes produced
        self.alias_index = {}       # id(root) -> tracked arrays in that memory (see sync_aliases)
        self.alias_seen = 0
        self.pos_cache = {}         # id(array) -> (its backend, positions, lowest, highest)
        self.custom_index = {}      # id(root) -> [(custom node, backend array its backward keeps)]
        self.custom_seen = 0

    # ------------------------------------------------------------------ hand-written backwards
    def guard_custom(self, rec, targets):
        """Before a recorded write: the hand-written backwards (``custom_gradient`` nodes) that
        keep an input or output in the memory written get its version now, so gradient()
        raises if the write changed what they will read."""
        nodes = rec._nodes
        index = self.custom_index
        for i in range(self.custom_seen, len(nodes)):
            node = nodes[i]
            if node.name == "custom_gradient":
                for b in closure_versions(getattr(node.rule, "grad_fn", None), node.args,
                                          node.outputs):
                    index.setdefault(id(root_of(b[0])), []).append((node, b[0]))
        self.custom_seen = len(nodes)
        if not index:
            return
        for t in targets:
            for node, b in index.get(id(root_of_array(t)), ()):
                if all(a is not b for a, _ in node.versions):
                    node.versions.append((b, version_of(b)))

    # ------------------------------------------------------------------ views
    def sync_aliases(self, rec):
        """Index the tracked arrays by the array owning their memory (only for tapes that see
        in-place writes: the index is brought up to date here, never on the recording path)."""
        w = rec._watched
        n = len(w)
        if n == self.alias_seen:
            return
        index = self.alias_index
        for a in itertools.islice(w.values(), self.alias_seen, None):
            b = a if type(a) is _np.ndarray else _backend(a)
            if isinstance(b, _np.generic):
                continue
            index.setdefault(id(root_of(b)), []).append(a)
        self.alias_seen = n

    def aliases_of(self, rec, x):
        self.sync_aliases(rec)
        return self.alias_index.get(id(root_of_array(x)), ())

    def positions(self, a):
        """(offsets of ``a``'s elements in their memory, lowest, highest), cached per array."""
        b = _backend(a)
        c = self.pos_cache.get(id(a))
        if c is None or c[0] is not b:
            pos = positions(a)
            lo, hi = (int(pos.min()), int(pos.max())) if pos.size else (0, -1)
            c = self.pos_cache[id(a)] = (b, pos, lo, hi)
        return c[1], c[2], c[3]

    def propagate(self, rec, t, written):
        """A write into ``t`` (its elements where ``written``, or all) changed every tracked
        array sharing those elements: each gets a new version taking them from ``t``."""
        aliases = [a for a in self.aliases_of(rec, t) if a is not t and isinstance(a, ndarray)]
        if not aliases:
            return
        pos_t, _, _ = self.positions(t)
        flat = _np.arange(pos_t.size, dtype=_np.intp).reshape(pos_t.shape)
        if written is not None:
            pos_s, flat = pos_t[written], flat[written]
        else:
            pos_s = pos_t
        if pos_s.size == 0:
            return
        lo, hi = int(pos_s.min()), int(pos_s.max())
        for a in aliases:
            pos_a, alo, ahi = self.positions(a)
            if ahi < lo or alo > hi:
                continue                     # no element in the written range: unchanged
            src = source_index(pos_a, pos_s)
            mask = src >= 0
            if not mask.any():
                continue
            src = _np.where(mask, flat.reshape(-1)[_np.maximum(src, 0)], -1)
            record_merge(rec, a, t, mask, src)

    def bring_in(self, rec, u):
        """Untracked ``u`` shares memory with tracked arrays (a view made before a write gave
        that memory a tracked value): it becomes tracked, its elements taken from them. A
        detached alias (``tt.stop_gradient(x)``, the same backend array) stays untracked."""
        aliases = self.aliases_of(rec, u)
        if not aliases:
            return
        bu = _backend(u)
        if isinstance(bu, _np.generic) or any(
                isinstance(a, ndarray) and _backend(a) is bu for a in aliases):
            return
        pos_u, ulo, uhi = self.positions(u)
        for a in list(aliases):
            if not isinstance(a, ndarray):
                continue
            pos_a, alo, ahi = self.positions(a)
            if ahi < ulo or alo > uhi:
                continue
            src = source_index(pos_u, pos_a)
            mask = src >= 0
            if mask.any():
                record_merge(rec, u, a, mask, src)

    def bring_in_args(self, rec, args, kwargs=None):
        """:meth:`bring_in` the untracked arrays among an operation's arguments that live in
        memory a recorded write went into (before the operation is recorded; callers test
        ``roots`` first, which is empty for most tapes)."""
        roots = self.roots
        found = flatten(list(args) + (list(kwargs.values()) if kwargs else []))
        for a in found:
            if isinstance(a, ndarray) and id(a) not in rec._watched:
                b = _backend(a)
                if not isinstance(b, _np.generic) and id(root_of(b)) in roots:
                    self.bring_in(rec, a)

    # ------------------------------------------------------------------ checks at gradient()
    def recorded_writes(self, arr, v, cur):
        """Whether every write into ``arr``'s memory from version ``v`` to ``cur`` was recorded."""
        log = self.log.get(id(root_of(arr)))
        return log is not None and cur > v and all(u in log for u in range(v + 1, cur + 1))

    def untouched(self, arr, v, cur):
        """Whether every write into ``arr``'s memory from version ``v`` to ``cur`` was recorded
        and wrote none of ``arr``'s elements (a saved row of a matrix whose other rows were
        written afterwards is still what the rule needs: PyTorch, with one counter per
        storage, refuses that too)."""
        if not self.recorded_writes(arr, v, cur):
            return False
        log = self.log[id(root_of(arr))]
        try:
            pos_a = backend_positions(arr)
            for u in range(v + 1, cur + 1):
                b, written = log[u]
                pos_w = backend_positions(b)
                if written is not None:
                    pos_w = pos_w[written]
                if pos_w.size and (source_index(pos_a, pos_w) >= 0).any():
                    return False
        except RuntimeError:   # a view of another dtype: cannot tell, so it was touched
            return False
        return True


def writes_of(rec):
    """The :class:`Writes` of tape ``rec``, made on first use."""
    w = rec._writes
    if w is None:
        w = rec._writes = Writes()
    return w


def root_of_array(x):
    b = x if type(x) is _np.ndarray else _backend(x)
    return b if isinstance(b, _np.generic) else root_of(b)


# ---------------------------------------------------------------------------- before a write
def prepare_writes(recorders, name, args, kwargs):
    """Before an in-place write: [(tape, :class:`WritePrep`)] for the tapes among ``recorders``
    that it involves, or None (raises, with nothing written, for a write one cannot record)."""
    preps = []
    for rec in recorders:
        p = prepare_write(rec, name, args, kwargs)
        if p is not None:
            preps.append((rec, p))
    if not preps:
        return None
    # the old values some rule will read: copied once, recorded as copies on every tape that
    # follows them (so a gradient of the gradient flows through the copy)
    snaps = {}
    for rec, p in preps:
        for a in p.need_snap:
            if id(a) not in snaps:
                snaps[id(a)] = snapshot(a)
    if snaps:
        for rec, p in preps:
            p.snaps = snaps
            for k, snap in snaps.items():
                a = p.arrays.get(k)
                if a is not None and rec._tracks(a):
                    record_copy(rec, a, snap)
    return preps


def prepare_write(rec, name, args, kwargs):
    """Before an in-place write: None if it involves nothing tape ``rec`` follows, else a
    :class:`WritePrep` (raises, with nothing written, for a write it cannot record)."""
    if name == "setitem" or name in COPY_WRITES:
        b = bind_copy_write(name, args, kwargs)
        if b is None:
            return None
        target, value, bound = b
        kind, values = "copy", [value]
    elif name in AT_WRITES:
        kind, target, values = "at", args[0] if args else None, list(args[1:])
    elif name in ("inplace_sort", "inplace_partition"):
        kind, target, values = "perm", args[0], []
    elif name.startswith(INPLACE_PREFIX) and name[len(INPLACE_PREFIX):] in ARITH:
        kind, target, values = "arith", args[0], list(args[1:2])
    elif name.startswith(INPLACE_PREFIX):
        kind, target, values = "other", args[0] if args else None, list(args[1:])
    else:
        kind, target = "out", None
        values = list(args) + [v for k, v in kwargs.items() if k != "out"]
    if kind == "out":
        targets = [o for o in flatten(kwargs["out"]) if is_arraylike(o)]
    else:
        targets = [target] if is_arraylike(target) else []
    if not targets:
        return None
    flat_values = [v for v in flatten(values) if is_arraylike(v)]
    involved = any(rec._tracks(t) for t in targets) or \
        any(rec._tracks(v) for v in flat_values)
    if not involved and rec._nodes:
        # an untracked array whose memory a tracked array shares
        w = writes_of(rec)
        w.sync_aliases(rec)
        involved = any(w.alias_index.get(id(root_of_array(t))) for t in targets
                       if isinstance(t, ndarray)) or \
            any(w.roots and id(root_of_array(v)) in w.roots for v in flat_values
                if isinstance(v, ndarray))
    if not involved:
        return None
    t0 = targets[0]
    if kind == "other" or (kind == "at" and len(args) < 3):
        raise RuntimeError(
            f"GradientTape: {write_label(name)} into an array of shape {tuple(t0.shape)} "
            f"involves an array the tape is tracking, and its gradient is not defined "
            f"in tnp_train; compute a new array instead (tnp.where, x + y, untake)")
    if kind == "out" and kwargs.get("where", True) is not True:
        raise RuntimeError(
            f"GradientTape: tnp.{name}(..., out=, where=) into an array of shape "
            f"{tuple(t0.shape)} involves an array the tape is tracking; write "
            f"out[...] = tnp.where(where, tnp.{name}(...), out) instead")
    if kind == "copy" and not isinstance(value, ndarray) and \
            any(rec._tracks(v) for v in flat_values):
        raise RuntimeError(
            f"GradientTape: {write_label(name)} of a list holding tracked arrays into an "
            f"array of shape {tuple(t0.shape)}; pass one array (tnp.stack(...)) instead")
    writes_of(rec).guard_custom(rec, targets)
    p = WritePrep(kind, name, args, kwargs, targets)
    if kind == "copy":
        p.value, p.bound = value, bound
    elif kind == "perm":
        p.extra = permutation(name, args, kwargs)
    elif kind in ("arith", "out"):
        p.need_snap = snapshots_needed(rec, kind, name, args, kwargs, targets)
        for x in p.need_snap:
            p.arrays[id(x)] = x
    return p


def snapshots_needed(rec, kind, name, args, kwargs, targets):
    """The arguments whose old values the rule will read and the write destroys (the target
    itself, or an argument sharing its memory)."""
    op = name[len(INPLACE_PREFIX):] if kind == "arith" else name
    tracked = [i for i, a in enumerate(args) if rec._tracks(a)]
    saved = saved_positions(op, tracked)
    roots = {id(root_of_array(t)) for t in targets}
    need = []
    for i, a in enumerate(args):
        if isinstance(a, ndarray) and (saved is None or i in saved) and \
                not isinstance(_backend(a), _np.generic) and id(root_of_array(a)) in roots:
            need.append(a)
    return need


def permutation(name, args, kwargs):
    """For ``x.sort()``/``x.partition(kth)`` in place: the flat index in the old value of every
    element of the new one (computed from the old value, before the write)."""
    from .vjps.indexing import index_map, host

    x = args[0]
    old = _np.asarray(host(x))
    axis = kwargs.get("axis", -1)
    if name == "inplace_sort":
        perm = _np.argsort(old, axis=axis, kind="stable")
    else:
        perm = _np.argpartition(old, host(args[1]), axis=axis)
    return _np.take_along_axis(index_map(old.shape), perm, axis=axis)


# ---------------------------------------------------------------------------- after a write
def record_copy(rec, a, snap):
    """``snap`` (a copy of ``a`` made before a write) is recorded as ``tnp.copy(a)``."""
    rec._nodes.append(Node("copy", (a,), {}, snap, [snap], [(0, None, a)], [],
                           _registry.VJPS.get("copy")))
    rec._watched[id(snap)] = snap


def record_merge(rec, a, s, mask, src):
    inputs = [(0, None, a)] if rec._tracks(a) else []
    if rec._tracks(s):
        inputs.append((1, None, s))
    rule = merge_rule(mask, src, tuple(s.shape))
    b = _backend(a)
    rec._nodes.append(Node("setitem (through a view)", (a, s), {}, a, [a], inputs, [], rule,
                           [(b, version_of(b))], True))
    rec._watched[id(a)] = a


def record_write(rec, p, result):
    """After an in-place write: its node, and the nodes of the arrays sharing its memory."""
    w = writes_of(rec)
    targets = p.targets
    if w.roots or rec._nodes:
        for t in targets:
            if isinstance(t, ndarray) and not rec._tracks(t):
                w.bring_in(rec, t)
        if w.roots:
            w.bring_in_args(rec, [v for v in flatten(list(p.args)) if isinstance(v, ndarray)
                                  and all(v is not t for t in targets)])
    kind, name = p.kind, p.name
    watched = rec._watched
    versions, loose = [], []
    written = None                       # host bool mask of the elements written (None: all)
    t = targets[0]
    if kind == "copy":
        value = p.value
        written, src = copy_write(name, t, value, p.bound)
        vt = isinstance(value, (ndarray, _np.ndarray)) and rec._tracks(value)
        inputs = [(0, None, t)] if rec._tracks(t) else []
        if vt:
            inputs.append((1, None, value))
        rule = copy_rule(name, written, src, 0, 1 if vt else None,
                         tuple(value.shape) if vt else ())
        node_args = (t, value)
    elif kind == "at":
        a_, key, bval = p.args[0], p.args[1], p.args[2]
        hkey = _host(key)
        inputs = [(0, None, a_)] if rec._tracks(a_) else []
        if rec._tracks(bval):
            inputs.append((2, None, bval))
        rule = at_rule(name, AT_WRITES[name], hkey)
        node_args = p.args
        written = _np.zeros(tuple(t.shape), dtype=bool)
        written[hkey] = True
    elif kind == "perm":
        inputs = [(0, None, t)] if rec._tracks(t) else []
        rule = perm_rule(name, p.extra, tuple(t.shape))
        node_args = (t,)
    else:  # arithmetic operators and out=
        snaps = p.snaps
        op = name[len(INPLACE_PREFIX):] if kind == "arith" else name
        args = p.args
        kwargs = {k: v for k, v in p.kwargs.items() if k != "out"} if kind == "out" else {}
        inputs = []
        for i, a in enumerate(args):
            ta = type(a)
            if ta is list or ta is tuple:
                rec._scan(a, (), i, inputs)
            elif (isinstance(a, ndarray) or ta is _np.ndarray) and rec._tracks(a):
                inputs.append((i, None, a))
        for k, v in kwargs.items():
            if isinstance(v, ndarray) and rec._tracks(v):
                inputs.append((k, None, v))
        node_args = tuple(snaps.get(id(a), a) if isinstance(a, ndarray) else a for a in args)
        rule = _registry.VJPS.get(op)
        if rule is None and (op in _registry.NONDIFF or op in _registry.NO_ARRAY_OUTPUT):
            rule, inputs = CutRule(op), []
        elif rule is None:
            rule = MissingRule(write_label(name))
        saved = saved_positions(op, [q for q, _, _ in inputs]) if op in READS else None
        versions = versions_of(node_args, saved, skip=snaps)
        if saved is None:
            for o in targets:
                b = _backend(o) if isinstance(o, ndarray) else o
                versions.append((b, version_of(b)))
        name = op if kind == "out" else name
        p.kwargs = kwargs
    if not _inexact(t.dtype) and inputs:
        # an integer or boolean array carries no gradient (TF's rule): the values written
        # into it, and the rest of it, are constants from now on
        rule, inputs, versions = CutRule(name), [], []
    outputs = list(targets)
    if kind == "out":
        outputs += [o for o in arrays_in(result) if all(o is not x for x in targets)]
    for o in outputs:
        b = _backend(o) if isinstance(o, ndarray) else o
        loose.append((b, version_of(b)))
        watched[id(o)] = o
    node_result = result if kind == "out" else t
    rec._nodes.append(Node(name, node_args, p.kwargs if kind in ("arith", "out") else {},
                           node_result, outputs, inputs, versions, rule, loose, True))
    for o in targets:
        if isinstance(o, ndarray):
            b = _backend(o)
            r = root_of(b)
            w.roots[id(r)] = r
            # what was written, for the checks at gradient(): positions come later, and
            # only if a check needs them
            w.log.setdefault(id(r), {})[version_of(b)] = (b, written)
            w.propagate(rec, o, written)


class MissingRule:
    """The rule of a recorded write whose operation has no VJP: raises if a gradient needs it."""
    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label

    def for_position(self, i):
        label = self.label

        def outer(ans, *args, **kwargs):
            raise LookupError(f"No gradient defined for {label} (it was recorded because an "
                              f"input is tracked); see tnp_train.autodiff.registry")
        return outer

    def for_keyword(self, name):
        return self.for_position(0)


def write_label(name):
    if name == "setitem":
        return "item assignment"
    if name.startswith(INPLACE_PREFIX):
        n = name[len(INPLACE_PREFIX):]
        if n in ARITH:
            return f"in-place {n} ({_OPERATOR_OF.get(n, n)}=)"
        return f"tnp.{n} (in place)" if "." in n or n in tnp.REGISTRY else f"ndarray.{n} (in place)"
    return f"tnp.{name}(..., out=)"


_OPERATOR_OF = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "**",
                "matmul": "@", "remainder": "%", "floor_divide": "//"}


# ---------------------------------------------------------------------------- what closures keep
_FunctionType = _types.FunctionType


def closure_arrays(fn):
    """The backend arrays a function's closure holds: in its cells, in tuples and lists there
    (one level), and in the closures of the functions it holds (three levels: the first is
    :func:`hand_written_backward`'s). One pass, no recursion: this runs for every hand-written
    op recorded."""
    held = []
    todo = [fn]
    for _ in range(4):
        nxt = []
        for f in todo:
            for c in f.__closure__ or ():
                try:
                    v = c.cell_contents
                except ValueError:      # an empty cell
                    continue
                t = type(v)
                if t is _np.ndarray:
                    held.append(v)
                elif t is _FunctionType:
                    nxt.append(v)
                elif isinstance(v, ndarray):
                    held.append(_backend(v))
                elif t is tuple or t is list:
                    for e in v:
                        te = type(e)
                        if te is _np.ndarray:
                            held.append(e)
                        elif isinstance(e, ndarray):
                            held.append(_backend(e))
                        elif _GPU_ARRAY[0] is not None and te is _GPU_ARRAY[0]:
                            held.append(e)
                elif _GPU_ARRAY[0] is not None and t is _GPU_ARRAY[0]:
                    held.append(v)
        if not nxt:
            break
        todo = nxt
    return held


_GPU_ARRAY = [None]     # cupy.ndarray, once CuPy is imported


def closure_versions(fn, args, outputs):
    """Versions of the arrays a hand-written backward keeps that share memory with the
    operation's inputs or outputs (what an in-place write by the user could change)."""
    if fn is None or not getattr(fn, "__closure__", None):
        return []
    if _GPU_ARRAY[0] is None and _ext.cupy() is not None:
        _GPU_ARRAY[0] = _ext.cupy().ndarray
    held = closure_arrays(fn)
    if not held:
        return []
    roots = set()
    for a in (*args, *outputs):
        if isinstance(a, ndarray):
            b = _backend(a)
        elif type(a) is _np.ndarray:
            b = a
        else:
            continue
        if type(b) is not _np.ndarray and isinstance(b, _np.generic):
            continue
        roots.add(id(b if b.base is None else root_of(b)))
    versions = []
    for b in held:
        # an array that owns its memory is its own root (most are: one check, no walk)
        if id(b if b.base is None else root_of(b)) in roots and \
                not isinstance(b, _np.generic):
            versions.append((b, version_of(b)))
    return versions
