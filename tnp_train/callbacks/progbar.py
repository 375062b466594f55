"""``ProgbarLogger``: the progress output of ``fit``/``evaluate``/``predict`` (TF 2.4's
``tf.keras.callbacks.ProgbarLogger``), drawn with Keras's bar, :class:`tt.utils.Progbar`.

``fit(verbose=1)`` prints, as Keras does, ``Epoch 2/5`` (when there is more than one epoch) and
then the bar, ``30/30 [==============================] - 1s 40ms/step - loss: 0.1234 -
val_loss: 0.2345``; on a terminal the bar is redrawn as the epoch runs, elsewhere only that final
line is written. ``verbose=2``: the same ``Epoch`` line, then ``30/30 - 1s - loss: ...``.

The bar is redrawn at most every ``_REFRESH_INTERVAL`` seconds (Keras: 0.05 s), and only a
redraw reads the running values back from the device: a step that is not drawn costs no host
round trip (on a GPU, such a read waits for every step queued before it).
"""
from __future__ import annotations

from ..utils import progbar as _progbar_utils
from ..utils.progbar import Progbar
from ._util import echo, is_chief, python_logs
from .base import Callback

__all__ = ["ProgbarLogger"]

# Keys that describe the batch rather than measure the model: never shown.
_HIDDEN = ("size", "batch", "num_steps", "outputs")

# Seconds between two redraws of a bar (a few a second: enough to watch, few host reads).
_REFRESH_INTERVAL = 0.25


def _shown(logs):
    return [(k, v) for k, v in python_logs(logs, _HIDDEN).items()
            if k not in _HIDDEN and not k.startswith("_")]


class ProgbarLogger(Callback):
    """Mirrors ``tf.keras.callbacks.ProgbarLogger(count_mode="samples", stateful_metrics=None)``.

    ``fit`` adds one itself (``count_mode="steps"``) when ``verbose != 0``. With
    ``count_mode="samples"`` the bar counts ``logs["size"]`` per batch against
    ``params["samples"]`` when those are given, and steps otherwise. Every value the model
    logs is already the running value of the epoch (as TF 2.4's compiled metrics are), so each
    is shown as it is: ``stateful_metrics`` is accepted and changes nothing. A fit stopped in
    the middle of an epoch shows the steps it ran (Keras 2.4 shows the target). Under a
    multi-worker strategy only the chief (worker 0) prints: the values are the job's.
    """

    _supports_tf_logs = True     # reads the device values itself, only when it redraws

    def __init__(self, count_mode="samples", stateful_metrics=None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError(f"ProgbarLogger: unknown `count_mode`: {count_mode!r} "
                             f"(expected 'samples' or 'steps')")
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics) if stateful_metrics else set()
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self._counts_samples = False
        self.seen = 0
        self.progbar = None
        self._called_in_fit = False

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose or 0)
        self.epochs = params.get("epochs") or 1
        self._counts_samples = not self.use_steps and params.get("samples") is not None
        self.target = params.get("samples") if self._counts_samples else params.get("steps")
        self._quiet_off_chief()

    def set_model(self, model):
        super().set_model(model)
        self._quiet_off_chief()

    def _quiet_off_chief(self):
        if self.model is not None and not is_chief(self.model):
            self.verbose = 0

    # ------------------------------------------------------------------ the bar
    def _begin(self):
        self.seen = 0
        self.progbar = None
        if self.verbose:
            self.progbar = Progbar(self.target, verbose=self.verbose,
                                   interval=_REFRESH_INTERVAL,
                                   unit_name="sample" if self._counts_samples else "step")

    def _advance(self, logs, show_logs=True):
        self.seen += int(logs.get("size", 1)) if self._counts_samples else 1
        bar = self.progbar
        if bar is None or self.verbose != 1:
            return
        now = _progbar_utils.clock()
        if not bar.due(now, False):
            bar.update_at(self.seen, None, False, now)   # counts the step, draws nothing
            return
        values = _shown(logs) if show_logs else None
        bar.stateful_metrics.update(k for k, _ in values or ())
        bar.update_at(self.seen, values, False, now)

    def _finish(self, logs, show_logs=True):
        bar = self.progbar
        if bar is None:
            return
        if bar.target is None:
            bar.target = self.seen          # the count is known once the data ran out
        values = _shown(logs) if show_logs else None
        bar.stateful_metrics.update(k for k, _ in values or ())
        bar.update_at(self.seen if self.seen else bar.target, values, True,
                       _progbar_utils.clock())
        self.progbar = None

    # ------------------------------------------------------------------ training
    def on_train_begin(self, logs=None):
        self._called_in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        self._begin()
        if self.verbose and self.epochs > 1:
            echo(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._advance(logs or {})

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs or {})

    def on_train_end(self, logs=None):
        self._called_in_fit = False
        self.progbar = None

    # ------------------------------------------------------------------ evaluate / predict
    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._begin()

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._advance(logs or {})

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finish(logs or {})

    def on_predict_begin(self, logs=None):
        self._begin()

    def on_predict_batch_end(self, batch, logs=None):
        self._advance(logs or {}, show_logs=False)

    def on_predict_end(self, logs=None):
        self._finish({}, show_logs=False)
