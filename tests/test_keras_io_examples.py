"""Smoke test of the ten keras-io examples (examples/keras_io/) under tnp_train.

Each runs with ``--quick`` (a few steps) and must finish and lower its training loss. The
comparison with tf-keras (final metric within 1 point) needs the reference venv and minutes
per example: ``python examples/keras_io/compare.py``. The examples run in this process (one
import of tnp_train for all), each in a fresh module namespace.
"""
import json
import os
import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")

HERE = Path(__file__).resolve().parents[1] / "examples" / "keras_io"
EXAMPLES = runpy.run_path(str(HERE / "compare.py"))["EXAMPLES"]

# Known gaps in tnp_train, each reached after the example's result line (so the loss is still
# checked): the example must still fail with this exception type, and once one is fixed the test
# fails until its entry goes.
KNOWN_FAILURES = {
}


@pytest.fixture(scope="module", autouse=True)
def quick_mode():
    old = os.environ.get("KERAS_IO_QUICK")
    os.environ["KERAS_IO_QUICK"] = "1"
    sys.path.insert(0, str(HERE))        # the examples import _backend and _data from there
    for m in ("_backend", "_data"):
        sys.modules.pop(m, None)         # _backend reads the flag when first imported
    yield
    sys.path.remove(str(HERE))
    for m in ("_backend", "_data"):
        sys.modules.pop(m, None)
    if old is None:
        os.environ.pop("KERAS_IO_QUICK")
    else:
        os.environ["KERAS_IO_QUICK"] = old


def _result(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("KERAS_IO_RESULT ")]
    assert lines, "the example printed no KERAS_IO_RESULT line"
    return json.loads(lines[-1][len("KERAS_IO_RESULT "):])


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_its_loss_goes_down(name, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(HERE / f"{name}.py")])
    known = KNOWN_FAILURES.get(name)
    failure = None
    try:
        runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
    except Exception as e:
        if known is None or not isinstance(e, known[0]):
            raise
        failure = e
    out = capsys.readouterr().out
    if known is not None:
        assert failure is not None, f"{name} now runs to the end: remove it from KNOWN_FAILURES"
    result = _result(out)
    assert result["backend"] == "tnp"
    assert result["loss_end"] < result["loss_start"], result
    for key, value in result.items():
        if key.endswith("loss_end"):
            start = result[key[:-len("loss_end")] + "loss_start"]
            assert value < start, (key, result)
    if failure is not None:
        pytest.xfail(f"{known[1]}: {type(failure).__name__}: {failure}")


def test_examples_list_matches_the_folder():
    tools = {"compare", "same_weights"}
    on_disk = {p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_")} - tools
    assert sorted(on_disk) == sorted(EXAMPLES)
