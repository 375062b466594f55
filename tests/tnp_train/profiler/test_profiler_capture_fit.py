"""End to end: a real ``fit`` captured on demand through the profiler server by the client (the
recording half's ``collect``), then reported: every step that ran is in the trace, its parts
sum to its time, and the instrumented parts are there."""
import threading
import time

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.profiler import report as R
from tnp_train.profiler import session
from tnp_train.profiler.experimental import client, server
from tnp_train.profiler.merge import read_trace


@pytest.fixture
def mlp():
    rng = np.random.default_rng(0)
    x = tnp.asarray(rng.normal(size=(64, 8)).astype("float32"))
    y = tnp.asarray(rng.normal(size=(64, 1)).astype("float32"))
    model = tt.Sequential([tt.Input((8,)), tt.layers.Dense(16, activation="relu"),
                           tt.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=16, verbose=0)          # built and warm before the capture
    return model, x, y


def test_fit_captured_through_the_server(tmp_path, mlp):
    model, x, y = mlp
    addr = server.start(0)
    out = {}
    try:
        opts = tt.profiler.experimental.ProfilerOptions(host_tracer_level=3)   # + every op
        t = threading.Thread(target=lambda: out.update(
            client.trace(addr, str(tmp_path), 3000, options=opts)))
        t.start()
        deadline = time.monotonic() + 20
        while not session.is_running():
            assert time.monotonic() < deadline, "the capture never started"
            time.sleep(0.002)
        model.fit(x, y, batch_size=16, epochs=3, verbose=0)     # 3 epochs x 4 batches
        inside = session.is_running()
        t.join(timeout=60)
    finally:
        server.stop()
    assert inside, "fit outlasted the capture window: the step count below would be short"
    assert out["failed"] == {}
    rep = R.report(out["run_dir"])
    steps = rep["workers"]["0"]["steps"]
    assert [s["step"] for s in steps] == list(range(12))        # fit's steps, numbered by fit
    assert read_trace(out["files"][0])["metadata"]["steps"] == 12
    parts = [c + "_ms" for c in R.CATEGORIES]
    for s in steps:
        assert sum(s[k] for k in parts) == pytest.approx(s["step_ms"], abs=0.01)
        for k in ("input_ms", "forward_ms", "backward_ms", "optimizer_ms"):
            assert s[k] > 0, (k, s)
        assert s["allreduce_ms"] == s["wait_ms"] == s["checkpoint_ms"] == 0.0
    ops = rep["workers"]["0"]["ops"]
    assert {layer.name for layer in model.layers} <= {o["name"] for o in ops}
    assert "mean" in {o["name"] for o in ops if o["cat"] == "op"}     # the loss's reduction
    assert rep["bottleneck"].startswith("rank 0 is ")
