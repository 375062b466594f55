"""The collective layer inside one process: the size-1 world, thread groups (MirroredStrategy's
replicas), the gradient bucketer on them, the timeout rules, and the layer's independence from
tnp. No MPI needed; the same rules under mpiexec are in test_collective_mpi.py."""
import ast
import os
import re
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tnp_train.distribute import collective as coll
from tnp_train.distribute.collective.base import apply_mean, normalize_op, resolve_timeouts

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "tnp_train" / "distribute" / "collective"


def run_members(group, fn, members=None, timeout=10):
    """``fn(comm)`` on a thread per member; returns results (an exception where one raised)."""
    members = range(group.size) if members is None else members
    results = {}

    def body(i):
        try:
            results[i] = fn(group.member(i))
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a member thread hung"
    return [results[i] for i in members]


def member_input(rank, shape, dtype):
    size = int(np.prod(shape, dtype=np.int64))
    values = (np.arange(size) * (rank + 2)) % 9 - 3 * (rank % 2)
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    return values.reshape(shape).astype(dtype)


# -- the size-1 world --------------------------------------------------------------------------

def test_local_communicator_returns_copies_and_reports_events():
    comm = coll.LocalCommunicator()
    assert (comm.rank, comm.size) == (0, 1)
    events = []
    with coll.subscribe(events.append):
        x = np.arange(6, dtype=np.int32).reshape(2, 3)
        for op in ("sum", "mean", "max", "min", "SUM"):
            got = comm.allreduce(x, op)
            assert got is not x and got.dtype == np.int32 and np.array_equal(got, x)
        assert np.array_equal(comm.allreduce_async(x).wait(), x)
        assert np.array_equal(comm.allgather(x), x)
        assert np.array_equal(comm.broadcast(x, root=0), x)
        obj = {"a": [1, 2]}
        assert comm.broadcast_object(obj) == obj and comm.broadcast_object(obj) is not obj
        assert comm.allgather_object(obj) == [obj]
        comm.barrier()
    names = [e["name"] for e in events]
    assert names == ["allreduce"] * 6 + ["allgather", "broadcast", "broadcast_object",
                                         "broadcast_object", "allgather_object", "barrier"]
    assert [e["seq"] for e in events] == list(range(12))
    assert events[0]["op"] == "sum" and events[0]["bytes"] == 24 and events[0]["rank"] == 0
    assert all(e["t_start"] <= e["t_wait_end"] <= e["t_end"] for e in events)


def test_bad_arguments_raise_what_numpy_and_tf_would():
    comm = coll.LocalCommunicator()
    with pytest.raises(ValueError, match="unknown reduction op 'prod'"):
        comm.allreduce(np.ones(2), "prod")
    with pytest.raises(TypeError, match="op 'sum' is not defined for bool"):
        comm.allreduce(np.ones(2, bool))
    with pytest.raises(TypeError, match="op 'max' is not defined for complex dtype complex128"):
        comm.allreduce(np.ones(2, complex), "max")
    with pytest.raises(TypeError, match="cannot reduce arrays of dtype str"):
        comm.allreduce(np.array(["a"]))
    with pytest.raises(ValueError, match=r"root must be a rank in \[0, 1\), got 1"):
        comm.broadcast(np.ones(2), root=1)
    with pytest.raises(ValueError, match="allgather: needs arrays of at least one dimension"):
        comm.allgather(np.float32(1))
    group = coll.ThreadGroup(2)
    with pytest.raises(ValueError, match=r"ThreadGroup.member: i must be in \[0, 2\), got 2"):
        group.member(2)
    with pytest.raises(ValueError, match="ThreadGroup: n must be a positive integer, got 0"):
        coll.ThreadGroup(0)
    with pytest.raises(TypeError, match="listener must be callable"):
        coll.subscribe(3)


def test_reduce_op_names_and_integer_mean():
    class ReduceOp:                      # an enum whose value names the op, as TF's ReduceOp
        value = "MEAN"
    assert normalize_op("SUM") == "sum" and normalize_op(ReduceOp()) == "mean"
    # TF's MEAN of integers divides with truncation toward zero: -7 / 2 -> -3, 7 / 2 -> 3
    total = np.array([-7, 7, -6, 0, -1], np.int64)
    assert apply_mean(total.copy(), 2).tolist() == [-3, 3, -3, 0, 0]
    assert apply_mean(np.array([7, 8], np.uint8), 3).tolist() == [2, 2]
    assert apply_mean(np.array([1.0, -3.0], np.float32), 4).tolist() == [0.25, -0.75]


