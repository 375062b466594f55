"""Strategies in one process: the tf.distribute namespace, the default strategy and its
contexts, OneDeviceStrategy, MirroredStrategy (one device), MultiWorkerMirroredStrategy with
one worker (exactly as no strategy), and the cross-replica arithmetic of several workers run as
threads of one process (``collective.ThreadGroup``: each thread is a rank with its own
strategy, tape and variables). Expected behaviour is TF 2.4's (its API and docstrings, cited
per test) and NumPy arithmetic on every rank's values; the mpiexec jobs are in
tests/distributed/test_multiworker*.py.
"""
import contextlib

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute import distribute_lib, input_lib
from tnp_train.distribute.experimental import partitioners

from thread_workers import run_workers

D = tt.distribute


def mlp():
    return tt.Sequential([tt.Input((5,)), tt.layers.Dense(8, activation="relu"),
                          tt.layers.Dense(3)])


def compiled(make=mlp, metrics=("accuracy",)):
    model = make()
    model.compile(tt.optimizers.SGD(0.1, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=list(metrics))
    return model


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 5)).astype("float32"), rng.integers(0, 3, n)


def weights(model):
    return [w.numpy() for w in model.weights]


# ============================================================================ the namespace
# TF 2.4.4's tf.distribute, tf.distribute.experimental and tf.distribute.cluster_resolver,
# without the TPU strategies and the cloud resolvers (GCE, Kubernetes, Slurm, TPU)
TF_DISTRIBUTE = ["cluster_resolver", "experimental", "CrossDeviceOps", "DistributedDataset",
                 "DistributedIterator", "DistributedValues", "HierarchicalCopyAllReduce",
                 "InputContext", "InputOptions", "InputReplicationMode", "MirroredStrategy",
                 "MultiWorkerMirroredStrategy", "NcclAllReduce", "OneDeviceStrategy",
                 "ReduceOp", "ReductionToOneDevice", "ReplicaContext", "RunOptions", "Server",
                 "Strategy", "StrategyExtended", "experimental_set_strategy",
                 "get_replica_context", "get_strategy", "has_strategy",
                 "in_cross_replica_context"]
TF_EXPERIMENTAL = ["coordinator", "partitioners", "CentralStorageStrategy",
                   "CollectiveCommunication", "CollectiveHints", "CommunicationImplementation",
                   "CommunicationOptions", "MultiWorkerMirroredStrategy",
                   "ParameterServerStrategy", "ValueContext"]
TF_RESOLVERS = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
                "UnionResolver"]


def test_namespace_has_every_tf_2_4_name():
    for name in TF_DISTRIBUTE:
        assert getattr(D, name) is not None, name
    assert set(TF_DISTRIBUTE) <= set(D.__all__) and set(TF_DISTRIBUTE) <= set(dir(D))
    for name in TF_EXPERIMENTAL:
        assert getattr(D.experimental, name) is not None, name
    for name in ["ClusterCoordinator", "PerWorkerValues", "RemoteValue"]:
        assert getattr(D.experimental.coordinator, name) is not None
    for name in ["FixedShardsPartitioner", "MaxSizePartitioner", "MinSizePartitioner",
                 "Partitioner"]:
        assert getattr(D.experimental.partitioners, name) is not None
    for name in TF_RESOLVERS:
        assert getattr(D.cluster_resolver, name) is not None
    assert not hasattr(D, "TPUStrategy") and not hasattr(D.experimental, "TPUStrategy")
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        D.Nope  # noqa: B018
    assert tt.distribute is D or tt.distribute.get_strategy is D.get_strategy


def test_parameter_server_names_check_their_arguments():
    # the parameter-server names work under mpiexec (tests/tnp_train/distribute/test_ps_*.py,
    # tests/distributed/test_ps.py); given no cluster they say what they need
    with pytest.raises(TypeError, match="cluster resolver"):
        D.experimental.ParameterServerStrategy(None)
    with pytest.raises(ValueError, match="'chief', 'ps' and 'worker'"):
        D.Server({"worker": ["a:1"]}, job_name="worker", task_index=0)
    with pytest.raises(ValueError, match="only a ParameterServerStrategy"):
        D.experimental.coordinator.ClusterCoordinator(None)


