"""The object graph of a checkpoint: saving values by path, matching them back, deferring the
ones whose variable does not exist yet.

An object is *trackable* when it is a ``tt.Variable`` or has ``_trackable_children()`` (an
ordered ``name -> child`` mapping). A breadth-first walk from the root gives every object one
path, the first one reached (as TF's object-based checkpoints do); a variable is saved under
``<path>/.ATTRIBUTES/VARIABLE_VALUE``. An object with ``_slot_variables()`` (an optimizer) has its
slots saved under the path of the variable they belong to::

    <variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>/.ATTRIBUTES/VARIABLE_VALUE

so a fresh model and optimizer pick them up. Names are escaped as TF does ("." -> "..",
"/" -> ".S"), so a name never reads as a path separator or a reserved segment.

Restoring follows the checkpoint's edges by name from the root. A value for an object that does
not exist yet is kept: values of an unbuilt layer go to ``layer._deferred_restorations[name]``
(the layer calls :func:`restore_into` when it creates the weight or sub-layer), optimizer slots go
to ``optimizer._restore_slot`` (which assigns now or when the slot is created).
"""
from __future__ import annotations

import logging

import numpy as _np

from tnp.extend import backend_array as _backend

from ..autodiff import Variable

__all__ = ["escape", "unescape", "walk", "collect", "restore_graph", "restore_into",
           "RestoreRecord", "Pending", "defer", "ATTR", "SLOT"]

ATTR = ".ATTRIBUTES/VARIABLE_VALUE"
SLOT = ".OPTIMIZER_SLOT"
logger = logging.getLogger("tnp_train.checkpoint")


def escape(name):
    return str(name).replace(".", "..").replace("/", ".S")


def unescape(name):
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c == "." and i + 1 < len(name):
            nxt = name[i + 1]
            out.append("/" if nxt == "S" else nxt)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_trackable(obj):
    return isinstance(obj, Variable) or callable(getattr(obj, "_trackable_children", None))


def _readable(path):
    return "/".join(unescape(p) for p in path) or "(root)"


def children_of(obj, path=()):
    """``escaped name -> child`` of ``obj`` (no children for a Variable)."""
    if isinstance(obj, Variable):
        return {}
    out = {}
    for name, child in obj._trackable_children().items():
        if child is None:
            continue
        if not is_trackable(child):
            raise TypeError(f"checkpoint: '{_readable(path + (escape(name),))}' (child '{name}' of "
                            f"{type(obj).__name__}) is not trackable: got {type(child).__name__} "
                            f"{child!r}; expected a tt.Variable or an object with "
                            f"_trackable_children()")
        out[escape(name)] = child
    return out


def walk(root):
    """``[(path, object)]`` in breadth-first order; each object once, at its first path."""
    order = [((), root)]
    seen = {id(root)}
    i = 0
    while i < len(order):
        path, obj = order[i]
        i += 1
        for name, child in children_of(obj, path).items():
            if id(child) not in seen:
                seen.add(id(child))
                order.append((path + (name,), child))
    return order


def _host(var):
    a = _backend(var)
    return a if isinstance(a, _np.ndarray) else var.numpy()


def _slot_triples(obj):
    fn = getattr(obj, "_slot_variables", None)
    if isinstance(obj, Variable) or not callable(fn):
        return ()
    return fn()


def collect(root):
    """``[(key, numpy array)]``: every variable reachable from ``root`` and the optimizer slots
    of those variables. The arrays are the variables' buffers (not copies) when on the host."""
    order = walk(root)
    path_of = {id(o): p for p, o in order}
    out, saved = [], set()
    for p, o in order:
        if isinstance(o, Variable):
            out.append(("/".join(p + (ATTR,)), _host(o)))
            saved.add(id(o))
    for p, o in order:
        for var, slot_name, slot in _slot_triples(o):
            vp = path_of.get(id(var))
            if vp is None or id(slot) in saved:
                continue  # a slot of a variable outside the graph is not saved (as TF)
            saved.add(id(slot))
            out.append(("/".join(vp + (SLOT,) + p + (escape(slot_name), ATTR)), _host(slot)))
    return out


# ------------------------------------------------------------------------------ restoring
class _Node:
    __slots__ = ("children", "key", "slots")

    def __init__(self):
        self.children = {}
        self.key = None
        self.slots = []      # (optimizer path, escaped slot name, key)

    def descend(self, segs):
        node = self
        for s in segs:
            node = node.children.setdefault(s, _Node())
        return node


