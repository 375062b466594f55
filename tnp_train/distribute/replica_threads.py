"""The threads of a process's local replicas (``MirroredStrategy`` over several devices, or
``MultiWorkerMirroredStrategy`` with several GPUs per worker): one long-lived thread per
replica, and the meeting point of their ``merge_call``s."""
from __future__ import annotations

import threading

from .collective.base import CollectiveError

__all__ = ["ReplicaThreads", "MergeRendezvous"]


class ReplicaThreads:
    """One long-lived daemon thread per local replica (TF's ``_MirroredReplicaThread``s):
    ``run(job)`` calls ``job(i)`` on thread ``i`` and waits for all of them."""

    def __init__(self, n):
        import queue
        self._queues = [queue.SimpleQueue() for _ in range(n)]
        self._threads = []
        for i, q in enumerate(self._queues):
            t = threading.Thread(target=self._loop, args=(q,), name=f"replica {i}",
                                 daemon=True)
            t.start()
            self._threads.append(t)

    @staticmethod
    def _loop(q):
        while True:
            task = q.get()
            if task is None:
                return
            task()

    def run(self, job, on_error):
        """``(results, errors)``: each replica's result in order, and ``(when, replica,
        exception)`` for each that raised (``on_error(exc)`` is called at once, so the others
        stop waiting for it)."""
        import time
        n = len(self._queues)
        results = [None] * n
        errors = []
        done = threading.Semaphore(0)
        lock = threading.Lock()

        def task_for(i):
            def task():
                try:
                    results[i] = job(i)
                except BaseException as e:       # re-raised in the calling thread
                    with lock:
                        errors.append((time.monotonic(), i, e))
                    try:
                        on_error(e)
                    except BaseException:
                        pass
                finally:
                    done.release()
            return task

        for i, q in enumerate(self._queues):
            q.put(task_for(i))
        for _ in range(n):
            done.acquire()
        return results, errors


class MergeRendezvous:
    """The meeting point of ``merge_call`` across the local replica threads."""

    def __init__(self, n, timeout):
        self._n = n
        self._timeout = timeout
        self._cond = threading.Condition()
        self._entries = [None] * n
        self._count = 0
        self._generation = 0
        self._outcome = None
        self._broken = None

    def break_(self, error):
        with self._cond:
            if self._broken is None:
                self._broken = error
            self._cond.notify_all()

    def merge(self, index, entry, run):
        import time
        with self._cond:
            if self._broken is not None:
                raise CollectiveError(f"merge_call: replica {index} cannot merge: another "
                                       f"replica failed: {self._broken!r}")
            gen = self._generation
            if self._entries[index] is not None:
                raise RuntimeError(f"merge_call: replica {index} called merge_call twice "
                                   f"before the others arrived")
            self._entries[index] = entry
            self._count += 1
            last = self._count == self._n
            if last:
                entries = self._entries
                self._entries = [None] * self._n
                self._count = 0
        if last:
            try:
                outcome = (run(entries), None)
            except BaseException as e:
                outcome = (None, e)
            with self._cond:
                self._outcome = outcome
                self._generation += 1
                self._cond.notify_all()
        else:
            deadline = time.monotonic() + self._timeout
            with self._cond:
                while self._generation == gen and self._broken is None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        missing = [i for i, e in enumerate(self._entries) if e is None]
                        err = CollectiveError(
                            f"merge_call: replica {index} waited {self._timeout:g} s for "
                            f"replica(s) {missing} to call merge_call (every replica must "
                            f"call it the same number of times)")
                        self._broken = err
                        self._cond.notify_all()
                        raise err
                    self._cond.wait(left)
                if self._generation == gen:
                    raise CollectiveError(f"merge_call: replica {index} cannot merge: another "
                                           f"replica failed: {self._broken!r}")
                outcome = self._outcome
        result, error = outcome
        if error is not None:
            raise error
        return result