def test_partitioners_give_tfs_shard_counts():
    # the examples of TF 2.4's docstrings
    assert partitioners.FixedShardsPartitioner(num_shards=2)((10, 3), "float32") == [2, 1]
    assert partitioners.MinSizePartitioner(min_shard_bytes=4, max_shards=2)(
        (6, 1), "float32") == [2, 1]
    assert partitioners.MaxSizePartitioner(max_shard_bytes=4)((6, 1), "float32") == [6, 1]
    # capped by the axis length and max_shards; another axis
    assert partitioners.FixedShardsPartitioner(8)((3, 4), "float32") == [3, 1]
    assert partitioners.MaxSizePartitioner(max_shard_bytes=16, max_shards=2)(
        (6, 1), "float32") == [2, 1]
    assert partitioners.FixedShardsPartitioner(2)((3, 4), "float32", axis=1) == [1, 2]
    with pytest.raises(ValueError, match="num_shards"):
        partitioners.FixedShardsPartitioner(0)


# ============================================================================ default strategy
def test_default_strategy_and_its_contexts():
    s = D.get_strategy()
    assert not D.has_strategy() and not D.in_cross_replica_context()
    ctx = D.get_replica_context()
    assert ctx is not None and ctx.replica_id_in_sync_group == 0
    assert ctx.num_replicas_in_sync == 1 and ctx.strategy is s
    assert s.num_replicas_in_sync == 1 and s.cluster_resolver is None
    # TF: the default strategy's scope is a cross-replica context, still no strategy
    with s.scope():
        assert D.in_cross_replica_context() and D.get_replica_context() is None
        assert not D.has_strategy() and D.get_strategy() is s
    assert D.get_replica_context() is ctx


