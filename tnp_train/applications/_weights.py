"""Loading a Keras 2 HDF5 weights file (what ``tf.keras.applications`` downloads, or what
``Model.save_weights("x.h5")`` / ``Model.save("x.h5")`` writes in tf.keras) into a model, by
layer name. Needs h5py (the optional extra ``tnp[h5]``).

TF's layout: the root (or its ``model_weights`` group, in a whole-model file) has the attribute
``layer_names``; each layer's group has ``weight_names`` (``"conv1_conv/kernel:0"``...), the
datasets at those paths. Weights are matched by layer name, then by weight name within the layer
(TF's order as a fallback), and every shape is checked before anything is read or assigned;
the file is read by :mod:`tnp_train.checkpoint.keras_h5` (no links to other files, no external
storage, numbers only).
"""
from __future__ import annotations

import os

from ..checkpoint import keras_h5

__all__ = ["load_h5_weights"]


def _short(weight_name):
    """``"block1/conv/kernel:0"`` -> ``"kernel"``."""
    return weight_name.rsplit("/", 1)[-1].split(":", 1)[0]


def load_h5_weights(model, path):
    """Assign the weights in the HDF5 file ``path`` to ``model``'s layers of the same names.
    A layer with weights on one side only, or a shape that differs: ValueError naming them
    (nothing is assigned then)."""
    where = os.fspath(path)
    with keras_h5.open_h5(where, "load_weights") as f:
        group = keras_h5.child(f, "model_weights", where) if "model_weights" in f else f
        # the file's datasets, checked (links, storage, dtype) but not read yet
        stored = dict(keras_h5.weight_entries(group, where))
        _load(model, stored, where)


def _load(model, stored, path):
    mine = {l.name: l for l in model.layers if l.weights}
    in_file = {k for k, v in stored.items() if v}
    missing, extra = sorted(set(mine) - in_file), sorted(in_file - set(mine))
    if missing or extra:
        raise ValueError(
            f"load_weights({path!r}) into model {model.name!r}: the file's layers do not match "
            f"the model's (was it saved from the same architecture and include_top?). Layers "
            f"with weights missing from the file: {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
            f"layers in the file not in the model: {extra[:10]}{' ...' if len(extra) > 10 else ''}")
    plan = []
    for lname, layer in mine.items():
        values = stored[lname]
        weights = layer.weights
        if len(values) != len(weights):
            raise ValueError(f"load_weights: layer {lname!r} has {len(weights)} weights "
                             f"({[w.name for w in weights]}) but the file holds {len(values)} "
                             f"({[n for n, _ in values]})")
        by_short = {_short(n): a for n, a in values}
        ordered = [by_short.get(_short(w.name)) for w in weights]
        if any(a is None for a in ordered) or len(by_short) != len(values):
            ordered = [a for _, a in values]     # names differ: TF's own order
        for w, a in zip(weights, ordered):
            if tuple(a.shape) != tuple(w.shape):
                raise ValueError(f"load_weights: layer {lname!r}, weight {w.name!r}: the model "
                                 f"has shape {tuple(w.shape)}, the file {tuple(a.shape)}")
        plan.append((layer, ordered))
    # read only now, every shape checked (a dataset's size is what the model expects)
    values = [(layer, [keras_h5.read_dataset(d, d.shape, path) for d in ordered])
              for layer, ordered in plan]
    for layer, arrays in values:
        layer.set_weights(arrays)
