"""``Embedding``: integer ids to rows of a table (TF 2.4 ``tf.keras.layers.Embedding``).

The lookup is one tape node; its gradient is a dense scatter-add of the output cotangent into a
table of zeros (``np.add.at``, ``cupyx.scatter_add`` on a GPU), summing over repeated ids. Both
run with the array module of the table's device (``xp``) and leave their results there.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, device_of as _tnp_device, is_floating, wrap

from ..autodiff.primitive import backend_op
from ..autodiff.tape import gradient_destination, hand_written_backward
from .base import Layer
from ._common import add_option_weight, device_of as _device_of, scatter_add

__all__ = ["Embedding", "embedding_lookup"]


def _data_on(a, dev, xp):
    """The backend array of non-differentiated data ``a`` (ids, masks) on ``dev``: tnp arrays
    elsewhere and NumPy arrays move there, as tnp moves NumPy operands."""
    if isinstance(a, tnp.ndarray):
        return _backend(a if _tnp_device(a) is dev else a.to_device(dev))
    return xp.asarray(a)


def _check_ids(ids, n, who):
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())   # the only reads back to the host
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{who}: id {bad} is out of range [0, {n}) (input_dim={n}); "
                             f"ids of shape {ids.shape}")


def embedding_lookup(table, ids, name="embedding_lookup"):
    """``table[ids]`` as one tape node; the gradient reaches ``table`` only (ids are integers).
    Ids outside ``[0, table.shape[0])`` raise ValueError naming ``name``. Runs on the table's
    device (ids given as NumPy arrays or on another device move there); the result and the
    gradient are on that device."""
    dev, xp = _device_of(table)
    n = table.shape[0]

    # one primitive of a compiled program: the ids are an argument (their checks run with it)
    @backend_op(name)
    def op(table, ids):
        ids_b = _data_on(ids, dev, xp)
        if ids_b.dtype.kind not in "iu":
            if is_floating(ids_b.dtype) or ids_b.dtype.kind == "b":
                ids_b = ids_b.astype(_np.int64)
            else:
                raise TypeError(f"{name}: ids must be integers, got dtype {ids_b.dtype}")
        _check_ids(ids_b, n, name)
        t = _backend(table) if isinstance(table, tnp.ndarray) else xp.asarray(table)
        y = wrap(xp.take(t, ids_b, axis=0), dev)

        def grad_fn(dy):
            d = _data_on(dy, dev, xp)
            dt = _np.float64 if d.dtype == _np.float64 else _np.float32
            # the table's gradient summed straight into a strategy's bucket when the tape
            # offers one of the accumulating dtype (the same zeros and scatter-add)
            g = gradient_destination(table, t) if t.dtype == dt else None
            if g is None:
                g = xp.zeros(t.shape, dtype=dt)
            else:
                g.fill(0)
            scatter_add(xp, g, ids_b.reshape(-1),
                        d.reshape(-1, t.shape[1]).astype(dt, copy=False))
            return wrap(g.astype(t.dtype, copy=False), dev), None
        return y, hand_written_backward(name, grad_fn, (table,))

    return op(table, ids)


class Embedding(Layer):
    """Turns non-negative integer ids into dense vectors; mirrors
    ``tf.keras.layers.Embedding(input_dim, output_dim, embeddings_initializer="uniform",
    embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None,
    mask_zero=False, input_length=None)``. The weight ``embeddings`` is (input_dim,
    output_dim); outputs have shape ``inputs.shape + (output_dim,)`` in the compute dtype.
    With ``mask_zero`` the id 0 is padding: ``compute_mask`` returns ``inputs != 0`` (and then
    ``input_dim`` must count it)."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,) if not isinstance(input_length, (list, tuple)) \
                else tuple(input_length)
        # as Keras: no autocast (float ids are not cast to a 16-bit compute dtype, the table is
        # read as stored); the output is cast to the compute dtype instead
        kwargs["autocast"] = False
        super().__init__(**kwargs)
        for what, v in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(v, bool) or not isinstance(v, (int, _np.integer)) or v <= 0:
                raise ValueError(f"Both `input_dim` and `output_dim` should be positive, found "
                                 f"input_dim {input_dim} and output_dim {output_dim} ({what})")
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.activity_regularizer = activity_regularizer
        self.embeddings_constraint = embeddings_constraint
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = input_length

    def build(self, input_shape):
        self.embeddings = add_option_weight(self, "embeddings", (self.input_dim, self.output_dim))
        super().build(input_shape)

    def call(self, inputs):
        y = embedding_lookup(self.embeddings, inputs, name=self.name)
        compute = self.compute_dtype
        if y.dtype.name != compute:
            y = y.astype(compute)
        return y

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        if isinstance(inputs, tnp.ndarray):
            return tnp.not_equal(inputs, 0)
        return tnp.asarray(_np.asarray(inputs) != 0)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if self.input_length is None:
            return input_shape + (self.output_dim,)
        lengths = list(self.input_length) if isinstance(self.input_length, (list, tuple)) \
            else [self.input_length]
        if len(lengths) != len(input_shape) - 1:
            raise ValueError(f"{self.name}: input_length is {self.input_length}, but the "
                             f"received input has shape {input_shape}")
        dims = [s if s is not None else l for l, s in zip(lengths, input_shape[1:])]
        return (input_shape[0],) + tuple(dims) + (self.output_dim,)

    def get_config(self):
        cfg = {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
               "embeddings_initializer": self.embeddings_initializer,
               "embeddings_regularizer": self.embeddings_regularizer,
               "activity_regularizer": self.activity_regularizer,
               "embeddings_constraint": self.embeddings_constraint, "mask_zero": self.mask_zero,
               "input_length": self.input_length}
        return cfg