def test_default_strategy_runs_reduces_and_passes_data_through():
    s = D.get_strategy()
    assert s.run(lambda a, b=0: a + b, args=(1,), kwargs={"b": 2}) == 3
    v = tnp.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(s.reduce("SUM", v, axis=None), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(s.reduce(D.ReduceOp.MEAN, v, axis=0), [1.5, 2.5, 3.5])
    np.testing.assert_array_equal(s.reduce("sum", v, axis=1), [3.0, 12.0])
    np.testing.assert_array_equal(s.gather(v, axis=0), np.arange(6.0).reshape(2, 3))
    assert s.experimental_local_results(v)[0] is v
    ds = tt.data.Dataset.range(4)
    assert s.experimental_distribute_dataset(ds) is ds          # TF: unchanged
    with pytest.raises(ValueError, match="invalid reduce_op 'MAX'"):
        s.reduce("MAX", v, axis=None)
    with pytest.raises(ValueError, match="out of bounds"):
        s.reduce("SUM", v, axis=2)


def test_merge_call_runs_in_cross_replica_context():
    seen = []

    def merge_fn(strategy, x):
        seen.append((strategy, D.in_cross_replica_context(), x))
        return x * 2

    assert D.get_replica_context().merge_call(merge_fn, args=(21,)) == 42
    assert seen == [(D.get_strategy(), True, 21)]
    assert not D.in_cross_replica_context()


# ============================================================================ a strategy's contexts
def test_scope_run_and_the_context_functions():
    s = D.MultiWorkerMirroredStrategy()
    assert s.num_replicas_in_sync == 1 and s.cluster_resolver.task_type == "worker"
    with s.scope():
        assert D.has_strategy() and D.get_strategy() is s
        assert D.in_cross_replica_context() and D.get_replica_context() is None
        assert distribute_lib.get_cross_replica_context() is s

        def fn():
            ctx = D.get_replica_context()
            return (D.get_strategy() is s, D.in_cross_replica_context(),
                    ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync)

        assert s.run(fn) == (True, False, 0, 1)
    # run outside the scope enters it (TF)
    assert s.run(lambda: D.get_strategy()) is s
    assert not D.has_strategy()


def test_mixing_strategies_and_cross_replica_methods_in_a_replica_are_refused():
    a, b = D.MultiWorkerMirroredStrategy(), D.OneDeviceStrategy("cpu")
    with a.scope():
        with pytest.raises(ValueError, match="Mixing different tt.distribute.Strategy"):
            with b.scope():
                pass
        with a.scope():                 # the same strategy again is fine
            assert D.get_strategy() is a

    def inner():
        with pytest.raises(RuntimeError, match="cross-replica context"):
            a.reduce("SUM", 1.0, axis=None)
        with pytest.raises(RuntimeError, match="inside a replica function"):
            a.run(lambda: None)
        return D.get_replica_context().merge_call(lambda s: D.in_cross_replica_context())

    assert a.run(inner) is True


def test_experimental_set_strategy():
    s = D.MultiWorkerMirroredStrategy()
    D.experimental_set_strategy(s)
    try:
        assert D.get_strategy() is s and D.in_cross_replica_context()
        v = tt.Variable(1.0)
        assert s.extended.variable_created_in_scope(v)
    finally:
        D.experimental_set_strategy(None)
    assert not D.has_strategy()
    with s.scope():
        with pytest.raises(RuntimeError, match="inside a tt.distribute.Strategy scope"):
            D.experimental_set_strategy(s)


def test_compile_refuses_a_model_made_outside_the_scope():
    s = D.MultiWorkerMirroredStrategy()
    model = mlp()
    with s.scope():
        with pytest.raises(ValueError, match="was not created in the distribution strategy "
                                             "scope"):
            model.compile("sgd", loss="mse")


def test_fit_in_a_scope_the_model_was_not_made_in_is_refused():
    model = compiled()
    x, y = data(8)
    with D.MultiWorkerMirroredStrategy().scope():
        with pytest.raises(ValueError, match="was not created in the distribution strategy"):
            model.fit(x, y, verbose=0)
    a, b = D.MultiWorkerMirroredStrategy(), D.MultiWorkerMirroredStrategy()
    with a.scope():
        owned = compiled()
    with b.scope():
        with pytest.raises(ValueError, match="a model belongs to one strategy"):
            owned.evaluate(x, y, verbose=0)


def test_a_model_made_in_a_scope_keeps_its_strategy():
    s = D.MultiWorkerMirroredStrategy()
    with s.scope():
        model = mlp()
    model.compile("sgd", loss="mse")        # outside: the weights tell which strategy
    assert model.distribute_strategy is s
    plain = mlp()
    plain.compile("sgd", loss="mse")
    assert plain.distribute_strategy is D.get_strategy()
    import copy
    assert copy.deepcopy(s) is s           # shared, never copied (it holds the job's world)


# ============================================================================ one worker == none
def _fit_run(strategy, loop=False):
    tt.utils.set_random_seed(3)
    x, y = data()
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = compiled()
    if loop:
        s = strategy or D.get_strategy()
        loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
        ds = tt.data.Dataset.from_tensor_slices((x, y)).shuffle(40).batch(8)

        def step(batch):
            with tt.GradientTape() as tape:
                per = loss_obj(batch[1], model(batch[0], training=True))
                loss = tt.nn.compute_average_loss(per, global_batch_size=8)
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        losses = [float(s.reduce("SUM", s.run(step, args=(b,)), axis=None))
                  for _ in range(2) for b in s.experimental_distribute_dataset(ds)]
        return losses, weights(model)
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0, validation_split=0.25)
    return (hist.history, weights(model), model.evaluate(x, y, verbose=0),
            np.asarray(model.predict(x, batch_size=16)))


@pytest.mark.parametrize("make", [lambda: D.MultiWorkerMirroredStrategy(),
                                  lambda: D.OneDeviceStrategy("/cpu:0"),
                                  lambda: D.MirroredStrategy()],
                         ids=["mwms_one_worker", "one_device", "mirrored_one_device"])
