"""Every collective's result on every rank, against NumPy on all ranks' inputs (each rank can
rebuild the others' inputs: they are functions of the rank). Prints ``ALL OK`` per rank."""
import sys

import numpy as np

from coll_common import load_collective, say

coll = load_collective()
import ml_dtypes  # noqa: E402 - after the check that the layer imported nothing of tnp

comm = coll.get_world()
assert isinstance(comm, coll.MPICommunicator), type(comm)
r, n = comm.rank, comm.size
assert "--ranks" not in sys.argv or int(sys.argv[sys.argv.index("--ranks") + 1]) == n

events = []
sub = coll.subscribe(events.append)


def inputs(rank, shape, dtype):
    """Small integers (with negatives for signed types): sums are exact in every dtype."""
    size = int(np.prod(shape, dtype=np.int64))
    base = (np.arange(size, dtype=np.int64) * (rank + 3)) % 11
    if np.dtype(dtype).kind in "fi" or dtype == ml_dtypes.bfloat16:
        base = base - 4 * (rank % 2)
    return base.reshape(shape).astype(dtype)


def expected(op, shape, dtype):
    parts = [inputs(k, shape, dtype).astype(np.float64) for k in range(n)]
    if op == "max":
        return np.max(parts, axis=0).astype(dtype)
    if op == "min":
        return np.min(parts, axis=0).astype(dtype)
    total = np.sum(parts, axis=0)
    if op == "sum":
        return total.astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return np.trunc(total / n).astype(dtype)      # TF's integer MEAN truncates
    # float MEAN: the exact sum, in the dtype, divided by n in the dtype (as TF's Div)
    return (total.astype(dtype) / np.array(n, dtype)).astype(dtype)


# 1. allreduce: ops x dtypes x shapes, through the three payload paths: inline in the header
#    message (up to eager_bytes), the ring (above), and MPI_Iallreduce (above ring_bytes, on a
#    second communicator that sets it; MPI reduces the native dtypes, the ring the others).
eager = comm.eager_bytes
iallreduce = coll.MPICommunicator(ring_bytes=eager + 1)
shapes = [(), (1,), (7,), (3, 5), (eager // 8 - 1,), (eager // 4 + 3,), (3, 100003)]
dtypes = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.float16, ml_dtypes.bfloat16]
checked = 0
for dtype in dtypes:
    for shape in shapes:
        x = inputs(r, shape, dtype)
        for op in ("sum", "mean", "max", "min"):
            got = (iallreduce if len(shape) == 2 and shape[0] == 3 and shape[1] > 5000
                   else comm).allreduce(x, op)
            want = expected(op, shape, dtype)
            assert got.dtype == np.dtype(dtype) and got.shape == tuple(shape), \
                (op, dtype, shape, got.dtype, got.shape)
            if op == "mean" and np.dtype(dtype).itemsize <= 2 and np.dtype(dtype).kind == "f" \
                    or dtype == ml_dtypes.bfloat16 and op == "mean":
                # half precision: the exact mean rounded once or twice (1 ulp)
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                           rtol=2 ** -7)
            else:
                assert np.array_equal(got, want), (op, np.dtype(dtype).name, shape,
                                                   got.ravel()[:6], want.ravel()[:6])
            checked += 1
say(comm, "allreduce exact:", checked, "cases")

# 1b. the fast path of small all-reduces seen before (persistent requests, one set per
#     signature, at most 64 kept): more signatures than that, each called again and again, a
#     rank now and then late (the call then joins the general queue on the fast path's own
#     receive buffers), calls in flight on the general path in between; every value exact
import time  # noqa: E402

signatures = [((k % 9 + 1,), np.float32 if k % 2 else np.int64, ("sum", "max", "mean")[k % 3])
              for k in range(80)]
