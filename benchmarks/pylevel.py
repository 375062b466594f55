#!/usr/bin/env python3
"""Python-level speed of tnp beside NumPy: what an element loop does (issue 17, item 5).

Scalar indexing (``a[1]``, ``m[1, 2]``), scalar arithmetic (``s + s``, ``s * 2``), conversions
(``float(s)``, ``bool(a[0] > 0)``), iteration (``for x in v``, ``list(v)``), ``v.tolist()``,
``len(v)``, builtin ``sum``/``min``/``max`` and item assignment (``a[1] = 2``), on float64 and int64
vectors of 8 and 1000 elements.

Method, as ``op_overhead.py``: one thread (thread variables set before NumPy is imported, the
process pinned to one core), NumPy and tnp timed round-robin in one run so machine noise hits
both alike, a cell is the median over ``--repeats`` of the mean time per call of a batch lasting at
least ``--target-ms`` (timeit's loop, garbage collector off), and every statement's result
is checked against NumPy's (a ``!`` marks a cell that differs). Output: a markdown table of
microseconds and ratios to NumPy, the worst ratio, and one ``JSON {...}`` line (``--json-out``).

    python benchmarks/pylevel.py
    python benchmarks/pylevel.py --repeats 3 --target-ms 2 --sizes 8 --dtypes float64
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import timeit

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "NUMBA_NUM_THREADS")

# label: (statement, expression whose value is compared with NumPy's, or None)
CASES = {
    "a[1]": ("a[1]", "a[1]"),
    "m[1,2]": ("m[1, 2]", "m[1, 2]"),
    "s + s": ("s + s", "s + s"),
    "s * 2": ("s * two", "s * two"),
    "float(s)": ("float(s)", "float(s)"),
    "bool(a[0] > 0)": ("bool(a[0] > 0)", "bool(a[0] > 0)"),
    "for x in v": ("for x in v: pass", "[x for x in v]"),
    "list(v)": ("list(v)", "list(v)"),
    "v.tolist()": ("v.tolist()", "v.tolist()"),
    "len(v)": ("len(v)", "len(v)"),
    "sum(v)": ("sum(v)", "sum(v)"),
    "min(v)": ("min(v)", "min(v)"),
    "max(v)": ("max(v)", "max(v)"),
    "a[1] = 2": ("a[1] = two", None),
}


def pin(affinity=True):
    for k in THREAD_VARS:
        os.environ[k] = "1"
    if affinity and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def inputs(xp, dtype, n):
    v = xp.asarray((xp.arange(n) % 7 - 3).astype(dtype))
    a = v.copy()
    return {"a": a, "m": a.reshape(2, -1), "v": v, "s": a[3],
            "two": 2.0 if dtype == "float64" else 2}


def batch_time(stmt, env, target_s):
    """Mean seconds per execution of ``stmt`` over a batch lasting at least ``target_s`` (timeit's
    loop: no per-execution overhead but the loop's own; timeit turns the collector off)."""
    t = timeit.Timer(stmt, globals=env)
    n = 1
    while True:
        dt = t.timeit(n)
        if dt >= target_s:
            return dt / n
        n *= 2 if dt > target_s / 8 else 8


def _same(ref, got):
    """Whether ``got`` is NumPy's ``ref``: Python values of the same type, lists element-wise,
    NumPy scalars as 0-d values of the same dtype (tnp's are tnp.Scalar)."""
    import numpy

    if type(ref) in (bool, int, float, complex):
        return type(got) is type(ref) and got == ref
    if isinstance(ref, list):
        return type(got) is list and len(got) == len(ref) and all(map(_same, ref, got))
    if isinstance(ref, numpy.generic):
        return getattr(got, "dtype", None) == ref.dtype and numpy.shape(got) == () and \
            bool(got == ref)
    return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default="tnp", help="the NumPy-compatible module beside NumPy")
    ap.add_argument("--dtypes", default="float64,int64")
    ap.add_argument("--sizes", default="8,1000")
    ap.add_argument("--cases", default=";".join(CASES),
                    help="a subset, separated by ';', of: " + "; ".join(CASES))
    ap.add_argument("--repeats", type=int, default=7, help="timed batches per cell (median taken)")
    ap.add_argument("--target-ms", type=float, default=10.0, help="shortest timed batch")
    ap.add_argument("--no-affinity", action="store_true", help="do not pin the process to one core")
    ap.add_argument("--json-out", help="also write the JSON line to this file")
    args = ap.parse_args(argv)
    pin(not args.no_affinity)

    import importlib

    import numpy

    mod = importlib.import_module(args.module)
    cases = [c.strip() for c in args.cases.split(";") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {list(CASES)}")
    rows = []
    for dtype in args.dtypes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            envs = {"numpy": inputs(numpy, dtype, n), args.module: inputs(mod, dtype, n)}
            for case in cases:
                stmt, check = CASES[case]
                same = True
                if check is not None:
                    same = _same(eval(check, dict(envs["numpy"])), eval(check, dict(envs[args.module])))
                samples = {"numpy": [], args.module: []}
                for _ in range(args.repeats):    # round-robin: noise hits both alike
                    for name, env in envs.items():
                        samples[name].append(batch_time(stmt, env, args.target_ms / 1000))
                tn = statistics.median(samples["numpy"]) * 1e6
                tc = statistics.median(samples[args.module]) * 1e6
                rows.append({"dtype": dtype, "n": n, "case": case, "numpy_us": tn,
                             "module_us": tc, "ratio": tc / tn, "same_result": bool(same)})
    print(f"Python-level speed, {args.module} beside NumPy {numpy.__version__} "
          f"(µs per statement, median of {args.repeats}; one thread)\n")
    print(f"| dtype | n | case | numpy µs | {args.module} µs | ratio |\n|---|---|---|---|---|---|")
    for r in rows:
        mark = "" if r["same_result"] else " !"
        print(f"| {r['dtype']} | {r['n']} | {r['case']} | {r['numpy_us']:.3f} | "
              f"{r['module_us']:.3f} | {r['ratio']:.2f}×{mark} |")
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"\nworst: {worst['case']} ({worst['dtype']}, n={worst['n']}) {worst['ratio']:.2f}× NumPy")
    out = json.dumps({"module": args.module, "numpy": numpy.__version__, "rows": rows,
                      "worst": [worst["case"], worst["dtype"], worst["n"], worst["ratio"]]})
    print("JSON " + out)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(out)
    return 0 if all(r["same_result"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
