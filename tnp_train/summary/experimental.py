"""``tt.summary.experimental`` (``tf.summary.experimental``): the default step, the scope of a
custom summary function, and raw ``Summary`` protocol buffers."""
from __future__ import annotations

import time

import numpy as np

from ._writer import get_step, recording_writer, set_step, summary_scope, tensorboard

__all__ = ["get_step", "set_step", "summary_scope", "write_raw_pb"]


def write_raw_pb(tensor, step=None, name=None):
    """``tf.summary.experimental.write_raw_pb(tensor, step=None, name=None)``: write serialized
    ``Summary`` protocol buffers (bytes, or an array of them) as they are, e.g. ones made by
    tensorboard's ``*_pb`` helpers. True when written, False without a default writer or
    outside ``record_if``."""
    target = recording_writer(step)
    if target is None:
        return False
    writer, step = target
    lib = tensorboard()
    for data in np.asarray(tensor, dtype=object).ravel():
        event = lib.event_pb2.Event(wall_time=time.time(), step=step)
        event.summary.ParseFromString(bytes(data))
        writer.write_event(event)
    return True