checked = 0
for rnd in range(3):
    for k, (shape, dtype, op) in enumerate(signatures):
        if (k + rnd) % 17 == 0:
            time.sleep(0.002 * (r == (k + rnd) % n))      # one rank arrives late
        pending = comm.allreduce_async(np.full(5, r + k, np.float64)) if k % 23 == 0 else None
        x = inputs(r + k, shape, dtype)
        got = comm.allreduce(x, op)
        parts = [inputs(q + k, shape, dtype).astype(np.float64) for q in range(n)]
        want = (np.max(parts, axis=0) if op == "max" else np.sum(parts, axis=0) / (
            n if op == "mean" else 1))
        want = np.trunc(want).astype(dtype) if np.dtype(dtype).kind == "i" else \
            want.astype(dtype)
        assert got.dtype == np.dtype(dtype) and np.array_equal(got, want), \
            (rnd, k, op, got, want)
        if pending is not None:
            assert np.all(pending.wait() == sum(q + k for q in range(n)))
        checked += 1
say(comm, "allreduce fast path:", checked, "calls")

# 2. random floats: every rank gets the same bits, on every path (a mirrored variable must stay
#    identical everywhere), and the value is the sum to float32 rounding.
for size in (5, eager // 4 + 1, 500007):
    rng = np.random.default_rng(100 + r)
    x = rng.standard_normal(size).astype(np.float32)
    got = comm.allreduce(x, "sum")
    rows = comm.allgather(got[None, :])
    assert all(np.array_equal(rows[0], row) for row in rows), "ranks disagree"
    ref = sum(np.random.default_rng(100 + k).standard_normal(size).astype(np.float32)
              .astype(np.float64) for k in range(n))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
say(comm, "allreduce identical bits on every rank")

# 2b. large results come from reused buffers: never one the caller still holds (or a view of)
first = comm.allreduce(np.full(300000, 1.0, np.float32))
tail = comm.allreduce(np.full(300000, 2.0, np.float32))[-10:]   # only a view survives
third = comm.allreduce(np.full(300000, 3.0, np.float32))
assert not np.shares_memory(first, third) and not np.shares_memory(tail, third)
assert np.all(first == n) and np.all(tail == 2 * n) and np.all(third == 3 * n)
del first, tail
fourth = comm.allreduce(np.full(300000, 4.0, np.float32))
assert np.all(fourth == 4 * n) and np.all(third == 3 * n)
say(comm, "allreduce results never alias")

# 3. several all-reduces in flight at once, waited for in the reverse order
sizes = (3, eager // 8 + 9, 200001, 2)
reqs = [comm.allreduce_async(np.full(size, r + i, np.float64), "sum")
        for i, size in enumerate(sizes)]
while not all(req.test() for req in reqs):
    pass
for i, (req, size) in reversed(list(enumerate(zip(reqs, sizes)))):
    got = req.wait()
    assert got.shape == (size,) and np.all(got == sum(k + i for k in range(n))), (i, got[:3])
say(comm, "allreduce_async ok")

# 4. allgather with a different dim 0 on every rank, inline and through Iallgatherv
for rows in (1, eager // 24 + 5):
    mine = np.full((rows * (r + 1), 3), r, np.float64)
    got = comm.allgather(mine)
    want = np.concatenate([np.full((rows * (k + 1), 3), k, np.float64) for k in range(n)])
    assert got.shape == want.shape and np.array_equal(got, want), (rows, got.shape)
empty_ok = comm.allgather(np.zeros((0 if r == 0 else 2, 4), np.int32))
assert empty_ok.shape == (2 * (n - 1), 4)
say(comm, "allgather ok")

# 5. broadcast from every root, small and large; other ranks' buffers hold garbage
for root in range(n):
    for size in (4, eager + 8):
        buf = np.full(size, root * 10.0 + 0.5, np.float32) if r == root \
            else np.full(size, np.nan, np.float32)
        got = comm.broadcast(buf, root=root)
        assert got.dtype == np.float32 and np.all(got == root * 10.0 + 0.5), (root, size)
        assert buf is not got
say(comm, "broadcast ok")

# 6. objects (small metadata, and one larger than eager_bytes)
assert comm.allgather_object({"rank": r}) == [{"rank": k} for k in range(n)]
big = "x" * (eager * 3)
assert comm.broadcast_object({"text": big, "from": r} if r == n - 1 else None,
                             root=n - 1) == {"text": big, "from": n - 1}
assert comm.allgather_object(("y" * (eager * r), r)) == [("y" * (eager * k), k) for k in range(n)]
comm.barrier()
say(comm, "objects and barrier ok")

# 7. events: one per collective, consecutive sequence numbers, wait separated from transfer
events.clear()
first = comm.seq
comm.allreduce(np.ones(10, np.float32), "max")
comm.allgather(np.ones((r + 1, 2), np.int64))
comm.barrier()
assert [e["name"] for e in events] == ["allreduce", "allgather", "barrier"], events
assert [e["seq"] for e in events] == [first, first + 1, first + 2]
assert events[0]["op"] == "max" and events[0]["bytes"] == 40 and events[1]["op"] is None
assert events[1]["bytes"] == (r + 1) * 16 and events[2]["bytes"] == 0
for e in events:
    assert e["rank"] == r and e["t_start"] <= e["t_wait_end"] <= e["t_end"], e
    assert set(e) == {"name", "op", "seq", "bytes", "t_start", "t_wait_end", "t_end", "rank"}
seqs = comm.allgather_object([e["seq"] for e in events])
assert all(s == seqs[0] for s in seqs)       # the same numbers on every rank
sub.remove()
events.clear()
comm.allreduce(np.ones(1))
assert events == []
say(comm, "events ok")

# 8. the bucketer: the same sums as one all-reduce per gradient, buckets started in the same
#    order on every rank although rank 1 hands its gradients over in another order
shapes = {"d0/kernel": (20, 16), "d0/bias": (16,), "d1/kernel": (16, 16), "d1/bias": (16,),
          "d2/kernel": (16, 3), "d2/bias": (3,)}
forward = list(shapes.items())
bucketer = coll.GradientBucketer(comm, bucket_bytes=1100, first_bucket_bytes=200)
bucketer.start([(k, np.empty(s, np.float32)) for k, s in forward])
layout = bucketer.bucket_keys
# reverse order; a bucket closes once it holds at least its limit (12+192 >= 200 bytes, then
# 64+1024+64 >= 1100)
assert layout == [["d2/bias", "d2/kernel"], ["d1/bias", "d1/kernel", "d0/bias"], ["d0/kernel"]], \
    layout
for step in range(3):
    rng = np.random.default_rng(1000 * step + r)
    grads = {k: rng.standard_normal(s).astype(np.float32) for k, s in forward}
    order = [k for k, _ in reversed(forward)]
    if r == 1:
        order = order[::2] + order[1::2]       # a different arrival order on rank 1
    sub = coll.subscribe(events.append)
    events.clear()
    for k in order:
        bucketer.gradient_ready(k, grads[k])
    got = bucketer.finish()
    sub.remove()
    started = [(e["seq"], e["bytes"]) for e in events]
    everyone = comm.allgather_object(started)
    assert all(s == everyone[0] for s in everyone), everyone
    assert len(started) == len(layout)
    for k, _ in forward:
        want = comm.allreduce(grads[k], "sum")
        assert got[k].dtype == np.float32 and got[k].shape == shapes[k]
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-6)
        assert np.array_equal(got[k], want) or n > 2, k   # on 2 ranks a + b is one rounding
say(comm, "bucketer ok")

# 9. compression: float16 on the wire, float32 back; gradients missing on some ranks
bucketer = coll.GradientBucketer(comm, bucket_bytes=1 << 20, compression="fp16")
bucketer.start([(k, np.empty(s, np.float32)) for k, s in forward] + [("unused", np.empty(2))])
rng = np.random.default_rng(7 + r)
grads = {k: rng.standard_normal(s).astype(np.float32) for k, s in forward}
for k, _ in reversed(forward):
    if k == "d1/bias" and r == 0:
        continue                                # only the other ranks have this one
    bucketer.gradient_ready(k, grads[k])
got = bucketer.finish()
assert "unused" not in got and "d1/bias" in got
for k, _ in forward:
    mine = grads[k] if not (k == "d1/bias" and r == 0) else np.zeros(shapes[k], np.float32)
    want = comm.allreduce(mine, "sum")
    assert got[k].dtype == np.float32
    np.testing.assert_allclose(got[k], want, rtol=2e-3 * n, atol=2e-3 * n)
say(comm, "bucketer compression ok")

say(comm, "ALL OK")
