"""``TerminateOnNaN`` and ``LambdaCallback`` (TF 2.4's ``tf.keras.callbacks``)."""
from __future__ import annotations

import math

from ._util import echo, to_float
from .base import Callback

__all__ = ["TerminateOnNaN", "LambdaCallback"]


class TerminateOnNaN(Callback):
    """Mirrors ``tf.keras.callbacks.TerminateOnNaN()``: sets ``model.stop_training`` as soon as
    a training batch's ``loss`` is NaN or infinite (fit then ends after that batch)."""

    _supports_tf_logs = True     # reads the loss alone from the device (each batch, as TF)

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None:
            loss = to_float(loss)
            if math.isnan(loss) or math.isinf(loss):
                echo(f"Batch {batch}: Invalid loss, terminating training")
                self.model.stop_training = True


class LambdaCallback(Callback):
    """Mirrors ``tf.keras.callbacks.LambdaCallback(on_epoch_begin=None, on_epoch_end=None,
    on_batch_begin=None, on_batch_end=None, on_train_begin=None, on_train_end=None,
    **kwargs)``: a callback made of plain functions, called with the hook's arguments
    (``(epoch, logs)``, ``(batch, logs)`` or ``(logs)``). Any other hook can be given by keyword
    (``on_test_end=...``, ``on_train_batch_end=...``); an unknown hook name is a TypeError.
    ``on_batch_begin``/``on_batch_end`` run for training batches, as the base class's aliases.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_batch_begin=on_batch_begin, on_batch_end=on_batch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end)
        for name, fn in kwargs.items():
            if not (name.startswith("on_") and callable(getattr(Callback, name, None))):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}")
            hooks[name] = fn
        for name, fn in hooks.items():
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"LambdaCallback: {name} must be callable, got "
                                    f"{type(fn).__name__}")
                setattr(self, name, _hook(fn, name))


def _hook(fn, name):
    """``fn`` as a hook: called as ``fn(epoch_or_batch, logs)`` or ``fn(logs)``, like Keras's."""
    if "batch" in name or "epoch" in name:
        def hook(index, logs=None):
            return fn(index, logs)
    else:
        def hook(logs=None):
            return fn(logs)
    hook.__name__ = name
    return hook
