#!/usr/bin/env python3
"""All-reduce between hosts: the collective layer beside raw mpi4py over the same link.

Makes simulated hosts on this machine (``tests/distributed/_hosts.py``: a network and UTS
namespace per host joined by veth pairs through a bridge, Open MPI over TCP between them and its
shared memory inside each; needs root) and runs itself across them, ``--ranks-per-host`` ranks
on each. For each size (float32 buffers, 1 KB to 64 MB) two tables, cells the median over
repeats of the time per call (the slowest rank's), as bus bandwidth (bytes x 2(n-1)/n / time,
NCCL's convention) and the ratio layer / raw:

* between hosts: one rank per host (the hosts' lowest ranks, the ones that talk across the
  link in the hierarchical plan): ``MPICommunicator.allreduce`` (header exchange, then its ring
  or ``Iallreduce``) vs raw ``comm.Allreduce`` on the same ranks;
* the whole job: a persistent plan's round (what the gradient buckets use; hierarchical here:
  shared memory inside a host, MPI between hosts; the copy into its buffer included) vs raw
  ``COMM_WORLD.Allreduce`` (Open MPI's own choice of algorithm across the hosts).

  sudo python benchmarks/simulated_hosts.py                      # 2 hosts x 2 ranks
  sudo python benchmarks/simulated_hosts.py --hosts 3 --sizes 1K,1M,64M
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = "1K,4K,16K,64K,256K,1M,4M,16M,64M"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from allreduce import fmt_size, parse_size  # noqa: E402  (sizes as allreduce.py reads them)


def load_hosts():
    path = ROOT / "tests" / "distributed" / "_hosts.py"
    if str(path.parent) not in sys.path:      # its helpers beside it (_procs.py)
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("_tnp_sim_hosts", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def launch(args):
    hosts_mod = load_hosts()
    reason = hosts_mod.hosts_missing()
    if reason:
        sys.exit(f"simulated_hosts: {reason}")
    with hosts_mod.SimulatedHosts(args.hosts) as hosts:
        app = [sys.executable, str(Path(__file__).resolve()), "--worker"] + sys.argv[1:]
        job = hosts.mpiexec(app, ranks_per_host=args.ranks_per_host, timeout=args.timeout,
                            mpiexec_args=("--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp"))
        print("command: " + " ".join(job.command))
        print(job.stdout, end="")
        if job.returncode or job.timed_out:
            print(job.stderr, file=sys.stderr)
            return 1
        for line in job.stderr.splitlines():
            if "all-reduce plan" in line:
                print(line)
    return 0


def timed(comm, fn, repeats, inner):
    """Median over ``repeats`` of the slowest rank's seconds per call (``inner`` calls each)."""
    from mpi4py import MPI
    times = []
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        dt = (time.perf_counter() - t0) / inner
        times.append(comm.allreduce(dt, op=MPI.MAX))
    return statistics.median(times)


def table(title, n, columns, rows):
    """``rows``: (size, raw seconds, *the layer's seconds per column)."""
    print(f"\n{title} ({n} ranks): bus bandwidth GB/s (time per call), median of repeats")
    print(f"{'size':>8} {'raw Allreduce':>22}" + "".join(f" {c:>22}" for c in columns)
          + "".join(f" {c + '/raw':>14}" for c in columns))
    for size, raw, *layers in rows:
        bus = size * 2 * (n - 1) / n

        def cell(t):
            return f"{bus / t / 1e9:.3f} ({t * 1e3:.3f} ms)"
        print(f"{fmt_size(size):>8} {cell(raw):>22}" + "".join(f" {cell(t):>22}" for t in layers)
              + "".join(f" {raw / t:>13.2f}x" for t in layers))


def idle_barrier(comm):
    """A barrier that sleeps while it waits (the ranks left out of a timing stay off the
    cores)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(1e-3)


def worker(args):
    import numpy as np
    from mpi4py import MPI

    from tnp_train.distribute.collective import MPICommunicator

    world = MPI.COMM_WORLD
    layer = MPICommunicator()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    hostnames = world.allgather(MPI.Get_processor_name())
    first = {}
    for rank, name in enumerate(hostnames):
        first.setdefault(name, rank)
    leader = first[hostnames[world.rank]] == world.rank
    raw_lead = world.Split(0 if leader else MPI.UNDEFINED, world.rank)
    lead = MPICommunicator(raw_lead) if leader else None
    # the same ranks with MPI's own Iallreduce for every size (the layer's ring off)
    lead_i = MPICommunicator(raw_lead, ring_bytes=1 << 62) if leader else None
    if world.rank == 0:
        print(f"hosts: {len(first)}, ranks: {world.size} ({', '.join(sorted(first))})")

    def repeats_for(nbytes):
        return max(3, min(args.repeats, int(2e8 // max(nbytes, 1))))

    def inner_for(nbytes):
        return max(1, min(50, int(4e6 // max(nbytes, 1))))

    between, whole = [], []
    for size in sizes:
        count = size // 4
        x = np.random.default_rng(world.rank).standard_normal(count).astype(np.float32)
        out = np.empty_like(x)
        reps, inner = repeats_for(size), inner_for(size)
        # between hosts: the hosts' lowest ranks only; the others wait at the barrier below
        if leader:
            raw_t = timed(raw_lead, lambda: raw_lead.Allreduce(x, out), reps, inner)
            lay_t = timed(raw_lead, lambda: lead.allreduce(x), reps, inner)
            lay_i = timed(raw_lead, lambda: lead_i.allreduce(x), reps, inner)
            np.testing.assert_allclose(lead.allreduce(x), (raw_lead.Allreduce(x, out), out)[1],
                                       rtol=1e-5, atol=1e-5)
            between.append((size, raw_t, lay_t, lay_i))
        idle_barrier(world)
        # the whole job: the persistent plan (hierarchical across hosts) vs raw Allreduce
        plan = layer.persistent_allreduce([(count, np.float32)], "sum")

        def round_():
            plan.acquire(0)
            plan.buffer(0)[...] = x
            plan.start(0)
            return plan.wait(0)

        raw_t = timed(world, lambda: world.Allreduce(x, out), reps, inner)
        lay_t = timed(world, round_, reps, inner)
        world.Allreduce(x, out)
        np.testing.assert_allclose(round_(), out, rtol=1e-4, atol=1e-4)
        plan_name = type(plan).__name__
        plan.close()
        whole.append((size, raw_t, lay_t))
    if world.rank == 0:
        table("between hosts, one rank per host: MPICommunicator.allreduce", len(first),
              ("layer", "layer Iallreduce"), between)
        table(f"whole job: a persistent plan's round ({plan_name})", world.size,
              ("plan",), whole)
    world.Barrier()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--ranks-per-host", type=int, default=2)
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker or "OMPI_COMM_WORLD_SIZE" in os.environ:
        return worker(args)
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