def test_timeouts_come_from_the_argument_the_options_or_the_environment(monkeypatch):
    monkeypatch.delenv("TNP_COLLECTIVE_TIMEOUT", raising=False)
    monkeypatch.delenv("TNP_COLLECTIVE_WARN_AFTER", raising=False)
    assert resolve_timeouts() == (60.0, 10.0)

    class Options:                       # duck-typed CommunicationOptions
        timeout_seconds = 8
    assert resolve_timeouts(Options()) == (8.0, 4.0)
    assert resolve_timeouts({"timeout_seconds": 30}) == (30.0, 10.0)
    monkeypatch.setenv("TNP_COLLECTIVE_TIMEOUT", "5")
    assert resolve_timeouts() == (5.0, 2.5)
    assert resolve_timeouts(Options()) == (8.0, 4.0)          # an explicit option wins
    assert resolve_timeouts(Options(), timeout_seconds=2) == (2.0, 1.0)
    monkeypatch.setenv("TNP_COLLECTIVE_WARN_AFTER", "0.5")
    assert resolve_timeouts() == (5.0, 0.5)
    monkeypatch.setenv("TNP_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="TNP_COLLECTIVE_TIMEOUT='soon' is not a number"):
        resolve_timeouts()
    with pytest.raises(ValueError, match="timeout_seconds must be a finite number > 0"):
        resolve_timeouts(timeout_seconds=0)


def test_a_failing_listener_warns_and_the_collective_still_returns():
    def bad(event):
        raise KeyError("oops")
    with coll.subscribe(bad):
        with pytest.warns(RuntimeWarning, match="listener .* raised KeyError"):
            got = coll.LocalCommunicator().allreduce(np.ones(3))
    assert np.array_equal(got, np.ones(3))


# -- thread groups ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.float16,
                                   ml_dtypes.bfloat16])
def test_thread_group_allreduce_is_exact(n, dtype):
    group = coll.ThreadGroup(n)
    shape = (4, 3)
    parts = [member_input(k, shape, dtype).astype(np.float64) for k in range(n)]
    want = {"sum": np.sum(parts, 0), "max": np.max(parts, 0), "min": np.min(parts, 0)}
    want["mean"] = (np.trunc(want["sum"] / n) if np.dtype(dtype).kind in "iu"
                    else want["sum"].astype(dtype) / np.array(n, dtype))

    def body(comm):
        x = member_input(comm.rank, shape, dtype)
        return {op: comm.allreduce(x, op) for op in ("sum", "mean", "max", "min")}

    for rank, got in enumerate(run_members(group, body)):
        assert not isinstance(got, BaseException), got
        for op, value in got.items():
            assert value.dtype == np.dtype(dtype) and value.shape == shape
            np.testing.assert_array_equal(value.astype(np.float64),
                                          want[op].astype(dtype).astype(np.float64),
                                          err_msg=f"rank {rank} {op}")


def test_thread_group_gather_broadcast_objects_and_async():
    group = coll.ThreadGroup(3)

    def body(comm):
        r = comm.rank
        req = comm.allreduce_async(np.full(5, r, np.float32), "sum")
        gathered = comm.allgather(np.full((r + 1, 2), r, np.int16))
        b = comm.broadcast(np.full(3, r, np.float64), root=2)
        objs = comm.allgather_object({"r": r})
        bo = comm.broadcast_object(["from", r], root=1)
        comm.barrier()
        return req.wait(), gathered, b, objs, bo

    want_gather = np.concatenate([np.full((k + 1, 2), k, np.int16) for k in range(3)])
    outs = run_members(group, body)
    for s, gathered, b, objs, bo in outs:
        assert np.array_equal(s, np.full(5, 3, np.float32))
        assert gathered.dtype == np.int16 and np.array_equal(gathered, want_gather)
        assert np.array_equal(b, np.full(3, 2.0))
        assert objs == [{"r": 0}, {"r": 1}, {"r": 2}] and bo == ["from", 1]
    # each member owns its result (no shared buffer between replicas)
    assert outs[0][0] is not outs[1][0] and outs[0][2] is not outs[1][2]
    assert outs[0][4] is not outs[1][4]


