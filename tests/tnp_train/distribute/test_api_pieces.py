"""The tf.distribute pieces that need no communication: ReduceOp, per-replica values and their
helpers, CommunicationOptions, InputContext/InputOptions/RunOptions, ClusterSpec and the
cluster resolvers. Expected behaviour is TF 2.4's (its docstrings and sources, cited per test).
"""
import collections
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tnp_train as tt
from tnp_train.distribute import collective_util as cu
from tnp_train.distribute import input_options as io
from tnp_train.distribute import values as dv
from tnp_train.distribute.cluster_resolver import (
    ClusterResolver, ClusterSpec, MPIClusterResolver, SimpleClusterResolver,
    TFConfigClusterResolver, UnionResolver)
from tnp_train.distribute.cluster_resolver.mpi_cluster_resolver import local_rank_from_env
from tnp_train.distribute.reduce_util import ReduceOp, as_reduce_op, collective_op


# ============================================================================ ReduceOp
def test_reduce_op_members_and_values():
    # TF: class ReduceOp(enum.Enum): SUM = "SUM"; MEAN = "MEAN"
    assert [m.name for m in ReduceOp] == ["SUM", "MEAN"]
    assert ReduceOp("SUM") is ReduceOp.SUM and ReduceOp("MEAN") is ReduceOp.MEAN
    with pytest.raises(ValueError):
        ReduceOp("sum")  # the enum itself is case-sensitive; strategy.reduce upper-cases


def test_reduce_op_from_variable_aggregation():
    assert ReduceOp.from_variable_aggregation(tt.VariableAggregation.SUM) is ReduceOp.SUM
    assert ReduceOp.from_variable_aggregation(tt.VariableAggregation.MEAN) is ReduceOp.MEAN
    for agg in (tt.VariableAggregation.NONE, tt.VariableAggregation.ONLY_FIRST_REPLICA, "sum"):
        with pytest.raises(ValueError, match="from_variable_aggregation"):
            ReduceOp.from_variable_aggregation(agg)


def test_reduce_op_from_strings_as_strategy_reduce_accepts():
    # TF's Strategy.reduce / ReplicaContext.all_reduce: ReduceOp(reduce_op.upper())
    assert as_reduce_op("SUM") is ReduceOp.SUM
    assert as_reduce_op("mean") is ReduceOp.MEAN
    assert as_reduce_op(ReduceOp.MEAN) is ReduceOp.MEAN
    with pytest.raises(ValueError, match="strategy.reduce: invalid reduce_op 'max'"):
        as_reduce_op("max", "strategy.reduce")
    with pytest.raises(TypeError, match="got int"):
        as_reduce_op(1)
    assert collective_op("Sum") == "sum" and collective_op(ReduceOp.MEAN) == "mean"


# ============================================================================ values
def test_per_replica_values_str_and_repr_as_tf():
    pr = dv.PerReplica([1, 2])
    assert pr.values == (1, 2) and pr._primary == 1
    # TF's DistributedValues.__str__/__repr__: "PerReplica:{\n  0: 1,\n  1: 2\n}"
    assert str(pr) == "PerReplica:{\n  0: 1,\n  1: 2\n}"
    assert repr(dv.Mirrored(["a", "b"])) == "Mirrored:{\n  0: 'a',\n  1: 'b'\n}"
    assert isinstance(pr, dv.DistributedValues) and not dv.is_mirrored(pr)
    with pytest.raises(ValueError, match="needs one value per replica"):
        dv.PerReplica([])


Pair = collections.namedtuple("Pair", "a b")


