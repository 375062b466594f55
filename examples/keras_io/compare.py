"""Run every example program under tnp_train and under tf-keras and print a table.

    python examples/keras_io/compare.py [--only NAME ...] [--seeds 0 1 2] [--quick] [--jobs 1]
        [--tf-python /tmp/tfvenv/bin/python] [--json out.json]

Each program prints a ``KERAS_IO_RESULT {...}`` line (first and last training loss, the final
metric). A program passes when it runs on both backends, its loss goes down on both, and its
final metric under tnp_train is within 1 point (0.01 on the metric's 0-1 scale) of tf-keras's.
With several seeds the means over the seeds are compared: the two backends draw different
initial weights from the same seed, so one seed's difference includes that draw, and the
``sd`` columns show how far a metric moves from seed to seed.
The tf side runs the same file with ``--backend tf`` under a Python that has tensorflow and
tf-keras 2.x (``--tf-python`` or ``KERAS_IO_TF_PYTHON``).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = [
    "convnet_digits",
    "functional_waveforms",
    "vae_bumps",
    "custom_train_step",
    "class_weights",
    "text_tickets",
    "review_sentiment",
    "rnn_walks",
    "training_loop",
    "fit_callbacks",
]
TOLERANCE = 0.01   # "within 1 point": one percentage point of an accuracy, 0.01 of a 0-1 metric


def run(name, backend, python, quick, seed, timeout=1800):
    env = dict(os.environ)
    # the repository last: a PYTHONPATH given by the caller (another build of tnp) wins
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
    # one BLAS thread per process: on a shared machine, oversubscribed BLAS pools are what
    # makes a run slow, on both backends alike
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    if backend == "tf":
        env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    cmd = [python, str(HERE / f"{name}.py"), "--backend", backend, "--seed", str(seed)]
    if quick:
        cmd.append("--quick")
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.time() - t0
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("KERAS_IO_RESULT "):
            result = json.loads(line[len("KERAS_IO_RESULT "):])
            result["seconds"] = seconds
            if proc.returncode != 0:
                # the metric was measured, but the program failed later on
                result["crash"] = f"exit {proc.returncode} after the result line: {tail}"
            return result
    return {"error": f"exit {proc.returncode}: {tail}", "seconds": seconds}


def combine(results):
    """One seed's result, or the mean over seeds (with ``metric_sd``); a run without a result
    line makes the whole an error, a failure after the result line is kept as ``crash``."""
    for r in results:
        if "error" in r:
            return r
    out = dict(results[0])
    for key in ("loss_start", "loss_end", "metric", "seconds"):
        values = [r[key] for r in results]
        out[key] = sum(values) / len(values)
    mean, n = out["metric"], len(results)
    out["metric_sd"] = (sum((r["metric"] - mean) ** 2 for r in results) / max(n - 1, 1)) ** 0.5
    out["metrics"] = [r["metric"] for r in results]
    crashes = [r["crash"] for r in results if "crash" in r]
    if crashes:
        out["crash"] = crashes[0]
    return out


def verdict(tnp_result, tf_result):
    if "error" in tnp_result:
        return "FAIL (tnp error)"
    if "error" in tf_result:
        return "FAIL (tf error)"
    if "crash" in tnp_result:
        return "FAIL (tnp error after the metric)"
    if "crash" in tf_result:
        return "FAIL (tf error after the metric)"
    if not tnp_result["loss_end"] < tnp_result["loss_start"]:
        return "FAIL (tnp loss did not go down)"
    if not tf_result["loss_end"] < tf_result["loss_start"]:
        return "FAIL (tf loss did not go down)"
    if abs(tnp_result["metric"] - tf_result["metric"]) > TOLERANCE:
        return "FAIL (> 1 point)"
    return "pass"


def fmt(result, key):
    return "error" if "error" in result else f"{result[key]:.4f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="run these programs only")
    ap.add_argument("--quick", action="store_true", help="a few steps each (smoke run)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--jobs", type=int, default=1, help="programs run at the same time")
    ap.add_argument("--tnp-python", default=sys.executable)
    ap.add_argument("--tf-python",
                    default=os.environ.get("KERAS_IO_TF_PYTHON", "/tmp/tfvenv/bin/python"))
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)
    names = args.only or EXAMPLES

    jobs = [(n, b, seed) for n in names for seed in args.seeds for b in ("tnp", "tf")]
    pythons = {"tnp": args.tnp_python, "tf": args.tf_python}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {job: pool.submit(run, job[0], job[1], pythons[job[1]], args.quick, job[2])
                   for job in jobs}
        per_seed = {job: f.result() for job, f in futures.items()}
    results = {(n, b): combine([per_seed[(n, b, seed)] for seed in args.seeds])
               for n in names for b in ("tnp", "tf")}

    header = (f"{'program':22} {'metric':24} {'loss tnp':>17} {'loss tf':>17} "
              f"{'tnp':>7} {'tf':>7} {'diff pt':>7} {'sd tnp':>6} {'sd tf':>6} "
              f"{'s tnp':>6} {'s tf':>6}  verdict")
    print(header)
    print("-" * len(header))
    failed = 0
    rows = []
    for n in names:
        a, b = results[(n, "tnp")], results[(n, "tf")]
        v = verdict(a, b)
        failed += v != "pass"
        metric = a.get("metric_name") or b.get("metric_name") or "?"
        loss_a = "error" if "error" in a else f"{a['loss_start']:.3g}->{a['loss_end']:.3g}"
        loss_b = "error" if "error" in b else f"{b['loss_start']:.3g}->{b['loss_end']:.3g}"
        diff = ("" if "error" in a or "error" in b
                else f"{100 * (a['metric'] - b['metric']):+.2f}")
        sd_a = f"{100 * a['metric_sd']:.2f}" if "metric_sd" in a else ""
        sd_b = f"{100 * b['metric_sd']:.2f}" if "metric_sd" in b else ""
        print(f"{n:22} {metric:24} {loss_a:>17} {loss_b:>17} {fmt(a, 'metric'):>7} "
              f"{fmt(b, 'metric'):>7} {diff:>7} {sd_a:>6} {sd_b:>6} "
              f"{a['seconds']:6.0f} {b['seconds']:6.0f}  {v}")
        rows.append(dict(example=n, seeds=args.seeds, tnp=a, tf=b, verdict=v,
                         per_seed={f"{b_}:{seed}": per_seed[(n, b_, seed)]
                                   for seed in args.seeds for b_ in ("tnp", "tf")}))
    for n in names:
        for backend in ("tnp", "tf"):
            r = results[(n, backend)]
            if "error" in r or "crash" in r:
                print(f"\n--- {n} ({backend}) ---\n{r.get('error') or r['crash']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"\n{len(names) - failed}/{len(names)} pass (seeds {' '.join(map(str, args.seeds))}; "
          f"diff and sd in points: 100 x the metric)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
