"""tt.profiler.experimental's TF 2.4 API (start/stop, Profile, Trace, ProfilerOptions), the
recording seam tnp_train.utils.tracing, the files a run writes, level filtering, the bounded
buffer, collect(), the Python tracer and the clock offsets."""
import os
import threading
import time

import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute.collective import ThreadGroup
from tnp_train.profiler import recorder as recorder_mod
from tnp_train.profiler import session
from tnp_train.profiler.experimental import Profile, ProfilerOptions, Trace, start, stop
from tnp_train.utils import tracing

import trace_checks as tc

P = tt.profiler.experimental


pytestmark = pytest.mark.usefixtures("no_profiler_left")   # conftest.py


def _one_run(logdir):
    runs = tc.run_dirs(logdir)
    assert len(runs) == 1, runs
    return tc.run_files(runs[0])


def _trace_steps(n, inner=True):
    for i in range(n):
        with Trace("train", step_num=i, _r=1):
            if inner:
                with Trace("work", kind="inner"):
                    tnp.ones(4).sum()


# ---------------------------------------------------------------- the seam, without a profiler
def test_without_a_recorder_the_seam_records_nothing():
    assert tracing.get_recorder() is None
    s = tracing.span("x", "forward", a=1)
    assert s is tracing.NO_SPAN and tracing.span("y", "step") is s   # one shared object
    with s as entered:
        assert entered is s
    tracing.complete("x", "input", 0.0, 1.0)
    tracing.instant("x", "trace")
    assert not tracing.level(1)
    assert [tracing.level_of(c) for c in ("step", "trace", "forward", "collective", "op")] == \
        [1, 1, 2, 2, 3]


def test_namespace_and_options_mirror_tf():
    assert tt.profiler.experimental is P
    assert P.ProfilerOptions() == (2, 0, 1, None)    # TF 2.4's defaults
    assert P.ProfilerOptions._fields == ("host_tracer_level", "python_tracer_level",
                                         "device_tracer_level", "delay_ms")
    assert P.ProfilerOptions(host_tracer_level=3).host_tracer_level == 3
    assert session.check_options({"python_tracer_level": 1}) == ProfilerOptions(2, 1, 1, None)
    for bad, match in ((ProfilerOptions(host_tracer_level=4), "host_tracer_level"),
                       (ProfilerOptions(python_tracer_level=2), "python_tracer_level"),
                       (ProfilerOptions(device_tracer_level=True), "device_tracer_level"),
                       (ProfilerOptions(delay_ms=-1), "delay_ms"),
                       ({"host_level": 2}, "unknown fields")):
        with pytest.raises(ValueError, match=match):
            session.check_options(bad)
    with pytest.raises(TypeError, match="ProfilerOptions"):
        session.check_options((2, 0, 1, None))


def test_start_twice_and_stop_without_start_are_errors(tmp_path):
    with pytest.raises(RuntimeError, match="UnavailableError: .*No profiler is running"):
        stop()
    start(tmp_path)
    with pytest.raises(RuntimeError, match="AlreadyExistsError: Another profiler is running"):
        start(tmp_path / "other")
    with pytest.raises(RuntimeError, match="AlreadyExistsError"):
        session.collect(0.01)
    _trace_steps(1)
    assert stop() == tc.run_dirs(tmp_path)[0]       # the first session is intact
    with pytest.raises(RuntimeError, match="No profiler is running"):
        stop()
    assert not (tmp_path / "other").exists()


# ---------------------------------------------------------------- files and structure
def test_profile_writes_the_worker_and_merged_traces(tmp_path):
    with Profile(tmp_path) as p:
        assert isinstance(p, Profile) and session.is_running()
        _trace_steps(3)
    assert not session.is_running()
    run = tc.run_dirs(tmp_path)[0]
    # TF's folder convention: logdir/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.<rank>...
    assert os.path.dirname(run) == str(tmp_path / "plugins" / "profile")
    assert len(os.path.basename(run).split("_")) == 6
    workers, merged = tc.run_files(run)
    (name, trace), = workers.items()
    meta = trace["metadata"]
    assert name == f"{meta['host']}.0.trace.json.gz"
    assert meta["rank"] == 0 and meta["clock_offset_us"] == 0.0 and meta["dropped_events"] == 0
    assert meta["steps"] == 3 and meta["options"] == ProfilerOptions()._asdict()
    for t in (trace, merged):
        tc.check_structure(t)
    names = {(e["name"], e["args"]["name"]) for e in trace["traceEvents"] if e["ph"] == "M"
             and e["name"] in ("process_name", "thread_name")}
    assert names == {("process_name", f"worker 0 ({meta['host']})"), ("thread_name", "main")}
    steps = tc.spans(trace, "step")
    assert [(s["name"], s["args"]["step_num"]) for s in steps] == [("train", i) for i in range(3)]
    work = tc.spans(trace, "trace")
    assert [w["args"] for w in work] == [{"kind": "inner"}] * 3
    assert all(tc.inside(w, s) for w, s in zip(work, steps))
    # one worker: the merged trace is the same events on the same clock
    assert sorted((e["name"], e["ts"]) for e in tc.spans(merged)) == \
        sorted((e["name"], e["ts"]) for e in tc.spans(trace))


