"""Background iteration for ``tt.data``: the prefetch producer and the parallel-map pool.

Both are iterator objects (not generators) so that dropping them, or closing them, stops their
threads even when they were never advanced. The threads are daemons and never hold a reference
to the iterator object itself, only to the shared queue and stop event, so garbage collection of
a half-consumed iterator runs ``__del__`` and stops them.
"""
from __future__ import annotations

import collections
import itertools
import queue
import threading

from ..utils import tracing as _tracing

__all__ = ["PrefetchIterator", "ParallelMapIterator"]

_END = object()
_POLL = 0.05  # seconds between checks of the stop event while blocked


class _Raised:
    __slots__ = ("exc",)

    def __init__(self, exc):
        self.exc = exc


def _put(q, item, stop):
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL)
            return True
        except queue.Full:
            continue
    return False


def _produce(make_iter, q, stop):
    it = None
    try:
        it = make_iter()
        while not stop.is_set():
            try:
                # profiling: the work of producing one element on this pipeline thread
                with _tracing.span("prefetch", "input"):
                    item = next(it)
            except StopIteration:
                _put(q, _END, stop)
                return
            except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
                _put(q, _Raised(e), stop)
                return
            if not _put(q, item, stop):
                return
    except BaseException as e:  # noqa: BLE001 - building the upstream iterator failed
        _put(q, _Raised(e), stop)
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # pragma: no cover
                pass


class PrefetchIterator:
    """Runs ``make_iter()`` on a daemon thread, ``buffer_size`` elements ahead of the consumer.
    An exception raised upstream is re-raised by the consumer's ``next`` at the position it
    happened."""

    def __init__(self, make_iter, buffer_size, name="tt.data.prefetch"):
        self._q = queue.Queue(maxsize=max(1, int(buffer_size)))
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=_produce, args=(make_iter, self._q, self._stop),
                                        name=name, daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        q = self._q
        while True:
            try:
                item = q.get(timeout=_POLL)
                break
            except queue.Empty:
                if not self._thread.is_alive() and q.empty():
                    self._done = True
                    raise StopIteration from None
        if item is _END:
            self._done = True
            raise StopIteration
        if type(item) is _Raised:
            self._done = True
            self.close()
            raise item.exc
        return item

    def close(self, timeout=1.0):
        """Stop the producer and wait (at most ``timeout`` seconds) for its thread to end."""
        self._done = True
        stop = getattr(self, "_stop", None)
        if stop is None:
            return
        stop.set()
        try:  # free a producer blocked on a full queue at once
            while True:
                self._q.get_nowait()
        except queue.Empty:
            pass
        t = self._thread
        if t is not threading.current_thread() and t.is_alive():
            t.join(timeout)

    def __del__(self):
        try:
            self.close(timeout=0.2)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class _Slot:
    __slots__ = ("done", "values", "exc")

    def __init__(self):
        self.done = threading.Event()
        self.values = None
        self.exc = None


def _work(fn, tasks, stop):
    while True:
        task = tasks.get()
        if task is None or stop.is_set():
            return
        slot, elements = task
        values = []
        try:
            # profiling: one span per chunk of elements mapped on this pipeline thread
            with _tracing.span("map", "input", elements=len(elements)):
                for e in elements:
                    values.append(fn(e))
        except BaseException as e:  # noqa: BLE001 - re-raised in order by the consumer
            slot.exc = e
        slot.values = values
        slot.done.set()
        del task, slot, elements, values


class ParallelMapIterator:
    """``fn`` applied to the elements of ``upstream`` by ``num_workers`` daemon threads; results
    come back in input order. The upstream is read on the consumer's thread and handed to the
    workers ``chunk`` elements at a time (a thread hand-off costs tens of microseconds)."""

    def __init__(self, upstream, fn, num_workers, chunk=16, name="tt.data.map"):
        self._up = upstream
        self._k = int(num_workers)
        self._chunk = int(chunk)
        self._tasks = queue.Queue()
        self._stop = threading.Event()
        self._pending = collections.deque()
        self._ready = collections.deque()
        self._exc = None
        self._exhausted = False
        self._done = False
        self._threads = [threading.Thread(target=_work, args=(fn, self._tasks, self._stop),
                                          name=f"{name}-{i}", daemon=True)
                         for i in range(self._k)]
        for t in self._threads:
            t.start()

    def __iter__(self):
        return self

    def __next__(self):
        ready = self._ready
        if ready:
            return ready.popleft()
        if self._exc is not None:
            exc, self._exc = self._exc, None
            self.close()
            raise exc
        if self._done:
            raise StopIteration
        pending = self._pending
        chunk = self._chunk
        while not self._exhausted and len(pending) < 2 * self._k:
            elements = []
            failed = None
            try:
                for e in itertools.islice(self._up, chunk):
                    elements.append(e)
            except BaseException as e:  # noqa: BLE001 - raised after the elements before it
                failed = e
            if failed is not None or len(elements) < chunk:
                self._exhausted = True
            if elements:
                slot = _Slot()
                pending.append(slot)
                self._tasks.put((slot, elements))
            if failed is not None:
                slot = _Slot()
                slot.values = []
                slot.exc = failed
                slot.done.set()
                pending.append(slot)
        if not pending:
            self.close()
            raise StopIteration
        slot = pending.popleft()
        slot.done.wait()
        ready.extend(slot.values)
        self._exc = slot.exc
        return self.__next__()

    def close(self, timeout=1.0):
        self._done = True
        stop = getattr(self, "_stop", None)
        if stop is None or stop.is_set():
            return
        stop.set()
        self._pending.clear()
        for _ in self._threads:
            self._tasks.put(None)
        me = threading.current_thread()
        for t in self._threads:
            if t is not me and t.is_alive():
                t.join(timeout)
        close = getattr(self._up, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # pragma: no cover
                pass

    def __del__(self):
        try:
            self.close(timeout=0.2)
        except Exception:  # pragma: no cover
            pass
