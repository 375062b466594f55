"""TensorBoard itself serves what tnp_train wrote: its server, started on 127.0.0.1 (a port the
OS picks), answers its HTTP API with the runs, scalars, histograms, images, text and graph of a
fit with the TensorBoard callback and of a tt.summary writer."""
import os
import struct
import urllib.parse

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import tnp_train as tt
from tensorboard_server import WAIT_S, TensorBoardServer


def _write_logs(logdir):
    rng = np.random.default_rng(0)
    x = rng.random((48, 5)).astype("float32")
    y = rng.integers(0, 2, 48)
    model = tt.Sequential([tt.Input((5,)), tt.layers.Dense(4, name="hidden"),
                           tt.layers.Dense(2, name="out")])
    model.compile(optimizer="sgd", metrics=["accuracy"],
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=16, epochs=3, validation_data=(x[:16], y[:16]),
                        verbose=0, callbacks=[tt.callbacks.TensorBoard(
                            logdir, histogram_freq=1, profile_batch=0)])
    writer = tt.summary.create_file_writer(os.path.join(logdir, "custom"))
    with writer.as_default():
        for step in range(3):
            tt.summary.scalar("custom/score", step * 0.5, step=step)
        tt.summary.image("custom/picture", np.linspace(0, 1, 2 * 4 * 6 * 3).reshape(2, 4, 6, 3),
                         step=0)
        tt.summary.text("custom/note", "**bold** note", step=0)
    writer.close()
    return history


# "false": TensorBoard's Python loader; "auto": its Rust data server where the platform has it
@pytest.mark.parametrize("load_fast", ["false", "auto"])
def test_tensorboards_server_shows_the_runs(tmp_path, load_fast):
    logdir = tmp_path / "logs"
    history = _write_logs(str(logdir))
    server = TensorBoardServer(logdir, load_fast, tmp_path)
    try:
        assert server.ready.wait(WAIT_S) and server.port, "".join(server.output)
        runs = server.wait_for("/data/runs",
                               lambda r: {"train", "validation", "custom"} <= set(r))
        assert {"train", "validation", "custom"} <= set(runs), runs
        tags = server.wait_for("/data/plugin/scalars/tags",
                               lambda t: "epoch_loss" in t.get("validation", {})
                               and "custom/score" in t.get("custom", {}))
        assert {"epoch_loss", "epoch_accuracy"} <= set(tags["train"]), tags
        assert {"epoch_loss", "epoch_accuracy"} <= set(tags["validation"]), tags

        def scalars(run, tag):
            q = urllib.parse.urlencode({"run": run, "tag": tag})
            return [(step, value) for _, step, value in
                    server.get(f"/data/plugin/scalars/scalars?{q}")]
        f32 = [float(np.float32(v)) for v in history.history["loss"]]
        assert scalars("train", "epoch_loss") == list(zip(range(3), f32))
        f32 = [float(np.float32(v)) for v in history.history["val_accuracy"]]
        assert scalars("validation", "epoch_accuracy") == list(zip(range(3), f32))
        assert scalars("custom", "custom/score") == [(0, 0.0), (1, 0.5), (2, 1.0)]

        hist = server.get("/data/plugin/histograms/tags")
        assert {"hidden/kernel_0", "out/bias_0"} <= set(hist["train"]), hist
        q = urllib.parse.urlencode({"run": "train", "tag": "hidden/kernel_0"})
        series = server.get(f"/data/plugin/histograms/histograms?{q}")
        assert [s[1] for s in series] == [0, 1, 2]
        assert all(sum(bucket[2] for bucket in s[2]) == 5 * 4 for s in series)

        q = urllib.parse.urlencode({"run": "custom", "tag": "custom/picture", "sample": 1})
        (image,) = server.get(f"/data/plugin/images/images?{q}")
        png = server.get(f"/data/plugin/images/individualImage?{image['query']}", raw=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
        assert struct.unpack(">II", png[16:24]) == (6, 4)          # width, height

        q = urllib.parse.urlencode({"run": "custom", "tag": "custom/note"})
        (note,) = server.get(f"/data/plugin/text/text?{q}")
        assert "<strong>bold</strong>" in note["text"]

        graphs = server.get("/data/plugin/graphs/info")
        assert graphs["train"]["tags"]["keras"]["conceptual_graph"] is True
    finally:
        server.stop()
    assert server.proc.poll() is not None
