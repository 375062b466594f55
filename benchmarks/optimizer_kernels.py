#!/usr/bin/env python3
"""Update time of each tt.optimizers optimizer on one 1M-element float32 variable.

Per optimizer, one update step (the gradient fixed, the state carried over from step to step):

  fused         tt optimizer.apply_gradients: the one-pass Numba kernel (tnp_train/optimizers/kernels.py)
  numpy-inplace the same optimizer with the fused path switched off (its in-place NumPy path)
  numpy-chained the update formula written the obvious way in NumPy (a temporary per operation)
  torch         torch.optim's single-tensor implementation (foreach=False), if torch imports

One thread; implementations run round-robin; a cell is the median over repeats of the time per
step of a batch of steps. Ratios are to numpy-chained (< 1: faster). Usage:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/optimizer_kernels.py [--n 1000000] [--repeats 7]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time


def pin():
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = "1"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


# The formulas as one would write them in NumPy (new arrays for every intermediate).
def chained(name, np):
    s = {}
    b1, b2, eps, lr = 0.9, 0.999, 1e-7, 1e-3

    def sgd(w, g, t):
        m = s.get("m", 0.0)
        s["m"] = 0.9 * m - lr * g
        w += s["m"]

    def adam(w, g, t, wd=0.0):
        if wd:
            w -= w * wd * lr
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        w -= lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * s["m"] / (np.sqrt(s["v"]) + eps)

    def rmsprop(w, g, t):
        s["ms"] = 0.9 * s.get("ms", 0.0) + 0.1 * g * g
        w -= lr * g / (np.sqrt(s["ms"]) + eps)

    def adagrad(w, g, t):
        s["a"] = s.get("a", 0.1) + g * g
        w -= lr * g / (np.sqrt(s["a"]) + eps)

    def adadelta(w, g, t):
        s["a"] = 0.95 * s.get("a", 0.0) + 0.05 * g * g
        u = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(s["a"] + eps) * g
        s["u"] = 0.95 * s.get("u", 0.0) + 0.05 * u * u
        w -= lr * u

    def adamax(w, g, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(g))
        w -= lr / (1 - b1 ** t) * s["m"] / (s["u"] + eps)

    def nadam(w, g, t):
        mu_t = b1 * (1 - 0.5 * 0.96 ** (0.004 * t))
        mu_n = b1 * (1 - 0.5 * 0.96 ** (0.004 * (t + 1)))
        sched = s.get("sched", 1.0) * mu_t
        s["sched"] = sched
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        m_bar = (1 - mu_t) * g / (1 - sched) + mu_n * s["m"] / (1 - sched * mu_n)
        w -= lr * m_bar / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)

    def lion(w, g, t):
        m = s.get("m", 0.0)
        w -= 1e-4 * np.sign(0.9 * m + 0.1 * g)
        s["m"] = 0.99 * m + 0.01 * g

    return {"SGD": sgd, "Adam": adam, "AdamW": lambda w, g, t: adam(w, g, t, wd=0.004),
            "RMSprop": rmsprop, "Adagrad": adagrad, "Adadelta": adadelta, "Adamax": adamax,
            "Nadam": nadam, "Lion": lion}[name]


TT_ARGS = {"SGD": dict(learning_rate=1e-3, momentum=0.9)}
TORCH = {"SGD": ("SGD", dict(lr=1e-3, momentum=0.9)), "Adam": ("Adam", dict(eps=1e-7)),
         "AdamW": ("AdamW", dict(weight_decay=0.004, eps=1e-7)),
         "RMSprop": ("RMSprop", dict(lr=1e-3, alpha=0.9, eps=1e-7)),
         "Adagrad": ("Adagrad", dict(lr=1e-3, initial_accumulator_value=0.1, eps=1e-7)),
         "Adadelta": ("Adadelta", dict(lr=1e-3, rho=0.95, eps=1e-7)),
         "Adamax": ("Adamax", dict(lr=1e-3, eps=1e-7)), "Nadam": ("NAdam", dict(eps=1e-7))}
NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20, help="steps per timed batch")
    ap.add_argument("--only", default="", help="comma-separated optimizer names")
    args = ap.parse_args(argv)
    pin()
    import numpy as np

    import tnp
    import tnp_train as tt
    from tnp_train.optimizers import kernels

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(args.n).astype(np.float32)
    g0 = rng.standard_normal(args.n).astype(np.float32)
    names = [n for n in NAMES if not args.only or n in args.only.split(",")]
    results = {}
    print(f"# optimizer update of one {args.n}-element float32 variable, 1 thread, "
          f"median of {args.repeats} x {args.steps} steps (numpy {np.__version__}"
          + (f", torch {torch.__version__})" if torch else ", no torch)"))
    for name in names:
        impls = {}
        v_f = tt.Variable(w0)
        opt_f = getattr(tt.optimizers, name)(**TT_ARGS.get(name, {}))
        g_t = tnp.asarray(g0)
        impls["fused"] = lambda o=opt_f, v=v_f: o.apply_gradients([(g_t, v)])
        v_n = tt.Variable(w0)
        opt_n = getattr(tt.optimizers, name)(**TT_ARGS.get(name, {}))

        def inplace(o=opt_n, v=v_n):
            old = kernels.FUSED_MIN_SIZE
            kernels.FUSED_MIN_SIZE = 1 << 62
            try:
                o.apply_gradients([(g_t, v)])
            finally:
                kernels.FUSED_MIN_SIZE = old
        impls["numpy-inplace"] = inplace
        w_c, step_c, f_c = w0.copy(), [0], chained(name, np)

        def chain(w=w_c, k=step_c, f=f_c):
            k[0] += 1
            f(w, g0, k[0])
        impls["numpy-chained"] = chain
        if torch is not None and name in TORCH:
            p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
            p.grad = torch.from_numpy(g0.copy())
            cls, kw = TORCH[name]
            topt = getattr(torch.optim, cls)([p], foreach=False, **kw)
            impls["torch"] = topt.step
        for f in impls.values():   # warm up: compile / load the kernels, create the state
            f()
        times = {k: [] for k in impls}
        for _ in range(args.repeats):
            for k, f in impls.items():
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    f()
                times[k].append((time.perf_counter() - t0) / args.steps)
        med = {k: statistics.median(v) for k, v in times.items()}
        results[name] = med
        ref = med["numpy-chained"]
        cells = "  ".join(f"{k}={med[k] * 1e3:7.3f} ms ({med[k] / ref:4.2f}x)" for k in impls)
        print(f"{name:9s} {cells}", flush=True)
    print("JSON " + json.dumps({"bench": "optimizer_kernels", "n": args.n, "median_s": results}))


if __name__ == "__main__":
    main()
