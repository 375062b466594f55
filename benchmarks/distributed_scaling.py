"""Scaling of ``fit`` under MultiWorkerMirroredStrategy (issue 13's measure).

The 784-512-512-10 MLP of the reference harness (``../shared/bench/train_mlp.py``: ReLU, softmax
cross-entropy, SGD lr 0.01 momentum 0.9, float32, synthetic data), batch 128 PER REPLICA, trained
through ``model.fit``; one BLAS thread per rank. ``--model cnn`` trains the digits CNN of
``examples/digits_cnn.py`` instead (8x8x1 synthetic images, Adam 2e-3 as the example, batch 32
per replica). 1-rank and N-rank ``mpiexec`` launches (N from ``--ranks``, 2 by default)
alternate ``--rounds`` times (so a slow spell of a shared machine hits both alike), and

    efficiency = (global samples/s on N ranks) / (N x samples/s of one process)

from the medians over rounds. The 1-rank launch goes through ``mpiexec -n 1`` too, so both sides
pay the same launcher and process setup (neither is timed: only whole epochs after a warm-up
epoch are). ``tnp`` runs ``fit``'s eager step (``compile(run_eagerly=True)``), ``tnp-compiled``
its default, compiled step (the gradients' hand-over to the buckets and the optimizer's step
effects of the compiled program). With ``--impls tnp,torch`` PyTorch DDP (gloo backend, the same
model and optimizer, ``torch.set_num_threads(1)``) is measured the same way, if torch is
installed (the ``bench`` extra) or with ``--torch-python`` (a Python that has it: the torch
workers run there, under this venv's mpiexec). ``ceiling`` runs the same (compiled) ``fit`` in
every rank with no strategy and no communication:
the efficiency this machine allows when two single-threaded processes compute at once (its
two cores share caches and memory bandwidth), the bound for any data-parallel implementation.

    python benchmarks/distributed_scaling.py [--rounds 5] [--steps 30] [--epochs 3]
                                             [--impls tnp,tnp-compiled,tnp-sharded,tnp-mpi,
                                                      ceiling,torch] [--torch-python PY]
                                             [--model mlp|cnn] [--ranks 2,3,4] [--json-out F]

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


def synthetic(n, seed=0, model="mlp"):
    """The harness's kind of data: Gaussian inputs, uniform labels (the same on every rank)."""
    import numpy as np
    shape, classes, _ = MODELS[model]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n,) + shape, dtype=np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    return x, y


# --model: (input shape, number of classes, batch per replica)
MODELS = {"mlp": ((SIZES[0],), SIZES[-1], BATCH), "cnn": ((8, 8, 1), 10, 32)}


def tnp_model(tt, name, eager=False):
    """The named benchmark model, compiled (``eager``: with ``run_eagerly=True``), made in the
    current scope."""
    if name == "cnn":
        sys.path.insert(0, str(ROOT / "examples"))
        from digits_cnn import build_model
        model = build_model()
        model.compile(tt.optimizers.Adam(2e-3),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=eager)
        return model
    model = tnp_mlp(tt)
    model.compile(tt.optimizers.SGD(LR, momentum=MOMENTUM),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=eager)
    return model


def tnp_mlp(tt):
    """The reference MLP as a ``tt.Sequential`` (ReLU between the layers, logits out), made in
    the current scope; ``benchmarks/overlap.py`` uses it too."""
    return tt.Sequential([tt.Input((SIZES[0],))]
                         + [tt.layers.Dense(s, activation="relu") for s in SIZES[1:-1]]
                         + [tt.layers.Dense(SIZES[-1])])


# ------------------------------------------------------------------ workers (under mpiexec)
def worker_tnp_compiled(steps, epochs, model_name="mlp"):
    return worker_tnp(steps, epochs, model_name, eager=False)


def worker_tnp(steps, epochs, model_name="mlp", eager=True):
    sys.path.insert(0, str(ROOT))
    import tnp_train as tt

    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    global_batch = MODELS[model_name][2] * n
    x, y = synthetic(global_batch * steps, model=model_name)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = tnp_model(tt, model_name, eager=eager)

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
    if not eager and model.step_compilation.get("train") != "compiled":
        raise SystemExit(f"tnp-compiled: the step did not compile ({model.step_compilation})")
    epoch_s = statistics.median(timer.times[1:])
    return n, global_batch * steps / epoch_s


def worker_ceiling(steps, epochs, model_name="mlp"):
    """The machine's ceiling: every rank trains its own model with no strategy and no
    communication at all (batch 128 each), at the same time; rank 0's samples/s times the ranks
    is what the ranks could do together if communication cost nothing."""
    sys.path.insert(0, str(ROOT))
    import tnp_train as tt

    rank, size = rank_and_size()
    batch = MODELS[model_name][2]
    x, y = synthetic(batch * steps, seed=rank, model=model_name)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    tt.utils.set_random_seed(rank)
    model = tnp_model(tt, model_name)
    model.fit(ds, epochs=1, verbose=0)                     # warm-up, as the others
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.fit(ds, epochs=1, verbose=0)
        times.append(time.perf_counter() - t0)
    return size, size * batch * steps / statistics.median(times)


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