def test_regroup_nests_into_per_replica_leaves():
    shared = object()
    r0 = {"loss": 1.0, "out": (np.zeros(2), [3, shared]), "p": Pair(5, 6)}
    r1 = {"loss": 2.0, "out": (np.ones(2), [4, shared]), "p": Pair(7, 8)}
    g = dv.regroup([r0, r1])
    assert isinstance(g, dict) and set(g) == {"loss", "out", "p"}
    assert isinstance(g["loss"], dv.PerReplica) and g["loss"].values == (1.0, 2.0)
    assert isinstance(g["out"], tuple) and isinstance(g["out"][1], list)
    np.testing.assert_array_equal(g["out"][0].values[1], np.ones(2))
    assert g["out"][1][1] is shared  # the very same object on every replica stays unwrapped
    assert isinstance(g["p"], Pair) and g["p"].b.values == (6, 8)
    assert isinstance(dv.regroup([shared, shared], always_wrap=True), dv.PerReplica)
    assert isinstance(dv.regroup([1, 2], wrap_class=dv.Mirrored), dv.Mirrored)
    # one replica: its value as it is (TF: no PerReplica with a single local replica)
    assert dv.regroup([r0]) is r0


def test_regroup_mismatched_structures_name_the_replica():
    with pytest.raises(ValueError, match=r"replica 1 returned a tuple of length 3 .* replica 0 "
                                         r"returned a tuple of length 2"):
        dv.regroup([(1, 2), (1, 2, 3)])
    with pytest.raises(ValueError, match=r"replica 2 returned a dict with keys \['x'\] at \[1\] "
                                         r"where replica 0 returned a dict with keys \['y'\]"):
        dv.regroup([(0, {"y": 1}), (0, {"y": 2}), (0, {"x": 3})])


def test_select_replica_and_mirrored():
    a = dv.PerReplica(["a0", "a1"])
    m = dv.Mirrored(["m0", "m1"])
    args = ((a, 7), {"m": m, "l": [a]})
    assert dv.select_replica(1, args) == (("a1", 7), {"m": "m1", "l": ["a1"]})
    assert dv.select_replica_mirrored(0, (m, 3)) == ("m0", 3)
    with pytest.raises(TypeError, match="mirrored across replicas"):
        dv.select_replica_mirrored(0, (m, a))
    with pytest.raises(ValueError, match="replica 2 does not exist"):
        dv.select_replica(2, a)


def test_nest_helpers_treat_distributed_values_as_leaves():
    a = dv.PerReplica([1, 2])
    nest = {"b": [a, 3], "a": Pair(4, (5,))}
    assert dv.flatten(nest) == [4, 5, a, 3]  # dict entries by sorted key, as tf.nest
    doubled = dv.map_structure(lambda x: ("dv",) if isinstance(x, dv.PerReplica) else x * 2,
                               nest)
    assert doubled == {"b": [("dv",), 6], "a": Pair(8, (10,))}
    assert isinstance(doubled["a"], Pair)
    # map_structure visits the leaves in flatten's order: a nest packs again from its leaves
    it = iter([x * 10 if isinstance(x, int) else x for x in dv.flatten(nest)])
    packed = dv.map_structure(lambda _: next(it), nest)
    assert packed == {"b": [a, 30], "a": Pair(40, (50,))} and list(packed) == ["b", "a"]


def test_local_results():
    a = dv.PerReplica([1, 2])
    assert dv.local_results(a) == (1, 2)
    assert dv.local_results(5) == (5,)
    assert dv.local_results(5, num_replicas=2) == (5, 5)
    # a nest holding per-replica values: one nest per replica (newer TF; TF 2.4 gave (nest,))
    assert dv.local_results({"x": a, "y": 9}) == ({"x": 1, "y": 9}, {"x": 2, "y": 9})
    assert dv.local_results((3, 4)) == ((3, 4),)
    with pytest.raises(ValueError, match="different numbers of replicas"):
        dv.local_results((a, dv.PerReplica([1, 2, 3])))


# ============================================================================ CommunicationOptions
def test_communication_options_defaults_and_strings():
    o = cu.CommunicationOptions()
    assert (o.bytes_per_pack, o.timeout_seconds, o.implementation) == \
        (0, None, cu.CommunicationImplementation.AUTO)
    o = cu.CommunicationOptions(50 * 1024 * 1024, 120.0, "nccl")  # TF's docstring example
    assert o.implementation is cu.CommunicationImplementation.NCCL
    assert o.timeout_seconds == 120.0 and o.bytes_per_pack == 52428800
    assert [m.value for m in cu.CommunicationImplementation] == ["AUTO", "RING", "NCCL"]
    assert cu.CollectiveCommunication is cu.CommunicationImplementation
    assert "implementation=CommunicationImplementation.NCCL" in repr(o)