def test_one_replica_trains_exactly_as_no_strategy(make):
    ref = _fit_run(None)
    got = _fit_run(make())
    assert got[0] == ref[0]                       # history, bit for bit
    for a, b in zip(got[1], ref[1]):
        np.testing.assert_array_equal(a, b)
    assert got[2] == ref[2]
    np.testing.assert_array_equal(got[3], ref[3])
    ref_loop, got_loop = _fit_run(None, loop=True), _fit_run(make(), loop=True)
    assert got_loop[0] == ref_loop[0]
    for a, b in zip(got_loop[1], ref_loop[1]):
        np.testing.assert_array_equal(a, b)


def test_one_device_strategy_places_variables_and_batches_on_its_device():
    s = D.OneDeviceStrategy("cpu:1")          # tnp's fake second CPU device
    assert s.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:1",)
    with s.scope():
        model = compiled()
        v = tt.Variable(np.ones(2, "float32"))
    assert v.device == tnp.device("cpu:1")
    assert all(w.device == tnp.device("cpu:1") for w in model.weights)
    ds = tt.data.Dataset.from_tensor_slices(np.arange(6.0)).batch(4)
    batches = list(s.experimental_distribute_dataset(ds))
    assert [b.device for b in batches] == [tnp.device("cpu:1")] * 2
    x, y = data()
    hist = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    assert all(w.device == tnp.device("cpu:1") for w in model.optimizer.variables())
    assert s.run(lambda: tnp.ones(2).device) == tnp.device("cpu:1")
    with pytest.raises(ValueError, match="cannot parse device"):
        D.OneDeviceStrategy("tpu:0")


def test_mirrored_strategy_arguments():
    assert D.MirroredStrategy(["/cpu:0"]).num_replicas_in_sync == 1
    assert D.MirroredStrategy(["cpu:0", "cpu:1"]).num_replicas_in_sync == 2
    with pytest.raises(ValueError, match="no duplicates allowed"):
        D.MirroredStrategy(["cpu:0", "/cpu:0"])
    with pytest.raises(ValueError, match="must be an instance of tt.distribute.CrossDeviceOps"):
        D.MirroredStrategy(cross_device_ops="nccl")
    s = D.MirroredStrategy(cross_device_ops=D.ReductionToOneDevice())
    assert s.num_replicas_in_sync == 1


# ============================================================================ several workers
def test_variables_take_worker_0s_initial_value():
    def fn(s, rank):
        tt.utils.set_random_seed(100 + rank)          # every rank draws other weights
        with s.scope():
            model = mlp()
            v = tt.Variable(np.full(3, float(rank), "float32"))
        return weights(model), v.numpy()

    (w0, v0), (w1, v1) = run_workers(2, fn)
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(v1, [0.0, 0.0, 0.0])


