"""TensorBoard with real fits and evaluations, its event files read back with the tensorboard
package's readers: TF 2.4's runs and tags, exact scalars, histogram counts, weight images, the
model graph, summaries of a custom train_step, and no event lost to a file name reused."""
import io
import json
import os
import socket
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import tnp_train as tt
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.plugins.graph import keras_util
from tensorboard.plugins.histogram.summary_v2 import histogram_pb
from tensorboard.util import tensor_util
from tnp_train.callbacks import tensorboard as tb_mod
from tnp_train.summary import _writer

RNG = np.random.default_rng(0)
X = RNG.random((64, 6)).astype("float32")
Y = RNG.integers(0, 3, 64)
STEPS = 4            # batches of 16 per epoch


# the strict readers the summary tests use (tests/tnp_train/summary/summary_readback.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "summary"))
from summary_readback import event_files as _files, read_file as _strict_events  # noqa: E402


def _run(logdir):
    """``{tag: [(step, array)]}`` of a run as TensorBoard's EventAccumulator loads it (every
    file read strictly first)."""
    for path in _files(logdir):
        assert _strict_events(path)[0].file_version == "brain.Event:2"
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    return {tag: [(t.step, tensor_util.make_ndarray(t.tensor_proto)) for t in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}, acc


def _scalars(run, tag):
    return [(s, float(a)) for s, a in run[tag]]


def _f32(values):
    return [float(np.float32(v)) for v in values]


def _model(name="model"):
    model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", name="hidden"),
                           tt.layers.Dense(3, name="logits")], name=name)
    schedule = tt.optimizers.schedules.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5)
    model.compile(optimizer=tt.optimizers.SGD(schedule), metrics=["accuracy"],
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, schedule


def _decode(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)))


