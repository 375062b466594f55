"""``KerasTensor``: the symbolic value the functional API passes between layers.

``tt.Input(shape)`` returns one; calling a layer on KerasTensors records a :class:`Node` (the
layer, its inputs, its call arguments) and returns new KerasTensors of the inferred shape and
dtype. ``tt.Model(inputs, outputs)`` walks the nodes back from the outputs to run the graph.
"""
from __future__ import annotations

import numpy as _np

from ..utils.tree import flatten

__all__ = ["KerasTensor", "Node", "is_symbolic"]


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
    def node(self):
        """The :class:`Node` (the layer call) that made this tensor, None for one no layer
        made; ``node.layer`` is that layer (tf.keras's ``KerasTensor.node``)."""
        return self._node

    @property
    def tensor_index(self):
        """This tensor's position among its node's flattened outputs (the ``tensor_index`` of
        Keras's ``_keras_history``); 0 for a layer of one output."""
        return self._index

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

    # tnp (and NumPy) functions on symbolic tensors become layers, as tf ops do in Keras: tnp
    # hands a KerasTensor argument to NumPy, whose protocols bring the call here
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        import tnp
        fn = getattr(tnp, ufunc.__name__, None)
        if fn is None or (method != "__call__" and not hasattr(fn, method)):
            return NotImplemented
        op = f"tnp.{ufunc.__name__}"
        if method != "__call__":
            fn, op = getattr(fn, method), f"{op}.{method}"
        from .core import TnpOpLambda
        return TnpOpLambda(fn, op=op, name=_op_name(ufunc.__name__))(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = getattr(func, "__module__", "") or ""
        if not module.startswith("numpy"):
            return NotImplemented
        sub = ".".join(p for p in module.split(".")[1:] if not p.startswith("_"))
        op = "tnp." + (f"{sub}." if sub else "") + func.__name__
        from .core import TnpOpLambda, _resolve_tnp_op
        try:
            fn = _resolve_tnp_op(op)
        except ValueError:
            return NotImplemented
        return TnpOpLambda(fn, op=op, name=_op_name(func.__name__))(*args, **kwargs)

    # operators on symbolic tensors become small layers, as in Keras: the tnp ufuncs they are
    # (layers that save by name, so a model using them round-trips through get_config)
    def __add__(self, o):
        return _tnp_call("add", self, o)

    def __radd__(self, o):
        return _tnp_call("add", o, self)

    def __sub__(self, o):
        return _tnp_call("subtract", self, o)

    def __rsub__(self, o):
        return _tnp_call("subtract", o, self)

    def __mul__(self, o):
        return _tnp_call("multiply", self, o)

    def __rmul__(self, o):
        return _tnp_call("multiply", o, self)

    def __truediv__(self, o):
        return _tnp_call("true_divide", self, o)

    def __matmul__(self, o):
        return _tnp_call("matmul", self, o)

    def __neg__(self):
        return _tnp_call("negative", self)

    def __rtruediv__(self, o):
        return _tnp_call("true_divide", o, self)

    def __floordiv__(self, o):
        return _tnp_call("floor_divide", self, o)

    def __mod__(self, o):
        return _tnp_call("remainder", self, o)

    def __pow__(self, o):
        return _tnp_call("power", self, o)

    def __rpow__(self, o):
        return _tnp_call("power", o, self)

    def __rmatmul__(self, o):
        return _tnp_call("matmul", o, self)

    def __abs__(self):
        return _tnp_call("absolute", self)

    def __gt__(self, o):
        return _tnp_call("greater", self, o)

    def __ge__(self, o):
        return _tnp_call("greater_equal", self, o)

    def __lt__(self, o):
        return _tnp_call("less", self, o)

    def __le__(self, o):
        return _tnp_call("less_equal", self, o)

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

    def detach(self):
        """Take this call out of its layer's ``inbound_nodes`` (a ``Sequential`` rebuilding its
        graph takes back the calls its last build made)."""
        nodes = self.layer._inbound_nodes
        for i, n in enumerate(nodes):
            if n is self:
                del nodes[i]
                return


def is_symbolic(x):
    return any(isinstance(t, KerasTensor) for t in flatten(x))


def _op_name(name):
    from .base import unique_name
    return unique_name(f"tnp.{name}".replace(".", "_"))


def _tnp_call(name, *args):
    import tnp
    from .core import TnpOpLambda
    return TnpOpLambda(getattr(tnp, name), op=f"tnp.{name}", name=_op_name(name))(*args)