def test_reduce_gather_and_replica_all_reduce_across_workers():
    # rank r holds r + arange(...) with r + 2 rows (uneven, as a last batch)
    def value(rank):
        return (np.arange((rank + 2) * 3, dtype="float64").reshape(rank + 2, 3) + rank)

    def fn(s, rank):
        v = tnp.asarray(value(rank))
        out = {"sum0": s.reduce("SUM", v[:2], axis=None),
               "mean0": s.reduce("MEAN", v[:2], axis=None),
               "sum_axis": s.reduce("SUM", v, axis=0),
               "mean_axis": s.reduce("MEAN", v, axis=0),
               "gather0": s.gather(v, axis=0),
               "gather1": s.gather(v[:2], axis=1),
               "nest": s.reduce("SUM", {"a": v[0], "b": (v[1, :1],)}, axis=None)}

        def replica_fn():
            ctx = D.get_replica_context()
            return ctx.all_reduce("MEAN", v[:2]), ctx.all_gather(v, axis=0), \
                ctx.replica_id_in_sync_group
        out["all_reduce"], out["all_gather"], out["id"] = s.run(replica_fn)
        return out

    res = run_workers(2, fn)
    v0, v1 = value(0), value(1)
    both = np.concatenate([v0, v1])
    for rank, r in enumerate(res):
        assert r["id"] == rank
        np.testing.assert_array_equal(r["sum0"], v0[:2] + v1[:2])
        np.testing.assert_array_equal(r["mean0"], (v0[:2] + v1[:2]) / 2)
        np.testing.assert_array_equal(r["sum_axis"], both.sum(0))
        # TF: MEAN along an axis divides by the global number of rows (5), not by 2 replicas
        np.testing.assert_allclose(r["mean_axis"], both.mean(0), rtol=1e-15)
        np.testing.assert_array_equal(r["gather0"], both)
        np.testing.assert_array_equal(r["gather1"], np.concatenate([v0[:2], v1[:2]], axis=1))
        np.testing.assert_array_equal(r["nest"]["a"], v0[0] + v1[0])
        np.testing.assert_array_equal(r["nest"]["b"][0], v0[1, :1] + v1[1, :1])
        np.testing.assert_array_equal(r["all_reduce"], (v0[:2] + v1[:2]) / 2)
        np.testing.assert_array_equal(r["all_gather"], both)


def test_replica_all_reduce_and_all_gather_are_differentiable():
    # loss_r = sum(c_r * all_reduce_SUM(x)) + sum(d_r * all_gather(x)); the job's loss is the
    # sum over r, so d/dx_r = sum_r' c_r' + d[r's rows] summed over r' (TF's gradient rules)
    c = [np.array([1.0, 2.0]), np.array([3.0, 5.0])]
    d = [np.arange(4.0).reshape(2, 2), np.arange(4.0, 8.0).reshape(2, 2)]

    def fn(s, rank):
        x = tt.Variable(np.full(2, rank + 1.0))

        def step():
            ctx = D.get_replica_context()
            with tt.GradientTape() as tape:
                y = ctx.all_reduce("SUM", x)
                g = ctx.all_gather(tnp.reshape(x, (1, 2)), axis=0)
                loss = tnp.sum(y * c[rank]) + tnp.sum(g * d[rank])
            return tape.gradient(loss, x)
        return s.run(step)

    g0, g1 = run_workers(2, fn)
    dsum = d[0] + d[1]
    np.testing.assert_allclose(g0, c[0] + c[1] + dsum[0])
    np.testing.assert_allclose(g1, c[0] + c[1] + dsum[1])


def test_on_read_variables_are_combined_when_read_in_cross_replica_context():
    def fn(s, rank):
        with s.scope():
            m = tt.metrics.Mean()
        m.update_state(np.full(rank + 1, rank + 1.0, "float32"))  # rank 0: [1]; rank 1: [2, 2]
        total, count = m.variables
        read = [float(s.extended.read_var(total)), float(s.extended.read_var(count))]
        with s.extended._on_read_values(m.variables):
            inside = float(m.result())
        # TF 2.4's result_wrapper: result() is the job's, in cross-replica context and in a
        # replica function alike (every worker calls it)
        return (read, inside, float(m.result()), float(s.run(m.result)),
                total.numpy().item())

    for rank, (read, inside, job, in_replica, state) in enumerate(run_workers(2, fn)):
        assert read == [5.0, 3.0]
        assert inside == pytest.approx(5.0 / 3.0)          # the job's mean
        assert job == pytest.approx(5.0 / 3.0) and in_replica == pytest.approx(5.0 / 3.0)
        assert state == float((rank + 1) ** 2)             # the local state is put back


