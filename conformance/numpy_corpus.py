"""Run a folder of NumPy programs under NumPy and under tnp and compare what they print.

    python conformance/numpy_corpus.py FOLDER [--timeout S] [--jobs N] [--json OUT] [--call-main]
                                       [--seed N|none]

Every ``*.py`` file under FOLDER (recursively) that imports NumPy runs twice, each time in a fresh
interpreter with the program's folder as working directory (``PYTHONHASHSEED=0``,
``MPLBACKEND=Agg``, ``random`` and ``numpy.random`` seeded, unseeded ``default_rng()`` given
successive seeds): once as it is, once with its own ``import numpy`` statements resolved to tnp.
The standard output and the exit status must be identical. Programs that import an unavailable
package, or that read the keyboard, the network or open windows, are reported as skipped with the
reason. A program that fails under NumPy itself is an "error" (it says nothing about tnp). The
table lists each program with same / different / error / skipped and, for a difference, the first
differing pair of lines; a difference is marked nondeterministic when a second NumPy run does not
repeat the first (timings). The exit status is 0 whatever the outcome (the runner measures;
tests/tnp/test_numpy_corpus.py asserts).

The redirection is a ``builtins.__import__`` hook rather than a meta-path finder replacing the
``numpy`` module: only imports made by the corpus's own files (``import numpy as np``, ``import
numpy.linalg``, ``from numpy.fft import fft``, also inside doctests) get tnp, so SciPy, pandas or
Matplotlib imported by the program keep the real NumPy they are compiled against, as they do when
a user writes ``import tnp as np``. ``importlib.import_module("numpy")`` is not redirected.

``--call-main`` is for programs written as ``def main(np)`` (tests/programs/): after the module
has run, ``main`` is called with ``numpy`` or ``tnp``.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

# Run with ``python -c``: argv is [mode, program, root, call_main].
_BOOTSTRAP = r"""
import builtins, os, runpy, sys
mode, path, root, call_main, seed = sys.argv[1:6]
sys.argv = [path]
sys.path.insert(0, os.path.dirname(path))
root = os.path.join(os.path.realpath(root), "")
if seed != "none":
    # Unseeded generators would make most random programs incomparable; tnp.random's legacy
    # functions share NumPy's global RandomState, so one seed serves both runs.
    import itertools, random, numpy.random
    random.seed(int(seed))
    numpy.random.seed(int(seed))
    _seeds = itertools.count(int(seed))

    def _seeded(default_rng):
        def seeded_default_rng(seed=None):
            return default_rng(next(_seeds) if seed is None else seed)
        return seeded_default_rng

    numpy.random.default_rng = _seeded(numpy.random.default_rng)
if mode == "tnp":
    import numpy, tnp  # tnp binds the real NumPy before user imports are redirected
    if seed != "none":
        tnp.random.default_rng = _seeded(tnp.random.default_rng)
    _import = builtins.__import__

    def _ours(g):
        f = g.get("__file__") if g else None
        return bool(f) and os.path.realpath(f).startswith(root)

    import dis
    _IMPORT_NAME = dis.opmap["IMPORT_NAME"]

    def _import_statement(frame):
        # NumPy's C code imports its private modules with the calling Python frame's globals
        # (PyImport_Import): only an import statement in the program itself is redirected.
        return frame is not None and frame.f_code.co_code[frame.f_lasti] == _IMPORT_NAME

    def _hook(name, globals=None, locals=None, fromlist=(), level=0):
        if (level == 0 and (name == "numpy" or name.startswith("numpy."))
                and not name.startswith("numpy._") and _ours(globals)
                and _import_statement(sys._getframe(1))):
            name = "tnp" + name[5:]
        return _import(name, globals, locals, fromlist, level)

    builtins.__import__ = _hook
import doctest
_testmod = doctest.testmod


def _counted_testmod(*args, **kwargs):
    # A passing doctest run prints nothing; the count shows that the examples did run.
    r = _testmod(*args, **kwargs)
    print(f"[corpus] doctest: {r.attempted} examples, {r.failed} failed")
    return r


