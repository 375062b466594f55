"""Keras model files both ways (issue 31, item 2): files tf_keras 2.21 and Keras 3 wrote
(tests/fixtures/keras_files/, made by tests/fixtures/make_keras_files.py) load here with the
writer's predictions, weights and optimizer state; files written here have TF's layout (their
reading by tf_keras / Keras 3 is checked by tests/fixtures/check_tnp_keras_files.py, which
needs TensorFlow); hostile files are refused before anything runs or is read."""
import base64
import json
import marshal
import os

import numpy as np
import pytest

import tnp_train as tt

h5py = pytest.importorskip("h5py")

FIX = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "fixtures", "keras_files")
IO = np.load(os.path.join(FIX, "io.npz"))


def fx(name):
    return os.path.join(FIX, name)


def inputs(name):
    x = [IO[f"{name}/x{i}"] for i in range(3) if f"{name}/x{i}" in IO]
    return x if len(x) > 1 else x[0]


def build(name):
    L = tt.layers
    if name == "mlp":
        return tt.Sequential([tt.Input((4,)), L.Dense(8, activation="relu", name="hidden"),
                              L.Dense(3, activation="softmax", name="probs")], name="mlp")
    a, b = tt.Input((4,), name="a"), tt.Input((3,), name="b")
    h = L.Concatenate(name="cat")([L.Dense(5, name="da")(a), L.Dense(5, name="db")(b)])
    return tt.Model([a, b], L.Dense(2, name="out")(L.BatchNormalization(name="bn")(h)),
                    name="two_in")


@pytest.mark.parametrize("name", ["mlp", "two_in", "conv"])
def test_a_tf_keras_h5_model_predicts_as_tf_keras(name):
    model = tt.models.load_model(fx(f"{name}.h5"))
    np.testing.assert_allclose(model.predict(inputs(name), verbose=0), IO[f"{name}/y"],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["mlp", "two_in"])
def test_the_optimizer_state_and_compile_arguments_come_back(name):
    # mlp.h5: TF 2.4's layout (Adam/iter, Adam/<var>/m ...); two_in.h5: tf_keras 2.11+'s
    # (iteration, Adam/m/<var> ...)
    model = tt.models.load_model(fx(f"{name}.h5"))
    opt = model.optimizer
    assert type(opt).__name__ == "Adam" and opt.learning_rate == pytest.approx(0.01)
    assert int(opt.iterations.numpy()) == 1
    with h5py.File(fx(f"{name}.h5")) as f:
        g = f["optimizer_weights"]
        names = [n.decode() if isinstance(n, bytes) else n for n in g.attrs["weight_names"]]
        for var in model.trainable_weights:
            for slot in ("m", "v"):
                stored = [n for n in names if n in (f"Adam/{var.name}/{slot}:0",
                                                   f"Adam/{slot}/{var.name}:0")]
                assert len(stored) == 1
                np.testing.assert_array_equal(opt.get_slot(var, slot).numpy(), g[stored[0]][()])
    if name == "mlp":       # the loss and the accuracy metric came back
        x = inputs("mlp")
        y = np.eye(3, dtype="float32")[[0, 1, 2, 0, 1, 2]]
        loss, acc = model.evaluate(x, y, verbose=0)
        p = model.predict(x, verbose=0)
        assert loss == pytest.approx(float(np.mean(-np.log(np.sum(p * y, axis=1)))), rel=1e-5)
        assert acc == pytest.approx(float(np.mean(p.argmax(1) == y.argmax(1))))


def test_load_model_compile_false_leaves_it_uncompiled():
    model = tt.models.load_model(fx("mlp.h5"), compile=False)
    assert model.optimizer is None


def test_load_weights_by_topology_matches_tf_keras_get_weights():
    model = build("mlp")
    model.load_weights(fx("mlp_weights.h5"))
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_array_equal(w, IO[f"mlp/w{i}"])


