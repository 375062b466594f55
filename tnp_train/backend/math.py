"""Element-wise functions, casts, reductions and products (``K.abs``, ``K.cast``, ``K.sum``,
``K.dot``, ``K.batch_dot``...)."""
from __future__ import annotations

import builtins

import numpy as _np

import tnp

from ._common import _axes, _t, symbolic_ops
from .config import floatx

__all__ = ["abs", "all", "any", "argmax", "argmin", "batch_dot", "cast", "cast_to_floatx",
           "clip", "cos", "cumprod", "cumsum", "dot", "equal", "exp", "greater",
           "greater_equal", "less", "less_equal", "log", "max", "maximum", "mean", "min",
           "minimum", "not_equal", "pow", "prod", "round", "sign", "sin", "sqrt", "square",
           "std", "sum", "tanh", "var"]


def abs(x):  # noqa: A001
    return tnp.abs(_t(x))


def sqrt(x):
    """``sqrt(max(x, 0))``: TF 2.4 clips the negatives to 0 first."""
    x = _t(x)
    return tnp.sqrt(tnp.clip(x, 0, _np.inf).astype(x.dtype))


def round(x):  # noqa: A001
    """Rounds half to even, as TF and NumPy do."""
    return tnp.round(_t(x))


def pow(x, a):  # noqa: A001
    return tnp.power(_t(x), a)


def clip(x, min_value, max_value):
    """``x`` clipped to ``[min_value, max_value]`` (None: unbounded; a ``max_value`` below
    ``min_value`` becomes ``min_value``, as in TF 2.4)."""
    x = _t(x)
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)) \
            and max_value < min_value:
        max_value = min_value
    lo = -_np.inf if min_value is None else min_value
    hi = _np.inf if max_value is None else max_value
    return tnp.clip(x, lo, hi).astype(x.dtype)


def cast(x, dtype):
    return _t(x).astype(_np.dtype(getattr(dtype, "name", dtype)))


def cast_to_floatx(x):
    """An array becomes floatx; anything else a NumPy array of floatx, as in TF 2.4."""
    if isinstance(x, tnp.ndarray):
        return x.astype(floatx())
    return _np.asarray(x, dtype=floatx())


def _floatish(x):
    return x.astype(floatx()) if x.dtype == _np.bool_ else x


def max(x, axis=None, keepdims=False):  # noqa: A001
    return tnp.max(_t(x), axis=_axes(axis), keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return tnp.min(_t(x), axis=_axes(axis), keepdims=keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    x = _t(x)
    return tnp.sum(x, axis=_axes(axis), keepdims=keepdims, dtype=x.dtype)


def prod(x, axis=None, keepdims=False):
    x = _t(x)
    return tnp.prod(x, axis=_axes(axis), keepdims=keepdims, dtype=x.dtype)


def mean(x, axis=None, keepdims=False):
    """Mean (a boolean ``x`` counts as floatx)."""
    x = _floatish(_t(x))
    out = tnp.mean(x, axis=_axes(axis), keepdims=keepdims)
    return out.astype(x.dtype) if x.dtype.kind in "iu" else out


def var(x, axis=None, keepdims=False):
    """Population variance (a boolean ``x`` counts as floatx)."""
    return tnp.var(_floatish(_t(x)), axis=_axes(axis), keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    """Population standard deviation."""
    return tnp.sqrt(var(x, axis=axis, keepdims=keepdims))


def any(x, axis=None, keepdims=False):  # noqa: A001
    return tnp.any(_t(x).astype(bool), axis=_axes(axis), keepdims=keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    return tnp.all(_t(x).astype(bool), axis=_axes(axis), keepdims=keepdims)


def argmax(x, axis=-1):
    return tnp.argmax(_t(x), axis=axis).astype("int64")


def argmin(x, axis=-1):
    return tnp.argmin(_t(x), axis=axis).astype("int64")


def cumsum(x, axis=0):
    x = _t(x)
    return tnp.cumsum(x, axis=axis, dtype=x.dtype)


def cumprod(x, axis=0):
    x = _t(x)
    return tnp.cumprod(x, axis=axis, dtype=x.dtype)


def dot(x, y):
    """``np.dot`` (a N-D ``x`` contracts its last axis with ``y``'s second to last)."""
    return tnp.dot(_t(x), _t(y))


def batch_dot(x, y, axes=None):
    """Per-sample dot products of two batches, contracting ``axes`` (TF 2.4's rules: default
    the last axis of ``x`` with the last (2-D ``y``) or second-to-last axis of ``y``; a
    2-D operand gains an axis that the result drops again)."""
    x, y = _t(x), _t(y)
    xs, ys = x.shape, y.shape
    if len(xs) < 2 or len(ys) < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with "
                         f"shapes {xs} and {ys}.")
    if xs[0] != ys[0]:
        raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. Received "
                         f"inputs with shapes {xs} and {ys}.")
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [len(xs) - 1, len(ys) - 1 if len(ys) == 2 else len(ys) - 2]
    if builtins.any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError(f"Multiple target dimensions are not supported. Expected: None, int, "
                         f"(int, int), Provided: {axes}")
    a0, a1 = list(axes)
    a0 += len(xs) if a0 < 0 else 0
    a1 += len(ys) if a1 < 0 else 0
    if 0 in (a0, a1):
        raise ValueError(f"Cannot perform batch_dot over axis 0. If your inputs are not "
                         f"batched, add a dummy batch dimension to your inputs using "
                         f"K.expand_dims(x, 0)")
    if xs[a0] != ys[a1]:
        raise ValueError(f"Cannot do batch_dot on inputs with shapes {xs} and {ys} with axes="
                         f"{axes}. x.shape[{axes[0]}] != y.shape[{axes[1]}] ({xs[a0]} != "
                         f"{ys[a1]}).")
    x2, y2 = len(xs) == 2, len(ys) == 2
    if x2:
        x, a0 = tnp.expand_dims(x, 1), a0 + 1
    if y2:
        y = tnp.expand_dims(y, 2)
    x = tnp.moveaxis(x, a0, -1)          # (b, ..., d)
    y = tnp.moveaxis(y, a1, 1)           # (b, d, ...)
    xm, yt = x.shape[1:-1], y.shape[2:]
    x3 = tnp.reshape(x, (x.shape[0], -1, x.shape[-1]))
    y3 = tnp.reshape(y, (y.shape[0], y.shape[1], -1))
    out = tnp.reshape(tnp.matmul(x3, y3), (x.shape[0],) + tuple(xm) + tuple(yt))
    if x2:
        out = tnp.squeeze(out, 1)
    elif y2:
        out = tnp.squeeze(out, -1)
    return out


def _elementwise(name):
    """``keras.backend.<name>``: tnp's function of that name on the arguments as tensors."""
    fn = getattr(tnp, name)

    def op(*args):
        return fn(*(_t(a) for a in args))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``tnp.{name}`` of the arguments (``tf.keras.backend.{name}``)."
    return op


# the element-wise functions that are tnp's own, under Keras's names
for _name in ("exp", "log", "square", "sign", "sin", "cos", "maximum", "minimum", "equal",
              "not_equal", "greater", "greater_equal", "less", "less_equal", "tanh"):
    globals()[_name] = _elementwise(_name)
del _name


symbolic_ops(globals())
