"""docs/design.md's floor table is the import-layer test's table (which that test holds the
code to): the same rooms on the same floors, so the architecture page cannot drift."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_import_layers  # noqa: E402


def _doc_floors():
    text = (ROOT / "docs" / "design.md").read_text()
    floors = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|(.*)\|\s*$", line)
        if m:
            floors[int(m.group(1))] = set(re.findall(r"`([\w.]+)`", m.group(2)))
    return floors


def test_the_design_page_has_the_tests_floors():
    want = {i: set(layer) for i, layer in enumerate(test_import_layers.LAYERS)}
    got = _doc_floors()
    assert got == want, (f"docs/design.md's floor table differs from "
                         f"tests/tnp_train/test_import_layers.py's LAYERS:\n  doc: {got}\n  "
                         f"test: {want}")
