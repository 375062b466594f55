"""TF's cluster resolvers (TF_CONFIG, Slurm, Kubernetes) answer as TF's do, and whatever they
read must describe the MPI job the process is a rank of (issue 31, item 1).

The expected answers are TF's, recorded by tests/fixtures/make_cluster_resolver_fixture.py
(tests/fixtures/cluster_resolvers.json). The MPI job is simulated here with Open MPI's
variables (the resolvers read the launcher's environment, as MPIClusterResolver does); real
``mpiexec`` jobs are in tests/distributed/test_launch_tf_config.py.
"""
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest

import tnp_train as tt
from tnp_train.distribute.cluster_resolver.mpi_agreement import task_position
from tnp_train.distribute.cluster_resolver.slurm_cluster_resolver import (
    expand_hostlist, expand_tasks_per_node)

CR = tt.distribute.cluster_resolver
FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures" / "cluster_resolvers.json")
                     .read_text())
SLURM_VARS = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
              "SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS", "SLURM_JOB_NODELIST",
              "SLURM_TASKS_PER_NODE", "CUDA_VISIBLE_DEVICES")
MPI_VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
            "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "PMIX_RANK")


@pytest.fixture
def clean_env(monkeypatch):
    """No TF_CONFIG, no Slurm step, no MPI launcher: set what a test needs."""
    for var in (*SLURM_VARS, *MPI_VARS, "TF_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def as_mpi_rank(monkeypatch, rank, size):
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", str(rank))
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", str(size))


def _cases(key):
    return [pytest.param(case, id=str(i)) for i, case in enumerate(FIXTURE[key])]


# ------------------------------------------------------------------------------------ Slurm
@pytest.mark.parametrize("hostlist", sorted(FIXTURE["hostlists"]))
def test_slurm_hostlist_expands_as_tf(hostlist):
    expected = FIXTURE["hostlists"][hostlist]
    if isinstance(expected, dict):
        with pytest.raises(ValueError, match=re.escape(f'Invalid hostlist format "{hostlist}"')):
            expand_hostlist(hostlist)
    else:
        assert expand_hostlist(hostlist) == expected


@pytest.mark.parametrize("tasks", sorted(FIXTURE["tasks_per_node"]))
def test_slurm_tasks_per_node_expand_as_tf(tasks):
    expected = FIXTURE["tasks_per_node"][tasks]
    if isinstance(expected, dict):
        with pytest.raises(ValueError, match="Invalid tasks-per-node list format"):
            expand_tasks_per_node(tasks)
    else:
        assert expand_tasks_per_node(tasks) == expected


@pytest.mark.parametrize("case", _cases("slurm"))
def test_slurm_resolver_answers_as_tf(clean_env, case):
    for name, value in case["env"].items():
        clean_env.setenv(name, value)
    if "error" in case:
        error = {"RuntimeError": RuntimeError, "ValueError": ValueError}[case["error"]]
        with pytest.raises(error, match=re.escape(case["message"])):
            CR.SlurmClusterResolver(**case["kwargs"])
        return
    r = CR.SlurmClusterResolver(**case["kwargs"])
    assert r.cluster_spec().as_dict() == case["cluster_spec"]
    assert (r.task_type, r.task_id, r.rpc_layer) == (case["task_type"], case["task_id"],
                                                     case["rpc_layer"])
    assert r.master() == case["master"]
    assert r.master("worker", 0) == case["master_worker_0"]
    assert dict(r.num_accelerators()) == case["num_accelerators"]
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == case["cuda_visible_devices"]


def test_slurm_resolver_falls_back_to_the_jobs_variables(clean_env):
    # sbatch's script (no step yet): the job's variables describe the allocation
    for name, value in {"SLURM_PROCID": "1", "SLURM_NTASKS": "4",
                        "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "2(x2)"}.items():
        clean_env.setenv(name, value)
    r = CR.SlurmClusterResolver(gpus_per_node=0)
    assert r.cluster_spec().as_dict() == {"worker": ["n1:8888", "n1:8889", "n2:8888",
                                                     "n2:8889"]}
    assert (r.task_type, r.task_id) == ("worker", 1)
    # no GPUs: none handed out, CUDA_VISIBLE_DEVICES untouched (TF fails on range(0, 0, 0))
    assert r.num_accelerators() == {"GPU": 0}
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def _slurm_step(monkeypatch, procid, ntasks, nodes="n[1-2]", per_node="2(x2)"):
    for name, value in {"SLURM_PROCID": str(procid), "SLURM_STEP_NUM_TASKS": str(ntasks),
                        "SLURM_STEP_NODELIST": nodes,
                        "SLURM_STEP_TASKS_PER_NODE": per_node}.items():
        monkeypatch.setenv(name, value)


def test_slurm_resolver_agrees_with_srun_pmix(clean_env):
    _slurm_step(clean_env, 2, 4)
    clean_env.setenv("PMIX_RANK", "2")       # srun --mpi=pmix: the size is the step's
    r = CR.SlurmClusterResolver(gpus_per_node=0)
    assert (r.task_type, r.task_id) == ("worker", 2)


def test_slurm_resolver_disagreeing_with_mpi_names_both(clean_env):
    # mpiexec inside an allocation: the processes are ranks of 4 but the batch step has 1 task
    _slurm_step(clean_env, 0, 1, nodes="n1", per_node="1")
    as_mpi_rank(clean_env, 3, 4)
    with pytest.raises(ValueError, match=r"SlurmClusterResolver: Slurm \(SLURM_PROCID, the "
                                         r"step's tasks\) says this process is task worker:0 "
                                         r"\(number 0 of 1.*but MPI says it is rank 3 of 4\. "
                                         r"Launch with `srun --mpi=pmix`"):
        CR.SlurmClusterResolver(gpus_per_node=0)
    _slurm_step(clean_env, 1, 4)
    as_mpi_rank(clean_env, 2, 4)
    with pytest.raises(ValueError, match="task worker:1 .*rank 2 of 4"):
        CR.SlurmClusterResolver(gpus_per_node=0)


# ------------------------------------------------------------------------------- Kubernetes
class FakeCoreV1Api:
    """The part of the Kubernetes client the resolver uses, with fixed pods."""

    def __init__(self, pods):
        self.pods = pods
        self.selectors = []

    def list_pod_for_all_namespaces(self, label_selector):
        self.selectors.append(label_selector)
        return types.SimpleNamespace(items=[
            types.SimpleNamespace(metadata=types.SimpleNamespace(name=p[0]),
                                  status=types.SimpleNamespace(
                                      host_ip=p[1], phase=p[2] if len(p) > 2 else "Running"))
            for p in self.pods.get(label_selector, [])])


@pytest.mark.parametrize("case", _cases("kubernetes"))
def test_kubernetes_resolver_answers_as_tf(case):
    client = FakeCoreV1Api(case["pods"])
    r = CR.KubernetesClusterResolver(override_client=client, **case["kwargs"])
    assert (r.task_type, r.task_id, r.rpc_layer) == (case["task_type"], case["task_id"],
                                                     case["rpc_layer"])
    assert r.master() == case["master_unset"]
    if "error" in case:
        with pytest.raises(RuntimeError, match=re.escape(case["message"])):
            r.cluster_spec()
        return
    assert r.cluster_spec().as_dict() == case["cluster_spec"]
    assert r.master("worker", 1) == case["master_worker_1"]
    r.task_type, r.task_id = "worker", 0
    assert r.master(rpc_layer="mpi") == case["master_set"]
    assert client.selectors   # the API was asked


def test_kubernetes_resolver_needs_the_client_or_an_override(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)     # not installed
    with pytest.raises(ImportError, match="pip install kubernetes"):
        CR.KubernetesClusterResolver()
    with pytest.raises(ValueError, match="list_pod_for_all_namespaces"):
        CR.KubernetesClusterResolver(override_client=object())


def test_kubernetes_pods_must_be_as_many_as_the_ranks(clean_env):
    pods = {"job-name=tensorflow": [["tf-0", "10.0.0.1"], ["tf-1", "10.0.0.2"],
                                    ["tf-2", "10.0.0.3"]]}
    r = CR.KubernetesClusterResolver(override_client=FakeCoreV1Api(pods))
    as_mpi_rank(clean_env, 1, 2)
    with pytest.raises(ValueError, match=r"Kubernetes \(the pods its label selectors pick\) "
                                         r"says the job has 3 task\(s\), but MPI says it is "
                                         r"rank 1 of 2\. Make the resolver describe this "
                                         r"MPI job"):
        tt.distribute.MultiWorkerMirroredStrategy(cluster_resolver=r)


# -------------------------------------------------------------------------------- TF_CONFIG
@pytest.mark.parametrize("case", _cases("tf_config"))
def test_tf_config_resolver_answers_as_tf(clean_env, case):
    clean_env.setenv("TF_CONFIG", json.dumps(case["tf_config"]))
    r = CR.TFConfigClusterResolver()
    assert r.cluster_spec().as_dict() == case["cluster_spec"]
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == (
        case["task_type"], case["task_id"], case["rpc_layer"], case["environment"])
    assert r.master() == case["master"]


@pytest.mark.parametrize("case", _cases("tf_config"))
def test_tasks_are_numbered_as_tf_multi_worker_mirrored_strategy_numbers_them(case):
    # the chief first, then the workers; an evaluator is a job of its own
    spec = case["cluster_spec"]
    for job, task, index, count in case["mwms_numbering"]:
        assert task_position(spec, job, task, jobs=("chief", "worker")) == (index, count)


TUTORIAL = {"cluster": {"worker": ["localhost:12345", "localhost:23456"]},
            "task": {"type": "worker", "index": 0}}


def test_tutorial_tf_config_without_mpi_is_an_error_saying_how_to_launch(clean_env):
    for index in (0, 1):
        clean_env.setenv("TF_CONFIG", json.dumps(dict(TUTORIAL, task={"type": "worker",
                                                                      "index": index})))
        with pytest.raises(ValueError) as e:
            tt.distribute.MultiWorkerMirroredStrategy()
        msg = str(e.value)
        assert f"TF_CONFIG says this process is task worker:{index} (number {index} of 2" in msg
        assert "MPI says it is rank 0 of 1" in msg
        assert "mpiexec -n 2 python script.py" in msg and "srun --mpi=pmix -n 2" in msg


def test_tf_config_disagreeing_with_mpi_fails_before_mpi_starts(clean_env):
    clean_env.setenv("TF_CONFIG", json.dumps(TUTORIAL))        # worker 0 ...
    as_mpi_rank(clean_env, 1, 2)                                 # ... on rank 1
    with pytest.raises(ValueError, match=r"TF_CONFIG says this process is task worker:0 "
                                         r"\(number 0 of 2.*but MPI says it is rank 1 of 2\. "
                                         r"Give rank r the TF_CONFIG of task r"):
        tt.distribute.MultiWorkerMirroredStrategy()
    three = {"cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"]},
             "task": {"type": "worker", "index": 0}}
    clean_env.setenv("TF_CONFIG", json.dumps(three))           # worker 0 is task 1 of 3
    with pytest.raises(ValueError, match=r"task worker:0 \(number 1 of 3, counting the chief "
                                         r"first.*rank 1 of 2"):
        tt.distribute.MultiWorkerMirroredStrategy()


