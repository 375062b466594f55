"""``tt.backend``: the Keras backend functions of TF 2.4 (``tf.keras.backend``), on tnp.

Each function takes tnp arrays (or anything ``tnp.asarray`` takes) and returns tnp arrays built
with tnp operations, so a ``GradientTape`` differentiates through them. They follow TF 2.4's
eager behaviour: ``variable``, ``zeros``/``ones``/``eye`` and the ``random_*_variable``
functions return ``tt.Variable``; ``get_value``/``eval``/``batch_get_value`` return NumPy
arrays; ``gradients`` raises as it does under eager execution (use ``tt.GradientTape``).
Differences: there are no sparse arrays (``is_sparse`` is False, ``to_dense`` returns its
input), random draws come from NumPy generators (seeded draws are reproducible, not TF's
numbers), and ``print_tensor`` prints with NumPy's formatting.
"""
from __future__ import annotations

import builtins
import contextlib
import math
import sys
import warnings

import numpy as _np

import tnp

__all__ = [
    "abs", "all", "any", "arange", "argmax", "argmin", "backend", "batch_dot", "batch_flatten",
    "batch_get_value", "batch_normalization", "batch_set_value", "bias_add",
    "binary_crossentropy", "cast", "cast_to_floatx", "categorical_crossentropy",
    "clear_session", "clip", "concatenate", "constant", "conv1d", "conv2d", "conv2d_transpose",
    "conv3d", "cos", "count_params", "ctc_batch_cost", "ctc_decode",
    "ctc_label_dense_to_sparse", "cumprod", "cumsum", "depthwise_conv2d", "dot", "dropout",
    "dtype", "elu", "epsilon", "equal", "eval", "exp", "expand_dims", "eye", "flatten",
    "floatx", "foldl", "foldr", "function", "gather", "get_uid", "get_value", "gradients",
    "greater", "greater_equal", "hard_sigmoid", "image_data_format", "in_test_phase",
    "in_top_k", "in_train_phase", "int_shape", "is_keras_tensor", "is_sparse", "l2_normalize",
    "learning_phase", "learning_phase_scope", "less", "less_equal", "local_conv1d",
    "local_conv2d", "log", "manual_variable_initialization", "map_fn", "max", "maximum", "mean",
    "min", "minimum", "moving_average_update", "name_scope", "ndim",
    "normalize_batch_in_training", "not_equal", "one_hot", "ones", "ones_like",
    "permute_dimensions", "placeholder", "pool2d", "pool3d", "pow", "print_tensor", "prod",
    "random_bernoulli", "random_binomial", "random_normal", "random_normal_variable",
    "random_uniform", "random_uniform_variable", "relu", "repeat", "repeat_elements",
    "reset_uids", "reshape", "resize_images", "resize_volumes", "reverse", "rnn", "round",
    "separable_conv2d", "set_epsilon", "set_floatx", "set_image_data_format",
    "set_learning_phase", "set_value", "shape", "sigmoid", "sign", "sin", "softmax",
    "softplus", "softsign", "sparse_categorical_crossentropy", "spatial_2d_padding",
    "spatial_3d_padding", "sqrt", "square", "squeeze", "stack", "std", "stop_gradient", "sum",
    "switch", "tanh", "temporal_padding", "tile", "to_dense", "transpose", "truncated_normal",
    "update", "update_add", "update_sub", "var", "variable", "zeros", "zeros_like"]

_state = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last",
          "learning_phase": None, "manual_init": False}
_uids: dict = {}


def _t(x):
    return x if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _dt(dtype):
    return _np.dtype(floatx() if dtype is None else getattr(dtype, "name", dtype))


# ------------------------------------------------------------------------------------ config
def floatx():
    """The default float type's name (``tf.keras.backend.floatx``)."""
    return _state["floatx"]


def set_floatx(value):
    """Set the default float type; the global dtype policy follows it, as in TF 2.4."""
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    from .mixed_precision.policy import set_global_policy
    _state["floatx"] = str(value)
    set_global_policy(value)


def epsilon():
    """The fuzz factor (``tf.keras.backend.epsilon``, 1e-7)."""
    return _state["epsilon"]


def set_epsilon(value):
    """Set the fuzz factor (``tf.keras.backend.set_epsilon``)."""
    _state["epsilon"] = float(value)


def image_data_format():
    """``"channels_last"`` unless set (``tf.keras.backend.image_data_format``)."""
    return _state["image_data_format"]