def test_communication_options_errors():
    with pytest.raises(ValueError, match="bytes_per_pack must be >= 0"):
        cu.CommunicationOptions(bytes_per_pack=-1)
    with pytest.raises(ValueError, match="invalid implementation 'MPI'"):
        cu.CommunicationOptions(implementation="MPI")
    with pytest.raises(ValueError, match="CommunicationImplementation"):
        cu.CommunicationOptions(implementation=3)
    with pytest.raises(TypeError, match="timeout_seconds"):
        cu.CommunicationOptions(timeout_seconds="10")
    with pytest.raises(ValueError, match="timeout_seconds must be >= 0"):
        cu.CommunicationOptions(timeout_seconds=-1)


def test_communication_options_merge_as_tf():
    # TF's Options.merge: the argument's values win where they are not the defaults
    base = cu.CommunicationOptions(bytes_per_pack=10, timeout_seconds=5, implementation="RING")
    merged = base.merge(cu.CommunicationOptions(timeout_seconds=7))
    assert (merged.bytes_per_pack, merged.timeout_seconds, merged.implementation.name) == \
        (10, 7, "RING")
    assert merged is not base and base.timeout_seconds == 5
    assert base.merge(None) == base and base.merge(None) is not base


def test_collective_hints_is_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="CommunicationOptions"):
        h = cu.CollectiveHints(bytes_per_pack=8, timeout_seconds=3.0)
    assert isinstance(h, cu.CommunicationOptions)
    assert (h.bytes_per_pack, h.timeout_seconds, h.implementation.name) == (8, 3.0, "AUTO")