def test_load_weights_by_name_and_skip_mismatch():
    L = tt.layers
    model = tt.Sequential([tt.Input((4,)), L.Dense(8, activation="relu", name="hidden"),
                           L.Dense(5, name="probs"), L.Dense(2, name="extra")])
    with pytest.raises(ValueError, match="Layer count mismatch"):
        model.load_weights(fx("mlp_weights.h5"))
    with pytest.raises(ValueError, match="probs"):
        model.load_weights(fx("mlp_weights.h5"), by_name=True)
    with pytest.raises(ValueError, match="skip_mismatch can only be set to True when by_name"):
        model.load_weights(fx("mlp_weights.h5"), skip_mismatch=True)
    before = model.get_layer("probs").get_weights()
    with pytest.warns(UserWarning, match="Skipping loading of weights for layer probs"):
        model.load_weights(fx("mlp_weights.h5"), by_name=True, skip_mismatch=True)
    np.testing.assert_array_equal(model.get_layer("hidden").get_weights()[0], IO["mlp/w0"])
    np.testing.assert_array_equal(model.get_layer("probs").get_weights()[0], before[0])


def test_keras3_archive_and_weights_file():
    model = tt.models.load_model(fx("k3_two_in.keras"))
    np.testing.assert_allclose(model.predict(inputs("k3_two_in"), verbose=0), IO["k3_two_in/y"],
                               rtol=1e-6, atol=1e-6)
    assert int(model.optimizer.iterations.numpy()) == 1
    mlp = build("mlp")
    mlp.load_weights(fx("k3_mlp.weights.h5"))
    for i, w in enumerate(mlp.get_weights()):
        np.testing.assert_array_equal(w, IO[f"k3_mlp/w{i}"])


def _names(f, obj, attr):
    return [n.decode() if isinstance(n, bytes) else n for n in f[obj].attrs[attr]]


def _trained_mlp():
    tt.utils.set_random_seed(0)
    model = build("mlp")
    model.compile(tt.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    x = inputs("mlp")
    model.fit(x, np.eye(3, dtype="float32")[[0, 1, 2, 0, 1, 2]], batch_size=6, verbose=0)
    return model, x


def test_a_saved_h5_model_has_tf_keras_layout_and_loads_back(tmp_path):
    model, x = _trained_mlp()
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path) as ours, h5py.File(fx("mlp.h5")) as tfs:
        assert set(ours.attrs) == set(tfs.attrs)
        assert _names(ours, "model_weights", "layer_names") == \
            _names(tfs, "model_weights", "layer_names")
        for layer in ("hidden", "probs"):
            assert _names(ours, f"model_weights/{layer}", "weight_names") == \
                _names(tfs, f"model_weights/{layer}", "weight_names")
        assert _names(ours, "optimizer_weights", "weight_names") == \
            _names(tfs, "optimizer_weights", "weight_names")
        cfg = json.loads(ours.attrs["training_config"])
        assert cfg["optimizer_config"]["class_name"] == "Adam"
        assert "weight_decay" not in cfg["optimizer_config"]["config"]
    back = tt.models.load_model(path)
    np.testing.assert_array_equal(back.predict(x, verbose=0), model.predict(x, verbose=0))
    for a, b in zip(back.optimizer.get_weights(), model.optimizer.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["keras", "weights"])
def test_keras3_files_round_trip(tmp_path, kind):
    model, x = _trained_mlp()
    if kind == "keras":
        model.save(str(tmp_path / "m.keras"))
        back = tt.models.load_model(str(tmp_path / "m.keras"))
        assert int(back.optimizer.iterations.numpy()) == 1
    else:
        model.save_weights(str(tmp_path / "m.weights.h5"))
        with h5py.File(str(tmp_path / "m.weights.h5")) as ours, \
                h5py.File(fx("k3_mlp.weights.h5")) as theirs:
            assert sorted(ours["layers"]) == sorted(theirs["layers"])
        back = build("mlp")
        back.load_weights(str(tmp_path / "m.weights.h5"))
    np.testing.assert_array_equal(back.predict(x, verbose=0), model.predict(x, verbose=0))