def test_two_workers_fit_and_loop_as_one_process():
    x, y = data(48)
    init = {}

    def train(s, rank, loop):
        with s.scope() if s is not None else contextlib.nullcontext():
            model = compiled()
        if s is None:
            model.set_weights(init["w"])
        elif rank == 0:
            init["w"] = weights(model)
        if loop:
            s = s or D.get_strategy()
            loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                               reduction="none")
            ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(12)

            def step(batch):
                with tt.GradientTape() as tape:
                    per = loss_obj(batch[1], model(batch[0], training=True))
                    loss = tt.nn.compute_average_loss(per, global_batch_size=12)
                grads = tape.gradient(loss, model.trainable_variables)
                model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss
            logs = [float(s.reduce("SUM", s.run(step, args=(b,)), axis=None))
                    for _ in range(3) for b in s.experimental_distribute_dataset(ds)]
        else:
            logs = model.fit(x, y, batch_size=12, epochs=3, shuffle=False, verbose=0).history
            logs["eval"] = model.evaluate(x, y, batch_size=10, verbose=0)
        return logs, weights(model)

    for loop in (False, True):
        got = run_workers(2, lambda s, r: train(s, r, loop))
        ref = train(None, 0, loop)
        for logs, ws in got:
            for a, b in zip(ws, ref[1]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            if loop:
                np.testing.assert_allclose(logs, ref[0], rtol=1e-5)
            else:
                assert logs.keys() == ref[0].keys()
                for k in logs:
                    np.testing.assert_allclose(logs[k], ref[0][k], rtol=1e-5)


def test_fit_reduces_the_last_layers_gradients_while_the_backward_pass_goes_on():
    # buckets of 64 bytes: [last/bias, last/kernel] (108 B) then [first/bias, first/kernel];
    # from the second step (the first learns the variables) the last layer's bucket starts
    # its all-reduce as soon as its two gradients are final, before the first layer's are
    def fn(s, rank):
        events = []
        comm = s.extended._comm
        start = comm.allreduce_async

        def recorded_start(buf, op="sum"):
            events.append(("start", int(buf.size)))
            return start(buf, op)
        comm.allreduce_async = recorded_start
        with s.scope():
            model = compiled(metrics=())
        agg = model.optimizer.gradient_aggregator
        ready = agg.gradient_ready

        def recorded_ready(v, g):
            events.append(("ready", v.name.split("/")[-1], tuple(v.shape)))
            return ready(v, g)
        agg.gradient_ready = recorded_ready
        x, y = data(16)
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        return events

    opts = D.experimental.CommunicationOptions(bytes_per_pack=64, timeout_seconds=20)
    for events in run_workers(2, fn, options=opts):
        readies = [i for i, e in enumerate(events) if e[0] == "ready"]
        assert len(readies) == 8
        step1, step2 = events[:readies[4]], events[readies[4]:]
        # the first step: every gradient, then one all-reduce of all of them (8*3+3+5*8+8)
        assert [e[0] for e in step1[:5]] == ["ready"] * 4 + ["start"]
        assert step1[4] == ("start", 75)
        # the second step (compiled: fit's default): last/kernel and last/bias (in the order
        # the backward makes them), the first bucket's start (8*3 + 3 values + 2 flags), then
        # first/kernel and first/bias, the second bucket's start (5*8 + 8 + 2, and the loss
        # tracker's total and count riding at the end of the step's last bucket)
        assert sorted(step2[:2]) == [("ready", "bias", (3,)), ("ready", "kernel", (8, 3))]
        assert step2[2] == ("start", 29), step2
        assert sorted(step2[3:5]) == [("ready", "bias", (8,)), ("ready", "kernel", (5, 8))]
        assert step2[5] == ("start", 52), step2
        assert [e for e in step2[6:] if e[0] == "start"] == []    # no round of their own


def test_the_loss_is_scaled_by_one_over_the_replicas_as_tf_does():
    # TF 2.4 LossesContainer under a strategy: a mean-reduced loss and the regularization
    # losses are scaled by 1/replicas for the gradient; the tracker gets the unscaled value; a
    # "sum"-reduced loss is not scaled and the tracker gets it times the replicas
    from tnp_train.trainers.compile_utils import LossesContainer

    def fn(s, rank):
        mean = LossesContainer(tt.losses.MeanSquaredError())
        summed = LossesContainer(tt.losses.MeanSquaredError(reduction="sum"))
        yt, yp = tnp.asarray([[1.0], [3.0]]), tnp.asarray([[0.0], [0.0]])
        out = s.run(lambda: (mean(yt, yp, regularization_losses=[tnp.asarray(2.0)]),
                             summed(yt, yp)))
        return ([float(o) for o in out], float(mean.loss_tracker.total.numpy()),
                float(summed.loss_tracker.total.numpy()))

    for values, mean_total, sum_total in run_workers(2, fn):
        assert values == [(5.0 + 2.0) / 2, 10.0]
        assert mean_total == (5.0 + 2.0) * 2       # weighted by the batch of 2
        assert sum_total == 10.0 * 2 * 2


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_loss_scale_optimizer_skips_on_every_worker_together():
    # rank 0's half of the batch overflows (inf gradients there only): the summed gradients
    # are not finite on both ranks, so both skip the step and halve the scale (TF 2.4)
    def fn(s, rank):
        with s.scope():
            model = mlp()
            model.compile(tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.1)),
                          loss="mse")
        before = weights(model)
        x = np.ones((4, 5), "float32")
        x[:2] *= 1e30                                   # rank 0's rows
        model.fit(x, np.zeros((4, 3), "float32"), batch_size=4, epochs=1, shuffle=False,
                  verbose=0)
        opt = model.optimizer
        return ([np.array_equal(a, b) for a, b in zip(weights(model), before)],
                float(np.asarray(opt.loss_scale)), int(np.asarray(opt.iterations)))

    for unchanged, scale, iterations in run_workers(2, fn):
        assert all(unchanged) and scale == 2.0 ** 14 and iterations == 0


