"""A parameter-server job's basics (tests/distributed/test_ps.py): roles, Server.join, updates
from many workers at once, and a closure's error.

    mpiexec --with-ft ulfm -n 6 python ps_basics.py OUTDIR [N]

Rank 0 the chief, rank 1 the ps, ranks 2-5 four workers. The chief prints ``RESULT <json>``:
the counter after 4 closures of N ``assign_add(1.0)`` each (4 workers at once) and after 4N
closures of one each, which workers ran them, what a failing closure raised at fetch and at
join, and that scheduling goes on afterwards."""
import json
import os
import sys
import time

from ps_common import pids, start, tt

outdir = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 50
resolver, strategy, coordinator = start(outdir)
out = {"cluster": resolver.cluster_spec().as_dict(), "num_workers": coordinator.num_workers}
worker_pids = {pid for r, pid in pids(outdir, resolver.size).items() if r >= 2}

with strategy.scope():
    counter = tt.Variable(0.0, name="counter")


def add_many(n):
    for _ in range(n):
        counter.assign_add(1.0)
    return os.getpid()


t0 = time.perf_counter()
rvs = [coordinator.schedule(add_many, args=(N,)) for _ in range(4)]
coordinator.join()
out["after_concurrent"] = float(counter.numpy())
out["concurrent_pids_are_workers"] = all(rv.fetch() in worker_pids for rv in rvs)
out["concurrent_seconds"] = time.perf_counter() - t0

t0 = time.perf_counter()
rvs = [coordinator.schedule(add_many, args=(1,)) for _ in range(4 * N)]
coordinator.join()
out["closures_per_second"] = 4 * N / (time.perf_counter() - t0)
out["after_single"] = float(counter.numpy())
out["workers_used"] = sorted({a.worker for a in coordinator.attempt_log()})


def fails(i):
    if i == 3:
        raise ValueError(f"closure input {i} is bad")
    return i


rvs = [coordinator.schedule(fails, args=(i,)) for i in range(4)]
try:
    rvs[3].fetch()
except ValueError as e:
    out["fetch_error"] = str(e)
try:
    coordinator.join()
    out["join_error"] = None
except ValueError as e:
    out["join_error"] = str(e)
out["after_error"] = coordinator.schedule(fails, args=(7,)).fetch()
coordinator.join()
print("RESULT " + json.dumps(out), flush=True)
