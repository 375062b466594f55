"""The tf.distribute names of TF 2.4 that code reaches through types rather than calls
(``Strategy``, ``StrategyExtended``, ``ReplicaContext``, ``DistributedDataset``,
``DistributedIterator``, ``CrossDeviceOps``, ``ClusterResolver``, ``Partitioner``) and the
one-process strategies of ``tf.distribute.experimental``: what TF 2.4 documents them to be and
give, in one process (the multi-rank behaviour is tests/distributed/)."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

ds_ = tt.distribute


def test_strategies_are_strategies_with_an_extended_object():
    with pytest.warns(DeprecationWarning, match="deprecated"):
        old_mwms = ds_.experimental.MultiWorkerMirroredStrategy()
    for strategy in (ds_.MirroredStrategy(), ds_.OneDeviceStrategy("cpu"),
                     ds_.experimental.CentralStorageStrategy(), old_mwms, ds_.get_strategy()):
        assert isinstance(strategy, ds_.Strategy), strategy
        assert isinstance(strategy.extended, ds_.StrategyExtended), strategy
        assert strategy.num_replicas_in_sync == 1


def test_replica_context_inside_run():
    strategy = ds_.MirroredStrategy()
    seen = []

    def fn(x):
        ctx = ds_.get_replica_context()
        seen.append((type(ctx), ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync))
        return ctx.all_reduce("sum", x)

    out = strategy.run(fn, args=(tnp.asarray([1.0, 2.0]),))
    assert seen == [(ds_.ReplicaContext, 0, 1)]
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0])
    with strategy.scope():
        assert ds_.get_replica_context() is None        # cross-replica context


def test_distributed_dataset_and_iterator():
    strategy = ds_.MirroredStrategy()
    data = tt.data.Dataset.from_tensor_slices(np.arange(8.0)).batch(4)
    dist = strategy.experimental_distribute_dataset(data)
    assert isinstance(dist, ds_.DistributedDataset)
    it = iter(dist)
    assert isinstance(it, ds_.DistributedIterator)
    np.testing.assert_array_equal(np.asarray(next(it)), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(it.get_next()), [4.0, 5.0, 6.0, 7.0])


def test_cross_device_ops_are_cross_device_ops():
    for cls in (ds_.ReductionToOneDevice, ds_.HierarchicalCopyAllReduce, ds_.NcclAllReduce):
        assert issubclass(cls, ds_.CrossDeviceOps), cls
    ops = ds_.ReductionToOneDevice()
    np.testing.assert_array_equal(
        np.asarray(ops.reduce("sum", tnp.asarray([1.0, 3.0]), destinations=None)), [1.0, 3.0])


def test_central_storage_strategy_one_device_runs_and_reduces():
    strategy = ds_.experimental.CentralStorageStrategy()
    with strategy.scope():
        v = tt.Variable([1.0, 2.0])
    out = strategy.run(lambda x: x * v, args=(tnp.asarray([3.0, 4.0]),))
    np.testing.assert_array_equal(np.asarray(strategy.reduce("sum", out, axis=None)),
                                  [3.0, 8.0])


def test_value_context_defaults_and_values_from_function():
    ctx = ds_.experimental.ValueContext()
    assert (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync) == (0, 1)
    ctx = ds_.experimental.ValueContext(1, 2)
    assert (ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync) == (1, 2)
    got = ds_.MirroredStrategy().experimental_distribute_values_from_function(
        lambda c: c.replica_id_in_sync_group + 10 * c.num_replicas_in_sync)
    assert got == 10


def test_partitioners_share_the_base_class():
    P = ds_.experimental.partitioners
    for cls in (P.FixedShardsPartitioner, P.MaxSizePartitioner, P.MinSizePartitioner):
        assert issubclass(cls, P.Partitioner), cls
    assert list(P.FixedShardsPartitioner(2)((10, 3), "float32")) == [2, 1]
    with pytest.raises(NotImplementedError):
        P.Partitioner()((10, 3), "float32")         # the base class's __call__, as in TF


def test_cluster_resolvers_are_cluster_resolvers():
    cr = ds_.cluster_resolver
    spec = cr.ClusterSpec({"worker": ["a:1", "b:2"]})
    simple = cr.SimpleClusterResolver(spec, task_type="worker", task_id=1)
    assert isinstance(simple, cr.ClusterResolver)
    assert simple.cluster_spec().as_dict() == {"worker": ["a:1", "b:2"]}
    with pytest.raises(TypeError):
        cr.ClusterResolver()                        # abstract, as in TF


def test_server_checks_its_cluster_and_protocol():
    # a real Server runs under mpiexec (tests/distributed/test_ps.py); here, what it refuses
    with pytest.raises(ValueError) as err:
        ds_.Server({"worker": ["a:1"]}, job_name="worker", task_index=0)
    assert "'chief', 'ps' and 'worker'" in str(err.value)
    with pytest.raises(ValueError) as err:
        ds_.Server({"worker": ["a:1"]}, job_name="worker", task_index=0, protocol="http")
    assert "protocol must be None, 'mpi' or 'grpc'" in str(err.value)
