"""tnp_train reaches tnp only through its public names and ``tnp.extend``.

An AST scan of every module of tnp_train fails on:
  * importing a private tnp module (``import tnp._core``, ``from tnp._core.x import y``,
    ``from tnp import _core``) or reading a private attribute of the ``tnp`` package
    (``tnp._core``);
  * reading or writing a private attribute that tnp's own classes define (``x._a``, ``x._dev``,
    ``x._getitem_py``, ``device._backend``...), on any object: the scan cannot know types, so
    these names are reserved for tnp throughout tnp_train.
"""
import ast
import pathlib

import pytest

import tnp
import tnp_train

ROOT = pathlib.Path(tnp_train.__file__).parent


def _tnp_private_names():
    """Private attribute names defined by tnp's public classes (and their slots)."""
    classes = [tnp.ndarray, tnp.Scalar, tnp.Device, type(tnp.device("cpu"))]
    names = set()
    for cls in classes:
        for klass in cls.__mro__:
            if klass is object:
                continue
            for n in list(vars(klass)) + list(getattr(klass, "__slots__", ())):
                if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
                    names.add(n)
    return names


def _scan(source, filename, private):
    tree = ast.parse(source, filename)
    bad = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "tnp" and any(p.startswith("_") for p in parts[1:]):
                    bad.append(f"{where}: import {a.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            parts = mod.split(".")
            if node.level == 0 and parts[0] == "tnp":
                if any(p.startswith("_") for p in parts[1:]):
                    bad.append(f"{where}: from {mod} import ...")
                for a in node.names:
                    if a.name.startswith("_"):
                        bad.append(f"{where}: from {mod} import {a.name}")
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "tnp" and \
                    node.attr.startswith("_") and not node.attr.startswith("__"):
                bad.append(f"{where}: tnp.{node.attr}")
            elif node.attr in private:
                bad.append(f"{where}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and node.args[1].value in private:
            bad.append(f"{where}: {node.func.id}(..., {node.args[1].value!r})")
    return bad


def test_private_names_are_found():
    private = _tnp_private_names()
    assert {"_a", "_dev"} <= private


@pytest.mark.parametrize("snippet", [
    "import tnp._core.ndarray",
    "from tnp._core.ndarray import wrap",
    "from tnp import _core",
    "x = tnp._core",
    "y = x._a",
    "x._dev = d",
    "getattr(x, '_a')",
])
def test_the_scan_catches_each_form(snippet):
    assert _scan(snippet, "<snippet>", _tnp_private_names())


def test_tnp_train_uses_only_public_tnp():
    private = _tnp_private_names()
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        bad += _scan(path.read_text(), str(path.relative_to(ROOT.parent)), private)
    assert not bad, "tnp_train touches tnp internals (use tnp.extend):\n" + "\n".join(bad)
