"""Scaling of ``fit`` under MultiWorkerMirroredStrategy (issue 13's measure).

The 784-512-512-10 MLP of the reference harness (``../shared/bench/train_mlp.py``: ReLU, softmax
cross-entropy, SGD lr 0.01 momentum 0.9, float32, synthetic data), batch 128 PER REPLICA, trained
through ``model.fit``; one BLAS thread per rank. 1-rank and 2-rank ``mpiexec`` launches
alternate ``--rounds`` times (so a slow spell of a shared machine hits both alike), and

    efficiency = (global samples/s on 2 ranks) / (2 x samples/s of one process)

from the medians over rounds. The 1-rank launch goes through ``mpiexec -n 1`` too, so both sides
pay the same launcher and process setup (neither is timed: only whole epochs after a warm-up
epoch are). With ``--impls tnp,torch`` PyTorch DDP (gloo backend, the same model and optimizer,
``torch.set_num_threads(1)``) is measured the same way, if torch is installed (the ``bench``
extra). ``ceiling`` runs the same ``fit`` in every rank with no strategy and no communication:
the efficiency this machine allows when two single-threaded processes compute at once (its
two cores share caches and memory bandwidth), the bound for any data-parallel implementation.

    python benchmarks/distributed_scaling.py [--rounds 5] [--steps 30] [--epochs 3]
                                             [--impls tnp,tnp-sharded,tnp-mpi,ceiling,torch]

Run as root, this sets Open MPI's root variables itself; it always passes ``--oversubscribe``
and ``OMPI_MCA_mpi_yield_when_idle=1``. The workers are this same file with ``--worker IMPL``.
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
MPIEXEC = Path(sys.executable).parent / "mpiexec"
SIZES = (784, 512, 512, 10)
LR, MOMENTUM, BATCH = 0.01, 0.9, 128
RESULT = "RESULT "


def rank_and_size():
    return (int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)),
            int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1)))


def synthetic(n, seed=0):
    """The harness's kind of data: Gaussian inputs, uniform labels (the same on every rank)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], n).astype(np.int64)
    return x, y


def tnp_mlp(tt):
    """The reference MLP as a ``tt.Sequential`` (ReLU between the layers, logits out), made in
    the current scope; ``benchmarks/overlap.py`` uses it too."""
    return tt.Sequential([tt.Input((SIZES[0],))]
                         + [tt.layers.Dense(s, activation="relu") for s in SIZES[1:-1]]
                         + [tt.layers.Dense(SIZES[-1])])


# ------------------------------------------------------------------ workers (under mpiexec)
def worker_tnp(steps, epochs):
    sys.path.insert(0, str(ROOT))
    import tnp_train as tt

    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    global_batch = BATCH * n
    x, y = synthetic(global_batch * steps)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = tnp_mlp(tt)
        model.compile(tt.optimizers.SGD(LR, momentum=MOMENTUM),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))

    class EpochTimes(tt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times = []

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            # the epoch's logs are global values: reading them waits for every rank's step
            float(logs["loss"])
            self.times.append(time.perf_counter() - self.t0)

    timer = EpochTimes()
    model.fit(ds, epochs=epochs + 1, verbose=0, callbacks=[timer])   # epoch 0 warms up
    epoch_s = statistics.median(timer.times[1:])
    return n, global_batch * steps / epoch_s


def worker_ceiling(steps, epochs):
    """The machine's ceiling: every rank trains its own model with no strategy and no
    communication at all (batch 128 each), at the same time; rank 0's samples/s times the ranks
    is what the ranks could do together if communication cost nothing."""
    sys.path.insert(0, str(ROOT))
    import tnp_train as tt

    rank, size = rank_and_size()
    x, y = synthetic(BATCH * steps, seed=rank)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    tt.utils.set_random_seed(rank)
    model = tnp_mlp(tt)
    model.compile(tt.optimizers.SGD(LR, momentum=MOMENTUM),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1, verbose=0)                     # warm-up, as the others
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.fit(ds, epochs=1, verbose=0)
        times.append(time.perf_counter() - t0)
    return size, size * BATCH * steps / statistics.median(times)


def torch_ddp_mlp():
    """Join this rank's gloo process group and make the MLP (ReLU between the layers) in
    ``DistributedDataParallel``, with its SGD-with-momentum optimizer and loss:
    ``(rank, size, model, opt, loss_fn)``. ``benchmarks/overlap.py`` uses it too."""
    import torch
    import torch.distributed as dist

    rank, size = rank_and_size()
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(SIZES) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return rank, size, model, opt, torch.nn.CrossEntropyLoss()


def worker_torch(steps, epochs):
    import torch
    import torch.distributed as dist

    rank, size, model, opt, loss_fn = torch_ddp_mlp()
    x, y = synthetic(BATCH * size * steps)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    times = []
    for epoch in range(epochs + 1):
        t0 = time.perf_counter()
        for s in range(steps):
            lo = (s * size + rank) * BATCH          # this rank's part of global batch s
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[lo:lo + BATCH]), y[lo:lo + BATCH])
            loss.backward()
            opt.step()
        dist.all_reduce(loss.detach())               # every rank's epoch is over
        times.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    return size, BATCH * size * steps / statistics.median(times[1:])