def set_image_data_format(data_format):
    """Set the default data format (``tf.keras.backend.set_image_data_format``); the layers take
    theirs from their ``data_format`` argument (None means channels_last)."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _state["image_data_format"] = str(data_format)


def _data_format(data_format):
    data_format = image_data_format() if data_format is None else data_format
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    return data_format


def backend():
    """``"tensorflow"``, the name TF 2.4's Keras reports: tnp_train follows its conventions
    (shapes, data formats, argument names), and Keras programs branch on this name."""
    return "tensorflow"


def clear_session():
    """Reset layer-name counters (so new models are named ``dense``, ``dense_1``... again), the
    uids, the learning phase and the global dtype policy."""
    from .layers.base import reset_names
    from .mixed_precision.policy import set_global_policy
    reset_names()
    _uids.clear()
    _state["learning_phase"] = None
    set_global_policy(None)


def get_uid(prefix=""):
    """1, 2, 3... per ``prefix`` (``tf.keras.backend.get_uid``)."""
    _uids[prefix] = _uids.get(prefix, 0) + 1
    return _uids[prefix]


def reset_uids():
    """Forget the ``get_uid`` counters."""
    _uids.clear()


def manual_variable_initialization(value):
    """Recorded for compatibility: eager variables are always initialised when made."""
    _state["manual_init"] = bool(value)


@contextlib.contextmanager
def name_scope(name):
    """A no-op scope (TF's name scopes name graph ops; tnp has no graph)."""
    if not isinstance(name, str):
        raise TypeError(f"name_scope: name must be a string, got {name!r}")
    yield name


# ----------------------------------------------------------------------- learning phase
def learning_phase():
    """0 (inference) unless set by ``set_learning_phase``/``learning_phase_scope``; as TF 2.4's
    eager default. tnp_train's layers take ``training`` from their call."""
    lp = _state["learning_phase"]
    return 0 if lp is None else lp


def _check_phase(value):
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")


def set_learning_phase(value):
    """Set the learning phase (deprecated in TF 2.4 too: a warning)."""
    warnings.warn("`tf.keras.backend.set_learning_phase` is deprecated and will be removed "
                  "after 2020-10-11. To update it, simply pass a True/False value to the "
                  "`training` argument of the `__call__` method of your layer or model.",
                  DeprecationWarning, stacklevel=2)
    _check_phase(value)
    _state["learning_phase"] = value


@contextlib.contextmanager
def learning_phase_scope(value):
    """The learning phase is ``value`` inside the block (deprecated in TF 2.4 too)."""
    warnings.warn("`tf.keras.backend.learning_phase_scope` is deprecated and will be removed "
                  "after 2020-10-11. To update it, simply pass a True/False value to the "
                  "`training` argument of the `__call__` method of your layer or model.",
                  DeprecationWarning, stacklevel=3)
    _check_phase(value)
    before = _state["learning_phase"]
    _state["learning_phase"] = value
    try:
        yield value
    finally:
        _state["learning_phase"] = before


def in_train_phase(x, alt, training=None):
    """``x`` in the training phase, ``alt`` otherwise (either may be a callable); ``training``
    defaults to ``learning_phase()``."""
    if training is None:
        training = learning_phase()
    if isinstance(training, (tnp.ndarray, _np.ndarray)):
        if training.ndim:
            return switch(training, x() if callable(x) else x, alt() if callable(alt) else alt)
        training = bool(training)
    if training == 1 or training is True:
        return x() if callable(x) else x
    if training == 0 or training is False:
        return alt() if callable(alt) else alt
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    """``x`` in the test phase, ``alt`` otherwise."""
    return in_train_phase(alt, x, training=training)


# ------------------------------------------------------------------------- variables
def variable(value, dtype=None, name=None, constraint=None):
    """A ``tt.Variable`` of ``value`` in ``dtype`` (default floatx)."""
    from .autodiff import Variable
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


# ------------------------------------------------------------------------ introspection
_KerasTensor = None


def _is_keras_tensor_type(x):
    global _KerasTensor
    if _KerasTensor is None:
        from .layers.keras_tensor import KerasTensor   # noqa: PLC0415 - the layers import us
        _KerasTensor = KerasTensor
    return isinstance(x, _KerasTensor)


def is_keras_tensor(x):
    """True for a symbolic tensor of the functional API; False for an array; ValueError for
    anything else (as TF 2.4)."""
    if _is_keras_tensor_type(x):
        return True
    if isinstance(x, tnp.ndarray):
        return False
    raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic "
                     f"tensor instance.")


def is_sparse(tensor):
    """False: tnp has no sparse arrays."""
    return False


def to_dense(tensor):
    """``tensor`` (tnp arrays are dense)."""
    return tensor


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
    from .layers import Input
    return Input(batch_shape=tuple(shape), dtype=_dt(dtype).name, name=name)


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


# ------------------------------------------------------------------------ element-wise
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


def stop_gradient(variables):
    """``tt.stop_gradient`` of an array, or of each in a list."""
    from .autodiff import stop_gradient as _stop
    if isinstance(variables, (list, tuple)):
        return [_stop(v) for v in variables]
    return _stop(variables)