def test_apply_gradients_in_cross_replica_context_is_refused():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.ones(2, "float32"))
            opt = tt.optimizers.SGD(0.1)
            with pytest.raises(RuntimeError, match="cannot be called in cross-replica"):
                opt.apply_gradients([(tnp.ones(2, dtype="float32"), v)])
        return True

    assert run_workers(2, fn) == [True, True]


def test_a_batch_smaller_than_the_workers_gives_an_empty_part():
    def fn(s, rank):
        ds = tt.data.Dataset.from_tensor_slices(np.arange(9)).batch(4)
        parts = [np.asarray(b).tolist() for b in s.experimental_distribute_dataset(ds)]
        x, y = data(9)
        with s.scope():
            model = compiled()
        hist = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
        return parts, hist.history["loss"], weights(model)

    (p0, l0, w0), (p1, l1, w1) = run_workers(2, fn)
    assert p0 == [[0, 1], [4, 5], [8]] and p1 == [[2, 3], [6, 7], []]
    assert l0 == l1 and np.isfinite(l0[0])
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(a, b)


def test_workers_given_other_arrays_fail_naming_the_ranks():
    def fn(s, rank):
        with s.scope():
            model = compiled()
        x, y = data(20 + rank)
        with pytest.raises(ValueError, match=r"same arrays.*\{0: \(20, 8, None\), "
                                             r"1: \(21, 8, None\)\}"):
            model.fit(x, y, batch_size=8, verbose=0)
        return True

    assert run_workers(2, fn) == [True, True]


# ============================================================================ input pieces
def test_part_bounds_follow_array_split():
    for n in range(0, 12):
        for parts in (1, 2, 3, 5):
            sizes = [len(a) for a in np.array_split(np.arange(n), parts)]
            got = [input_lib.part_bounds(n, parts, p) for p in range(parts)]
            assert [hi - lo for lo, hi in got] == sizes
            assert got[0][0] == 0 and got[-1][1] == n


def test_split_batch_refuses_unbatched_or_ragged_elements():
    with pytest.raises(ValueError, match="0-d component"):
        input_lib.split_batch((np.ones(3), np.float32(1.0)), 2, 0)
    with pytest.raises(ValueError, match=r"different batch sizes \[3, 4\]"):
        input_lib.split_batch({"a": np.ones(3), "b": np.ones(4)}, 2, 1)
    x = {"a": np.arange(5), "b": (np.arange(10).reshape(5, 2), None)}
    part = input_lib.split_batch(x, 2, 1)
    np.testing.assert_array_equal(part["a"], [3, 4])
    assert part["b"][1] is None


