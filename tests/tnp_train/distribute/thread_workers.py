"""Workers of a multi-worker strategy as threads of one process (the tests' stand-in for
``mpiexec``): each thread is one rank of a ``ThreadGroup``."""
import threading

from tnp_train.distribute import collective_all_reduce_strategy as cars
from tnp_train.distribute.collective import ThreadGroup


def run_workers(n, fn, timeout=20, options=None):
    """``fn(strategy, rank)`` on ``n`` threads, each a worker of an ``n``-rank
    MultiWorkerMirroredStrategy over a thread group; the results in rank order."""
    group = ThreadGroup(n, timeout_seconds=timeout)
    out, errors = [None] * n, []

    def work(rank):
        try:
            out[rank] = fn(cars.MultiWorkerMirroredStrategy._from_communicator(
                group.member(rank), options), rank)
        except BaseException as e:  # noqa: BLE001 - reported below, the others must not wait
            errors.append((rank, e))
            group.member(rank).abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    if errors:
        raise errors[0][1]
    return out
