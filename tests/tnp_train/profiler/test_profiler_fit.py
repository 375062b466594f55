"""The spans of a real Model.fit / evaluate / model.save under the profiler, the input-wait truth
test, the input pipeline's threads, and TensorBoard(profile_batch=)."""
import time

import numpy as np
import pytest

import tnp_train as tt
import tnp_train.callbacks.tensorboard as tb_mod
from tnp_train.profiler import session
from tnp_train.profiler.experimental import Profile, ProfilerOptions

import trace_checks as tc

RNG = np.random.default_rng(0)
X = RNG.standard_normal((48, 6)).astype("float32")
Y = RNG.integers(0, 3, 48)


pytestmark = pytest.mark.usefixtures("no_profiler_left")   # conftest.py


def _model(run_eagerly=None):
    model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", name="hidden"),
                           tt.layers.Dense(3, name="logits")])
    model.compile(optimizer=tt.optimizers.SGD(0.1),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=run_eagerly)
    return model


def _worker_trace(logdir):
    runs = tc.run_dirs(logdir)
    assert len(runs) == 1, runs
    workers, merged = tc.run_files(runs[0])
    (trace,) = workers.values()
    tc.check_structure(trace)
    tc.check_structure(merged)
    return trace


def _children(trace, parent, cat=None):
    return [e for e in tc.spans(trace, cat, tid=parent["tid"])
            if e is not parent and tc.inside(e, parent)]


@pytest.mark.parametrize("run_eagerly", [None, True], ids=["compiled", "eager"])
def test_fit_traces_every_step_with_its_parts(tmp_path, run_eagerly):
    model = _model(run_eagerly)
    with Profile(tmp_path):
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0)       # 6 steps per epoch
    trace = _worker_trace(tmp_path)
    steps = tc.spans(trace, "step")
    assert trace["metadata"]["steps"] == len(steps) == 12      # steps traced == steps run
    assert [s["name"] for s in steps] == ["train"] * 12
    assert [s["args"]["step_num"] for s in steps] == list(range(12))
    assert [(s["args"]["epoch_num"], s["args"]["batch"]) for s in steps] == \
        [(e, b) for e in range(2) for b in range(6)]
    names = tc.thread_names(trace)
    assert {s["tid"] for s in steps} == {0} and names[0] == "main"
    for i, s in enumerate(steps):
        inner = _children(trace, s)
        # the compiled step (from the second on: the first builds the state eagerly) is one
        # call of train_function, the spans of its program's markers inside it
        calls = [e for e in inner if e["cat"] == "function"]
        compiled = run_eagerly is None and i > 0
        assert [e["name"] for e in calls] == (["train_function"] if compiled else [])
        assert all(tc.inside(e, calls[0]) for e in inner
                   if e["cat"] in ("forward", "backward", "optimizer")) if compiled else True
        first = min(inner, key=lambda e: e["ts"])
        # the wait for the batch opens the step
        assert (first["name"], first["cat"]) == ("IteratorGetNext", "input")
        assert abs(first["ts"] - s["ts"]) < 0.01
        fwd = [e for e in inner if e["cat"] == "forward"]
        # the model's call and its layers', then the loss
        assert sorted(e["name"] for e in fwd) == sorted([model.name, "hidden", "logits", "loss"])
        model_call = next(e for e in fwd if e["name"] == model.name)
        assert all(tc.inside(e, model_call) for e in fwd if e["name"] in ("hidden", "logits"))
        loss = next(e for e in fwd if e["name"] == "loss")
        assert loss["ts"] >= model_call["ts"] + model_call["dur"] - tc.EPS_US
        backward = [e for e in inner if e["cat"] == "backward"]
        assert [e["name"] for e in backward if e["name"] == "GradientTape.gradient"] == \
            ["GradientTape.gradient"]
        # each hand-written backward (the fused Dense ops, the loss) inside the tape's pass
        hand = [e for e in backward if e["name"].endswith("(backward)")]
        if compiled:     # a compiled Dense is tnp operations (fused), the loss a primitive
            assert [e["name"] for e in hand] == ["_xent._sparse_logits_traced (backward)"]
        else:
            assert sorted(e["name"] for e in hand) == \
                ["_xent.crossentropy (backward)"] + ["dense._make_backward (backward)"] * 2
        tape = next(e for e in backward if e["name"] == "GradientTape.gradient")
        assert all(tc.inside(h, tape) for h in hand)
        (opt,) = [e for e in inner if e["cat"] == "optimizer"]
        assert opt["name"] == "SGD.apply_gradients" and opt["ts"] > tape["ts"] + tape["dur"]


def test_evaluate_steps_are_test_steps(tmp_path):
    model = _model()
    with Profile(tmp_path):
        model.evaluate(X, Y, batch_size=16, verbose=0)
    steps = tc.spans(_worker_trace(tmp_path), "step")
    assert [(s["name"], s["args"]["step_num"]) for s in steps] == [("test", i) for i in range(3)]


def test_input_wait_is_the_time_the_step_blocks_on_the_data(tmp_path):
    def slow(x, y):
        time.sleep(0.020)          # 20 ms to make each batch
        return x, y

    ds = tt.data.Dataset.from_tensor_slices((X, Y)).batch(8).map(slow)
    model = _model()
    model.fit(ds.take(1), verbose=0)                             # built outside the trace
    with Profile(tmp_path):
        model.fit(ds, epochs=1, verbose=0)
    trace = _worker_trace(tmp_path)
    steps = tc.spans(trace, "step")
    assert len(steps) == 6
    for s in steps:
        inputs = _children(trace, s, "input")
        wait = sum(e["dur"] for e in inputs) / 1e3
        assert wait >= 15.0, wait
        assert wait <= s["dur"] / 1e3