def test_fit_writes_tfs_runs_tags_and_exact_values(tmp_path):
    model, schedule = _model()
    cb = tt.callbacks.TensorBoard(tmp_path, histogram_freq=1, write_images=True, update_freq=2,
                                  profile_batch=0)
    h = model.fit(X, Y, batch_size=16, epochs=2, validation_data=(X[:32], Y[:32]), verbose=0,
                  callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["train", "validation"]
    train, acc = _run(tmp_path / "train")
    val, _ = _run(tmp_path / "validation")
    weights = ["hidden/kernel_0", "hidden/bias_0", "logits/kernel_0", "logits/bias_0"]
    assert set(train) == {"keras", "batch_loss", "batch_accuracy", "epoch_loss",
                          "epoch_accuracy", "epoch_learning_rate",
                          *weights, *(w + "/image" for w in weights)}
    assert set(val) == {"epoch_loss", "epoch_accuracy"}
    # scalars: float32 of the History's values, at step = epoch
    assert _scalars(train, "epoch_loss") == list(zip([0, 1], _f32(h.history["loss"])))
    assert _scalars(train, "epoch_accuracy") == list(zip([0, 1], _f32(h.history["accuracy"])))
    assert _scalars(val, "epoch_loss") == list(zip([0, 1], _f32(h.history["val_loss"])))
    assert _scalars(val, "epoch_accuracy") == list(zip([0, 1],
                                                       _f32(h.history["val_accuracy"])))
    # the schedule's rate after each epoch's steps, as TF's _collect_learning_rate
    assert _scalars(train, "epoch_learning_rate") == list(zip(
        [0, 1], _f32([float(np.asarray(schedule(n))) for n in (STEPS, 2 * STEPS)])))
    # batch logs every 2 batches, step = batches done in this fit
    assert [s for s, _ in train["batch_loss"]] == [2, 4, 6, 8]
    assert train["batch_loss"][-1][1] == np.float32(h.history["loss"][-1])
    # histograms: every element counted; the last one is the final weights'
    kernel = np.asarray(model.layers[0].kernel)
    assert [s for s, _ in train["hidden/kernel_0"]] == [0, 1]
    assert all(a[:, 2].sum() == kernel.size for _, a in train["hidden/kernel_0"])
    want = tensor_util.make_ndarray(histogram_pb("k", kernel).value[0].tensor)
    np.testing.assert_array_equal(train["hidden/kernel_0"][-1][1], want)
    assert acc.PluginTagToContent("histograms").keys() == set(weights)
    assert acc.PluginTagToContent("images").keys() == {w + "/image" for w in weights}
    # weight images as TF lays them out: a kernel wider than tall, a bias as one column
    pytest.importorskip("PIL")
    for tag, (width, height) in {"hidden/kernel_0/image": (8, 6),
                                 "logits/kernel_0/image": (8, 3),
                                 "hidden/bias_0/image": (1, 8)}.items():
        _, a = train[tag][-1]
        assert a.shape == (3,) and a[:2].tolist() == [str(width).encode(), str(height).encode()]
        assert _decode(a[2]).shape == (height, width)
    logits = np.asarray(model.layers[1].kernel).T                  # 8x3 shown as 3x8
    np.testing.assert_array_equal(_decode(train["logits/kernel_0/image"][-1][1][2]),
                                  np.clip(logits * 255.5, 0, 255).astype(np.uint8))
    # the Graphs dashboard's conceptual graph
    (step, config), = train["keras"]
    assert step == 0 and acc.PluginTagToContent("graph_keras_model") == {"keras": b"1"}
    graph = keras_util.keras_model_to_graph_def(json.loads(config.item()))
    nodes = {n.name: list(n.input) for n in graph.node}
    assert nodes["model/logits"] == ["model/hidden"]


def test_evaluate_and_a_resumed_fit_in_the_same_second_lose_nothing(tmp_path, monkeypatch):
    # every file is opened in the same second (the names had only the second: each new file
    # replaced the last, and the first fit's validation epochs were lost)
    monkeypatch.setattr(_writer, "_name_parts",
                        lambda: (1_600_000_000, socket.gethostname(), os.getpid()))
    model, _ = _model()
    cb = tt.callbacks.TensorBoard(tmp_path, profile_batch=0)
    h1 = model.fit(X, Y, batch_size=16, epochs=2, validation_data=(X[:32], Y[:32]),
                   verbose=0, callbacks=[cb])
    loss, accuracy = model.evaluate(X, Y, batch_size=16, verbose=0, callbacks=[cb])
    h2 = model.fit(X, Y, batch_size=16, epochs=4, initial_epoch=2,
                   validation_data=(X[:32], Y[:32]), verbose=0,
                   callbacks=[tt.callbacks.TensorBoard(tmp_path, profile_batch=0)])
    assert len(_files(tmp_path / "train")) == 3          # fit, evaluate's graph, fit
    assert len(_files(tmp_path / "validation")) == 3     # fit, evaluate, fit
    train, _ = _run(tmp_path / "train")
    val, _ = _run(tmp_path / "validation")
    assert _scalars(train, "epoch_loss") == list(zip(range(4), _f32(h1.history["loss"] +
                                                                    h2.history["loss"])))
    assert _scalars(val, "epoch_loss") == list(zip(range(4), _f32(h1.history["val_loss"] +
                                                                  h2.history["val_loss"])))
    assert _scalars(val, "evaluation_loss_vs_iterations") == [(2 * STEPS, _f32([loss])[0])]
    assert _scalars(val, "evaluation_accuracy_vs_iterations") == [
        (2 * STEPS, _f32([accuracy])[0])]
    assert [s for s, _ in train["keras"]] == [0, 0, 0]


class _Custom(tt.Sequential):
    """Writes its own summaries, with no writer and no step of its own: the callback's."""
    recorded = []

    def train_step(self, data):
        logs = super().train_step(data)
        self.recorded.append(("train", tt.summary.scalar("custom_loss", logs["loss"])))
        return logs

    def test_step(self, data):
        logs = super().test_step(data)
        self.recorded.append(("test", tt.summary.scalar("custom_val", 1.0)))
        return logs


@pytest.mark.parametrize("update_freq", [2, "epoch"])
def test_summaries_of_a_custom_train_step_go_to_the_callbacks_runs(tmp_path, update_freq):
    model = _Custom([tt.Input((6,)), tt.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    _Custom.recorded = []
    cb = tt.callbacks.TensorBoard(tmp_path, update_freq=update_freq, profile_batch=0)
    model.fit(X, np.zeros((64, 3)), batch_size=16, epochs=2, verbose=0, callbacks=[cb],
              validation_data=(X[:48], np.zeros((48, 3))))
    train, _ = _run(tmp_path / "train")
    val, _ = _run(tmp_path / "validation")
    if update_freq == "epoch":          # no default writer: TF's summaries are no-ops
        assert {r for _, r in _Custom.recorded} == {False}
        assert "custom_loss" not in train and "custom_val" not in val
    else:
        # TF's train counter: the batches done before this one, recorded when it is a
        # multiple of update_freq; the validation counter restarts at each evaluation
        assert [s for s, _ in train["custom_loss"]] == [0, 2, 4, 6]
        assert [r for k, r in _Custom.recorded if k == "train"] == [True, False] * 4
        assert [s for s, _ in val["custom_val"]] == [0, 2, 0, 2]
    # the user's state is back as it was: no default writer
    assert tt.summary.scalar("after", 1.0, step=0) is False


def test_functional_models_graph_has_its_edges(tmp_path):
    a, b = tt.Input((4,), name="a"), tt.Input((3,), name="b")
    x = tt.layers.Concatenate(name="cat")([tt.layers.Dense(3, name="d")(a), b])
    model = tt.Model([a, b], tt.Sequential([tt.layers.Dense(2, name="inner")], name="seq")(x),
                     name="fn")
    model.compile(optimizer="sgd", loss="mse")
    model.evaluate([X[:, :4], X[:, :3]], np.zeros((64, 2)), verbose=0,
                   callbacks=[tt.callbacks.TensorBoard(tmp_path, profile_batch=0)])
    train, _ = _run(tmp_path / "train")
    (_, config), = train["keras"]
    nodes = {n.name: list(n.input) for n in
             keras_util.keras_model_to_graph_def(json.loads(config.item())).node}
    assert nodes["fn/cat"] == ["fn/d", "fn/b"] and nodes["fn/d"] == ["fn/a"]
    assert nodes["fn/seq/inner"] == ["fn/cat"]


def test_a_subclassed_model_has_no_graph_and_no_warning(tmp_path, recwarn):
    class Sub(tt.Model):
        def __init__(self):
            super().__init__()
            self.d = tt.layers.Dense(1, name="out")

        def call(self, x):
            return self.d(x)
    model = Sub()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(X, np.zeros(64), epochs=1, verbose=0,
              callbacks=[tt.callbacks.TensorBoard(tmp_path, histogram_freq=1, profile_batch=0)])
    train, _ = _run(tmp_path / "train")
    assert "keras" not in train and "epoch_loss" in train
    assert {t for t in train if t.endswith("_0")} == {"out/kernel_0", "out/bias_0"}
    assert not [w for w in recwarn if "TensorBoard" in str(w.message)]


def test_without_tensorboard_the_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(tb_mod, "_find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install tnp\[tensorboard\]"):
        tt.callbacks.TensorBoard()


def test_weight_tags_are_tfs():
    class W:
        def __init__(self, name):
            self.name = name
    assert tb_mod._weight_tag(W("dense/kernel"), 0) == "dense/kernel_0"
    assert tb_mod._weight_tag(W("dense/kernel:0"), 0) == "dense/kernel_0"
    assert tb_mod._weight_tag(np.zeros(2), 3) == "weight_3"
