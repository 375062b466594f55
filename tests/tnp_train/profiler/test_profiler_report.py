"""The step-time breakdown on hand-made traces whose answers are known by construction: the
parts sum to the step, the innermost span wins, op/python spans inherit, only the main thread
counts; finding the traces of a logdir; the text tables."""
import gzip
import json
import os

import pytest

from prof_traces import X, fit_step, fit_steps, worker_trace, write_run
from tnp_train.profiler import report as R
from tnp_train.profiler.merge import merge_traces, write_trace

PARTS = [c + "_ms" for c in R.CATEGORIES]


def steps_of(traces, rank="0"):
    return R.analyze(traces)["workers"][rank]["steps"]


def only_step(events, **kw):
    steps = steps_of([worker_trace(events, **kw)])
    assert len(steps) == 1
    return steps[0]


def test_fit_layout_known_parts_sum_to_step():
    # fit_step: 0.5 ms of untraced gap before input, after input, after forward, after backward
    evs, _ = fit_step(0.0, 0, input_ms=1, forward_ms=3, backward_ms=4, optimizer_ms=1,
                      allreduce_ms=2, wait_ms=5, gap_ms=0.5)
    s = only_step(evs)
    assert s == {"step": 0, "step_ms": 18.0, "input_ms": 1.0, "forward_ms": 3.0,
                 "backward_ms": 4.0, "optimizer_ms": 1.0, "allreduce_ms": 2.0, "wait_ms": 5.0,
                 "checkpoint_ms": 0.0, "other_ms": 2.0, "name": "train_step"}
    assert sum(s[k] for k in PARTS) == pytest.approx(s["step_ms"], abs=1e-9)


def test_every_step_of_a_run_sums_and_counts():
    steps = steps_of([worker_trace(fit_steps(7, input_ms=0.3, gap_ms=0.1))])
    assert [s["step"] for s in steps] == list(range(7))
    for s in steps:
        assert sum(s[k] for k in PARTS) == pytest.approx(s["step_ms"], abs=1e-6)
        assert s["other_ms"] == pytest.approx(0.4)


def test_innermost_span_wins():
    # step [0,10]: forward [1,9] holding a layer forward [2,8] holding a copy [3,4]
    evs = [X("step", "step", 0, 10), X("model", "forward", 1, 8), X("dense", "forward", 2, 6),
           X("h2d", "copy", 3, 1), X("ckpt", "checkpoint", 5, 2)]
    s = only_step(evs)
    assert s["forward_ms"] == pytest.approx(8 - 1 - 2)     # the copy and the checkpoint inside
    assert s["checkpoint_ms"] == pytest.approx(2)
    assert s["other_ms"] == pytest.approx(2 + 1)            # outside forward, and the copy


def test_op_and_python_spans_inherit_their_nearest_non_op_ancestor():
    evs = [X("step", "step", 0, 20),
           X("dense", "forward", 0, 5), X("matmul", "op", 1, 2), X("add", "op", 1.5, 0.5),
           X("backward", "backward", 5, 5), X("py_fn", "python", 6, 3), X("mul", "op", 6.5, 1),
           X("apply", "optimizer", 10, 3), X("sub", "op", 11, 1),
           X("loss_add", "op", 14, 2),                      # directly under the step: other
           X("save", "checkpoint", 17, 2), X("write", "python", 17.5, 1)]
    s = only_step(evs)
    assert s["forward_ms"] == pytest.approx(5)
    assert s["backward_ms"] == pytest.approx(5)
    assert s["optimizer_ms"] == pytest.approx(3)
    assert s["checkpoint_ms"] == pytest.approx(2)
    assert s["other_ms"] == pytest.approx(20 - 15)


def test_trace_spans_and_unknown_categories_are_other_but_their_children_count():
    evs = [X("step", "step", 0, 10), X("preprocess", "trace", 0, 6), X("dense", "forward", 1, 2),
           X("mystery", "custom", 6, 2), X("h2d", "copy", 8, 1)]
    s = only_step(evs)
    assert s["forward_ms"] == pytest.approx(2)
    assert s["other_ms"] == pytest.approx(8)


def test_other_threads_are_not_summed():
    # the input pipeline's map worker is busy during the whole step on thread 1
    evs = [X("step", "step", 0, 10), X("dense", "forward", 2, 3),
           X("map", "input", -5, 20, tid=1), X("prefetch", "input", 0, 10, tid=2)]
    rep = R.analyze([worker_trace(evs, threads={0: "main", 1: "input pipeline",
                                                2: "prefetch"})])
    w = rep["workers"]["0"]
    assert w["steps"][0]["input_ms"] == 0.0
    assert w["steps"][0]["other_ms"] == pytest.approx(7)
    assert {t["name"]: t["busy_ms"] for t in w["threads"]} == {"input pipeline": 20.0,
                                                                "prefetch": 10.0}
    assert {(o["name"], o["calls"]) for o in w["ops"]} >= {("map", 1), ("prefetch", 1)}


