"""The later names tnp_train also answers to: TF 2.5+ / tf_keras 2.x locations of TF 2.4
features, and the ``tf.strings`` operations a text pipeline maps over.

Read under TensorFlow and tf_keras (``/tmp/tfvenv/bin/python conformance/keras_later_names.py``
rewrites ``docs/data/tf_keras_later_names.txt``), so that neither CI nor
``conformance/keras_coverage.py`` needs them:

* ``keras.layers.X`` for each ``X`` of TF 2.4's ``keras.layers.experimental`` and
  ``keras.layers.experimental.preprocessing`` (``docs/data/tf_keras_2_4_names.txt``) that
  tf_keras has at ``keras.layers``;
* ``keras.utils.X`` for each function of TF 2.4's ``keras.preprocessing`` (and its ``image`` and
  ``sequence`` modules) that tf_keras has at ``keras.utils``;
* ``keras.strings.X`` (shown as ``tf.strings.X``; ``tt.strings.X``) for the ``tf.strings``
  functions in :data:`STRINGS`.

Rows: ``module<TAB>symbol<TAB>the TF 2.4 location``, sorted.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "data" / "tf_keras_later_names.txt"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras_names  # noqa: E402

# the tf.strings functions tt.strings mirrors (tf.strings has more: the hashing, the Unicode
# transcoding and the segment joins are not here)
STRINGS = ("as_string", "bytes_split", "join", "length", "lower", "ngrams", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr", "to_number",
           "unicode_split", "upper")


def load():
    """The rows of the checked-in list, as (module, symbol, TF 2.4 location)."""
    rows = []
    for line in OUT.read_text().splitlines():
        if line and not line.startswith("#"):
            rows.append(tuple(line.split("\t")))
    return rows


def main():
    import tensorflow as tf
    import tf_keras

    _, rows24 = keras_names.load()
    rows = set()
    for module in ("keras.layers.experimental", "keras.layers.experimental.preprocessing"):
        for m, s, _ in rows24:
            if m == module and hasattr(tf_keras.layers, s):
                rows.add(("keras.layers", s, f"{m}.{s}"))
    for module in ("keras.preprocessing", "keras.preprocessing.image",
                   "keras.preprocessing.sequence"):
        for m, s, _ in rows24:
            if m == module and s[0].islower() and hasattr(tf_keras.utils, s):
                rows.add(("keras.utils", s, f"{m}.{s}"))
    for s in STRINGS:
        assert hasattr(tf.strings, s), s
        rows.add(("keras.strings", s, f"tf.strings.{s}"))
    OUT.write_text(
        f"# later names: TF 2.5+ / tf_keras {tf_keras.__version__} locations of TF 2.4 features, "
        f"and tf.strings (TF {tf.__version__}) functions\n"
        "# Made by conformance/keras_later_names.py under TensorFlow; do not edit.\n"
        "# columns: module<TAB>symbol<TAB>TF 2.4 location\n"
        + "".join("\t".join(r) + "\n" for r in sorted(rows)))
    print(f"wrote {OUT.relative_to(ROOT)} ({len(rows)} names)")


if __name__ == "__main__":
    main()