def test_thread_group_mismatch_fails_every_member_naming_each_call():
    group = coll.ThreadGroup(2)

    def body(comm):
        t0 = time.perf_counter()
        try:
            comm.allreduce(np.ones(3 if comm.rank == 0 else 4, np.float32))
        except coll.CollectiveMismatchError as exc:
            return time.perf_counter() - t0, str(exc)
        return None

    for result in run_members(group, body):
        seconds, message = result
        assert seconds < 10.0       # at once, not after the group's 60 s timeout
        assert message == ("allreduce #0: the members' arguments differ: rank 0: allreduce "
                           "(sum) float32 (3,); rank 1: allreduce (sum) float32 (4,)")
    # still in step: the next collective works
    assert all(np.array_equal(v, [2.0]) for v in run_members(group, lambda c: c.allreduce([1.0])))

    def kinds(comm):
        try:
            return comm.allreduce(np.ones(2)) if comm.rank else comm.broadcast(np.ones(2))
        except coll.CollectiveMismatchError as exc:
            return str(exc)
    for message in run_members(group, kinds):
        assert "members called different collectives: rank 0: broadcast (root 0) float64 (2,); " \
            "rank 1: allreduce (sum) float64 (2,)" in message


def arrived(group, rank, seq=0):
    """Wait until ``rank`` of ``group`` waits in collective ``seq`` (an event, not a sleep)."""
    deadline = time.monotonic() + 30
    while True:
        with group._cond:
            rnd = group._rounds.get(seq)
            if rnd is not None and rnd.headers[rank] is not None:
                return
        assert time.monotonic() < deadline, f"rank {rank} never arrived"
        time.sleep(0.001)


@pytest.mark.filterwarnings("ignore::tnp_train.distribute.collective.CollectiveStallWarning")
def test_thread_group_names_the_missing_member_then_times_out_and_breaks(monkeypatch):
    # the warning at 0.1 s, the timeout 1 s after it: the waiting thread may wake up late on a
    # loaded machine, but not so late that it misses the warning
    monkeypatch.setenv("TNP_COLLECTIVE_WARN_AFTER", "0.1")
    group = coll.ThreadGroup(3, timeout_seconds=1.2)
    # member 1 waits in a thread, member 0 here (warnings are caught per process, so only
    # here), member 2 never comes
    other = []
    thread = threading.Thread(target=lambda: other.append(
        pytest.raises(coll.CollectiveTimeoutError, group.member(1).allreduce, np.ones(2))))
    t0 = time.perf_counter()          # before either member arrives: no timeout before t0 + 1.2
    thread.start()
    arrived(group, 1)
    with pytest.warns(coll.CollectiveStallWarning,
                      match=r"\[rank 0\] allreduce #0 \(sum\) has waited \d+\.\d s for rank 2 "
                            r"\(ranks \[0, 1\] arrived\); the job fails after 1.2 s"):
        with pytest.raises(coll.CollectiveTimeoutError) as info:
            group.member(0).allreduce(np.ones(2))
    # not before the timeout; after it, soon (10x the timeout: a loaded machine)
    assert 1.2 <= time.perf_counter() - t0 < 12.0
    thread.join(30)
    message = str(info.value)
    assert re.search(r"allreduce #0 \(sum\) timed out after \d+\.\d s", message), message
    assert "rank 2 never arrived (ranks [0, 1] arrived)" in message
    assert "rank 2 never arrived" in str(other[0].value)
    assert isinstance(group.broken, coll.CollectiveTimeoutError)
    with pytest.raises(coll.CollectiveError, match="the thread group ended earlier"):
        group.member(2).allreduce(np.ones(2))


def test_thread_group_abort_ends_every_waiting_member():
    group = coll.ThreadGroup(2, timeout_seconds=60)

    def body(comm):
        if comm.rank == 1:
            arrived(group, 0)               # rank 0 waits in the all-reduce
            comm.abort(3)
        comm.allreduce(np.ones(2))

    t0 = time.perf_counter()
    waiting, aborting = run_members(group, body, timeout=30)
    assert time.perf_counter() - t0 < 30    # the abort ended the wait, not the 60 s timeout
    assert isinstance(aborting, coll.CollectiveError) and "rank 1 aborted" in str(aborting)
    assert isinstance(waiting, coll.CollectiveError)
    assert "the thread group ended: rank 1 aborted its thread group (errorcode 3)" in str(waiting)


def test_thread_group_events_carry_the_member_rank():
    events = []
    group = coll.ThreadGroup(2)
    with coll.subscribe(events.append):
        run_members(group, lambda c: c.allreduce(np.ones(4, np.float32), "max"))
    assert sorted(e["rank"] for e in events) == [0, 1]
    for e in events:
        assert (e["name"], e["op"], e["seq"], e["bytes"]) == ("allreduce", "max", 0, 16)
        assert e["t_start"] <= e["t_wait_end"] <= e["t_end"]


