"""Imports point down (docs: DESIGN.md's layer table): no module of tnp_train imports a module
of a higher floor, at module level or inside a function, no import circle joins two rooms, and
importing a subpackage of tnp_train loads no module of a higher floor.

The source check reads every import statement of every module from its syntax tree (and the
calls that import a module named by a string), resolves relative imports, and checks each
against ``LAYERS``; ``report()`` (``python tests/tnp_train/test_import_layers.py [root]``)
counts the arrows between rooms, those pointing up, and the import circles.

The runtime check: one subprocess imports tnp (below all of tnp_train), checks that no
tnp_train module is loaded, then forks one child per entry of ``TARGETS``; each child starts
from that tnp_train-free interpreter, records who imports each tnp_train module (a meta-path
finder looks at the importing frame), imports its target and reports every tnp_train module in
``sys.modules``. A module above the target's floor fails the test, named with the chain of
imports that brought it in (``file:line`` of each import statement).
"""
import ast
import json
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The floors of tnp_train, lowest first: DESIGN.md's layers, with the modules it does not list
# placed by what they import, and the rooms (the entries) placed where the code puts them. A
# module belongs to the longest entry it starts with (its room); a module may import its own
# floor and the floors below, at module level or inside a function (the source scan below), and
# no import circle may join two rooms.
LAYERS = [
    # tnp_train's base: tnp and the standard library only (every package may use these). The
    # package itself is the public namespace: it imports its subpackages on first use (PEP 562).
    # tt.summary: TensorBoard summaries from any code (it imports nothing of tnp_train)
    # tt.strings: the tf.strings operations, on NumPy and tnp arrays (tnp and NumPy only)
    # tt.errors (tf.errors' classes), tt.sparse (SparseTensor), tt.io (TFRecord files and
    # tf.train.Example parsing: errors, sparse, protobuf, crc32c)
    ("tnp_train", "tnp_train.utils", "tnp_train.backend.config", "tnp_train.summary",
     "tnp_train.strings", "tnp_train.errors", "tnp_train.sparse", "tnp_train.io"),
    # DESIGN.md: autodiff, mixed_precision.Policy, initializers; and, needing only these:
    # the fused ops (autodiff), activations (ops, autodiff), regularizers and constraints
    # (tnp, utils)
    # tt.function (compiler): tnp's compiler, with the tapes inside compiled functions
    ("tnp_train.autodiff", "tnp_train.mixed_precision", "tnp_train.initializers",
     "tnp_train.ops", "tnp_train.activations", "tnp_train.regularizers",
     "tnp_train.constraints", "tnp_train.compiler"),
    # DESIGN.md: layers, losses, metrics, optimizers (+ LossScaleOptimizer), checkpoint, data;
    # and tt.train (checkpoint's API), the input helpers beside data (preprocessing, datasets);
    # distribute (DESIGN.md puts the strategies a floor up, but the layers, losses, metrics and
    # checkpoints ask the replica context, and the strategies need nothing above data and the
    # optimizers), and tt.nn (the loss-scaling helpers, which ask the strategy)
    ("tnp_train.layers", "tnp_train.losses", "tnp_train.metrics", "tnp_train.optimizers",
     "tnp_train.mixed_precision.loss_scale_optimizer", "tnp_train.mixed_precision.loss_scale",
     "tnp_train.mixed_precision.experimental",
     "tnp_train.checkpoint", "tnp_train.data", "tnp_train.train", "tnp_train.preprocessing",
     "tnp_train.datasets", "tnp_train.distribute", "tnp_train.nn"),
    # DESIGN.md: trainers, callbacks, profiler (the callbacks above the fit loops, which are
    # handed the callbacks by the model)
    ("tnp_train.trainers", "tnp_train.callbacks", "tnp_train.profiler"),
    # DESIGN.md: the models, users' entry points; and what builds or wraps models: the
    # applications, the Keras backend functions (a function on symbolic tensors is a layer,
    # ``function`` builds a model)
    ("tnp_train.models", "tnp_train.applications", "tnp_train.experimental",
     "tnp_train.wrappers", "tnp_train.backend"),
]
# entries that are one room with another: LossScaleOptimizer is an optimizer (DESIGN.md:
# "optimizers (+ LossScaleOptimizer)"), kept with mixed precision; optimizers.deserialize names
# it and it subclasses the optimizers' base class. The loss scales (TF 2.4's LossScale classes)
# are the state it keeps, one room with it.
ROOM = {"tnp_train.mixed_precision.loss_scale_optimizer": "tnp_train.optimizers",
        "tnp_train.mixed_precision.loss_scale": "tnp_train.optimizers"}
