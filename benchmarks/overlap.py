"""How much of the gradient all-reduce the backward pass hides (issue 13's overlap measure),
tnp beside PyTorch DDP (gloo) in one run.

The 784-512-512-10 MLP of the reference harness (batch 128 per rank, SGD with momentum, one
BLAS thread per rank), 2 ranks under ``mpiexec``. Per implementation, medians over
``--steps`` timed training steps (interleaved blocks, the slowest rank's time per step):

* **overlap on**: each gradient is handed to the all-reduce the moment the backward pass has
  it, so a bucket is reduced while the rest of the backward runs (tnp: ``minimize``'s
  ``gradient_ready``, as ``fit``; PyTorch: DDP's own hooks);
* **overlap off**: the same step with every gradient handed over after the backward pass
  (tnp: ``tape.gradient`` then ``apply_gradients``; PyTorch: the backward under
  ``no_sync()``, then one all-reduce of the flattened gradients);
* **all-reduce alone**: the same all-reduce of the gradients with no backward pass.

    hidden share = (overlap off - overlap on) / all-reduce alone

tnp's ``overlap on`` hands over the gradients as ``fit`` would but copies them into the
buckets; ``fit``'s own step, which also computes the dense gradients straight into the
buckets, is shown as ``fit's step``.

    python benchmarks/overlap.py [--steps 200] [--impls tnp,torch]

Run as root, it sets Open MPI's root variables itself; it always passes ``--oversubscribe``
and ``OMPI_MCA_mpi_yield_when_idle=1``. The workers are this same file with ``--worker``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from distributed_scaling import (  # the same model, launcher and environment
    BATCH, LR, MOMENTUM, MPIEXEC, RESULT, ROOT, SIZES, mpi_env, rank_and_size, runnable,
    tnp_mlp, torch_ddp_mlp,
)

BLOCK = 20


def _data(rank, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed + rank)
    x = rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    return x, y


def _timed(variants, steps, sync, slowest):
    """{name: median seconds per step}: blocks of BLOCK steps of each variant, interleaved
    until each has ``steps``; ``sync()`` lines the ranks up before a block, ``slowest(t)``
    is the largest of the ranks' times."""
    samples = {name: [] for name in variants}
    for fn in variants.values():          # warm-up
        for _ in range(3):
            fn()
    while min(len(s) for s in samples.values()) < steps:
        for name, fn in variants.items():
            sync()
            for _ in range(BLOCK):
                t0 = time.perf_counter()
                fn()
                samples[name].append(slowest(time.perf_counter() - t0))
    return {name: statistics.median(s[:steps]) for name, s in samples.items()}


def worker_tnp(steps):
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import tnp
    import tnp_train as tt
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = tnp_mlp(tt)
        opt = tt.optimizers.SGD(LR, momentum=MOMENTUM)
        model.compile(opt, loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    xa, ya = _data(comm.Get_rank())
    x, y = tnp.asarray(xa), tnp.asarray(ya)
    ds = tt.data.Dataset.from_tensor_slices((np.concatenate([xa] * n),
                                             np.concatenate([ya] * n))).batch(BATCH * n)
    model.fit(ds, epochs=1, verbose=0)     # builds everything, installs the bucketed aggregator
    xent = tt.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tt.losses.Reduction.NONE)
    variables = model.trainable_variables
    agg = opt.gradient_aggregator

    def loss_on(tape):
        with tape:
            per_example = xent(y, model(x, training=True))
            return tt.nn.compute_average_loss(per_example, global_batch_size=BATCH * n)

    def on():        # fit's hand-over, gradients copied into the buckets
        tape = tt.GradientTape()
        loss = loss_on(tape)
        grads = tape.gradient(loss, variables, gradient_ready=agg.gradient_ready)
        opt.apply_gradients(zip(grads, variables))

    def off():
        tape = tt.GradientTape()
        loss = loss_on(tape)
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))

    def fit_step():  # minimize: hand-over and the dense gradients written into the buckets
        tape = tt.GradientTape()
        opt.minimize(loss_on(tape), variables, tape=tape)

    tape = tt.GradientTape()
    kept = [tnp.copy(g) for g in tape.gradient(loss_on(tape), variables)]

    def alone():
        agg(list(zip(kept, variables)))

    def run(fn):
        return lambda: strategy.run(fn)

    times = _timed({"overlap off": run(off), "overlap on": run(on),
                    "fit's step": run(fit_step), "all-reduce alone": run(alone)},
                   steps, comm.Barrier, lambda t: comm.allreduce(t, op=MPI.MAX))
    return times


def worker_torch(steps):
    import torch
    import torch.distributed as dist
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    rank, size, model, opt, loss_fn = torch_ddp_mlp()
    xa, ya = _data(rank)
    x, y = torch.from_numpy(xa), torch.from_numpy(ya)
    params = list(model.parameters())

    def on():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    def off():
        opt.zero_grad(set_to_none=True)
        with model.no_sync():
            loss_fn(model(x), y).backward()
        grads = [p.grad for p in params]
        flat = _flatten_dense_tensors(grads)
        dist.all_reduce(flat)
        flat /= size
        for g, r in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(r)
        opt.step()

    on()
    kept = _flatten_dense_tensors([p.grad.clone() for p in params])

    def alone():
        flat = kept.clone()
        dist.all_reduce(flat)

    def slowest(t):
        tt = torch.tensor([t], dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        return float(tt[0])

    times = _timed({"overlap off": off, "overlap on": on, "all-reduce alone": alone},
                   steps, dist.barrier, slowest)
    dist.destroy_process_group()
    return times


def launch(impl, steps, port, timeout):
    env = mpi_env(port)
    cmd = [str(MPIEXEC), "--oversubscribe", "-n", "2", sys.executable, __file__,
           "--worker", impl, "--steps", str(steps)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise RuntimeError(f"{impl} gave no result (exit {proc.returncode}):\n"
                       f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="timed steps per variant")
    ap.add_argument("--impls", default="tnp,torch", help="comma-separated: tnp, torch")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per launch")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        times = {"tnp": worker_tnp, "torch": worker_torch}[args.worker](args.steps)
        if rank_and_size()[0] == 0:
            print(RESULT + json.dumps(times))
        return 0
    if not MPIEXEC.exists():
        print(f"no mpiexec beside {sys.executable}: pip install -e '.[mpi]'", file=sys.stderr)
        return 2
    print(f"overlap: MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, 2 ranks, 1 thread "
          f"per rank, medians over {args.steps} steps per variant; {os.cpu_count()} cores")
    port = 29600 + os.getpid() % 1000
    for impl in runnable(args.impls):
        times = launch(impl, args.steps, port, args.timeout)
        port += 1
        ms = {k: 1e3 * v for k, v in times.items()}
        hidden = (ms["overlap off"] - ms["overlap on"]) / ms["all-reduce alone"]
        cells = ", ".join(f"{k} {v:.3f}" for k, v in ms.items())
        print(f"{impl}: ms per step: {cells}; hidden share {100 * hidden:.0f}% (gate >= 50%)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