# -- the bucketer --------------------------------------------------------------------------

FORWARD = [("l0/kernel", (6, 5)), ("l0/bias", (5,)), ("l1/kernel", (5, 4)), ("l1/bias", (4,)),
           ("l2/kernel", (4, 2)), ("l2/bias", (2,))]


def test_bucketer_layout_is_reverse_order_and_closes_at_the_limit():
    b = coll.GradientBucketer(coll.LocalCommunicator(), bucket_bytes=100, first_bucket_bytes=30)
    b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
    # bytes in reverse: l2/bias 8 + l2/kernel 32 = 40 >= 30 closes the first bucket; l1/bias 16
    # + l1/kernel 80 + l0/bias 20 = 116 >= 100 the second; l0/kernel 120 alone
    assert b.bucket_keys == [["l2/bias", "l2/kernel"], ["l1/bias", "l1/kernel", "l0/bias"],
                             ["l0/kernel"]]
    # a float64 variable gets buckets of its own dtype
    b.start([("a", np.empty(3, np.float64)), ("b", np.empty(3, np.float32))])
    assert b.bucket_keys == [["b"], ["a"]]


@pytest.mark.parametrize("compression", [None, "fp16", "bf16"])
def test_bucketer_sums_like_one_allreduce_per_gradient(compression):
    group = coll.ThreadGroup(2)
    rngs = [np.random.default_rng(k) for k in range(2)]
    grads = [{k: rng.standard_normal(s).astype(np.float32) for k, s in FORWARD} for rng in rngs]

    def body(comm):
        b = coll.GradientBucketer(comm, bucket_bytes=64, first_bucket_bytes=16,
                                  compression=compression)
        b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
        order = [k for k, _ in reversed(FORWARD)]
        if comm.rank == 1:
            order = order[1::2] + order[::2]      # another arrival order
        out = []
        for _ in range(2):                       # two steps on one layout
            for k in order:
                b.gradient_ready(k, grads[comm.rank][k])
            out.append(b.finish())
        return out

    for steps in run_members(group, body):
        for got in steps:
            assert set(got) == {k for k, _ in FORWARD}
            for k, s in FORWARD:
                want = grads[0][k] + grads[1][k]
                assert got[k].dtype == np.float32 and got[k].shape == s
                if compression is None:
                    assert np.array_equal(got[k], want)
                else:
                    # each input and the sum rounded to the wire dtype
                    tol = 2 ** -10 if compression == "fp16" else 2 ** -7
                    np.testing.assert_allclose(got[k], want, rtol=4 * tol, atol=8 * tol)
                    assert not np.array_equal(got[k], want)   # it did travel compressed


def test_bucketer_missing_gradients_count_as_zero_and_absent_ones_are_left_out():
    group = coll.ThreadGroup(2)

    def body(comm):
        b = coll.GradientBucketer(comm, bucket_bytes=1 << 20)
        b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
        for k, s in reversed(FORWARD):
            if k == "l0/kernel" or (k == "l1/bias" and comm.rank == 0):
                continue
            b.gradient_ready(k, np.ones(s, np.float32))
        return b.finish()

    for got in run_members(group, body):
        assert "l0/kernel" not in got                          # no rank had it
        assert np.array_equal(got["l1/bias"], np.ones(4))      # one rank had it
        assert np.array_equal(got["l2/kernel"], np.full((4, 2), 2.0))


def test_bucketer_slots_take_gradients_written_in_place_without_a_copy():
    group = coll.ThreadGroup(2)
    rngs = [np.random.default_rng(10 + k) for k in range(2)]
    grads = [{k: rng.standard_normal(s).astype(np.float32) for k, s in FORWARD} for rng in rngs]

    def body(comm):
        b = coll.GradientBucketer(comm, bucket_bytes=64, first_bucket_bytes=16)
        b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
        out = []
        for step in range(2):                    # slots again on the next step
            if step:
                b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
            for k, s in reversed(FORWARD):
                slot = b.slot(k)
                assert slot.shape == s and slot.dtype == np.float32 and slot.flags.writeable
                if k == "l1/bias":               # a slot lent but another array handed over
                    b.gradient_ready(k, grads[comm.rank][k] * (step + 1))
                    continue
                np.multiply(grads[comm.rank][k], step + 1, out=slot)
                b.gradient_ready(k, slot)
                # the peers read it from now on: this rank can no longer change it
                assert not slot.flags.writeable
                with pytest.raises(ValueError, match="read-only"):
                    slot += 1
                assert b.slot(k) is None         # handed over already
            out.append(b.finish())
        return out

    for steps in run_members(group, body):
        for step, got in enumerate(steps):
            for k, s in FORWARD:
                assert np.array_equal(got[k], (grads[0][k] + grads[1][k]) * (step + 1)), k


