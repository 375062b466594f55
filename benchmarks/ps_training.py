"""Parameter-server training measured (issue 14's figures), on real ``mpiexec --with-ft ulfm``
jobs of this machine.

    python benchmarks/ps_training.py [--throughput] [--counter N] [--sweep K] [--chief-loss K]
                                     [--sync]

* ``--throughput``: closures/s of the reference MLP (784-512-512-10, batch 128, SGD lr 0.01
  momentum 0.9, one BLAS thread per rank) with 1 and 2 workers (a chief and one ps beside
  them), and the ps's update rate (variable updates applied per second of its own work);
  ``--sync`` adds MultiWorkerMirroredStrategy's steps/s on the same model (1 and 2 ranks,
  ``fit``, the same batch per replica).
* ``--counter N``: 4 workers run N ``assign_add(1.0)`` each on one ps variable at once.
* ``--sweep K``: K jobs of 200 closures of the MLP on 3 workers, each killing one worker
  (SIGKILL, by PID) after a random number of finished closures: every job must finish, every
  RemoteValue resolve, every closure succeed exactly once (the lost attempts listed), the
  counter variable equal the increments the ps applied, and the loss go down.
* ``--chief-loss K``: K jobs whose chief kills itself; seconds until every process is gone.

The jobs are ``tests/distributed/scripts/ps_*.py`` and this file's ``--worker`` mode.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "distributed" / "scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
SIZES = (784, 512, 512, 10)
LR, MOMENTUM, BATCH = 0.01, 0.9, 128
RESULT = "RESULT "


def env():
    e = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    e.update(OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
             MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1",
             PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return e


def mpiexec(n, argv, timeout=600, ulfm=True):
    cmd = [str(MPIEXEC), "--oversubscribe", *(("--with-ft", "ulfm") if ulfm else ()),
           "-n", str(n), sys.executable, *map(str, argv)]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=timeout)
    return proc, t0, time.time()


def result_of(proc):
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise RuntimeError(f"no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
                       f"{proc.stderr[-3000:]}")


# ------------------------------------------------------------------ the throughput job
def worker_throughput(closures):
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import tnp_train as tt

    resolver = tt.distribute.cluster_resolver.MPIClusterResolver(num_ps=1)
    if resolver.task_type != "chief":
        tt.distribute.Server(resolver).join()
        return
    strategy = tt.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tt.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = tt.Sequential([tt.Input((SIZES[0],))]
                              + [tt.layers.Dense(s, activation="relu") for s in SIZES[1:-1]]
                              + [tt.layers.Dense(SIZES[-1])])
        optimizer = tt.optimizers.SGD(LR, momentum=MOMENTUM)
        loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)

    def dataset_fn():
        rng = np.random.default_rng(0)
        x = rng.standard_normal((BATCH * 8, SIZES[0]), dtype=np.float32)
        y = rng.integers(0, SIZES[-1], BATCH * 8).astype(np.int64)
        return tt.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).repeat()

    def step(iterator):
        x, y = next(iterator)
        with tt.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        return loss

    it = iter(coordinator.create_per_worker_dataset(dataset_fn))
    for _ in range(2 * coordinator.num_workers):      # warm-up: functions sent, kernels built
        coordinator.schedule(step, args=(it,))
    coordinator.join()
    before = coordinator.server_stats()["ps:0"]
    t0 = time.perf_counter()
    for _ in range(closures):
        coordinator.schedule(step, args=(it,))
    coordinator.join()
    seconds = time.perf_counter() - t0
    after = coordinator.server_stats()["ps:0"]
    updates = after["updates"] - before["updates"]
    print(RESULT + json.dumps(dict(
        workers=coordinator.num_workers, closures_per_s=closures / seconds,
        ps_updates=updates, ps_busy_s=after["seconds"] - before["seconds"],
        ps_updates_per_s_of_work=updates / max(after["seconds"] - before["seconds"], 1e-9),
        ps_updates_per_s_wall=updates / seconds)), flush=True)


# ------------------------------------------------------------------ the measures
def throughput(rounds, closures):
    out = {}
    for workers in (1, 2):
        rates, ps_work, ps_wall = [], [], []
        for _ in range(rounds):
            proc, _, _ = mpiexec(2 + workers, [__file__, "--worker", "throughput",
                                               "--closures", closures])
            r = result_of(proc)
            rates.append(r["closures_per_s"])
            ps_work.append(r["ps_updates_per_s_of_work"])
            ps_wall.append(r["ps_updates_per_s_wall"])
        out[workers] = (statistics.median(rates), statistics.median(ps_work),
                        statistics.median(ps_wall))
        print(f"  {workers} worker(s): {out[workers][0]:.1f} closures/s (median of {rounds}; "
              f"{rates and min(rates):.1f}-{max(rates):.1f}); the ps applies "
              f"{out[workers][1]:.0f} updates/s of its own work, {out[workers][2]:.0f}/s of "
              f"wall time (7 per closure)", flush=True)
    return out


def sync_steps(rounds):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "distributed_scaling.py"),
                           "--rounds", str(rounds), "--impls", "tnp"], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=1800)
    print(proc.stdout)
    return proc.stdout


def counter(n):
    with tempfile.TemporaryDirectory() as d:
        proc, _, _ = mpiexec(6, [SCRIPTS / "ps_basics.py", d, n])
        r = result_of(proc)
    print(f"  4 workers x {n} assign_add(1.0) at once: {r['after_concurrent']} "
          f"({r['concurrent_seconds']:.2f} s); then {4 * n} closures of one each: "
          f"{r['after_single']} ({r['closures_per_second']:.0f} closures/s)", flush=True)
    return r


def sweep(jobs, closures=200, workers=3, seed=0):
    rnd = random.Random(seed)
    rows = []
    for j in range(jobs):
        kill_at = rnd.randint(5, closures - 5)
        with tempfile.TemporaryDirectory() as d:
            proc, t0, t1 = mpiexec(2 + workers, [SCRIPTS / "ps_worker_kill.py", d, closures,
                                                 kill_at, "--mlp"], timeout=900)
        r = result_of(proc)
        attempts = r["attempts"]
        ok = collections.Counter(a[0] for a in attempts if a[4] == "succeeded")
        lost = [a for a in attempts if a[4] != "succeeded"]
        resolved = all(isinstance(v, float) for v in r["values"])
        once = ok == {i: 1 for i in range(closures)}
        counter_ok = r["counter"] == sum(r["counter_updates"].values())
        reached = sum(1 for v in r["counter_updates"].values() if v)
        first, last = (statistics.mean(r["values"][:20]), statistics.mean(r["values"][-20:])) \
            if resolved else (float("nan"), float("nan"))
        row = dict(job=j, kill_at=kill_at, exit=proc.returncode, resolved=resolved,
                   each_once=once, lost=[(a[0], a[1]) for a in lost], counter=r["counter"],
                   attempts_reaching_increment=reached, counter_ok=counter_ok,
                   iterations=r["iterations"], loss_first20=first, loss_last20=last,
                   seconds=r["seconds"], wall=t1 - t0)
        rows.append(row)
        print(f"  job {j:2d}: kill after {kill_at:3d} -> exit {proc.returncode}, resolved "
              f"{resolved}, each once {once}, lost attempts {row['lost']}, counter "
              f"{r['counter']:.0f} = applied increments {sum(r['counter_updates'].values())} "
              f"({counter_ok}), step count {r['iterations']}, loss {first:.3f} -> {last:.3f}, "
              f"{r['seconds']:.1f} s", flush=True)
    good = sum(r["exit"] == 0 and r["resolved"] and r["each_once"] and r["counter_ok"] and
               r["loss_last20"] < r["loss_first20"] for r in rows)
    print(f"  {good}/{jobs} jobs pass every check; lost attempts: "
          f"{sum(len(r['lost']) for r in rows)} in all", flush=True)
    return rows


def chief_loss(jobs):
    times = []
    for _ in range(jobs):
        with tempfile.TemporaryDirectory() as d:
            proc, t0, t1 = mpiexec(4, [SCRIPTS / "ps_chief_loss.py", d], timeout=120)
            killed = float(Path(d, "killed").read_text())
        times.append(t1 - killed)
    print(f"  every process gone {statistics.median(times):.2f} s (median; max "
          f"{max(times):.2f} s) after the chief's SIGKILL ({jobs} jobs; includes mpiexec's "
          f"own exit)", flush=True)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--closures", type=int, default=60)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--counter", type=int, default=0)
    ap.add_argument("--sweep", type=int, default=0)
    ap.add_argument("--chief-loss", type=int, default=0)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "throughput":
        worker_throughput(args.closures)
        return 0
    print(f"ps_training: {os.cpu_count()} cores; MLP {'-'.join(map(str, SIZES))}", flush=True)
    if args.throughput:
        print("throughput:")
        throughput(args.rounds, args.closures)
    if args.sync:
        print("MultiWorkerMirroredStrategy on the same model (distributed_scaling.py):")
        sync_steps(args.rounds)
    if args.counter:
        print("no lost update:")
        counter(args.counter)
    if args.sweep:
        print("worker loss:")
        sweep(args.sweep)
    if args.chief_loss:
        print("chief loss:")
        chief_loss(args.chief_loss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
