#!/usr/bin/env python3
"""Vectorization, side by side in one run: per-example gradients and ``tnp.vectorize``.

1. **Per-example gradients** of an MLP's cross-entropy (default: the reference MLP
   784-512-512-10, batch 128; ``--sizes``/``--batch`` to change), the gradient of every weight
   for every example:

     tnp-vmap    ``tt.vectorized_map`` of a function that runs a ``GradientTape`` on one example
                 (one vectorized program, traced once)
     tnp-loop    the same function in a Python loop over the examples, results stacked
     jax-vmap    ``jax.jit(jax.vmap(jax.grad(loss)))`` (if jax imports)
     torch-vmap  ``torch.func.vmap(torch.func.grad(loss))`` (if torch imports)

   Results are checked against each other (float32, rtol 1e-4) before timing.
2. **``tnp.vectorize``** of traceable scalar functions (``u * v + 0.5 * u - v * v`` and
   ``sin(u) * v + 0.5 * u``, written with tnp operations) on 10^6 float64 elements, beside
   ``numpy.vectorize`` of the same function and the same expression on whole NumPy arrays.

A cell is the median over ``--repeats`` of the seconds of one call (after one warm-up call,
reported apart as the first call). Run with one thread:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/vectorize.py --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
              "XLA_FLAGS"):
        os.environ[k] = (str(threads) if k != "XLA_FLAGS" else
                         "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))


def make_params(sizes, batch, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params += [(rng.standard_normal((i, o)) * np.sqrt(2.0 / i)).astype(np.float32),
                   np.zeros(o, np.float32)]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], size=batch)
    return params, x, y


def tnp_impls(params, x, y):
    import numpy as np

    import tnp
    import tnp_train as tt

    ws = [tt.Variable(p) for p in params]

    def loss_of(xi, yi):
        h = xi[None, :]
        for k in range(0, len(ws) - 2, 2):
            h = tnp.maximum(h @ ws[k] + ws[k + 1], 0.0)
        logits = h @ ws[-2] + ws[-1]
        return tt.losses.sparse_categorical_crossentropy(yi[None], logits, from_logits=True)[0]

    def grads_of(elem):
        xi, yi = elem
        with tt.GradientTape() as tape:
            loss = loss_of(xi, yi)
        return tape.gradient(loss, ws)

    tx, ty = tnp.asarray(x), tnp.asarray(y)

    def vmap():
        return [np.asarray(g) for g in tt.vectorized_map(grads_of, (tx, ty))]

    def loop():
        per = [grads_of((tx[i], ty[i])) for i in range(x.shape[0])]
        return [np.stack([np.asarray(p[k]) for p in per]) for k in range(len(ws))]

    return {"tnp-vmap": vmap, "tnp-loop": loop}


def jax_impl(params, x, y):
    import jax
    import jax.numpy as jnp
    import numpy as np

    def loss(ps, xi, yi):
        h = xi
        for k in range(0, len(ps) - 2, 2):
            h = jnp.maximum(h @ ps[k] + ps[k + 1], 0.0)
        logits = h @ ps[-2] + ps[-1]
        return jax.nn.logsumexp(logits) - logits[yi]

    f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    jp, jx, jy = [jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(y)

    def run():
        out = f(jp, jx, jy)
        jax.block_until_ready(out)
        return [np.asarray(o) for o in out]
    return run


def torch_impl(params, x, y):
    import numpy as np
    import torch
    from torch.func import grad, vmap

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    tp = [torch.from_numpy(p.copy()) for p in params]

    def loss(ps, xi, yi):
        h = xi
        for k in range(0, len(ps) - 2, 2):
            h = torch.clamp_min(h @ ps[k] + ps[k + 1], 0.0)
        logits = h @ ps[-2] + ps[-1]
        return torch.logsumexp(logits, 0) - logits.gather(0, yi.reshape(1))[0]

    f = vmap(grad(loss), in_dims=(None, 0, 0))
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def run():
        return [o.numpy() for o in f(tp, tx, ty)]
    return run


#: the scalar functions given to tnp.vectorize / numpy.vectorize, each (tnp form, NumPy form)
SCALAR_FUNCTIONS = {
    "poly": (lambda u, v: u * v + 0.5 * u - v * v, lambda u, v: u * v + 0.5 * u - v * v),
    "sin": (lambda u, v: __import__("tnp").sin(u) * v + 0.5 * u,
            lambda u, v: __import__("numpy").sin(u) * v + 0.5 * u),
}


def vectorize_impls(n, which):
    import numpy as np

    import tnp

    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    ta, tb = tnp.asarray(a), tnp.asarray(b)
    f_tnp, f_np = SCALAR_FUNCTIONS[which]
    tv = tnp.vectorize(f_tnp)
    nv = np.vectorize(f_np)
    return {"tnp.vectorize": lambda: np.asarray(tv(ta, tb)),
            "numpy.vectorize": lambda: nv(a, b),
            "numpy ufuncs": lambda: f_np(a, b)}


def timed(fn, repeats):
    import gc

    t0 = time.perf_counter()
    first_out = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first_out, first, statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="784,512,512,10")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--elements", type=int, default=10 ** 6)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loop-repeats", type=int, default=2, help="repeats of the slow loops")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    pin(args.threads)
    import numpy as np

    sizes = [int(s) for s in args.sizes.split(",")]
    params, x, y = make_params(sizes, args.batch)
    impls = tnp_impls(params, x, y)
    unavailable = {}
    for name, make in (("jax-vmap", jax_impl), ("torch-vmap", torch_impl)):
        try:
            impls[name] = make(params, x, y)
        except Exception as e:  # noqa: BLE001 - an anchor that cannot run is reported
            unavailable[name] = f"{type(e).__name__}: {str(e)[:160]}"
    res = {"per_example": {}, "vectorize": {}, "unavailable": unavailable,
           "sizes": sizes, "batch": args.batch, "elements": args.elements}
    ref = None
    print(f"# per-example gradients, MLP {args.sizes}, batch {args.batch}, "
          f"threads {args.threads}")
    print("| impl | first call s | s per call | x tnp-loop |")
    print("|---|---|---|---|")
    rows = {}
    for name, fn in impls.items():
        reps = args.loop_repeats if name.endswith("loop") else args.repeats
        try:
            out, first, med = timed(fn, reps)
        except Exception as e:  # noqa: BLE001 - an anchor that cannot run is reported
            if name.startswith("tnp"):
                raise
            unavailable[name] = f"{type(e).__name__}: {str(e)[:160]}"
            continue
        if ref is None:
            ref = out
        for o, r in zip(out, ref):
            np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5, err_msg=name)
        rows[name] = (first, med)
    for name, (first, med) in rows.items():
        print(f"| {name} | {first:.3f} | {med:.4f} | {rows['tnp-loop'][1] / med:.1f}x |")
        res["per_example"][name] = {"first_s": first, "s": med}
    for which in SCALAR_FUNCTIONS:
        print(f"\n# vectorize, {which}: u * v + 0.5 * u - v * v" if which == "poly" else
              f"\n# vectorize, {which}: sin(u) * v + 0.5 * u", f"({args.elements} float64)")
        print("| impl | first call s | s per call | x numpy.vectorize |")
        print("|---|---|---|---|")
        vrows = {}
        vref = None
        for name, fn in vectorize_impls(args.elements, which).items():
            reps = args.loop_repeats if name == "numpy.vectorize" else args.repeats
            out, first, med = timed(fn, reps)
            vref = out if vref is None else vref
            np.testing.assert_allclose(out, vref, rtol=1e-12, atol=1e-15, err_msg=name)
            vrows[name] = (first, med)
        for name, (first, med) in vrows.items():
            print(f"| {name} | {first:.3f} | {med:.4f} | "
                  f"{vrows['numpy.vectorize'][1] / med:.1f}x |")
            res["vectorize"][f"{which}/{name}"] = {"first_s": first, "s": med}
    for k, v in unavailable.items():
        print(f"! {k} unavailable: {v}", file=sys.stderr)
    print("JSON " + json.dumps(res))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