def test_main_thread_without_thread_names_is_the_one_with_steps():
    evs = [X("step", "step", 0, 4, tid=7), X("dense", "forward", 1, 1, tid=7),
           X("dense", "forward", 0, 4, tid=3)]
    s = only_step(evs, threads={})
    assert s["forward_ms"] == pytest.approx(1)


def test_time_outside_steps_is_not_attributed_and_steps_keep_their_numbers():
    evs = [X("save", "checkpoint", 0, 5), X("step", "step", 5, 2, args={"step_num": 41}),
           X("next", "input", 7, 3), X("step", "step", 10, 2, args={"step_num": 42})]
    steps = steps_of([worker_trace(evs)])
    assert [(s["step"], s["step_ms"], s["input_ms"], s["checkpoint_ms"]) for s in steps] == [
        (41, 2.0, 0.0, 0.0), (42, 2.0, 0.0, 0.0)]


def test_steps_without_step_num_are_numbered_in_order():
    evs = [X("step", "step", 0, 1), X("step", "step", 2, 1), X("step", "step", 4, 1)]
    assert [s["step"] for s in steps_of([worker_trace(evs)])] == [0, 1, 2]


def test_equal_bounds_the_step_is_outer_and_an_op_inner():
    # a forward span with exactly the step's bounds, and an op with exactly the forward's
    evs = [X("dense", "forward", 0, 4), X("matmul", "op", 0, 4), X("step", "step", 0, 4)]
    s = only_step(evs)
    assert s["forward_ms"] == pytest.approx(4) and s["other_ms"] == 0.0


def test_a_step_inside_a_step_is_a_plain_span():
    evs = [X("outer", "step", 0, 10), X("inner", "step", 2, 4), X("d", "forward", 3, 1)]
    steps = steps_of([worker_trace(evs)])
    assert len(steps) == 1
    assert steps[0]["forward_ms"] == pytest.approx(1)
    assert steps[0]["other_ms"] == pytest.approx(9)


def test_a_span_overrunning_its_step_gives_the_step_only_its_overlap():
    # recorded out of order: the backward span ends 3 ms after its step's end
    evs = [X("step", "step", 0, 10), X("backward", "backward", 6, 7),
           X("step", "step", 11, 4), X("apply", "optimizer", 12, 1)]
    steps = steps_of([worker_trace(evs)])
    assert len(steps) == 2
    assert steps[0]["backward_ms"] == pytest.approx(4)
    # the later step is the innermost span from its start: the overrun is not its time
    assert steps[1]["backward_ms"] == 0.0 and steps[1]["optimizer_ms"] == pytest.approx(1)
    for s in steps:
        assert sum(s[k] for k in PARTS) == pytest.approx(s["step_ms"])


def test_zero_and_negative_durations_own_no_time():
    evs = [X("step", "step", 0, 3), X("mark", "forward", 1, 0), X("bad", "input", 2, -1)]
    s = only_step(evs)
    assert s["other_ms"] == pytest.approx(3)


def test_self_time_table():
    evs = []
    for n in range(3):
        e, _ = fit_step(n * 20.0, n, backward_ms=4, wait_ms=2, allreduce_ms=1)
        evs += e
    ops = {(o["name"], o["cat"]): o for o in R.analyze([worker_trace(evs)])["workers"]["0"]["ops"]}
    assert ("train_step", "step") not in ops                 # steps are the breakdown's rows
    bwd = ops[("backward", "backward")]
    assert (bwd["calls"], bwd["self_ms"], bwd["mean_self_ms"], bwd["total_ms"]) == (
        3, 12.0, 4.0, 21.0)
    assert ops[("wait", "wait")]["self_ms"] == 6.0


def test_merged_trace_gives_one_worker_per_rank_and_the_same_durations():
    t0 = worker_trace(fit_steps(2, wait_ms=3, allreduce_ms=1), rank=0, host="a")
    t1 = worker_trace(fit_steps(2, input_ms=4, allreduce_ms=1), rank=1, host="b",
                      offset_us=50_000.0)
    apart = R.analyze([t0, t1])
    merged = R.analyze([merge_traces([t0, t1])])
    assert set(merged["workers"]) == {"0", "1"}
    for rank in "01":
        assert merged["workers"][rank]["steps"] == apart["workers"][rank]["steps"]
    assert merged["workers"]["1"]["host"] == "b"
    assert merged["bottleneck"] == apart["bottleneck"]