LEVEL = {prefix: i for i, layer in enumerate(LAYERS) for prefix in layer}
# every entry of the table; and each module of utils (the base every package may import, which
# loads its modules only when first used) and of ops (whose package imports none of them)
TARGETS = sorted(LEVEL) + sorted(f"tnp_train.{p.parent.name}.{p.stem}"
                                 for folder in ("utils", "ops")
                                 for p in (ROOT / "tnp_train" / folder).glob("*.py")
                                 if p.stem != "__init__")
KNOWN = {}   # modules known to break the runtime rule (a strict xfail each)
# (importer, imported) -> why an import may point up; each must still be in the source
UPWARD_EXCEPTIONS = {}


def level_of(module, level=None):
    """(floor, room) of a tnp_train module; (None, None) if the table lacks it. ``level``: another
    table's ``{entry: floor}`` (each entry its own room), to count an older tree by its table."""
    level, rooms = (LEVEL, ROOM) if level is None else (level, {})
    parts = module.split(".")
    # the entry "tnp_train" is the package's own module, not a catch-all for the subpackages
    # the table lacks
    for n in range(len(parts), 0 if len(parts) == 1 else 1, -1):
        prefix = ".".join(parts[:n])
        if prefix in level:
            return level[prefix], rooms.get(prefix, prefix)
    return None, None


# ------------------------------------------------------------------ the imports in the source
# The runtime check below sees what importing a package loads, not what its functions import
# when called: an import inside a function is an arrow all the same (it ties two packages
# together and hides a circle from a fresh interpreter). So every import of every module is
# also read from its syntax tree, at module level and inside functions, together with the
# calls that import a module named by a string (importlib.import_module, LazyModule).
Import = namedtuple("Import", "importer imported where in_function")
_IMPORTING_CALLS = {"import_module", "LazyModule", "__import__"}