@pytest.mark.parametrize("compression", [None, "fp16"])
def test_bucketer_carries_extras_of_the_last_buckets_dtype_at_its_end(compression):
    # a model's metric state rides the round that ends the step: the extras of the last
    # bucket's dtype (uncompressed) are summed there, the others are left to the caller
    group = coll.ThreadGroup(2)
    rngs = [np.random.default_rng(20 + k) for k in range(2)]
    grads = [{k: rng.standard_normal(s).astype(np.float32) for k, s in FORWARD} for rng in rngs]

    def body(comm):
        b = coll.GradientBucketer(comm, bucket_bytes=64, first_bucket_bytes=16,
                                  compression=compression)
        out = []
        for step in range(3):
            extras = [np.full((), step + comm.rank + 1, np.float32),
                      np.full((2, 2), 10.0 * (comm.rank + 1), np.float64),
                      np.arange(3, dtype=np.float32) * (comm.rank + 1)]
            if step == 2:
                extras = extras[2:]              # another set of extras: laid out again
            carried = b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD],
                              extras=extras)
            for e in extras:                     # copied in: changing them now changes nothing
                e[...] = -1
            for k, s in reversed(FORWARD):
                b.gradient_ready(k, grads[comm.rank][k])
            got = b.finish()
            out.append((carried, got, b.extra_sums, b.bucket_keys))
        return out

    for steps in run_members(group, body):
        for step, (carried, got, sums, keys) in enumerate(steps):
            assert keys[-1][-1] == "l0/kernel"   # the gradients are laid out as without extras
            for k, s in FORWARD:
                if compression is None:
                    assert np.array_equal(got[k], grads[0][k] + grads[1][k]), k
            if compression is not None:          # the last bucket travels as float16
                assert carried == [False] * len(carried) and sums == [None] * len(carried)
                continue
            if step < 2:
                assert carried == [True, False, True]
                assert sums[0].shape == () and float(sums[0]) == 2 * step + 3
                assert sums[1] is None           # float64: not the bucket's dtype
                assert np.array_equal(sums[2], np.arange(3, dtype=np.float32) * 3)
            else:
                assert carried == [True]
                assert np.array_equal(sums[0], np.arange(3, dtype=np.float32) * 3)
            assert all(x is None or x.dtype == np.float32 for x in sums)


def test_bucketer_finish_hands_over_each_buckets_sums_as_it_completes():
    group = coll.ThreadGroup(2)
    rngs = [np.random.default_rng(30 + k) for k in range(2)]
    grads = [{k: rng.standard_normal(s).astype(np.float32) for k, s in FORWARD} for rng in rngs]

    def body(comm):
        b = coll.GradientBucketer(comm, bucket_bytes=64, first_bucket_bytes=16)
        b.start([(k, np.empty(s, np.float32)) for k, s in FORWARD])
        for k, s in reversed(FORWARD):
            if k != "l1/bias" or comm.rank:      # one rank's gradient missing: still summed
                b.gradient_ready(k, grads[comm.rank][k])
        seen = []
        got = b.finish(each=lambda sums: seen.append({k: v.copy() for k, v in sums.items()}))
        return seen, got, b.bucket_keys

    for seen, got, keys in run_members(group, body):
        assert [sorted(part) for part in seen] == [sorted(k) for k in keys]   # bucket order
        for part in seen:
            for k, v in part.items():
                want = grads[1][k] + (grads[0][k] if k != "l1/bias" else 0)
                assert np.array_equal(v, want) and np.array_equal(got[k], want), k
    b = coll.GradientBucketer(coll.LocalCommunicator(), compression="fp16")
    b.start([("a", np.empty(4, np.float32))])
    with pytest.raises(ValueError, match="each= needs uncompressed buckets"):
        b.finish(each=print)