def test_dropped_events_are_reported(tmp_path):
    tr = worker_trace(fit_steps(1), dropped=12)
    rep = R.analyze([tr])
    assert rep["dropped_events"] == 12 and rep["workers"]["0"]["dropped_events"] == 12
    assert "12 events were dropped" in R.format_text(rep)
    assert R.analyze([merge_traces([tr])])["dropped_events"] == 12


# --- finding the files ------------------------------------------------------------------------

def test_report_reads_the_newest_run_of_a_logdir(tmp_path):
    old = worker_trace(fit_steps(1))
    new = worker_trace(fit_steps(3))
    write_run(tmp_path, [old], run="2026_01_01_00_00_00")
    write_run(tmp_path, [new], run="2026_01_02_00_00_00")
    write_run(tmp_path, [old], run="2025_12_31_23_59_59_1")
    rep = R.report(tmp_path)
    assert rep["source"].endswith("2026_01_02_00_00_00")
    assert len(rep["workers"]["0"]["steps"]) == 3
    assert len(R.report(tmp_path, run="2026_01_01_00_00_00")["workers"]["0"]["steps"]) == 1
    with pytest.raises(FileNotFoundError, match="no run 'nope'"):
        R.report(tmp_path, run="nope")


def test_suffixed_run_of_the_same_second_is_newer(tmp_path):
    write_run(tmp_path, [worker_trace(fit_steps(1))], run="2026_01_01_00_00_00")
    write_run(tmp_path, [worker_trace(fit_steps(2))], run="2026_01_01_00_00_00_1")
    assert R.report(tmp_path)["source"].endswith("_00_1")


def test_run_folder_single_file_and_merged_fallback(tmp_path):
    t0 = worker_trace(fit_steps(2), rank=0, host="a")
    t1 = worker_trace(fit_steps(2), rank=1, host="b")
    folder = write_run(tmp_path, [t0, t1], merged=merge_traces([t0, t1]))
    # the per-worker files, not the merged one (which would count every worker twice)
    assert sorted(R.report(folder)["workers"]) == ["0", "1"]
    one = os.path.join(folder, "b.1.trace.json.gz")
    assert list(R.report(one)["workers"]) == ["1"]
    os.remove(os.path.join(folder, "a.0.trace.json.gz"))
    os.remove(one)
    assert sorted(R.report(folder)["workers"]) == ["0", "1"]      # from merged.trace.json.gz


def test_plain_json_and_bare_array_traces(tmp_path):
    tr = worker_trace(fit_steps(2))
    (tmp_path / "a.trace.json").write_text(json.dumps(tr))
    (tmp_path / "b.json").write_text(json.dumps(tr["traceEvents"]))
    assert len(R.report(tmp_path / "a.trace.json")["workers"]["0"]["steps"]) == 2
    assert len(R.report(tmp_path / "b.json")["workers"]["0"]["steps"]) == 2


def test_missing_or_empty_paths_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        R.report(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="no \\*.trace.json.gz"):
        R.report(tmp_path)
    (tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no trace files in any run"):
        R.report(tmp_path)
    bad = tmp_path / "bad.trace.json.gz"
    bad.write_bytes(gzip.compress(b"{not json"))
    with pytest.raises(ValueError, match="not a JSON trace"):
        R.report(bad)
    bad.write_bytes(gzip.compress(b'{"events": []}'))
    with pytest.raises(ValueError, match="no 'traceEvents'"):
        R.report(bad)


def test_text_report(tmp_path):
    tr = worker_trace(fit_steps(3, input_ms=1, forward_ms=3, backward_ms=4, optimizer_ms=1),
                      host="node7")
    write_trace(tmp_path / "node7.0.trace.json.gz", tr)
    text = R.format_text(R.report(tmp_path), top=2)
    lines = text.splitlines()
    assert lines[0] == f"run: {tmp_path}"
    assert lines[1].startswith("bottleneck: rank 0 is compute-bound")
    row = next(line for line in lines if line.startswith("0 "))
    assert row.split() == ["0", "node7", "3", "11.000", "1.000", "3.000", "4.000", "1.000",
                           "0.000", "0.000", "0.000", "2.000"]
    assert "worker 0 (node7): spans by self time (top 2 of 4)" in text
    assert [line.split()[0] for line in lines[-2:]] == ["backward", "dense"]
