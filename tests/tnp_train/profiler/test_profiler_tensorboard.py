"""TensorBoard's Profile tab shows a tnp profile: TensorBoard, with the profile plugin
(``tensorboard-plugin-profile``), started on 127.0.0.1 against the logdir of a ``fit`` with the
``TensorBoard`` callback (``profile_batch=(2, 5)``), lists the scalars, histograms and images of
the run and the profile run with its tools, its host, and the trace viewer's data holds our
steps and layers. Skipped without tensorboard or the plugin."""
import os
import sys
import urllib.parse

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("xprof")

import tnp_train as tt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "callbacks"))
from tensorboard_server import WAIT_S, TensorBoardServer  # noqa: E402

import trace_checks as tc  # noqa: E402

PROFILE = "/data/plugin/profile"


def _fit(logdir):
    rng = np.random.default_rng(0)
    x = rng.random((96, 5)).astype("float32")
    y = rng.integers(0, 2, 96)
    model = tt.Sequential([tt.Input((5,)), tt.layers.Dense(4, name="hidden"),
                           tt.layers.Dense(2, name="out")])
    model.compile(optimizer="sgd",
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[tt.callbacks.TensorBoard(
        logdir, histogram_freq=1, profile_batch=(2, 5))])
    writer = tt.summary.create_file_writer(os.path.join(logdir, "custom"))
    with writer.as_default():
        tt.summary.image("picture", np.zeros((1, 4, 6, 3)), step=0)
    writer.close()


def test_tensorboard_lists_the_profile_tools_of_a_tnp_run(tmp_path):
    logdir = tmp_path / "logs"
    _fit(str(logdir))
    (run_dir,) = tc.run_dirs(logdir)
    workers, _ = tc.run_files(run_dir)
    (trace,) = workers.values()
    host = trace["metadata"]["host"]
    steps = tc.spans(trace, "step")
    assert [s["args"]["step_num"] for s in steps] == [1, 2, 3, 4]   # batches 2-5, from 0

    server = TensorBoardServer(logdir, "false", tmp_path)
    try:
        assert server.ready.wait(WAIT_S) and server.port, "".join(server.output)
        tags = server.wait_for("/data/plugin/scalars/tags", lambda t: "train" in t)
        assert "epoch_loss" in tags["train"], tags
        assert "hidden/kernel_0" in server.get("/data/plugin/histograms/tags")["train"]
        assert "picture" in server.get("/data/plugin/images/tags")["custom"]

        runs = server.wait_for(f"{PROFILE}/runs", lambda r: len(r) > 0)
        assert runs == [os.path.basename(run_dir)], runs
        q = urllib.parse.urlencode({"run": runs[0]})
        tools = server.get(f"{PROFILE}/run_tools?{q}")
        assert {"trace_viewer@", "overview_page", "framework_op_stats"} <= set(tools), tools
        q = urllib.parse.urlencode({"run": runs[0], "tag": "trace_viewer@"})
        assert server.get(f"{PROFILE}/hosts?{q}") == [{"hostname": host}]

        q = urllib.parse.urlencode({"run": runs[0], "tag": "trace_viewer@", "host": host,
                                    "format": "json"})
        viewer = server.get(f"{PROFILE}/data?{q}")
        names = [e["name"] for e in viewer["traceEvents"] if e.get("ph") == "X"]
        assert [n for n in names if n.startswith("train ")] == [
            f"train {s['args']['step_num']}" for s in steps]
        for layer in ("hidden", "out", "SGD.apply_gradients", "GradientTape.gradient"):
            assert names.count(layer) == len(steps), (layer, names)

        q = urllib.parse.urlencode({"run": runs[0], "tag": "overview_page", "host": host})
        overview = server.get(f"{PROFILE}/data?{q}")
        table = next(t for t in overview if t["cols"][0]["id"] == "stepnum")
        assert len(table["rows"]) == len(steps)
    finally:
        server.stop()
    assert server.proc.poll() is not None
