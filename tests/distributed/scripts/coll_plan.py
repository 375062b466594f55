"""Persistent all-reduce plans (collective/shm.py) under mpiexec.

``ops``: every op and dtype, several rounds, against the sum of every rank's data computed
here in float64 (each rank knows every rank's data: it is seeded by rank), identical bits on
every rank, results that later rounds do not overwrite, and the plan is the shared-memory one
(every rank is on this machine). ``mismatch``: ranks asking for different buffers fail at once,
naming both. ``leave``: the last rank exits after one round; the others fail naming it."""
import sys
import time

import numpy as np

from coll_common import load_collective, say

coll = load_collective()
from tnp_train.distribute.collective import shm  # noqa: E402 - after load_collective

comm = coll.get_world()
mode = sys.argv[1]
n, r = comm.size, comm.rank


def data(rank, rnd, count, dtype):
    rng = np.random.default_rng(1000 * rank + rnd)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, count).astype(dtype)
    return (rng.standard_normal(count) * 4).astype(dtype)


if mode == "ops":
    import ml_dtypes
    cases = 0
    for op in ("sum", "mean", "max", "min"):
        for dtype in (np.float32, np.float64, np.int64, np.float16, ml_dtypes.bfloat16):
            if op == "mean" and np.dtype(dtype).kind == "i":
                continue
            # 40003: over SCATTER_BYTES for every dtype (each rank sums its chunk of the shared
            # result; not a multiple of 2 or 3 ranks), the others summed whole by every rank
            counts = (7, 5000, 1, 40003)
            plan = comm.persistent_allreduce([(c, dtype) for c in counts], op)
            assert plan.shared, type(plan)
            kept = []
            for rnd in range(3):
                for i, c in enumerate(counts):
                    plan.acquire(i)
                    plan.buffer(i)[...] = data(r, rnd, c, dtype)
                    plan.start(i)
                for i, c in reversed(list(enumerate(counts))):
                    got = plan.wait(i)
                    parts = [data(p, rnd, c, dtype).astype(np.float64) for p in range(n)]
                    ref = {"sum": np.sum, "mean": np.mean, "max": np.max,
                           "min": np.min}[op](parts, axis=0)
                    # accumulated in the buffers' dtype: half a unit in the last place of the
                    # largest partial sum (|x| < 32) per addition for the 2-byte floats
                    eps = {2: np.finfo(np.float16).eps if dtype is np.float16 else 2.0 ** -7}
                    tol = n * 32 * eps[2] if np.dtype(dtype).itemsize == 2 else 1e-5
                    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
                    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-5, atol=tol)
                    every = comm.allgather_object(got.tobytes())
                    assert all(b == every[0] for b in every), (op, dtype, "bits differ")
                    kept.append((got, got.copy()))
                    cases += 1
            for got, copy in kept:          # later rounds wrote elsewhere
                assert got.tobytes() == copy.tobytes(), (op, dtype, "overwritten")
            plan.close()
    # transient results (the gradient buckets'): read-only views of the shared result, the
    # same sums
    plan = comm.persistent_allreduce([(40003, np.float32), (9, np.float32)], "sum",
                                     transient=True)
    for rnd in range(3):
        for i, c in enumerate((40003, 9)):
            plan.acquire(i)
            plan.buffer(i)[...] = data(r, rnd, c, np.float32)
            plan.start(i)
        for i, c in enumerate((40003, 9)):
            got = plan.wait(i)
            ref = np.sum([data(p, rnd, c, np.float32).astype(np.float64) for p in range(n)], 0)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
            every = comm.allgather_object(got.tobytes())
            assert all(b == every[0] for b in every), ("transient", "bits differ")
            if i == 0:
                assert not got.flags.writeable, "a shared result must be read-only"
            cases += 1
    plan.close()
    say(comm, f"plan ok: {cases} cases")
    say(comm, "ALL OK")
elif mode == "mismatch":
    t0 = time.monotonic()
    try:
        comm.persistent_allreduce([(10 + r, np.float32)], "sum")
    except coll.CollectiveMismatchError as exc:
        say(comm, f"MISMATCH {time.monotonic() - t0:.2f} {exc}")
        say(comm, "ALL OK")
    else:
        say(comm, "NO ERROR")
elif mode == "leave":
    plan = comm.persistent_allreduce([(100, np.float32)], "sum")
    for rnd in range(2):
        plan.acquire(0)
        plan.buffer(0)[...] = 1
        plan.start(0)
        plan.wait(0)
    if r == n - 1:
        say(comm, "leaving")
        sys.exit(0)
    time.sleep(0.5)
    try:
        plan.acquire(0)
        plan.start(0)
        plan.wait(0)
    except coll.CollectivePeerExitError as exc:
        say(comm, f"LEFT {exc}")
    else:
        say(comm, "NO ERROR")
