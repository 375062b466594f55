"""Gradient buckets: all-reduce gradients in a few large messages, each started the moment its
last gradient is final, so the reduction overlaps the rest of the backward pass.

The model is PyTorch DDP's reducer: buckets are built once, in reverse order of the variables
(a backward pass produces the last layer's gradients first); every gradient is copied into its
bucket's flat buffer as it arrives, or computed there in the first place (:meth:`slot`, which
the tape offers to a layer's backward); a full bucket starts its all-reduce at once, but never
before the buckets ahead of it, so buckets start (and so complete) in the same order on every
rank, whatever order a rank's gradients came in. Every arrival also drives MPI progress, since
Open MPI here has no progress thread of its own.
"""
from __future__ import annotations

import numpy as np

from .base import is_cupy, is_ml_dtype, normalize_op

__all__ = ["GradientBucketer"]

_MB = 1 << 20


def _finfo(dtype):
    if is_ml_dtype(dtype):
        import ml_dtypes
        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def _compression_dtype(compression):
    if compression is None:
        return None
    name = compression.lower() if isinstance(compression, str) else np.dtype(compression).name
    if name in ("fp16", "float16", "half"):
        return np.dtype(np.float16)
    if name in ("bf16", "bfloat16"):
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    raise ValueError(f"GradientBucketer: unknown compression {compression!r}; expected None, "
                     "'fp16' or 'bf16'")


class _Bucket:
    __slots__ = ("keys", "offsets", "sizes", "shapes", "dtype", "wire", "numel", "nbytes",
                 "limit", "flat", "pending", "started", "xp")

    def __init__(self, dtype, wire, limit, xp):
        self.keys, self.offsets, self.sizes, self.shapes = [], [], [], []
        self.dtype, self.wire, self.limit, self.xp = dtype, wire, limit, xp
        self.numel = 0
        self.nbytes = 0
        self.flat = None
        self.pending = 0
        self.started = False