def test_input_pipeline_threads_get_their_own_rows(tmp_path):
    def slow(x, y):
        time.sleep(0.002)
        return x, y

    ds = tt.data.Dataset.from_tensor_slices((X, Y)).map(slow, num_parallel_calls=2) \
        .batch(8).prefetch(2)
    model = _model()
    with Profile(tmp_path):
        model.fit(ds, epochs=1, verbose=0)
    trace = _worker_trace(tmp_path)
    names = tc.thread_names(trace)
    rows = {}
    for e in tc.spans(trace, "input"):
        if e["tid"] != 0:
            rows.setdefault(names[e["tid"]], set()).add(e["name"])
    # the producer makes the 6 batches (and finds the end) on its thread
    assert rows.pop("input pipeline (tt.data.prefetch)") == {"prefetch"}
    assert len([e for e in tc.spans(trace, "input") if e["name"] == "prefetch"]) == 7
    # the map pool's threads each map whole chunks (which thread takes a chunk is a race)
    assert rows and set(rows) <= {"input pipeline (tt.data.map-0)",
                                  "input pipeline (tt.data.map-1)"}
    assert all(v == {"map"} for v in rows.values())
    maps = [e for e in tc.spans(trace, "input") if e["name"] == "map"]
    assert sum(e["args"]["elements"] for e in maps) == len(X)
    assert len(tc.spans(trace, "step")) == 6


def test_model_save_and_checkpoint_writes_are_checkpoint_spans(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    with Profile(tmp_path / "logs"):
        model.save(tmp_path / "model")
        tt.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    spans = tc.spans(_worker_trace(tmp_path / "logs"), "checkpoint")
    assert [e["name"] for e in spans] == ["save model", "write checkpoint", "write checkpoint"]
    assert tc.inside(spans[1], spans[0]) and not tc.inside(spans[2], spans[0])
    assert spans[2]["args"]["path"] == str(tmp_path / "ckpt")


# ---------------------------------------------------------------- TensorBoard(profile_batch=)
@pytest.fixture
def no_event_writer(monkeypatch):
    monkeypatch.setattr(tb_mod, "_summary_writer_class", lambda: tc.NoWriter)


def _profiled_steps(logdir):
    runs = tc.run_dirs(logdir)
    if not runs:
        return []
    assert len(runs) == 1, runs
    return [s["args"]["step_num"] for s in tc.spans(_worker_trace(logdir), "step")]


@pytest.mark.parametrize("profile_batch, steps", [
    (2, [1]),                 # TF's default: the second batch of the fit
    ((3, 8), [2, 3, 4, 5, 6, 7]),   # a range, counted over the whole fit (across the epoch)
    ("4,5", [3, 4]),          # TF's legacy string form
    (0, []),                  # off
    ((7, 20), [6, 7, 8, 9, 10, 11]),   # stopped when training ends
])
def test_tensorboard_profile_batch(no_event_writer, tmp_path, profile_batch, steps):
    model = _model()
    cb = tt.callbacks.TensorBoard(log_dir=tmp_path, profile_batch=profile_batch)
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[cb])
    assert _profiled_steps(tmp_path) == steps
    assert not session.is_running()


def test_tensorboard_profile_batch_errors_as_tf(no_event_writer, tmp_path):
    for bad in (-1, (3, 2), "2", (1, 2, 3), 2.0, (1, True), "a,b"):
        with pytest.raises(ValueError, match="profile_batch must be a non-negative integer"):
            tt.callbacks.TensorBoard(log_dir=tmp_path, profile_batch=bad)


def test_tensorboard_profile_batch_warns_if_a_profiler_runs(no_event_writer, tmp_path):
    model = _model()
    cb = tt.callbacks.TensorBoard(log_dir=tmp_path / "tb", profile_batch=1)
    with Profile(tmp_path / "mine", ProfilerOptions(host_tracer_level=1)):
        with pytest.warns(UserWarning, match="failed to start the profiler: AlreadyExistsError"):
            model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    assert len(tc.spans(_worker_trace(tmp_path / "mine"), "step")) == 6
    assert tc.run_dirs(tmp_path / "tb") == []


def test_the_report_keeps_evaluate_steps_apart(tmp_path):
    """fit with validation traces evaluate's steps too ("test"); the breakdown is of the
    training steps, the others are listed under eval_steps."""
    from tnp_train.profiler import report as rep
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 4)).astype("float32"), rng.integers(0, 2, 40)
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(2)])
    model.compile("sgd", loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    with tt.profiler.experimental.Profile(str(tmp_path)):
        model.fit(x, y, batch_size=10, epochs=1, validation_split=0.5, verbose=0)
    w = rep.report(str(tmp_path))["workers"]["0"]
    assert [s["name"] for s in w["steps"]] == ["train"] * 2
    assert [s["name"] for s in w["eval_steps"]] == ["test"] * 2


def test_mirrored_replica_threads_count_in_the_breakdown(tmp_path):
    """Under MirroredStrategy over two devices the main thread waits while the replica threads
    work: the breakdown takes replica 0's spans as the step's (forward and backward appear)."""
    from tnp_train.profiler import report as rep
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6)).astype("float32"), rng.integers(0, 3, 32)
    s = tt.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    with s.scope():
        model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8), tt.layers.Dense(3)])
        model.compile("sgd", loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    with tt.profiler.experimental.Profile(str(tmp_path)):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    w = rep.report(str(tmp_path))["workers"]["0"]
    assert len(w["steps"]) == 4
    for st in w["steps"]:
        assert st["forward_ms"] > 0 and st["backward_ms"] > 0, st
        parts = sum(st[c + "_ms"] for c in rep.CATEGORIES)
        assert abs(parts - st["step_ms"]) < 0.01, st
