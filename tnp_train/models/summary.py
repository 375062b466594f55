"""``Model.summary()``: Keras's table of layers, output shapes and parameter counts."""
from __future__ import annotations

import numpy as _np

__all__ = ["print_summary"]


def _shape_str(layer):
    try:
        s = layer.output_shape
    except AttributeError:
        return "multiple" if layer.built else "?"
    if isinstance(s, list) and s and isinstance(s[0], tuple):
        return str([tuple(d for d in t) for t in s])
    return str(tuple(s)) if isinstance(s, tuple) else str(s)


def _params(layer):
    return int(sum(int(_np.prod(w.shape)) for w in layer.weights)) if layer.built else 0


def print_summary(model, line_length=None, positions=None, print_fn=None):
    from .functional import Functional
    print_fn = print_fn or print
    functional = isinstance(model, Functional) and any(
        len([i for i in n.inputs]) > 1 for n in model._nodes)
    line_length = line_length or (98 if functional else 65)
    positions = positions or ([0.33, 0.55, 0.67, 1.0] if functional else [0.45, 0.85, 1.0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    headers = ["Layer (type)", "Output Shape", "Param #"] + (["Connected to"] if functional else [])

    def row(fields):
        line = ""
        for i, f in enumerate(fields):
            if i > 0:
                line = line[:positions[i - 1] - 1] + " "
            line += str(f)
            line = line[:positions[i]].ljust(positions[i])
        print_fn(line.rstrip())

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    row(headers)
    print_fn("=" * line_length)
    layers = list(model.layers)
    for k, layer in enumerate(layers):
        fields = [f"{layer.name} ({type(layer).__name__})", _shape_str(layer), _params(layer)]
        if functional:
            ins = []
            for n in model._nodes:
                if n.layer is layer:
                    ins += [f"{t.node.layer.name}[0][{t.tensor_index}]" for t in n.inputs]
            fields.append(ins[0] if ins else "")
        row(fields)
        if functional and len(ins) > 1:
            for extra in ins[1:]:
                row(["", "", "", extra])
        print_fn(("=" if k == len(layers) - 1 else "_") * line_length)
    trainable = int(sum(int(_np.prod(w.shape)) for w in model.trainable_weights))
    total = int(sum(int(_np.prod(w.shape)) for w in model.weights))
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * line_length)
