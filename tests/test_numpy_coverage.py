"""NumPy API coverage (``conformance/numpy_coverage.py``): every name of NumPy's public API in
scope is present in tnp and used by a differential test, or excluded with a reason; the
exclusion list stays short; ``docs/numpy-compat.md`` is the page the tool generates now."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "conformance" / "numpy_coverage.py"
DOCS = ROOT / "docs" / "numpy-compat.md"
FIX = f"regenerate it: {Path(sys.executable).name} conformance/numpy_coverage.py --write-docs"


@pytest.fixture(scope="module")
def report():
    # a subprocess: the tool imports the test modules to read their sweep tables
    r = subprocess.run([sys.executable, str(TOOL), "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_every_name_is_present_and_tested(report):
    fails = report["failures"]
    assert not fails, (f"{len(fails)} NumPy names are missing from tnp or have no differential "
                       f"test (write one in tests/tnp/, or exclude the name with a reason):\n  "
                       + "\n  ".join(fails))


def test_exclusions_are_few_and_explained(report):
    excluded = report["excluded"]
    assert len(excluded) <= report["max_excluded"] == 25, f"{len(excluded)} exclusions (at most 25)"
    no_reason = [n for n, why in excluded.items() if not str(why).strip()]
    assert not no_reason, f"exclusions without a reason: {no_reason}"
    in_scope = {f"{m}.{n}" for m, rows in report["statuses"].items() for n, _, _ in rows}
    stale = sorted(set(excluded) - in_scope)
    assert not stale, f"exclusions of names NumPy no longer exports: {stale}"


def test_scope_is_numpys_public_api(report):
    st = report["statuses"]
    for module, obj in [("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft),
                        ("numpy.random", np.random), ("numpy.emath", np.emath),
                        ("numpy.testing", np.testing)]:
        assert sorted(n for n, _, _ in st[module]) == sorted(set(obj.__all__)), module
    assert sorted(n for n, _, _ in st["numpy.lib.stride_tricks"]) == ["as_strided",
                                                                      "sliding_window_view"]
    numpy_modules = {n for n, s, _ in st["numpy"] if s == "NumPy's module"}
    assert numpy_modules == {"ma", "polynomial", "char", "strings", "rec"}


def test_compat_page_is_current(report):
    assert DOCS.exists(), f"{DOCS.relative_to(ROOT)} is missing: {FIX}"
    text = DOCS.read_text()
    assert f"NumPy version: **{report['numpy_version']}**" in text, f"NumPy version changed: {FIX}"
    coverage = [ln for ln in report["page"].splitlines() if ln.startswith("**Coverage:")]
    assert coverage and coverage[0] in text.splitlines(), f"coverage number changed: {FIX}"
    assert text == report["page"], f"{DOCS.relative_to(ROOT)} is stale: {FIX}"
