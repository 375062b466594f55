"""tf.keras 2.4 coverage (``conformance/keras_coverage.py``): the checked-in lists of TF 2.4.4's
public ``tf.keras`` names and of its ``tf.data`` / ``tf.distribute`` / ``tf.profiler`` /
``tf.mixed_precision`` names are intact, and ``docs/keras-compat.md`` and ``docs/tf-compat.md``
are the pages the tool generates from the code and the tests now."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "conformance"))
import keras_names  # noqa: E402

TOOL = ROOT / "conformance" / "keras_coverage.py"
DOCS = ROOT / "docs" / "keras-compat.md"
TF_DOCS = ROOT / "docs" / "tf-compat.md"
FIX = f"regenerate it: {Path(sys.executable).name} conformance/keras_coverage.py --write-docs"


@pytest.fixture(scope="module")
def report():
    # a subprocess: the tool imports test modules to read their sweep tables
    r = subprocess.run([sys.executable, str(TOOL), "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_name_list_is_intact():
    header, rows = keras_names.load()
    assert header["names"] == str(len(rows)) == "686", "TF 2.4.4's tf.keras tree has 686 names"
    assert header["rows sha256"] == keras_names.rows_digest(rows), \
        "rows edited by hand: remake the list with conformance/keras_names.py from the wheel"
    assert f"(wheel sha256 {keras_names.WHEEL_SHA256})" in keras_names.NAMES.read_text()
    assert rows == sorted(set(rows)), "rows must be sorted and unique"
    pairs = [(m, s) for m, s, _ in rows]
    assert len(set(pairs)) == len(pairs), "a (module, symbol) pair listed twice"
    modules = {m for m, _ in pairs}
    assert all(m == "keras" or m.startswith("keras.") for m in modules)
    submodules = [f"{m}.{s}" for m, s in pairs if f"{m}.{s}" in modules]
    assert not submodules, f"submodule entries are not names: {submodules}"
    # spot checks against TF 2.4.4's generated files (read in the wheel)
    for row in [("keras.layers", "Dense", "tensorflow.python.keras.layers.core.Dense"),
                ("keras.constraints", "max_norm", "tensorflow.python.keras.constraints.MaxNorm"),
                ("keras.utils", "Progbar", "tensorflow.python.keras.utils.generic_utils.Progbar"),
                ("keras.estimator", "model_to_estimator",
                 "tensorflow.python.keras.estimator.model_to_estimator_v2")]:
        assert row in rows, row
    assert sum(m == "keras.backend" for m in (m for m, _ in pairs)) == 145


def test_tf_name_list_is_intact():
    header, rows = keras_names.load(keras_names.TF_NAMES)
    assert header["names"] == str(len(rows)) == "131", \
        "TF 2.4.4's tf.data, tf.distribute, tf.profiler and tf.mixed_precision trees: 131 names"
    assert header["rows sha256"] == keras_names.rows_digest(rows), \
        "rows edited by hand: remake the list with conformance/keras_names.py from the wheel"
    assert f"(wheel sha256 {keras_names.WHEEL_SHA256})" in keras_names.TF_NAMES.read_text()
    assert rows == sorted(set(rows)), "rows must be sorted and unique"
    pairs = [(m, s) for m, s, _ in rows]
    assert len(set(pairs)) == len(pairs), "a (module, symbol) pair listed twice"
    tops = {".".join(m.split(".")[:2]) for m, _ in pairs}
    assert tops == {"tf.data", "tf.distribute", "tf.profiler", "tf.mixed_precision"}, tops
    modules = {m for m, _ in pairs}
    submodules = [f"{m}.{s}" for m, s in pairs if f"{m}.{s}" in modules]
    assert not submodules, f"submodule entries are not names: {submodules}"
    # spot checks against TF 2.4.4's generated files, the private-named sources included
    # (``_OptionsExported as CommunicationOptions`` is a public name)
    for row in [("tf.data", "Dataset", "tensorflow.python.data.ops.dataset_ops.DatasetV2"),
                ("tf.distribute.experimental", "CommunicationOptions",
                 "tensorflow.python.distribute.collective_util._OptionsExported"),
                ("tf.distribute.experimental", "MultiWorkerMirroredStrategy",
                 "tensorflow.python.distribute.collective_all_reduce_strategy."
                 "_CollectiveAllReduceStrategyExperimental"),
                ("tf.mixed_precision.experimental", "DynamicLossScale",
                 "tensorflow.python.training.experimental.loss_scale.DynamicLossScale"),
                ("tf.profiler.experimental.server", "start",
                 "tensorflow.python.profiler.profiler_v2.start_server")]:
        assert row in rows, row
    counts = {}
    for m, _ in pairs:
        top = ".".join(m.split(".")[:2])
        counts[top] = counts.get(top, 0) + 1
    assert counts == {"tf.data": 71, "tf.distribute": 49, "tf.profiler": 8,
                      "tf.mixed_precision": 3}, counts


def test_every_tf_name_has_a_status(report):
    _, rows = keras_names.load(keras_names.TF_NAMES)
    st = report["tf"]["statuses"]
    assert sorted((m, s) for m, names in st.items() for s, _, _ in names) == \
        sorted((m, s) for m, s, _ in rows)
    no_reason = [(m, s) for m, names in st.items() for s, x, why in names
                 if x in ("tested", "out of scope") and not why.strip()]
    assert not no_reason, f"a tested name names its test, an excluded one its reason: {no_reason}"
    flat = {(m, s): x for m, names in st.items() for s, x, _ in names}
    assert flat[("tf.data", "Dataset")] == "tested"


def test_every_name_has_a_status(report):
    _, rows = keras_names.load()
    st = report["statuses"]
    assert sorted((m, s) for m, names in st.items() for s, _, _ in names) == \
        sorted((m, s) for m, s, _ in rows)
    allowed = {"tested", "untested", "missing", "out of scope"}
    bad = [(m, s, x) for m, names in st.items() for s, x, _ in names if x not in allowed]
    assert not bad, bad
    no_reason = [(m, s) for m, names in st.items() for s, x, why in names
                 if x in ("tested", "out of scope") and not why.strip()]
    assert not no_reason, f"a tested name names its test, an excluded one its reason: {no_reason}"


def test_statuses_follow_the_code(report):
    import tnp_train as tt
    st = {(m, s): (x, note) for m, names in report["statuses"].items() for s, x, note in names}
    assert st[("keras.layers", "Dense")][0] == "tested"
    assert st[("keras.estimator", "model_to_estimator")][0] == "out of scope"
    assert hasattr(tt.layers, "Dense")
    # a name tnp_train lacks is missing, whatever the tests say
    for (m, s), (x, _) in st.items():
        obj = tt
        for part in m.split(".")[1:] + [s]:
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is None:
            assert x in ("missing", "out of scope"), (m, s, x)


def test_stub_counts_as_missing():
    import keras_coverage as kc

    def stub(x):
        """Doc."""
        raise NotImplementedError("later")

    class Stub:
        def __init__(self):
            raise NotImplementedError

    def real(x):
        if x:
            raise NotImplementedError
        return x

    assert kc.is_stub(stub) and kc.is_stub(Stub) and not kc.is_stub(real)


SYNTHETIC = """
import os
import numpy as np
import pytest
import tnp_train as tt
from tnp_train import layers as L