doctest.testmod = _counted_testmod
g = runpy.run_path(path, run_name="__main__")
if call_main == "1" and callable(g.get("main")):
    import importlib
    g["main"](importlib.import_module(mode))
"""

# (module or dotted call, reason) that make a program unsuitable for an unattended comparison.
_INTERACTIVE_CALLS = {
    "input": "reads the keyboard (input())",
    "getpass.getpass": "reads the keyboard (getpass)",
    "cv2.imshow": "opens a window (cv2.imshow)",
    "cv2.waitKey": "waits for a key (cv2.waitKey)",
    "webbrowser.open": "opens a browser",
}
_INTERACTIVE_MODULES = {
    "tkinter": "opens a window (tkinter)",
    "turtle": "opens a window (turtle)",
    "pygame": "opens a window (pygame)",
    "requests": "uses the network (requests)",
    "urllib.request": "uses the network (urllib.request)",
    "socket": "uses the network (socket)",
    "http.client": "uses the network (http.client)",
    "httpx": "uses the network (httpx)",
}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _guarded_nodes(tree):
    """ids of the nodes inside ``try`` bodies: an import there has a fallback."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _local_module(name, program, root):
    """Whether ``name`` is a module or package beside the program (or in a folder above it, up to
    the corpus root), as ``sys.path[0]`` or the corpus's own package layout would find it."""
    d = program.parent
    while True:
        if (d / f"{name}.py").exists() or (d / name).is_dir():   # module, package, namespace
            return True
        if d == root or d.parent == d:
            return False
        d = d.parent


