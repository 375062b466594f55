#!/usr/bin/env python3
"""Training-step speed of tnp_train's GradientTape beside hand-written NumPy and PyTorch.

One step = forward, backward and an SGD-momentum update (v = mu*v + g; p -= lr*v) of a
784-512-512-10 ReLU MLP with softmax cross-entropy, batch 128, float32, on fixed synthetic data
and identical initial weights for every implementation:

  numpy-manual  the backward pass written by hand in NumPy (the reference: ratio 1.00)
  tnp-manual    the same hand-written code run on tnp (tnp's own per-call overhead)
  tnp-tape      tnp_train.GradientTape over the forward pass, Variables updated in place
  torch         PyTorch CPU autograd (if installed)
  autograd      HIPS autograd (if installed)

Implementations are timed round-robin in one run (each repeat cycles through them), one
thread; a cell is the median over repeats of steps/s of a batch of steps. Usage:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/autodiff.py --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SIZES = (784, 512, 512, 10)
BATCH, N_BATCHES, LR, MU = 128, 16, 0.01, 0.9


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(threads)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, set(cpus))


def make_data(seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    params = []
    for fi, fo in zip(SIZES[:-1], SIZES[1:]):
        s = np.sqrt(6.0 / (fi + fo))
        params += [rng.uniform(-s, s, (fi, fo)).astype(np.float32), np.zeros(fo, np.float32)]
    X = rng.standard_normal((BATCH * N_BATCHES, SIZES[0])).astype(np.float32)
    y = np.argmax(X @ rng.standard_normal((SIZES[0], SIZES[-1])).astype(np.float32), axis=1)
    batches = [(X[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]) for i in range(N_BATCHES)]
    return params, batches


class Manual:
    """Hand-written forward and backward on any NumPy-like module."""

    def __init__(self, xp, params, batches):
        import numpy as np

        self.xp = xp
        self.p = [xp.asarray(a.copy()) for a in params]
        self.v = [xp.zeros_like(a) for a in self.p]
        eye = np.eye(SIZES[-1], dtype=np.float32)
        self.batches = [(xp.asarray(x), xp.asarray(eye[y])) for x, y in batches]
        self.i = 0

    def step(self):
        xp = self.xp
        X, Y = self.batches[self.i % len(self.batches)]
        self.i += 1
        W1, b1, W2, b2, W3, b3 = self.p
        z1 = X @ W1 + b1
        h1 = xp.maximum(z1, 0)
        z2 = h1 @ W2 + b2
        h2 = xp.maximum(z2, 0)
        logits = h2 @ W3 + b3
        e = xp.exp(logits - logits.max(axis=1, keepdims=True))
        s = e.sum(axis=1, keepdims=True)
        dlog = (e / s - Y) / BATCH
        dz2 = (dlog @ W3.T) * (z2 > 0)
        dz1 = (dz2 @ W2.T) * (z1 > 0)
        grads = [X.T @ dz1, dz1.sum(axis=0), h1.T @ dz2, dz2.sum(axis=0), h2.T @ dlog, dlog.sum(axis=0)]
        for p, v, g in zip(self.p, self.v, grads):
            v *= MU
            v += g
            p -= LR * v

    def loss(self):
        xp = self.xp
        X, Y = self.batches[0]
        W1, b1, W2, b2, W3, b3 = self.p
        logits = xp.maximum(xp.maximum(X @ W1 + b1, 0) @ W2 + b2, 0) @ W3 + b3
        m = logits.max(axis=1, keepdims=True)
        return float(-(Y * (logits - m - xp.log(xp.exp(logits - m).sum(axis=1, keepdims=True)))).sum() / BATCH)


class Tape:
    """tnp_train.GradientTape over the forward pass; Variables updated in place."""

    def __init__(self, params, batches):
        import tnp
        import tnp_train as tt

        self.tnp, self.tt = tnp, tt
        self.p = [tt.Variable(a, name=f"p{i}") for i, a in enumerate(params)]
        self.v = [tnp.zeros_like(a) for a in params]
        self.batches = [(tnp.asarray(x), tnp.asarray(y[:, None])) for x, y in batches]
        self.i = 0

    def forward_loss(self, X, y):
        tnp, tt = self.tnp, self.tt
        W1, b1, W2, b2, W3, b3 = self.p
        h1 = tnp.maximum(X @ W1 + b1, 0)
        h2 = tnp.maximum(h1 @ W2 + b2, 0)
        logits = h2 @ W3 + b3
        z = logits - tt.stop_gradient(logits.max(axis=1, keepdims=True))
        lse = tnp.log(tnp.sum(tnp.exp(z), axis=1, keepdims=True))
        return tnp.mean(lse - tnp.take_along_axis(z, y, axis=1))

    def step(self):
        X, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        with self.tt.GradientTape() as tape:
            loss = self.forward_loss(X, y)
        grads = tape.gradient(loss, self.p)
        for p, v, g in zip(self.p, self.v, grads):
            v *= MU
            v += g
            p.assign_sub(LR * v)

    def loss(self):
        X, y = self.batches[0]
        return float(self.forward_loss(X, y))


class Torch:
    def __init__(self, params, batches):
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.p = [torch.tensor(a, requires_grad=True) for a in params]
        self.opt = torch.optim.SGD(self.p, lr=LR, momentum=MU)
        self.batches = [(torch.from_numpy(x.copy()), torch.from_numpy(y.astype("int64"))) for x, y in batches]
        self.i = 0

    def _loss(self, X, y):
        F = self.torch.nn.functional
        W1, b1, W2, b2, W3, b3 = self.p
        logits = F.relu(F.relu(X @ W1 + b1) @ W2 + b2) @ W3 + b3
        return F.cross_entropy(logits, y)

    def step(self):
        X, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        self.opt.zero_grad(set_to_none=True)
        self._loss(X, y).backward()
        self.opt.step()

    def loss(self):
        with self.torch.no_grad():
            return float(self._loss(*self.batches[0]))


class HipsAutograd:
    def __init__(self, params, batches):
        import autograd
        import autograd.numpy as anp
        import numpy as np

        eye = np.eye(SIZES[-1], dtype=np.float32)
        self.p = [a.copy() for a in params]
        self.v = [np.zeros_like(a) for a in params]
        self.batches = [(x, eye[y]) for x, y in batches]

        def loss(p, X, Y):
            W1, b1, W2, b2, W3, b3 = p
            logits = anp.maximum(anp.maximum(X @ W1 + b1, 0) @ W2 + b2, 0) @ W3 + b3
            m = anp.max(logits, axis=1, keepdims=True)
            return -anp.sum(Y * (logits - m - anp.log(anp.sum(anp.exp(logits - m), axis=1, keepdims=True)))) / BATCH

        self.lossf = loss
        self.grad = autograd.grad(loss)
        self.i = 0

    def step(self):
        X, Y = self.batches[self.i % len(self.batches)]
        self.i += 1
        for p, v, g in zip(self.p, self.v, self.grad(self.p, X, Y)):
            v *= MU
            v += g.astype(p.dtype, copy=False)
            p -= LR * v

    def loss(self):
        return float(self.lossf(self.p, *self.batches[0]))


def build(name, params, batches):
    import numpy as np

    if name == "numpy-manual":
        return Manual(np, params, batches)
    if name == "tnp-manual":
        import tnp

        return Manual(tnp, params, batches)
    if name == "tnp-tape":
        return Tape(params, batches)
    if name == "torch":
        return Torch(params, batches)
    if name == "autograd":
        return HipsAutograd(params, batches)
    raise SystemExit(f"unknown implementation {name!r}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impls", default="numpy-manual,tnp-manual,tnp-tape,torch,autograd")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10, help="steps per timed batch")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    pin(args.threads)

    params, batches = make_data(args.seed)
    impls, unavailable = {}, {}
    for name in [s.strip() for s in args.impls.split(",") if s.strip()]:
        try:
            impls[name] = build(name, params, batches)
        except ImportError as e:
            unavailable[name] = f"{type(e).__name__}: {e}"
            print(f"! {name} unavailable: {unavailable[name]}", file=sys.stderr)
    # every implementation starts from the same weights: their first losses agree
    start = {n: impl.loss() for n, impl in impls.items()}
    for impl in impls.values():
        impl.step()  # warm-up (allocator, caches)
    samples = {n: [] for n in impls}
    for _ in range(args.repeats):
        for n, impl in impls.items():
            t0 = time.perf_counter()
            for _ in range(args.steps):
                impl.step()
            samples[n].append(args.steps / (time.perf_counter() - t0))
    rate = {n: statistics.median(v) for n, v in samples.items()}
    ref = rate.get("numpy-manual")
    print(f"# autodiff: 784-512-512-10 ReLU MLP, batch {BATCH}, float32, SGD momentum, "
          f"threads={args.threads}, median of {args.repeats} x {args.steps} steps")
    print("| implementation | steps/s | ratio to numpy-manual | initial loss |")
    print("|---|---|---|---|")
    for n in impls:
        r = f"{rate[n] / ref:.2f}" if ref else "n/a"
        print(f"| {n} | {rate[n]:.1f} | {r} | {start[n]:.6f} |")
    for n, why in unavailable.items():
        print(f"| {n} | n/a | unavailable: {why} | |")
    out = {"bench": "autodiff", "steps_per_s": rate, "ratios": {n: (v / ref if ref else None) for n, v in rate.items()},
           "initial_loss": start, "unavailable": unavailable, "threads": args.threads}
    line = json.dumps(out)
    print("JSON " + line)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
