#!/usr/bin/env python3
"""Compiled NumPy code: eager NumPy, eager tnp and ``tnp.jit`` on the six workloads of the
fusion benchmark (``/work/shared/bench/fusion.py``: the same functions, inputs and timing
rules), plus the first call's cost: tracing, fusing and compiling, with Numba's disk cache cold
and warm.

Every cell is the median over ``--rounds`` of the mean time per call of a batch lasting at least
``--target-ms``; the three contenders are interleaved within each round. Results are checked
against NumPy's (``tnp.jit`` gives them bit for bit). The first-call times are measured in fresh
processes: *cold* with an empty kernel cache (``TNP_JIT_CACHE_DIR`` set to a new folder),
*warm* with the cache the cold run filled.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/compile.py \\
        --threads 1

prints a markdown table and one ``JSON {...}`` line. ``--without-numba`` measures the replay
alone (Numba made unimportable: each operation one NumPy call, no kernels), what ``tnp.jit``
does where Numba is missing, after one ``JitFallbackWarning``.

The other compilers (jax.jit, torch.compile, tf.function(jit_compile=True), a hand-written Numba
loop, numexpr) are measured beside it by the shared harness, in one run::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=<repo> <bench venv>/bin/python \
        /work/shared/bench/fusion.py --threads 1 --rounds 5 \
        --impls numpy,numexpr,numba,jax-jit,torch-compile,tf-xla,module:tnp,compile:tnp:jit

(the bench venv must have Numba: without it ``compile:tnp:jit`` is the replay alone, about
NumPy's speed; docs/compile.md, "Speed", has the figures).
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

WORKLOADS = ("gelu", "layernorm", "xent", "adam", "mandel", "smallloop")
SQ2PI = math.sqrt(2.0 / math.pi)


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(SQ2PI * (x + 0.044715 * x * x * x)))


def layernorm(xp, x, g, b):
    mu = xp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return d / xp.sqrt(var + 1e-5) * g + b


def xent(xp, logits, onehot):
    m = xp.max(logits, axis=-1, keepdims=True)
    z = logits - m
    lse = xp.log(xp.sum(xp.exp(z), axis=-1, keepdims=True))
    return -xp.mean(xp.sum((z - lse) * onehot, axis=-1))


def adam(xp, p, g, m, v):
    lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-7, 10.0
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * g * g
    mhat = m / (1.0 - b1 ** t)
    vhat = v / (1.0 - b2 ** t)
    return p - lr * mhat / (xp.sqrt(vhat) + eps), m, v


def mandel(xp, zr, zi, cr, ci):
    for _ in range(12):
        inside = zr * zr + zi * zi < 4.0
        nr = zr * zr - zi * zi + cr
        ni = 2.0 * zr * zi + ci
        zr = xp.where(inside, nr, zr)
        zi = xp.where(inside, ni, zi)
    return zr, zi


def smallloop(xp, h, w, b):
    for _ in range(64):
        h = xp.tanh(h * w + b)
    return h


FUNCS = {"gelu": gelu, "layernorm": layernorm, "xent": xent, "adam": adam, "mandel": mandel,
         "smallloop": smallloop}


def make_inputs(name, np):
    rng = np.random.default_rng(0)
    f = np.float32
    if name == "gelu":
        return (rng.standard_normal(1_000_000).astype(f),)
    if name == "layernorm":
        return (rng.standard_normal((4096, 256)).astype(f), rng.standard_normal(256).astype(f),
                rng.standard_normal(256).astype(f))
    if name == "xent":
        labels = rng.integers(0, 1000, 2048)
        onehot = np.zeros((2048, 1000), f)
        onehot[np.arange(2048), labels] = 1.0
        return (rng.standard_normal((2048, 1000)).astype(f) * 3, onehot)
    if name == "adam":
        return tuple(rng.standard_normal(1_000_000).astype(f) * s for s in (1.0, 0.1, 0.01, 0.0))
    if name == "mandel":
        ys, xs = np.mgrid[-1.5:1.5:512j, -2.0:1.0:512j]
        zero = np.zeros((512, 512), f)
        return (zero, zero.copy(), xs.astype(f), ys.astype(f))
    if name == "smallloop":
        return (rng.standard_normal(16).astype(f), rng.standard_normal(16).astype(f) * 0.5,
                rng.standard_normal(16).astype(f) * 0.1)
    raise KeyError(name)


def pin(threads, affinity=True):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(threads)
    if affinity and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, set(cpus))


def batch_time(f, args, target_s):
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f(*args)
        t = time.perf_counter() - t0
        if t >= target_s or n >= 1 << 16:
            return t / n
        n = max(n * 2, int(n * target_s / max(t, 1e-9) * 1.2))


def _tree(x, np):
    if isinstance(x, tuple):
        return tuple(_tree(e, np) for e in x)
    return np.asarray(x)


def first_call(name):
    """Run in a fresh process: the seconds of the first ``tnp.jit`` call (trace, fuse,
    compile or load the kernels, run)."""
    import numpy as np
    import tnp

    fn = FUNCS[name]
    args = tuple(tnp.asarray(a) for a in make_inputs(name, np))
    jf = tnp.jit(lambda *a: fn(tnp, *a))
    t0 = time.perf_counter()
    jf(*args)
    return time.perf_counter() - t0


def measure_first_calls(workloads):
    """Cold (empty kernel cache) and warm (the same cache, filled) first calls, each in a new
    process."""
    out = {}
    script = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(script))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as cache:
        env["TNP_JIT_CACHE_DIR"] = cache
        for w in workloads:
            row = {}
            for mode in ("cold", "warm"):
                r = subprocess.run([sys.executable, script, "--first-call", w], env=env,
                                   capture_output=True, text=True, timeout=900)
                if r.returncode != 0:
                    row[mode] = None
                    print(f"# first call of {w} ({mode}) failed:\n{r.stderr[-2000:]}")
                else:
                    row[mode] = json.loads(r.stdout.strip().splitlines()[-1])["first_call_s"]
            out[w] = row
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-affinity", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target-ms", type=float, default=200.0)
    ap.add_argument("--no-first-call", action="store_true",
                    help="skip the cold/warm first-call measurement")
    ap.add_argument("--json-out")
    ap.add_argument("--first-call", help=argparse.SUPPRESS)
    ap.add_argument("--without-numba", action="store_true",
                    help="make Numba unimportable: the replay alone, no fused kernels")
    a = ap.parse_args(argv)
    pin(a.threads, affinity=not a.no_affinity)
    if a.without_numba:
        sys.modules["numba"] = None     # import numba now raises ImportError
        a.no_first_call = True
    if a.first_call:
        print(json.dumps({"first_call_s": first_call(a.first_call)}))
        return
    import numpy as np
    import tnp

    workloads = [w for w in a.workloads.split(",") if w]
    results = {}
    print(f"# compile: numpy {np.__version__}, tnp, threads={a.threads}"
          f"{', WITHOUT Numba (no kernels)' if a.without_numba else ''}")
    for w in workloads:
        fn = FUNCS[w]
        raw = make_inputs(w, np)
        targs = tuple(tnp.asarray(x) for x in raw)
        jf = tnp.jit(lambda *args, fn=fn: fn(tnp, *args))
        contenders = {
            "numpy": (lambda *args, fn=fn: fn(np, *args), raw),
            "tnp eager": (lambda *args, fn=fn: fn(tnp, *args), targs),
            "tnp.jit": (jf, targs),
        }
        ref = _tree(fn(np, *raw), np)
        row = {}
        for name, (f, args) in contenders.items():
            got = _tree(f(*args), np)
            ok = all(np.asarray(g).tobytes() == np.asarray(e).tobytes() for g, e in
                     zip(got if isinstance(got, tuple) else (got,),
                         ref if isinstance(ref, tuple) else (ref,)))
            row[name] = {"times": [], "bit_equal": ok}
        for _ in range(a.rounds):
            for name, (f, args) in contenders.items():
                row[name]["times"].append(batch_time(f, args, a.target_ms / 1e3))
        base = statistics.median(row["numpy"]["times"])
        for name in contenders:
            t = statistics.median(row[name]["times"])
            row[name]["ms"] = t * 1e3
            row[name]["speedup"] = base / t
        lo = jf.lower(*targs)
        row["tnp.jit"]["kernels"] = len(lo.kernels)
        row["tnp.jit"]["unfused"] = lo.unfused_nodes
        results[w] = row
    firsts = {} if a.no_first_call else measure_first_calls(workloads)
    print()
    print("| workload | NumPy ms | tnp eager x NumPy | tnp.jit ms | tnp.jit x NumPy | "
          "bit-equal | kernels | first call cold s | warm s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for w, row in results.items():
        fc = firsts.get(w, {})
        cold = fc.get("cold")
        warm = fc.get("warm")
        print(f"| {w} | {row['numpy']['ms']:.3f} | {row['tnp eager']['speedup']:.2f} | "
              f"{row['tnp.jit']['ms']:.3f} | {row['tnp.jit']['speedup']:.2f} | "
              f"{'yes' if row['tnp.jit']['bit_equal'] else 'NO'} | "
              f"{row['tnp.jit']['kernels']} | "
              f"{'-' if cold is None else f'{cold:.2f}'} | "
              f"{'-' if warm is None else f'{warm:.3f}'} |")
    geo = {}
    for name in ("tnp eager", "tnp.jit"):
        sp = [results[w][name]["speedup"] for w in results]
        geo[name] = math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else float("nan")
    print(f"\ngeometric mean x NumPy: tnp eager {geo['tnp eager']:.2f}, "
          f"tnp.jit {geo['tnp.jit']:.2f}")
    data = {"results": {w: {k: {kk: vv for kk, vv in v.items() if kk != "times"}
                            for k, v in row.items()} for w, row in results.items()},
            "geomean": geo, "first_call_s": firsts, "threads": a.threads}
    line = "JSON " + json.dumps(data)
    print(line)
    if a.json_out:
        with open(a.json_out, "w") as f:
            f.write(json.dumps(data))


if __name__ == "__main__":
    main()
