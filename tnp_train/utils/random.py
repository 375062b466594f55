"""One source of randomness for tnp_train: initializers without a seed, dropout, shuffling.

``set_random_seed(s)`` (``tf.keras.utils.set_random_seed``) seeds Python's ``random``, NumPy's
and tnp's global generators and this module's generator, so a training run is reproducible.
The generator is per thread (replicas of a strategy run in threads and must not race on one
generator); each thread's generator is derived from the seed and the order threads first ask.

Per-sample draws (dropout masks, noise) go through :func:`keep_mask` / :func:`normal`: under a
distribution strategy each replica draws its own rows of the global batch's draw. Where every
worker holds the same generator (one seed everywhere, as the strategies ask), the N workers of
a job then draw together exactly what one process draws for the same global batch, and no two
replicas share a mask (ranks seeded alike would otherwise draw the same mask for their parts).
"""
from __future__ import annotations

import contextlib
import copy
import itertools
import random as _pyrandom
import threading

import numpy as _np

from tnp.extend import host_call as _host_call, tracing as _tracing

__all__ = ["set_random_seed", "get_rng", "make_rng", "set_thread_stream", "replica_draws",
           "ReplicaGenerators", "keep_mask", "normal", "per_sample", "replica_generator",
           "refuse_while_tracing"]

_state = threading.local()
_lock = threading.Lock()
_seed = None              # None: fresh entropy
_epoch = 0                # bumped by set_random_seed so threads re-derive their generator
_thread_counter = itertools.count()