def test_bucketer_lends_no_slot_it_cannot():
    b = coll.GradientBucketer(coll.LocalCommunicator(), compression="fp16")
    b.start([("a", np.empty(4, np.float32)), ("i", np.empty(3, np.int64))])
    assert b.slot("a") is None                   # the bucket holds float16: no slot to write
    assert b.slot("i").dtype == np.int64         # integers are not compressed
    assert b.slot("nope") is None
    b.gradient_ready("a", np.ones(4, np.float32))
    b.gradient_ready("i", np.arange(3))
    got = b.finish()
    assert np.array_equal(got["a"], np.ones(4)) and np.array_equal(got["i"], np.arange(3))


def test_bucketer_refuses_what_it_cannot_place():
    b = coll.GradientBucketer(coll.LocalCommunicator())
    with pytest.raises(TypeError, match="keys must be hashable"):
        b.start([([1], np.empty(2))])
    with pytest.raises(ValueError, match="a key appears twice"):
        b.start([("a", np.empty(2)), ("a", np.empty(2))])
    with pytest.raises(ValueError, match="unknown compression 'int8'"):
        coll.GradientBucketer(coll.LocalCommunicator(), compression="int8")
    b.start([("a", np.empty((2, 3), np.float32))])
    with pytest.raises(KeyError, match="'b' was not given to start"):
        b.gradient_ready("b", np.ones(2))
    with pytest.raises(ValueError, match=r"gradient of 'a' has shape \(3, 2\), expected \(2, 3\)"):
        b.gradient_ready("a", np.ones((3, 2), np.float32))
    b.gradient_ready("a", np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="'a' was given twice in one step"):
        b.gradient_ready("a", np.ones((2, 3), np.float32))
    got = b.finish()
    assert np.array_equal(got["a"], np.ones((2, 3)))


# -- independence ------------------------------------------------------------------------------

def test_the_layer_imports_neither_tnp_nor_mpi4py_at_import_time():
    for path in sorted(PKG.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top not in ("tnp", "tnp_train"), f"{path.name} imports {name}"
        for node in tree.body:                    # mpi4py only inside functions (lazily)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert not (mod or "").startswith("mpi4py"), f"{path.name} imports mpi4py"


def test_get_world_without_a_launcher_is_local_and_never_imports_mpi4py():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_", "PRTE_"))}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import sys\n"
            "from tnp_train.distribute.collective import get_world, LocalCommunicator\n"
            "w = get_world()\n"
            "assert isinstance(w, LocalCommunicator) and get_world() is w\n"
            "assert 'mpi4py' not in sys.modules\n"
            "print('ok', w.rank, w.size)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok 0 1", out.stdout + out.stderr


def test_mpi_result_buffers_are_reused_only_when_nothing_refers_to_them():
    from tnp_train.distribute.collective.mpi import _OutputPool
    pool = _OutputPool()
    first = pool.take(4000)
    result = first.view(np.float32).reshape(10, 100)
    del first
    assert pool.take(4000) is not result.base          # the result is alive
    part = result[3:5, ::2]                            # a view of a view keeps the buffer
    base_id = id(result.base)                          # (an id: a reference would keep it)
    del result
    assert id(pool.take(4000)) != base_id
    del part
    assert id(pool.take(4000)) == base_id              # nothing refers to it any more
    assert pool.take(8000).nbytes == 8000              # another size, another buffer


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_two_byte_floats_are_summed_through_float32_once(dtype):
    from tnp_train.distribute.collective.base import reduce_into, sum_in_order
    rng = np.random.default_rng(3)
    # magnitudes from 2**-20 to 2**14: sums that round, and parts of very different sizes
    parts = [(rng.standard_normal(4096) * 2.0 ** rng.integers(-20, 14, 4096)).astype(dtype)
             for _ in range(3)]
    # two parts: bit for bit NumPy's own addition in the dtype
    got = sum_in_order(parts[:2], np.empty_like(parts[0]))
    assert got.tobytes() == (parts[0] + parts[1]).tobytes()
    acc = parts[0].copy()
    assert reduce_into("sum", acc, parts[1]).tobytes() == got.tobytes()
    # three: the float32 sum, rounded once (float32 holds these three parts' sum exactly
    # or nearly; one rounding to the dtype at the end)
    once = (parts[0].astype(np.float32) + parts[1].astype(np.float32)
            + parts[2].astype(np.float32)).astype(dtype)
    assert sum_in_order(parts, np.empty_like(parts[0])).tobytes() == once.tobytes()
    # a sum beyond the range is inf, without a warning
    big = np.full(2, 60000, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(sum_in_order([big, big], np.empty_like(big))).all()