def test_distributed_iterator_api():
    s = D.MultiWorkerMirroredStrategy()
    dist = s.experimental_distribute_dataset(tt.data.Dataset.range(3).batch(2))
    it = iter(dist)
    np.testing.assert_array_equal(it.get_next(), [0, 1])
    opt = it.get_next_as_optional()
    assert bool(opt.has_value()) and np.asarray(opt.get_value()).tolist() == [2]
    empty = it.get_next_as_optional()
    assert not bool(empty.has_value())
    with pytest.raises(ValueError, match="no value"):
        empty.get_value()
    assert dist.reduce(0, lambda state, b: state + int(np.asarray(b).sum())) == 3
    seen = []
    fn_ds = s.distribute_datasets_from_function(
        lambda ctx: seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id,
                                 ctx.num_replicas_in_sync)) or tt.data.Dataset.range(2))
    assert [int(np.asarray(b)) for b in fn_ds] == [0, 1] and seen == [(1, 0, 1)]
    values = s.experimental_distribute_values_from_function(
        lambda ctx: (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync))
    assert values == (0, 1)


def test_cross_device_ops_in_one_process():
    for ops in (D.ReductionToOneDevice(), D.NcclAllReduce(), D.HierarchicalCopyAllReduce()):
        v = tnp.asarray([1.0, 2.0])
        np.testing.assert_array_equal(ops.reduce("SUM", v, destinations=None), [1.0, 2.0])
        out = ops.batch_reduce(D.ReduceOp.MEAN, [(v, None), (v * 2, None)])
        np.testing.assert_array_equal(out[1], [2.0, 4.0])
        np.testing.assert_array_equal(ops.broadcast(v, "cpu:1"), [1.0, 2.0])
        assert ops.broadcast(v, "cpu:1").device == tnp.device("cpu:1")
    with pytest.raises(ValueError, match="num_packs"):
        D.NcclAllReduce(num_packs=-1)
    with pytest.raises(ValueError, match=r"\(value, destinations\) pairs"):
        D.ReductionToOneDevice().batch_reduce("SUM", [1.0])
    two = run_workers(2, lambda s, r: s.extended.batch_reduce_to(
        "SUM", [(tnp.asarray([r + 1.0]), None)]))
    assert [float(t[0][0]) for t in two] == [3.0, 3.0]


def test_the_chief_saves_the_jobs_batch_norm_statistics(tmp_path):
    """TF checkpoints a SyncOnReadVariable (BatchNormalization's moving statistics, MEAN) by
    its aggregated value: the chief's file holds the workers' mean, not the chief's own."""
    xs = [np.array([[1.0, 2.0], [3.0, 4.0]], "float32"),
          np.array([[5.0, 8.0], [7.0, 10.0]], "float32")]
    path = str(tmp_path / "bn.weights.h5")

    def fn(s, rank):
        with s.scope():
            model = tt.Sequential([tt.Input((2,)), tt.layers.BatchNormalization(momentum=0.0)])
        s.run(lambda: model(tnp.asarray(xs[rank]), training=True))
        local = model.layers[0].moving_mean.numpy()
        model.save_weights(path)                 # every worker calls it; the chief writes
        return local, model.layers[0].moving_mean.numpy()

    (l0, after0), (l1, after1) = run_workers(2, fn)
    np.testing.assert_array_equal(l0, xs[0].mean(0))        # each worker's own statistics
    np.testing.assert_array_equal(after1, xs[1].mean(0))    # ... are kept after the save
    plain = tt.Sequential([tt.Input((2,)), tt.layers.BatchNormalization()])
    plain.load_weights(path)
    np.testing.assert_allclose(plain.layers[0].moving_mean.numpy(),
                               (xs[0].mean(0) + xs[1].mean(0)) / 2)
