"""What the backend's modules share: argument coercion, and the dispatch that makes a backend
function called on the functional API's symbolic tensors a layer of the graph."""
from __future__ import annotations

import builtins

import numpy as _np

import tnp

from ..layers.core import TnpOpLambda
from ..layers.keras_tensor import KerasTensor, _op_name
from .config import floatx, image_data_format


def _t(x):
    return x if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _dt(dtype):
    return _np.dtype(floatx() if dtype is None else getattr(dtype, "name", dtype))


def _data_format(data_format):
    data_format = image_data_format() if data_format is None else data_format
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    return data_format


def _axes(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _log_softmax(z, axis):
    z = z - tnp.max(z, axis=axis, keepdims=True)
    return z - tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))


# ----------------------------------------------------------------- on symbolic tensors
# Called on the functional API's symbolic tensors (``K.std(x1)`` on a ``tt.Input``'s
# descendants, as the Keras guides do for add_loss/add_metric), a backend function becomes a
# layer of the graph, as TF 2.4 dispatches its ops on KerasTensors; on arrays it is itself.
_NOT_OPS = {
    "backend", "floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
    "set_image_data_format", "clear_session", "learning_phase", "set_learning_phase",
    "manual_variable_initialization", "get_uid", "reset_uids", "is_keras_tensor", "int_shape",
    "ndim", "dtype", "variable", "get_value", "batch_get_value", "set_value",
    "batch_set_value", "update", "update_add", "update_sub", "count_params", "name_scope",
    "placeholder", "is_placeholder", "function", "gradients", "stop_gradient", "rnn",
    "random_normal_variable", "random_uniform_variable", "eval", "print_tensor",
    "get_session", "set_session", "ctc_decode", "to_dense", "is_sparse",
}


def _has_symbolic(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, KerasTensor) or (isinstance(a, (list, tuple)) and
                                          builtins.any(isinstance(e, KerasTensor) for e in a)):
            return True
    return False


def _symbolic_aware(name, fn):
    def op(*args, **kwargs):
        if _has_symbolic(args, kwargs):
            return TnpOpLambda(op, op=f"tnp_train.backend.{name}",
                               name=_op_name(f"backend.{name}"))(*args, **kwargs)
        return fn(*args, **kwargs)
    op.__name__, op.__qualname__, op.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    op.__module__ = fn.__module__      # pickled by reference, it is found where it lives
    op.__wrapped__ = fn
    return op


def symbolic_ops(namespace):
    """Make each function of a backend module's ``__all__`` (``namespace``: its globals) that
    the module defines and that is an op symbolic-aware; run at the end of the module, so its
    own functions call each other through the same wrappers."""
    for name in namespace["__all__"]:
        fn = namespace.get(name)
        if name not in _NOT_OPS and callable(fn) and not isinstance(fn, type) and \
                getattr(fn, "__module__", namespace["__name__"]) == namespace["__name__"]:
            namespace[name] = _symbolic_aware(name, fn)
