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


def _scaling_model():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "_scaling_model", ROOT / "benchmarks" / "scaling_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_scaling_model_lays_buckets_out_as_the_bucketer():
    """The model's buckets are GradientBucketer's (reverse order, 1 MB first, then 4 MB) for
    the MLP and for a many-variable model; E[max of 2 normals] is 1/sqrt(pi)."""
    import numpy as np

    from tnp_train.distribute.collective import GradientBucketer, get_world

    sm = _scaling_model()
    rng = np.random.default_rng(0)
    shapes = [[(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)],
              [(int(n),) for n in rng.integers(1, 600_000, 40)]]
    for sizes in shapes:
        b = GradientBucketer(get_world())
        b.start([(i, np.zeros(s, np.float32)) for i, s in enumerate(sizes)])
        want = [sum(int(np.prod(sizes[k])) * 4 for k in keys) for keys in b.bucket_keys]
        got, ready = sm.bucket_sizes([int(np.prod(s)) * 4 for s in sizes])
        assert got == want
        assert ready[-1] == 1.0 and ready == sorted(ready)
    assert abs(sm.expected_max_normal(2) - 1 / np.pi ** 0.5) < 1e-6
    assert sm.expected_max_normal(1) == 0.0


def test_scaling_model_report_from_the_measured_file():
    """benchmarks/scaling_model.py prints its tables from the checked-in measurements; the
    model on one rank is the compute alone, and more bandwidth never lowers an efficiency."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scaling_model.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "predicted vs measured" in proc.stdout and "| resnet50-fp32 | fp16, half the bytes | pipeline |" in proc.stdout
    sm = _scaling_model()
    data = json.loads(sm.MEASURED.read_text())
    p = sm.parameters(data)
    mods = sm.models(data)
    tr = sm.Transport(p)
    fast = sm.Transport(dict(p, shm={w: (a, bw * 10) for w, (a, bw) in p["shm"].items()},
                             net={w: (a, bw * 10) for w, (a, bw) in p["net"].items()}))
    for m in mods.values():
        assert sm.efficiency(m, 1, tr, 8) == 1.0
        for n in (2, 16, 512):
            for overlap in ("none", "pipeline"):
                e = sm.efficiency(m, n, tr, 8, overlap=overlap)
                assert 0 < e <= 1
                assert sm.efficiency(m, n, fast, 8, overlap=overlap) >= e
            assert sm.efficiency(m, n, tr, 8, overlap="pipeline") >= \
                sm.efficiency(m, n, tr, 8, overlap="none")


def test_rnn_benchmark_smoke_run(tmp_path):
    """benchmarks/rnn.py: one round of one step per model; missing anchors are reported, not
    fatal; every tnp_train model trains (a positive time per step)."""
    out = tmp_path / "rnn.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "rnn.py"), "--impls", "tnp,no_such_impl",
         "--models", "gru,mask", "--rounds", "1", "--steps", "1", "--json-out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert set(data["ms_per_step"]) == {"tnp/gru", "tnp/mask"}
    assert all(v > 0 for v in data["ms_per_step"].values())
    assert "no_such_impl" in data["unavailable"]
    assert "| gru |" in proc.stdout and "| mask |" in proc.stdout


def test_vectorize_benchmark_smoke_run(tmp_path):
    """benchmarks/vectorize.py on a tiny MLP: per-example gradients by tt.vectorized_map equal
    the loop's (the script checks before timing), tnp.vectorize equals numpy.vectorize."""
    out = tmp_path / "vec.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "vectorize.py"), "--sizes", "6,5,3",
         "--batch", "4", "--elements", "1000", "--repeats", "1", "--loop-repeats", "1",
         "--json-out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert {"tnp-vmap", "tnp-loop"} <= set(data["per_example"])
    assert {"poly/tnp.vectorize", "sin/numpy.vectorize"} <= set(data["vectorize"])
    assert all(v["s"] > 0 for v in data["per_example"].values())


def test_compile_smoke_run_with_and_without_numba(tmp_path):
    """benchmarks/compile.py: tnp.jit's results are NumPy's bits, one kernel per workload; with
    Numba made unimportable, no kernels, the same bits, and the JitFallbackWarning saying why."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TNP_JIT_CACHE_DIR=str(tmp_path / "kernels"))
    for extra, kernels in (([], 1), (["--without-numba"], 0)):
        out = tmp_path / "compile.json"
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "compile.py"), "--workloads",
             "gelu,adam", "--rounds", "1", "--target-ms", "1", "--no-first-call",
             "--json-out", str(out)] + extra,
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        data = json.loads(out.read_text())
        for w in ("gelu", "adam"):
            row = data["results"][w]["tnp.jit"]
            assert row["bit_equal"] and row["kernels"] == kernels
            if kernels:
                assert row["unfused"] == []
        assert ("without fused kernels" in proc.stderr) == (kernels == 0)


def test_cnn_step_kernels_smoke_run():
    """benchmarks/cnn_step_kernels.py: one timing of every kernel of the reference CNN's step,
    the sgemm rates and the step's FLOPs (timings are not asserted)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cnn_step_kernels.py"),
                           "--repeats", "1", "--inner", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("JSON "))[5:])
    assert {"conv1 forward", "conv2 backward-input", "pool1 backward",
            "SGD(momentum) update"} <= set(data["ms"])
    # 2 * (conv1 forward + filter) + 3 * conv2 + 3 * dense, in multiply-adds counted twice
    assert data["flops_direct"] == 2 * (2 * 64 * 32 * 32 * 27 * 32) + 3 * (
        2 * 64 * 16 * 16 * 288 * 64) + 3 * 2 * 64 * 4096 * 10
    assert all(v > 0 for v in data["sgemm_gflops"].values())


def test_checkout_plugin_runs_another_checkouts_trainer_in_a_child(tmp_path, monkeypatch):
    """benchmarks/checkout_plugin.py: the trainer is built and run in a child Python whose path
    starts with $TNP_CHECKOUT; run(n), eval_loss() and chunk_multiple come through the pipe."""
    import importlib.util

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "fake_trainers.py").write_text(
        "import os\n"
        "class T:\n"
        "    chunk_multiple = 4\n"
        "    def __init__(self, ctx):\n"
        "        self.steps, self.scale = 0, ctx['scale']\n"
        "        print('a print must not reach the pipe')\n"
        "    def run(self, n):\n"
        "        self.steps += n\n"
        "    def sync(self):\n"
        "        pass\n"
        "    def eval_loss(self):\n"
        "        return self.steps * self.scale + (os.getpid() != int(os.environ['PARENT']))\n"
        "def make(ctx):\n"
        "    return T(ctx)\n")
    monkeypatch.setenv("TNP_CHECKOUT", str(tmp_path))
    monkeypatch.setenv("PARENT", str(os.getpid()))
    spec = importlib.util.spec_from_file_location("checkout_plugin",
                                                  ROOT / "benchmarks" / "checkout_plugin.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tr = getattr(mod, "fake_trainers.make")({"scale": 0.5})
    assert tr.chunk_multiple == 4
    tr.run(3)
    tr.run(5)
    assert tr.eval_loss() == 8 * 0.5 + 1        # counted in the child (another pid)
    tr.proc.stdin.close()
    assert tr.proc.wait(timeout=30) == 0