def test_stop_without_save_writes_nothing(tmp_path):
    start(tmp_path)
    _trace_steps(2)
    assert stop(save=False) is None
    assert tc.run_dirs(tmp_path) == []


def test_a_span_open_at_stop_is_closed_there_and_marked(tmp_path):
    start(tmp_path)
    with Trace("train", step_num=0, _r=1):
        with Trace("cut"):
            stop()
    workers, _ = _one_run(tmp_path)
    trace, = workers.values()
    cut, = tc.spans(trace, "trace")
    step, = tc.spans(trace, "step")
    assert cut["args"] == {"truncated": True} and step["args"]["truncated"] is True
    assert tc.inside(cut, step)
    tc.check_structure(trace)


def test_a_span_left_by_an_exception_records_it(tmp_path):
    with Profile(tmp_path):
        with pytest.raises(KeyError):
            with Trace("failing"):
                raise KeyError("x")
    workers, _ = _one_run(tmp_path)
    span, = tc.spans(next(iter(workers.values())), "trace")
    assert span["args"] == {"error": "KeyError"}


# ---------------------------------------------------------------- levels
def _cats_at(tmp_path, level):
    logdir = tmp_path / f"level{level}"
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2),
                           tt.layers.Lambda(lambda t: tnp.tanh(t) * 2.0, name="scaled_tanh")])
    model.compile(optimizer="sgd", loss="mse")
    x = tnp.ones((8, 3), dtype="float32")
    with Profile(logdir, ProfilerOptions(host_tracer_level=level)):
        model.fit(x, tnp.zeros((8, 2), dtype="float32"), batch_size=4, verbose=0)
        with tracing.span("custom", "checkpoint"):
            pass
    workers, merged = _one_run(logdir)
    trace, = workers.values()
    return {e["cat"] for e in tc.check_structure(trace)}, trace


def test_host_tracer_level_filters_categories(tmp_path):
    cats = {level: _cats_at(tmp_path, level)[0] for level in (0, 1, 2, 3)}
    assert cats[0] == set()
    # the second step is compiled: a call of train_function (level 1), its markers' spans
    assert cats[1] == {"step", "function"}
    assert cats[2] == {"step", "function", "input", "forward", "backward", "optimizer",
                       "checkpoint"}
    assert cats[3] == cats[2] | {"op"}


def test_level_3_ops_are_timed_inside_their_layer(tmp_path):
    _, trace = _cats_at(tmp_path, 3)
    ops = tc.spans(trace, "op")
    forward = tc.spans(trace, "forward")
    lam = [f for f in forward if f["name"] == "scaled_tanh"]
    assert len(lam) == 2 and lam[0]["args"] == {"class": "Lambda"}      # one per step
    # the first step (eager): the layer's own operations, timed inside its forward span
    assert [o["name"] for o in ops if tc.inside(o, lam[0])] == ["tanh", "multiply"]
    # the second (compiled): the program's kernels and nodes, timed where they run; the
    # layer's operations are fused with the loss's (the kernel runs where its last one was)
    (call,) = tc.spans(trace, "function")
    inside = [o for o in ops if tc.inside(o, call)]
    assert inside and all(o["args"] == {"compiled": True} for o in inside)
    kernel, = [o for o in inside if "tanh" in o["name"]]
    assert kernel["name"].startswith("fused kernel") and "square" in kernel["name"]
    loss = [f for f in forward if f["name"] == "loss" and tc.inside(f, call)]
    assert len(loss) == 1 and tc.inside(kernel, loss[0])
    assert tnp.extend.op_listeners() == []                     # removed at stop


