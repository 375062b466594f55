"""benchmarks/profiler_overhead.py runs (a smoke run on a tiny model; no timing is asserted)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_profiler_overhead_smoke_run(tmp_path):
    out = tmp_path / "overhead.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "profiler_overhead.py"), "--sizes", "4,4,2",
         "--batch", "4", "--batches", "3", "--epochs", "1", "--rounds", "2",
         "--modes", "off,level2,level3", "--json-out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("JSON "))[5:])
    assert data == json.loads(out.read_text())
    assert set(data["median_ms_per_step"]) == {"off", "level2", "level3"}
    assert all(len(v) == 2 for v in data["rounds_ms_per_step"].values())
    # a trace only where something was recorded; level 3 holds the level 2 spans and more
    assert set(data["trace_json_bytes_per_step"]) == {"level2", "level3"}
    assert 0 < data["trace_json_bytes_per_step"]["level2"] < \
        data["trace_json_bytes_per_step"]["level3"] < 50_000
