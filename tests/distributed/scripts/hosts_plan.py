"""The persistent all-reduce of a job whose ranks sit on several hosts (run by
``test_simulated_hosts.py`` under simulated hosts): the plan is the hierarchical one, and every
round of every op gives every rank the same bits, equal to the sums NumPy computes from every
rank's inputs, whatever order the rounds are polled and waited in.

Usage: ``mpiexec ... python hosts_plan.py`` on several hosts, more than one rank on some.
"""
import hashlib

import numpy as np

from tnp_train.distribute.collective import MPICommunicator

SPECS = [(10, np.float32), (40000, np.float64), (3, np.int64), (70000, np.float32)]


def inputs(rank, rnd, i):
    count, dtype = SPECS[i]
    rng = np.random.default_rng(1000 * rnd + 10 * rank + i)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, count).astype(dtype)
    return rng.standard_normal(count).astype(dtype)


def main():
    comm = MPICommunicator()
    for op in ("sum", "mean", "max"):
        plan = comm.persistent_allreduce(SPECS, op)
        assert type(plan).__name__ == "HierarchicalAllreduce", type(plan)
        for rnd in range(4):
            order = list(range(len(SPECS)))
            for i in order:
                plan.acquire(i)
                plan.buffer(i)[...] = inputs(comm.rank, rnd, i)
                plan.start(i)
            for i in reversed(order):      # polled out of start order: no effect on matching
                plan.test(i)
            waits = order if rnd % 2 else list(reversed(order))
            got = {i: plan.wait(i) for i in waits}
            for i in order:
                everyone = np.stack([inputs(r, rnd, i) for r in range(comm.size)])
                if op == "max":
                    want = everyone.max(axis=0)
                else:
                    want = everyone.sum(axis=0)
                    if op == "mean":
                        # integers truncate toward zero, as TF's MEAN does
                        want = want / comm.size if want.dtype.kind == "f" else \
                            np.trunc(want / comm.size)
                np.testing.assert_allclose(got[i], want.astype(got[i].dtype), rtol=1e-5,
                                           atol=1e-5, err_msg=f"{op} round {rnd} buffer {i}")
                digest = hashlib.sha1(np.ascontiguousarray(got[i]).tobytes()).hexdigest()
                digests = comm.allgather_object(digest)
                assert len(set(digests)) == 1, (op, rnd, i, digests)
        plan.close()
    comm.barrier()
    print(f"[rank {comm.rank}] PLAN OK", flush=True)


if __name__ == "__main__":
    main()