def test_save_format_h5_and_save_weights_h5_write_hdf5(tmp_path):
    model, _ = _trained_mlp()
    model.save(str(tmp_path / "model_file"), save_format="h5")
    model.save_weights(str(tmp_path / "w.h5"))
    for p in ("model_file", "w.h5"):
        assert h5py.is_hdf5(str(tmp_path / p))
    other = build("mlp")
    other.load_weights(str(tmp_path / "w.h5"))
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    model, _ = _trained_mlp()
    path = tmp_path / "m.h5"
    model.save(str(path))
    before = path.read_bytes()
    from tnp_train.checkpoint import keras_h5

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(keras_h5, "write_weight_group", boom)
    with pytest.raises(OSError, match="disk full"):
        model.save(str(path))
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.h5"]


# ---------------------------------------------------------------- hostile files
def _copy(tmp_path, name="mlp.h5"):
    dst = tmp_path / name
    dst.write_bytes(open(fx(name), "rb").read())
    return str(dst)


def test_an_external_link_is_not_followed(tmp_path):
    path = _copy(tmp_path)
    with h5py.File(path, "a") as f:
        del f["model_weights/hidden"]
        f["model_weights/hidden"] = h5py.ExternalLink(fx("mlp_weights.h5"), "/hidden")
    with pytest.raises(ValueError, match="ExternalLink"):
        tt.models.load_model(path)


def test_a_dataset_is_not_read_before_its_shape_is_checked(tmp_path):
    path = _copy(tmp_path)
    with h5py.File(path, "a") as f:
        del f["model_weights/hidden/hidden/kernel:0"]
        # a compressed dataset claiming 64 GB: refused by its shape, never decompressed
        f["model_weights/hidden/hidden"].create_dataset(
            "kernel:0", shape=(1 << 17, 1 << 17), dtype="float32", compression="gzip",
            chunks=(1024, 1024))
    with pytest.raises(ValueError, match=r"hidden.*\(4, 8\)"):
        tt.models.load_model(path)


def test_a_lambda_holding_bytecode_needs_safe_mode_false(tmp_path):
    path = _copy(tmp_path)
    code = base64.b64encode(marshal.dumps((lambda x: x * 2).__code__)).decode()
    with h5py.File(path, "a") as f:
        cfg = json.loads(f.attrs["model_config"])
        cfg["config"]["layers"].insert(2, {"class_name": "Lambda", "config": {
            "name": "double", "trainable": True, "dtype": "float32",
            "function": [code, None, None], "function_type": "lambda", "module": "__main__",
            "output_shape": None, "output_shape_type": "raw", "arguments": {}}})
        f.attrs["model_config"] = json.dumps(cfg)
    with pytest.raises(ValueError, match="safe_mode=False"):
        tt.models.load_model(path)
    model = tt.models.load_model(path, safe_mode=False, compile=False)
    x = inputs("mlp")
    ref = tt.models.load_model(fx("mlp.h5"), compile=False)
    h = ref.get_layer("hidden")(x)
    np.testing.assert_allclose(model.predict(x, verbose=0),
                               ref.get_layer("probs")(h * 2).numpy(), rtol=1e-6)


def test_not_an_hdf5_file_and_a_saved_model_directory(tmp_path):
    bad = tmp_path / "x.h5"
    bad.write_bytes(b"not hdf5 at all")
    with pytest.raises(ValueError, match="x.h5"):
        build("mlp").load_weights(str(bad))
    sm = tmp_path / "exported"
    sm.mkdir()
    (sm / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ValueError, match=r"SavedModel.*model\.save\('model\.h5'\)"):
        tt.models.load_model(str(sm))


