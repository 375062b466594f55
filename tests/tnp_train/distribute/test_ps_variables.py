"""Variables of a ParameterServerStrategy (TF 2.4's placement on ``/job:ps`` devices), in a job
run inside this process: where they live, reads and writes from the chief, ShardedVariable,
slots with their variable, and the errors. References: the values written, NumPy, and what
the server itself holds."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute.experimental import partitioners
from tnp_train.distribute.ps.variables import PSVariable, ShardedVariable, split_rows

from ps_local import cluster, coordinator, server_value, strategy  # noqa: F401 (fixtures)


def test_variables_are_placed_round_robin_and_read_back(cluster, strategy):
    with strategy.scope():
        a = tt.Variable(np.arange(6.0).reshape(2, 3), name="a")
        b = tt.Variable(1.5, name="b")
        c = tt.Variable(np.ones(4, "float32"), name="c")
    assert [type(v) for v in (a, b, c)] == [PSVariable] * 3
    assert (a.ps_task, b.ps_task, c.ps_task) == (0, 1, 0)
    assert strategy.extended.variable_created_in_scope(a)
    np.testing.assert_array_equal(server_value(cluster, a), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0).reshape(2, 3))
    assert float(b) == 1.5 and c.dtype == np.float32 and a.name == "a"
    np.testing.assert_allclose(tnp.sum(a * 2), 30.0)
    assert strategy.num_replicas_in_sync == 1
    assert strategy.extended.parameter_devices == ("/job:ps/replica:0/task:0/device:CPU:0",
                                                   "/job:ps/replica:0/task:1/device:CPU:0")


def test_writes_from_the_chief_reach_the_server(cluster, strategy):
    with strategy.scope():
        v = tt.Variable(np.zeros(3, "float32"), name="v")
    v.assign([1.0, 2.0, 3.0])
    v.assign_add(np.ones(3, "float32"))
    v.assign_sub(tnp.asarray(np.full(3, 0.5, "float32")))
    np.testing.assert_array_equal(server_value(cluster, v), [1.5, 2.5, 3.5])
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.5, 3.5])
    # the chief's own buffer holds its writes: code that reads it directly sees them
    np.testing.assert_array_equal(tnp.extend.backend_array(v), [1.5, 2.5, 3.5])
    with pytest.raises(ValueError, match="shape"):
        v.assign(np.zeros(4, "float32"))


def test_in_place_writes_through_tnp_are_refused(strategy):
    with strategy.scope():
        v = tt.Variable(np.zeros(3), name="v")
    with pytest.raises(TypeError, match="assign"):
        v[0] = 1.0
    with pytest.raises(TypeError, match="only this process's copy"):
        tnp.add(v, 1.0, out=v)


def test_constraint_is_applied_on_the_server(cluster, strategy):
    with strategy.scope():
        v = tt.Variable(np.array([1.0, -1.0]), name="nn", constraint=lambda w: tnp.maximum(w, 0))
    v.assign([-3.0, 2.0])
    np.testing.assert_array_equal(server_value(cluster, v), [0.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [0.0, 2.0])


def test_split_rows_puts_the_extra_rows_first():
    assert split_rows(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert split_rows(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_partitioner_makes_sharded_variables(cluster):
    strategy = tt.distribute.experimental.ParameterServerStrategy(
        cluster.resolver, variable_partitioner=partitioners.FixedShardsPartitioner(3))
    value = np.arange(20.0).reshape(10, 2)
    with strategy.scope():
        v = tt.Variable(value, name="emb")
        s = tt.Variable(3.0, name="scalar")              # a scalar is never split
        short = tt.Variable(np.ones((2, 2)), name="short")   # no more shards than rows
    assert isinstance(v, ShardedVariable) and not isinstance(s, ShardedVariable)
    assert [tuple(p.shape) for p in v.variables] == [(4, 2), (3, 2), (3, 2)]
    assert [p.name for p in v.variables] == ["emb/part_0", "emb/part_1", "emb/part_2"]
    assert [p.ps_task for p in v.variables] == [0, 1, 0]
    assert len(short.variables) == 2
    np.testing.assert_array_equal(v.numpy(), value)
    np.testing.assert_array_equal(server_value(cluster, v.variables[1]), value[4:7])
    v.assign_add(np.ones((10, 2)))
    np.testing.assert_array_equal(server_value(cluster, v), value + 1)
    np.testing.assert_array_equal(tnp.asarray(v[5]), value[5] + 1)


def test_partitioner_result_is_checked(cluster):
    strategy = tt.distribute.experimental.ParameterServerStrategy(
        cluster.resolver, variable_partitioner=lambda shape, dtype: [1, 2])
    with pytest.raises(ValueError, match="besides the first element"):
        with strategy.scope():
            tt.Variable(np.ones((4, 4)), name="w")


def test_optimizer_slots_live_with_their_variable(cluster):
    strategy = tt.distribute.experimental.ParameterServerStrategy(
        cluster.resolver, variable_partitioner=partitioners.FixedShardsPartitioner(2))
    with strategy.scope():
        w = tt.Variable(np.ones((5, 3), "float32"), name="w")
        b = tt.Variable(np.ones(3, "float32"), name="b")
        opt = tt.optimizers.Adam(0.1)
        # the chief may apply an update itself (TF allows it outside a closure)
        opt.apply_gradients([(np.full((5, 3), 0.5, "float32"), w),
                             (np.full(3, 0.5, "float32"), b)])
    m_w, m_b = opt.get_slot(w, "m"), opt.get_slot(b, "m")
    assert [p.ps_task for p in m_w.variables] == [p.ps_task for p in w.variables]
    assert [tuple(p.shape) for p in m_w.variables] == [(3, 3), (2, 3)]
    assert m_b.ps_task == b.ps_task
    # Adam's first step moves every weight by lr (sign of the gradient)
    np.testing.assert_allclose(server_value(cluster, w), np.full((5, 3), 0.9), rtol=1e-5)
    np.testing.assert_allclose(server_value(cluster, m_w), np.full((5, 3), 0.05), rtol=1e-6)
    assert int(opt.iterations.numpy()) == 1


def test_colocate_vars_with(strategy):
    with strategy.scope():
        a = tt.Variable(1.0, name="a")
        b = tt.Variable(1.0, name="b")
        with strategy.extended.colocate_vars_with(b):
            c = tt.Variable(2.0, name="c")
    assert (a.ps_task, b.ps_task, c.ps_task) == (0, 1, 1)


def test_a_lost_server_makes_reads_and_writes_raise(cluster, strategy):
    with strategy.scope():
        a = tt.Variable(1.0, name="a")
    cluster.kill_ps(0)
    cluster.runtime.client.new_epoch()          # the cache is stale: the read must go out
    with pytest.raises(tt.distribute.experimental.coordinator.UnavailableError,
                       match=r"ps:0 \(rank 1\)"):
        a.numpy()
    with pytest.raises(tt.distribute.experimental.coordinator.UnavailableError, match="ps:0"):
        with strategy.scope():
            tt.Variable(2.0, name="b")


def test_strategy_needs_a_parameter_server_cluster():
    resolver = tt.distribute.cluster_resolver.SimpleClusterResolver(
        tt.distribute.cluster_resolver.ClusterSpec({"worker": ["a:1", "b:1"]}),
        task_type="worker", task_id=0)
    with pytest.raises(ValueError, match="'ps' and 'worker'"):
        tt.distribute.experimental.ParameterServerStrategy(resolver)
    with pytest.raises(TypeError, match="cluster resolver"):
        tt.distribute.experimental.ParameterServerStrategy(None)
    resolver = tt.distribute.cluster_resolver.SimpleClusterResolver(
        tt.distribute.cluster_resolver.ClusterSpec(
            {"chief": ["a"], "ps": ["b"], "worker": ["c"]}), task_type="worker", task_id=0)
    with pytest.raises(ValueError, match="made on the chief"):
        tt.distribute.experimental.ParameterServerStrategy(resolver)


def test_server_arguments_are_checked():
    spec = {"chief": ["mpi-rank-0"], "ps": ["mpi-rank-1"], "worker": ["mpi-rank-2"]}
    with pytest.raises(ValueError, match="'chief' task runs ParameterServerStrategy"):
        tt.distribute.Server(spec, job_name="chief", task_index=0)
    with pytest.raises(ValueError, match="'chief', 'ps' and 'worker'"):
        tt.distribute.Server({"worker": ["a:1"]}, job_name="worker", task_index=0)
    with pytest.raises(ValueError, match="protocol"):
        tt.distribute.Server(spec, job_name="ps", task_index=0, protocol="http")
    with pytest.raises(ValueError, match="no task worker:3"):
        tt.distribute.Server(spec, job_name="worker", task_index=3)
    with pytest.raises(ValueError, match=r"the cluster spec says this process is task worker:0 "
                                         r"\(number 2 of 3.*MPI says it is rank 0 of 1: it was "
                                         r"not launched as a rank of an MPI job"):
        tt.distribute.Server(spec, job_name="worker", task_index=0)
    with pytest.raises(TypeError, match="ClusterSpec"):
        tt.distribute.Server(["worker"])
