"""``TerminateOnNaN``, ``LambdaCallback``, ``BaseLogger`` and ``RemoteMonitor`` (TF 2.4's
``tf.keras.callbacks``)."""
from __future__ import annotations

import math

from ._util import echo, to_float
from .base import Callback

__all__ = ["TerminateOnNaN", "LambdaCallback", "BaseLogger", "RemoteMonitor"]


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


class BaseLogger(Callback):
    """Mirrors ``tf.keras.callbacks.BaseLogger(stateful_metrics=None)``: each epoch's logs get
    the batch-size-weighted average of the batch logs (the batch size from a batch's
    ``"size"`` entry when it has one, else 1 per batch). Metrics in ``stateful_metrics`` keep
    their last batch value instead; so do the model's compiled metrics and loss (their batch
    logs are already running means over the epoch, as in TF 2, and averaging them again would
    give a wrong number)."""

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def _stateful(self):
        names = set(self.stateful_metrics)
        model = getattr(self, "model", None)
        if model is not None:
            names.update(getattr(model, "metrics_names", None) or [])
        return names

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}
        self._keep = self._stateful()

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        if batch == 0 or not self._keep:
            self._keep = self._stateful()     # the compiled metrics exist after a first step
        size = to_float(logs.get("size", 1)) * to_float(logs.get("num_steps", 1))
        self.seen += size
        for k, v in logs.items():
            if k in ("size", "num_steps", "batch"):
                continue
            if k in self._keep:
                self.totals[k] = v
            else:
                self.totals[k] = self.totals.get(k, 0.0) + to_float(v) * size

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for k, v in self.totals.items():
            if k in self._keep:
                logs.setdefault(k, v)
            elif self.seen:
                logs[k] = v / self.seen


class RemoteMonitor(Callback):
    """Mirrors ``tf.keras.callbacks.RemoteMonitor(root="http://localhost:9000",
    path="/publish/epoch/end/", field="data", headers=None, send_as_json=False)``: at each
    epoch's end, POSTs ``{"epoch": epoch, **logs}`` to ``root + path``: as a form field
    ``field`` holding the JSON, or as a JSON body (``send_as_json``). Sent with the standard
    library (TF uses ``requests``); an unreachable server is a warning, not an error, as in
    TF."""

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers = headers
        self.send_as_json = send_as_json

    def on_epoch_end(self, epoch, logs=None):
        import json
        import urllib.error
        import urllib.parse
        import urllib.request
        import warnings
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = to_float(v)
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=body, headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError):
            warnings.warn(f"Warning: could not reach RemoteMonitor root server at "
                          f"{self.root}", RuntimeWarning, stacklevel=2)
