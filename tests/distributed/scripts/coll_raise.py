"""Rank 1 raises while rank 0 waits in a collective: the whole job ends at once (the uncaught
exception aborts it), not after the collective timeout and not stuck in MPI_Finalize."""
import numpy as np

from coll_common import load_collective, say

coll = load_collective()
comm = coll.get_world()
comm.allreduce(np.ones(4))
if comm.rank == 1:
    raise RuntimeError("boom on rank 1")
say(comm, "waiting")
comm.allreduce(np.ones(4))
say(comm, "NOT REACHED")