def test_tf_config_of_one_worker_or_an_evaluator_runs_alone(clean_env):
    clean_env.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["only:1"]},
                                              "task": {"type": "worker", "index": 0}}))
    s = tt.distribute.MultiWorkerMirroredStrategy()
    assert s.num_replicas_in_sync == 1
    assert isinstance(s.cluster_resolver, CR.TFConfigClusterResolver)   # TF's default
    evaluator = {"cluster": {"chief": ["c:1"], "worker": ["w:1"], "evaluator": ["e:1"]},
                 "task": {"type": "evaluator", "index": 0}}
    clean_env.setenv("TF_CONFIG", json.dumps(evaluator))
    assert tt.distribute.MultiWorkerMirroredStrategy().num_replicas_in_sync == 1
    as_mpi_rank(clean_env, 0, 2)
    with pytest.raises(ValueError, match="the evaluator is not a rank of the training job"):
        tt.distribute.MultiWorkerMirroredStrategy()


def test_tf_config_is_checked_by_mpi_cluster_resolver(clean_env):
    clean_env.setenv("TF_CONFIG", json.dumps(TUTORIAL))
    with pytest.raises(ValueError, match=r"MPIClusterResolver\(num_ps=0\): TF_CONFIG says .*"
                                         r"rank 0 of 1"):
        CR.MPIClusterResolver()
    as_mpi_rank(clean_env, 0, 2)
    assert CR.MPIClusterResolver().task_id == 0
    ps_job = {"cluster": {"chief": ["c:1"], "ps": ["p:1", "p:2"], "worker": ["w:1"]},
              "task": {"type": "chief", "index": 0}}
    clean_env.setenv("TF_CONFIG", json.dumps(ps_job))
    as_mpi_rank(clean_env, 0, 4)
    with pytest.raises(ValueError, match=r"TF_CONFIG lays the job out as 1 chief, 2 ps, 1 "
                                         r"worker, but MPIClusterResolver\(num_ps=1\) as 1 "
                                         r"chief, 1 ps, 2 worker"):
        CR.MPIClusterResolver(num_ps=1)
    assert CR.MPIClusterResolver(num_ps=2).task_type == "chief"


