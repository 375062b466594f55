"""The sharded update: ZeRO stage 1 between the ranks of one machine (opt-in:
``TNP_SHARDED_UPDATE=1`` on every rank).

Under ``MultiWorkerMirroredStrategy`` every rank holds the same variables and, after the
all-reduce, applies the same update to all of them: on N ranks of one machine the weights and
the optimizer's slots are held N times, and the optimizer's work is done N times over. Where
the gradient buckets' all-reduce runs in shared memory (every rank on this machine, host
arrays), the sharded update moves the trainable variables and their slots into one shared
segment laid out like the buckets, and each rank updates only its own part of it: the part of
each bucket it sums anyway (the plan's reduce-scatter), straight from its sums, with the
optimizer's own ``update_step`` over flat views of that part. Every rank then reads the
updated weights where they are, so nothing is gathered, and the state is held once per
machine instead of once per rank.

It is off by default because on this machine it is not faster (docs/distributed.md,
performance): the update itself takes half the time, but whole steps were not measurably
faster (the forward and backward passes read weights the other core wrote, which may cost what
the update saves). What it saves for sure is memory: one copy of the weights and slots per
machine.

The values and their bits are those of the ordinary update (the test compares them): the sums
are the same (in rank order), and each element is updated by the same elementwise kernel with
the same coefficients. It applies only where that holds: optimizers whose ``update_step`` is
one of tnp_train's elementwise rules (``Optimizer.is_elementwise``: SGD, Adam, AdamW, RMSprop,
Adagrad, Adadelta, Adamax, Nadam, Lion, Ftrl, unless a subclass overrides their update),
without clipping or gradient transformers (they need whole gradients), variables without
constraints, plain host ``tt.Variable``s with every slot made, and ``apply_gradients`` asked
to aggregate. Anything else takes the ordinary all-reduce and update.

Safety: a rank updates its part of a bucket only after every rank has handed that bucket's
gradients over (so no rank's backward pass still reads those weights), and no rank leaves the
step before every rank has updated its parts (so no forward pass reads a weight half-updated).
Any other write to a shared weight or slot (``assign``, ``set_weights``, a restore, an
optimizer that does not shard, ``v += x``, ``v[i] = x``) first gives the whole group private
copies again (:class:`SharedVariable`), so it can never reach another rank's values or be
applied twice; the next sharded step puts them back. The variables' own views of the shared
buffer are read-only, so a write that bypasses the variable (``np.copyto(v, x)``) fails
instead.
"""
from __future__ import annotations

import os
import weakref

import numpy as np

from tnp.extend import backend_array, bump_version, device_of, set_backend_array, wrap

from ..autodiff import Variable
from ..optimizers.base_optimizer import VariablePart

__all__ = ["ShardedUpdate", "SharedVariable", "enabled"]

_ALIGN = 64


def enabled():
    """Whether ``TNP_SHARDED_UPDATE=1`` asks for the sharded update (off by default; every
    rank must be launched with the same setting)."""
    return os.environ.get("TNP_SHARDED_UPDATE", "0").strip().lower() in ("1", "true", "yes", "on")


# a shared weight or slot -> its ShardedUpdate (weakly): a write outside the sharded update
# detaches the whole group first
_groups = {}


class SharedVariable(Variable):
    """A ``tt.Variable`` whose buffer lies in a :class:`ShardedUpdate`'s shared segment (its
    class while it does). Every rank reads the same buffer, and only the sharded update writes
    it, each rank its part: any other write (``assign``, ``set_weights``, a restore, an
    optimizer that does not shard) first gives every weight and slot of the group a private
    copy again, as mirrored variables have, so it cannot reach another rank's values. The
    next sharded step puts them back (with the value this rank has, which mirrored writes
    keep the same on every rank)."""

    __slots__ = ()

    def update(self, fn, *args, constrain=True):
        _detach(self)
        return Variable.update(self, fn, *args, constrain=constrain)


