"""What distribution-aware code reads of a strategy through public names: the job
(``StrategyExtended.communicator``, ``num_workers``, ``worker_index``, ``local_devices``, ...),
the gradient aggregator it installs in an optimizer, and riders carried with the gradients.
Several workers are threads of one process (``thread_workers.run_workers``)."""
import threading

import numpy as np

import tnp
import tnp_train as tt
from tnp_train.distribute import collective as coll
from tnp_train.distribute.gradient_reduction import AllReduceGradients, PerReplicaGradients
from tnp_train.optimizers import GradientAggregator

from thread_workers import run_workers

D = tt.distribute


def test_one_process_strategies_describe_their_job():
    one = D.OneDeviceStrategy("cpu").extended
    assert (one.num_workers, one.worker_index, one.num_replicas_in_sync) == (1, 0, 1)
    assert one.communicator is None and one.worker_communicator is None
    assert one.local_devices == (tnp.device("cpu"),) and list(one.local_replica_ids) == [0]
    two = D.MirroredStrategy(["cpu:0", "cpu:1"]).extended
    assert (two.num_workers, two.num_replicas_in_sync) == (1, 2)
    assert two.local_devices == (tnp.device("cpu:0"), tnp.device("cpu:1"))
    assert list(two.local_replica_ids) == [0, 1]


def test_workers_describe_their_job_and_their_communicators():
    def fn(s, rank):
        ext = s.extended
        return (ext.num_workers, ext.worker_index, ext.num_replicas_in_sync,
                list(ext.local_replica_ids), ext.communicator is ext.worker_communicator,
                ext.communicator.rank, ext.communicator.size)
    assert run_workers(2, fn) == [(2, 0, 2, [0], True, 0, 2), (2, 1, 2, [1], True, 1, 2)]


def test_compile_installs_the_strategys_aggregator_but_keeps_a_users_own():
    class Mine(GradientAggregator):
        def reduce(self, pairs):
            return list(pairs)

    def fn(s, rank):
        with s.scope():
            model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2)])
            model.compile(tt.optimizers.SGD(0.1), loss="mse")
            installed = model.optimizer.gradient_aggregator
            again = s.extended.gradient_aggregator(model.optimizer)
            model.compile(tt.optimizers.SGD(0.1, gradient_aggregator=Mine()), loss="mse")
            kept = model.optimizer.gradient_aggregator
        return type(installed), installed is again, type(kept) is Mine
    assert run_workers(2, fn) == [(AllReduceGradients, True, True)] * 2


def test_mirrored_replicas_each_get_their_own_aggregator():
    s = D.MirroredStrategy(["cpu:0", "cpu:1"])
    with s.scope():
        opt = tt.optimizers.SGD(0.1)
    s.extended.install_gradient_aggregator(opt)
    assert isinstance(opt.gradient_aggregator, PerReplicaGradients)
    assert opt.gradient_aggregator is s.extended.gradient_aggregator(opt)


def test_riders_are_summed_with_each_steps_gradients():
    # two workers on threads, each with its own AllReduceGradients over a thread group; a rider
    # sums each worker's count with every step's gradients, and sees the sum after the step
    group = coll.ThreadGroup(2, timeout_seconds=20)
    got, errors = [[], []], []

    def body(rank):
        try:
            comm = group.member(rank)
            agg = AllReduceGradients(comm, 2)
            counts = np.zeros(1, np.float64)
            assert agg.add_rider(lambda: [counts], got[rank].append, name="count")
            v = tt.Variable(np.ones(3, "float32"), name="w")
            opt = tt.optimizers.SGD(0.1, gradient_aggregator=agg)
            for step in range(3):
                counts[0] = (rank + 1) * (step + 1)
                opt.minimize(lambda: tnp.sum(v * v), [v])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            group.member(rank).abort()

    threads = [threading.Thread(target=body, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    # the first step reduces at once and lays the buckets out; the riders ride from the second
    for rank in range(2):
        assert [float(s[0][0]) for s in got[rank]] == [6.0, 9.0]


def test_the_reducers_old_import_path_still_works():
    from tnp_train.distribute import cross_device_ops
    assert cross_device_ops.AllReduceGradients is AllReduceGradients
    assert cross_device_ops.PerReplicaGradients is PerReplicaGradients