# --------------------------------------------------------------------------- activations
def relu(x, alpha=0.0, max_value=None, threshold=0):
    from .activations import relu as _relu
    return _relu(_t(x), alpha=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    """ELU; an ``alpha`` other than 1 scales the negative part, as TF 2.4's backend does."""
    from .activations import elu as _elu
    res = _elu(_t(x))
    if alpha == 1:
        return res
    return tnp.where(_t(x) > 0, res, alpha * res)


def sigmoid(x):
    from .activations import sigmoid as _sigmoid
    return _sigmoid(_t(x))


def hard_sigmoid(x):
    from .activations import hard_sigmoid as _hs
    return _hs(_t(x))


def softplus(x):
    from .activations import softplus as _sp
    return _sp(_t(x))


def softsign(x):
    from .activations import softsign as _ss
    return _ss(_t(x))



def softmax(x, axis=-1):
    from .activations import softmax as _softmax
    return _softmax(_t(x), axis=axis)


def l2_normalize(x, axis=None):
    """``x / sqrt(max(sum(x**2), 1e-12))`` along ``axis`` (all axes for None)."""
    x = _t(x)
    sq = tnp.sum(tnp.square(x), axis=_axes(axis), keepdims=True)
    return x / tnp.sqrt(tnp.maximum(sq, 1e-12))


def _axes(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


# ---------------------------------------------------------------------------- reductions
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


# -------------------------------------------------------------------------- manipulation
def arange(start, stop=None, step=1, dtype="int32"):
    """``range(start, stop, step)`` as an array (a negative ``start`` alone gives an empty
    one, as in TF 2.4)."""
    if stop is None and start < 0:
        start = 0
    out = tnp.arange(start, stop, step) if stop is not None else tnp.arange(start)
    return out.astype(_np.dtype(dtype))


def reshape(x, shape):
    return tnp.reshape(_t(x), tuple(shape))


def flatten(x):
    return tnp.reshape(_t(x), (-1,))


def batch_flatten(x):
    """``(batch, -1)``."""
    x = _t(x)
    return tnp.reshape(x, (x.shape[0], -1))


def expand_dims(x, axis=-1):
    return tnp.expand_dims(_t(x), axis)


def squeeze(x, axis):
    return tnp.squeeze(_t(x), axis=axis)


def permute_dimensions(x, pattern):
    return tnp.transpose(_t(x), tuple(pattern))


def transpose(x):
    """All axes reversed (``tf.transpose``)."""
    return tnp.transpose(_t(x))


def concatenate(tensors, axis=-1):
    tensors = [_t(t) for t in tensors]
    if axis < 0:
        rank = tensors[0].ndim
        axis = axis % rank if rank else 0
    return tnp.concatenate(tensors, axis=axis)


def stack(x, axis=0):
    return tnp.stack([_t(t) for t in x], axis=axis)


def tile(x, n):
    return tnp.tile(_t(x), [n] if isinstance(n, int) else tuple(n))


def repeat(x, n):
    """``(batch, dim)`` -> ``(batch, n, dim)``."""
    x = _t(x)
    if x.ndim != 2:
        raise ValueError(f"repeat: expected a 2-D input (batch, dim), got shape {x.shape}")
    return tnp.repeat(tnp.expand_dims(x, 1), n, axis=1)


def repeat_elements(x, rep, axis):
    """Each slice along ``axis`` repeated ``rep`` times (``np.repeat``)."""
    return tnp.repeat(_t(x), rep, axis=axis)


def reverse(x, axes):
    return tnp.flip(_t(x), axis=(axes,) if isinstance(axes, int) else tuple(axes))


def gather(reference, indices):
    """``reference[indices]`` along axis 0."""
    return tnp.take(_t(reference), _t(indices).astype("int64"), axis=0)


def one_hot(indices, num_classes):
    """A trailing one-hot axis of ``num_classes`` (float32; rows of an index out of range
    are all zeros, as ``tf.one_hot``)."""
    idx = _t(indices).astype("int64")
    return (tnp.expand_dims(idx, -1) == tnp.arange(num_classes)).astype("float32")


def switch(condition, then_expression, else_expression):
    """``then`` where ``condition`` holds, else ``else``: a scalar condition picks one (calling
    it when callable); an array condition of lower rank is extended with trailing axes."""
    cond = _t(condition).astype(bool)
    if cond.ndim == 0:
        chosen = then_expression if bool(cond) else else_expression
        return chosen() if callable(chosen) else chosen
    then = _t(then_expression() if callable(then_expression) else then_expression)
    other = _t(else_expression() if callable(else_expression) else else_expression)
    if cond.ndim > then.ndim:
        raise ValueError(f"Rank of `condition` should be less than or equal to rank of "
                         f"`then_expression` and `else_expression`. ndim(condition)="
                         f"{cond.ndim}, ndim(then_expression)={then.ndim}")
    if cond.ndim > 1:
        cond = tnp.reshape(cond, cond.shape + (1,) * (then.ndim - cond.ndim))
    return tnp.where(cond, then, other)


def _pad_axes(x, pads):
    return tnp.pad(x, [tuple(p) for p in pads])


def temporal_padding(x, padding=(1, 1)):
    """Zeros before and after axis 1 of a 3-D array."""
    x = _t(x)
    if len(padding) != 2:
        raise ValueError(f"temporal_padding: padding must be a pair, got {padding!r}")
    return _pad_axes(x, [(0, 0), padding, (0, 0)])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    """Zeros around the rows and columns of a 4-D array."""
    x = _t(x)
    if len(padding) != 2 or len(padding[0]) != 2 or len(padding[1]) != 2:
        raise ValueError(f"spatial_2d_padding: padding must be two pairs, got {padding!r}")
    if _data_format(data_format) == "channels_first":
        return _pad_axes(x, [(0, 0), (0, 0), padding[0], padding[1]])
    return _pad_axes(x, [(0, 0), padding[0], padding[1], (0, 0)])


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    """Zeros around the three spatial axes of a 5-D array."""
    x = _t(x)
    if len(padding) != 3 or builtins.any(len(p) != 2 for p in padding):
        raise ValueError(f"spatial_3d_padding: padding must be three pairs, got {padding!r}")
    if _data_format(data_format) == "channels_first":
        return _pad_axes(x, [(0, 0), (0, 0), *padding])
    return _pad_axes(x, [(0, 0), *padding, (0, 0)])


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    """Rows and columns scaled up by integer factors, ``"nearest"`` (repeats) or
    ``"bilinear"`` (TF 2's half-pixel bilinear resize, in float32 as TF's)."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError('interpolation should be one of "nearest" or "bilinear".')
    if first:
        x = tnp.moveaxis(x, 1, -1)
    if interpolation == "nearest":
        y = tnp.repeat(tnp.repeat(x, height_factor, axis=1), width_factor, axis=2)
    else:
        # float32 whatever the input, as tf.image.resize gives for bilinear
        y = _bilinear(x.astype("float32"), x.shape[1] * height_factor,
                      x.shape[2] * width_factor)
    return tnp.moveaxis(y, -1, 1) if first else y


def _bilinear_axis(n_in, n_out):
    # half-pixel centres: source = (i + 0.5) * n_in / n_out - 0.5, clamped at the edges
    src = (_np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    src = _np.clip(src, 0, n_in - 1)
    lo = _np.floor(src).astype(_np.int64)
    hi = _np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


def _bilinear(x, oh, ow):
    lo, hi, f = _bilinear_axis(x.shape[1], oh)
    f = tnp.asarray(f.reshape(1, -1, 1, 1), dtype=x.dtype)
    rows = tnp.take(x, lo, axis=1) * (1 - f) + tnp.take(x, hi, axis=1) * f
    lo, hi, f = _bilinear_axis(x.shape[2], ow)
    f = tnp.asarray(f.reshape(1, 1, -1, 1), dtype=x.dtype)
    return tnp.take(rows, lo, axis=2) * (1 - f) + tnp.take(rows, hi, axis=2) * f


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """The three spatial axes of a 5-D array repeated by their factors."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    axes = (2, 3, 4) if first else (1, 2, 3)
    for ax, f in zip(axes, (depth_factor, height_factor, width_factor)):
        x = tnp.repeat(x, f, axis=ax)
    return x


# ------------------------------------------------------------------------------ products
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


# ------------------------------------------------------------------- normalization, losses
def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):  # noqa: A002
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` (``beta``/``gamma`` may be None)."""
    x = _t(x)
    inv = 1.0 / tnp.sqrt(_t(var) + epsilon)
    if gamma is not None:
        inv = inv * _t(gamma)
    out = x * inv + ((-_t(mean) * inv) if beta is None else (_t(beta) - _t(mean) * inv))
    return out.astype(x.dtype)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):  # noqa: A002
    """``(normed, mean, variance)`` over ``reduction_axes``. The 4-D cases over ``[0, 1, 2]``
    or ``[0, 2, 3]`` are TF's fused batch norm: the variance returned is the unbiased one
    (the normalisation uses the biased one) and epsilon is at least 1.001e-5."""
    x = _t(x)
    axes = tuple(reduction_axes)
    m = tnp.mean(x, axis=axes)
    v = tnp.var(x, axis=axes)
    bshape = [1 if i in axes else x.shape[i] for i in range(x.ndim)]

    def b(t):
        return None if t is None else tnp.reshape(_t(t), bshape)

    fused = x.ndim == 4 and list(axes) in ([0, 1, 2], [0, 2, 3])
    eps = builtins.max(epsilon, 1.001e-5) if fused else epsilon
    normed = batch_normalization(x, tnp.reshape(m, bshape), tnp.reshape(v, bshape), b(beta),
                                 b(gamma), epsilon=eps)
    if fused:
        n = math.prod(x.shape[i] for i in axes)
        v = v * (n / builtins.max(n - 1, 1))
    return normed, m, v


def bias_add(x, bias, data_format=None):
    """``x + bias`` along the channels (a bias of ``ndim(x) - 1`` dimensions covers every
    non-batch axis; with channels_first TF 2.4 reshapes it, last axis first)."""
    x, bias = _t(x), _t(bias)
    first = _data_format(data_format) == "channels_first"
    if bias.ndim not in (1, x.ndim - 1):
        raise ValueError(f"Unexpected bias dimensions {bias.ndim}, expect to be 1 or "
                         f"{x.ndim - 1} dimensions")
    if bias.ndim == 1:
        if first:
            return x + tnp.reshape(bias, (1, -1) + (1,) * (x.ndim - 2))
        return x + bias
    if first:
        # TF 2.4 reshapes (not transposes) the bias to (1, channels, spatial...)
        return x + tnp.reshape(bias, (1, bias.shape[-1]) + tuple(bias.shape[:-1]))
    return x + tnp.expand_dims(bias, 0)


def _log_softmax(z, axis):
    z = z - tnp.max(z, axis=axis, keepdims=True)
    return z - tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))


def binary_crossentropy(target, output, from_logits=False):
    """Element-wise binary crossentropy; probabilities are clipped to ``[eps, 1 - eps]`` and
    ``eps`` is added inside the logs, as in TF 2.4."""
    target, output = _t(target), _t(output)
    if from_logits:
        # sigmoid_cross_entropy_with_logits, the stable form
        return (tnp.maximum(output, 0) - output * target
                + tnp.log1p(tnp.exp(-tnp.abs(output))))
    eps = epsilon()
    output = tnp.clip(output, eps, 1 - eps).astype(output.dtype)
    bce = target * tnp.log(output + eps) + (1 - target) * tnp.log(1 - output + eps)
    return -bce


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Crossentropy along ``axis``; probabilities are renormalised to sum to 1, then clipped
    to ``[eps, 1 - eps]``."""
    target, output = _t(target), _t(output)
    if target.shape != output.shape:
        raise ValueError(f"Shapes {target.shape} and {output.shape} are incompatible")
    if from_logits:
        return -tnp.sum(target * _log_softmax(output, axis), axis=axis)
    output = output / tnp.sum(output, axis=axis, keepdims=True)
    eps = epsilon()
    output = tnp.clip(output, eps, 1 - eps).astype(output.dtype)
    return -tnp.sum(target * tnp.log(output), axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Crossentropy against integer targets; probabilities are clipped to ``[eps, 1 - eps]``
    and then (TF 2.4's log-softmax of their logs) renormalised."""
    target, output = _t(target), _t(output)
    axis = axis % output.ndim
    if axis != output.ndim - 1:
        output = tnp.moveaxis(output, axis, -1)
    if not from_logits:
        eps = epsilon()
        output = tnp.log(tnp.clip(output, eps, 1 - eps).astype(output.dtype))
    logp = _log_softmax(output, -1)
    labels = tnp.reshape(target.astype("int64"), output.shape[:-1])
    if labels.size and (int(tnp.min(labels)) < 0 or int(tnp.max(labels)) >= output.shape[-1]):
        raise ValueError(f"sparse_categorical_crossentropy: received a label value outside "
                         f"the valid range [0, {output.shape[-1]})")
    onehot = (tnp.expand_dims(labels, -1) == tnp.arange(output.shape[-1])).astype(logp.dtype)
    return -tnp.sum(onehot * logp, axis=-1)


def dropout(x, level, noise_shape=None, seed=None):
    """Zeroes a fraction ``level`` of ``x`` and scales the rest by ``1 / (1 - level)``."""
    from .utils.random import make_rng
    x = _t(x)
    if not 0 <= level < 1:
        raise ValueError(f"dropout: rate must be a scalar tensor or a float in the range "
                         f"[0, 1), got {level}")
    rng = make_rng(seed)
    keep = rng.random(tuple(x.shape if noise_shape is None else noise_shape)) >= level
    scale = tnp.asarray(keep / (1 - level), dtype=x.dtype)
    return x * scale


def in_top_k(predictions, targets, k):
    """Whether each target's prediction is among the ``k`` largest of its row (ties at the
    boundary count as in; a non-finite prediction or an index out of range is never in)."""
    p = _np.asarray(predictions, dtype=_np.float64)
    t = _np.asarray(targets).astype(_np.int64)
    n, c = p.shape
    ok = (t >= 0) & (t < c)
    tp = p[_np.arange(n), _np.clip(t, 0, c - 1)]
    finite = _np.isfinite(p).all(axis=1)
    out = ok & finite & ((p > tp[:, None]).sum(axis=1) < k)
    return tnp.asarray(out)


# ---------------------------------------------------------------------------- convolution
def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _conv_ops():
    from .ops import conv as _conv
    return _conv


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """1-D convolution, ``padding`` ``"valid"``, ``"same"`` or ``"causal"``; kernel
    ``(k, in, out)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    if padding not in ("valid", "same", "causal"):
        raise ValueError(f"Unknown padding: {padding}")
    y = _conv_ops().conv1d(x, _t(kernel), None, strides, padding, dilation_rate)
    return tnp.moveaxis(y, -1, 1) if first else y


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    """2-D convolution; kernel ``(kh, kw, in, out)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    y = _conv_ops().conv2d(x, _t(kernel), None, _tuple(strides, 2), padding,
                           _tuple(dilation_rate, 2))
    return tnp.moveaxis(y, -1, 1) if first else y


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """Transposed 2-D convolution to ``output_shape`` (batch and channels included, in
    ``data_format``'s order); kernel ``(kh, kw, out, in)``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
        spatial = tuple(output_shape[2:4])
    else:
        spatial = tuple(output_shape[1:3])
    y = _conv_ops().conv2d_transpose(x, _t(kernel), None, spatial, _tuple(strides, 2),
                                     padding, _tuple(dilation_rate, 2))
    return tnp.moveaxis(y, -1, 1) if first else y


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    """3-D convolution; kernel ``(kd, kh, kw, in, out)``."""
    from .layers.convolutional import _conv3d
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    y = _conv3d(x, _t(kernel), None, _tuple(strides, 3), padding, _tuple(dilation_rate, 3), 1,
                None, "conv3d")
    return tnp.moveaxis(y, -1, 1) if first else y


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    """Each input channel convolved with its own ``(kh, kw)`` filters; kernel
    ``(kh, kw, in, multiplier)``, output channels ``in * multiplier``."""
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    k = _t(depthwise_kernel)
    kh, kw, cin, mult = k.shape
    # a grouped convolution with one input channel per group
    y = _conv_ops().conv2d(x, tnp.reshape(k, (kh, kw, 1, cin * mult)), None,
                           _tuple(strides, 2), padding, _tuple(dilation_rate, 2), cin)
    return tnp.moveaxis(y, -1, 1) if first else y


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """``depthwise_conv2d`` then a 1x1 convolution with ``pointwise_kernel``."""
    first = _data_format(data_format) == "channels_first"
    y = depthwise_conv2d(x, depthwise_kernel, strides, padding, "channels_last" if not first
                         else "channels_first", dilation_rate)
    if first:
        y = tnp.moveaxis(y, 1, -1)
    y = _conv_ops().conv2d(y, _t(pointwise_kernel), None, (1, 1), "valid", (1, 1))
    return tnp.moveaxis(y, -1, 1) if first else y


def _pool_args(pool_mode, padding):
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    if padding not in ("valid", "same"):
        raise ValueError(f"Invalid padding: {padding}")


def _pool(x, pool_size, strides, padding, data_format, pool_mode, rank):
    """``rank``-D max or average pooling (the 2-D kernels, applied per depth slice in 3-D)."""
    from .ops import pooling as _ops
    _pool_args(pool_mode, padding)
    x = _t(x)
    first = _data_format(data_format) == "channels_first"
    if first:
        x = tnp.moveaxis(x, 1, -1)
    fn = _ops.max_pool2d if pool_mode == "max" else _ops.avg_pool2d
    args = (_tuple(pool_size, rank), _tuple(strides, rank), padding)
    if rank == 3:
        from .layers.pooling import _pool3d
        y = _pool3d(fn, x, *args)
    else:
        y = fn(x, *args)
    return tnp.moveaxis(y, -1, 1) if first else y


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    """2-D max or average pooling."""
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None,
           pool_mode="max"):
    """3-D max or average pooling."""
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    """Unshared 1-D convolution: kernel ``(output_length, kernel_size * in, out)``, one
    filter bank per output position."""
    return _local_conv(inputs, kernel, _tuple(kernel_size, 1), _tuple(strides, 1),
                       (kernel.shape[0],), data_format)


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    """Unshared 2-D convolution: kernel ``(rows * cols, kh * kw * in, out)``."""
    return _local_conv(inputs, kernel, _tuple(kernel_size, 2), _tuple(strides, 2),
                       tuple(output_shape), data_format)


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format):
    x, kernel = _t(inputs), _t(kernel)
    first = _data_format(data_format) == "channels_first"
    patches = []
    for pos in _np.ndindex(*output_shape):
        sl = tuple(slice(p * s, p * s + k) for p, s, k in zip(pos, strides, kernel_size))
        # TF flattens each patch in the input's own layout (channels first or last)
        patch = x[(slice(None), slice(None)) + sl] if first else x[(slice(None),) + sl]
        patches.append(tnp.reshape(patch, (x.shape[0], -1)))
    xs = tnp.stack(patches, axis=0)                        # (positions, batch, features)
    out = tnp.matmul(xs, kernel)                           # (positions, batch, filters)
    out = tnp.reshape(out, tuple(output_shape) + out.shape[1:])
    nd = len(output_shape)
    if first:
        return tnp.transpose(out, (nd, nd + 1) + tuple(range(nd)))
    return tnp.transpose(out, (nd,) + tuple(range(nd)) + (nd + 1,))


# ------------------------------------------------------------------------- random values
def _rng(seed):
    from .utils.random import make_rng
    return make_rng(seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform draws in ``[minval, maxval)``."""
    a = _rng(seed).uniform(minval, maxval, size=tuple(shape))
    return tnp.asarray(a.astype(_dt(dtype)))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws."""
    a = _rng(seed).normal(mean, stddev, size=tuple(shape))
    return tnp.asarray(a.astype(_dt(dtype)))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws, those beyond two standard deviations drawn again."""
    rng = _rng(seed)
    a = rng.standard_normal(size=tuple(shape))
    bad = _np.abs(a) > 2
    while bad.any():
        a[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = _np.abs(a) > 2
    return tnp.asarray((a * stddev + mean).astype(_dt(dtype)))


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    """1 with probability ``p``, else 0."""
    u = _rng(seed).uniform(size=tuple(shape))
    return tnp.asarray((u <= p).astype(_dt(dtype)))


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    """``random_bernoulli`` (deprecated in TF 2.4: a warning)."""
    warnings.warn("`tf.keras.backend.random_binomial` is deprecated, and will be removed in "
                  "a future version.Please use `tf.keras.backend.random_bernoulli` instead.",
                  DeprecationWarning, stacklevel=2)
    return random_bernoulli(shape, p, dtype, seed)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """A variable of uniform draws in ``[low, high)``."""
    return variable(random_uniform(shape, low, high, dtype, seed), dtype=dtype, name=name)


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """A variable of normal draws."""
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype=dtype, name=name)


# ------------------------------------------------------------------------- control flow
def map_fn(fn, elems, name=None, dtype=None):
    """``fn`` applied to each slice of ``elems`` along axis 0, stacked."""
    elems = _t(elems)
    return tnp.stack([_t(fn(elems[i])) for i in range(elems.shape[0])])


def foldl(fn, elems, initializer=None, name=None):
    """``fn(acc, x)`` over ``elems`` from the first slice (which starts ``acc`` when no
    initializer is given)."""
    elems = _t(elems)
    items = [elems[i] for i in range(elems.shape[0])]
    acc = items.pop(0) if initializer is None else initializer
    for e in items:
        acc = fn(acc, e)
    return acc


def foldr(fn, elems, initializer=None, name=None):
    """``fn(acc, x)`` over ``elems`` from the last slice."""
    elems = _t(elems)
    items = [elems[i] for i in range(elems.shape[0] - 1, -1, -1)]
    acc = items.pop(0) if initializer is None else initializer
    for e in items:
        acc = fn(acc, e)
    return acc


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None, time_major=False, zero_output_for_mask=False):
    """Runs ``step_function(x_t, states + constants) -> (output, new_states)`` over the time
    axis; returns ``(last_output, outputs, new_states)``. With a ``mask`` ``(batch, time)``, a
    masked step keeps the states and repeats the previous output (zeros with
    ``zero_output_for_mask``)."""
    inputs = _t(inputs)
    if not time_major:
        inputs = tnp.swapaxes(inputs, 0, 1)
    steps = inputs.shape[0]
    if mask is not None:
        mask = _t(mask).astype(bool)
        if mask.ndim == 2:
            mask = tnp.swapaxes(mask, 0, 1) if not time_major else mask
        else:
            raise ValueError(f"rnn: mask must be (batch, time), got shape {mask.shape}")
    constants = list(constants or [])
    states = list(initial_states)
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, prev = [], None
    for t in order:
        out, new_states = step_function(inputs[t], states + constants)
        new_states = list(new_states)
        if mask is not None:
            m = mask[t]

            def keep(new, old):
                mm = tnp.reshape(m, m.shape + (1,) * (new.ndim - 1))
                return tnp.where(mm, new, old)

            if prev is None:
                prev = tnp.zeros_like(out)
            out = keep(out, tnp.zeros_like(out) if zero_output_for_mask else prev)
            new_states = [keep(n, o) for n, o in zip(new_states, states)]
        outputs.append(out)
        prev = out
        states = new_states
    stacked = tnp.stack(outputs, axis=0)
    if not time_major:
        stacked = tnp.swapaxes(stacked, 0, 1)
    return outputs[-1], stacked, states


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
    from .models import Model
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


def print_tensor(x, message=""):
    """Prints ``message`` and ``x``'s value (NumPy's formatting); returns ``x``."""
    print(message, _np.asarray(x), file=sys.stdout)
    return x


# ----------------------------------------------------------------------------------- CTC
def ctc_label_dense_to_sparse(labels, label_lengths):
    """``(indices, values, dense_shape)`` of the first ``label_lengths[i]`` labels of each row
    (TF returns a SparseTensor; tnp has none, so its three parts)."""
    labels = _np.asarray(labels)
    lengths = _np.asarray(label_lengths).astype(_np.int64).reshape(-1)
    idx = [(i, j) for i in range(labels.shape[0]) for j in range(int(lengths[i]))]
    indices = _np.asarray(idx, dtype=_np.int64).reshape(-1, 2)
    values = labels[indices[:, 0], indices[:, 1]] if len(idx) else labels.reshape(-1)[:0]
    return (tnp.asarray(indices), tnp.asarray(values.astype(_np.int32)),
            tnp.asarray(_np.asarray(labels.shape, dtype=_np.int64)))


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """CTC loss per sample, ``(batch, 1)``: ``y_pred`` ``(batch, time, classes)`` softmax
    outputs whose last class is the blank, ``y_true`` ``(batch, max_label_len)`` labels,
    ``input_length``/``label_length`` ``(batch, 1)``; ``log(y_pred + epsilon)`` is used as the
    logits, as TF 2.4 does. Differentiable with respect to ``y_pred``."""
    y_pred = _t(y_pred)
    labels = _np.asarray(y_true).astype(_np.int64)
    in_len = _np.asarray(input_length).astype(_np.int64).reshape(-1)
    lab_len = _np.asarray(label_length).astype(_np.int64).reshape(-1)
    logp = _log_softmax(tnp.log(y_pred + epsilon()), -1)          # (batch, time, classes)
    blank = y_pred.shape[-1] - 1
    losses = []
    for b in range(y_pred.shape[0]):
        seq = labels[b, :lab_len[b]]
        losses.append(-_ctc_log_likelihood(logp[b, :in_len[b]], seq, blank))
    return tnp.reshape(tnp.stack(losses), (-1, 1))


def _logsumexp(parts):
    from .autodiff import stop_gradient as _stop
    stacked = tnp.stack(parts)
    # the shift cancels out: no gradient through it; an all -inf column stays -inf with a
    # zero gradient (no log(0) on the tape)
    m = _stop(tnp.max(stacked, axis=0))
    safe = tnp.where(tnp.isfinite(m), m, 0.0)
    total = tnp.sum(tnp.exp(stacked - safe), axis=0)
    some = total > 0
    return tnp.where(some, safe + tnp.log(tnp.where(some, total, 1.0)), -_np.inf)


def _ctc_log_likelihood(logp, seq, blank):
    # the forward (alpha) recursion over the label sequence with blanks interleaved
    ext = [blank]
    for s in seq:
        ext += [int(s), blank]
    n = len(ext)
    ext_a = _np.asarray(ext)
    neg = tnp.asarray(-_np.inf, dtype=logp.dtype)
    # transitions allowed from s - 2: not a blank and not a repeat of the label two back
    skip = _np.zeros(n, bool)
    skip[2:] = (ext_a[2:] != blank) & (ext_a[2:] != ext_a[:-2])
    emit = tnp.take(logp, ext_a, axis=1)                     # (time, n)
    T = logp.shape[0]
    if T == 0:
        return neg
    init = _np.full(n, -_np.inf)
    init[:2] = 0.0
    alpha = tnp.where(tnp.asarray(init) == 0.0, emit[0], neg)
    skip_t = tnp.asarray(skip)
    for t in range(1, T):
        shift1 = tnp.concatenate([tnp.reshape(neg, (1,)), alpha[:-1]])
        shift2 = tnp.concatenate([tnp.full((2,), -_np.inf, dtype=logp.dtype), alpha[:-2]])
        shift2 = tnp.where(skip_t, shift2, neg)
        alpha = _logsumexp([alpha, shift1, shift2]) + emit[t]
    return _logsumexp([alpha[n - 1], alpha[n - 2]]) if n > 1 else alpha[n - 1]


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """``([decoded], log_probabilities)``: the best path per sample (greedy: the most likely
    class at each step, repeats merged, blanks dropped), padded with -1 to ``(batch,
    time)``; ``log_probabilities`` ``(batch, 1)`` is what TF's greedy decoder gives: minus
    the sum over the steps of the largest log-probability (a positive number). Only ``greedy=True`` is provided."""
    if not greedy:
        raise ValueError("ctc_decode: only greedy=True is supported (no beam search in "
                         "tnp_train)")
    p = _np.asarray(y_pred, dtype=_np.float64)
    lengths = _np.asarray(input_length).astype(_np.int64).reshape(-1)
    logp = _np.log(_np.transpose(p, (1, 0, 2)) + epsilon())       # (time, batch, classes)
    blank = p.shape[-1] - 1
    paths, scores = [], []
    for b in range(p.shape[0]):
        steps = logp[:lengths[b], b]
        best = steps.argmax(axis=-1)
        scores.append(-steps.max(axis=-1).sum())
        path, last = [], None
        for c in best:
            if c != last and c != blank:
                path.append(int(c))
            last = c
        paths.append(path)
    dense = _np.full((p.shape[0], p.shape[1]), -1, dtype=_np.int64)   # (batch, time), as TF
    for b, q in enumerate(paths):
        dense[b, :len(q)] = q
    return [tnp.asarray(dense)], tnp.asarray(_np.asarray(scores).reshape(-1, 1))


def _elementwise(name):
    """``keras.backend.<name>``: tnp's function of that name on the arguments as tensors."""
    fn = getattr(tnp, name)

    def op(*args):
        return fn(*(_t(a) for a in args))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``tnp.{name}`` of the arguments (``tf.keras.backend.{name}``)."
    return op


# the element-wise functions that are tnp's own, under Keras's names
for _name in ('exp', 'log', 'square', 'sign', 'sin', 'cos', 'maximum', 'minimum', 'equal', 'not_equal', 'greater', 'greater_equal', 'less', 'less_equal', 'tanh'):
    globals()[_name] = _elementwise(_name)
del _name


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
        if _is_keras_tensor_type(a) or (isinstance(a, (list, tuple)) and
                                        builtins.any(_is_keras_tensor_type(e) for e in a)):
            return True
    return False


def _symbolic_aware(name, fn):
    def op(*args, **kwargs):
        if _has_symbolic(args, kwargs):
            from .layers.core import TnpOpLambda   # noqa: PLC0415 - the layers import us
            from .layers.keras_tensor import _op_name  # noqa: PLC0415
            return TnpOpLambda(op, op=f"tnp_train.backend.{name}",
                               name=_op_name(f"backend.{name}"))(*args, **kwargs)
        return fn(*args, **kwargs)
    op.__name__, op.__qualname__, op.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    op.__wrapped__ = fn
    return op


for _name in __all__:
    _fn = globals().get(_name)
    if _name not in _NOT_OPS and callable(_fn) and not isinstance(_fn, type) and \
            getattr(_fn, "__module__", __name__) == __name__:
        globals()[_name] = _symbolic_aware(_name, _fn)
del _name, _fn
