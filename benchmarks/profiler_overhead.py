#!/usr/bin/env python3
"""What the profiler costs on the reference MLP ``fit`` (784-512-512-10, ReLU, batch 128, SGD
with momentum, 32 batches per epoch; the model of /work/shared/bench/train_mlp.py; ``--sizes``
and ``--batch`` change it).

Modes, timed round-robin in one process (``--rounds`` rounds, the order turning each round;
each round ``--epochs`` epochs per mode):

  off       no profiler (the instrumentation's cost when nothing records)
  level1    ProfilerOptions(host_tracer_level=1): steps only
  level2    the default options (host_tracer_level=2)
  level3    host_tracer_level=3: every tnp operation too

A cell is the median over rounds of the step time (the ``fit`` call's time / its steps; ``start``
before and ``stop`` after it are not timed, as they happen once per capture), in wall time and
in this process's CPU time (steadier when other jobs share the cores). Trace bytes per
step: the worker's ``.trace.json.gz`` (and its JSON uncompressed) over the steps it holds.
One thread, pinned; run with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/profiler_overhead.py
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import statistics
import sys
import tempfile
import time


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(threads)
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(cores[:threads]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="off,level2,level3")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2, help="epochs of --batches steps per cell")
    ap.add_argument("--sizes", default="784,512,512,10",
                    help="the MLP's layer sizes; a tiny one (4,4,4,2 with --batch 4) shows the "
                         "profiler's absolute cost per step with little else in the step")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    pin(args.threads)

    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import tnp_train as tt

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rng = np.random.default_rng(0)
    sizes, batch = tuple(int(s) for s in args.sizes.split(",")), args.batch
    x = rng.standard_normal((batch * args.batches, sizes[0])).astype(np.float32)
    y = np.argmax(x @ rng.standard_normal((sizes[0], sizes[-1])).astype(np.float32), axis=1)
    model = tt.Sequential([tt.Input((sizes[0],))]
                          + [tt.layers.Dense(n, activation="relu") for n in sizes[1:-1]]
                          + [tt.layers.Dense(sizes[-1])])
    model.compile(optimizer=tt.optimizers.SGD(0.01, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)       # warm-up

    levels = {"level1": 1, "level2": 2, "level3": 3}
    step_ms = {m: [] for m in modes}
    cpu_ms = {m: [] for m in modes}         # CPU time: steadier than wall time on a busy host
    trace_bytes = {m: [] for m in modes}
    json_bytes = {m: [] for m in modes}
    work = tempfile.mkdtemp(prefix="tnp-profiler-bench-")
    for r in range(args.rounds):
        # the order turns each round, so no mode always follows another's trace writing
        for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
            if mode != "off":
                opts = tt.profiler.experimental.ProfilerOptions(host_tracer_level=levels[mode])
                tt.profiler.experimental.start(os.path.join(work, f"{mode}-{r}"), opts)
            c0, t0 = time.process_time(), time.perf_counter()
            model.fit(x, y, batch_size=batch, epochs=args.epochs, shuffle=False, verbose=0)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            step_ms[mode].append(dt * 1e3 / (args.batches * args.epochs))
            cpu_ms[mode].append(dc * 1e3 / (args.batches * args.epochs))
            if mode != "off":
                run = tt.profiler.experimental.stop()
                (path,) = [p for p in glob.glob(os.path.join(run, "*.trace.json.gz"))
                           if not os.path.basename(p).startswith("merged.")]
                with gzip.open(path, "rb") as f:
                    raw = f.read()
                steps = json.loads(raw)["metadata"]["steps"]
                trace_bytes[mode].append(os.path.getsize(path) / steps)
                json_bytes[mode].append(len(raw) / steps)

    med = {m: statistics.median(v) for m, v in step_ms.items()}
    cpu = {m: statistics.median(v) for m, v in cpu_ms.items()}
    base = med.get("off")
    print(f"MLP {'-'.join(map(str, sizes))} fit, batch {batch}, {args.batches} steps/epoch, "
          f"{args.epochs} epoch(s) per cell, {args.threads} thread(s), {args.rounds} rounds "
          "round-robin")
    print("| mode | median ms/step | vs off | CPU ms/step | vs off | trace bytes/step (gz) "
          "| JSON bytes/step |")
    print("|---|---|---|---|---|---|---|")
    for m in modes:
        ratio = f"{med[m] / base - 1:+.1%}" if base else "-"
        cratio = f"{cpu[m] / cpu['off'] - 1:+.1%}" if base else "-"
        tb = f"{statistics.median(trace_bytes[m]):.0f}" if trace_bytes[m] else "-"
        jb = f"{statistics.median(json_bytes[m]):.0f}" if json_bytes[m] else "-"
        print(f"| {m} | {med[m]:.3f} | {ratio} | {cpu[m]:.3f} | {cratio} | {tb} | {jb} |")
    out = {"median_ms_per_step": med, "rounds_ms_per_step": step_ms,
           "median_cpu_ms_per_step": cpu, "rounds_cpu_ms_per_step": cpu_ms,
           "trace_gz_bytes_per_step": {m: statistics.median(v) for m, v in trace_bytes.items()
                                       if v},
           "trace_json_bytes_per_step": {m: statistics.median(v) for m, v in json_bytes.items()
                                         if v}}
    print("JSON " + json.dumps(out))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
