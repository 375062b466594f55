"""``tt.profiler``: traces of single- and multi-worker training (TF 2.4's ``tf.profiler``).

``tt.profiler.experimental`` holds TF's API: ``start``/``stop``, ``Profile``, ``Trace``,
``ProfilerOptions``, and the capture ``server``/``client``. ``python -m tnp_train.profiler``
captures from running workers and reports the step-time breakdown (docs/profiler.md).
"""
from . import experimental

__all__ = ["experimental"]
