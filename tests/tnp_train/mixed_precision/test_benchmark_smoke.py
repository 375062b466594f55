"""benchmarks/mixed_precision.py runs: its GPU model (ResNet-style, functional API) on the fake
device cpu:1, small, float32 and mixed_float16 (LossScaleOptimizer), with finite losses."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_mixed_precision_benchmark_dry_run(tmp_path):
    out = tmp_path / "mp.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mixed_precision.py"),
                        "--device", "cpu:1", "--quick", "--models", "resnet", "--batch", "4",
                        "--image-size", "8", "--policies", "float32,mixed_float16",
                        "--json-out", str(out)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(out.read_text())
    res = rec["results"]["resnet"]
    assert set(res["ms"]) == {"float32", "mixed_float16"} and not res["errors"]
    assert all(v > 0 for v in res["ms"].values())
    assert res["loss_scale"]["mixed_float16"] >= 1
    assert "| resnet | mixed_float16 |" in r.stdout