# ------------------------------------------------------------------ the launcher
def runnable(impls):
    """The implementations named in ``impls`` (comma-separated) that can run here: torch only
    where it is installed (else a line says it is skipped)."""
    out = []
    for impl in [s.strip() for s in impls.split(",") if s.strip()]:
        if impl == "torch":
            try:
                import torch  # noqa: F401
            except ImportError:
                print("torch: not installed (pip install -e '.[bench]'), skipped")
                continue
        out.append(impl)
    return out


def mpi_env(port):
    """The environment of a launch: Open MPI's root variables when run as root, yielding
    while idle, one thread per rank, ``MASTER_PORT`` for PyTorch's process group."""
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1", MASTER_PORT=str(port))
    return env


def launch(impl, n, steps, epochs, port, timeout):
    env = mpi_env(port)
    if impl == "tnp-mpi":        # the same trainer with every gradient round through MPI
        env["TNP_COLLECTIVE_SHM"] = "0"
    if impl == "tnp-sharded":    # each rank updating its part of weights the ranks share
        env["TNP_SHARDED_UPDATE"] = "1"
    worker = "tnp" if impl in ("tnp-mpi", "tnp-sharded") else impl
    cmd = [str(MPIEXEC), "--oversubscribe", "-n", str(n), sys.executable, __file__,
           "--worker", worker, "--steps", str(steps), "--epochs", str(epochs)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])["samples_per_s"]
    raise RuntimeError(f"{impl} on {n} rank(s) gave no result (exit {proc.returncode}):\n"
                       f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="1-rank/2-rank launch pairs per impl")
    ap.add_argument("--steps", type=int, default=30, help="global batches per epoch")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs per launch (after one warm-up)")
    ap.add_argument("--impls", default="tnp,ceiling,torch",
                    help="comma-separated: tnp, tnp-sharded (TNP_SHARDED_UPDATE=1: each rank "
                         "updates its part of shared weights), tnp-mpi (gradients through MPI, not shared memory), torch, "
                         "ceiling (no communication at all)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per launch")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        fn = {"tnp": worker_tnp, "torch": worker_torch, "ceiling": worker_ceiling}[args.worker]
        n, rate = fn(args.steps, args.epochs)
        if rank_and_size()[0] == 0:
            print(RESULT + json.dumps(dict(impl=args.worker, ranks=n, samples_per_s=rate)))
        return 0

    if not MPIEXEC.exists():
        print(f"no mpiexec beside {sys.executable}: pip install -e '.[mpi]'", file=sys.stderr)
        return 2
    print(f"distributed_scaling: MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per replica, fit, "
          f"1 thread per rank, {args.rounds} alternated 1-/2-rank rounds, {args.steps} steps x "
          f"{args.epochs} timed epochs per launch; {os.cpu_count()} cores")
    port = 29500 + os.getpid() % 1000
    for impl in runnable(args.impls):
        one, two = [], []
        for r in range(args.rounds):
            one.append(launch(impl, 1, args.steps, args.epochs, port, args.timeout))
            port += 1
            two.append(launch(impl, 2, args.steps, args.epochs, port, args.timeout))
            port += 1
            print(f"  {impl} round {r}: 1 rank {one[-1]:8.0f} samples/s, 2 ranks {two[-1]:8.0f} "
                  f"samples/s (efficiency {two[-1] / (2 * one[-1]):.2f})", flush=True)
        m1, m2 = statistics.median(one), statistics.median(two)
        print(f"{impl}: median 1 rank {m1:.0f} samples/s, 2 ranks {m2:.0f} samples/s, "
              f"efficiency {m2 / (2 * m1):.3f} (gate >= 0.80, aim >= 0.90)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
