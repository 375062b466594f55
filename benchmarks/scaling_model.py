#!/usr/bin/env python3
"""A scaling model for ``fit`` under MultiWorkerMirroredStrategy (issue 32, item 3).

The step time on ``n`` ranks is modelled as

    T(n) = C * k(n) + X(n) + S(n)

* ``C``: one process's step time (``mpiexec -n 1``: no communication at all), measured;
* ``k(n)``: how much slower each rank computes when ``n`` ranks compute at once on this machine
  (its cores share caches and memory; ``distributed_scaling.py``'s ``ceiling``: the same fit in
  every rank, nothing exchanged), measured; 1 on a machine with a core (or a GPU) per rank;
* ``X(n)``: the exposed part of the gradient all-reduce, bucket by bucket (the bucketer's
  layout: reverse variable order, a first bucket of 1 MB, then 4 MB ones), each bucket's round
  ``a + bytes * 2(m-1)/m / B`` on the transport that carries it: shared memory inside a host
  (``a_shm``, ``B_shm``), MPI over TCP between hosts (per ring step ``a_net``, ``B_net``),
  hierarchical across several hosts (the host's shared-memory round, the ring between the
  hosts' lowest ranks, and the broadcast back inside the host), plus one small round for the
  metrics' rider. What is hidden behind the backward pass: nothing here (``overlap="none"``):
  this Open MPI has no progress thread and every rank has one core, so a round is CPU work of
  the same core that runs the backward pass (``docs/distributed.md``, "No asynchronous
  progress"; the measured hidden share is within the noise). With a progress engine
  (``overlap="pipeline"``: NCCL, Horovod's background thread), bucket ``b`` starts when the
  backward pass has made its gradients (the backward pass taken as 2/3 of ``C``, its time
  spread over the variables in proportion to their sizes) and the link carries one bucket at a
  time; only what ends after the backward pass is exposed;
* ``S(n)``: stragglers. Every step waits for the slowest rank: ``sigma * E[max of n standard
  normals]``, ``sigma`` the spread of one process's step times (1.4826 x their median absolute
  deviation), measured here.

fp16 wire compression (Horovod's ``Compression.fp16``, ``GradientBucketer(compression="fp16")``)
halves the bytes, and adds two casts per step (measured here: ``cast_s_per_byte``); its rounds
use the bandwidth measured with float16 buffers (NumPy adds float16 in software, so on a CPU
it is not twice float32's).

    python benchmarks/scaling_model.py              # the model from scaling_measured.json
    python benchmarks/scaling_model.py --measure    # measure everything again (about 15 min)

``--measure`` (root, for the simulated hosts) writes ``benchmarks/scaling_measured.json``:
plan rounds on 2-4 ranks of this machine (shared memory), on 2 and 3 simulated hosts of one
rank (MPI over TCP) and on 2 hosts x 2 ranks (hierarchical); ``fit`` throughput of the MLP on
1-4 ranks and on 2-3 simulated hosts, of the digits CNN on 1-2 ranks, with the ceilings;
the profiler's step-time breakdown of a 1-rank and a 2-rank MLP fit, with every bucket's
round. Then the tables: predicted against measured, and the predictions for 2..512 ranks.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from distributed_scaling import (  # noqa: E402  (the same models, data and launcher)
    MODELS, MPIEXEC, RESULT, mpi_env, synthetic, tnp_model,
)

MEASURED = Path(__file__).with_name("scaling_measured.json")
MB = 1 << 20
FIRST_BUCKET, BUCKET = 1 * MB, 4 * MB          # GradientBucketer's defaults
PLAN_SIZES = (16 << 10, 64 << 10, 256 << 10, 1 * MB, 4 * MB)
RANKS = (2, 4, 8, 16, 32, 64, 128, 256, 512)
PER_HOST = 8                                   # ranks per host in the predictions

# ResNet-50 (25.6 M parameters, 161 variables in Keras's ResNet50). Its compute per step is
# not measured here: a V100 trains about 390 images/s in float32 and about 1,270 images/s with
# mixed precision and XLA (NVIDIA DeepLearningExamples' ResNet-50 v1.5 TensorFlow figures; the
# second as quoted in NVIDIA/DeepLearningExamples#837); at batch 64 per GPU (Horovod's and
# tf_cnn_benchmarks' setting) that is 164 ms and 50 ms per step.
RESNET50_PARAMS = 25_557_032
# A 25 Gbit/s link (Horovod's benchmark cluster: RoCE, 25 Gbit/s): the line rate, and 10 us a
# ring step; assumptions for the comparison, not measurements
NET25_BYTES_PER_S, NET25_LATENCY_S = 25e9 / 8, 10e-6
RESNET50_STEP_S = {"fp32": 64 / 390, "amp": 64 / 1270}


# ------------------------------------------------------------------ the model
def expected_max_normal(n):
    """E[max of n independent standard normals] (0 for n = 1), by quadrature."""
    if n <= 1:
        return 0.0
    import numpy as np
    x = np.linspace(-8, 8, 8001)
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = np.cumsum(pdf) * (x[1] - x[0])
    return float(np.sum(x * n * pdf * cdf ** (n - 1)) * (x[1] - x[0]))


def bucket_sizes(var_bytes):
    """The bucketer's layout of variables of these sizes (forward order): bytes per bucket, in
    the order they are reduced (reverse variable order; the first bucket closes at 1 MB, the
    others at 4 MB), and the share of the variables (by size) whose gradients are final when
    each bucket is complete."""
    out, cur, limit = [], 0, FIRST_BUCKET
    for b in reversed(var_bytes):
        cur += b
        if cur >= limit:
            out.append(cur)
            cur, limit = 0, BUCKET
    if cur:
        out.append(cur)
    total, done, ready = sum(var_bytes), 0, []
    for b in out:
        done += b
        ready.append(done / total)
    return out, ready


def fit_line(points):
    """Least squares ``t = a + x / B`` through ``(x, t)`` points: ``(a, B)``."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(t for _, t in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (t - my) for x, t in points) / sxx
    return max(my - slope * mx, 0.0), 1.0 / slope


