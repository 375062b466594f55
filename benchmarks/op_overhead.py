#!/usr/bin/env python3
"""Per-op latency of tnp beside NumPy and PyTorch, on small and large float32 inputs.

Thirteen everyday operations (``a+b``, ``a*b``, ``exp``, ``sum``, ``mean(axis=0)``, ``matmul``,
``reshape+.T``, ``a[1:5]``, ``a[[0,2,4]]``, ``a[a>0]``, ``where``, ``concatenate``,
``astype(float64)``) are timed on "small" inputs (8 elements, 8x8), where the per-call overhead
of the wrapper dominates, and on "large" ones (10**6 elements, 1024x1024), where the kernels do.

Method (the same as the project's reference harness, so the numbers are comparable):

* one thread: the BLAS/OpenMP thread variables are set before NumPy is imported and the process
  is pinned to one core (``--threads N`` for N);
* all backends are timed round-robin in one run (each repeat cycles over them), so machine noise
  hits them alike;
* a cell is the median over ``--repeats`` of the mean time per call of a batch of calls lasting at
  least ``--target-ms``, with the garbage collector off while a batch runs;
* every result is checked against NumPy's (a ``!`` marks a cell whose result differs).

``--device gpu:0`` creates the tnp inputs on that device and calls ``tnp.synchronize()`` after each
op (NumPy and PyTorch stay on the CPU). Backends that are not installed are reported as
unavailable. Output: one markdown table per size (microseconds per call and ratios to NumPy, with
geometric means) and one ``JSON {...}`` line (``--json-out FILE`` writes it to a file too).

    python benchmarks/op_overhead.py                         # numpy, tnp, torch; 1 thread
    python benchmarks/op_overhead.py --sizes small --repeats 3 --target-ms 5
    python benchmarks/op_overhead.py --backends numpy,tnp --device gpu:0
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time

# NumPy, tnp and torch are imported only after pin_threads(): their thread pools read the
# environment when they load.

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")

SIZES = {
    # name: (vector length, square matrix side, reshape target for the vector)
    "small": (8, 8, (2, 4)),
    "large": (10**6, 1024, (1000, 1000)),
}

OPS = {
    # name: what it computes (the table's label)
    "add": "a + b",
    "mul": "a * b",
    "exp": "exp(a)",
    "sum": "sum(a)",
    "mean_axis0": "mean(M, axis=0)",
    "matmul": "matmul(M, N)",
    "reshape_T": "a.reshape(r, c).T",
    "slice": "a[1:5]",
    "fancy_idx": "a[[0, 2, 4]]",
    "bool_mask": "a[a > 0]",
    "where": "where(a > 0, a, b)",
    "concatenate": "concatenate([a, b])",
    "astype_f64": "a.astype(float64)",
}
LOOSE = {"sum", "mean_axis0", "matmul"}  # summation order may differ: compare with a tolerance


def pin_threads(n, affinity=True):
    """Limit every thread pool to ``n`` threads and the process to ``n`` cores."""
    if "numpy" in sys.modules:
        print("warning: numpy was imported before the thread settings", file=sys.stderr)
    for k in THREAD_VARS:
        os.environ[k] = str(n)
    cores = None
    if affinity and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))[:n]
        os.sched_setaffinity(0, set(cores))
    return cores


# ----------------------------------------------------------------------------- backends
class Backend:
    """How one library makes its inputs, runs the ops and hands results back as NumPy arrays."""

    def __init__(self, name, version, convert, ops, to_numpy, sync=None, note=""):
        self.name = name
        self.version = version
        self.convert = convert        # numpy array -> this library's array
        self.ops = ops                # (inputs dict, reshape target) -> {op: zero-argument callable}
        self.to_numpy = to_numpy
        self.sync = sync              # called after every op (GPU: wait for the kernels)
        self.note = note


def numpy_like_ops(xp, d, rt):
    """The ops for a module with NumPy's API (NumPy itself, tnp)."""
    a, b, M, N = d["a"], d["b"], d["M"], d["N"]
    r, c = rt
    f64 = xp.float64
    return {
        "add": lambda: a + b,
        "mul": lambda: a * b,
        "exp": lambda: xp.exp(a),
        "sum": lambda: xp.sum(a),
        "mean_axis0": lambda: xp.mean(M, axis=0),
        "matmul": lambda: xp.matmul(M, N),
        "reshape_T": lambda: a.reshape(r, c).T,
        "slice": lambda: a[1:5],
        "fancy_idx": lambda: a[[0, 2, 4]],
        "bool_mask": lambda: a[a > 0],
        "where": lambda: xp.where(a > 0, a, b),
        "concatenate": lambda: xp.concatenate([a, b]),
        "astype_f64": lambda: a.astype(f64),
    }