def _detach(holder):
    """Private copies for ``holder``'s whole group (the holder alone if the group is gone)."""
    ref = _groups.get(holder.key)
    group = ref() if ref is not None else None
    if group is not None:
        group.detach()
    if type(holder) is SharedVariable:
        set_backend_array(holder, backend_array(holder).copy())
        holder.__class__ = Variable
        _groups.pop(holder.key, None)


def _in_place(name):
    base = getattr(Variable, name)

    def method(self, *args):
        # a NumPy-style write into the variable (v += x, v[i] = x): private copies first, as
        # for update(); whatever else writes into the shared buffer fails, as it is read-only
        _detach(self)
        return base(self, *args)
    method.__name__ = name
    return method


for _name in ("__iadd__", "__iand__", "__ifloordiv__", "__ilshift__", "__imatmul__",
              "__imod__", "__imul__", "__ior__", "__ipow__", "__irshift__", "__isub__",
              "__itruediv__", "__ixor__", "__setitem__"):
    if hasattr(Variable, _name):
        setattr(SharedVariable, _name, _in_place(_name))
del _name


def _part(whole, view, slots):
    """A :class:`VariablePart` of ``whole`` over ``view`` (this rank's part of its shared
    buffer), with ``slots`` the same parts of its slots."""
    # the constructor (which asks no variable creator for a subclass) copies its initial
    # value; the part then takes the buffer it stands for
    p = VariablePart(view, trainable=whole.trainable, name=whole.name, dtype=view.dtype,
                     aggregation=whole.aggregation, synchronization=whole.synchronization,
                     device=device_of(whole))
    set_backend_array(p, view)
    p.whole = whole
    p.part_slots = slots
    return p