CLASSES = [tt.layers.Dense, L.Flatten]


def build(name):
    return getattr(tt.layers, name)(1)


def check(name):
    layer = build(name)
    assert layer.units == 1


@pytest.mark.parametrize("name", ["Dense"])
def test_through_helpers(name):
    check(name)


@pytest.mark.parametrize("cls", CLASSES)
def test_table(cls):
    assert cls is not None and cls.__name__ != ""


def test_no_comparison():
    tt.layers.Conv1D(1, 1)


@pytest.mark.skipif(True, reason="never in CI")
def test_skipped():
    assert tt.layers.LSTM(1).units == 1


def test_attribute_of_a_swept_module():
    for module in ["resnet50"]:
        assert getattr(tt.applications, module).preprocess_input is not None
"""


def test_scanner_rules_on_a_synthetic_test_file(tmp_path):
    import keras_coverage as kc
    _, rows = keras_names.load()
    names = {(m, s) for m, s, _ in rows}
    path = tmp_path / "test_synthetic_keras_names.py"
    path.write_text(SYNTHETIC)
    found = kc.scan_tests(names, {}, files=[path])
    unit = {k: v.split("::")[1] for k, v in found.items()}
    # a sweep through two helpers of the file, and a parametrize over a module-level table
    assert unit[("keras.layers", "Dense")] in ("test_through_helpers", "test_table")
    assert unit[("keras.layers", "Flatten")] == "test_table"
    # getattr(<module>, var).attr: the attribute of each swept submodule
    assert unit[("keras.applications.resnet50", "preprocess_input")] == \
        "test_attribute_of_a_swept_module"
    # no comparison, or skipped where CI runs: not tested
    assert ("keras.layers", "Conv1D") not in found
    assert ("keras.layers", "LSTM") not in found
    # a module that skips itself where an optional module is missing: nothing in it counts
    skipping = tmp_path / "test_synthetic_keras_skipped.py"
    skipping.write_text("import pytest\npytest.importorskip('no_such_module_here')\n"
                        + SYNTHETIC)
    assert kc.scan_tests(names, {}, files=[skipping]) == {}


def test_compat_page_is_current(report):
    assert DOCS.exists(), f"{DOCS.relative_to(ROOT)} is missing: {FIX}"
    text = DOCS.read_text()
    coverage = [ln for ln in report["page"].splitlines() if ln.startswith("**Coverage:")]
    assert coverage and coverage[0] in text.splitlines(), f"coverage number changed: {FIX}"
    assert text == report["page"], f"{DOCS.relative_to(ROOT)} is stale: {FIX}"


def test_tf_compat_page_is_current(report):
    assert TF_DOCS.exists(), f"{TF_DOCS.relative_to(ROOT)} is missing: {FIX}"
    assert TF_DOCS.read_text() == report["tf"]["page"], \
        f"{TF_DOCS.relative_to(ROOT)} is stale: {FIX}"
    assert "(tf-compat.md)" in DOCS.read_text(), "keras-compat.md links to tf-compat.md"


def test_later_names_have_statuses(report):
    """The TF 2.5+ names (docs/data/tf_keras_later_names.txt) are reported apart, each with a
    status, and follow the code: a name tnp_train has is not missing."""
    import keras_later_names
    later = report["later"]
    assert [(m, s) for m, s, *_ in later] == [(m, s) for m, s, _ in keras_later_names.load()]
    assert ("keras.layers", "TextVectorization") in {(m, s) for m, s, *_ in later}
    assert ("keras.strings", "regex_replace") in {(m, s) for m, s, *_ in later}
    for m, s, old, status, note in later:
        assert status in ("tested", "untested", "missing"), (m, s, status)
        assert status != "tested" or "::" in note, (m, s, note)
