"""A compiled fit under the profiler: the step keeps running compiled (the same program, the
same weights), with a train_function span per call, the layers', backward's and optimizer's
spans from the program's markers at level 2, its kernels' and nodes' spans at level 3; and no
span is recorded while no profiler runs."""
import numpy as np
import pytest

import tnp_train as tt
import tnp_train.callbacks.tensorboard as tb_mod
from tnp_train.profiler import report
from tnp_train.profiler.experimental import ProfilerOptions, start, stop
from tnp_train.utils import tracing

import trace_checks as tc

RNG = np.random.default_rng(1)
X = RNG.standard_normal((64, 6)).astype("float32")
Y = RNG.integers(0, 3, 64)
STEPS = 8                     # batch_size=8: 8 steps per epoch


pytestmark = pytest.mark.usefixtures("no_profiler_left")   # conftest.py


def _model():
    model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", name="hidden"),
                           tt.layers.Dense(3, name="logits")])
    model.set_weights([np.linspace(-1, 1, w.size, dtype="float32").reshape(w.shape)
                       for w in model.get_weights()])
    model.compile(optimizer=tt.optimizers.SGD(0.1, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _fit(model, epochs=1, **kw):
    model.fit(X, Y, batch_size=8, epochs=epochs, verbose=0, shuffle=False, **kw)
    return model


def _trace(logdir):
    (run,) = tc.run_dirs(logdir)
    workers, _ = tc.run_files(run)
    (trace,) = workers.values()
    tc.check_structure(trace)
    return trace


def _train_function(model):
    return model._step_functions["train"][1]


def _profiled_fit(logdir, level, epochs=1):
    model = _model()
    start(str(logdir), ProfilerOptions(host_tracer_level=level))
    _fit(model, epochs)
    stop()
    return model, _trace(logdir)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_compiled_fit_under_the_profiler_gives_the_unprofiled_weights(tmp_path, level):
    plain = _fit(_model())
    model, trace = _profiled_fit(tmp_path, level)
    assert model.step_compilation == {"train": "compiled"}
    for a, b in zip(model.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)
    steps = tc.spans(trace, "step")
    calls = tc.spans(trace, "function")
    assert len(steps) == STEPS
    # a call of the compiled step per step, from the second (the first builds the state)
    assert [c["name"] for c in calls] == ["train_function"] * (STEPS - 1)
    assert [sum(tc.inside(c, s) for c in calls) for s in steps] == [0] + [1] * (STEPS - 1)
    assert [bool(c["args"].get("traced")) for c in calls] == [True] + [False] * (STEPS - 2)


def test_level_2_spans_of_the_compiled_step(tmp_path):
    model, trace = _profiled_fit(tmp_path, 2)
    calls = tc.spans(trace, "function")
    for call in calls[1:]:              # replays (the first call also traced)
        inner = [e for e in tc.spans(trace, tid=call["tid"]) if e is not call
                 and tc.inside(e, call)]
        by_cat = {}
        for e in inner:
            by_cat.setdefault(e["cat"], []).append(e["name"])
        assert sorted(by_cat["forward"]) == sorted([model.name, "hidden", "logits", "loss"])
        assert by_cat["backward"] == ["GradientTape.gradient",
                                      "_xent._sparse_logits_traced (backward)"]
        assert by_cat["optimizer"] == ["SGD.apply_gradients"]
        assert "op" not in by_cat           # level 3 only
        fwd = {e["name"]: e for e in inner if e["cat"] == "forward"}
        tape = next(e for e in inner if e["name"] == "GradientTape.gradient")
        opt = next(e for e in inner if e["cat"] == "optimizer")
        # in program order, nested as the traced code opened them
        assert tc.inside(fwd["hidden"], fwd[model.name]) and \
            tc.inside(fwd["logits"], fwd[model.name])
        assert fwd["hidden"]["ts"] + fwd["hidden"]["dur"] <= fwd["logits"]["ts"] + tc.EPS_US
        assert fwd[model.name]["ts"] + fwd[model.name]["dur"] <= fwd["loss"]["ts"] + tc.EPS_US
        assert fwd["loss"]["ts"] + fwd["loss"]["dur"] <= tape["ts"] + tc.EPS_US
        assert tape["ts"] + tape["dur"] <= opt["ts"] + tc.EPS_US
    assert _train_function(model).experimental_get_tracing_count() == 1


def test_level_3_times_each_kernel_and_node_of_the_program(tmp_path):
    model, trace = _profiled_fit(tmp_path, 3)
    calls = tc.spans(trace, "function")
    ops = tc.spans(trace, "op")
    program = _train_function(model)._jit
    (prog,) = [p for p in program._cache.values() if hasattr(p, "groups")]
    kernels = len(prog.groups)
    assert kernels >= 1
    for call in calls[1:]:
        inside = [o for o in ops if tc.inside(o, call)]
        assert all(o["args"] == {"compiled": True} for o in inside)
        names = [o["name"] for o in inside]
        # one span per kernel call, one per other node of the program (markers are not nodes)
        assert sum(n.startswith("fused kernel k") for n in names) == kernels
        fused = {n.id for g in prog.groups for n in g.nodes}
        others = [n for n in prog.graph.nodes if n.id not in fused and n.observe_level is None]
        assert len(inside) == kernels + len(others)
        assert "matmul" in names
    # the breakdown still finds the parts: an op span counts for the span around it
    steps = report.report(tmp_path)["workers"]["0"]["steps"]
    assert all(s["forward_ms"] > 0 and s["backward_ms"] > 0 and s["optimizer_ms"] > 0
               for s in steps[2:])


def test_the_step_breakdown_of_a_compiled_fit(tmp_path):
    _profiled_fit(tmp_path, 2, epochs=2)
    rep = report.report(tmp_path)
    steps = rep["workers"]["0"]["steps"]
    assert len(steps) == 2 * STEPS
    parts = ["input_ms"] + [c + "_ms" for c in report.CATEGORIES if c != "input"]
    for s in steps[2:]:                   # replays of the compiled step
        assert s["forward_ms"] > 0 and s["backward_ms"] > 0 and s["optimizer_ms"] > 0
        assert abs(sum(s[k] for k in set(parts)) - s["step_ms"]) < 0.01
    assert "bottleneck" in report.format_text(rep)


def test_a_compiled_step_records_nothing_without_a_profiler(tmp_path):
    model, _ = _profiled_fit(tmp_path / "a", 3)     # traced under the profiler
    rec = tracing.get_recorder()
    assert rec is None
    tf = _train_function(model)
    # the recorder of the finished session: closed, and no replay writes into it any more
    start(str(tmp_path / "b"), ProfilerOptions(host_tracer_level=2))
    old = tracing.get_recorder()
    stop()
    n = len(old.events)
    _fit(model)                                       # no profiler: the plain replay
    assert len(old.events) == n
    assert tracing.active_recorder is None and tracing.get_recorder() is None
    # a session started later gets only its own steps' spans
    start(str(tmp_path / "c"), ProfilerOptions(host_tracer_level=2))
    stop()
    trace = _trace(tmp_path / "c")
    assert tc.spans(trace) == []
    assert tf.experimental_get_tracing_count() == 1     # one trace, profiled or not


def test_spans_are_never_recorded_by_the_plain_replay(tmp_path, monkeypatch):
    model = _fit(_model())                       # traced without a profiler
    calls = []
    # a recorder installed behind the profiler's back, without the replay observer: the
    # plain replay (no markers in it) must record nothing at all into it
    class Spy:
        level = 3
        closed = False

        def span(self, *a):
            calls.append(a)
            return tracing.NO_SPAN

        def complete(self, *a):
            calls.append(a)

        def instant(self, *a):
            calls.append(a)

    tracing.set_recorder(Spy())
    try:
        tf = _train_function(model)
        tf(next(iter(tt.data.Dataset.from_tensor_slices((X, Y)).batch(8))))
    finally:
        tracing.set_recorder(None)
    assert [c[1] for c in calls] == ["function"]     # the call's own span, no marker's


def test_tensorboard_profile_batch_profiles_the_compiled_step(tmp_path, monkeypatch):
    monkeypatch.setattr(tb_mod, "_summary_writer_class", lambda: tc.NoWriter)
    model = _model()
    cb = tt.callbacks.TensorBoard(log_dir=tmp_path, profile_batch=(3, 5))
    _fit(model, 2, callbacks=[cb])
    trace = _trace(tmp_path)
    steps = tc.spans(trace, "step")
    assert [s["args"]["step_num"] for s in steps] == [2, 3, 4]
    calls = tc.spans(trace, "function")
    assert len(calls) == 3 and not any(c["args"].get("traced") for c in calls)
    assert {e["name"] for e in tc.spans(trace, "forward")} >= {"hidden", "logits", "loss"}
    assert _train_function(model).experimental_get_tracing_count() == 1
    assert model.step_compilation == {"train": "compiled"}


