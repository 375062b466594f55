#!/usr/bin/env python3
"""All-reduce speed of the collective layer beside raw mpi4py, on 2 ranks (shared memory).

For each size (float32 buffers, 4 KB to 64 MB) the layer's ``MPICommunicator.allreduce`` (the
header exchange that makes it hang-proof, then the payload), a persistent plan's round (what the
gradient buckets use: shared memory when the ranks share a machine, see collective/shm.py; the
copy into its buffer included) and raw ``comm.Allreduce`` are timed alternately in one run; a cell is the median over repeats of the time per call (the slowest
rank's), shown as bus bandwidth (bytes x 2(n-1)/n / time, NCCL's convention) and as the ratio
layer / raw. Then the latency of a 1-element float32 all-reduce, layer minus raw.

Gates (issue #13): >= 0.9x raw bus bandwidth at every size >= 1 MB; < 10 us overhead on one
float32.

  python benchmarks/allreduce.py                 # launches itself under mpiexec -n 2
  python benchmarks/allreduce.py --explore       # + the layer's payload algorithms side by side
  python benchmarks/allreduce.py --buckets       # gradient-bucket sizes on the MLP's gradients

Under ``mpiexec`` already (``OMPI_COMM_WORLD_SIZE`` set) it runs directly. ``--explore`` is how
the layer's thresholds (``eager_bytes``, ``ring_bytes``) and ``--buckets`` how the bucketer's
default size were chosen.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
DEFAULT_SIZES = "4K,16K,64K,256K,1M,4M,16M,64M"


def parse_size(text):
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def fmt_size(n):
    for unit in ("G", "M", "K"):
        if n >= UNITS[unit] and n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]} {unit}B"
    return f"{n} B"


def relaunch(args):
    """Run this script under the venv's mpiexec with ``--ranks`` ranks."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [str(mpiexec), "--oversubscribe", "-n", str(args.ranks), sys.executable,
           str(Path(__file__).resolve())] + sys.argv[1:]
    return subprocess.call(cmd, env=env)


class Timer:
    """Times callables the same way on every rank: a barrier, ``iters`` calls, the slowest
    rank's time per call; repeats interleaved across the callables of one size."""

    def __init__(self, comm, target_s, repeats):
        self.comm, self.target_s, self.repeats = comm, target_s, repeats

    def once(self, fn, iters):
        from mpi4py import MPI
        self.comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        dt = (time.perf_counter() - t0) / iters
        return self.comm.allreduce(dt, op=MPI.MAX)

    def compare(self, fns):
        """``{name: median seconds per call}`` for the callables in ``fns``."""
        iters = {}
        for name, fn in fns.items():
            fn()  # warm up (allocations, the layer's header templates)
            per_call = self.once(fn, 1)
            iters[name] = max(1, min(100000, int(self.target_s / max(per_call, 1e-7))))
        # The same call count for every callable of a size keeps their runs comparable.
        n = min(iters.values())
        samples = {name: [] for name in fns}
        for _ in range(self.repeats):
            for name, fn in fns.items():
                samples[name].append(self.once(fn, n))
        return {name: statistics.median(s) for name, s in samples.items()}


