"""TF 2.4.4's public ``tf.keras`` names, and those of ``tf.data``, ``tf.distribute``,
``tf.profiler`` and ``tf.mixed_precision``, read from the ``tensorflow-cpu==2.4.4`` wheel.

A name is a (module, symbol) pair of the generated ``__init__.py`` files under
``tensorflow/python/keras/api/_v2/keras/`` (modules ``keras.*``) and under
``tensorflow/_api/v2/<data|distribute|profiler|mixed_precision>/`` (modules ``tf.*``) in the
wheel; submodule entries (``from . import layers``) are not names. The lists are checked in as
``docs/data/tf_keras_2_4_names.txt`` and ``docs/data/tf_2_4_names.txt``, so neither CI nor
``conformance/keras_coverage.py`` needs TensorFlow (which no longer installs on this Python). Fetch the wheel (outside the project; it is read, never vendored) with::

    pip download tensorflow-cpu==2.4.4 --no-deps --only-binary=:all: --python-version 3.8 \\
        --platform manylinux2010_x86_64 -d DIR

then ``python conformance/keras_names.py DIR/tensorflow_cpu-2.4.4-*.whl`` rewrites both lists.

The file: comment lines (``#``) with the wheel's name and sha256, the number of names and the
sha256 of the rows; then one row per name, ``module<TAB>symbol<TAB>source``, sorted, where
``source`` is the dotted path TF imports the object from (two names with one source are
aliases, ``keras.losses.mse`` and ``keras.losses.mean_squared_error``).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = ROOT / "docs" / "data" / "tf_keras_2_4_names.txt"
TF_NAMES = ROOT / "docs" / "data" / "tf_2_4_names.txt"
API_DIR = "tensorflow/python/keras/api/_v2/keras/"
TF_API_DIR = "tensorflow/_api/v2/"
# the tf modules whose trees are listed (with their submodules)
TF_MODULES = ("data", "distribute", "profiler", "mixed_precision")
WHEEL_SHA256 = "870686392ccfb30775c1da9388a33aca0edf4eb12432c44a8718d958812c1c41"

_IMPORT = re.compile(r"from (\S+) import (\S+)(?: as (\S+))?$")


def read_wheel(wheel: Path, tf_modules=False) -> list[tuple[str, str, str]]:
    """Sorted (module, symbol, source) rows of the wheel's generated keras ``__init__.py``s
    (``tf_modules``: those of :data:`TF_MODULES`' trees, modules named ``tf.data``...)."""
    rows = set()
    api_dir, root = (TF_API_DIR, "tf") if tf_modules else (API_DIR, "keras")
    with zipfile.ZipFile(wheel) as z:
        inits = [n for n in z.namelist()
                 if n.startswith(api_dir) and n.endswith("/__init__.py")
                 and (not tf_modules or n[len(api_dir):].split("/")[0] in TF_MODULES)]
        if not inits:
            raise ValueError(f"keras_names: no {api_dir}**/__init__.py in {wheel}")
        for name in inits:
            module = root + "".join("." + p for p in name[len(api_dir):].split("/")[:-1])
            for line in z.read(name).decode().splitlines():
                m = _IMPORT.match(line.strip())
                if not m:
                    continue
                src, obj, alias = m.groups()
                public = alias or obj       # ``_OptionsExported as CommunicationOptions``
                if src in (".", "__future__") or \
                        public.startswith("_") and public != "__version__":
                    continue        # a submodule entry, or the generator's own imports
                rows.add((module, public, f"{src}.{obj}"))
    return sorted(rows)


def rows_digest(rows) -> str:
    return hashlib.sha256("".join("\t".join(r) + "\n" for r in rows).encode()).hexdigest()


def render(rows, wheel_name: str, wheel_sha: str, tf_modules=False) -> str:
    what, where = ("tf.data, tf.distribute, tf.profiler, tf.mixed_precision", TF_API_DIR + "<"
                   + "|".join(TF_MODULES) + ">/") if tf_modules else ("tf.keras", API_DIR)
    head = [
        f"# {what} 2.4.4 public names: (module, symbol) pairs of the generated __init__.py files",
        f"# under {where} in {wheel_name}",
        f"# (wheel sha256 {wheel_sha}); submodule entries excluded.",
        "# Made by conformance/keras_names.py from the wheel; do not edit.",
        "# columns: module<TAB>symbol<TAB>source (where TF imports it from; one source = aliases)",
        f"# names: {len(rows)}",
        f"# rows sha256: {rows_digest(rows)}",
    ]
    return "\n".join(head) + "\n" + "".join("\t".join(r) + "\n" for r in rows)


def load(path: Path = NAMES):
    """``(header, rows)`` of the checked-in list: header maps ``names``/``rows sha256``/... to
    its value; rows are (module, symbol, source) tuples in file order."""
    header, rows = {}, []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, sep, value = line[1:].strip().partition(": ")
            if sep:
                header[key] = value
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ValueError(f"{path.name}: malformed row {line!r} (expected 3 tab-separated "
                             f"fields)")
        rows.append(tuple(parts))
    return header, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path, help="tensorflow_cpu-2.4.4-*.whl")
    ap.add_argument("--out", type=Path, default=NAMES)
    ap.add_argument("--tf-out", type=Path, default=TF_NAMES)
    args = ap.parse_args(argv)
    sha = hashlib.sha256(args.wheel.read_bytes()).hexdigest()
    if sha != WHEEL_SHA256:
        print(f"keras_names: {args.wheel.name} has sha256 {sha}, expected the "
              f"tensorflow-cpu 2.4.4 cp38 manylinux2010 wheel's {WHEEL_SHA256}", file=sys.stderr)
        return 1
    for tf_modules, out in ((False, args.out), (True, args.tf_out)):
        rows = read_wheel(args.wheel, tf_modules)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(rows, args.wheel.name, sha, tf_modules))
        print(f"{len(rows)} names -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
