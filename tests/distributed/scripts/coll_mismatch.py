"""Ranks calling a collective with different arguments: every rank raises
CollectiveMismatchError at once, naming each rank's call, and the job stays in step (the next
collective works). Prints ``MISMATCH <case> <seconds> <message>`` and ``ALL OK``."""
import time

import numpy as np

from coll_common import load_collective, say

coll = load_collective()
comm = coll.get_world()
r = comm.rank
big = comm.eager_bytes // 4 + 10     # also with payloads too large to ride in the header

cases = {
    "shape": lambda: comm.allreduce(np.ones(3 if r == 0 else 4, np.float32)),
    "dtype": lambda: comm.allreduce(np.ones(3, np.float32 if r == 0 else np.float64)),
    "op": lambda: comm.allreduce(np.ones(3, np.float32), "sum" if r == 0 else "max"),
    "kind": lambda: (comm.allreduce(np.ones(3, np.float32)) if r == 0
                     else comm.broadcast(np.ones(3, np.float32))),
    "large": lambda: comm.allreduce(np.ones((big, 2) if r == 0 else (big, 3), np.float32)),
    "allgather": lambda: comm.allgather(np.ones((2, 5 if r == 0 else 6), np.int64)),
    "root": lambda: comm.broadcast(np.ones(2), root=0 if r == 0 else 1),
}
# both signatures seen before on every rank: the mismatch meets the fast path of small
# all-reduces (persistent requests) on both sides
for size in (5, 6):
    comm.allreduce(np.ones(size, np.float32))
cases["seen"] = lambda: comm.allreduce(np.ones(5 if r == 0 else 6, np.float32))

for name, call in cases.items():
    t0 = time.perf_counter()
    try:
        call()
    except coll.CollectiveMismatchError as exc:
        say(comm, "MISMATCH", name, f"{time.perf_counter() - t0:.3f}", exc)
    else:
        raise AssertionError(f"{name}: no error")
    # the ranks are still in step: the next collective works
    assert np.array_equal(comm.allreduce(np.arange(3.0)), np.arange(3.0) * comm.size)
say(comm, "ALL OK")
