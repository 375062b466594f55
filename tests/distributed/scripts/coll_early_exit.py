"""Rank 1 returns early (its process ends normally) while rank 0 goes on to another
collective: rank 0 fails at once with CollectivePeerExitError naming rank 1."""
import time

import numpy as np

from coll_common import load_collective, say

coll = load_collective()
comm = coll.get_world()
comm.allreduce(np.ones(4))
comm.barrier()
if comm.rank == 1:
    say(comm, "leaving early")
    raise SystemExit(0)
time.sleep(0.5)                       # rank 1 is gone before rank 0 gets there
say(comm, "waiting")
t0 = time.perf_counter()
try:
    comm.allreduce(np.ones(4))
except coll.CollectivePeerExitError as exc:
    say(comm, f"PEER EXIT after {time.perf_counter() - t0:.3f} s:", exc)
    raise
say(comm, "NOT REACHED")
