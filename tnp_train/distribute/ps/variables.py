"""Variables held by parameter servers, and the client side of their traffic.

A variable made in a ``ParameterServerStrategy``'s scope lives on one ``ps`` rank (or, split by
a partitioner, as shards on several). Everywhere else it is a :class:`PSVariable`: a
``tt.Variable`` whose own buffer is a *cache* of the server's value, plus a handle (the rank and
key of its value on the server, or its shards). So every tnp function takes it, and the
variable seams of ``tt.Variable`` do the rest:

* **reads**: a cache is refreshed before it is read, once per *epoch* of its client: on a
  worker an epoch is one run of a closure (its first read fetches the value; a closure reads a
  consistent snapshot, TF's "one read per variable per step"), on the chief it ends whenever a
  closure finishes. The variables a closure refers to are fetched together when it starts (one
  request per server); a read by any tnp operation (an operation listener sees its arguments
  before it computes) or by ``numpy()``/``value()`` fetches what is stale. The chief refreshes
  everything at ``ClusterCoordinator.join()``, so code that reads buffers directly (a checkpoint)
  sees the values of the end of the work.
* **writes**: ``Variable.update(fn, *args)`` is the one entry of every write (``assign*``,
  optimizer steps and slots, metric state, checkpoint restores). Here it sends ``fn`` (pickled;
  a module-level kernel travels as its name), the arrays among ``args`` as raw buffers and the
  variables among them (an optimizer's slots, which live with their variable) as handles, and
  the server applies it to its copy, one request at a time: each update is atomic, and updates
  from many workers at once lose nothing. A worker does not wait for each update; before its
  closure reports done it waits until every server it wrote has applied them all (a
  ``flush``). The chief waits for each of its writes.

In-place writes through tnp operations (``v[0] = 1``, ``v += 1``) would change only the cache;
they raise instead (use ``assign``).
"""
from __future__ import annotations

import threading

import numpy as _np

import tnp
from tnp.extend import (add_op_listener, array_module, backend_array, device_of, is_tnp_array,
                        set_backend_array)

from ...autodiff import Variable
from . import wire
from .errors import PeerLostError, UnavailableError

__all__ = ["PSVariable", "ShardedVariable", "VariableClient", "install_listener", "current_client",
           "client_scope", "split_rows", "release_listener"]


def split_rows(n, num_shards):
    """Row bounds of ``num_shards`` shards of ``n`` rows, the first ``n % num_shards`` one row
    longer (TF's ShardedVariable split)."""
    base, extra = divmod(int(n), int(num_shards))
    out, lo = [], 0
    for i in range(num_shards):
        hi = lo + base + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


class _Handle:
    """Where a :class:`PSVariable`'s value lives, and when its cache was filled."""

    __slots__ = ("client", "key", "ps", "slot", "fetched", "shards", "variable_key")

    def __init__(self, client, key, ps, slot=False, shards=None, variable_key=None):
        self.client = client
        self.key = key            # the value's key on its server (a sharded variable: its own id)
        self.ps = ps              # the server's rank (None for a sharded variable)
        self.slot = slot          # an optimizer slot: not prefetched (read through updates)
        self.fetched = -1         # the client epoch the cache was filled in
        self.shards = shards      # [(lo, hi, shard PSVariable)] for a ShardedVariable
        # a worker's handle: the chief's Variable.key of the variable (None on the chief)
        self.variable_key = variable_key

    def parts(self):
        """``[(rank, key, lo, hi)]``: the pieces of the value (one for an unsharded variable)."""
        if self.shards is None:
            return [(self.ps, self.key, None, None)]
        return [(s._ps.ps, s._ps.key, lo, hi) for lo, hi, s in self.shards]


_own_key = Variable.key.__get__     # tt.Variable's own key (PSVariable overrides it)


