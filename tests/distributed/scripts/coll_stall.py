"""The last rank stops calling collectives (alive, asleep); the others wait in an all-reduce.
Expected: a CollectiveStallWarning naming it, then CollectiveTimeoutError naming it at
TNP_COLLECTIVE_TIMEOUT, and the job aborted (the sleeping rank too)."""
import sys
import time

import numpy as np

from coll_common import load_collective, say

coll = load_collective()
comm = coll.get_world()
mode = sys.argv[1] if len(sys.argv) > 1 else "sync"
comm.allreduce(np.ones(4))            # everyone is up
b = None
if mode == "bucketer":
    # the stall found through a bucketer's reductions, after one step on every rank (which
    # made its plan: shared memory on one machine, see collective/shm.py)
    b = coll.GradientBucketer(comm)
    b.start([("w", np.empty(1000, np.float32))])
    b.gradient_ready("w", np.ones(1000, np.float32))
    b.finish()
if comm.rank == comm.size - 1:
    say(comm, "stalling")
    time.sleep(3600)
say(comm, "waiting")
if b is not None:
    b.start([("w", np.empty(1000, np.float32))])
    b.gradient_ready("w", np.ones(1000, np.float32))
    b.finish()
else:
    comm.allreduce(np.ones(100000, np.float32))
say(comm, "NOT REACHED")
