"""ClusterCoordinator (TF 2.4's ``tf.distribute.experimental.coordinator``) over a job run
inside this process: scheduling, results, errors, per-worker datasets, atomic updates from
several workers, and lost workers and servers. References: the values the closures compute
by hand, and the servers' own counts."""
import collections
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute.experimental.coordinator import (CancelledError, PerWorkerValues,
                                                           RemoteValue, UnavailableError)

from ps_local import cluster, coordinator, server_value, strategy  # noqa: F401 (fixtures)

# module-level state: these functions are pickled by reference, so the worker threads of the
# in-process job share it with the test (a worker process would have its own)
release = threading.Event()
started = threading.Event()
release_other = threading.Event()


def wait_for_release(x):
    started.set()
    assert release.wait(10), "never released"
    return x


def wait_other(x):
    assert release_other.wait(10), "never released"
    return x


def wait_then_fail(x):
    started.set()
    assert release.wait(10), "never released"
    raise ValueError(f"closure input {x} is bad")


def fail_on(i, bad):
    if i == bad:
        raise ValueError(f"closure input {i} is bad")
    return i


def test_schedule_fetch_join(coordinator):
    def add(a, b=1):
        return tnp.asarray(a) + b
    rvs = [coordinator.schedule(add, args=(i,), kwargs={"b": 10}) for i in range(6)]
    assert all(isinstance(r, RemoteValue) for r in rvs)
    coordinator.join()
    assert coordinator.done()
    assert [r.fetch() for r in rvs] == list(range(10, 16))
    assert isinstance(rvs[0].fetch(), np.int64)          # tnp values come back as NumPy
    assert isinstance(rvs[0].get(), tnp.ndarray)
    assert coordinator.fetch({"a": rvs[0], "b": [rvs[1], 3]}) == {"a": 10, "b": [11, 3]}
    log = coordinator.attempt_log()
    assert sorted(a.closure_id for a in log) == list(range(6))
    assert {a.outcome for a in log} == {"succeeded"}
    with pytest.raises(TypeError, match="callable"):
        coordinator.schedule(3)


def test_the_coordinator_is_one_per_strategy(strategy, coordinator):
    assert tt.distribute.experimental.coordinator.ClusterCoordinator(strategy) is coordinator
    assert coordinator.strategy is strategy
    with pytest.raises(ValueError, match="only a ParameterServerStrategy"):
        tt.distribute.experimental.coordinator.ClusterCoordinator(
            tt.distribute.OneDeviceStrategy("cpu"))


def test_closure_error_reaches_fetch_and_join_once(coordinator):
    rvs = [coordinator.schedule(fail_on, args=(i, 2)) for i in range(4)]
    with pytest.raises(ValueError, match="closure input 2 is bad") as info:
        rvs[2].fetch()
    assert "raised by closure 2, attempt 1, on worker:" in "\n".join(info.value.__notes__)
    with pytest.raises(ValueError, match="closure input 2 is bad"):
        coordinator.join()
    coordinator.join()                     # raised once, then cleared (as TF)
    assert coordinator.schedule(fail_on, args=(5, 2)).fetch() == 5


def test_an_error_cancels_the_queued_closures(coordinator):
    release.clear()
    started.clear()
    release_other.clear()
    # both workers busy: one until the end, the other until its closure fails
    other = coordinator.schedule(wait_other, args=(0,))
    failing = coordinator.schedule(wait_then_fail, args=(1,))
    assert started.wait(10)
    queued = [coordinator.schedule(fail_on, args=(i, -1)) for i in range(3)]
    release.set()
    with pytest.raises(ValueError, match="input 1 is bad"):
        failing.fetch()
    for r in queued:
        with pytest.raises(CancelledError, match="cancelled"):
            r.fetch()
    release_other.set()
    with pytest.raises(ValueError, match="input 1 is bad"):
        coordinator.join()
    assert other.fetch() == 0


def test_no_update_is_lost(strategy, coordinator):
    with strategy.scope():
        counter = tt.Variable(0.0, name="counter")

    def add_many(n):
        for _ in range(n):
            counter.assign_add(1.0)

    for _ in range(4):
        coordinator.schedule(add_many, args=(200,))
    coordinator.join()
    assert float(counter.numpy()) == 800.0
    counts = coordinator.applied_updates()
    assert sum(per.get("counter", 0) for key, per in counts.items() if key) == 800


def test_strategy_inside_a_closure(strategy, coordinator):
    def inspect_strategy():
        s = tt.distribute.get_strategy()
        out = s.run(lambda: tt.distribute.get_replica_context().replica_id_in_sync_group)
        # the strategy the closure captured is the worker's, the one current there
        return (type(s).__name__, s is strategy, s.num_replicas_in_sync, int(out),
                s.extended.worker_devices[0].startswith("/job:worker"),
                s.extended.should_checkpoint)

    got = coordinator.schedule(inspect_strategy).fetch()
    assert got == ("ParameterServerStrategy", True, 1, 0, True, False)
    assert strategy.extended.should_checkpoint