class Transport:
    """All-reduce round times from measured parameters (seconds, bytes, bytes/s)."""

    def __init__(self, p):
        self.p = p

    def shm(self, nbytes, m, wire="f32"):
        """One host's shared-memory round on ``m`` ranks."""
        if m <= 1:
            return 0.0
        a, bw = self.p["shm"][wire]
        return a + nbytes * 2 * (m - 1) / m / bw

    def net(self, nbytes, hosts, wire="f32"):
        """The ring between ``hosts`` ranks over MPI-TCP (one per host)."""
        if hosts <= 1:
            return 0.0
        a, bw = self.p["net"][wire]
        return 2 * (hosts - 1) * a + nbytes * 2 * (hosts - 1) / hosts / bw

    def bcast(self, nbytes, m):
        if m <= 1:
            return 0.0
        a, bw = self.p["bcast"]
        return a + nbytes / bw

    def round(self, nbytes, n, per_host, wire="f32"):
        """A bucket's round on ``n`` ranks, ``per_host`` to a host."""
        local = min(n, per_host)
        hosts = math.ceil(n / local)
        if hosts == 1:
            return self.shm(nbytes, local, wire)
        if local == 1:
            return self.net(nbytes, hosts, wire)
        return self.shm(nbytes, local, wire) + self.net(nbytes, hosts, wire) \
            + self.bcast(nbytes, local)


def step_time(model, n, transport, per_host, *, fp16=False, overlap="none", k=1.0,
              sigma=0.0, rider=True):
    """``(T(n), parts)`` for ``model`` (dict: ``compute_s``, ``var_bytes``). ``fp16``: False,
    "numpy" (half the bytes, summed at the float16 speed measured here, casts included) or
    "half" (half the bytes at float32's speed, casts free: a GPU's case)."""
    C = model["compute_s"]
    if n == 1:
        return C, {"compute": C, "exposed": 0.0, "straggle": 0.0}
    if fp16 is True:
        fp16 = "numpy"
    wire = "f16" if fp16 == "numpy" else "f32"
    buckets, ready = bucket_sizes(model["var_bytes"])
    scale = 0.5 if fp16 else 1.0
    rounds = [transport.round(b * scale, n, per_host, wire) for b in buckets]
    cast = 2 * transport.p["cast_s_per_byte"] * sum(buckets) if fp16 == "numpy" else 0.0
    small = transport.round(64, n, per_host) if rider else 0.0
    if overlap == "none":
        exposed = sum(rounds) + small + cast
    else:
        backward = C * 2 / 3
        t_bwd0 = C - backward            # forward pass first, the optimizer after: C/3 before
        link = 0.0
        for r, frac in zip(rounds, ready):
            link = max(link, t_bwd0 + backward * frac) + r
        exposed = max(0.0, link - C) + small + cast
    straggle = sigma * expected_max_normal(n)
    T = C * k + exposed + straggle
    return T, {"compute": C * k, "exposed": exposed, "straggle": straggle}


