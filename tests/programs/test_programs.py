"""Realistic NumPy programs run twice, with ``numpy`` and with ``tnp``: the printed output must be
identical and the returned results equal.

Every ``p*.py`` module in this folder defines ``main(np)``, which uses only the module it is given,
prints its results and returns a dict of them. A difference is a tnp bug (see docs/differences.md
for the deliberate ones, which programs do not rely on).
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import pathlib

import numpy
import pytest

import tnp

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = sorted(HERE.glob("p[0-9]*.py"))


def _load(path):
    spec = importlib.util.spec_from_file_location(f"tnp_program_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(mod, np):
    """``mod.main(np)`` with stdout captured and NumPy's print options restored afterwards."""
    saved = numpy.get_printoptions()
    buf = io.StringIO()
    try:
        with numpy.printoptions(), contextlib.redirect_stdout(buf):
            result = mod.main(np)
    finally:
        numpy.set_printoptions(**saved)
    return buf.getvalue(), result


def _is_array(x):
    return isinstance(x, (numpy.ndarray, tnp.ndarray)) and not isinstance(x, tnp.Scalar)


def _is_scalar(x):
    return isinstance(x, (numpy.generic, tnp.Scalar))


def _compare(expected, got, where):
    if isinstance(expected, dict):
        assert isinstance(got, dict), f"{where}: expected a dict, got {type(got).__name__}"
        assert list(expected) == list(got), f"{where}: keys {list(expected)} != {list(got)}"
        for k in expected:
            _compare(expected[k], got[k], f"{where}[{k!r}]")
    elif isinstance(expected, (list, tuple)) and not hasattr(expected, "_fields"):
        assert type(got) is type(expected), \
            f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        assert len(got) == len(expected), f"{where}: length {len(got)} != {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            _compare(e, g, f"{where}[{i}]")
    elif _is_array(expected):
        assert _is_array(got), f"{where}: expected an array, got {type(got).__name__}: {got!r}"
        g = numpy.asarray(got)
        assert g.dtype == expected.dtype, f"{where}: dtype {g.dtype} != {expected.dtype}"
        assert g.shape == expected.shape, f"{where}: shape {g.shape} != {expected.shape}"
        numpy.testing.assert_array_equal(g, numpy.asarray(expected), err_msg=where, strict=True)
    elif _is_scalar(expected):
        assert _is_scalar(got), f"{where}: expected a scalar, got {type(got).__name__}: {got!r}"
        assert repr(got) == repr(expected), f"{where}: {got!r} != {expected!r}"
    else:
        assert type(got) is type(expected), \
            f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        assert got == expected, f"{where}: {got!r} != {expected!r}"


def _first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}:\n  numpy: {x!r}\n  tnp:   {y!r}"
    return f"numpy printed {len(la)} lines, tnp {len(lb)}"


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program(path):
    mod = _load(path)
    out_np, res_np = _run(mod, numpy)
    out_tnp, res_tnp = _run(mod, tnp)
    assert out_np.strip(), f"{path.name} printed nothing"
    assert out_tnp == out_np, f"{path.name}: printed output differs at {_first_difference(out_np, out_tnp)}"
    assert isinstance(res_np, dict), f"{path.name}: main must return a dict"
    _compare(res_np, res_tnp, path.stem)


# ---------------------------------------------------------------------------- suite size
def _np_names(source):
    """Distinct NumPy names a program uses: attribute chains rooted at ``np`` (``np.linalg.svd``
    counts as ``linalg.svd``)."""
    tree = ast.parse(source)
    names = set()
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        parts = []
        cur = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id == "np":
            names.add(".".join(reversed(parts)))
    return names


def test_suite_size():
    assert len(PROGRAMS) >= 30, f"only {len(PROGRAMS)} programs"
    everything = set()
    for p in PROGRAMS:
        src = p.read_text()
        n_lines = len(src.splitlines())
        assert n_lines >= 40, f"{p.name}: {n_lines} lines (< 40)"
        names = _np_names(src)
        assert len(names) >= 8, f"{p.name}: {len(names)} distinct np names (< 8): {sorted(names)}"
        assert "def main(np)" in src, f"{p.name}: no main(np)"
        everything |= names
    assert len(everything) >= 150, f"{len(everything)} distinct NumPy names in all (< 150)"