# ---------------------------------------------------------------- the bounded buffer
def test_the_buffer_is_bounded_and_counts_what_it_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder_mod, "DEFAULT_MAX_EVENTS", 50)
    start(tmp_path)
    _trace_steps(100)                     # 200 spans
    with pytest.warns(RuntimeWarning, match="150 events were dropped"):
        stop()
    workers, merged = _one_run(tmp_path)
    trace, = workers.values()
    assert len(tc.spans(trace)) == 50
    assert trace["metadata"]["dropped_events"] == 150 and trace["metadata"]["max_events"] == 50
    assert merged["metadata"]["dropped_events"] == 150
    tc.check_structure(trace)


# ---------------------------------------------------------------- collect (the capture server's)
def test_collect_records_other_threads_while_they_run(tmp_path):
    stop_flag = threading.Event()
    done = []

    def train():
        i = 0
        while not stop_flag.is_set():
            with Trace("train", step_num=i, _r=1):
                time.sleep(0.002)
            i += 1
        done.append(i)

    worker = threading.Thread(target=train, name="trainer")
    worker.start()
    try:
        trace = session.collect(0.2, ProfilerOptions(host_tracer_level=1))
    finally:
        stop_flag.set()
        worker.join()
    assert not session.is_running() and tracing.get_recorder() is None
    tc.check_structure(trace)
    steps = tc.spans(trace, "step")
    # 0.2 s of 2 ms steps (about 100 on a quiet machine), while the thread went on and finished
    # afterwards; at least 5 is what a loaded machine still manages (40 ms a step)
    assert 5 <= len(steps) < done[0]
    nums = [s["args"]["step_num"] for s in steps]
    assert nums == list(range(nums[0], nums[0] + len(nums)))
    assert set(tc.thread_names(trace).values()) >= {"trainer"}
    assert trace["metadata"]["steps"] == len(steps)
    assert tc.run_dirs(tmp_path) == [] and not os.listdir(tmp_path)      # no files
    with pytest.raises(ValueError, match="duration_s"):
        session.collect(0)


# ---------------------------------------------------------------- the Python tracer
def test_python_tracer_spans_python_functions(tmp_path):
    def leaf():
        return sum(range(10))

    def outer_function():
        return leaf() + leaf()

    with Profile(tmp_path, ProfilerOptions(host_tracer_level=1, python_tracer_level=1)):
        with Trace("train", step_num=0, _r=1):
            outer_function()
    assert threading.getprofile() is None
    workers, _ = _one_run(tmp_path)
    trace, = workers.values()
    tc.check_structure(trace)
    py = tc.spans(trace, "python")
    outer = [e for e in py if e["name"].startswith("test_python_tracer_spans_python_functions."
                                                   "<locals>.outer_function (")]
    leaves = [e for e in py if ".<locals>.leaf (" in e["name"]]
    assert len(outer) == 1 and len(leaves) == 2
    assert all(tc.inside(leaf_, outer[0]) for leaf_ in leaves)
    assert tc.inside(outer[0], tc.spans(trace, "step")[0])
    # the profiler's own functions are not traced
    assert not any("recorder.py" in e["name"] or "tracing.py" in e["name"] for e in py)


# ---------------------------------------------------------------- clocks
def test_clock_shift_hook_moves_this_process_clock(tmp_path, monkeypatch):
    monkeypatch.setenv("TNP_PROFILER_CLOCK_SHIFT_US", "50000")
    t0 = time.perf_counter() * 1e6
    with Profile(tmp_path):
        _trace_steps(1, inner=False)
    t1 = time.perf_counter() * 1e6
    workers, _ = _one_run(tmp_path)
    step, = tc.spans(next(iter(workers.values())), "step")
    assert t0 + 50_000 <= step["ts"] <= t1 + 50_000
    monkeypatch.setenv("TNP_PROFILER_CLOCK_SHIFT_US", "soon")
    with pytest.raises(ValueError, match="TNP_PROFILER_CLOCK_SHIFT_US"):
        start(tmp_path)


def test_clock_offsets_between_ranks_are_estimated():
    # two ranks of a thread group, rank 1's clock 1000 s ahead: its offset undoes that, to
    # within the round trip of the exchange, which a loaded machine stretches (so 1 s, not 1 ms)
    group = ThreadGroup(2, timeout_seconds=20)
    out = [None, None]

    def rank(r):
        shift = 1e9 * r
        out[r] = session.estimate_clock_offset(
            group.member(r), lambda: time.perf_counter() * 1e6 + shift)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert out[0] == 0.0
    assert abs(out[1] + 1e9) < 1e6, out