class GradientBucketer:
    """Sums (``op``) gradients across ``comm``'s ranks in buckets of about ``bucket_bytes``
    (the first one ``first_bucket_bytes``, so the first reduction starts early), optionally
    sent as float16 or bfloat16 (``compression="fp16" | "bf16"``: cast before, summed in that
    dtype, cast back after, as Horovod's ``Compression.fp16``; floating gradients wider than
    the wire dtype only). Where finite gradients overflow the wire dtype (on any rank, or in
    their sum), :meth:`finish` raises ``FloatingPointError`` naming their keys on every rank
    (``.keys``); gradients already inf or nan on some rank travel as they are.

    ``bucket_bytes`` None or 0 means the default (as ``CommunicationOptions(bytes_per_pack=0)``).
    Per step: :meth:`start`, :meth:`gradient_ready` for each gradient as it becomes final, then
    :meth:`finish`. :meth:`start` gives the keys (hashable) and arrays (anything with ``shape``
    and ``dtype``) in forward order; the layout is built on the first call and rebuilt only when
    they change (a later call with the same ones is cheap).
    A key no rank produced a gradient for is left out of :meth:`finish`'s result on every rank;
    one produced on some ranks only is reduced with zeros from the others.
    """

    # benchmarks/allreduce.py --buckets, 2 ranks: the 784-512-512-10 MLP's backward pass (batch
    # 128, one BLAS thread, 2.5 ms) with its 2.7 MB of float32 gradients summed; ms per step,
    # five runs (the first three before large results reused their buffers; "one after" then
    # paid 7.3 ms of page faults):
    #                 64 KB  256 KB  1 MB/256 KB  1 MB/1 MB  4 MB/1 MB  25 MB/1 MB  one after
    #                 3.57   3.43    3.34         3.35       3.40       3.45        -
    #                 3.72   3.43    3.45         3.41       3.46       3.54        -
    #                 3.86   3.68    3.70         3.62       3.60       3.85        -
    #                 3.52   3.74    3.55         3.57       3.51       3.84        3.54
    #                 3.58   3.71    3.76         3.68       3.63       3.60        3.47
    # Every size from 256 KB up gives the same step time within the noise (all but 64 KB make
    # the same two buckets of this model), and none beats one all-reduce after the backward
    # pass: with no MPI progress thread and one core per rank, the transfer itself cannot
    # overlap the compute, only the wait for the slower rank can. 4 MB (first 1 MB) was the
    # steadiest; it keeps buckets where the ring is near its best bandwidth (about 8 GB/s at
    # 4 MB) for larger models, with a small first bucket so the first reduction starts early.
    DEFAULT_BUCKET_BYTES = 4 * _MB
    DEFAULT_FIRST_BUCKET_BYTES = 1 * _MB

    def __init__(self, comm, bucket_bytes=None, first_bucket_bytes=None, compression=None,
                 op="sum"):
        self.comm = comm
        self.bucket_bytes = int(self.DEFAULT_BUCKET_BYTES if not bucket_bytes else bucket_bytes)
        self.first_bucket_bytes = int(self.DEFAULT_FIRST_BUCKET_BYTES if first_bucket_bytes is None
                                      else first_bucket_bytes)
        if self.bucket_bytes <= 0 or self.first_bucket_bytes < 0:
            raise ValueError(f"GradientBucketer: bucket sizes must be positive, got "
                             f"bucket_bytes={bucket_bytes!r}, "
                             f"first_bucket_bytes={first_bucket_bytes!r}")
        self.compression = _compression_dtype(compression)
        self.op = normalize_op(op)
        self._signature = None
        self._plan = None
        self._buckets = []
        self._slots = {}
        self._received = {}
        self._lent = {}            # key -> the view of its slot handed out by slot()
        self._next = 0
        self._extras = []          # per extra array: (its offset in the last bucket, shape) or None
        self.extra_sums = None     # the last finished step's sums of the extras (see start)

    # -- layout --------------------------------------------------------------------------------
    def start(self, keys_and_arrays, extras=()):
        """Begin a step with these ``(key, array)`` pairs in forward (layer) order.

        ``extras``: small arrays (a model's metric state) to sum with the gradients. Those of
        the last bucket's dtype, sent uncompressed, on its kind of device, travel at the end of
        that bucket (copied in now, before any bucket starts); :attr:`extra_sums` has their sums
        once the step finished (None for the others, which the caller sums its own way).
        Returns which extras travel (a list of bools)."""
        items = list(keys_and_arrays)
        extras = list(extras)
        try:
            signature = (tuple((key, tuple(arr.shape), np.dtype(arr.dtype)) for key, arr in items),
                         tuple((tuple(e.shape), np.dtype(e.dtype), is_cupy(e)) for e in extras))
            hash(signature)
        except TypeError as exc:
            raise TypeError(f"GradientBucketer.start: keys must be hashable (for a variable, "
                            f"pass variable.ref() or its name): {exc}") from None
        if len({key for key, _ in items}) != len(items):
            raise ValueError("GradientBucketer.start: a key appears twice")
        if signature != self._signature:
            self._build(items, extras)
            self._signature = signature
        self._reset()
        # The buffers are written from here on: wait (normally not at all) until every peer
        # has read the last round's, then clear the presence flags.
        for b_index, bucket in enumerate(self._buckets):
            self._plan.acquire(b_index)
            bucket.flat[bucket.numel:] = 0
        self.extra_sums = None
        carried = [where is not None for where in self._extras]
        if extras:
            flat = self._buckets[-1].flat
            for e, where in zip(extras, self._extras):
                if where is not None:
                    o, shape = where
                    flat[o:o + e.size] = e.reshape(-1)
        return carried

    def _build(self, items, extras=()):
        buckets, open_by_dtype = [], {}
        for key, arr in reversed(items):
            dtype = np.dtype(arr.dtype)
            if dtype.kind not in "biufc" and not is_ml_dtype(dtype):
                raise TypeError(f"GradientBucketer.start: cannot reduce {key!r} of dtype "
                                f"{dtype.name}")
            wire = dtype
            if self.compression is not None and dtype.kind == "f" \
                    and dtype.itemsize > self.compression.itemsize:
                wire = self.compression
            bucket = open_by_dtype.get((dtype, wire))
            if bucket is None:
                limit = self.first_bucket_bytes if not buckets else self.bucket_bytes
                xp = __import__("cupy") if is_cupy(arr) else np
                bucket = _Bucket(dtype, wire, limit, xp)
                buckets.append(bucket)
                open_by_dtype[(dtype, wire)] = bucket
            size = int(np.prod(arr.shape, dtype=np.int64))
            bucket.keys.append(key)
            bucket.offsets.append(bucket.numel)
            bucket.sizes.append(size)
            bucket.shapes.append(tuple(arr.shape))
            bucket.numel += size
            bucket.nbytes += size * dtype.itemsize
            if bucket.nbytes >= bucket.limit:
                del open_by_dtype[(dtype, wire)]
        # After the gradients, one presence flag per key: the reduced flag says whether any
        # rank had a gradient for it, the same answer on every rank. Then, in the last bucket,
        # the extras that fit it: summed in the round that ends the step, instead of one of
        # their own. The buffers belong to a persistent all-reduce (shared memory where the
        # ranks share a machine), so gradients are copied once, straight to where the peers
        # read them.
        places, tail = [], 0
        last = buckets[-1] if buckets else None
        for e in extras:
            fits = (last is not None and self.op == "sum" and np.dtype(e.dtype) == last.dtype
                    and last.wire == last.dtype and is_cupy(e) == (last.xp is not np))
            if fits:
                places.append((last.numel + len(last.keys) + tail, tuple(e.shape)))
                tail += int(np.prod(e.shape, dtype=np.int64))
            else:
                places.append(None)
        old, self._plan = self._plan, None
        for bucket in self._buckets:
            bucket.flat = None
        # transient: a step's sums are used (by the optimizer) before the next step starts
        # the same bucket, so a shared-memory plan may hand out views of its shared results
        plan = self.comm.persistent_allreduce(
            [(b.numel + len(b.keys) + (tail if b is last else 0), b.wire) for b in buckets],
            self.op, buckets[0].xp if buckets else np, transient=True)
        if old is not None:
            old.close()
        slots = {}
        for b_index, bucket in enumerate(buckets):
            bucket.flat = plan.buffer(b_index)
            for i, key in enumerate(bucket.keys):
                # everything a gradient's arrival needs, looked up once
                slots[key] = (b_index, i, bucket.offsets[i], bucket.sizes[i], bucket.shapes[i])
        self._buckets, self._slots, self._plan = buckets, slots, plan
        self._extras = places

    @property
    def bucket_keys(self):
        """The keys of each bucket, in the order the buckets are reduced."""
        return [list(b.keys) for b in self._buckets]

    def _reset(self):
        for bucket in self._buckets:
            if bucket.started:
                raise RuntimeError("GradientBucketer.start: the previous step was not "
                                   "finish()ed; its reductions are still in flight")
            bucket.pending = len(bucket.keys)
        self._received = {}
        self._lent = {}
        self._next = 0

    # -- per gradient --------------------------------------------------------------------------
    def slot(self, key):
        """This step's place for ``key``'s gradient in its bucket: a writable array shaped like
        the gradient, where the backward pass may write it instead of handing over an array to
        copy (then :meth:`gradient_ready` is given this very array). None where the bucket holds
        another dtype (compression), after the gradient arrived, or once the bucket started.
        Call it after :meth:`start`; the array is this rank's buffer, valid until the step's
        gradients are handed over."""
        where = self._slots.get(key)
        if where is None or key in self._received:
            return None
        b_index, _, o, n, shape = where
        bucket = self._buckets[b_index]
        if bucket.wire is not bucket.dtype and bucket.wire != bucket.dtype or bucket.started:
            return None
        view = bucket.flat[o:o + n].reshape(shape)
        self._lent[key] = view
        return view

    def gradient_ready(self, key, array):
        """Copy ``array``, the final gradient of ``key``, into its bucket (unless it is the
        array :meth:`slot` lent for it, written there already); start every bucket that is now
        full and whose predecessors have started; drive the reductions in flight."""
        try:
            b_index, i, offset, size, expected = self._slots[key]
        except (KeyError, TypeError):
            raise KeyError(f"GradientBucketer.gradient_ready: {key!r} was not given to "
                           "start()") from None
        if key in self._received:
            raise ValueError(f"GradientBucketer.gradient_ready: {key!r} was given twice in one "
                             "step")
        bucket = self._buckets[b_index]
        shape = getattr(array, "shape", None)
        if shape is None:
            array = np.asarray(array)
            shape = array.shape
        if shape != expected:
            raise ValueError(f"GradientBucketer.gradient_ready: the gradient of {key!r} has "
                             f"shape {tuple(shape)}, expected {expected}")
        flag = 1
        if self._lent and self._lent.pop(key, None) is array:
            # written in its slot already (slot()): from now on the peers read it, so this
            # rank's copy of the gradient turns read-only (a transform in place fails loudly)
            if type(array) is np.ndarray:
                array.flags.writeable = False
        elif bucket.wire == bucket.dtype:
            # one copy into the flat buffer
            bucket.flat[offset:offset + size] = array.reshape(-1)
        else:
            # cast to the wire dtype; the presence flag then tells every rank (the flags are
            # summed: nan wins over inf, inf over numbers) what finish() must do alike on all
            flag = self._compress(bucket, offset, size, array)
        bucket.flat[bucket.numel + i] = flag
        self._received[key] = True
        bucket.pending -= 1
        if bucket.pending == 0 and b_index == self._next:
            self._launch()
        self.progress()

    @staticmethod
    def _compress(bucket, offset, size, array):
        """Cast ``array`` into its place in the compressed bucket; the presence flag to send
        with it: 1, or nan where the gradient itself holds inf or nan (it then travels as it
        is, for a loss-scale optimizer to see), or inf where a finite value overflowed the wire
        dtype (NumPy's cast sets the overflow flag). On a GPU nothing is checked."""
        dest = bucket.flat[offset:offset + size]
        flat = array.reshape(-1)
        if bucket.xp is not np:
            dest[...] = flat
            return 1
        if not np.isfinite(flat).all():
            with np.errstate(over="ignore"):
                dest[...] = flat
            return np.nan
        try:
            with np.errstate(over="raise"):
                dest[...] = flat
            return 1
        except FloatingPointError:
            with np.errstate(over="ignore"):
                dest[...] = flat
            return np.inf

    def _launch(self):
        buckets, plan = self._buckets, self._plan
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            plan.start(self._next)
            buckets[self._next].started = True
            self._next += 1

    def progress(self):
        """Drive the reductions in flight (MPI moves data only inside MPI calls; a shared-memory
        plan reduces a bucket here once every rank has written it)."""
        plan = self._plan
        for b_index in range(self._next):
            if self._buckets[b_index].started and not plan.test(b_index):
                break

    # -- sharded update ------------------------------------------------------------------------
    @property
    def shardable(self):
        """Whether :meth:`finish_sharded` can run: the buckets are laid out, on a shared-memory
        plan (every rank on this machine, host memory), and sent in their own dtype."""
        plan = self._plan
        return bool(plan is not None and getattr(plan, "shared", False) and self._buckets
                    and self.op == "sum"
                    and all(b.wire == b.dtype and b.xp is np for b in self._buckets))

    def layout(self):
        """Per bucket, in reduction order: ``(keys, offsets, sizes, shapes, dtype, (lo, hi))``,
        where ``[lo, hi)`` is the part of the bucket's flat buffer this rank sums (and updates,
        in :meth:`finish_sharded`); the keys' gradients sit at ``offsets`` in it."""
        return [(list(b.keys), list(b.offsets), list(b.sizes), list(b.shapes), b.dtype,
                 self._plan.chunk(i)) for i, b in enumerate(self._buckets)]

    def finish_sharded(self, apply):
        """End the step as :meth:`finish`, but instead of taking every bucket's sums, call
        ``apply(b_index, lo, hi, sums, present)`` for this rank's part ``[lo, hi)`` of each
        bucket's flat sums (``sums``, a view valid during the call; ``present[i]`` whether any
        rank gave the bucket's key ``i`` a gradient), and return once every rank has made its
        calls: each rank updates its part of state the ranks share (``shardable`` only)."""
        self.launch_remaining()
        plan = self._plan
        size = self.comm.size
        extra_tail = [None]
        try:
            for b_index, bucket in enumerate(self._buckets):
                def then(lo, hi, sums, b_index=b_index, bucket=bucket):
                    n, m = bucket.numel, bucket.numel + len(bucket.keys)
                    # the flags and the extras, summed from every rank's buffer in rank order
                    # (the same on every rank)
                    tail = plan.peer_buffer(0, b_index)[n:].copy()
                    for p in range(1, size):
                        tail += plan.peer_buffer(p, b_index)[n:]
                    if tail.size > m - n:
                        extra_tail[0] = tail[m - n:]
                    apply(b_index, lo, hi, sums, (tail[:m - n] != 0).tolist())
                plan.wait(b_index, then=then)
                bucket.started = False
        except BaseException:
            self._cancel_started()
            raise
        self.extra_sums = self._extra_sums(extra_tail[0], self._buckets[-1].numel
                                           + len(self._buckets[-1].keys) if self._buckets else 0)
        self._reset()

    def _extra_sums(self, reduced, start):
        """The extras' sums (copies) out of ``reduced``, the last bucket's sums from offset
        ``start`` on (None where an extra did not travel)."""
        out = []
        for where in self._extras:
            if where is None:
                out.append(None)
            else:
                o, shape = where
                n = int(np.prod(shape, dtype=np.int64))
                out.append(reduced[o - start:o - start + n].reshape(shape).copy())
        return out

    def _cancel_started(self):
        """After a failure: forget every bucket's reduction in flight."""
        for b_index, bucket in enumerate(self._buckets):
            if bucket.started:
                self._plan.cancel(b_index)
                bucket.started = False

    # -- end of step ---------------------------------------------------------------------------
    def launch_remaining(self):
        """Start every bucket not started yet, the gradients no one handed over counting as
        zeros (:meth:`finish` does it first): after it, a further collective issued on the
        communicator comes after every bucket's on every rank."""
        for bucket in self._buckets:
            if bucket.pending:
                for i, key in enumerate(bucket.keys):
                    if key not in self._received:
                        o, n = bucket.offsets[i], bucket.sizes[i]
                        bucket.flat[o:o + n] = 0
                bucket.pending = 0
        self._launch()

    def finish(self, each=None):
        """Wait for every bucket; ``{key: reduced gradient}`` in the gradients' dtype, for every
        key some rank gave a gradient for. Gradients not given on this rank count as zeros.

        ``each`` (uncompressed buckets only): called with each bucket's part of that result as
        soon as the bucket's reduction completes, before the next bucket is waited for (an
        optimizer applying the update bucket by bucket)."""
        if each is not None and self.compression is not None:
            raise ValueError("GradientBucketer.finish: each= needs uncompressed buckets (an "
                             "overflow is known only once every bucket is reduced)")
        self.launch_remaining()
        out = {}
        overflowed = []
        plan = self._plan
        try:
            for b_index, bucket in enumerate(self._buckets):
                reduced = plan.wait(b_index)
                bucket.started = False
                present = reduced[bucket.numel:bucket.numel + len(bucket.keys)]
                if not is_cupy(present):
                    present = np.asarray(present)
                present = present.tolist()
                mine = {} if each is not None else out
                for i, key in enumerate(bucket.keys):
                    if not present[i]:
                        continue
                    if present[i] == np.inf:
                        overflowed.append(key)          # a rank's gradient overflowed
                        continue
                    o, n = bucket.offsets[i], bucket.sizes[i]
                    grad = reduced[o:o + n].reshape(bucket.shapes[i])
                    if bucket.wire != bucket.dtype:
                        grad = grad.astype(bucket.dtype)
                        if present[i] == present[i] and bucket.xp is np \
                                and not np.isfinite(grad).all():
                            # every rank's part fitted and was finite: their sum did not fit
                            overflowed.append(key)
                    mine[key] = grad
                if each is not None:
                    out.update(mine)
                    each(mine)
            if self._buckets:
                self.extra_sums = self._extra_sums(reduced, 0)
        except BaseException:
            self._cancel_started()
            raise
        self._reset()
        if overflowed:
            wire = self.compression.name
            exc = FloatingPointError(
                f"GradientBucketer: the gradients of {', '.join(map(repr, overflowed))} "
                f"overflowed {wire} on the wire (a finite value beyond {wire}'s largest, "
                f"{float(_finfo(self.compression).max):g}, in a rank's gradient or in the "
                "sum); send them as bfloat16 or uncompressed")
            exc.keys = overflowed
            raise exc
        return out