def bench_sizes(args, comm, world, results):
    import numpy as np
    from mpi4py import MPI

    from tnp_train.distribute.collective import MPICommunicator

    n = comm.Get_size()
    layer = world
    variants = {}
    if args.explore:
        # the layer's payload algorithms, each forced (the default takes the header message up
        # to eager_bytes, the ring above it)
        variants = {
            "iallreduce": MPICommunicator(ring_bytes=1 << 62),
            "inline": MPICommunicator(eager_bytes=64 << 20),
        }
    timer = Timer(comm, args.target_ms / 1e3, args.repeats)
    rows = []
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        x = np.random.default_rng(comm.Get_rank()).standard_normal(size // 4).astype(np.float32)
        out = np.empty_like(x)
        # a persistent plan (what the gradient buckets use: shared memory when the ranks
        # share this machine), the copy into its buffer included
        plan = layer.persistent_allreduce([(x.size, x.dtype)])

        def planned(x=x, plan=plan):
            plan.acquire(0)
            plan.buffer(0)[...] = x
            plan.start(0)
            return plan.wait(0)
        fns = {"raw": lambda: comm.Allreduce(x, out, MPI.SUM),
               "layer": lambda: layer.allreduce(x), "plan": planned}
        if args.explore:
            def polled(x=x, out=out):
                req = comm.Iallreduce(x, out, MPI.SUM)
                while not req.Test():
                    pass
            fns["raw-Iallreduce"] = polled
            for name, c in variants.items():
                if name == "inline" and size > (1 << 20):
                    continue
                fns[name] = (lambda c=c: c.allreduce(x))
        times = timer.compare(fns)
        busbw = {k: size * 2 * (n - 1) / n / t / 1e9 for k, t in times.items()}
        rows.append({"bytes": size, "seconds": times, "busbw_GBps": busbw,
                     "ratio": busbw["layer"] / busbw["raw"],
                     "plan_ratio": busbw["plan"] / busbw["raw"]})
        plan.close()
    results["sizes"] = rows
    probe = layer.persistent_allreduce([(1, np.float32)])
    results["plan_kind"] = "shared memory" if probe.shared else "MPI"
    probe.close()

    one = np.ones(1, np.float32)
    one_out = np.empty_like(one)
    timer = Timer(comm, args.target_ms / 1e3, max(args.repeats, 9))
    lat = timer.compare({"raw": lambda: comm.Allreduce(one, one_out, MPI.SUM),
                         "layer": lambda: layer.allreduce(one)})
    results["latency_1xf32_us"] = {k: v * 1e6 for k, v in lat.items()}
    results["overhead_1xf32_us"] = (lat["layer"] - lat["raw"]) * 1e6


def bench_buckets(args, comm, world, results):
    """Step time of the MLP's backward pass (batch 128, one BLAS thread) with its gradients
    summed through the bucketer, for several bucket sizes; plus the backward alone and the
    backward followed by one all-reduce of everything (no overlap).

    Issue 13's overlap measure, with the default buckets (4 MB, first 1 MB): ``hidden share
    = (step with overlap off - step with overlap on) / all-reduce alone``, where "overlap off"
    hands every gradient to the same bucketer after the backward pass, "overlap on" hands each
    one over the moment it is computed (as ``fit`` does), and "all-reduce alone" is the
    bucketer's round with no backward pass at all. The "written in place" pair computes each
    gradient straight into its bucket slot (``GradientBucketer.slot``), as a dense layer's
    backward does under ``fit``; both shares are printed."""
    import numpy as np

    from tnp_train.distribute.collective import GradientBucketer

    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    batch = 128
    weights = [rng.standard_normal((a, b)).astype(np.float32) * 0.05
               for a, b in zip(sizes[:-1], sizes[1:])]
    acts = [rng.standard_normal((batch, s)).astype(np.float32) for s in sizes[:-1]]
    dout = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    keys = []
    for i, w in enumerate(weights):
        keys += [(f"k{i}", w), (f"b{i}", w[0])]

    def backward(ready, slot=None):
        d = dout
        for i in reversed(range(len(weights))):
            if slot is None:
                ready(f"b{i}", d.sum(0))
                ready(f"k{i}", acts[i].T @ d)
            else:
                ready(f"b{i}", d.sum(0, out=slot(f"b{i}")))
                ready(f"k{i}", np.matmul(acts[i].T, d, out=slot(f"k{i}")))
            if i:
                d = (d @ weights[i].T) * (acts[i] > 0)

    default = GradientBucketer(world)
    default.start(keys)
    kept = {}
    backward(lambda k, g: kept.__setitem__(k, g.copy()))

    def overlap_on():
        backward(default.gradient_ready)
        default.finish()
        default.start(keys)

    def overlap_off():
        grads = []
        backward(lambda k, g: grads.append((k, g)))
        for k, g in grads:
            default.gradient_ready(k, g)
        default.finish()
        default.start(keys)

    def in_place():
        backward(default.gradient_ready, default.slot)
        default.finish()
        default.start(keys)

    def in_place_off():
        grads = []
        backward(lambda k, g: grads.append((k, g)), default.slot)
        for k, g in grads:
            default.gradient_ready(k, g)
        default.finish()
        default.start(keys)

    def alone():
        for k, _ in reversed(keys):
            default.gradient_ready(k, kept[k])
        default.finish()
        default.start(keys)

    flat = np.concatenate([w.reshape(-1) for w in weights] + [w[0] for w in weights])

    def no_comm():
        backward(lambda k, g: None)

    def after():
        grads = []
        backward(lambda k, g: grads.append(g.reshape(-1)))
        world.allreduce(np.concatenate(grads))

    fns = {"backward only": no_comm, "one allreduce after": after,
           "default buckets, overlap off": overlap_off, "default buckets, overlap on": overlap_on,
           "written in place, overlap off": in_place_off, "written in place, overlap on": in_place,
           "default buckets, all-reduce alone": alone}
    configs = [(64 << 10, 64 << 10), (256 << 10, 256 << 10), (1 << 20, 256 << 10),
               (1 << 20, 1 << 20), (4 << 20, 1 << 20), (25 << 20, 1 << 20)]
    for bucket_bytes, first in configs:
        b = GradientBucketer(world, bucket_bytes=bucket_bytes, first_bucket_bytes=first)
        b.start(keys)

        def step(b=b):
            backward(b.gradient_ready)
            b.finish()
        fns[f"buckets {fmt_size(bucket_bytes)} (first {fmt_size(first)})"] = step
    del flat
    timer = Timer(comm, args.target_ms / 1e3, args.repeats)
    ms = results["buckets_ms"] = {k: v * 1e3 for k, v in timer.compare(fns).items()}
    default.finish()
    alone_ms = ms["default buckets, all-reduce alone"]
    results["hidden_share"] = (ms["default buckets, overlap off"]
                               - ms["default buckets, overlap on"]) / alone_ms
    results["hidden_share_in_place"] = (ms["written in place, overlap off"]
                                        - ms["written in place, overlap on"]) / alone_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--target-ms", type=float, default=150.0,
                        help="time of one timed batch of calls")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--explore", action="store_true")
    parser.add_argument("--buckets", action="store_true")
    parser.add_argument("--no-sizes", action="store_true", help="skip the size sweep")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if "OMPI_COMM_WORLD_SIZE" not in os.environ and "PMIX_RANK" not in os.environ:
        sys.exit(relaunch(args))

    from mpi4py import MPI

    from tnp_train.distribute.collective import get_world

    comm = MPI.COMM_WORLD
    world = get_world()
    results = {"ranks": comm.Get_size(), "eager_bytes": world.eager_bytes,
               "ring_bytes": world.ring_bytes}
    if not args.no_sizes:
        bench_sizes(args, comm, world, results)
    if args.buckets:
        bench_buckets(args, comm, world, results)
    if comm.Get_rank() != 0:
        return
    if "sizes" in results:
        names = list(results["sizes"][0]["busbw_GBps"])
        print(f"all-reduce, {results['ranks']} ranks, float32; bus bandwidth GB/s (median of "
              f"{args.repeats}), ratio = layer / raw, plan ratio = plan / raw (plan: "
              f"{results['plan_kind']})")
        print("| size | " + " | ".join(names) + " | ratio | plan ratio |")
        print("|---:|" + "---:|" * (len(names) + 2))
        for row in results["sizes"]:
            cells = []
            for k in names:
                cells.append(f"{row['busbw_GBps'][k]:.3f}" if k in row["busbw_GBps"] else "-")
            print(f"| {fmt_size(row['bytes'])} | " + " | ".join(cells)
                  + f" | {row['ratio']:.2f} | {row['plan_ratio']:.2f} |")
        lat = results["latency_1xf32_us"]
        print(f"1-element float32: raw {lat['raw']:.2f} us, layer {lat['layer']:.2f} us, "
              f"overhead {results['overhead_1xf32_us']:.2f} us")
    if "buckets_ms" in results:
        print("MLP backward + gradient all-reduce, ms per step (median):")
        for name, ms in results["buckets_ms"].items():
            print(f"  {name:40s} {ms:8.3f}")
        print(f"hidden share (overlap off - on) / all-reduce alone: copied "
              f"{100 * results['hidden_share']:.0f}%, written in place "
              f"{100 * results['hidden_share_in_place']:.0f}% (gate >= 50%)")
    text = json.dumps(results)
    print("JSON " + text)
    if args.json_out:
        Path(args.json_out).write_text(text)


if __name__ == "__main__":
    main()
