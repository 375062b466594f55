"""Variables and values: ``variable``, ``zeros``/``ones``/``eye`` (variables, as TF 2.4 makes
them), reading and assigning values, and what an array's shape and dtype are."""
from __future__ import annotations

import builtins
import math
import sys

import numpy as _np

import tnp

from ..autodiff import Variable
from ._common import _dt, _t, symbolic_ops

__all__ = ["batch_get_value", "batch_set_value", "constant", "count_params", "dtype", "eval",
           "eye", "get_value", "int_shape", "is_sparse", "moving_average_update", "ndim",
           "ones", "ones_like", "print_tensor", "set_value", "shape", "to_dense", "update",
           "update_add", "update_sub", "variable", "zeros", "zeros_like"]


def variable(value, dtype=None, name=None, constraint=None):
    """A ``tt.Variable`` of ``value`` in ``dtype`` (default floatx)."""
    return Variable(value, dtype=_dt(dtype), name=name, constraint=constraint)


def _variable_if_sized(value, dtype, name):
    # TF 2.4 returns a variable when every dimension is non-zero, else a tensor
    if builtins.all(value.shape):
        return variable(value, dtype=dtype, name=name)
    return value


def zeros(shape, dtype=None, name=None):
    """A variable of zeros (a plain array when a dimension is 0)."""
    return _variable_if_sized(tnp.zeros(shape, dtype=_dt(dtype)), dtype, name)


def ones(shape, dtype=None, name=None):
    """A variable of ones (a plain array when a dimension is 0)."""
    return _variable_if_sized(tnp.ones(shape, dtype=_dt(dtype)), dtype, name)


def eye(size, dtype=None, name=None):
    """A ``size`` x ``size`` identity-matrix variable."""
    if isinstance(size, bool) or not isinstance(size, (int, _np.integer)) or size <= 0:
        raise TypeError(f"eye: `size` must be a positive integer, got {size!r}")
    return variable(tnp.eye(int(size), dtype=_dt(dtype)), dtype=dtype, name=name)


def zeros_like(x, dtype=None, name=None):
    """Zeros of ``x``'s shape (and dtype unless given)."""
    x = _t(x)
    return tnp.zeros(x.shape, dtype=x.dtype if dtype is None else _dt(dtype))


def ones_like(x, dtype=None, name=None):
    """Ones of ``x``'s shape (and dtype unless given)."""
    x = _t(x)
    return tnp.ones(x.shape, dtype=x.dtype if dtype is None else _dt(dtype))


def constant(value, dtype=None, shape=None, name=None):
    """``value`` as an array of ``dtype`` (default floatx); with ``shape``, a scalar fills it and
    a value of as many elements is reshaped."""
    out = tnp.asarray(value, dtype=_dt(dtype))
    if shape is not None:
        shape = tuple(shape)
        if out.ndim == 0 or out.size == 1:
            out = tnp.full(shape, out.reshape(()), dtype=out.dtype)
        elif out.size == math.prod(shape):
            out = tnp.reshape(out, shape)
        else:
            raise TypeError(f"constant: expected {math.prod(shape)} elements for shape {shape}, "
                            f"got {out.size}")
    return out


def get_value(x):
    """``x``'s value as a NumPy array."""
    return _np.asarray(x)


def eval(x):  # noqa: A001 (Keras's name)
    """``x``'s value as a NumPy array."""
    return _np.asarray(to_dense(x))


def batch_get_value(tensors):
    """``[get_value(x) for x in tensors]``."""
    return [get_value(x) for x in tensors]


def set_value(x, value):
    """Assign ``value`` (cast to ``x``'s dtype) to the variable ``x``."""
    x.assign(_np.asarray(value, dtype=x.dtype))


def batch_set_value(tuples):
    """``set_value`` for each ``(variable, value)``."""
    for x, value in tuples:
        set_value(x, value)


def update(x, new_x):
    """``x.assign(new_x)``; returns ``x``."""
    return x.assign(new_x)


def update_add(x, increment):
    """``x.assign_add(increment)``; returns ``x``."""
    return x.assign_add(increment)


def update_sub(x, decrement):
    """``x.assign_sub(decrement)``; returns ``x``."""
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """``x = x * momentum + value * (1 - momentum)`` in place (TF 2's, without zero debias)."""
    return x.assign_sub((x - _t(value)) * (1 - momentum))


def count_params(x):
    """The number of elements of ``x``."""
    return _np.prod(int_shape(x))


def is_sparse(tensor):
    """False: tnp has no sparse arrays."""
    return False


def to_dense(tensor):
    """``tensor`` (tnp arrays are dense)."""
    return tensor


def int_shape(x):
    """``x``'s shape as a tuple of ints (None for an unknown dimension)."""
    try:
        return tuple(x.shape)
    except (AttributeError, TypeError):
        return None


def shape(x):
    """``x``'s shape as an int32 array."""
    return tnp.asarray(_t(x).shape, dtype="int32")


def ndim(x):
    """``x``'s number of dimensions."""
    return len(x.shape)


def dtype(x):
    """``x``'s dtype name (``"float32"``)."""
    return _np.dtype(x.dtype).name


def print_tensor(x, message=""):
    """Prints ``message`` and ``x``'s value (NumPy's formatting); returns ``x``."""
    print(message, _np.asarray(x), file=sys.stdout)
    return x


symbolic_ops(globals())
