"""tf.keras 2.4 API coverage: is every public ``tf.keras`` name of TF 2.4.4 present in tnp_train,
and does a test exercise it against a reference? The same for the TF modules Keras programs use
beside it: ``tf.data``, ``tf.distribute``, ``tf.profiler`` and ``tf.mixed_precision``.

Scope: the (module, symbol) pairs of ``docs/data/tf_keras_2_4_names.txt`` and
``docs/data/tf_2_4_names.txt`` (made from the ``tensorflow-cpu==2.4.4`` wheel by
``conformance/keras_names.py``). ``keras.X.Y`` resolves to ``tnp_train.X.Y``
(``keras.layers.Dense`` is ``tt.layers.Dense``; ``keras.Model`` is ``tt.Model``), and so does
``tf.X.Y`` (``tf.data.Dataset`` is ``tt.data.Dataset``).

For each name:

* **present**: the attribute exists in tnp_train and is not a stub (a function, or a class
  whose ``__init__``, has a body that only raises NotImplementedError: such a name is *missing*).
* **tested**: a function under ``tests/`` that compares a value uses it. Decided mechanically
  from the source, no marker to keep up to date:

  - *compares*: the function calls something named ``assert*``, ``*allclose*``, ``approx``,
    ``check_grads`` or ``*same*``, or has an ``assert`` statement with a comparison
    (``==``, ``<``, ``in``...), itself or in a helper function of its file that it calls. The
    references are the test's own (hand-written NumPy, values TF/Keras printed, fixtures made
    under tf-keras in ``tests/fixtures/``);
  - *uses*: an attribute chain rooted at tnp_train (``tt.layers.Dense``, ``tnp_train.losses.mse``,
    a module alias such as ``L = tt.layers`` or ``from tnp_train import layers``, a name imported
    with ``from tnp_train.layers import Dense``); or a sweep: ``getattr(tt.layers, name)`` or
    ``tt.activations.get(name)`` where ``name`` is a string literal, a ``pytest.mark.parametrize``
    argument or the loop variable of a ``for`` over a table (read by importing the test module,
    as ``conformance/numpy_coverage.py`` does), also when the variable is handed to a helper of
    the file that sweeps its parameter (``build(name)`` doing ``getattr(apps, name)``), and
    ``getattr(tt.applications, module).preprocess_input`` for each swept submodule; a
    module-level table (``CASES = [(tt.layers.Conv1D, ...)]``) counts for the comparing
    functions that name it;
  - *runs in CI*: a test with a true ``skipif`` (or ``skip``) mark, or in a file that skips
    itself (``pytest.importorskip`` of a missing module), counts for nothing; ``tests/gpu`` is
    not read (no GPU in CI);
  - an alias (TF imports both names from one object, ``keras.losses.mse`` and
    ``keras.losses.mean_squared_error``) counts as tested through the other name when tnp_train
    also has one object for both.

  The page names the first test file (in path order) that uses each name directly.
* **out of scope**: :data:`OUT_OF_SCOPE`, each with its reason.

``python conformance/keras_coverage.py`` prints the summary; ``--write-docs`` writes
``docs/keras-compat.md`` and ``docs/tf-compat.md``; ``--check`` exits 1 when one is stale;
``--json`` prints the
report ``tests/test_keras_compat.py`` reads.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import sys
import textwrap
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "keras-compat.md"
TF_DOCS = ROOT / "docs" / "tf-compat.md"
TESTS = ROOT / "tests"
SKIP_TESTS = {"tests/test_keras_compat.py"}     # reads names as data, exercises none
SKIP_DIRS = {"gpu"}                              # skipped where there is no GPU (CI)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras_later_names  # noqa: E402
import keras_names  # noqa: E402
import numpy_coverage as _nc  # noqa: E402  (the readers of parametrize values and loop tables)

# name -> reason. Names tnp_train does not mean to have.
OUT_OF_SCOPE = {
    "keras.__version__": "tnp_train's own version string (`tt.__version__`), not Keras's 2.4.0",
    "keras.estimator.model_to_estimator": "tf.estimator is out of scope (issue #16)",
    "keras.layers.DenseFeatures": "takes `tf.feature_column` columns, a TensorFlow API outside "
                                  "tf.keras",
    "keras.experimental.SequenceFeatures": "takes `tf.feature_column` sequence columns, a "
                                           "TensorFlow API outside tf.keras",
    # tf.distribute (docs/tf-compat.md)
    "tf.distribute.TPUStrategy": "no TPU: tnp runs on NumPy (CPU) and CuPy (NVIDIA GPUs); "
                                 "`MirroredStrategy` / `MultiWorkerMirroredStrategy` cover one "
                                 "and several hosts",
    "tf.distribute.experimental.TPUStrategy": "no TPU (TF 2.4's deprecated name of "
                                              "`TPUStrategy`)",
    "tf.distribute.cluster_resolver.TPUClusterResolver": "no TPU: it resolves Cloud TPU "
                                                         "workers",
    "tf.distribute.cluster_resolver.GCEClusterResolver": "reads Google Compute Engine instance "
                                                         "groups through the Google Cloud API "
                                                         "client; `SlurmClusterResolver`, "
                                                         "`TFConfigClusterResolver`, "
                                                         "`KubernetesClusterResolver` and MPI's "
                                                         "launch cover clusters here",
    # tf.data (docs/tf-compat.md; the same reasons on docs/data.md, "tf.data names not provided")
    "tf.data.experimental.dense_to_ragged_batch": "its result is a `tf.RaggedTensor`; tnp_train "
                                                  "has no ragged tensors (`padded_batch`, "
                                                  "`dense_to_sparse_batch` instead)",
    **{f"tf.data.experimental.{n}": "TF's internal pipeline statistics, removed after TF 2.4; "
                                    "an aggregator collecting nothing would be a setting "
                                    "silently ignored"
       for n in ("StatsOptions", "StatsAggregator", "latency_stats", "bytes_produced_stats")},
    **{f"tf.data.experimental.{n}": "tf.estimator / TF 1 session saveables (tf.estimator is "
                                    "out of scope)"
       for n in ("CheckpointInputPipelineHook", "make_saveable_from_iterator")},
    **{f"tf.data.experimental.{n}": "TF graph variant tensors; a tt.data dataset is a Python "
                                    "object"
       for n in ("from_variant", "to_variant")},
    **{f"tf.data.experimental.service.{n}": "the tf.data service runs TF dataset graphs on gRPC "
                                            "servers; across processes, `shard` with a strategy"
       for n in ("distribute", "from_dataset_id", "register_dataset", "DispatchServer",
                 "WorkerServer", "DispatcherConfig", "WorkerConfig")},
}

COMPARE_CALLS = ("assert", "allclose", "approx", "check_grads", "same")
STATUSES = ("tested", "untested", "missing", "out of scope")


# ---------------------------------------------------------------------------------- resolving
# the trees a tnp_train path answers for: ``tt.layers.Dense`` is ``keras.layers.Dense``,
# ``tt.data.Dataset`` is ``tf.data.Dataset``
ROOTS = ("keras", "tf")


def _keys(module: str, symbol: str, names) -> list:
    """The listed names a tnp_train module (written ``keras.<...>``) and symbol answer for, in
    each tree (``keras.mixed_precision.experimental.Policy``, and ``LossScale`` of
    ``tf.mixed_precision.experimental``, are both in ``tt.mixed_precision.experimental``)."""
    rest = module[len("keras"):]
    return [k for k in ((root + rest, symbol) for root in ROOTS) if k in names]


def resolve(module: str, symbol: str):
    """tnp_train's object for ``keras.<...>.symbol`` (or ``tf.<...>.symbol``); ``_MISSING`` when
    an attribute is absent."""
    import tnp_train
    obj = tnp_train
    for part in module.split(".")[1:] + [symbol]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return _MISSING
    return obj


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def _only_raises_not_implemented(fn) -> bool:
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        node = ast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    body = [s for s in getattr(node, "body", [])
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def is_stub(obj) -> bool:
    if isinstance(obj, type):
        init = obj.__dict__.get("__init__")
        return init is not None and _only_raises_not_implemented(init)
    return inspect.isfunction(obj) and _only_raises_not_implemented(obj)


# ------------------------------------------------------------------------------ test scanning
def _calls_compare(node) -> bool:
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    low = name.lower()
    return any(w in low for w in COMPARE_CALLS)


def _compares(unit) -> bool:
    for n in ast.walk(unit):
        if isinstance(n, ast.Call) and _calls_compare(n):
            return True
        if isinstance(n, ast.Assert) and any(isinstance(m, ast.Compare) for m in ast.walk(n.test)):
            return True
    return False


class _FileScan:
    """Uses of tnp_train names in the comparing functions of one test file."""

    def __init__(self, path: Path, names: set):
        self.path = path
        self.names = names                          # {(module, symbol)}
        self.tree = ast.parse(path.read_text(), str(path))
        self.roots = {}                             # local name -> dotted tnp_train path
        self.uses = {}                              # unit name -> [(module, symbol)...]
        self.private = {}                           # dotted path off the public tree -> unit
        self.tables = {}                            # module-level name -> paths in its value
        self.sweeps = []                            # (keras module, var, qualname, unit, cls)
        self._imports()

    def _imports(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "tnp_train":
                        if a.asname:
                            self.roots[a.asname] = a.name
                        else:
                            self.roots["tnp_train"] = "tnp_train"
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] == "tnp_train":
                for a in node.names:
                    self.roots[a.asname or a.name] = f"{node.module}.{a.name}"
        # aliases: ``L = tt.layers`` (at any level; a name rebound to something else is rare)
        for _ in range(2):
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    path = self._path(node.value)
                    if path is not None:
                        self.roots.setdefault(node.targets[0].id, path)

    def _path(self, node):
        ch = _nc._attr_chain(node) if isinstance(node, ast.Attribute) else (
            (node.id, []) if isinstance(node, ast.Name) else None)
        if ch is None or ch[0] not in self.roots:
            return None
        return ".".join([self.roots[ch[0]]] + ch[1])

    def _keras_names(self, path):
        """The (module, symbol) names a dotted tnp_train path passes through."""
        parts = path.split(".")[1:]
        out = []
        for i, p in enumerate(parts):
            out += _keys(".".join(["keras"] + parts[:i]), p, self.names)
        return out

    def _paths_in(self, node):
        for n in ast.walk(node):
            if isinstance(n, (ast.Attribute, ast.Name)) and isinstance(n.ctx, ast.Load):
                path = self._path(n)
                if path is not None:
                    yield path

    def _tables(self):
        """Module-level tables (``CASES = [(tt.layers.Conv1D, ...), ...]``): a comparing test
        that names the table (a parametrize over it, a loop) uses what the table holds."""
        for node in self.tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                paths = list(self._paths_in(node.value))
                for t in targets:
                    if isinstance(t, ast.Name) and paths:
                        self.tables[t.id] = paths

    def units(self):
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node.name, node, None
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        yield f"{node.name}.{sub.name}", sub, node

    def _use(self, key, qual):
        self.uses.setdefault(qual, []).append(key)

    def _use_path(self, path, qual):
        keys = self._keras_names(path)
        for key in keys:
            self._use(key, qual)
        if not keys:
            self.private.setdefault(path, qual)

    # -------------------------------------------------------------- helpers of a test file
    def _functions(self):
        return {n.name: n for n in self.tree.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def _compares_deep(self, fn, seen=None):
        """Whether ``fn`` compares, itself or through a helper of this file it calls."""
        seen = set() if seen is None else seen
        if _compares(fn):
            return True
        seen.add(fn.name if hasattr(fn, "name") else id(fn))
        funcs = self._functions()
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id in funcs and n.func.id not in seen:
                if self._compares_deep(funcs[n.func.id], seen):
                    return True
        return False

    def _getattr_sweep(self, n):
        """``(keras module, key node)`` of ``getattr(<tnp_train module>, key)`` or
        ``<tnp_train module>.get(key)``; None for any other call."""
        if not isinstance(n, ast.Call) or not n.args:
            return None
        if isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) >= 2:
            target, key = n.args[0], n.args[1]
        elif isinstance(n.func, ast.Attribute) and n.func.attr == "get":
            target, key = n.func.value, n.args[0]
        else:
            return None
        path = self._path(target)
        return None if path is None else ("keras" + path[len("tnp_train"):], key)

    def _sweeps_in(self, fn):
        """``(module, var, attr)`` sweeps in ``fn``'s body: ``var`` names what is swept
        (``getattr(tt.layers, var)``; ``attr`` for ``getattr(tt.applications, var).attr``)."""
        out = []
        for n in ast.walk(fn):
            attr = None
            call = n
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Call):
                call, attr = n.value, n.attr
            hit = self._getattr_sweep(call)
            if hit is not None and isinstance(hit[1], ast.Name):
                out.append((hit[0], hit[1].id, attr))
        return out

    def _param_sweeps(self, fn, seen=None):
        """The parameters of helper ``fn`` that are swept, in it or in the helpers it passes
        them to: ``{param name: [(module, attr)]}`` (``build(name)`` doing
        ``getattr(apps, name)``)."""
        seen = set() if seen is None else seen
        seen.add(fn.name)
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        out = {}
        for module, var, attr in self._sweeps_in(fn):
            if var in params:
                out.setdefault(var, []).append((module, attr))
        funcs = self._functions()
        for n in ast.walk(fn):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id in funcs and n.func.id not in seen):
                continue
            callee = funcs[n.func.id]
            inner = self._param_sweeps(callee, set(seen))
            cparams = [a.arg for a in callee.args.posonlyargs + callee.args.args]
            pairs = list(zip(cparams, n.args)) + [(k.arg, k.value) for k in n.keywords]
            for cparam, arg in pairs:
                if isinstance(arg, ast.Name) and arg.id in params and cparam in inner:
                    out.setdefault(arg.id, []).extend(inner[cparam])
        return out

    def scan(self):
        self._tables()
        funcs = self._functions()
        for qual, unit, cls in self.units():
            if not self._compares_deep(unit):
                continue
            for path in self._paths_in(unit):
                self._use_path(path, qual)
            for n in ast.walk(unit):
                if isinstance(n, ast.Name) and n.id in self.tables:
                    for path in self.tables[n.id]:
                        self._use_path(path, qual)
                hit = self._getattr_sweep(n)
                if hit is not None and isinstance(hit[1], ast.Constant) \
                        and isinstance(hit[1].value, str):
                    for key in _keys(hit[0], hit[1].value, self.names):
                        self._use(key, qual)
                # a helper of this file called with a swept variable: build(name)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                        and n.func.id in funcs and n.func.id != getattr(unit, "name", None):
                    callee = funcs[n.func.id]
                    inner = self._param_sweeps(callee)
                    cparams = [a.arg for a in callee.args.posonlyargs + callee.args.args]
                    pairs = list(zip(cparams, n.args)) + [(k.arg, k.value) for k in n.keywords]
                    for cparam, arg in pairs:
                        if isinstance(arg, ast.Name):
                            for module, attr in inner.get(cparam, []):
                                self.sweeps.append((module, arg.id, qual, unit, cls, attr))
            for module, var, attr in self._sweeps_in(unit):
                self.sweeps.append((module, var, qual, unit, cls, attr))
        return self


def test_files():
    files = sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)
    return [p for p in files if str(p.relative_to(ROOT)) not in SKIP_TESTS
            and p.relative_to(TESTS).parts[0] not in SKIP_DIRS]


def _private_uses(path, objs):
    """The names a path off the public tree (``tnp_train.layers.recurrent.GRU``) is, by identity,
    within its package (``keras.layers.*``): the object must be the public one."""
    import importlib
    parts = path.split(".")
    obj = None
    for i in range(len(parts), 0, -1):      # the longest importable module prefix
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p, _MISSING)
        break
    if obj is None or obj is _MISSING or len(parts) < 3 or isinstance(obj, type(sys)):
        return []
    packages = [f"{root}.{parts[1]}" for root in ROOTS]
    return [k for k, o in objs.items() if o is obj and any(
        k[0] == package or k[0].startswith(package + ".") for package in packages)]


def _may_skip(s):
    """Whether a file can skip tests (skip/skipif marks, a module ``pytestmark``, a module-level
    ``importorskip``): then it is imported to see what CI skips."""
    for node in s.tree.body:
        if isinstance(node, (ast.Assign, ast.Expr)):
            for n in ast.walk(node):
                if isinstance(n, ast.Attribute) and n.attr in ("importorskip", "skipif", "skip"):
                    return True
                if isinstance(n, ast.Name) and n.id == "pytestmark":
                    return True
    for _, unit, cls in s.units():
        for dec in list(unit.decorator_list) + list(cls.decorator_list if cls else []):
            if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr == "parametrize"):
                return True
    return False


def _skipped(marks):
    for m in marks:
        if getattr(m, "name", None) == "skip":
            return True
        if getattr(m, "name", None) == "skipif":
            cond = m.args[0] if m.args else m.kwargs.get("condition", False)
            if not isinstance(cond, str) and cond:
                return True
    return False


def _mark_list(obj):
    marks = getattr(obj, "pytestmark", None) or []
    # a module's ``pytestmark`` may be one mark (a MarkDecorator) or a list of them
    return [getattr(m, "mark", m) for m in (marks if isinstance(marks, (list, tuple))
                                            else [marks])]


def _marks(mod, qual, cls):
    obj = mod
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    marks = _mark_list(obj)
    if cls is not None:
        marks += _mark_list(getattr(mod, cls.name, None))
    return marks + _mark_list(mod)


def _import_test_module(path: Path):
    """The test module at ``path``, imported once under a name of its own."""
    try:
        rel = path.relative_to(ROOT).with_suffix("").parts
    except ValueError:
        rel = path.with_suffix("").parts[-3:]
    name = "_keras_coverage_" + "_".join(rel)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _relative(path):
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def scan_tests(names: set, objs: dict, files=None) -> dict:
    """(module, symbol) -> ``file::function`` of the first test (in path order) using it. A
    test that CI skips (a true skipif, a missing optional module) counts for nothing."""
    found = {}
    for path in test_files() if files is None else files:
        try:
            s = _FileScan(path, names).scan()
        except SyntaxError:
            continue
        if not (s.uses or s.sweeps or s.private):
            continue
        mod = None
        if s.sweeps or _may_skip(s):
            try:
                mod = _import_test_module(path)
            except BaseException as e:  # noqa: BLE001 (pytest's Skipped is a BaseException)
                if type(e).__name__ == "Skipped":
                    continue                    # the whole file is skipped here
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                mod = None                      # a file being written: its direct uses count
        units = {qual: cls for qual, _, cls in s.units()}
        skipped = {q for q, cls in units.items()
                   if mod is not None and _skipped(_marks(mod, q, cls))}
        uses = {}
        for qual, _, _ in s.units():
            if qual in skipped:
                continue
            for key in s.uses.get(qual, []):
                uses.setdefault(key, qual)
        if mod is not None:
            for module, var, qual, unit, cls, attr in s.sweeps:
                if qual in skipped:
                    continue
                values = _nc._param_values(_marks(mod, qual, cls), var) + \
                    _nc._loop_values(unit, var, vars(mod))
                for v in values:
                    if not isinstance(v, str):
                        continue
                    keys = _keys(module, v, names) if attr is None else \
                        _keys(f"{module}.{v}", attr, names)
                    for key in keys:
                        uses.setdefault(key, qual)
        for private, qual in s.private.items():
            if qual in skipped:
                continue
            for key in _private_uses(private, objs):
                uses.setdefault(key, qual)
        rel = _relative(path)
        for key, qual in sorted(uses.items()):
            found.setdefault(key, f"{rel}::{qual}")
    return found


# ------------------------------------------------------------------------------------ report
def _statuses(rows, objs, tested):
    """``({module: [[symbol, status, note]...]}, counts)`` of the listed ``rows``."""
    by_source = {}
    for m, s, src in rows:
        by_source.setdefault(src, []).append((m, s))
    statuses = {}
    for m, s, src in rows:
        full = f"{m}.{s}"
        obj = objs[(m, s)]
        if full in OUT_OF_SCOPE:
            status, note = "out of scope", OUT_OF_SCOPE[full]
        elif obj is _MISSING:
            status, note = "missing", ""
        elif is_stub(obj):
            status, note = "missing", "a stub that raises NotImplementedError"
        elif (m, s) in tested:
            status, note = "tested", tested[(m, s)]
        else:
            alias = next((a for a in by_source[src] if a != (m, s) and a in tested
                          and objs[a] is obj), None)
            if alias is not None:
                status, note = "tested", f"as `{alias[0]}.{alias[1]}`"
            else:
                status, note = "untested", ""
        statuses.setdefault(m, []).append([s, status, note])
    counts = {k: sum(st == k for rows_ in statuses.values() for _, st, _ in rows_)
              for k in STATUSES}
    return statuses, counts


def report() -> dict:
    header, rows = keras_names.load()
    tf_header, tf_rows = keras_names.load(keras_names.TF_NAMES)
    later_rows = keras_later_names.load()
    names = {(m, s) for m, s, _ in rows + tf_rows}
    objs = {(m, s): resolve(m, s) for m, s, _ in rows + tf_rows}
    later_objs = {(m, s): resolve(m, s) for m, s, _ in later_rows}
    tested = scan_tests(names | set(later_objs),
                        {k: o for k, o in {**objs, **later_objs}.items() if o is not _MISSING})
    statuses, counts = _statuses(rows, objs, tested)
    tf_statuses, tf_counts = _statuses(tf_rows, objs, tested)
    later = []
    for m, s, old in later_rows:
        obj = later_objs[(m, s)]
        if obj is _MISSING or is_stub(obj):
            status, note = "missing", ""
        elif (m, s) in tested:
            status, note = "tested", tested[(m, s)]
        else:
            status, note = "untested", ""
        later.append([m, s, old, status, note])
    rep = {"names": len(rows), "header": header, "statuses": statuses, "counts": counts,
           "later": later, "tf": {"names": len(tf_rows), "header": tf_header,
                                  "statuses": tf_statuses, "counts": tf_counts}}
    rep["tf"]["page"] = render_tf(rep["tf"])
    rep["page"] = render(rep)
    return rep


def render(rep) -> str:
    c, total = rep["counts"], rep["names"]
    pct = 100.0 * c["tested"] / total
    lines = [
        "# tf.keras 2.4 API coverage",
        "",
        "<!-- generated by `python conformance/keras_coverage.py --write-docs`; do not edit -->",
        "",
        f"**Coverage: {c['tested']} / {total} names present and tested ({pct:.1f}%)** "
        f"({c['untested']} present but untested, {c['missing']} missing, "
        f"{c['out of scope']} out of scope).",
        "",
        "Scope: TF 2.4.4's public `tf.keras` tree, every (module, symbol) pair of the generated "
        "`__init__.py` files under `tensorflow/python/keras/api/_v2/keras/` in the "
        "`tensorflow-cpu==2.4.4` wheel, submodule entries excluded: "
        "[`docs/data/tf_keras_2_4_names.txt`](data/tf_keras_2_4_names.txt), made by "
        "`conformance/keras_names.py`. `keras.X.Y` is looked up as `tnp_train.X.Y`.",
        "",
        "A name counts only when a test exercises it against a reference: *tested* means a "
        "function under `tests/` that compares values (an `assert*`, `allclose`, `approx` or "
        "`check_grads` call, or an `assert` with a comparison, in it or in a helper of its "
        "file) uses it, as an attribute of tnp_train (`tt.layers.Dense`, an alias such as "
        "`L = tt.layers`, a module-level table the test names) or through a sweep "
        "(`getattr(tt.layers, name)`, `tt.activations.get(name)`, `name` a literal, a "
        "parametrize argument or a loop over a table, also through a helper), and CI runs it "
        "(a true `skipif`, a file skipped for a missing optional module and `tests/gpu` count "
        "for nothing). Decided from the tests' source by `conformance/keras_coverage.py` (its "
        "docstring has the rules); the column *test* names the first such test. A TF alias "
        "(two names, one object in TF) counts through the other name when tnp_train has one "
        "object for both. A name whose function (or class `__init__`) only raises "
        "NotImplementedError is *missing*. `tests/test_keras_compat.py` fails when this page "
        "is stale.",
        "",
        "The TF modules Keras programs use beside `tf.keras` (`tf.data`, `tf.distribute`, "
        "`tf.profiler`, `tf.mixed_precision`) are counted the same way in "
        "[tf-compat.md](tf-compat.md).",
        "",
    ] + _module_table(rep)
    later = rep["later"]
    n_tested = sum(st == "tested" for *_, st, _ in later)
    lines += ["", f"## Later names ({n_tested} / {len(later)} present and tested)", "",
              "Not counted above: the TF 2.5+ / tf_keras 2.x locations of TF 2.4 features, and "
              "the `tf.strings` functions a text pipeline maps over (`tt.strings`, on NumPy and "
              "tnp arrays; see [strings.md](strings.md)), listed in "
              "[`docs/data/tf_keras_later_names.txt`](data/tf_keras_later_names.txt) by "
              "`conformance/keras_later_names.py` (from tf_keras and TF 2.21). A layer whose "
              "default tf_keras changed (`StringLookup`, `IntegerLookup`, `TextVectorization`) "
              "is a subclass of the TF 2.4 class with tf_keras's default; every other name is "
              "the TF 2.4 object itself. Tested as above.", "",
              "| name | TF 2.4 location | status | test |", "|---|---|---|---|"]
    for m, sym, old, st, note in later:
        shown = f"tf.strings.{sym}" if m == "keras.strings" else f"{m}.{sym}"
        where = "(TF, outside tf.keras)" if old.startswith("tf.") else f"`{old}`"
        lines.append(f"| `{shown}` | {where} | {st} | "
                     f"{f'`{note}`' if '::' in note else note} |")
    lines += ["", f"## Out of scope ({c['out of scope']})", "", "| name | reason |", "|---|---|"]
    return "\n".join(lines + _name_sections(rep)) + "\n"


def _module_table(rep) -> list:
    c, total = rep["counts"], rep["names"]
    lines = ["| module | tested | untested | missing | out of scope | names |",
             "|---|---|---|---|---|---|"]
    for m, rows in rep["statuses"].items():
        k = {s: sum(st == s for _, st, _ in rows) for s in STATUSES}
        lines.append(f"| `{m}` | {k['tested']} | {k['untested']} | {k['missing']} | "
                     f"{k['out of scope']} | {len(rows)} |")
    lines.append(f"| all | {c['tested']} | {c['untested']} | {c['missing']} | "
                 f"{c['out of scope']} | {total} |")
    return lines


def _name_sections(rep) -> list:
    """The out-of-scope names with their reasons, then a table per module."""
    lines = []
    for m, rows in rep["statuses"].items():
        for s, st, note in rows:
            if st == "out of scope":
                lines.append(f"| `{m}.{s}` | {note} |")
    for m, rows in rep["statuses"].items():
        lines += ["", f"## `{m}`", "", "| name | status | test |", "|---|---|---|"]
        for s, st, note in rows:
            shown = "" if st == "out of scope" else (f"`{note}`" if "::" in note else note)
            lines.append(f"| `{s}` | {st} | {shown} |")
    return lines


def render_tf(rep) -> str:
    """docs/tf-compat.md: the tf.data / tf.distribute / tf.profiler / tf.mixed_precision trees."""
    c, total = rep["counts"], rep["names"]
    lines = [
        "# tf.data, tf.distribute, tf.profiler, tf.mixed_precision 2.4 API coverage",
        "",
        "<!-- generated by `python conformance/keras_coverage.py --write-docs`; do not edit -->",
        "",
        f"**Coverage: {c['tested']} / {total} names present and tested "
        f"({100.0 * c['tested'] / total:.1f}%)** ({c['untested']} present but untested, "
        f"{c['missing']} missing, {c['out of scope']} out of scope).",
        "",
        "Scope: TF 2.4.4's public `tf.data`, `tf.distribute`, `tf.profiler` and "
        "`tf.mixed_precision` trees, every (module, symbol) pair of the generated `__init__.py` "
        "files under `tensorflow/_api/v2/<module>/` in the `tensorflow-cpu==2.4.4` wheel, "
        "submodule entries excluded: [`docs/data/tf_2_4_names.txt`](data/tf_2_4_names.txt), "
        "made by `conformance/keras_names.py`. `tf.X.Y` is looked up as `tnp_train.X.Y` "
        "(`tf.data.Dataset` is `tt.data.Dataset`). *Tested*, *missing* and the *test* column "
        "follow the rules of [keras-compat.md](keras-compat.md), decided by the same scan of "
        "the tests.",
        "",
    ] + _module_table(rep)
    lines += ["", f"## Out of scope ({c['out of scope']})", "", "| name | reason |", "|---|---|"]
    return "\n".join(lines + _name_sections(rep)) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write-docs", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rep = report()
    if args.json:
        print(json.dumps(rep))
        return 0
    pages = ((DOCS, rep["page"]), (TF_DOCS, rep["tf"]["page"]))
    if args.write_docs:
        for path, page in pages:
            path.write_text(page)
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check:
        stale = [p for p, page in pages if not p.exists() or p.read_text() != page]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python conformance/keras_coverage.py "
                  f"--write-docs", file=sys.stderr)
        if stale:
            return 1
    for path, page in pages:
        print(path.name + ": " +
              next(ln for ln in page.splitlines() if ln.startswith("**Coverage:")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