def worker_torch(steps, epochs, model_name="mlp"):
    if model_name != "mlp":
        raise SystemExit("the torch worker trains the MLP only")
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
def runnable(impls, torch_python=None):
    """The implementations named in ``impls`` (comma-separated) that can run here: torch only
    where it is installed or ``torch_python`` is given (else a line says it is skipped)."""
    out = []
    for impl in [s.strip() for s in impls.split(",") if s.strip()]:
        if impl == "torch" and not torch_python:
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


def launch(impl, n, steps, epochs, port, timeout, model="mlp", torch_python=None):
    env = mpi_env(port)
    if impl == "tnp-mpi":        # the same trainer with every gradient round through MPI
        env["TNP_COLLECTIVE_SHM"] = "0"
    if impl == "tnp-sharded":    # each rank updating its part of weights the ranks share
        env["TNP_SHARDED_UPDATE"] = "1"
    worker = "tnp" if impl in ("tnp-mpi", "tnp-sharded") else impl
    python = torch_python if impl == "torch" and torch_python else sys.executable
    cmd = [str(MPIEXEC), "--oversubscribe", "-n", str(n), python, __file__,
           "--worker", worker, "--steps", str(steps), "--epochs", str(epochs), "--model", model]
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
    ap.add_argument("--impls", default="tnp,tnp-compiled,ceiling,torch",
                    help="comma-separated: tnp (the eager step), tnp-compiled (fit's default, "
                         "compiled step), tnp-sharded (TNP_SHARDED_UPDATE=1: each rank "
                         "updates its part of shared weights), tnp-mpi (gradients through MPI, not shared memory), torch, "
                         "ceiling (no communication at all)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per launch")
    ap.add_argument("--model", default="mlp", choices=sorted(MODELS),
                    help="mlp (784-512-512-10, batch 128) or cnn (examples/digits_cnn.py, batch 32)")
    ap.add_argument("--ranks", default="2", help="comma-separated rank counts to compare with 1")
    ap.add_argument("--torch-python", default=None,
                    help="a Python with torch installed, for the torch workers")
    ap.add_argument("--json-out", default=None, help="also write every launch's figures here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        fn = {"tnp": worker_tnp, "tnp-compiled": worker_tnp_compiled, "torch": worker_torch,
              "ceiling": worker_ceiling}[args.worker]
        n, rate = fn(args.steps, args.epochs, args.model)
        if rank_and_size()[0] == 0:
            print(RESULT + json.dumps(dict(impl=args.worker, ranks=n, samples_per_s=rate)))
        return 0

    if not MPIEXEC.exists():
        print(f"no mpiexec beside {sys.executable}: pip install -e '.[mpi]'", file=sys.stderr)
        return 2
    what = (f"MLP {'-'.join(map(str, SIZES))}" if args.model == "mlp"
            else "digits CNN (examples/digits_cnn.py)")
    ranks = [int(r) for r in args.ranks.split(",")]
    print(f"distributed_scaling: {what}, batch {MODELS[args.model][2]} per replica, fit, "
          f"1 thread per rank, {args.rounds} alternated 1-/N-rank rounds (N = {args.ranks}), "
          f"{args.steps} steps x {args.epochs} timed epochs per launch; {os.cpu_count()} cores")
    port = 29500 + os.getpid() % 1000
    out = []
    for impl in runnable(args.impls, args.torch_python):
        for n in ranks:
            one, many = [], []
            for r in range(args.rounds):
                one.append(launch(impl, 1, args.steps, args.epochs, port, args.timeout,
                                  args.model, args.torch_python))
                port += 1
                many.append(launch(impl, n, args.steps, args.epochs, port, args.timeout,
                                   args.model, args.torch_python))
                port += 1
                print(f"  {impl} round {r}: 1 rank {one[-1]:8.0f} samples/s, {n} ranks "
                      f"{many[-1]:8.0f} samples/s (efficiency {many[-1] / (n * one[-1]):.2f})",
                      flush=True)
            m1, mn = statistics.median(one), statistics.median(many)
            print(f"{impl}: median 1 rank {m1:.0f} samples/s, {n} ranks {mn:.0f} samples/s, "
                  f"efficiency {mn / (n * m1):.3f} (gate >= 0.80, aim >= 0.90)")
            out.append(dict(impl=impl, model=args.model, ranks=n, one=one, many=many,
                            efficiency=mn / (n * m1)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
