"""One source of randomness for tnp_train: initializers without a seed, dropout, shuffling.

``set_random_seed(s)`` (``tf.keras.utils.set_random_seed``) seeds Python's ``random``, NumPy's
and tnp's global generators and this module's generator, so a training run is reproducible.
The generator is per thread (replicas of a strategy run in threads and must not race on one
generator); each thread's generator is derived from the seed and the order threads first ask.
"""
from __future__ import annotations

import itertools
import random as _pyrandom
import threading

import numpy as _np

__all__ = ["set_random_seed", "get_rng", "make_rng", "set_thread_stream"]

_state = threading.local()
_lock = threading.Lock()
_seed = None              # None: fresh entropy
_epoch = 0                # bumped by set_random_seed so threads re-derive their generator
_thread_counter = itertools.count()


def set_random_seed(seed):
    """Seed every generator training uses (Python, NumPy, tnp, tnp_train)."""
    global _seed, _epoch, _thread_counter
    if not isinstance(seed, (int, _np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"set_random_seed: expected a non-negative integer seed, got {seed!r}")
    seed = int(seed)
    _pyrandom.seed(seed)
    _np.random.seed(seed % 2**32)
    import tnp
    tnp.random.seed(seed % 2**32)
    with _lock:
        _seed = seed
        _epoch += 1
        _thread_counter = itertools.count()


def get_rng():
    """This thread's NumPy ``Generator`` (seeded by :func:`set_random_seed`)."""
    st = _state
    if getattr(st, "epoch", None) != _epoch:
        with _lock:
            stream = getattr(st, "stream", None)
            # a named stream (a replica thread's) does not depend on which thread asked first
            k = next(_thread_counter) if stream is None else [1, stream]
            st.rng = _np.random.default_rng(None if _seed is None else
                                            [_seed, *(k if isinstance(k, list) else [k])])
            st.epoch = _epoch
    return st.rng


def set_thread_stream(stream):
    """Give this thread its own reproducible stream ``stream`` (a non-negative int; a
    strategy's replica ``i`` uses ``i``) instead of one numbered by the order threads ask."""
    if getattr(_state, "stream", None) != stream:
        _state.stream = stream
        _state.epoch = None


def make_rng(seed=None):
    """A new Generator: from ``seed`` when given, else drawn from :func:`get_rng` (so it is
    reproducible under :func:`set_random_seed`)."""
    if seed is None:
        return _np.random.default_rng(get_rng().integers(0, 2**63))
    return _np.random.default_rng(seed)