def classify(program: pathlib.Path, root: pathlib.Path, call_main=False):
    """``None`` when the program should run, else the reason it is skipped (a ``main(np)``
    program is given NumPy rather than importing it)."""
    try:
        tree = ast.parse(program.read_text(encoding="utf-8"), filename=str(program))
    except (SyntaxError, UnicodeDecodeError, ValueError) as e:
        return f"does not parse: {type(e).__name__}"
    guarded = _guarded_nodes(tree)
    imports = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports += [(a.name, node) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imports.append((node.module, node))
    if not call_main and not any(m == "numpy" or m.startswith("numpy.") for m, _ in imports):
        return "does not import numpy"
    for mod, node in imports:
        for bad, reason in _INTERACTIVE_MODULES.items():
            if mod == bad or mod.startswith(bad + "."):
                return reason
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in _INTERACTIVE_CALLS:
                return _INTERACTIVE_CALLS[name]
        if isinstance(node, ast.Attribute) and _dotted(node) == "sys.stdin":
            return "reads standard input (sys.stdin)"
    missing = []
    for mod, node in imports:
        if id(node) in guarded:
            continue
        top = mod.split(".")[0]
        if top in missing or _local_module(top, program, root):
            continue
        if importlib.util.find_spec(top) is None:
            missing.append(top)
    if missing:
        return "needs unavailable package(s): " + ", ".join(missing)
    return None


def _env():
    env = dict(os.environ)
    env.update(PYTHONHASHSEED="0", MPLBACKEND="Agg", PYTHONIOENCODING="utf-8",
               # one BLAS thread: reductions in a fixed order, and kind to a shared machine
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONSTARTUP", None)
    return env


def _run_one(python, mode, program, root, timeout, call_main, seed):
    cmd = [python, "-c", _BOOTSTRAP, mode, str(program), str(root), "1" if call_main else "0",
           "none" if seed is None else str(int(seed))]
    try:
        p = subprocess.run(cmd, cwd=program.parent, env=_env(), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return {"rc": None, "stdout": out, "stderr": f"timed out after {timeout} s"}
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def _last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return {"line": i + 1, "numpy": x, "tnp": y}
    if len(la) != len(lb):
        i = min(len(la), len(lb))
        return {"line": i + 1, "numpy": la[i] if i < len(la) else "<end of output>",
                "tnp": lb[i] if i < len(lb) else "<end of output>"}
    return None


def compare(program, root, timeout=60.0, call_main=False, python=sys.executable, seed=0):
    """One program's record: ``{"program", "result", "detail", ...}``."""
    rel = str(program.relative_to(root))
    reason = classify(program, root, call_main)
    if reason:
        return {"program": rel, "result": "skipped", "detail": reason}
    ref = _run_one(python, "numpy", program, root, timeout, call_main, seed)
    if ref["rc"] != 0:
        return {"program": rel, "result": "error",
                "detail": "fails under NumPy: " + _last_line(ref["stderr"]), "numpy_rc": ref["rc"]}
    got = _run_one(python, "tnp", program, root, timeout, call_main, seed)
    rec = {"program": rel, "numpy_rc": ref["rc"], "tnp_rc": got["rc"],
           "lines": len(ref["stdout"].splitlines())}
    if got["rc"] == ref["rc"] and got["stdout"] == ref["stdout"]:
        rec.update(result="same", detail="" if ref["stdout"] else "(prints nothing)")
        return rec
    rec["result"] = "different"
    again = _run_one(python, "numpy", program, root, timeout, call_main, seed)
    if again["rc"] != ref["rc"] or again["stdout"] != ref["stdout"]:
        # timings, unseeded generators: NumPy does not repeat itself either
        rec["nondeterministic"] = True
    diff = first_difference(ref["stdout"], got["stdout"])
    if got["rc"] != ref["rc"]:
        rec["detail"] = f"exit status {ref['rc']} vs {got['rc']}: " + _last_line(got["stderr"])
        if diff:
            rec["first_difference"] = diff
    else:
        rec["first_difference"] = diff
        rec["detail"] = (f"line {diff['line']}: numpy {diff['numpy']!r} | tnp {diff['tnp']!r}"
                         if diff else "")
    if rec.get("nondeterministic"):
        rec["detail"] = "nondeterministic (two NumPy runs differ); " + rec["detail"]
    return rec


def run_corpus(folder, timeout=60.0, jobs=2, call_main=False, pattern="*.py",
               python=sys.executable, seed=0):
    root = pathlib.Path(folder).resolve()
    programs = sorted(p for p in root.rglob(pattern)
                      if p.is_file() and "__pycache__" not in p.parts)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(lambda p: compare(p, root, timeout, call_main, python, seed),
                           programs))


def summary(records):
    counts = {k: 0 for k in ("same", "different", "error", "skipped")}
    for r in records:
        counts[r["result"]] += 1
    counts["nondeterministic"] = sum(1 for r in records if r.get("nondeterministic"))
    return counts


def format_table(records):
    width = max([len(r["program"]) for r in records] + [7])
    lines = [f"{'program':<{width}}  {'result':<9}  detail", "-" * (width + 30)]
    for r in records:
        detail = r.get("detail", "")
        if len(detail) > 200:
            detail = detail[:197] + "..."
        lines.append(f"{r['program']:<{width}}  {r['result']:<9}  {detail}")
    c = summary(records)
    nondet = sum(1 for r in records if r.get("nondeterministic"))
    lines.append("-" * (width + 30))
    lines.append(f"{len(records)} programs: {c['same']} same, {c['different']} different "
                 f"({nondet} of them nondeterministic under NumPy alone), {c['error']} error, "
                 f"{c['skipped']} skipped")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="programs run at once (default 2)")
    ap.add_argument("--json", dest="json_out", help="write the records to this file")
    ap.add_argument("--call-main", action="store_true",
                    help="call main(np) after running each program (tests/programs/ style)")
    ap.add_argument("--pattern", default="*.py", help="file glob (default *.py)")
    ap.add_argument("--seed", default="0",
                    help="seed for random, numpy.random and unseeded default_rng() calls "
                         "(successive calls get seed, seed+1, ...); 'none' leaves them unseeded")
    args = ap.parse_args(argv)
    seed = None if args.seed == "none" else int(args.seed)
    if not pathlib.Path(args.folder).is_dir():
        ap.error(f"{args.folder}: not a folder")
    records = run_corpus(args.folder, args.timeout, args.jobs, args.call_main, args.pattern,
                         seed=seed)
    print(format_table(records))
    if args.json_out:
        pathlib.Path(args.json_out).write_text(
            json.dumps({"summary": summary(records), "programs": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