def efficiency(model, n, transport, per_host, **kw):
    T, _ = step_time(model, n, transport, per_host, **kw)
    return model["compute_s"] / T


# ------------------------------------------------------------------ parameters from the data
def parameters(data):
    """The transports' parameters fitted to the measured plan rounds."""
    p = {"shm": {}, "net": {}}
    for wire in ("f32", "f16"):
        # shared memory: the 2-rank rounds (ranks no more than cores) give a and B
        rows = data["plans"]["shm2"][wire]
        p["shm"][wire] = fit_line([(int(s) * 2 * (2 - 1) / 2, t) for s, t in rows.items()])
        # MPI-TCP between 2 simulated hosts, one rank each: 2 ring steps of latency
        rows = data["plans"]["net2"][wire]
        a, bw = fit_line([(int(s), t) for s, t in rows.items()])
        p["net"][wire] = (a / 2, bw)
    # the broadcast inside a host after the hosts' ring: one more copy of the bucket at
    # the shared-memory bandwidth, with its latency
    p["bcast"] = p["shm"]["f32"]
    p["cast_s_per_byte"] = data["cast_s_per_byte"]
    return p


def models(data):
    out = {}
    for name in ("mlp", "cnn"):
        m = data["models"][name]
        out[name] = {"compute_s": m["compute_s"], "var_bytes": m["var_bytes"],
                     "params": sum(m["var_bytes"]) // 4}
    # ResNet-50's variables: its 25.6 M parameters as 161 variables growing towards the
    # last stage (a geometric spread; only the bucket boundaries depend on it)
    import numpy as np
    w = np.geomspace(1, 400, 161)
    var = [int(x) * 4 for x in np.round(w / w.sum() * RESNET50_PARAMS)]
    for prec, step in RESNET50_STEP_S.items():
        out[f"resnet50-{prec}"] = {"compute_s": step, "var_bytes": var, "params": sum(var) // 4}
    return out


# ------------------------------------------------------------------ measuring
def run_ranks(n, args, env=None, timeout=600):
    e = mpi_env(29500 + os.getpid() % 1000)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    cmd = [str(MPIEXEC), "--oversubscribe", "-n", str(n), sys.executable, __file__] + args
    proc = subprocess.run(cmd, cwd=ROOT, env=e, capture_output=True, text=True, timeout=timeout)
    return result_of(proc.stdout, proc.stderr, proc.returncode, cmd)


def result_of(stdout, stderr, rc, cmd):
    for line in stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise RuntimeError(f"{' '.join(map(str, cmd))} gave no result (exit {rc}):\n"
                       f"{stdout[-2000:]}\n{stderr[-4000:]}")


def load_hosts():
    # simulated_hosts.py's loader (it puts _hosts.py's helpers, _procs.py, on the path)
    from simulated_hosts import load_hosts as load
    return load()


def run_hosts(hosts_mod, n_hosts, per_host, args, timeout=600):
    with hosts_mod.SimulatedHosts(n_hosts) as hosts:
        job = hosts.mpiexec([sys.executable, __file__] + args, ranks_per_host=per_host,
                            timeout=timeout,
                            mpiexec_args=("--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp"))
        return result_of(job.stdout, job.stderr, job.returncode, job.command)


def worker_plans(args):
    """Median seconds of one persistent-plan round (the copy into the buffer included) per
    size, float32 and float16 buffers of the same bytes; rank 0 prints them."""
    import numpy as np
    from mpi4py import MPI

    from tnp_train.distribute.collective import get_world

    comm, world = MPI.COMM_WORLD, get_world()
    out = {}
    for wire, dt in (("f32", np.float32), ("f16", np.float16)):
        rows = {}
        for size in PLAN_SIZES:
            count = size // np.dtype(dt).itemsize
            x = np.random.default_rng(comm.rank).standard_normal(count).astype(dt)
            plan = world.persistent_allreduce([(count, dt)], "sum")

            def one(plan=plan, x=x):
                plan.acquire(0)
                plan.buffer(0)[...] = x
                plan.start(0)
                plan.wait(0)
            for _ in range(3):
                one()
            inner = max(3, min(200, int(2e7 // size)))
            times = []
            for _ in range(args.repeats):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(inner):
                    one()
                times.append(comm.allreduce((time.perf_counter() - t0) / inner, op=MPI.MAX))
            rows[size] = statistics.median(times)
            kind = type(plan).__name__
            plan.close()
        out[wire] = rows
    if comm.rank == 0:
        print(RESULT + json.dumps({"kind": kind, "ranks": comm.size, "plans": out}))


def worker_profile(args):
    """The profiler's step-time breakdown of the MLP's fit on this job's ranks, with every
    gradient bucket's round (from the collective events): rank 0 prints them."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import tnp_train as tt
    from tnp_train.distribute.collective import events
    from tnp_train.profiler import report

    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    batch = MODELS["mlp"][2] * n
    x, y = synthetic(batch * args.steps)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = tnp_model(tt, "mlp")
    model.fit(ds, epochs=2, verbose=0)                  # warm-up: buckets laid out
    seen = []
    sub = events.subscribe(seen.append)
    logdir = args.logdir
    tt.profiler.experimental.start(logdir)
    model.fit(ds, epochs=2, verbose=0)
    tt.profiler.experimental.stop()
    sub.remove()
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()
    if MPI.COMM_WORLD.rank != 0:
        return
    rep = report.report(logdir)
    parts = {}
    for rank, w in rep["workers"].items():
        steps = w["steps"][1:]
        parts[rank] = {k: statistics.median(s[k] for s in steps)
                       for k in steps[0] if k.endswith("_ms")}
        st = np.array([s["step_ms"] for s in steps])
        parts[rank]["sigma_ms"] = float(1.4826 * np.median(abs(st - np.median(st))))
    by_bytes = {}
    for e in seen:
        rec = by_bytes.setdefault(e["bytes"], {"wait": [], "move": [], "calls": 0})
        rec["wait"].append(e["t_wait_end"] - e["t_start"])
        rec["move"].append(e["t_end"] - e["t_wait_end"])
        rec["calls"] += 1
    rounds = {b: {"calls": r["calls"], "wait_ms": 1e3 * statistics.median(r["wait"]),
                  "move_ms": 1e3 * statistics.median(r["move"])}
              for b, r in sorted(by_bytes.items())}
    print(RESULT + json.dumps({"ranks": n, "breakdown": parts, "rounds": rounds}))


def worker_fit(args):
    """The MLP's fit as distributed_scaling.py's tnp worker (any launcher)."""
    from distributed_scaling import worker_tnp
    n, rate = worker_tnp(args.steps, args.epochs, args.model)
    if int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)) == 0:
        print(RESULT + json.dumps({"ranks": n, "samples_per_s": rate}))


def var_bytes_of(name):
    sys.path.insert(0, str(ROOT))
    import tnp_train as tt
    model = tnp_model(tt, name)
    return [int(v.shape.num_elements() if hasattr(v.shape, "num_elements")
                else math.prod(v.shape)) * 4 for v in model.trainable_variables]


def cast_cost():
    """Seconds per float32 byte of one of the fp16 compression's two casts (there, back)."""
    import numpy as np
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    h = np.empty(x.size, np.float16)
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(10):
            h[...] = x
            x[...] = h
        times.append((time.perf_counter() - t0) / 10)
    return statistics.median(times) / 2 / x.nbytes


def measure(args):
    data = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "plans": {},
            "fit": [], "models": {}}
    hosts_mod = load_hosts()
    missing = hosts_mod.hosts_missing()
    print("plans ...", flush=True)
    for n in (2, 3, 4):
        r = run_ranks(n, ["--worker", "plans", "--repeats", str(args.repeats)])
        data["plans"][f"shm{n}"] = r["plans"]
        print(f"  {n} ranks, {r['kind']}: {r['plans']['f32']}", flush=True)
    if not missing:
        for name, (h, per) in {"net2": (2, 1), "net3": (3, 1), "hier2x2": (2, 2)}.items():
            r = run_hosts(hosts_mod, h, per, ["--worker", "plans", "--repeats",
                                              str(args.repeats)])
            data["plans"][name] = r["plans"]
            print(f"  {name}, {r['kind']}: {r['plans']['f32']}", flush=True)
    else:
        print(f"  no simulated hosts: {missing}")
    data["cast_s_per_byte"] = cast_cost()
    for name in ("mlp", "cnn"):
        data["models"][name] = {"var_bytes": var_bytes_of(name)}
    print("profiles ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            r = run_ranks(n, ["--worker", "profile", "--steps", "30",
                              "--logdir", str(Path(tmp) / f"p{n}")])
            data[f"profile{n}"] = r
            print(f"  {n} rank(s): {json.dumps(r)}", flush=True)
    print("fit ...", flush=True)
    fit_args = ["--steps", str(args.steps), "--epochs", str(args.epochs)]
    plan = [("mlp", "local", n) for n in (2, 3, 4)] + [("cnn", "local", 2)]
    if not missing:
        plan += [("mlp", "hosts", 2), ("mlp", "hosts", 3)]
    for model_name, where, n in plan:
        margs = fit_args + ["--model", model_name]
        one, many, ceil = [], [], []
        for r in range(args.rounds):
            one.append(run_ranks(1, ["--worker", "fit"] + margs)["samples_per_s"])
            if where == "local":
                many.append(run_ranks(n, ["--worker", "fit"] + margs)["samples_per_s"])
            else:
                many.append(run_hosts(hosts_mod, n, 1, ["--worker", "fit"] + margs)
                            ["samples_per_s"])
            ceil.append(run_ranks(n, ["--worker", "ceiling"] + margs)["samples_per_s"])
            print(f"  {model_name} {where} {n}: 1 rank {one[-1]:.0f}, {n} ranks {many[-1]:.0f}, "
                  f"ceiling {ceil[-1]:.0f} samples/s", flush=True)
        data["fit"].append({"model": model_name, "where": where, "ranks": n, "one": one,
                            "many": many, "ceiling": ceil})
    for name in ("mlp", "cnn"):
        ones = [x for f in data["fit"] if f["model"] == name for x in f["one"]]
        data["models"][name]["compute_s"] = MODELS[name][2] / statistics.median(ones)
    MEASURED.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {MEASURED}")
    return json.loads(MEASURED.read_text())        # the keys as the file has them


def worker_ceiling(args):
    from distributed_scaling import worker_ceiling as ceiling
    n, rate = ceiling(args.steps, args.epochs, args.model)
    if int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)) == 0:
        print(RESULT + json.dumps({"ranks": n, "samples_per_s": rate}))


# ------------------------------------------------------------------ the tables
def check_table(data, tr, mods):
    """Predicted against measured efficiency at every measured point."""
    sigma = data["profile1"]["breakdown"]["0"]["sigma_ms"] / 1e3
    rows = []
    for f in data["fit"]:
        m = mods[f["model"]]
        n = f["ranks"]
        m1 = statistics.median(f["one"])
        eff = statistics.median(f["many"]) / (n * m1)
        k = (n * m1) / statistics.median(f["ceiling"])     # per-rank slowdown of compute
        per_host = n if f["where"] == "local" else 1
        pred = efficiency(m, n, tr, per_host, k=k, sigma=sigma)
        rows.append((f["model"], f["where"], n, 1 / k, eff, pred, (pred - eff) / eff))
    return rows


def print_report(data):
    p = parameters(data)
    tr = Transport(p)
    mods = models(data)
    print(f"measured {data['date']} on {data['cores']} cores (benchmarks/scaling_measured.json)")
    print("\nparameters")
    for wire in ("f32", "f16"):
        a, bw = p["shm"][wire]
        an, bn = p["net"][wire]
        print(f"  {wire}: shared memory a = {a * 1e6:.0f} us, B = {bw / 1e9:.2f} GB/s; "
              f"MPI-TCP between hosts a = {an * 1e6:.0f} us per ring step, B = {bn / 1e9:.2f} GB/s")
    print(f"  fp16 casts: {p['cast_s_per_byte'] * 1e12:.0f} ps per float32 byte and cast (two casts a step)")
    for name, m in mods.items():
        b, _ = bucket_sizes(m["var_bytes"])
        print(f"  {name}: {m['params']:,} parameters, buckets "
              f"{', '.join(f'{x / MB:.2f}' for x in b)} MB, compute {m['compute_s'] * 1e3:.1f} ms")
    sigma = data["profile1"]["breakdown"]["0"]["sigma_ms"]
    print(f"  step-time spread of one process: sigma = {sigma:.2f} ms")

    print("\nthe profiler's step-time breakdown of the MLP's fit, median ms per step")
    cols = ("step", "input", "forward", "backward", "optimizer", "allreduce", "wait", "other")
    print("| ranks | rank | " + " | ".join(cols) + " |")
    print("|---:|---:|" + "---:|" * len(cols))
    for key in ("profile1", "profile2"):
        for rank, b in data[key]["breakdown"].items():
            print(f"| {data[key]['ranks']} | {rank} | "
                  + " | ".join(f"{b[c + '_ms']:.2f}" for c in cols) + " |")
    rounds = data["profile2"]["rounds"]
    print("2 ranks, the gradient buckets' rounds (median ms): "
          + "; ".join(f"{int(b) / MB:.2f} MB: {r['wait_ms']:.2f} waiting for the peer (the "
                      f"backward pass goes on), {r['move_ms']:.2f} reducing"
                      for b, r in rounds.items() if int(b) > MB // 2))

    print("\npredicted vs measured efficiency (k: the ceiling's per-rank compute rate, measured)")
    print("| model | where | ranks | ceiling | measured | predicted | error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model, where, n, ceil, eff, pred, err in check_table(data, tr, mods):
        where = "one host" if where == "local" else f"{n} simulated hosts"
        print(f"| {model} | {where} | {n} | {ceil:.2f} | {eff:.3f} | {pred:.3f} | {err:+.0%} |")

    print("\nmeasured rounds vs the transport model (ms)")
    print("| plan | bytes | measured f32 | model f32 | measured f16 | model f16 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rows in data["plans"].items():
        for s in (str(1 * MB), str(4 * MB)):
            if s not in rows["f32"]:
                continue
            cells = []
            for wire in ("f32", "f16"):
                if name.startswith("shm"):
                    model_t = tr.shm(int(s), int(name[3:]), wire)
                elif name.startswith("net"):
                    model_t = tr.net(int(s), int(name[3:]), wire)
                else:
                    model_t = (tr.shm(int(s), 2, wire) + tr.net(int(s), 2, wire)
                               + tr.bcast(int(s), 2))
                cells += [rows[wire][s] * 1e3, model_t * 1e3]
            print(f"| {name} | {int(s) // MB} MB | " + " | ".join(f"{c:.3f}" for c in cells) + " |")

    print(f"\npredicted efficiency, {PER_HOST} ranks per host (shared memory inside, MPI-TCP "
          f"between hosts), a core or GPU per rank (k = 1), sigma = 0")
    hdr = "| model | wire | overlap | " + " | ".join(map(str, RANKS)) + " |"
    print(hdr)
    print("|---|---|---|" + "---:|" * len(RANKS))
    wires = ((False, "none"), (False, "pipeline"), ("half", "none"), ("half", "pipeline"),
             ("numpy", "none"))
    label = {False: "fp32", "half": "fp16, half the bytes", "numpy": "fp16, NumPy sums"}
    for name, m in mods.items():
        for fp16, overlap in wires:
            effs = [efficiency(m, n, tr, PER_HOST, fp16=fp16, overlap=overlap) for n in RANKS]
            print(f"| {name} | {label[fp16]} | {overlap} | "
                  + " | ".join(f"{e:.2f}" for e in effs) + " |")

    # beside Horovod's setting: 4 GPUs a server, a 25 Gbit/s link between servers
    link = dict(p, net={"f32": (NET25_LATENCY_S, NET25_BYTES_PER_S)})
    print(f"\nResNet-50 beside Horovod's benchmark: 4 ranks per host, 25 Gbit/s between hosts "
          f"({NET25_BYTES_PER_S / 1e9:.2f} GB/s, {NET25_LATENCY_S * 1e6:.0f} us a ring step: "
          f"assumed, not measured), shared memory inside as measured, overlap pipeline")
    print("| model | wire | " + " | ".join(map(str, RANKS)) + " |")
    print("|---|---|" + "---:|" * len(RANKS))
    for name in ("resnet50-fp32", "resnet50-amp"):
        for fp16 in (False, "half"):
            effs = [efficiency(mods[name], n, Transport(link), 4, fp16=fp16, overlap="pipeline")
                    for n in RANKS]
            print(f"| {name} | {label[fp16]} | " + " | ".join(f"{e:.2f}" for e in effs) + " |")
    return p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", action="store_true", help="measure again (root for the hosts)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--logdir", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        {"plans": worker_plans, "profile": worker_profile, "fit": worker_fit,
         "ceiling": worker_ceiling}[args.worker](args)
        return 0
    data = measure(args) if args.measure else json.loads(MEASURED.read_text())
    print_report(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
