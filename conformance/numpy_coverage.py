"""NumPy API coverage: is every public NumPy name present in tnp, and does a differential test use it?

Scope: the ``__all__`` lists of ``numpy``, ``numpy.linalg``, ``numpy.fft``, ``numpy.random``,
``numpy.emath`` and ``numpy.testing``, and the public names of ``numpy.lib.stride_tricks``
(``as_strided``, ``sliding_window_view``).

For each name:

* **present**: an attribute of the matching tnp module (``tnp``, ``tnp.linalg``, ...).
* **tested**: a test that compares tnp with NumPy uses it. Decided mechanically from the source of
  ``tests/tnp/*.py``, ``tests/programs/**/*.py`` and ``tests/array_api/*.py``:

  - an attribute chain on the array namespace of a differential body — a parameter named ``xp``
    (the bodies :func:`tnp.testing.both` runs under NumPy and tnp), the namespace parameter of a
    program's ``main(np)`` (run under both), or ``tnp`` itself (and names imported from tnp) inside
    a function that also refers to NumPy or calls a comparing helper (``both``, ``*same*``,
    ``compare``, ``assert_*``): ``xp.add``, ``tnp.linalg.inv``, ``xp.lib.stride_tricks.as_strided``;
  - a sweep: ``getattr(xp, name)`` (or ``getattr(tnp.linalg, name)``, ...) where ``name`` is a
    string literal, a ``pytest.mark.parametrize`` argument, or the loop variable of a ``for`` over a
    table; the parametrize values and the tables (``tnp._math.UFUNCS``, ...) are read by importing
    the test module, so every name the sweep iterates counts.

* ``numpy.ma``, ``numpy.polynomial``, ``numpy.char``, ``numpy.strings`` and ``numpy.rec`` hand over to
  NumPy's modules on the CPU: status "NumPy's module" (present; counted as covered).
* **excluded**: :data:`EXCLUDED` (at most 25 entries, each with its reason) — names that cannot
  sensibly have a differential test.

``python conformance/numpy_coverage.py`` prints the table; ``--write-docs`` writes
``docs/numpy-compat.md``; ``--check`` exits 1 if a name is missing or untested, or the page is stale.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "numpy-compat.md"
TEST_DIRS = ("tests/tnp", "tests/programs", "tests/array_api")

MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.lib.stride_tricks",
           "numpy.emath", "numpy.testing")
STRIDE_TRICKS = ("as_strided", "sliding_window_view")

# numpy.X handed over to NumPy's own module on the CPU (tnp.ma is numpy.ma, ...)
NUMPY_MODULES = {"ma", "polynomial", "char", "strings", "rec"}

# name -> reason. Things that cannot sensibly have a differential test. At most 25 entries.
EXCLUDED = {
    "numpy.__version__": "tnp's own version string (NumPy's is recorded at the top of this page)",
    "numpy.test": "runs NumPy's own test suite (a pytest session), not an array function",
    "numpy.show_config": "prints NumPy's build configuration; no array semantics to compare",
    "numpy.show_runtime": "prints NumPy's runtime/threading information; no array semantics",
    "numpy.get_include": "path of NumPy's C headers for building extensions (tnp re-exports it)",
    "numpy.info": "prints a docstring to stdout; tnp's docstrings are its own wrappers'",
    "numpy.f2py": "Fortran-to-Python interface generator (NumPy's tooling module)",
    "numpy.ctypeslib": "ctypes interop with NumPy's C array struct (NumPy's module, CPU only)",
    "numpy.typing": "static type annotations (NumPy's module); nothing runs",
    "numpy.core": "deprecated private alias of numpy._core, kept by NumPy for pickles",
    "numpy.testing.jiffies": "process CPU time in 1/100 s: differs on every call",
    "numpy.testing.memusage": "process virtual memory size: differs on every call",
    "numpy.testing.measure": "wall time of exec'ing a code string: differs on every call",
    "numpy.testing.rundocs": "runs the doctests of a module file (NumPy's test tooling)",
}
MAX_EXCLUDED = 25

# names with a documented difference (docs/differences.md): a short note and the section there
DIFFERENCES = {
    "numpy.ndarray": ("tnp's own array class, not a subclass of numpy.ndarray", "arrays"),
    "numpy.matrix": ("NumPy's class: instances live on the CPU; `*` with tnp arrays is "
                     "element-wise", "arrays"),
    "numpy.bmat": ("returns a NumPy matrix (CPU)", "arrays"),
    "numpy.asmatrix": ("returns a NumPy matrix (CPU)", "arrays"),
    "numpy.memmap": ("NumPy's class (CPU); `load(mmap_mode=)` gives a tnp array over it",
                     "arrays"),
    "numpy.recarray": ("NumPy's class (CPU)", "arrays"),
    "numpy.isscalar": ("True for a tnp.Scalar (numpy.isscalar says False)", "scalars"),
    "numpy.generic": ("reductions return tnp.Scalar, not a numpy.generic", "scalars"),
    "numpy.random.seed": ("GPU: module-level streams are cupy.random's", "on-a-gpu"),
    "numpy.random.Generator": ("GPU: draws NumPy's stream on the host, then copies",
                               "on-a-gpu"),
    "numpy.random.RandomState": ("GPU: draws NumPy's stream on the host, then copies",
                                 "on-a-gpu"),
    "numpy.random.default_rng": ("GPU: draws NumPy's stream on the host, then copies",
                                 "on-a-gpu"),
}


# ------------------------------------------------------------------------------------- scope
def scope() -> dict:
    """module name -> sorted list of public names (NumPy builds some ``__all__`` from sets, so
    their order changes from one process to the next)."""
    import numpy.lib.stride_tricks  # noqa: F401
    out = {}
    for m in MODULES:
        names = STRIDE_TRICKS if m == "numpy.lib.stride_tricks" else _resolve(np, m).__all__
        out[m] = sorted(set(names), key=lambda n: (n.lower(), n))
    return out


def _resolve(root, dotted):
    obj = root
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def tnp_module(module: str):
    import tnp
    return _resolve(tnp, "tnp" + module[len("numpy"):])


# ------------------------------------------------------------------------------- test scanning
_SUBMODULES = {"numpy.linalg", "numpy.fft", "numpy.random", "numpy.emath", "numpy.testing",
               "numpy.lib", "numpy.lib.stride_tricks", "numpy.ma", "numpy.polynomial",
               "numpy.char", "numpy.strings", "numpy.rec", "numpy.exceptions", "numpy.dtypes"}


def _chain_uses(module, parts):
    """(module, name) pairs an attribute chain ``<root of module>.parts[0].parts[1]...`` uses."""
    uses = []
    for p in parts:
        uses.append((module, p))
        sub = f"{module}.{p}"
        if sub not in _SUBMODULES:
            break
        module = sub
    return uses


def _attr_chain(node):
    """``a.b.c`` -> ('a', ['b', 'c']); None if the chain is not rooted at a Name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, parts[::-1]
    return None