def torch_ops(torch, d, rt):
    a, b, M, N = d["a"], d["b"], d["M"], d["N"]
    r, c = rt
    f64 = torch.float64
    return {
        "add": lambda: a + b,
        "mul": lambda: a * b,
        "exp": lambda: torch.exp(a),
        "sum": lambda: torch.sum(a),
        "mean_axis0": lambda: torch.mean(M, dim=0),
        "matmul": lambda: torch.matmul(M, N),
        "reshape_T": lambda: a.reshape(r, c).T,
        "slice": lambda: a[1:5],
        "fancy_idx": lambda: a[[0, 2, 4]],
        "bool_mask": lambda: a[a > 0],
        "where": lambda: torch.where(a > 0, a, b),
        "concatenate": lambda: torch.cat([a, b]),
        "astype_f64": lambda: a.to(f64),
    }


def make_backend(spec, np, threads, device):
    """A Backend for ``spec`` (numpy, tnp, torch or module:NAME); raises if it cannot load."""
    if spec == "numpy":
        return Backend("numpy", np.__version__, lambda x: x.copy(),
                       lambda d, rt: numpy_like_ops(np, d, rt), np.asarray)
    if spec == "torch":
        import torch

        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:
            pass
        return Backend("torch", torch.__version__, lambda x: torch.from_numpy(x.copy()),
                       lambda d, rt: torch_ops(torch, d, rt),
                       lambda t: t.numpy() if hasattr(t, "numpy") else np.asarray(t),
                       note="CPU tensors; astype -> Tensor.to(dtype), concatenate -> torch.cat")
    name = spec.split(":", 1)[1] if spec.startswith("module:") else spec
    if name == "tnp":
        import tnp

        dev = tnp.device(device) if device else tnp.get_default_device()
        sync = (lambda: tnp.synchronize(dev)) if dev.is_gpu else None
        note = f"tnp arrays on {dev}" + ("; tnp.synchronize() after each op" if sync else "")
        return Backend("tnp", tnp.__version__, lambda x: tnp.asarray(x, device=dev),
                       lambda d, rt: numpy_like_ops(tnp, d, rt), np.asarray, sync=sync, note=note)
    if spec.startswith("module:"):
        import importlib

        xp = importlib.import_module(name)
        return Backend(name, getattr(xp, "__version__", "?"), xp.asarray,
                       lambda d, rt: numpy_like_ops(xp, d, rt), np.asarray)
    raise ValueError(f"unknown backend {spec!r} (expected numpy, tnp, torch or module:NAME)")


# ----------------------------------------------------------------------------- timing
def time_batch(fn, number):
    """Seconds for ``number`` calls of ``fn``, with the garbage collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()


def calls_per_batch(fn, target_s, cap=1 << 22):
    """The smallest power of two of calls whose batch lasts at least ``target_s``."""
    number = 1
    while number < cap:
        el = time_batch(fn, number)
        if el >= target_s:
            break
        guess = target_s / el * number if el > 0 else number * 16
        number = min(cap, max(number * 2, 1 << math.ceil(math.log2(max(guess, 2)))))
    return number


def mismatch(np, ref, got, op):
    """Why ``got`` is not NumPy's ``ref`` (None when it is)."""
    got = np.asarray(got)
    if got.shape != ref.shape:
        return f"shape {got.shape}, NumPy {ref.shape}"
    if op == "astype_f64" and got.dtype != ref.dtype:
        return f"dtype {got.dtype}, NumPy {ref.dtype}"
    rtol, atol = (1e-3, 1e-3) if op in LOOSE else (1e-6, 0.0)
    if not np.allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol):
        return "values differ from NumPy's"
    return None


def with_sync(fn, sync):
    if sync is None:
        return fn

    def call():
        r = fn()
        sync()
        return r
    return call