def test_to_json_is_tf24s_functional_form():
    cfg = json.loads(build("two_in").to_json())["config"]
    cat = [l for l in cfg["layers"] if l["name"] == "cat"][0]
    assert cat["inbound_nodes"] == [[["da", 0, 0, {}], ["db", 0, 0, {}]]]
    assert cfg["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert cfg["output_layers"] == [["out", 0, 0]]


def build_nested():
    """make_keras_files.py's build_nested: a nested functional model called twice."""
    L = tt.layers
    a = tt.Input((4,), name="a")
    inner_in = tt.Input((3,), name="inner_in")
    inner = tt.Model(inner_in, L.Dense(2, name="inner_d")(inner_in), name="inner")
    h = L.Dense(3, name="pre")(a)
    return tt.Model(a, [L.Dense(1, name="post")(inner(h)), inner(h)], name="outer")


@pytest.mark.parametrize("which,name", [("tf_keras", "nested.h5"),
                                        ("keras3", "k3_nested.keras")])
def test_a_nested_models_calls_are_counted_as_the_writer_counts_them(which, name):
    # TF counts a nested model's calls from 1 (its own node first); Keras 3 does in the
    # model's outputs only; ours from 0
    io = np.load(fx("nested.npz"))
    model = tt.models.load_model(fx(name))
    got = model.predict(io[f"{which}/x"], verbose=0)
    for g, k in zip(got, ("y0", "y1")):
        np.testing.assert_allclose(g, io[f"{which}/{k}"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["h5", "keras"])
def test_a_nested_model_saved_here_has_the_writers_numbering(tmp_path, kind):
    model = build_nested()
    path = str(tmp_path / f"m.{kind}")
    model.save(path)
    if kind == "h5":
        with h5py.File(path) as ours, h5py.File(fx("nested.h5")) as tfs:
            mine, theirs = (json.loads(f.attrs["model_config"])["config"] for f in (ours, tfs))
    else:
        import zipfile
        with zipfile.ZipFile(path) as z, zipfile.ZipFile(fx("k3_nested.keras")) as k3:
            mine, theirs = (json.loads(f.read("config.json"))["config"] for f in (z, k3))

    def refs(cfg):
        post = [l for l in cfg["layers"] if l["name"] == "post"][0]["inbound_nodes"]
        node = post[0][0][:3] if kind == "h5" else \
            post[0]["args"][0]["config"]["keras_history"]
        return node, cfg["output_layers"]
    assert refs(mine) == refs(theirs)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype("float32")
    back = tt.models.load_model(path)
    for a, b in zip(back.predict(x, verbose=0), model.predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)


def test_a_keras_archive_keeps_calls_keras2s_form_cannot_hold(tmp_path):
    # a one-element list, a non-tensor positional argument, outputs=[x]: Keras 3's node form
    # holds each call as it was made
    class Scale(tt.layers.Layer):
        def call(self, inputs, factor):
            return inputs[0] * factor

    x = tt.Input((3,), name="x")
    model = tt.Model([x], [Scale(name="scale")([x], 2.5)], name="odd")
    path = str(tmp_path / "m.keras")
    model.save(path)
    import zipfile
    with zipfile.ZipFile(path) as z:
        cfg = json.loads(z.read("config.json"))["config"]
    node = [l for l in cfg["layers"] if l["name"] == "scale"][0]["inbound_nodes"][0]
    assert node["args"][0][0]["config"]["keras_history"] == ["x", 0, 0]
    assert node["args"][1] == 2.5
    assert cfg["input_layers"] == [["x", 0, 0]] and cfg["output_layers"] == [["scale", 0, 0]]
    back = tt.models.load_model(path, custom_objects={"Scale": Scale})
    xs = np.arange(6, dtype="float32").reshape(2, 3)
    got = back.predict(xs, verbose=0)
    assert isinstance(got, list) and len(got) == 1
    np.testing.assert_array_equal(got[0], xs * 2.5)