class _FileScan:
    """Uses of tnp names in one test file (see the module docstring for the rules)."""

    COMPARE_WORDS = ("both", "same", "compare")

    def __init__(self, path: Path, program: bool):
        self.path = path
        self.program = program
        self.tree = ast.parse(path.read_text(), str(path))
        self.tnp_roots = {}      # local name -> numpy module it mirrors ('tnp' -> 'numpy')
        self.tnp_names = {}      # local name -> (module, name) imported from tnp
        self.numpy_names = set()  # local names bound to numpy (modules)
        self.uses = set()        # (module, name)
        self.sweeps = []         # (module, var, unit qualname, unit node)
        self._imports()

    def _imports(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    if top == "tnp":
                        if a.asname:
                            self.tnp_roots[a.asname] = "numpy" + a.name[3:]
                        else:
                            self.tnp_roots["tnp"] = "numpy"
                    elif top == "numpy":
                        self.numpy_names.add(a.asname or "numpy")
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module.split(".")[0]
                if top == "tnp":
                    mod = "numpy" + node.module[3:]
                    for a in node.names:
                        local = a.asname or a.name
                        if f"{mod}.{a.name}" in _SUBMODULES:
                            self.tnp_roots[local] = f"{mod}.{a.name}"
                        elif not a.name.startswith("_"):
                            self.tnp_names[local] = (mod, a.name)
                elif top == "numpy":
                    for a in node.names:
                        self.numpy_names.add(a.asname or a.name)

    # a "unit" is a top-level function, a method of a top-level class, or module-level code
    def units(self):
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node.name, node, None
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        yield f"{node.name}.{sub.name}", sub, node
            else:
                yield None, node, None

    def _compares(self, unit):
        for n in ast.walk(unit):
            if isinstance(n, ast.Name) and n.id in self.numpy_names:
                return True
            if isinstance(n, ast.Call):
                f = n.func
                name = f.id if isinstance(f, ast.Name) else \
                    f.attr if isinstance(f, ast.Attribute) else ""
                low = name.lower()
                if any(w in low for w in self.COMPARE_WORDS) or low.startswith("assert_"):
                    return True
        return False

    def _ns_params(self, unit):
        """Parameters that are an array namespace run under NumPy and tnp."""
        names = set()
        for n in ast.walk(unit):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = n.args.posonlyargs + n.args.args + n.args.kwonlyargs
                for i, a in enumerate(args):
                    if a.arg == "xp" or (self.program and (a.arg == "np" or (
                            isinstance(n, ast.FunctionDef) and n.name == "main" and i == 0))):
                        names.add(a.arg)
        return names

    def scan(self):
        program_roots = set()
        if self.program:
            for node in ast.walk(self.tree):
                if isinstance(node, ast.FunctionDef) and node.name == "main" and node.args.args:
                    program_roots.add(node.args.args[0].arg)
        for qual, unit, cls in self.units():
            compares = self._compares(unit)
            # a program's namespace parameter is a root inside its functions only
            roots = {r: "numpy" for r in self._ns_params(unit)
                     | (program_roots if qual is not None else set())}
            if compares:
                roots.update(self.tnp_roots)
            for n in ast.walk(unit):
                if isinstance(n, ast.Attribute):
                    ch = _attr_chain(n)
                    if ch and ch[0] in roots:
                        self.uses.update(_chain_uses(roots[ch[0]], ch[1]))
                elif isinstance(n, ast.Name) and compares and n.id in self.tnp_names:
                    self.uses.add(self.tnp_names[n.id])
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                        and n.func.id == "getattr" and len(n.args) >= 2:
                    target, key = n.args[0], n.args[1]
                    mod = None
                    if isinstance(target, ast.Name) and target.id in roots:
                        mod = roots[target.id]
                    else:
                        ch = _attr_chain(target)
                        if ch and ch[0] in roots:
                            used = _chain_uses(roots[ch[0]], ch[1])
                            last_mod, last = used[-1]
                            full = f"{last_mod}.{last}"
                            mod = full if full in _SUBMODULES else None
                    if mod is None:
                        continue
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        self.uses.add((mod, key.value))
                    elif isinstance(key, ast.Name) and qual is not None:
                        self.sweeps.append((mod, key.id, qual, unit, cls))
        return self


def _import_test_module(path: Path):
    name = "_numpy_coverage_" + "_".join(path.relative_to(ROOT).with_suffix("").parts)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec.loader.exec_module(mod)
    return mod


def _param_values(marks, var):
    """Values the parametrize marks give argument ``var``."""
    out = []
    for m in marks:
        if getattr(m, "name", None) != "parametrize":
            continue
        argnames, argvalues = m.args[0], m.args[1]
        names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if var not in names:
            continue
        i = names.index(var)
        for v in argvalues:
            v = getattr(v, "values", v)  # pytest.param(...)
            if len(names) > 1:
                v = v[i] if isinstance(v, (tuple, list)) and len(v) > i else None
            elif isinstance(v, tuple) and len(v) == 1:  # pytest.param("x") holds ("x",)
                v = v[0]
            out.append(v)
    return out


def _loop_values(unit, var, namespace):
    """Values ``var`` takes in ``for`` loops/comprehensions of ``unit`` over evaluable tables."""
    out = []
    for n in ast.walk(unit):
        gens = []
        if isinstance(n, (ast.For, ast.AsyncFor)):
            gens.append((n.target, n.iter))
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            gens.extend((g.target, g.iter) for g in n.generators)
        for target, it in gens:
            if isinstance(target, ast.Name) and target.id == var:
                idx = None
            elif isinstance(target, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == var
                                                       for e in target.elts):
                idx = next(i for i, e in enumerate(target.elts)
                           if isinstance(e, ast.Name) and e.id == var)
            else:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    values = list(eval(compile(ast.Expression(it), "<table>", "eval"),
                                       dict(namespace)))
            except Exception:  # refers to locals: not a table
                continue
            for v in values:
                if idx is None:
                    out.append(v)
                elif isinstance(v, (tuple, list)) and len(v) > idx:
                    out.append(v[idx])
    return out


def test_files():
    files = []
    for d in TEST_DIRS:
        p = ROOT / d
        if p.is_dir():
            files.extend(sorted(p.rglob("*.py")))
    return [f for f in files if f.name != "__init__.py" and "__pycache__" not in f.parts]


def scan_tests() -> dict:
    """(module, name) -> sorted list of test files (relative paths) that use it."""
    found: dict = {}
    for path in test_files():
        # a program (tests/programs/p*.py): ``def main(np)`` run under NumPy and under tnp
        program = "programs" in path.relative_to(ROOT).parts and path.name.startswith("p") \
            and not path.name.startswith("test_")
        try:
            s = _FileScan(path, program).scan()
        except SyntaxError:
            continue
        uses = set(s.uses)
        if s.sweeps:
            try:
                mod = _import_test_module(path)
            except Exception:  # noqa: BLE001 (a file being written, a missing optional dependency)
                mod = None
            if mod is not None:
                for module, var, qual, unit, cls in s.sweeps:
                    obj = mod
                    for part in qual.split("."):
                        obj = getattr(obj, part, None)
                    marks = list(getattr(obj, "pytestmark", []) or [])
                    if cls is not None:
                        marks += list(getattr(getattr(mod, cls.name, None), "pytestmark", []) or [])
                    values = _param_values(marks, var) + _loop_values(unit, var, vars(mod))
                    for v in values:
                        if isinstance(v, str):
                            uses.add((module, v))
        rel = str(path.relative_to(ROOT))
        for u in uses:
            found.setdefault(u, set()).add(rel)
    return {k: sorted(v) for k, v in found.items()}


# ------------------------------------------------------------------------------------ statuses
def _describe(module, name, tobj):
    """A short, stable note: what tnp's object is."""
    import tnp
    from tnp._core.dispatch import REGISTRY

    nobj = getattr(_resolve(np, module), name, None)
    qual = f"{module}.{name}"
    regname = (module[len("numpy."):] + "." if module != "numpy" else "") + name
    if qual in DIFFERENCES:
        return DIFFERENCES[qual][0] + f" ([differences](differences.md#{DIFFERENCES[qual][1]}))"
    if module == "numpy" and name in ("linalg", "fft", "random", "emath", "testing", "lib"):
        return f"tnp's module (table below)" if name != "lib" else "tnp's module: `lib.stride_tricks`"
    info = REGISTRY.get(regname)
    alias = ""
    if info is None or info.function is not tobj:
        info = next((i for i in REGISTRY.values() if i.function is tobj), None)
        if info is not None:
            alias = f" (alias of `{info.name}`)"
    if info is not None:
        kinds = {"ufunc": "ufunc", "creation": "creation function", "function": "function",
                 "composite": "function", "meta": "function (no array result)",
                 "inplace": "in-place function"}
        return f"{kinds.get(info.kind, info.kind)}, section {info.section}{alias}"
    if module == "numpy.testing" and name.startswith("assert_") and tobj is not nobj:
        return "NumPy's assert, accepting tnp arrays"
    if tobj is nobj:
        if isinstance(nobj, type):
            if issubclass(nobj, np.generic):
                return "NumPy's scalar type (dtypes are NumPy's)"
            if issubclass(nobj, BaseException):
                return "NumPy's exception class"
            return "NumPy's class, re-exported"
        if type(nobj).__name__ == "module":
            return "NumPy's module"
        if callable(nobj):
            return "NumPy's function, re-exported"
        return "NumPy's constant"
    if type(tobj).__name__ == "HandoverModule":   # tnp/_handover.py
        return "NumPy's module, taking tnp arrays"
    if isinstance(tobj, type):
        if isinstance(nobj, type) and issubclass(tobj, nobj):
            return "tnp's subclass of NumPy's class (tnp arrays in and out)"
        return "tnp's class"
    if callable(tobj):
        return "tnp function"
    if tobj is None and name == "newaxis":
        return "constant"
    if hasattr(type(tobj), "__getitem__"):
        return "tnp's index helper (`xp.NAME[...]`)".replace("NAME", name)
    return "tnp object"


def statuses(uses=None) -> dict:
    """module -> list of (name, status, note); status is one of 'tested', "NumPy's module",
    'excluded', 'untested', 'missing'."""
    if uses is None:
        uses = scan_tests()
    out = {}
    for module, names in scope().items():
        tmod = tnp_module(module)
        rows = []
        for name in names:
            qual = f"{module}.{name}"
            present = hasattr(tmod, name)
            tobj = getattr(tmod, name, None)
            if qual in EXCLUDED:
                rows.append((name, "excluded", EXCLUDED[qual]))
            elif not present:
                rows.append((name, "missing", ""))
            elif module == "numpy" and name in NUMPY_MODULES:
                rows.append((name, "NumPy's module", "hands over to NumPy's module on the CPU"))
            elif (module, name) in uses:
                rows.append((name, "tested", _describe(module, name, tobj)))
            else:
                rows.append((name, "untested", _describe(module, name, tobj)))
        out[module] = rows
    return out


COVERED = ("tested", "NumPy's module")


def counts(st) -> dict:
    """module -> (covered, in scope, excluded); key None for all modules together."""
    res = {}
    tot = [0, 0, 0]
    for module, rows in st.items():
        c = sum(1 for r in rows if r[1] in COVERED)
        x = sum(1 for r in rows if r[1] == "excluded")
        res[module] = (c, len(rows), x)
        tot[0] += c
        tot[1] += len(rows)
        tot[2] += x
    res[None] = tuple(tot)
    return res


def failures(st) -> list:
    return [f"{m}.{n}: {s}" for m, rows in st.items() for n, s, _ in rows
            if s in ("missing", "untested")]


def coverage_line(st) -> str:
    c, total, x = counts(st)[None]
    return (f"**Coverage: {c} / {total} names present and tested** "
            f"({x} excluded, {total - c - x} missing or untested).")


# ------------------------------------------------------------------------------------ markdown
def _cell(s):
    return s.replace("|", "\\|")


def render(st=None) -> str:
    if st is None:
        st = statuses()
    cnt = counts(st)
    lines = [
        "# NumPy API coverage",
        "",
        "<!-- generated by `python conformance/numpy_coverage.py --write-docs`; do not edit -->",
        "",
        f"NumPy version: **{np.__version__}**",
        "",
        coverage_line(st),
        "",
        "Scope: the `__all__` lists of `numpy`, `numpy.linalg`, `numpy.fft`, `numpy.random`, "
        "`numpy.emath` and `numpy.testing`, and the public names of `numpy.lib.stride_tricks`. "
        "A name is *tested* when a differential test (tnp against NumPy, in `tests/tnp/`, "
        "`tests/programs/` or `tests/array_api/`) uses it, directly or through a sweep over a "
        "section table; `tests/test_numpy_coverage.py` fails on any name that is missing or "
        "untested and not excluded, and when this page is stale. `numpy.ma`, "
        "`numpy.polynomial`, `numpy.char`, `numpy.strings` and `numpy.rec` hand over to NumPy's "
        "own modules (status *NumPy's module*). `tnp.testing` is a superset of `numpy.testing` "
        "whose asserts accept tnp arrays.",
        "",
        "| module | covered / in scope | excluded |",
        "|---|---|---|",
    ]
    for module in st:
        c, total, x = cnt[module]
        lines.append(f"| `{module}` | {c} / {total} | {x} |")
    c, total, x = cnt[None]
    lines.append(f"| all | {c} / {total} | {x} |")
    lines += ["", f"## Exclusions ({len(EXCLUDED)}, at most {MAX_EXCLUDED})", "",
              "| name | reason |", "|---|---|"]
    for qual, reason in EXCLUDED.items():
        lines.append(f"| `{qual}` | {_cell(reason)} |")
    for module, rows in st.items():
        lines += ["", f"## `{module}`", "", "| name | status | note |", "|---|---|---|"]
        for name, status, note in rows:
            lines.append(f"| `{name}` | {status} | {_cell(note)} |")
    lines += ["", "## Known differences", "",
              "On the CPU NumPy computes every value, so values, dtypes, shapes, printing and "
              "exception types are NumPy's. What differs is listed, with examples, in "
              "[Differences from NumPy](differences.md); in short:", ""]
    lines += _known_differences_lines()
    lines.append("")
    return "\n".join(lines)


# one-line summaries of the sections of docs/differences.md (a section without one here is shown
# with its first sentence)
KNOWN_DIFFERENCES = {
    "Scalars": "reductions and integer indexing return a `tnp.Scalar` (a 0-d tnp array that "
               "prints, hashes, compares and converts as a NumPy scalar), not a `numpy.generic`: "
               "`isinstance(s, float)`, `isinstance(s, numpy.generic)` and `numpy.isscalar(s)` "
               "are False, `json.dumps` needs `float(s)`, and `type(s)(v)` is a tnp.Scalar. "
               "Calling a scalar type (`np.float32(1)`) gives NumPy's scalar.",
    "Arrays": "`tnp.ndarray` is not a subclass of `numpy.ndarray` (identity and `.base` are "
              "NumPy's); `ndarray.dump` refuses to write a pickle; `matrix`, `memmap`, "
              "`recarray` are NumPy's classes living on the CPU.",
    "Warnings and errors": "NumPy's warnings carry tnp's file and line, so a warning shown "
                           "once per place appears once where NumPy shows it per line of the "
                           "program; error messages are NumPy's, with a note naming the tnp "
                           "operation.",
    "Subclasses of `tnp.ndarray`": "which results are of the subclass is NumPy's answer, call "
                                   "by call; a subclass's `__array_ufunc__` is called by ufuncs "
                                   "and operators but not by tnp's reductions, and "
                                   "`__array_wrap__` is not called.",
    "On a GPU": "functions CuPy lacks run on the host (with a warning); bfloat16 support depends "
                "on CuPy; module-level random streams are CuPy's; numbers can differ in the "
                "last bits; work is asynchronous.",
    "Speed": "a thin per-call wrapper (about 1.5× NumPy's time on tiny arrays).",
}

# differences the coverage tests showed that docs/differences.md does not (yet) describe
FOUND_BY_COVERAGE_TESTS = [
    "`np.asarray(x) is x` (also `asanyarray`, `array(x, copy=False)`) is False for a tnp array: "
    "the result is a new wrapper around the same memory (no copy is made).",
    "`np.asanyarray(m)` of a NumPy subclass instance (`numpy.ma.MaskedArray`, `numpy.matrix`) "
    "gives a `tnp.ndarray`; NumPy keeps the subclass.",
    "NumPy's own objects that tnp re-exports give NumPy arrays from their methods and "
    "attributes: bit generators (`random_raw`), `SeedSequence.generate_state`, the dict of "
    "`random.get_state(legacy=False)`, `busdaycalendar.holidays`, `poly1d.coeffs`, "
    "`matrix`/`recarray`/`memmap` results, `tnp.ma`/`tnp.char`/`tnp.rec` results, "
    "`genfromtxt(usemask=True)` (a `numpy.ma.MaskedArray`) and "
    "`testing.assert_array_max_ulp`. Convert with `np.asarray(...)` where a tnp array is needed.",
    "`numpy.testing.overrides.allows_array_function_override(tnp.mean)` is False: tnp's "
    "functions are its own, not NumPy's (NumPy's functions called on tnp arrays dispatch to "
    "tnp through `__array_function__`).",
]


def _differences_sections():
    """(heading, anchor, first sentence) of each ``## `` section of docs/differences.md."""
    import re

    path = ROOT / "docs" / "differences.md"
    if not path.exists():
        return []
    out = []
    for block in re.split(r"^## ", path.read_text(), flags=re.M)[1:]:
        heading, _, body = block.partition("\n")
        heading = heading.strip()
        anchor = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        para = " ".join(body.strip().split("\n\n")[0].split())
        para = re.sub(r"^- ", "", para).replace("**", "")  # a list's first item, plain
        first = re.split(r"(?<=[.:])\s", para, maxsplit=1)[0] if para else ""
        out.append((heading, anchor, first))
    return out


def _known_differences_lines():
    lines = []
    for heading, anchor, first in _differences_sections():
        summary = KNOWN_DIFFERENCES.get(heading, first)
        lines.append(f"- **{heading}**: {summary} ([details](differences.md#{anchor}))")
    lines += ["", "Also found by the coverage tests (not yet in differences.md):", ""]
    lines += [f"- {d}" for d in FOUND_BY_COVERAGE_TESTS]
    return lines


# ---------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-docs", action="store_true", help=f"write {DOCS.relative_to(ROOT)}")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 on missing/untested names or a stale page")
    ap.add_argument("--all", action="store_true", help="print every name, not only the gaps")
    ap.add_argument("--json", action="store_true",
                    help="print statuses, exclusions and the page as JSON (for the tests)")
    args = ap.parse_args(argv)
    st = statuses()
    if args.json:
        import json
        json.dump({"numpy_version": np.__version__, "statuses": st, "excluded": EXCLUDED,
                   "max_excluded": MAX_EXCLUDED, "failures": failures(st),
                   "counts": {str(k): v for k, v in counts(st).items()},
                   "page": render(st), "docs": str(DOCS)}, sys.stdout)
        return 0
    for module, rows in st.items():
        c, total, x = counts(st)[module]
        print(f"{module:28s} {c:4d} / {total:4d} covered, {x} excluded")
        for name, status, note in rows:
            if args.all or status in ("missing", "untested"):
                print(f"    {name:32s} {status:15s} {note}")
    print(coverage_line(st).replace("**", ""))
    print(f"NumPy {np.__version__}")
    text = render(st)
    rc = 0
    if args.write_docs:
        DOCS.write_text(text)
        print(f"wrote {DOCS.relative_to(ROOT)}")
    if args.check:
        fails = failures(st)
        if fails:
            print("missing or untested:", *fails, sep="\n  ")
            rc = 1
        if not DOCS.exists() or DOCS.read_text() != text:
            print(f"{DOCS.relative_to(ROOT)} is stale: run with --write-docs")
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