def build_trie(keys):
    """The checkpoint's keys as a tree of nodes; keys not in the object-graph form are returned
    apart (they stay unmatched)."""
    root, other = _Node(), []
    for key in keys:
        segs = key.split("/")
        if len(segs) < 2 or segs[-2:] != [".ATTRIBUTES", "VARIABLE_VALUE"]:
            other.append(key)
            continue
        segs = segs[:-2]
        if SLOT in segs:
            i = segs.index(SLOT)
            rest = segs[i + 1:]
            if not rest:
                other.append(key)
                continue
            root.descend(segs[:i]).slots.append((tuple(rest[:-1]), rest[-1], key))
        else:
            root.descend(segs).key = key
    return root, other


class RestoreRecord:
    """What one restore matched; shared with the values it deferred (they report here when they
    are finally applied)."""

    def __init__(self, path, keys, skip_mismatch=False):
        self.path = path
        self.keys = list(keys)
        self.consumed = set()
        self.restored = {}        # id(variable) -> variable
        self.slot_handoffs = {}   # key -> (optimizer, variable, slot name)
        self.skip_mismatch = skip_mismatch
        self.orphan_slots = []    # (optimizer path, variable, slot name, value, key): no optimizer

    def unconsumed(self):
        done = set(self.consumed)
        existing = {}   # id(optimizer) -> {(id(variable), slot name)} of the slots it has now
        for key, (opt, var, name) in self.slot_handoffs.items():
            have = existing.get(id(opt))
            if have is None:
                have = existing[id(opt)] = {(id(v), n) for v, n, _ in _slot_triples(opt)}
            if (id(var), name) in have:
                done.add(key)   # a slot handed over counts once the optimizer has created it
        return [k for k in self.keys if k not in done]

    def unmatched(self, root):
        """Paths of variables (and slots) reachable from ``root`` that got no value."""
        order = walk(root)
        path_of = {id(o): p for p, o in order}
        handed = {(id(o), id(v), n) for o, v, n in self.slot_handoffs.values()}
        out = []
        for p, o in order:
            if isinstance(o, Variable) and self.restored.get(id(o)) is not o:
                out.append(_readable(p))
        for p, o in order:
            for var, name, slot in _slot_triples(o):
                if id(var) in path_of and (id(o), id(var), name) not in handed:
                    out.append(f"{_readable(path_of[id(var)])} (slot '{name}' of "
                               f"{_readable(p)})")
        return out


def _fits(var, value, key, rec):
    """True if ``value`` can be restored into ``var``; ValueError (or, with skip_mismatch, a
    warning and False) otherwise."""
    if tuple(value.shape) == tuple(var.shape) and value.dtype == var.dtype:
        return True
    msg = (f"{rec.path}: cannot restore '{key}' into variable '{var.name}': the checkpoint "
           f"holds shape {tuple(value.shape)} {value.dtype}, the variable has shape "
           f"{tuple(var.shape)} {var.dtype}")
    if rec.skip_mismatch:
        logger.warning("%s (skipped: skip_mismatch=True)", msg)
        return False
    raise ValueError(msg)


def _copy_into(a, value):
    a[...] = value


def _assign(var, value, key, rec):
    # through the variable (a distributed one restores every copy); no constraint: a restored
    # value is taken as it was saved
    var.update(_copy_into, value, constrain=False)
    rec.consumed.add(key)
    rec.restored[id(var)] = var


def _handoff_slot(opt, var, slot_name, value, key, rec):
    try:
        opt._restore_slot(var, slot_name, value)
    except ValueError as e:
        raise ValueError(f"{rec.path}: cannot restore '{key}' (slot '{slot_name}' of variable "
                         f"'{var.name}', shape {tuple(var.shape)}; saved slot shape "
                         f"{tuple(value.shape)}): {e}") from e
    rec.slot_handoffs[key] = (opt, var, slot_name)


class Pending:
    """Values for an object that did not exist at restore time (see :func:`restore_into`)."""

    __slots__ = ("key", "value", "children", "slots", "record")

    def __init__(self, record):
        self.key = self.value = None
        self.children = {}
        self.slots = []      # (optimizer, slot name, value, key)
        self.record = record

    def __repr__(self):
        return (f"<pending checkpoint values from {self.record.path}: "
                f"{'value' if self.key else 'no value'}, children {sorted(self.children)}>")


