"""``KerasTensor``: the symbolic value the functional API passes between layers.

``tt.Input(shape)`` returns one; calling a layer on KerasTensors records a :class:`Node` (the
layer, its inputs, its call arguments) and returns new KerasTensors of the inferred shape and
dtype. ``tt.Model(inputs, outputs)`` walks the nodes back from the outputs to run the graph.
"""
from __future__ import annotations

import numpy as _np

__all__ = ["KerasTensor", "Node", "is_symbolic", "flatten", "pack_like"]


class KerasTensor:
    """A placeholder with a ``shape`` (batch dimension ``None``) and a ``dtype`` (a NumPy
    dtype, so ``t.dtype.name`` works as on a Keras tensor, and ``t.dtype == "float32"``)."""

    __slots__ = ("shape", "dtype", "name", "_node", "_index", "__weakref__")

    def __init__(self, shape, dtype="float32", name=None, node=None, index=0):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        if not isinstance(dtype, (str, type, _np.dtype)):
            dtype = getattr(dtype, "name", dtype)
        self.dtype = _np.dtype(dtype)
        self.name = name
        self._node = node
        self._index = index

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        src = f", created by layer '{self._node.layer.name}'" if self._node is not None else ""
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}{src}>"

    def __array__(self, *a, **k):
        raise TypeError(f"A KerasTensor (shape {self.shape}) is symbolic: it has no values. Pass "
                        f"it to layers or to tt.Model(inputs, outputs), and call the model on "
                        f"arrays.")

    def __bool__(self):
        raise TypeError("A KerasTensor is symbolic and has no truth value")

    # operators on symbolic tensors become small layers, as in Keras
    def _op(self, other, fn, name, reverse=False):
        from .core import TFOpLambda
        args = (other, self) if reverse else (self, other)
        return TFOpLambda(fn, name=name)(list(args))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b, "add")

    def __radd__(self, o):
        return self._op(o, lambda a, b: a + b, "add", True)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b, "subtract")

    def __rsub__(self, o):
        return self._op(o, lambda a, b: a - b, "subtract", True)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b, "multiply")

    def __rmul__(self, o):
        return self._op(o, lambda a, b: a * b, "multiply", True)

    def __truediv__(self, o):
        return self._op(o, lambda a, b: a / b, "truediv")

    def __matmul__(self, o):
        return self._op(o, lambda a, b: a @ b, "matmul")

    def __neg__(self):
        from .core import TFOpLambda
        return TFOpLambda(lambda a: -a, name="negative")(self)

    def __getitem__(self, key):
        from .core import TFOpLambda
        return TFOpLambda(lambda a: a[key], name="getitem")(self)


class Node:
    """One call of a layer in a functional graph."""

    __slots__ = ("layer", "args", "kwargs", "outputs", "inputs")

    def __init__(self, layer, args, kwargs, outputs):
        self.layer = layer
        self.args = args          # the call's positional arguments (structures with KerasTensors)
        self.kwargs = kwargs
        self.outputs = outputs    # a KerasTensor or a structure of them
        self.inputs = [t for t in flatten((args, kwargs)) if isinstance(t, KerasTensor)]


def flatten(x):
    """The leaves of nested lists/tuples/dicts (dicts in key order)."""
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out.extend(flatten(e))
        return out
    if isinstance(x, dict):
        out = []
        for k in x:
            out.extend(flatten(x[k]))
        return out
    return [x]


def pack_like(structure, flat):
    """Rebuild ``structure`` with the leaves taken in order from ``flat``."""
    it = iter(flat)

    def build(s):
        if isinstance(s, (list, tuple)):
            vals = [build(e) for e in s]
            return type(s)(vals) if type(s) in (list, tuple) else type(s)(*vals)
        if isinstance(s, dict):
            return {k: build(v) for k, v in s.items()}
        return next(it)
    return build(structure)


def is_symbolic(x):
    return any(isinstance(t, KerasTensor) for t in flatten(x))
