"""The benchmark scripts run and check their results (a smoke run; no timing is asserted)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_op_overhead_smoke_run(tmp_path):
    out = tmp_path / "op.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TNP_BACKEND="numpy")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "op_overhead.py"), "--sizes", "small",
         "--ops", "add,sum,fancy_idx,astype_f64", "--repeats", "1", "--target-ms", "1",
         "--backends", "numpy,tnp,no_such_backend", "--device", "cpu:1", "--json-out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| a + b |" in proc.stdout and "geometric mean" in proc.stdout
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("JSON "))
    data = json.loads(line[5:])
    assert data == json.loads(out.read_text())
    assert data["backends"] == ["numpy", "tnp"]
    assert "no_such_backend" in data["unavailable"]
    assert data["errors"] == {}
    assert set(data["results"]["small"]) == {"add", "sum", "fancy_idx", "astype_f64"}


def test_autodiff_benchmark_runs_and_all_start_from_the_same_loss():
    """A two-step smoke run of benchmarks/autodiff.py: every implementation reports steps/s and
    the same initial loss (same weights and data); timings are not asserted."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "autodiff.py"), "--threads", "1",
                          "--repeats", "1", "--steps", "1", "--impls", "numpy-manual,tnp-manual,tnp-tape"],
                         capture_output=True, text=True, timeout=240, check=True).stdout
    data = json.loads(next(l for l in out.splitlines() if l.startswith("JSON "))[5:])
    losses = data["initial_loss"]
    assert set(losses) == {"numpy-manual", "tnp-manual", "tnp-tape"}
    ref = losses["numpy-manual"]
    assert all(abs(v - ref) <= 1e-5 * abs(ref) for v in losses.values())
    assert all(v > 0 for v in data["steps_per_s"].values())