def test_variables_cannot_be_made_in_a_closure(coordinator):
    def make():
        return tt.Variable(1.0, name="late")
    with pytest.raises(RuntimeError, match="variable 'late' was made on worker"):
        coordinator.schedule(make).fetch()
    with pytest.raises(RuntimeError):
        coordinator.join()


def test_local_variables_cannot_travel(coordinator):
    local = tt.Variable(1.0, name="local")
    with pytest.raises(ValueError, match="'local'.*not created in the ParameterServerStrategy"):
        coordinator.schedule(lambda: local.assign_add(1.0))
    with pytest.raises(ValueError, match="cannot use the ClusterCoordinator"):
        coordinator.schedule(lambda: coordinator.done())
    with pytest.raises(TypeError, match="cannot serialize"):
        gen = (i for i in range(3))
        coordinator.schedule(lambda: next(gen))


def test_per_worker_datasets_and_values(cluster, coordinator):
    def dataset_fn(ctx):
        # each worker's pipeline is its shard, as TF's InputContext describes it; 8 closures
        # may all go to one worker (whichever is free), so each shard holds at least 8
        return tt.data.Dataset.range(20).shard(ctx.num_input_pipelines,
                                               ctx.input_pipeline_id)

    def take(it, tag):
        return tag, int(next(it))

    it = iter(coordinator.create_per_worker_dataset(dataset_fn))
    with pytest.raises(TypeError, match="inside a function scheduled"):
        next(it)
    tags = PerWorkerValues(("w0", "w1"))
    got = [coordinator.schedule(take, args=(it, tags)) for _ in range(8)]
    coordinator.join()
    seen = collections.defaultdict(list)
    for r in got:
        tag, x = r.fetch()
        seen[tag].append(x)
    log = {a.closure_id: a.worker for a in coordinator.attempt_log()}
    for tag, xs in seen.items():
        w = int(tag[1])
        assert xs == list(range(w, 20, 2))[:len(xs)]   # worker w reads its own shard, in order
    assert sum(len(xs) for xs in seen.values()) == 8
    assert set(log.values()) <= {0, 1}
    # a RemoteValue among the arguments is passed as its value
    assert coordinator.schedule(lambda v: v[1] * 2, args=(got[0],)).fetch() == \
        2 * got[0].fetch()[1]


def test_a_lost_worker_reruns_its_closure(cluster, strategy, coordinator):
    with strategy.scope():
        counter = tt.Variable(0.0, name="counter")

    def step(i):
        counter.assign_add(1.0)
        return wait_for_release(i)

    release.clear()
    started.clear()
    first = coordinator.schedule(step, args=(0,))     # the first free worker: worker 0
    assert started.wait(10)                           # its increment is sent
    cluster.kill_worker(0)
    release.set()
    rvs = [first] + [coordinator.schedule(step, args=(i,)) for i in range(1, 6)]
    coordinator.join()
    assert [r.fetch() for r in rvs] == list(range(6))
    log = coordinator.attempt_log()
    lost = [a for a in log if a.outcome == "worker lost"]
    assert [(a.closure_id, a.attempt, a.worker) for a in lost] == [(0, 1, 0)]
    ok = collections.Counter(a.closure_id for a in log if a.outcome == "succeeded")
    assert ok == {i: 1 for i in range(6)}
    assert {a.worker for a in log if a.outcome == "succeeded"} == {1}
    # at least once: the lost attempt's increment (sent before the loss) stays applied
    counts = coordinator.applied_updates()
    per_attempt = {k: v.get("counter", 0) for k, v in counts.items() if k is not None}
    assert float(counter.numpy()) == sum(per_attempt.values()) == 7
    assert per_attempt[(0, 1)] == 1 and per_attempt[(0, 2)] == 1
    assert coordinator.num_workers == 1


def test_losing_every_worker_or_a_server_raises(cluster, strategy, coordinator):
    release.clear()
    started.clear()
    rv = coordinator.schedule(wait_for_release, args=(1,))
    assert started.wait(10)
    cluster.kill_ps(1)
    with pytest.raises(UnavailableError, match=r"parameter server ps:1 \(rank 2\) was lost"):
        coordinator.join()
    with pytest.raises(UnavailableError, match="ps:1"):
        rv.fetch()
    with pytest.raises(UnavailableError, match="ps:1"):
        coordinator.schedule(wait_for_release, args=(2,))
    with pytest.raises(UnavailableError, match="ps:1"):
        coordinator.done()
    release.set()
    assert any(a.outcome == "abandoned" for a in coordinator.attempt_log())


def test_losing_every_worker_raises(cluster, coordinator):
    release.clear()
    started.clear()
    rv = coordinator.schedule(wait_for_release, args=(1,))
    assert started.wait(10)
    cluster.kill_worker(0)
    cluster.kill_worker(1)
    with pytest.raises(UnavailableError, match="every worker of the job was lost"):
        rv.fetch()
    release.set()