def measure(np, backends, sizes, ops, repeats, target_s, seed, results, spread, errors, log):
    """Fill ``results`` ({size: {op: {backend: microseconds}}}), ``spread`` and ``errors``."""
    for size in sizes:
        n, m, rt = SIZES[size]
        rng = np.random.default_rng(seed)
        data = {"a": rng.standard_normal(n, dtype=np.float32),
                "b": rng.standard_normal(n, dtype=np.float32),
                "M": rng.standard_normal((m, m), dtype=np.float32),
                "N": rng.standard_normal((m, m), dtype=np.float32)}
        ref_ops = numpy_like_ops(np, data, rt)
        table = {}
        for be in backends:
            try:
                inputs = {k: be.convert(v) for k, v in data.items()}
                table[be.name] = be.ops(inputs, rt)
            except Exception as e:  # noqa: BLE001 - one backend failing must not stop the rest
                errors[f"{size}/*/{be.name}"] = f"{type(e).__name__}: {e}"
        results[size], spread[size] = {}, {}
        for op in ops:
            ref = np.asarray(ref_ops[op]())
            fns, numbers = {}, {}
            for be in backends:
                if be.name not in table:
                    continue
                fn = with_sync(table[be.name][op], be.sync)
                try:
                    for _ in range(3):  # warm-up: allocator, caches, lazy imports, kernel compiles
                        out = fn()
                    why = mismatch(np, ref, be.to_numpy(out), op)
                    if why:
                        errors[f"{size}/{op}/{be.name}"] = why
                    numbers[be.name] = calls_per_batch(fn, target_s)
                    fns[be.name] = fn
                except Exception as e:  # noqa: BLE001
                    errors[f"{size}/{op}/{be.name}"] = f"{type(e).__name__}: {str(e)[:160]}"
            samples = {name: [] for name in fns}
            for _ in range(repeats):
                for name, fn in fns.items():  # round-robin: every repeat visits every backend
                    samples[name].append(time_batch(fn, numbers[name]) / numbers[name] * 1e6)
            results[size][op] = {k: statistics.median(v) for k, v in samples.items()}
            spread[size][op] = {k: [min(v), max(v)] for k, v in samples.items()}
            log("  " + f"{size:5s} {op:12s} " + "  ".join(
                f"{k}={v:.2f}us" for k, v in results[size][op].items()))


# ----------------------------------------------------------------------------- reporting
def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def print_table(size, rows, names, errors, threads, device):
    """One markdown table; returns {op: {backend: ratio to numpy}} with a '_geomean' entry."""
    n, m, _ = SIZES[size]
    others = [k for k in names if k != "numpy"]
    print()
    print(f"### {size}: vector of {n} float32, matrices {m}x{m} float32 "
          f"({threads} thread{'s' if threads != 1 else ''}{', tnp on ' + device if device else ''}; "
          f"us per call, median)")
    print()
    print("| op | " + " | ".join(f"{k} us" for k in names)
          + "".join(f" | {k}/numpy" for k in others) + " |")
    print("|---|" + "---:|" * (len(names) + len(others)))
    ratios = {}
    for op, row in rows.items():
        base = row.get("numpy")
        cells = []
        for k in names:
            v = row.get(k)
            mark = "!" if f"{size}/{op}/{k}" in errors else ""
            cells.append(f"{v:.2f}{mark}" if v is not None else "n/a")
        ratios[op] = {}
        for k in others:
            v = row.get(k)
            if v is None or not base:
                cells.append("n/a")
                continue
            ratios[op][k] = v / base
            cells.append(f"{v / base:.2f}")
        print(f"| {OPS[op]} | " + " | ".join(cells) + " |")
    gm = {k: geomean([ratios[op].get(k) for op in ratios]) for k in others}
    ratios["_geomean"] = gm
    print("| **geometric mean** | " + " | ".join("" for _ in names) + "".join(
        f" | **{gm[k]:.2f}**" if gm[k] else " | n/a" for k in others) + " |")
    return ratios


