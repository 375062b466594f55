"""Helpers shared by the callbacks: the monitor mode, warnings, log values read back to the host,
the learning rate, printing."""
from __future__ import annotations

import math
import numbers
import sys
import warnings

from ..utils.logs import python_logs, to_python  # noqa: F401 - the callbacks take them here

# Substrings of a monitored name for which "auto" mode means "higher is better".
_MAX_HINTS = ("acc", "auc", "precision", "recall", "fmeasure")


def resolve_mode(monitor, mode, owner):
    """``"min"`` or ``"max"`` for ``mode`` in {"auto", "min", "max"}. An unknown mode warns and
    falls back to "auto" (as Keras does); "auto" picks "max" for accuracy-like monitors."""
    if mode not in ("auto", "min", "max"):
        warn(f"{owner}: mode {mode!r} is unknown, falling back to 'auto' mode.")
        mode = "auto"
    if mode == "auto":
        name = str(monitor).lower()
        mode = "max" if any(h in name for h in _MAX_HINTS) else "min"
    return mode


def warn(message):
    """Keras logs a warning where the user did something odd but training can go on; a Python
    warning (``UserWarning``) is the equivalent here."""
    warnings.warn(message, UserWarning, stacklevel=3)


def missing_monitor(owner, monitor, logs, what):
    warn(f"{owner}: {what} is conditioned on metric `{monitor}` which is not available. "
         f"Available metrics are: {','.join(sorted(logs))}")


def to_float(value):
    """A log value as a Python float (logs are floats; NumPy/tnp scalars are accepted)."""
    if isinstance(value, float):
        return value
    return float(to_python(value))


def echo(message):
    """Print to the current ``sys.stdout`` (looked up at each call, so captured output works)."""
    print(message, file=sys.stdout, flush=True)


def format_value(value):
    """A log value as Keras prints it: 4 decimals, or scientific notation when tiny."""
    try:
        v = to_float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != 0 and math.isfinite(v) and abs(v) < 1e-3:
        return f"{v:.4e}"
    return f"{v:.4f}"


def format_logs(logs, exclude=()):
    return " - ".join(f"{k}: {format_value(v)}" for k, v in logs.items()
                      if k not in exclude and not k.startswith("_"))


def is_chief(model):
    """Whether this worker writes files and prints progress: worker 0 under a multi-worker
    strategy (TF's chief), always without one."""
    from ..trainers.distributed import is_chief as chief  # callbacks sit beside the trainers
    return chief(model)


def chief_only(model):
    """``with chief_only(model) as writes:`` a block whose writes only the chief makes (the
    other workers skip them; nothing in the block may wait for them)."""
    from ..trainers.distributed import chief_only as block
    return block(model)


def _optimizer(model, owner):
    opt = getattr(model, "optimizer", None)
    if opt is None or not hasattr(opt, "learning_rate"):
        raise ValueError(f'{owner}: the optimizer must have a "learning_rate" attribute '
                         f"(model.optimizer is {type(opt).__name__})")
    return opt


def get_lr(model, owner):
    """The optimizer's current learning rate as a float. A learning-rate schedule object (a
    callable) has no single value to read or change: TypeError, as in Keras."""
    lr = _optimizer(model, owner).learning_rate
    if callable(lr) and not isinstance(lr, numbers.Number):
        raise TypeError(f"{owner}: the optimizer's learning_rate is a schedule "
                        f"({type(lr).__name__}); this callback needs a float learning rate")
    return to_float(lr)


def set_lr(model, value, owner):
    """Set the rate through the optimizer's ``learning_rate`` attribute (the optimizer's
    setter rejects a float when it was built with a schedule)."""
    _optimizer(model, owner).learning_rate = float(value)


def check_save_freq(save_freq, owner):
    """``save_freq`` as Keras accepts it: ``"epoch"`` or a positive number of batches."""
    if save_freq != "epoch" and not (isinstance(save_freq, int) and
                                     not isinstance(save_freq, bool) and save_freq > 0):
        raise ValueError(f"{owner}: unrecognized save_freq: {save_freq!r} (expected 'epoch' "
                         f"or a positive integer number of batches)")
    return save_freq


def batch_save_due(callback):
    """Counts a training batch of a callback that saves every ``save_freq`` batches (its
    ``_batches_since_save``): whether this batch's end is a save."""
    if callback.save_freq == "epoch":
        return False
    callback._batches_since_save += 1
    if callback._batches_since_save < callback.save_freq:
        return False
    callback._batches_since_save = 0
    return True


def wait_for_chief(model):
    """Every worker waits until the chief finished its write (see trainers.distributed)."""
    from ..trainers.distributed import wait_for_chief as wait   # trainers sit beside callbacks
    wait(model)
