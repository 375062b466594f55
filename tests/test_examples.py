"""The examples print exactly what NumPy prints: each is run with ``--numpy`` and on tnp."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["demo.py"]


def _run(script, *flags):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["TNP_BACKEND"] = "numpy"  # the comparison is exact on the CPU
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *flags],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} {' '.join(flags)} failed:\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("script", EXAMPLES)
def test_example_prints_what_numpy_prints(script):
    expected = _run(script, "--numpy")
    got = _run(script)
    assert expected.strip(), f"{script} printed nothing"
    assert got.splitlines() == expected.splitlines()


def test_demo_on_a_fake_device_prints_the_same():
    # cpu:1 holds NumPy data but obeys the device rules: every array the demo makes must stay on
    # it (an array left on cpu would meet a cpu:1 array and raise), and the numbers are NumPy's
    assert _run("demo.py", "--device", "cpu:1").splitlines() == _run("demo.py", "--numpy").splitlines()


def _run_train(script, *flags, timeout=240):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *flags],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script} {' '.join(flags)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_digits_cnn_one_epoch_smoke():
    # the full run (30 epochs, >= 97% for seeds 0-2) is `make demo`; CI runs one epoch
    out = _run_train("digits_cnn.py", "--epochs", "1", "--verbose", "0").splitlines()
    assert "reloaded model gives identical predictions: True" in "\n".join(out)
    last = out[-1]
    assert last.startswith("test accuracy: 0.") and len(last.split(": ")[1]) == 6
    assert float(last.split(": ")[1]) > 0.5      # one epoch already learns


def test_release_notes_snippets_run():
    out = _run_train("release_notes.py")
    assert "all release-notes snippets ran" in out