def _pending(node, values, live, rec):
    p = Pending(rec)
    if node.key is not None:
        p.key, p.value = node.key, values[node.key]
    for opt_path, name, key in node.slots:
        opt = live.get(opt_path)
        if opt is not None and callable(getattr(opt, "_restore_slot", None)):
            p.slots.append((opt, unescape(name), values[key], key))
    for name, sub in node.children.items():
        p.children[name] = _pending(sub, values, live, rec)
    return p


def defer(obj, name, pending):
    """Keep ``pending`` (values for ``obj``'s child ``name`` (escaped), not created yet) where it will be
    applied: a layer's ``_deferred_restorations`` (the layer applies it when it creates the
    child), or the object's own ``_checkpoint_defer(name, pending)`` hook. Elsewhere the
    values stay unused (reported by the restore status)."""
    hook = getattr(obj, "_checkpoint_defer", None)
    if callable(hook):
        hook(name, pending)
    elif callable(getattr(type(obj), "_restore_deferred", None)):
        # the layer looks the child up by its own (unescaped) name
        obj.__dict__.setdefault("_deferred_restorations", {})[unescape(name)] = pending


def restore_into(obj, pending):
    """Apply ``pending`` (values stored by a restore that ran before ``obj`` existed) to ``obj``:
    assign a Variable, or walk an object's children, deferring again what is still missing.
    Called by ``Layer.add_weight`` and the layer's sub-layer tracking."""
    if not isinstance(pending, Pending):
        raise TypeError(f"restore_into: expected pending checkpoint values, got "
                        f"{type(pending).__name__}")
    rec = pending.record
    if isinstance(obj, Variable):
        if pending.key is not None:
            if not _fits(obj, pending.value, pending.key, rec):
                return       # skipped (skip_mismatch): its optimizer slots would not fit either
            _assign(obj, pending.value, pending.key, rec)
        for opt, name, value, key in pending.slots:
            _handoff_slot(opt, obj, name, value, key, rec)
        return
    if not is_trackable(obj):
        return
    kids = children_of(obj)
    for name, sub in pending.children.items():
        child = kids.get(name)
        if child is not None:
            restore_into(child, sub)
        else:
            defer(obj, name, sub)


def restore_graph(root, values, rec):
    """Match ``values`` (``{key: array}``) to the graph under ``root``; returns ``rec``."""
    trie, _ = build_trie(values)
    live = {(): root}
    queue = [((), root, trie)]
    visited = {id(root)}
    deferrals = []
    i = 0
    while i < len(queue):
        path, obj, node = queue[i]
        i += 1
        kids = children_of(obj, path)
        for name, sub in node.children.items():
            child = kids.get(name)
            if child is None:
                deferrals.append((obj, name, sub))
            elif id(child) not in visited:   # reached twice: the first path wins
                visited.add(id(child))
                live[path + (name,)] = child
                queue.append((path + (name,), child, sub))
    # check every matched value first, so a mismatch raises before anything is changed
    matched = [(obj, node) for _, obj, node in queue if isinstance(obj, Variable) and
               (node.key is None or _fits(obj, values[node.key], node.key, rec))]
    for obj, node in matched:
        if node.key is not None:
            _assign(obj, values[node.key], node.key, rec)
        for opt_path, name, key in node.slots:
            opt = live.get(opt_path)
            if opt is not None and callable(getattr(opt, "_restore_slot", None)):
                _handoff_slot(opt, obj, unescape(name), values[key], key, rec)
            elif opt is None:
                rec.orphan_slots.append((opt_path, obj, unescape(name), values[key], key))
    for obj, name, sub in deferrals:
        defer(obj, name, _pending(sub, values, live, rec))
    return rec


def restore_pending_optimizer(optimizer, pending, orphan_slots):
    """Apply optimizer state that a restore kept because the model had no optimizer yet (TF
    restores it when ``compile`` attaches one): its own variables (``pending``, from the
    ``optimizer`` subtree) and its slots (``orphan_slots``: ``(variable, slot name, value, key,
    record)``), which the optimizer creates, restored, on its first step."""
    if pending is not None:
        restore_into(optimizer, pending)
    restore_slot = getattr(optimizer, "_restore_slot", None)
    if callable(restore_slot):
        for var, name, value, key, rec in orphan_slots:
            _handoff_slot(optimizer, var, name, value, key, rec)
