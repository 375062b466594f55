"""``Progbar``: Keras's text progress bar (``tf.keras.utils.Progbar`` of TF 2.4).

What it prints, with ``target=11`` and ``verbose=1``::

    11/11 [==============================] - 0s 4ms/step - loss: 0.2831 - accuracy: 0.9172

On a terminal (``sys.stdout.isatty()``, or inside IPython) each redraw goes back over the line
(backspaces, then a carriage return) as Keras does. Anywhere else (a file, a pipe, a captured
stdout) ``verbose=1`` prints only the final line: TF 2.4 counts every POSIX process as a
terminal and fills log files with carriage-return redraws; later Keras stopped that.
"""
from __future__ import annotations

import math
import os
import sys
import time

import numpy as _np

__all__ = ["Progbar"]

clock = time.time           # one clock for the redraw throttle and the times shown (read at each
                            # call, so a test may replace it)


def _time_per_unit(seconds, unit):
    # Keras: whole seconds at >= 1 s (and for 0), else ms, else us, "%.0f" each
    if seconds >= 1 or seconds == 0:
        return " %.0fs/%s" % (seconds, unit)
    if seconds >= 1e-3:
        return " %.0fms/%s" % (seconds * 1e3, unit)
    return " %.0fus/%s" % (seconds * 1e6, unit)


def _eta(seconds):
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def _value(avg, verbose):
    if not isinstance(avg, float):
        return f" {avg}"            # not a number (a string a callback logged): as it is
    # verbose=1 tests the magnitude, verbose=2 the signed value (a negative mean prints in
    # scientific notation there): both as TF 2.4 does
    big = abs(avg) > 1e-3 if verbose == 1 else avg > 1e-3
    return " %.4f" % avg if big else " %.4e" % avg


class Progbar:
    """Mirrors ``tf.keras.utils.Progbar(target, width=30, verbose=1, interval=0.05,
    stateful_metrics=None, unit_name='step')``; off a terminal ``verbose=1`` prints only the
    final line."""

    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics) if stateful_metrics else set()
        out = sys.stdout
        self._dynamic_display = ((hasattr(out, "isatty") and out.isatty())
                                 or "ipykernel" in sys.modules
                                 or "PYCHARM_HOSTED" in os.environ)
        self._total_width = 0
        self._seen_so_far = 0
        self._values = {}           # name -> [weighted sum, weight] (or [value, 1] if stateful)
        self._values_order = []
        self._start = clock()
        self._last_update = -math.inf
        self._time_after_first_step = None

    def update(self, current, values=None, finalize=None):
        """Show step ``current``; ``values`` are ``(name, value)`` pairs, averaged over the
        steps unless the name is in ``stateful_metrics``. ``finalize`` defaults to
        ``current >= target``."""
        self.update_at(current, values, finalize, clock())

    def add(self, n, values=None):
        """``update(seen + n, values)``."""
        self.update(self._seen_so_far + n, values)

    # ------------------------------------------------------------------------------ drawing
    def _finalizes(self, current, finalize):
        if finalize is None:
            return self.target is not None and current >= self.target
        return finalize

    def due(self, now, finalize=False):
        """Whether an update at ``now`` (a :data:`clock` value) would be drawn: a caller whose
        values cost something to read (ProgbarLogger's device values) reads them only then."""
        if self.verbose == 1:
            # off a terminal only the final line is written
            return finalize or (self._dynamic_display
                                and now - self._last_update >= self.interval)
        return self.verbose == 2 and finalize

    def update_at(self, current, values, finalize, now):
        """:meth:`update` at ``now`` (a :data:`clock` value, the one a :meth:`due` check
        used); ``finalize`` None means ``current >= target``."""
        finalize = self._finalizes(current, finalize)
        for k, v in values or []:
            if k not in self._values_order:
                self._values_order.append(k)
            if k in self.stateful_metrics or isinstance(v, (str, bytes)):
                self._values[k] = [v, 1]
            else:
                # at least 1: an epoch's end may repeat the last step's count
                base = max(current - self._seen_so_far, 1)
                acc = self._values.setdefault(k, [0, 0])
                acc[0] += v * base
                acc[1] += base
        self._seen_so_far = current
        if current == 1 and self._time_after_first_step is None:
            self._time_after_first_step = now       # Keras always draws the first step
        if self.verbose == 1:
            if not self.due(now, finalize):
                return
            self._draw(current, now, finalize)
        elif self.verbose == 2 and finalize:
            digits = int(math.log10(self.target)) + 1 if self.target else 1
            line = ("%" + str(digits) + "d/%d") % (current, self.target)
            line += " - %.0fs" % (now - self._start)
            line += "".join(f" - {k}:{_value(self._mean(k), 2)}" for k in self._values_order)
            self._write(line + "\n")
        self._last_update = now

    def _mean(self, k):
        total, weight = self._values[k]
        try:
            return float(_np.mean(_np.asarray(total, dtype=float) / max(1, weight)))
        except (TypeError, ValueError):
            return total

    def _draw(self, current, now, finalize):
        prev_width = self._total_width
        dynamic = self._dynamic_display
        per_unit = self._estimate_step_duration(current, now)
        if self.target is not None:
            digits = int(math.log10(self.target)) + 1 if self.target > 0 else 1
            bar = ("%" + str(digits) + "d/%d [") % (current, self.target)
            filled = int(self.width * (float(current) / self.target)) if self.target else \
                self.width
            if filled > 0:
                bar += "=" * (filled - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - filled) + "]"
        else:
            bar = "%7d/Unknown" % current
        if self.target is None or finalize:
            info = " - %.0fs" % (now - self._start) + _time_per_unit(per_unit, self.unit_name)
        else:
            info = " - ETA: " + _eta(per_unit * (self.target - current))
        info += "".join(f" - {k}:{_value(self._mean(k), 1)}" for k in self._values_order)
        self._total_width = len(bar) + len(info)
        if dynamic:
            if prev_width > self._total_width:
                info += " " * (prev_width - self._total_width)
            text = "\b" * prev_width + "\r" + bar + info
        else:
            text = bar + info
        self._write(text + ("\n" if finalize else ""))

    def _estimate_step_duration(self, current, now):
        # after the first step, the first (often slow: building, first allocations) is left
        # out of the average, as Keras does
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_unit

    @staticmethod
    def _write(text):
        out = sys.stdout            # looked up at each write, so captured output works
        out.write(text)
        out.flush()
