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


def on_two_threads(group, body, *args, timeout=30):
    """``body(rank, *args)`` for ranks 0 and 1 of ``group``, each on a thread; a failure aborts
    that rank's member (the other one's collectives then fail instead of waiting) and is raised
    here, as is a thread still running after ``timeout`` seconds."""
    errors = []

    def run(rank):
        try:
            body(rank, *args)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            group.member(rank).abort()

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a worker thread did not end"


def test_riders_are_summed_with_each_steps_gradients():
    # two workers on threads, each with its own AllReduceGradients over a thread group; a rider
    # sums each worker's count with every step's gradients, and sees the sum after the step
    group = coll.ThreadGroup(2, timeout_seconds=20)
    got = [[], []]

    def body(rank):
        comm = group.member(rank)
        agg = AllReduceGradients(comm, 2)
        counts = np.zeros(1, np.float64)
        assert agg.add_rider(lambda: [counts], got[rank].append, name="count")
        v = tt.Variable(np.ones(3, "float32"), name="w")
        opt = tt.optimizers.SGD(0.1, gradient_aggregator=agg)
        for step in range(3):
            counts[0] = (rank + 1) * (step + 1)
            opt.minimize(lambda: tnp.sum(v * v), [v])

    on_two_threads(group, body)
    # the first step reduces at once and lays the buckets out; the riders ride from the second
    for rank in range(2):
        assert [float(s[0][0]) for s in got[rank]] == [6.0, 9.0]


def test_riders_of_the_gradients_dtype_travel_in_the_last_bucket():
    # a float32 rider (a metric's total and count) is summed in the round of the last gradient
    # bucket: a step after the first makes one collective per bucket and none of its own; a
    # float64 rider beside it still gets the sums, in a round of its own
    group = coll.ThreadGroup(2, timeout_seconds=20)
    got = [{"f32": [], "f64": []}, {"f32": [], "f64": []}]
    rounds = [[], []]

    def body(rank):
        comm = group.member(rank)
        agg = AllReduceGradients(comm, 2, bucket_bytes=64)
        state = np.zeros(2, np.float32)
        wide = np.zeros(1, np.float64)
        assert agg.add_rider(lambda: [state], got[rank]["f32"].append, name="f32")
        v = tt.Variable(np.ones(3, "float32"), name="w")
        u = tt.Variable(np.ones((4, 5), "float32"), name="u")   # a second bucket
        opt = tt.optimizers.SGD(0.1, gradient_aggregator=agg)
        for step in range(4):
            if step == 2:
                assert agg.add_rider(lambda: [wide], got[rank]["f64"].append, name="f64")
            state[:] = [(rank + 1) * (step + 1), 1]
            wide[0] = 0.5 * (rank + 1)
            seen = []
            with coll.events.subscribe(seen.append):
                opt.minimize(lambda: tnp.sum(v * v) + tnp.sum(u * u), [v, u])
            rounds[rank].append([e["bytes"] for e in seen if e["rank"] == rank])

    on_two_threads(group, body)
    for rank in range(2):
        # the first step reduces at once (one round) and lays the buckets out; then two
        # buckets, the float32 rider at the end of the second; the float64 one adds a round
        # this rank's rounds
        # (bytes: u's 20 floats and its presence flag; v's 3, its flag and the rider's 2)
        assert rounds[rank] == [[92], [84, 24], [84, 24, 8], [84, 24, 8]]
        assert [s[0].tolist() for s in got[rank]["f32"]] == [[6.0, 2.0], [9.0, 2.0],
                                                              [12.0, 2.0]]
        assert all(s[0].dtype == np.float32 for s in got[rank]["f32"])
        assert [s[0].tolist() for s in got[rank]["f64"]] == [[1.5], [1.5]]


class _Ordinary(AllReduceGradients):
    """The all-reduce with the optimizer's own update after every bucket (no update here)."""

    def sharded_update(self, pairs, optimizer):
        return None


def test_the_update_is_applied_bucket_by_bucket_with_the_ordinary_steps_bits():
    # two workers on threads: each bucket's variables are updated as soon as its sums are in
    # (the last layer's first: the buckets' order), to the same bits as the ordinary step
    group = coll.ThreadGroup(2, timeout_seconds=30)
    results = {}
    rng = np.random.default_rng(8)
    xs = [rng.normal(size=(6, 5)).astype("float32") for _ in range(2)]

    def body(rank, kind, make_opt):
        comm = group.member(rank)
        agg = (AllReduceGradients if kind == "buckets" else _Ordinary)(comm, 2,
                                                                      bucket_bytes=64)
        layers = [tt.layers.Dense(4, activation="tanh", name="a"),
                  tt.layers.Dense(3, name="b")]
        x = tnp.asarray(xs[rank])
        layers[1](layers[0](x))
        variables = layers[0].trainable_weights + layers[1].trainable_weights
        init = np.random.default_rng(4)     # the same start on both workers
        for v in variables:
            v.assign(init.normal(size=tuple(v.shape)).astype("float32"))
        opt = make_opt(agg)
        order = []
        plain = opt.update_step

        def update_step(g, v, lr):
            order.append(v.name)
            return plain(g, v, lr)
        opt.update_step = update_step
        for _ in range(3):
            del order[:]
            opt.minimize(lambda: tnp.sum(layers[1](layers[0](x)) ** 2), variables)
        results[kind, rank] = ([v.numpy().copy() for v in variables], list(order))

    for name, make_opt in (("sgd", lambda a: tt.optimizers.SGD(0.1, momentum=0.9,
                                                                gradient_aggregator=a)),
                           ("adam", lambda a: tt.optimizers.Adam(0.01, gradient_aggregator=a))):
        for kind in ("buckets", "ordinary"):
            on_two_threads(group, body, kind, make_opt, timeout=40)
        for rank in range(2):
            got, order = results["buckets", rank]
            want, ordinary_order = results["ordinary", rank]
            assert ordinary_order == ["a/kernel", "a/bias", "b/kernel", "b/bias"]   # pairs
            assert order == ["b/bias", "b/kernel", "a/bias", "a/kernel"], name       # buckets
            for g, w in zip(got, want):
                assert np.array_equal(g, w), name
            assert all(np.array_equal(g, w) for g, w in zip(got, results["buckets", 0][0]))


def test_the_reducers_old_import_path_still_works():
    from tnp_train.distribute import cross_device_ops
    assert cross_device_ops.AllReduceGradients is AllReduceGradients
    assert cross_device_ops.PerReplicaGradients is PerReplicaGradients
