"""``ProgbarLogger``: the progress bar of ``fit``/``evaluate``/``predict`` (TF 2.4's
``tf.keras.callbacks.ProgbarLogger``), drawn with tqdm.

``verbose=1``: one tqdm bar per epoch (per ``evaluate``/``predict`` call) counting steps, with
the running loss and metrics after it; at the epoch's end the bar is completed with the epoch's
logs, ``val_`` ones included. ``verbose=2``: one plain line per epoch. Without tqdm installed
(it is in the ``examples`` extra), ``verbose=1`` falls back to the ``verbose=2`` lines.
Everything is written to ``sys.stdout`` as it is at the time of writing.

The bar is redrawn at most every ``_REFRESH_INTERVAL`` seconds (and at the epoch's end), and
only a redraw reads the running values back from the device: a step that is not drawn costs
no host round trip (on a GPU, such a read waits for every step queued before it).
"""
from __future__ import annotations

import math
import sys
import time

from ._util import echo, format_logs, is_chief, python_logs
from .base import Callback

try:
    from tqdm import tqdm as _tqdm
except ImportError:  # pragma: no cover - tqdm is an optional dependency
    _tqdm = None

__all__ = ["ProgbarLogger"]

# Keys that describe the batch rather than measure the model: never shown.
_HIDDEN = ("size", "batch", "num_steps", "outputs")

# Seconds between two redraws of a bar (a few a second: enough to watch, few host reads).
_REFRESH_INTERVAL = 0.25
_clock = time.monotonic


def _per_unit(seconds, unit):
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


class ProgbarLogger(Callback):
    """Mirrors ``tf.keras.callbacks.ProgbarLogger(count_mode="samples", stateful_metrics=None)``.

    ``fit`` adds one itself (``count_mode="steps"``) when ``verbose != 0``. With
    ``count_mode="samples"`` the bar counts ``logs["size"]`` per batch against
    ``params["samples"]`` when those are given, and steps otherwise. ``stateful_metrics`` is
    accepted for compatibility: every value the model reports is already the running value of
    the epoch, so each is shown as it is. Under a multi-worker strategy only the chief (worker
    0) draws: the values are the job's, the same on every worker.
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
        self._bar = None
        self._start = None
        self._next_draw = -math.inf
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
    def _begin(self, desc):
        self._close()
        self.seen = 0
        self._start = time.perf_counter()
        self._next_draw = -math.inf       # the first batch is drawn at once
        if self.verbose == 1 and _tqdm is not None:
            # tqdm never redraws by itself (mininterval=inf): _advance decides, so a redraw
            # and the read of the values it shows happen together
            self._bar = _tqdm(total=self.target, desc=desc, file=sys.stdout, leave=True,
                              unit="sample" if self._counts_samples else "step",
                              dynamic_ncols=False, mininterval=math.inf)

    def _advance(self, logs, show_logs=True):
        n = int(logs.get("size", 1)) if self._counts_samples else 1
        self.seen += n
        bar = self._bar
        if bar is None:
            return
        now = _clock()
        if now < self._next_draw:
            bar.update(n)
            return
        self._next_draw = now + _REFRESH_INTERVAL
        if show_logs:
            bar.set_postfix_str(format_logs(python_logs(logs, _HIDDEN), _HIDDEN), refresh=False)
        bar.update(n)
        bar.refresh()

    def _finish(self, logs, prefix, show_logs=True):
        if self.verbose == 0 or self._start is None:
            return
        text = format_logs(python_logs(logs, _HIDDEN), _HIDDEN) if show_logs else ""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)
            self._close()
        else:
            elapsed = time.perf_counter() - self._start
            target = self.target if self.target is not None else self.seen
            parts = [f"{self.seen}/{target}", f"{elapsed:.0f}s"]
            if self.seen:
                parts.append(_per_unit(elapsed / self.seen,
                                       "sample" if self._counts_samples else "step"))
            line = " - ".join(parts)
            if text:
                line += " - " + text
            echo(f"{prefix} - {line}" if prefix else line)
        self._start = None

    def _close(self):
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.close()

    # ------------------------------------------------------------------ training
    def on_train_begin(self, logs=None):
        self._called_in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose:
            self._begin(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        if self.verbose:
            self._advance(logs or {})

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs or {}, f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_end(self, logs=None):
        self._called_in_fit = False
        self._close()

    # ------------------------------------------------------------------ evaluate / predict
    def on_test_begin(self, logs=None):
        if self.verbose and not self._called_in_fit:
            self._begin(None)

    def on_test_batch_end(self, batch, logs=None):
        if self.verbose and not self._called_in_fit:
            self._advance(logs or {})

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finish(logs or {}, "")

    def on_predict_begin(self, logs=None):
        if self.verbose:
            self._begin(None)

    def on_predict_batch_end(self, batch, logs=None):
        if self.verbose:
            self._advance(logs or {}, show_logs=False)

    def on_predict_end(self, logs=None):
        self._finish({}, "", show_logs=False)