def env_info(np, threads, cores, backends):
    info = {"python": platform.python_version(), "machine": platform.machine(),
            "threads": threads, "affinity": cores,
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE"),
            "versions": {b.name: b.version for b in backends}}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
    except OSError:
        info["cpu"] = None
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [f"{p.get('internal_api')} {p.get('version')} kernel={p.get('architecture')} "
                        f"threads={p.get('num_threads')}" for p in threadpool_info()
                        if p.get("user_api") == "blas"]
    except Exception:  # noqa: BLE001 - threadpoolctl is optional (the bench extra installs it)
        info["blas"] = None
    return info


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="numpy,tnp,torch",
                    help="comma separated: numpy (always measured), tnp, torch, module:NAME")
    ap.add_argument("--sizes", default="small,large", help="comma separated: small, large")
    ap.add_argument("--ops", default=",".join(OPS), help="comma separated subset of: " + ",".join(OPS))
    ap.add_argument("--repeats", type=int, default=11, help="timed batches per cell (median taken)")
    ap.add_argument("--target-ms", type=float, default=20.0, help="shortest duration of one batch")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP/torch threads and cores")
    ap.add_argument("--no-affinity", action="store_true", help="do not pin the process to cores")
    ap.add_argument("--device", default=None, help="tnp's device, e.g. cpu or gpu:0 (default: tnp's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out", default=None, help="also write the JSON line to this file")
    args = ap.parse_args(argv)
    for name, allowed, value in (("--sizes", SIZES, args.sizes), ("--ops", OPS, args.ops)):
        bad = [s for s in value.split(",") if s.strip() and s.strip() not in allowed]
        if bad:
            ap.error(f"{name}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
    if args.repeats < 1 or args.target_ms <= 0:
        ap.error("--repeats must be >= 1 and --target-ms > 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    cores = pin_threads(args.threads, affinity=not args.no_affinity)
    import numpy as np

    specs = [s.strip() for s in args.backends.split(",") if s.strip()]
    specs = ["numpy"] + [s for s in specs if s != "numpy"]
    backends, unavailable = [], {}
    for spec in specs:
        try:
            be = make_backend(spec, np, args.threads, args.device)
        except Exception as e:  # noqa: BLE001 - e.g. torch not installed
            unavailable[spec] = f"{type(e).__name__}: {e}"
            continue
        if be.name not in [b.name for b in backends]:  # module:numpy is numpy: time it once
            backends.append(be)
    names = [b.name for b in backends]
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    info = env_info(np, args.threads, cores, backends)

    print("## op_overhead: per-op latency, us per call (median of repeats), ratio to NumPy")
    print(f"# python {info['python']} on {info['machine']} ({info['cpu']}); threads={args.threads} "
          f"cores={cores}; repeats={args.repeats} target={args.target_ms} ms")
    print(f"# OPENBLAS_CORETYPE={info['OPENBLAS_CORETYPE']} OPENBLAS_L2_SIZE={info['OPENBLAS_L2_SIZE']}"
          f"; blas: {'; '.join(info['blas']) if info['blas'] else 'threadpoolctl not installed'}")
    for b in backends:
        print(f"# {b.name} {b.version}" + (f": {b.note}" if b.note else ""))
    for k, v in unavailable.items():
        print(f"# {k}: unavailable ({v})")
    sys.stdout.flush()

    results, spread, errors = {}, {}, {}
    interrupted = False
    try:
        measure(np, backends, sizes, ops, args.repeats, args.target_ms / 1e3, args.seed,
                results, spread, errors, log=lambda s: print(s, file=sys.stderr, flush=True))
    except KeyboardInterrupt:  # Ctrl-C or `timeout -s INT`: report what was measured
        interrupted = True
        errors["interrupted"] = "stopped before the end; the tables hold what was measured"
    sizes = [s for s in sizes if results.get(s)]

    device = args.device if args.device and "tnp" in names else None
    ratios = {size: print_table(size, results[size], names, errors, args.threads, device)
              for size in sizes}
    if errors:
        print()
        print("Errors and mismatches (`!` in a table):")
        for k, v in errors.items():
            print(f"- {k}: {v}")
    payload = {"bench": "op_overhead", "unit": "us", "backends": names, "unavailable": unavailable,
               "device": args.device, "threads": args.threads, "repeats": args.repeats,
               "target_ms": args.target_ms, "results": results, "ratios_to_numpy": ratios,
               "spread_min_max": spread, "errors": errors, "interrupted": interrupted, "env": info}
    line = json.dumps(payload, sort_keys=True, default=str)
    print()
    print("JSON " + line)
    if args.json_out:
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            f.write(line + "\n")
    if interrupted:
        return 130
    return 1 if any(k.endswith("/tnp") for k in errors) else 0


if __name__ == "__main__":
    sys.exit(main())
