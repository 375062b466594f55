"""``tt.nn``: the loss-scaling helpers of ``tf.nn`` that custom training loops under a
distribution strategy use: :func:`compute_average_loss` and :func:`scale_regularization_loss`.

Both divide by the number of replicas in sync, so that the gradients that the strategy *sums*
across replicas are those of the loss averaged over the global batch. The strategy is read
lazily (``tt.distribute.get_strategy()``); outside any strategy there is one replica.
"""
from __future__ import annotations

import importlib
import numbers

import numpy as _np

import tnp
from tnp.extend import is_floating as _is_floating, is_tnp_array as _is_tnp

__all__ = ["compute_average_loss", "scale_regularization_loss"]


def _replicas_in_sync(op):
    """The current strategy's ``num_replicas_in_sync``; RuntimeError in cross-replica context
    of a strategy (TF: these helpers belong in the function given to ``strategy.run``)."""
    try:
        ds = importlib.import_module("tnp_train.distribute")
    except ModuleNotFoundError as e:
        if e.name != "tnp_train.distribute":  # a broken import inside it must not pass as 1
            raise
        return 1
    get_strategy = getattr(ds, "get_strategy", None)
    if get_strategy is None:  # the package exists but does not define strategies yet
        return 1
    has_strategy = getattr(ds, "has_strategy", None)
    in_cross = getattr(ds, "in_cross_replica_context", None)
    if has_strategy is not None and in_cross is not None and has_strategy() and in_cross():
        raise RuntimeError(f"You are calling `{op}` in cross replica context, while it was "
                           "expected to be called in replica context (inside the function "
                           "given to strategy.run).")
    return int(get_strategy().num_replicas_in_sync)


def _global_rows(size):
    """The size of the global batch the current replica's ``size`` rows were split from, where
    the strategy split it; else None."""
    from .distribute.distribute_lib import replica_batch_rows  # noqa: PLC0415
    rows = replica_batch_rows(size)
    return None if rows is None else rows[0]


def _weights_for(loss, sample_weight):
    """``sample_weight`` shaped for ``loss`` as TF's ``squeeze_or_expand_dimensions`` does: a
    trailing dimension of 1 too many is squeezed, one too few is added; then it must broadcast
    to the losses' shape."""
    # NumPy weights (not tnp ones) move to the losses' device when they meet them
    w = sample_weight if _is_tnp(sample_weight) else _np.asarray(sample_weight)
    if not (_is_floating(w.dtype) or w.dtype.kind in "iub"):
        raise TypeError(f"compute_average_loss: sample_weight must be numeric, got dtype "
                        f"{w.dtype}")
    orig = tuple(w.shape)
    if w.ndim and w.ndim - loss.ndim == 1:
        if w.shape[-1] != 1:
            raise ValueError(f"compute_average_loss: sample_weight of shape {orig} does not fit "
                             f"per_example_loss of shape {tuple(loss.shape)} (its last dimension "
                             "must be 1 to be squeezed)")
        w = w[..., 0]
    elif w.ndim and loss.ndim - w.ndim == 1:
        w = w[..., None]
    try:
        shape = _np.broadcast_shapes(tuple(w.shape), tuple(loss.shape))
    except ValueError:
        shape = None
    if shape != tuple(loss.shape):
        # TF multiplies anyway when the product is larger than the losses (and sums it): a
        # silently wrong average, refused here
        raise ValueError(f"compute_average_loss: sample_weight of shape {orig} does not "
                         f"broadcast to per_example_loss of shape {tuple(loss.shape)}")
    return w


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """Mirrors ``tf.nn.compute_average_loss``: ``sum(per_example_loss * sample_weight) /
    global_batch_size``, in the losses' dtype; ``global_batch_size`` defaults to the size of
    the global batch the strategy split into the replicas' batches (TF: the per-replica batch,
    the first dimension, times ``num_replicas_in_sync``, which is the same for an even split
    and wrong for an uneven last batch), else to TF's.

    Differs from TF: the weighted product of float64 losses stays float64 (TF rounds it through
    float32); weights that do not broadcast to the losses' shape, a non-floating loss and a
    ``global_batch_size`` <= 0 raise instead of giving a wrong or infinite value.
    """
    loss = per_example_loss if _is_tnp(per_example_loss) else tnp.asarray(per_example_loss)
    if loss.ndim == 0:
        raise ValueError("compute_average_loss: per_example_loss must have rank >= 1 (one loss "
                         f"per example), got a scalar of dtype {loss.dtype}")
    dtype = loss.dtype
    if not _is_floating(dtype):
        raise TypeError("compute_average_loss: per_example_loss must be floating point, got "
                        f"dtype {dtype}")
    if sample_weight is not None:
        w = _weights_for(loss, sample_weight)
        # as TF: multiplied in float32 at least, then cast back (float16 losses round once)
        work = _np.promote_types(dtype, _np.float32) if dtype.name != "bfloat16" \
            else _np.dtype(_np.float32)
        loss = (loss.astype(work, copy=False) * w.astype(work, copy=False)).astype(
            dtype, copy=False)
    if global_batch_size is None:
        replicas = _replicas_in_sync("compute_average_loss")
        rows = _global_rows(loss.shape[0]) if replicas > 1 else None
        # the global batch the strategy split (an uneven split included), else TF's guess
        global_batch_size = rows if rows is not None else loss.shape[0] * replicas
        if global_batch_size == 0:
            return tnp.zeros((), dtype=dtype, device=loss.device)
    elif _is_tnp(global_batch_size):
        if global_batch_size.ndim != 0:
            raise ValueError("compute_average_loss: global_batch_size must be a scalar, got "
                             f"shape {tuple(global_batch_size.shape)}")
        # cast, so that an integer array does not promote the loss's dtype; no read-back
        global_batch_size = global_batch_size.astype(dtype)
    else:
        if isinstance(global_batch_size, (bool, _np.bool_)) or not isinstance(
                global_batch_size, (numbers.Real, _np.integer, _np.floating)):
            raise TypeError("compute_average_loss: global_batch_size must be a number, got "
                            f"{global_batch_size!r}")
        # a Python number keeps the loss's dtype (a weak scalar); a NumPy one would promote it
        global_batch_size = float(global_batch_size)
        if not global_batch_size > 0:
            raise ValueError("compute_average_loss: global_batch_size must be > 0, got "
                             f"{global_batch_size}")
    return tnp.sum(loss) / global_batch_size


def scale_regularization_loss(regularization_loss):
    """Mirrors ``tf.nn.scale_regularization_loss``: ``sum(regularization_loss) /
    num_replicas_in_sync``; ``regularization_loss`` is an array or a list of them (such as
    ``model.losses``)."""
    replicas = _replicas_in_sync("scale_regularization_loss")
    if isinstance(regularization_loss, (list, tuple)):
        parts = [x if _is_tnp(x) else tnp.asarray(x) for x in regularization_loss]
        total = tnp.sum(tnp.stack(parts)) if parts else tnp.asarray(0.0, dtype=_np.float32)
    else:
        x = regularization_loss if _is_tnp(regularization_loss) \
            else tnp.asarray(regularization_loss)
        total = tnp.sum(x)
    return total / replicas