class PSVariable(Variable):
    """A ``tt.Variable`` whose value lives on a parameter server (see the module docstring);
    TF's ``tf.Variable`` placed on a ``/job:ps`` device by ``ParameterServerStrategy``."""

    __slots__ = ("_ps",)

    @property
    def key(self):
        """The chief's key of the variable (``tt.Variable.key``), on every task: an optimizer
        pickled from the chief keys its slots and built variables by it."""
        k = self._ps.variable_key
        return _own_key(self) if k is None else k

    # ---------------------------------------------------------------- reading
    def _refresh(self):
        h = self._ps
        if h.fetched != h.client.epoch:
            h.client.ensure_fresh((self,))

    def numpy(self):
        self._refresh()
        return super().numpy()

    def value(self):
        self._refresh()
        return super().value()

    read_value = value

    @property
    def ps_task(self):
        """The index of the ``ps`` task holding the value (None for a ShardedVariable)."""
        h = self._ps
        return None if h.ps is None else h.client.ps_ranks.index(h.ps)

    # ---------------------------------------------------------------- writing
    def update(self, fn, *args, constrain=True):
        """``fn(a, *args)`` applied on the parameter server to its value (atomically), then
        the variable's constraint there (see ``tt.Variable.update``)."""
        self._ps.client.remote_update(self, fn, args, constrain)
        return self

    def _fresh_arg(self, value):
        if isinstance(value, PSVariable):
            value._refresh()

    def assign(self, value, use_locking=False, name=None, read_value=True):
        self._fresh_arg(value)
        return super().assign(value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        self._fresh_arg(delta)
        return super().assign_add(delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        self._fresh_arg(delta)
        return super().assign_sub(delta, use_locking, name, read_value)

    def __repr__(self):
        return (f"<tt.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name} "
                f"(parameter server), numpy="
                f"{_np.array2string(_np.asarray(self.numpy()), separator=', ')}>")

    __str__ = __repr__


class ShardedVariable(PSVariable):
    """A variable split along its first axis into shards on several parameter servers (TF
    2.4's ``ShardedVariable``, made when ``ParameterServerStrategy(variable_partitioner=...)``
    asks for more than one shard). Unlike TF's, it is itself a ``tt.Variable`` holding the
    whole value (its cache), so every layer and tnp function takes it as one array; a
    checkpoint saves it whole (as TF does), so it restores into one variable or into another
    number of shards. An update applies its function to each shard with the arguments of the
    variable's shape split the same way: exact for elementwise updates (``assign*``, every
    optimizer), each shard atomic on its own, as in TF."""

    __slots__ = ()

    @property
    def variables(self):
        """The shards, ``PSVariable``\\ s in order (TF's ``ShardedVariable.variables``)."""
        return [s for _, _, s in self._ps.shards]

    @property
    def ps_task(self):
        return None


# ================================================================ the client of the servers
_tls = threading.local()


def current_client():
    """The client (chief or worker) objects are being unpickled for, on this thread."""
    c = getattr(_tls, "client", None)
    if c is None:
        raise RuntimeError("a parameter-server handle was unpickled outside a parameter-server "
                           "job (handles travel only between the ranks of the job)")
    return c


class client_scope:
    """Make ``client`` current on this thread (unpickling resolves handles through it)."""

    __slots__ = ("_client", "_old")

    def __init__(self, client):
        self._client = client

    def __enter__(self):
        self._old = getattr(_tls, "client", None)
        _tls.client = self._client
        return self._client

    def __exit__(self, *exc):
        _tls.client = self._old
        return False


_FN_CACHE_MAX = 256


class VariableClient:
    """What a chief or a worker does with server-held variables: keep the handles (one Python
    object per variable in this process, so identity holds across closures), fetch values,
    send updates. ``endpoint`` talks to the ``ps_ranks``; ``sync_updates``: wait for each
    update (the chief) or only at :meth:`flush` (a worker, at the end of a closure)."""

    def __init__(self, endpoint, ps_ranks, sync_updates, stop=None):
        self.endpoint = endpoint
        self.ps_ranks = list(ps_ranks)
        self.sync_updates = sync_updates
        self.epoch = 0
        self.handles = {}                 # key -> PSVariable
        self.attempt = None               # (closure id, attempt) of the closure running here
        self._dirty = set()               # servers written since the last flush
        self._fn_bytes = {}
        self._lock = threading.RLock()
        self._stop = stop
        self.seen = None                  # handles resolved while unpickling (a set) or None

    # ------------------------------------------------------------------ names
    def ps_name(self, rank):
        try:
            return f"ps:{self.ps_ranks.index(rank)} (rank {rank})"
        except ValueError:
            return f"rank {rank}"

    def _wait(self, fut, rank, what):
        from .endpoint import wait_future
        try:
            return wait_future(fut, self._stop)
        except PeerLostError:
            raise _lost(rank, f"parameter server {self.ps_name(rank)} was lost during {what}; "
                              f"the variables it held are gone") from None

    # ------------------------------------------------------------------ handles
    def resolve(self, state):
        """The handle of the variable ``state`` describes (made on first sight)."""
        key = state["key"]
        v = self.handles.get(key)
        if v is None:
            with self._lock:
                v = self.handles.get(key)
                if v is None:
                    v = self._make_handle(state)
        if self.seen is not None:
            self.seen.add(key)
        return v

    def _make_handle(self, state):
        shards = None
        cls = PSVariable
        if state.get("shards"):
            cls = ShardedVariable
            shards = [(lo, hi, self.resolve(s)) for lo, hi, s in state["shards"]]
        dtype = wire.dtype_from_name(state["dtype"])
        v = cls(_np.zeros(tuple(state["shape"]), dtype), trainable=state["trainable"],
                name=state["name"], dtype=dtype, aggregation=state["aggregation"],
                synchronization=state["synchronization"], constraint=state.get("constraint"))
        v._ps = _Handle(self, state["key"], state["ps"], state["slot"], shards,
                        variable_key=state["variable_key"])
        self.handles[state["key"]] = v
        return v

    @staticmethod
    def state_of(v):
        """What a handle pickles to (see :meth:`resolve`)."""
        h = v._ps
        state = {"key": h.key, "ps": h.ps, "slot": h.slot, "shape": list(v.shape),
                 "dtype": wire.dtype_name(v.dtype), "name": v.name, "trainable": v.trainable,
                 "aggregation": v.aggregation.name, "synchronization": v.synchronization.name,
                 "variable_key": v.key}
        if v.constraint is not None:
            state["constraint"] = v.constraint
        if h.shards is not None:
            state["shards"] = [(lo, hi, VariableClient.state_of(s)) for lo, hi, s in h.shards]
        return state

    # ------------------------------------------------------------------ reading
    def new_epoch(self):
        """Every cache is stale from now on."""
        self.epoch += 1

    def ensure_fresh(self, variables):
        """Fetch every variable of ``variables`` whose cache is stale, one request per server."""
        epoch = self.epoch
        stale = [v for v in variables if v._ps.fetched != epoch]
        if not stale:
            return
        by_ps = {}
        for v in stale:
            for rank, key, _, _ in v._ps.parts():
                keys = by_ps.setdefault(rank, [])
                if key not in keys:
                    keys.append(key)
        futures = {rank: self.endpoint.request(rank, wire.Frame({"op": "read", "keys": keys}))
                   for rank, keys in by_ps.items()}
        values = {}
        for rank, fut in futures.items():
            header, buffers = self._wait(fut, rank, "a read")
            if header.get("error"):
                raise _remote_error(header, f"reading from parameter server "
                                            f"{self.ps_name(rank)}")
            for key, entry in zip(header["keys"], header["arrays"]):
                values[key] = wire.array_from(entry, buffers)
        for v in stale:
            self._install(v, values, epoch)

    def _install(self, v, values, epoch):
        h = v._ps
        if h.shards is None:
            a = values[h.key]
        else:
            a = _np.concatenate([values[key] for _, key, _, _ in h.parts()], axis=0)
            for _, _, s in h.shards:
                if s._ps.key in values:
                    self._install(s, values, epoch)
        dev = device_of(v)
        if dev.is_gpu:
            a = array_module(dev).asarray(a)
        elif a.base is not None:
            # a buffer of its own: views of one received frame would share one version
            # counter, so a write into one variable would look like a write into all of them
            # to a tape that recorded a read of another
            a = a.copy()
        set_backend_array(v, a)
        h.fetched = epoch

    # ------------------------------------------------------------------ writing
    def _fn_stream(self, fn):
        """``fn`` pickled (kept per function: a module-level kernel pickles to its name)."""
        try:
            b = self._fn_bytes.get(fn)
            keep = True
        except TypeError:           # an unhashable callable: pickled every time
            b, keep = None, False
        if b is None:
            from .pickling import dumps_plain
            b = dumps_plain(fn)
            if keep:
                if len(self._fn_bytes) >= _FN_CACHE_MAX:
                    self._fn_bytes.clear()
                self._fn_bytes[fn] = b
        return b

    def remote_update(self, var, fn, args, constrain):
        """``var.update(fn, *args)`` sent to the server(s) holding ``var``. The chief waits for
        each and installs the values the server sends back (so code that reads a variable's
        buffer directly, as a metric's ``result`` does, reads its own writes); a worker does
        not wait, and applies an update that writes no other variable to its own cache too
        (its later reads in the closure see its writes, as reads of a TF variable would)."""
        h = var._ps
        stream = self._fn_stream(fn)
        parts = h.parts()
        requests = []
        for i, (rank, key, lo, hi) in enumerate(parts):
            frame = wire.Frame({"op": "update", "key": key, "c": bool(constrain),
                                "att": self.attempt, "ack": self.sync_updates})
            frame.header["fn"] = frame.add_pickle(stream)
            frame.header["args"] = [self._encode_arg(frame, x, var, i, rank, lo, hi)
                                    for x in args]
            requests.append((rank, frame))
        written = [x for x in args if isinstance(x, PSVariable)]
        if self.sync_updates:
            futures = [(rank, self.endpoint.request(rank, frame)) for rank, frame in requests]
            values = {}
            for rank, fut in futures:
                header, buffers = self._wait(fut, rank, f"an update of '{var.name}'")
                if header.get("error"):
                    _stale(var, written)
                    raise _remote_error(header, f"updating '{var.name}' on parameter server "
                                                f"{self.ps_name(rank)}")
                for key, entry in zip(header["keys"], header["arrays"]):
                    values[key] = wire.array_from(entry, buffers)
            epoch = self.epoch
            for v in [var] + written:
                if all(key in values for _, key, _, _ in v._ps.parts()):
                    self._install(v, values, epoch)
                else:
                    _stale(v, ())
            return
        if not written and h.fetched == self.epoch:
            Variable.update(var, fn, *args, constrain=constrain)
            if h.shards is not None:
                for _, _, s in h.shards:
                    s._ps.fetched = -1
        else:
            _stale(var, written)
        for rank, frame in requests:
            if not self.endpoint.send_frame(rank, frame):
                raise _lost(rank, f"parameter server {self.ps_name(rank)} was lost; cannot "
                                  f"update '{var.name}'")
            self._dirty.add(rank)

    def _encode_arg(self, frame, x, var, part, rank, lo, hi):
        if isinstance(x, PSVariable):
            parts = x._ps.parts()
            if len(parts) != len(var._ps.parts()) or parts[part][0] != rank or \
                    parts[part][2:] != (lo, hi):
                raise ValueError(f"update of '{var.name}': variable '{x.name}' among its arguments "
                                 f"is not held with it (on parameter server "
                                 f"{self.ps_name(rank)}, split the same way); an update may "
                                 f"write only variables colocated with it (an optimizer's slots)")
            return {"v": parts[part][1]}
        if isinstance(x, Variable):
            raise ValueError(f"update of '{var.name}': variable '{x.name}' among its arguments "
                             f"lives in this process, not on a parameter server (it was not "
                             f"created in the ParameterServerStrategy's scope)")
        if is_tnp_array(x) or isinstance(x, _np.ndarray):
            a = host_array(x) if is_tnp_array(x) else x
            if lo is not None and a.ndim and tuple(a.shape) == tuple(var.shape):
                a = a[lo:hi]
            return frame.add_array(a)
        if x is None or type(x) in (bool, int, float, str):
            return {"j": x}
        from .pickling import dumps_plain
        return frame.add_pickle(dumps_plain(x))

    def flush(self):
        """Wait until every server written since the last flush has applied those writes;
        raise the first error one of them met."""
        dirty, self._dirty = self._dirty, set()
        futures = [(rank, self.endpoint.request(rank, wire.Frame({"op": "flush"})))
                   for rank in sorted(dirty)]
        first = None
        for rank, fut in futures:
            header, _ = self._wait(fut, rank, "the end of a closure's updates")
            if header.get("error") and first is None:
                first = _remote_error(header, f"an update on parameter server "
                                              f"{self.ps_name(rank)}")
        if first is not None:
            raise first

    def discard_updates(self):
        self._dirty = set()


def _lost(rank, message):
    """An UnavailableError saying which rank was lost (a worker's closure reports it to the
    chief, which may hear of the loss from it first)."""
    err = UnavailableError(message)
    err.lost_rank = rank
    return err


def _stale(var, written):
    """Mark ``var`` and the variables in ``written`` (and their shards) as needing a fetch."""
    for v in [var, *written]:
        v._ps.fetched = -1
        if v._ps.shards is not None:
            for _, _, s in v._ps.shards:
                s._ps.fetched = -1


def _remote_error(header, where):
    """The exception a server reported (its type when it is a builtin one)."""
    import builtins
    name = header.get("etype", "RuntimeError")
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
        msg = f"{name}: {header['error']}"
    else:
        msg = header["error"]
    try:
        exc = cls(f"{msg} ({where})")
    except Exception:
        exc = RuntimeError(f"{name}: {msg} ({where})")
    return exc


# ================================================================ reads by tnp operations
_listener = []            # [handle, users]
_listener_lock = threading.Lock()


def _is_inplace(name):
    return name == "setitem" or name.startswith("inplace_")


def _before(name, args, kwargs):
    stale = None
    for i, a in enumerate(args):
        ta = type(a)
        if ta is PSVariable or ta is ShardedVariable:
            if i == 0 and _is_inplace(name):
                _refuse(name, a)
            h = a._ps
            if h.fetched != h.client.epoch:
                stale = [a] if stale is None else stale + [a]
        elif ta is list or ta is tuple:
            for b in a:
                tb = type(b)
                if tb is PSVariable or tb is ShardedVariable:
                    h = b._ps
                    if h.fetched != h.client.epoch:
                        stale = [b] if stale is None else stale + [b]
    if kwargs:
        for k, a in kwargs.items():
            ta = type(a)
            if ta is PSVariable or ta is ShardedVariable:
                if k == "out":
                    _refuse(name, a)
                h = a._ps
                if h.fetched != h.client.epoch:
                    stale = [a] if stale is None else stale + [a]
    if stale:
        by_client = {}
        for v in stale:
            by_client.setdefault(id(v._ps.client), (v._ps.client, []))[1].append(v)
        for client, vs in by_client.values():
            client.ensure_fresh(vs)


def _refuse(name, v):
    raise TypeError(f"{name}: an in-place write into parameter-server variable '{v.name}' would "
                    f"change only this process's copy; use assign/assign_add/assign_sub (they "
                    f"go to its parameter server)")


def install_listener():
    """Refresh stale parameter-server variables before any tnp operation reads them, while at
    least one chief or worker of this process needs it (:func:`release_listener` undoes one
    call)."""
    with _listener_lock:
        if not _listener:
            _listener.extend([add_op_listener(before=_before), 0])
        _listener[1] += 1


def release_listener():
    with _listener_lock:
        if _listener:
            _listener[1] -= 1
            if _listener[1] <= 0:
                _listener[0].remove()
                _listener.clear()


def host_array(x):
    """A host NumPy view or copy of a tnp array's value."""
    a = backend_array(x)
    if isinstance(a, (_np.ndarray, _np.generic)):
        return _np.asarray(a)
    return _np.asarray(a.get())           # a CuPy array


def as_tnp(a, device):
    """A host array as a tnp array on ``device`` (a copy to a GPU)."""
    if device is not None and device.is_gpu:
        return tnp.asarray(a, device=device)
    return tnp.asarray(a)