def test_parameter_server_roles_from_tf_config_are_checked(clean_env):
    ps_job = {"cluster": {"chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1", "w:2"]},
              "task": {"type": "chief", "index": 0}}
    clean_env.setenv("TF_CONFIG", json.dumps(ps_job))
    resolver = CR.TFConfigClusterResolver()
    with pytest.raises(ValueError, match=r"ParameterServerStrategy: TF_CONFIG says this process "
                                         r"is task chief:0 \(number 0 of 4.*rank 0 of 1.*"
                                         r"mpiexec -n 4"):
        tt.distribute.experimental.ParameterServerStrategy(resolver)
    # TF's tutorial starts the servers with TF's arguments
    clean_env.setenv("TF_CONFIG", json.dumps(dict(ps_job, task={"type": "worker",
                                                                "index": 1})))
    resolver = CR.TFConfigClusterResolver()
    as_mpi_rank(clean_env, 2, 4)
    with pytest.raises(ValueError, match=r"Server: TF_CONFIG says this process is task worker:1 "
                                         r"\(number 3 of 4, counting the chief, then the ps "
                                         r"tasks, then the workers\), but MPI says it is rank 2 "
                                         r"of 4"):
        tt.distribute.Server(resolver)
    as_mpi_rank(clean_env, 3, 5)
    with pytest.raises(ValueError, match=r"number 3 of 4.*rank 3 of 5"):
        tt.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                             task_index=resolver.task_id, protocol=resolver.rpc_layer or "grpc",
                             start=False)


def test_a_launch_error_before_mpi_aborts_the_job_only_when_uncaught(monkeypatch):
    """A rank whose TF_CONFIG disagrees with MPI raises before MPI starts; under mpiexec it
    also arms an excepthook that starts MPI and aborts the whole job if the error goes
    uncaught (the other ranks wait in MPI_Init for it). Caught here: nothing else happens."""
    import sys

    from tnp_train.distribute.collective import mpi as mpi_mod

    for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    before = sys.excepthook
    mpi_mod.abort_job_if_uncaught()
    assert sys.excepthook is before                 # not launched by mpiexec: no hook
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["localhost:12345", "localhost:23456"]},
        "task": {"type": "worker", "index": 0}}))
    with pytest.raises(ValueError, match="MPI says it is rank 1 of 2"):
        tt.distribute.MultiWorkerMirroredStrategy()
    hook = sys.excepthook
    assert hook is not before and getattr(hook, "_tnp_collective_abort", False)
    mpi_mod.abort_job_if_uncaught()                 # idempotent
    assert sys.excepthook is hook
