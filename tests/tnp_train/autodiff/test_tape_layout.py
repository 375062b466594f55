"""The tape's parts import one way, and the VJP modules share helpers only through ``_helpers``.

``tape.py`` is the API over ``recording``, ``backward``, ``inplace`` and ``nodes``; none of
those imports ``tape`` (at import time or inside a function), and among them the imports
follow ``nodes`` < ``inplace`` < ``recording``, ``backward``. A ``vjps`` module takes no
private name from another ``vjps`` module except ``_helpers``."""
import ast
import pathlib

import pytest

import tnp_train.autodiff

ROOT = pathlib.Path(tnp_train.autodiff.__file__).parent
PARTS = {"nodes": set(), "inplace": {"nodes"}, "recording": {"nodes", "inplace"},
         "backward": {"nodes", "inplace"}}


def _relative_imports(path):
    """(module imported, names) for every import of a sibling module, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1 and mod:
                out.append((mod.split(".")[0], [a.name for a in node.names]))
            elif node.level == 1:
                out.extend((a.name, []) for a in node.names)
            elif node.level == 0 and mod.startswith("tnp_train.autodiff."):
                out.append((mod.split(".")[2], [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tnp_train.autodiff."):
                    out.append((a.name.split(".")[2], []))
    return out


@pytest.mark.parametrize("part", sorted(PARTS))
def test_the_parts_of_the_tape_import_one_way(part):
    imported = {m for m, _ in _relative_imports(ROOT / f"{part}.py")}
    assert "tape" not in imported
    assert imported & set(PARTS) <= PARTS[part], imported


@pytest.mark.parametrize("path", sorted((ROOT / "vjps").glob("*.py")), ids=lambda p: p.stem)
def test_vjp_modules_share_private_helpers_only_through_helpers(path):
    siblings = {p.stem for p in (ROOT / "vjps").glob("*.py")}
    bad = [(m, n) for m, names in _relative_imports(path) if m in siblings and m != "_helpers"
           for n in names if n.startswith("_")]
    assert not bad
