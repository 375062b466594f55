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