# ============================================================================ input options
def test_input_context():
    ctx = io.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (2, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    assert ctx.get_per_replica_batch_size(np.int64(8)) == 2
    # TF: ValueError "The `global_batch_size` 65 is not divisible by `num_replicas_in_sync` 4"
    with pytest.raises(ValueError, match="65 is not divisible by num_replicas_in_sync 4"):
        ctx.get_per_replica_batch_size(65)
    assert str(ctx) == "tt.distribute.InputContext(input pipeline id 1, total: 2)"
    d = io.InputContext()
    assert (d.num_input_pipelines, d.input_pipeline_id, d.num_replicas_in_sync) == (1, 0, 1)
    assert d.get_per_replica_batch_size(7) == 7
    with pytest.raises(ValueError, match="input_pipeline_id"):
        io.InputContext(num_input_pipelines=2, input_pipeline_id=2)
    with pytest.raises(TypeError, match="global_batch_size must be an integer"):
        d.get_per_replica_batch_size(7.5)


def test_input_options_tf24_defaults_and_fetch_alias():
    o = io.InputOptions()
    # TF 2.4: InputOptions(experimental_prefetch_to_device=True,
    #   experimental_replication_mode=PER_WORKER, experimental_place_dataset_on_device=False)
    assert o.experimental_prefetch_to_device is True
    assert o.experimental_replication_mode is io.InputReplicationMode.PER_WORKER
    assert o.experimental_place_dataset_on_device is False
    assert o.experimental_fetch_to_device is True
    f = io.InputOptions(experimental_fetch_to_device=False)
    assert f.experimental_prefetch_to_device is False and f.experimental_fetch_to_device is False
    p = io.InputOptions(experimental_prefetch_to_device=False)
    assert p.experimental_fetch_to_device is False
    with pytest.raises(ValueError, match="contradict"):
        io.InputOptions(experimental_prefetch_to_device=False, experimental_fetch_to_device=True)
    r = io.InputOptions(experimental_replication_mode="per_replica",
                        experimental_place_dataset_on_device=True)
    assert r.experimental_replication_mode is io.InputReplicationMode.PER_REPLICA
    with pytest.raises(ValueError, match="InputReplicationMode"):
        io.InputOptions(experimental_replication_mode="sometimes")
    assert o == io.InputOptions() and isinstance(o, tuple)


def test_run_options_defaults():
    r = io.RunOptions()
    assert r == (True, False, None)
    assert r.experimental_enable_dynamic_batch_size is True
    assert io.RunOptions(experimental_bucketizing_dynamic_shape=True)[1] is True


# ============================================================================ ClusterSpec
# The clusters of tf.train.ClusterSpec's docstring.
DENSE = {"worker": ["worker0.example.com:2222", "worker1.example.com:2222",
                    "worker2.example.com:2222"],
         "ps": ["ps0.example.com:2222", "ps1.example.com:2222"]}
SPARSE = {"worker": {1: "worker1.example.com:2222"},
          "ps": ["ps0.example.com:2222", "ps1.example.com:2222"]}


def test_cluster_spec_dense_and_sparse():
    c = ClusterSpec(DENSE)
    assert c.jobs == ["worker", "ps"]
    assert c.num_tasks("worker") == 3 and c.task_indices("ps") == [0, 1]
    assert c.task_address("worker", 2) == "worker2.example.com:2222"
    assert c.as_dict() == DENSE and c == ClusterSpec(dict(DENSE)) and bool(c)
    # TF's __eq__ compares its {job: {index: address}} form with the other side
    assert c != DENSE and ClusterSpec({"w": ["a"]}) == {"w": {0: "a"}}
    s = ClusterSpec(SPARSE)
    assert s.num_tasks("worker") == 1 and s.task_indices("worker") == [1]
    # as_dict: a sparse job stays a dict; job_tasks pads the gaps with None
    assert s.as_dict() == {"worker": {1: "worker1.example.com:2222"}, "ps": SPARSE["ps"]}
    assert s.job_tasks("worker") == [None, "worker1.example.com:2222"]
    assert ClusterSpec({"w": {"0": "a", "1": "b"}}).as_dict() == {"w": ["a", "b"]}
    assert not ClusterSpec({})
    assert ClusterSpec({"empty": []}).as_dict() == {"empty": {}}


def test_cluster_spec_errors():
    c = ClusterSpec(DENSE)
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        c.num_tasks("chief")
    with pytest.raises(ValueError, match="No task with index 3 in job 'worker'"):
        c.task_address("worker", 3)
    with pytest.raises(TypeError, match="dictionary mapping"):
        ClusterSpec(["a"])
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        ClusterSpec({"worker": "a:1"})
    with pytest.raises(TypeError, match="bytes or unicode"):
        ClusterSpec({"worker": [1234]})


def test_cluster_spec_copy_equality_repr():
    c = ClusterSpec(DENSE)
    copy = ClusterSpec(c)
    assert copy == c and copy.jobs == ["ps", "worker"]  # TF's copy goes through a sorted proto
    assert ClusterSpec({"worker": ["a"]}) != ClusterSpec({"worker": ["b"]})
    assert repr(c) == ("ClusterSpec({'ps': ['ps0.example.com:2222', 'ps1.example.com:2222'], "
                       "'worker': ['worker0.example.com:2222', 'worker1.example.com:2222', "
                       "'worker2.example.com:2222']})")
    assert tt.train.ClusterSpec is ClusterSpec


# ============================================================================ resolvers
def test_cluster_resolver_is_abstract():
    with pytest.raises(TypeError):
        ClusterResolver()


def test_simple_cluster_resolver_tf_example():
    cluster = ClusterSpec({"worker": ["worker0.example.com:2222", "worker1.example.com:2222"]})
    r = SimpleClusterResolver(cluster, task_type="worker", task_id=1,
                              num_accelerators={"GPU": 8}, rpc_layer="grpc")
    assert r.cluster_spec() is cluster
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("worker", 1, "grpc", "")
    assert r.num_accelerators() == {"GPU": 8}
    assert r.master() == "grpc://"  # TF formats the empty master with the rpc layer as well
    assert r.master("worker", 0) == "grpc://worker0.example.com:2222"
    assert r.master("worker", 0, rpc_layer="mpi") == "mpi://worker0.example.com:2222"
    assert SimpleClusterResolver(cluster, master="m:1").master() == "m:1"
    r.task_id = 0
    assert r.task_id == 0
    with pytest.raises(TypeError, match="ClusterSpec"):
        SimpleClusterResolver({"worker": ["a"]})
    assert SimpleClusterResolver(cluster).num_accelerators() == {}


def test_union_resolver_merges_as_tf():
    w = SimpleClusterResolver(ClusterSpec({"worker": ["w0", "w1"]}), task_type="worker",
                              task_id=1, rpc_layer="grpc")
    p = SimpleClusterResolver(ClusterSpec({"ps": ["p0"], "worker": ["w2"]}), task_type="ps",
                              task_id=0)
    u = UnionResolver(w, p)
    # all lists: concatenated in resolver order
    assert u.cluster_spec().as_dict() == {"worker": ["w0", "w1", "w2"], "ps": ["p0"]}
    assert (u.task_type, u.task_id, u.rpc_layer) == ("worker", 1, "grpc")
    assert u.master("ps", 0) == "grpc://p0"  # TF: "p0" (its master ignores the first's layer)
    o = UnionResolver(w, p, task_type="ps", task_id=0, rpc_layer="mpi")
    assert (o.task_type, o.task_id, o.rpc_layer) == ("ps", 0, "mpi")  # task_id=0 honoured
    # a dict anywhere: merged by index; a clash is a KeyError
    d = SimpleClusterResolver(ClusterSpec({"worker": {5: "w5"}}))
    assert UnionResolver(w, d).cluster_spec().as_dict() == {"worker": {0: "w0", 1: "w1",
                                                                       5: "w5"}}
    clash = SimpleClusterResolver(ClusterSpec({"worker": {1: "other"}}))
    with pytest.raises(KeyError, match="duplicate"):
        UnionResolver(w, clash).cluster_spec()
    with pytest.raises(ValueError, match="at least one"):
        UnionResolver()
    with pytest.raises(TypeError, match="ClusterResolver"):
        UnionResolver(w, "p")
    with pytest.raises(ValueError, match="unexpected keyword"):
        UnionResolver(w, colour="red")


def test_tf_config_cluster_resolver(monkeypatch):
    # TF_CONFIG as in TFConfigClusterResolver's docstring
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["localhost:12345", "localhost:23456"]},
        "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}))
    r = TFConfigClusterResolver()
    assert r.cluster_spec().as_dict() == {"worker": ["localhost:12345", "localhost:23456"]}
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    assert r.master() == "grpc://localhost:23456"
    assert r.master("worker", 0, rpc_layer="") == "localhost:12345"
    assert TFConfigClusterResolver(task_id=0, rpc_layer="x").master() == "x://localhost:12345"
    assert r.environment is None  # TF's default environment argument
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["only:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    assert TFConfigClusterResolver().master() == ""  # a cluster of one task
    monkeypatch.setenv("TF_CONFIG", json.dumps({"session_master": "sm:1"}))
    assert TFConfigClusterResolver().master() == "sm:1"
    monkeypatch.delenv("TF_CONFIG")
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == {} and r.task_type is None and r.task_id is None
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        TFConfigClusterResolver().cluster_spec()


# ---------------------------------------------------------------------------- MPIClusterResolver
_MPI_VARS = ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
             "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "PMIX_RANK",
             "PMIX_LOCAL_RANK", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "MPI_LOCALRANKID",
             "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"]


