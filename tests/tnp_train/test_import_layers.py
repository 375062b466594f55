"""Imports point down (docs: DESIGN.md's layer table): importing a subpackage of tnp_train loads
no module of a higher layer.

One subprocess imports tnp (below all of tnp_train), checks that no tnp_train module is loaded,
then forks one child per entry of ``TARGETS``; each child starts from that tnp_train-free
interpreter, records who imports each tnp_train module (a meta-path finder looks at the
importing frame), imports its target and reports every tnp_train module in ``sys.modules``.
A module above the target's layer fails the test, named with the chain of imports that
brought it in (``file:line`` of each import statement).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# DESIGN.md's layers, lowest first, with the modules it does not list placed by what they must
# import. A module belongs to the longest entry it starts with; a module may import its own
# layer and the layers below (importing on first use is how a package reaches higher).
LAYERS = [
    # tnp_train's base: tnp and the standard library only (every package may use these)
    ("tnp_train", "tnp_train.utils", "tnp_train.backend"),
    # DESIGN.md: autodiff, mixed_precision.Policy, initializers; and, needing only these:
    # the fused ops (autodiff), activations (ops, autodiff), regularizers and constraints
    # (tnp, utils), tt.nn (functions over tnp, the rest imported when called)
    ("tnp_train.autodiff", "tnp_train.mixed_precision", "tnp_train.initializers",
     "tnp_train.ops", "tnp_train.activations", "tnp_train.regularizers",
     "tnp_train.constraints", "tnp_train.nn"),
    # DESIGN.md: layers, losses, metrics, optimizers (+ LossScaleOptimizer), checkpoint, data;
    # and tt.train (checkpoint's API), the input helpers beside data (preprocessing, datasets)
    ("tnp_train.layers", "tnp_train.losses", "tnp_train.metrics", "tnp_train.optimizers",
     "tnp_train.mixed_precision.loss_scale_optimizer", "tnp_train.mixed_precision.experimental",
     "tnp_train.checkpoint", "tnp_train.data", "tnp_train.train", "tnp_train.preprocessing",
     "tnp_train.datasets"),
    # DESIGN.md: trainers, callbacks, distribute, profiler
    ("tnp_train.trainers", "tnp_train.callbacks", "tnp_train.distribute", "tnp_train.profiler"),
    # DESIGN.md: the models, users' entry points; and what builds or wraps models
    ("tnp_train.models", "tnp_train.applications", "tnp_train.experimental",
     "tnp_train.wrappers"),
]
LEVEL = {prefix: i for i, layer in enumerate(LAYERS) for prefix in layer}
# every entry of the table; and each module of utils (the base every package may import, which
# loads its modules only when first used) and of ops (whose package imports none of them)
TARGETS = sorted(LEVEL) + sorted(f"tnp_train.{p.parent.name}.{p.stem}"
                                 for folder in ("utils", "ops")
                                 for p in (ROOT / "tnp_train" / folder).glob("*.py")
                                 if p.stem != "__init__")
# known breakage, to be fixed in ops/layers: ops.recurrent imports layers._common (a layer up),
# whose package imports layers.recurrent, which imports ops.recurrent: imported first, it fails
KNOWN = {}   # modules known to break the rule (a strict xfail each)


def level_of(module):
    """(layer index, table entry) of a tnp_train module; (None, None) if the table lacks it."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LEVEL:
            return LEVEL[prefix], prefix
    return None, None


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
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
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


@pytest.mark.parametrize("target", [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=KNOWN[t])) if t in KNOWN else t
    for t in TARGETS])
def test_importing_a_package_loads_no_higher_layer(imports, target):
    got = imports[target]
    assert "error" not in got, f"import {target}: {got['error']}"
    # the tree under test is the one this file sits in (a copy tests itself, not /work/main)
    assert got["file"] is None or Path(got["file"]).resolve().is_relative_to(ROOT), got["file"]
    level, _ = level_of(target)
    bad = []
    for module in got["modules"]:
        mlevel, entry = level_of(module)
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