class ShardedUpdate:
    """The shared weights and slots of one optimizer's variables, and this rank's part of the
    update (made by :meth:`make`, collectively; see the module docstring)."""

    def __init__(self, bucketer, optimizer, mapping, bound, own):
        self.bucketer = bucketer
        self.optimizer = optimizer
        self._mapping = mapping         # kept open while the views into it live
        # [(Variable, its read-only shared view, a writable one)]: the weights and slots
        self._bound = bound
        self.attached = False
        self._own = own                 # per bucket: [(key index, a, z, the variable's part)]

    @classmethod
    def make(cls, comm, bucketer, optimizer, variables):
        """Collective: a :class:`ShardedUpdate` on every rank, or None on every rank (where any
        rank finds a variable or slot it cannot share). Without ``TNP_SHARDED_UPDATE=1`` (the
        same on every rank) None at once."""
        if not enabled():
            return None
        ok = bucketer.shardable
        slot_names = list(optimizer.get_slot_names())
        layout = bucketer.layout() if ok else []
        if ok:
            for keys, _, _, shapes, dtype, _ in layout:
                for key, shape in zip(keys, shapes):
                    v = variables.get(key)
                    if not _shareable(v, shape, dtype):
                        ok = False
                        break
                    slots = optimizer.slots_for(v)
                    if set(slots) != set(slot_names) or not all(
                            _shareable(s, shape, dtype) for s in slots.values()):
                        ok = False
                        break
                if not ok:
                    break
        if not all(comm.allgather_object(bool(ok))):
            return None
        from .collective.shm import shared_mapping
        # per bucket: the weights, then each slot, each as long as the bucket's gradients
        starts, off = [], 0
        for keys, offsets, sizes, _, dtype, _ in layout:
            n = (offsets[-1] + sizes[-1]) if keys else 0
            row = []
            for _ in range(1 + len(slot_names)):
                row.append(off)
                off += -(-n * dtype.itemsize // _ALIGN) * _ALIGN
            starts.append(row)
        mapping = shared_mapping(comm, off, "state")
        if mapping is None:
            return None
        raw = np.frombuffer(mapping, np.uint8)
        bound, own, pending = [], [], []
        for (keys, offsets, sizes, shapes, dtype, (lo, hi)), row in zip(layout, starts):
            n = (offsets[-1] + sizes[-1]) if keys else 0
            flats = [raw[o:o + n * dtype.itemsize].view(dtype) for o in row]
            parts = []
            for i, (key, o, size, shape) in enumerate(zip(keys, offsets, sizes, shapes)):
                v = variables[key]
                slots = optimizer.slots_for(v)      # none for SGD without momentum
                holders = [v] + [slots[name] for name in slot_names]
                for holder, flat in zip(holders, flats):
                    # the variable's own view is read-only: only the sharded update (through
                    # other views) and the copies below write the shared values
                    writable = flat[o:o + size].reshape(shape)
                    view = writable.view()
                    view.flags.writeable = False
                    pending.append((holder, view, writable))
                a, z = max(o, lo), min(o + size, hi)
                if a < z:
                    # this rank's part of the weight and of its slots, which the optimizer's
                    # update_step updates as it would the whole variable
                    part = _part(v, flats[0][a:z], {
                        name: _part(slots[name], flat[a:z], {})
                        for name, flat in zip(slot_names, flats[1:])})
                    parts.append((i, a, z, part))
            own.append(parts)
        # worker 0's values (the same as every rank's: the variables are mirrored) go in once
        if comm.rank == 0:
            for holder, _, writable in pending:
                writable[...] = backend_array(holder)
        comm.allgather_object(None)          # written before any rank reads through its views
        state = cls(bucketer, optimizer, mapping, pending, own)
        state._attach(copy=False)
        return state

    def _attach(self, copy):
        """Point every weight and slot at its shared view (``copy``: its value first)."""
        ref = weakref.ref(self)
        for holder, view, writable in self._bound:
            if backend_array(holder) is not view:
                if copy:
                    writable[...] = backend_array(holder)
                set_backend_array(holder, view)
                bump_version(holder)
            if type(holder) is not SharedVariable:
                holder.__class__ = SharedVariable
            _groups[holder.key] = ref
        self.attached = True

    def detach(self):
        """Give every weight and slot a private copy of its value again (a write outside the
        sharded update, or the group is no longer used)."""
        if not self.attached:
            return
        self.attached = False
        for holder, view, _ in self._bound:
            if _groups.get(holder.key) is not None and _groups[holder.key]() is self:
                del _groups[holder.key]
            if backend_array(holder) is view:       # (not taken over by another group)
                set_backend_array(holder, view.copy())
                bump_version(holder)
                holder.__class__ = Variable

    def rebind(self):
        """Before a sharded step: put every weight and slot detached since the last one (or
        whose buffer was replaced) back into its place, its value copied in (every rank copies
        the same one: no rank has started to write its part yet)."""
        if not self.attached:
            self._attach(copy=True)
            return
        for holder, view, _ in self._bound:
            if backend_array(holder) is not view:
                self._attach(copy=True)
                return

    def run(self, learning_rate):
        """This rank's part of the step's update, from the buckets' sums (the step's gradients
        were handed over to the bucketer); returns once every rank has done its part."""
        own = self._own
        update_step = self.optimizer.update_step

        def apply(b_index, lo, hi, sums, present):
            for i, a, z, part in own[b_index]:
                if present[i]:
                    update_step(wrap(sums[a - lo:z - lo], device_of(part)), part,
                                learning_rate)
        self.bucketer.finish_sharded(apply)
        # every rank's part is written: the weights and slots changed under any saved value
        for holder, _, _ in self._bound:
            bump_version(holder)


def _shareable(v, shape, dtype):
    if type(v) not in (Variable, SharedVariable) or v.constraint is not None:
        return False
    a = backend_array(v)
    return (type(a) is np.ndarray and a.dtype == dtype and tuple(a.shape) == tuple(shape)
            and not device_of(v).is_gpu)