@pytest.fixture
def mpienv(monkeypatch):
    for v in _MPI_VARS:
        monkeypatch.delenv(v, raising=False)

    def launch(**env):
        for k, v in env.items():
            if v is None:
                monkeypatch.delenv(k, raising=False)
            else:
                monkeypatch.setenv(k, str(v))
    return launch


def test_mpi_resolver_without_mpiexec_is_one_worker(mpienv):
    r = MPIClusterResolver()
    assert (r.task_type, r.task_id, r.rank, r.size, r.num_workers) == ("worker", 0, 0, 1, 1)
    assert r.is_chief and r.cluster_spec().as_dict() == {"worker": ["mpi-rank-0"]}
    assert r.master() == "" and r.rpc_layer == "mpi" and r.environment == ""
    assert r.local_rank == 0 and r.num_ps == 0
    import tnp
    gpus = sum(d.kind == "gpu" for d in tnp.__array_namespace_info__().devices())
    assert r.num_accelerators() == ({"GPU": gpus} if gpus else {})


def test_mpi_resolver_open_mpi_workers(mpienv):
    # the variables Open MPI's mpiexec sets (checked with `mpiexec -n 2 env` here)
    mpienv(OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=4, OMPI_COMM_WORLD_LOCAL_RANK=2,
           PMIX_RANK=2)
    r = MPIClusterResolver()
    assert (r.task_type, r.task_id, r.num_workers, r.is_chief) == ("worker", 2, 4, False)
    assert r.cluster_spec().as_dict() == {"worker": [f"mpi-rank-{i}" for i in range(4)]}
    assert r.master() == "mpi://mpi-rank-2"
    assert r.master("worker", 0, rpc_layer="") == "mpi-rank-0"
    assert r.local_rank == 2