def set_random_seed(seed):
    """Seed every generator training uses (Python, NumPy, tnp, tnp_train)."""
    global _seed, _epoch, _thread_counter
    if not isinstance(seed, (int, _np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"set_random_seed: expected a non-negative integer seed, got {seed!r}")
    seed = int(seed)
    _pyrandom.seed(seed)
    _np.random.seed(seed % 2**32)
    import tnp
    tnp.random.seed(seed % 2**32)
    with _lock:
        _seed = seed
        _epoch += 1
        _thread_counter = itertools.count()


def get_rng():
    """This thread's NumPy ``Generator`` (seeded by :func:`set_random_seed`)."""
    st = _state
    if getattr(st, "epoch", None) != _epoch:
        with _lock:
            stream = getattr(st, "stream", None)
            # a named stream (a replica thread's) does not depend on which thread asked first
            k = next(_thread_counter) if stream is None else [1, stream]
            st.rng = _np.random.default_rng(None if _seed is None else
                                            [_seed, *(k if isinstance(k, list) else [k])])
            st.epoch = _epoch
    return st.rng


def set_thread_stream(stream):
    """Give this thread its own reproducible stream ``stream`` (a non-negative int; a
    strategy's replica ``i`` uses ``i``) instead of one numbered by the order threads ask."""
    if getattr(_state, "stream", None) != stream:
        _state.stream = stream
        _state.epoch = None


def make_rng(seed=None):
    """A new Generator: from ``seed`` when given, else drawn from :func:`get_rng` (so it is
    reproducible under :func:`set_random_seed`)."""
    if seed is None:
        return _np.random.default_rng(get_rng().integers(0, 2**63))
    return _np.random.default_rng(seed)


# ==================================================================== per-sample draws
# A replica of a strategy run draws for its rows of the global batch: the strategy says which
# (replica_draws); the layers ask through keep_mask / normal. The unit of a draw is a 32-bit
# half of the bit generator's 64-bit words, so that a replica can skip the rows before its own
# (PCG64.advance, O(log n)) and the rows after, and leave its generator where one process
# drawing the whole batch would have left it.

def replica_draws(replica_id, num_replicas, rows=None, generator=None):
    """Context: this thread runs replica ``replica_id`` of ``num_replicas``; ``rows`` is
    ``(n, lo, hi)`` when its batch is rows ``[lo, hi)`` of a global batch of ``n`` rows (the
    strategy's split of a dataset or of arrays), else None (the per-sample draws of replicas
    are then made independent by mixing in the replica id). ``generator``: a replica thread's
    generators for the run (one of :meth:`ReplicaGenerators.begin`'s), else the thread's own
    and the layers'."""
    return _replica_draws(replica_id, num_replicas, rows, generator)


@contextlib.contextmanager
def _replica_draws(replica_id, num_replicas, rows, generator):
    prev = getattr(_state, "draws", None)
    _state.draws = None if num_replicas <= 1 and generator is None else \
        (int(replica_id), int(num_replicas), rows, generator)
    try:
        yield
    finally:
        _state.draws = prev


class _ReplicaStreams:
    """One replica thread's generators for a run: a copy of the caller's generator, and a copy
    of each layer's own generator it draws from (kept between runs; brought to the owner's
    state at its first use in a run)."""

    __slots__ = ("main", "copies", "fresh")

    def __init__(self, main):
        self.main = main
        self.copies = {}          # id(owner) -> (owner, copy)
        self.fresh = set()        # the ids brought to their owner's state in this run

    def layer(self, owner):
        key = id(owner)
        hit = self.copies.get(key)
        if hit is None or hit[0] is not owner:
            hit = self.copies[key] = (owner, copy.deepcopy(owner))
        elif key not in self.fresh:
            hit[1].bit_generator.state = owner.bit_generator.state
        self.fresh.add(key)
        return hit[1]


class ReplicaGenerators:
    """The per-sample draws of replicas that run in threads of one process: each replica draws
    from its own copy of the calling thread's generator and of every layer's own generator (so
    the replicas' rows are one draw, as one process's), and those generators then go on from
    where replica 0's copies ended. ``begin(n)`` in the calling thread before the run gives
    the n replicas' generators; ``end()`` after a run that succeeded."""

    def __init__(self):
        self._streams = []
        self._source = None

    def begin(self, n):
        source = get_rng()
        state = source.bit_generator.state
        streams = self._streams
        for i in range(n):
            if i == len(streams):
                streams.append(_ReplicaStreams(copy.deepcopy(source)))
            elif type(streams[i].main.bit_generator) is not type(source.bit_generator):
                streams[i] = _ReplicaStreams(copy.deepcopy(source))
            else:
                streams[i].main.bit_generator.state = state
            streams[i].fresh.clear()
        self._source = source
        return streams[:n]

    def end(self):
        if self._source is not None and self._streams:
            first = self._streams[0]
            self._source.bit_generator.state = first.main.bit_generator.state
            for key in first.fresh:
                owner, mine = first.copies[key]
                owner.bit_generator.state = mine.bit_generator.state
        self._source = None


def _own(rng):
    """The generator a per-sample draw uses: the thread's, or the layer's own (``seed=``) one;
    a replica thread of a several-device strategy draws from its run's copy of either (the
    layer object is shared by the replica threads, which must not race on it)."""
    draws = getattr(_state, "draws", None)
    streams = draws[3] if draws is not None else None
    if rng is None:
        return streams.main if streams is not None else get_rng()
    if streams is not None:
        return streams.layer(rng)
    if getattr(_state, "stream", None) is None:
        return rng
    copies = getattr(_state, "copies", None)
    if copies is None:
        copies = _state.copies = {}
    hit = copies.get(id(rng))
    if hit is None or hit[0] is not rng:
        with _lock:
            hit = copies[id(rng)] = (rng, copy.deepcopy(rng))
    return hit[1]


def refuse_while_tracing(what):
    """Raise ``tnp.extend.UnsupportedTrace`` while this thread traces a compiled function: a
    value drawn on the host in Python (``what`` names the caller) would be drawn once, while
    tracing, and every call would reuse it, so the function runs that signature eagerly
    (``jit_compile=True``: an error naming ``what``). Draws made through :func:`keep_mask` /
    :func:`normal` are drawn anew at every call instead."""
    if _tracing():
        from tnp.extend import UnsupportedTrace
        raise UnsupportedTrace(f"{what} draws random numbers on the host: in a compiled "
                               f"function they would be drawn once, while tracing, and reused "
                               f"by every call; it runs eagerly")


def replica_generator(rng=None):
    """The generator for a draw every replica makes alike (one crop for the whole batch): the
    thread's (a replica thread's copy of its caller's), or a layer's own ``rng`` (a replica
    thread's copy of it). Not while tracing (:func:`refuse_while_tracing`)."""
    refuse_while_tracing("a draw for the whole batch (replica_generator)")
    return _own(rng)


def _rows_for(rng, size):
    """``(generator, rows)`` for a per-sample draw of this replica's ``size`` rows: ``rows`` is
    ``(n, lo, hi)`` when they are rows ``[lo, hi)`` of a global batch of ``n`` the strategy
    split, else None. With several replicas and no such rows, the generator is one of this
    step (a word consumed alike on every replica) and of this replica, so replicas draw apart."""
    rng = _own(rng)
    draws = getattr(_state, "draws", None)
    if draws is None or draws[1] <= 1:
        return rng, None
    rows = draws[2]
    if rows is not None and rows[2] - rows[1] == size:
        return rng, rows
    key = int(rng.bit_generator.random_raw())
    return _np.random.default_rng([key, draws[0]]), None


def per_sample(draw, size, rng=None):
    """``draw(generator, m)``, an array (or a tuple of arrays) with ``m`` leading rows, for the
    ``size`` samples of this replica's batch: under a strategy that split a global batch of
    ``n`` rows, the replica's rows of ``draw(generator, n)`` (every replica makes the whole,
    small, draw, so any ``draw`` works); with rows unknown, a draw of the replica's own.
    Not while tracing (:func:`refuse_while_tracing`)."""
    refuse_while_tracing("a per-sample draw (per_sample)")
    rng, rows = _rows_for(rng, size)
    if rows is None:
        return draw(rng, size)
    out = draw(rng, rows[0])
    lo, hi = rows[1], rows[2]
    return tuple(a[lo:hi] for a in out) if isinstance(out, tuple) else out[lo:hi]


def _skip(bg, words):
    if hasattr(bg, "advance"):
        # also when words is 0: advancing drops the generator's buffered 32-bit half, and
        # every replica, whatever its rows, must leave the buffer as one process does
        bg.advance(words)
    elif words > 0:                         # a bit generator that cannot jump: draw and drop
        bg.random_raw(words)


def _halves(rng, shape, per_element, per_sample):
    """uint32 draws of ``shape + (per_element,)``, axis 0 of ``shape`` being this replica's rows
    of the batch when ``per_sample`` (else the draw is the same on every replica, as one
    process's: a mask shared by the whole batch)."""
    shape = tuple(int(d) for d in shape)
    local = shape[0] if shape else 1
    row = per_element
    for d in shape[1:]:
        row *= d
    if per_sample:
        rng, rows = _rows_for(rng, local)
    else:
        rng, rows = _own(rng), None
    n, lo, hi = rows if rows is not None else (local, 0, local)
    bg = rng.bit_generator
    start, stop = lo * row, hi * row
    first, last, total = start // 2, (stop + 1) // 2, (n * row + 1) // 2
    _skip(bg, first)
    words = bg.random_raw(last - first) if last > first else _np.empty(0, _np.uint64)
    _skip(bg, total - last)
    k = start - 2 * first
    halves = words.view(_np.uint32)[k:k + stop - start]
    return halves.reshape(shape + ((per_element,) if per_element > 1 else ()))


def keep_mask(shape, rate, rng=None, per_sample=True):
    """A boolean mask of ``shape``, each entry True with probability ``1 - rate`` (dropout's
    keep mask); axis 0 is the batch (see :func:`replica_draws`) unless ``per_sample`` is
    False. ``rng``: a layer's own generator (default: the thread's). In a function being
    compiled, a traced array drawn anew at every call (``tnp.extend.host_call``)."""
    return _host_call(_keep_mask, tuple(shape), rate, rng, per_sample, shape=tuple(shape),
                      dtype=_np.bool_)


def _keep_mask(shape, rate, rng, per_sample):
    threshold = min(int(round(float(rate) * 2.0 ** 32)), 2 ** 32 - 1)
    return _halves(rng, shape, 1, per_sample) >= _np.uint32(threshold)


def normal(shape, rng=None, dtype=_np.float32, per_sample=True):
    """Standard normal draws of ``shape`` (Box-Muller on two 32-bit uniforms per entry: one
    64-bit word, so the tails end at 6.7 sigma), axis 0 being the batch as in
    :func:`keep_mask`; computed in float32 unless ``dtype`` is float64. In a function being
    compiled, drawn anew at every call, as :func:`keep_mask`."""
    return _host_call(_normal, tuple(shape), rng, dtype, per_sample, shape=tuple(shape),
                      dtype=_np.dtype(dtype))


def _normal(shape, rng, dtype, per_sample):
    wide = _np.float64 if _np.dtype(dtype) == _np.float64 else _np.float32
    h = _halves(rng, shape, 2, per_sample)
    u1 = (h[..., 0].astype(wide) + wide(0.5)) * wide(2.0 ** -32)      # in (0, 1)
    u2 = h[..., 1].astype(wide) * wide(2.0 ** -32)
    z = _np.sqrt(wide(-2.0) * _np.log(u1)) * _np.cos(wide(2.0 * _np.pi) * u2)
    return z.astype(dtype, copy=False)
