"""The functional API's side of the backend: symbolic inputs (``placeholder``), the test for
one (``is_keras_tensor``), ``function`` (a callable over a graph) and gradients."""
from __future__ import annotations

import numpy as _np

import tnp

from ..autodiff import stop_gradient as _stop
from ..layers import Input
from ..layers.keras_tensor import KerasTensor
from ..models import Model
from ._common import _dt, symbolic_ops

__all__ = ["function", "gradients", "is_keras_tensor", "placeholder", "stop_gradient"]


def is_keras_tensor(x):
    """True for a symbolic tensor of the functional API; False for an array; ValueError for
    anything else (as TF 2.4)."""
    if isinstance(x, KerasTensor):
        return True
    if isinstance(x, tnp.ndarray):
        return False
    raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic "
                     f"tensor instance.")


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None, ragged=False):
    """A symbolic input of full ``shape`` (batch first; or ``ndim`` unknown dimensions), as
    ``tt.Input(batch_shape=shape)``."""
    if sparse or ragged:
        raise ValueError("placeholder: sparse and ragged placeholders need sparse/ragged "
                         "arrays, which tnp does not have")
    if shape is None:
        if ndim is None:
            raise ValueError("placeholder: give `shape` or `ndim`")
        shape = (None,) * ndim
    return Input(batch_shape=tuple(shape), dtype=_dt(dtype).name, name=name)


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable that runs the graph from ``inputs`` to ``outputs`` (symbolic tensors) on
    arrays and returns NumPy values; as TF 2.4 under eager execution, ``updates`` and session
    arguments are refused."""
    if kwargs:
        raise ValueError(f"Session keyword arguments are not supported during eager execution. "
                         f"You passed: {kwargs}")
    if updates:
        raise ValueError(f"`updates` argument is not supported during eager execution. You "
                         f"passed: {updates}")
    model = Model(inputs=inputs, outputs=outputs)
    wrap = isinstance(outputs, list) and len(outputs) == 1

    def func(model_inputs):
        outs = model(model_inputs)
        if wrap and not isinstance(outs, (list, tuple)):
            outs = [outs]
        if isinstance(outs, (list, tuple)):
            return [_np.asarray(o) for o in outs]
        return _np.asarray(outs)

    return func


def gradients(loss, variables):
    """Raises, as TF 2.4 does under eager execution: use ``tt.GradientTape``."""
    raise RuntimeError("tf.gradients is not supported when eager execution is enabled. Use "
                       "tf.GradientTape instead.")


def stop_gradient(variables):
    """``tt.stop_gradient`` of an array, or of each in a list."""
    if isinstance(variables, (list, tuple)):
        return [_stop(v) for v in variables]
    return _stop(variables)


symbolic_ops(globals())