def test_mpi_resolver_parameter_server_roles(mpienv):
    roles = []
    for rank in range(5):
        mpienv(OMPI_COMM_WORLD_RANK=rank, OMPI_COMM_WORLD_SIZE=5)
        r = MPIClusterResolver(num_ps=2)
        roles.append((r.task_type, r.task_id, r.is_chief))
    assert roles == [("chief", 0, True), ("ps", 0, False), ("ps", 1, False),
                     ("worker", 0, False), ("worker", 1, False)]
    assert r.num_workers == 2 and r.cluster_spec().as_dict() == {
        "chief": ["mpi-rank-0"], "ps": ["mpi-rank-1", "mpi-rank-2"],
        "worker": ["mpi-rank-3", "mpi-rank-4"]}
    with pytest.raises(ValueError, match=r"num_ps=4\) needs at least 6 ranks .* has 5"):
        MPIClusterResolver(num_ps=4)


def test_mpi_resolver_other_launchers(mpienv):
    mpienv(PMI_RANK=1, PMI_SIZE=3)  # Hydra (MPICH, Intel MPI)
    assert (MPIClusterResolver().task_id, MPIClusterResolver().size) == (1, 3)
    mpienv(PMI_RANK=None, PMI_SIZE=None, PMIX_RANK=3, SLURM_NTASKS=4)  # srun --mpi=pmix
    assert (MPIClusterResolver().task_id, MPIClusterResolver().num_workers) == (3, 4)
    assert MPIClusterResolver().local_rank is None  # the launcher did not say


def test_mpi_resolver_bad_environment(mpienv):
    mpienv(PMIX_RANK=0)
    with pytest.raises(RuntimeError, match="PMIX_RANK is set but no variable gives the job size"):
        MPIClusterResolver()
    mpienv(OMPI_COMM_WORLD_RANK="x", OMPI_COMM_WORLD_SIZE=2)
    with pytest.raises(RuntimeError, match="OMPI_COMM_WORLD_RANK='x' is not an integer"):
        MPIClusterResolver()
    mpienv(OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=2)
    with pytest.raises(RuntimeError, match="rank 2 .* is not below the job size 2"):
        MPIClusterResolver()
    with pytest.raises(ValueError, match="num_ps must be >= 0"):
        MPIClusterResolver(num_ps=-1)
    with pytest.raises(TypeError, match="num_ps must be an integer"):
        MPIClusterResolver(num_ps=1.0)
    assert local_rank_from_env({"SLURM_LOCALID": "3"}) == 3


def test_mpi_resolver_does_not_import_mpi4py():
    code = textwrap.dedent("""
        import sys
        from tnp_train.distribute.cluster_resolver import MPIClusterResolver
        r = MPIClusterResolver()
        assert (r.task_type, r.task_id, r.num_workers) == ("worker", 1, 2), r.cluster_spec()
        assert "mpi4py" not in sys.modules, "mpi4py was imported"
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in _MPI_VARS}
    env.update(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