def module_files(root=ROOT):
    """{dotted name: path} of every module of tnp_train under ``root``."""
    out = {}
    for path in sorted((root / "tnp_train").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _lazy_table(tree):
    """A package's PEP 562 table ``_NAMES`` as ``{name: submodule}``: ``from pkg import name``
    imports that submodule."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id == "_NAMES" for t in node.targets):
            table = {}
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(value, ast.Tuple) and value.elts:    # (module, attribute)
                    value = value.elts[0]
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                    table[key.value] = value.value
            return table
    return {}


class _ImportFinder(ast.NodeVisitor):
    """``(module, name or None, line, in a function)`` of each import in one module."""

    def __init__(self, package):
        self.package, self.depth, self.found = package, 0, []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        self.found += [(a.name, None, node.lineno, self.depth > 0) for a in node.names]

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            package = self.package.split(".")
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([node.module] if node.module else []))
        self.found += [(base, a.name, node.lineno, self.depth > 0) for a in node.names]

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _IMPORTING_CALLS and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self.found.append((node.args[0].value, None, node.lineno, self.depth > 0))
        self.generic_visit(node)


def source_imports(root=ROOT):
    """Every import of a tnp_train module by a tnp_train module under ``root``, as
    ``Import(importer, imported, "file:line", in_function)``; ``from pkg import name`` imports
    ``pkg.name`` when that is a module (or a name of pkg's lazy table), else ``pkg``."""
    files = module_files(root)
    trees = {m: ast.parse(p.read_text(), str(p)) for m, p in files.items()}
    lazy = {m: _lazy_table(t) for m, t in trees.items() if files[m].name == "__init__.py"}
    out = []
    for module, tree in trees.items():
        finder = _ImportFinder(module if files[module].name == "__init__.py"
                               else module.rpartition(".")[0])
        finder.visit(tree)
        for base, name, line, in_function in finder.found:
            if base.split(".")[0] != "tnp_train":
                continue
            imported = base
            if name not in (None, "*"):
                if f"{base}.{name}" in files:
                    imported = f"{base}.{name}"
                elif name in lazy.get(base, {}):
                    imported = f"{base}.{lazy[base][name]}"
            out.append(Import(module, imported,
                              f"{files[module].relative_to(root)}:{line}", in_function))
    return out


def _circles(edges):
    """The strongly connected components of more than one node of a directed graph."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):     # Tarjan's algorithm; the graphs here are a few hundred nodes deep
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return out


def upward(imports, level=None):
    """The imports whose imported module sits on a higher floor than its importer."""
    return [i for i in imports
            if (level_of(i.imported, level)[0] or 0) > (level_of(i.importer, level)[0] or 0)]


def measure(imports, level=None):
    """The numbers of issue 29: arrows between rooms (table entries), those pointing up,
    circles of rooms, and circles of modules that span more than one room."""
    room = {m: level_of(m, level)[1] for i in imports for m in (i.importer, i.imported)}
    arrows = {(room[i.importer], room[i.imported]) for i in imports
              if room[i.importer] != room[i.imported]}
    ups = {(room[i.importer], room[i.imported]) for i in upward(imports, level)}
    room_circles = _circles(arrows)
    module_circles = [c for c in _circles({(i.importer, i.imported) for i in imports})
                      if len({room[m] for m in c}) > 1]
    return {"arrows": len(arrows), "upward arrows": len(ups),
            "upward imports": len(upward(imports, level)),
            "room circles": len(room_circles),
            "largest room circle (rooms)": max(map(len, room_circles), default=0),
            "module circles across rooms": len(module_circles),
            "largest module circle (modules, rooms)": max(
                ((len(c), len({room[m] for m in c})) for c in module_circles), default=(0, 0))}


def report(root=ROOT, layers=None):
    """The numbers above for the tree under ``root``, module-level imports only and all
    imports; ``python tests/tnp_train/test_import_layers.py [root]`` prints them."""
    level = None if layers is None else {p: i for i, layer in enumerate(layers) for p in layer}
    imports = source_imports(Path(root))
    lines = []
    for title, chosen in (("module level", [i for i in imports if not i.in_function]),
                          ("with function-level imports", imports)):
        lines.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in
                                              measure(chosen, level).items()))
    lines.append(f"imports inside functions: {sum(i.in_function for i in imports)}, "
                 f"pointing up: {len(upward([i for i in imports if i.in_function], level))}")
    return "\n".join(lines)


_PROBE = r"""
import importlib, json, os, sys
import tnp  # below tnp_train: imported once, before the forks
try:
    import numba  # noqa: F401  (third-party, heavy: the fused kernels' modules import it)
except ImportError:
    pass
ROOT, TARGETS = sys.argv[1], json.loads(sys.argv[2])
pre = sorted(m for m in sys.modules if m.split(".")[0] == "tnp_train")
if pre:
    print(json.dumps({"error": f"tnp_train modules loaded before any import: {pre}"}))
    sys.exit(0)


def _importing(f, name):
    # a frame of another tnp_train module, not a PEP 562 __getattr__ (that imports for its caller)
    mod = f.f_globals.get("__name__", "")
    return mod.split(".")[0] == "tnp_train" and mod != name and f.f_code.co_name != "__getattr__"


class Recorder:
    # who imports each tnp_train module: the nearest importing frame
    importers = {}

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] == "tnp_train" and name not in cls.importers:
            f = sys._getframe(1)
            while f is not None and not _importing(f, name):
                f = f.f_back
            cls.importers[name] = None if f is None else (
                f.f_globals["__name__"],
                f"{os.path.relpath(f.f_code.co_filename, ROOT)}:{f.f_lineno}")
        return None


results = {}
for target in TARGETS:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        sys.meta_path.insert(0, Recorder)
        try:
            mod = importlib.import_module(target)
            out = {"file": getattr(mod, "__file__", None),
                   "modules": sorted(m for m in sys.modules if m.split(".")[0] == "tnp_train"),
                   "importers": Recorder.importers}
        except BaseException as e:
            out = {"error": f"{type(e).__name__}: {e}"}
        with os.fdopen(w, "w") as f:
            f.write(json.dumps(out))
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    os.waitpid(pid, 0)
    results[target] = json.loads(data) if data else {"error": "the child died"}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def imports():
    """{target: {"file", "modules", "importers"}} from fresh interpreters (see the docstring)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT), json.dumps(TARGETS)],
                          cwd=ROOT, capture_output=True, text=True, timeout=250)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in out, out.get("error")
    return out


def chain(importers, module):
    """``a (file:line) -> b (file:line) -> module``: the imports that loaded ``module``."""
    steps, seen = [module], {module}
    while importers.get(module) is not None:
        module, where = importers[module]
        steps[-1] = f"{steps[-1]} (imported at {where})"
        if module in seen:
            break
        seen.add(module)
        steps.append(module)
    return " <- ".join(steps)


def test_the_table_places_every_tnp_train_package():
    """A new subpackage must be given a layer here (and in DESIGN.md)."""
    packages = {f"tnp_train.{p.name}" for p in (ROOT / "tnp_train").iterdir()
                if (p / "__init__.py").exists() or (p.suffix == ".py" and p.stem != "__init__")}
    assert sorted(p for p in packages if level_of(p)[0] is None) == []


def test_every_entry_of_the_table_is_in_the_tree():
    """The table names what the code is: no entry is left from a module that is gone."""
    files = module_files()
    assert sorted(p for p in LEVEL if not any(m == p or m.startswith(p + ".") for m in files)) \
        == []


@pytest.fixture(scope="module")
def source():
    return source_imports()


def test_the_table_places_every_module(source):
    modules = {m for i in source for m in (i.importer, i.imported)} | set(module_files())
    assert sorted(m for m in modules if level_of(m)[0] is None) == []


def test_no_import_points_up(source):
    """Module level and inside functions alike; the message names each import (file:line)."""
    bad = [i for i in upward(source) if (i.importer, i.imported) not in UPWARD_EXCEPTIONS]
    assert not bad, "\n".join(
        f"{i.where}: {i.importer} (floor {level_of(i.importer)[0]}) imports {i.imported} "
        f"(floor {level_of(i.imported)[0]})" + (" inside a function" if i.in_function else "")
        for i in sorted(bad)) + "\n" + report()


def test_the_upward_exceptions_are_still_needed(source):
    found = {(i.importer, i.imported) for i in upward(source)}
    assert sorted(set(UPWARD_EXCEPTIONS) - found) == []


def test_no_import_circle_joins_two_rooms(source):
    """Two rooms that import each other (directly or round a circle) are one room in fact."""
    rooms = {}
    for i in source:
        a, b = level_of(i.importer)[1], level_of(i.imported)[1]
        if a != b:
            rooms.setdefault((a, b), i.where)
    circles = _circles(set(rooms))
    assert not circles, "\n".join(
        " <-> ".join(sorted(c)) + ": " + ", ".join(f"{a} -> {b} ({w})" for (a, b), w in
                                                  sorted(rooms.items()) if a in c and b in c)
        for c in circles) + "\n" + report()


@pytest.mark.parametrize("target", [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=KNOWN[t])) if t in KNOWN else t
    for t in TARGETS])
def test_importing_a_package_loads_no_higher_layer(imports, target):
    got = imports[target]
    assert "error" not in got, f"import {target}: {got['error']}"
    # the tree under test is the one this file sits in (a copy tests itself, not /work/main)
    assert got["file"] is None or Path(got["file"]).resolve().is_relative_to(ROOT), got["file"]
    level, _ = level_of(target)
    # a package runs before its submodules: the packages of the target and of the modules it
    # may load are loaded whatever their floor (tnp_train.backend's, above its config, imports
    # its functions lazily); what they import is checked as any module is
    allowed = [m for m in got["modules"] + [target] if (level_of(m)[0] or 0) <= level]
    ancestors = {m.rsplit(".", n)[0] for m in allowed for n in range(1, m.count(".") + 1)}
    bad = []
    for module in got["modules"]:
        mlevel, entry = level_of(module)
        if module in ancestors:
            continue
        if mlevel is None:
            bad.append(f"{module}: not placed in LAYERS")
        elif mlevel > level:
            bad.append(f"{entry} (layer {mlevel}) above {target} (layer {level}): "
                       f"{chain(got['importers'], module)}")
    # one line per offending entry: its first module is the one the chain explains
    firsts = {}
    for line in bad:
        firsts.setdefault(line.split(" ", 1)[0], line)
    # the shortest chain first: it ends at the import that breaks the rule
    assert not firsts, "\n".join(sorted(firsts.values(), key=lambda line: line.count(" <- ")))


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
