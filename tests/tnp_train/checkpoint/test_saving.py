"""Model saving: save_weights/load_weights and save_model (tnp_train.checkpoint.saving), load_model
(tnp_train.models, reading through checkpoint.saving.read_model/restore_model)."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import tnp
import tnp_train as tt
import tnp_train.train  # noqa: F401
from tnp_train.checkpoint import CheckpointFormatError, saving
from tnp_train.models import load_model

X = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)


def _seq(with_input=True, units=4):
    layers = [tt.layers.Dense(units, activation="relu"), tt.layers.Dense(2)]
    return tt.Sequential(([tt.Input((5,))] if with_input else []) + layers)


def _compiled(opt=None):
    m = _seq()
    m.compile(optimizer=opt or tt.optimizers.Adam(0.01), loss="mse")
    return m


def _step(model, n=1):
    for _ in range(n):
        with tt.GradientTape() as tape:
            loss = tnp.mean((model(tnp.asarray(X)) - tnp.asarray(Y)) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables))


def _bits(vs):
    return [v.numpy().tobytes() for v in vs]


class Net(tt.Model):
    """A subclassed model: built on its first call."""

    def __init__(self, units=3, **kw):
        super().__init__(**kw)
        self.units = units
        self.hidden = tt.layers.Dense(units, activation="tanh")
        self.out = tt.layers.Dense(2)

    def call(self, x):
        return self.out(self.hidden(x))

    def get_config(self):
        return {"units": self.units, "name": self.name}


# ------------------------------------------------------------------ weights
def test_save_and_load_weights_with_optimizer_state(tmp_path):
    m = _compiled()
    _step(m, 2)
    p = str(tmp_path / "w.ckpt")
    assert saving.save_weights(m, p) == p
    keys = [k for k, _ in tt.train.list_variables(p)]
    assert "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert any("/.OPTIMIZER_SLOT/optimizer/m/" in k for k in keys)
    m2 = _compiled()
    st = m2.load_weights(p)                # through the Model method
    assert _bits(m.weights) == _bits(m2.weights)
    _step(m, 3)
    _step(m2, 3)
    st.assert_consumed()
    assert _bits(m.weights) == _bits(m2.weights)
    assert _bits(m.optimizer.variables()) == _bits(m2.optimizer.variables())
    with pytest.raises(FileExistsError):
        saving.save_weights(m, p, overwrite=False)


def test_save_weights_records_the_latest_checkpoint(tmp_path):
    # TF's checkpoint-format save_weights updates the directory's record, so the tutorials'
    # ``model.load_weights(tf.train.latest_checkpoint(checkpoint_dir))`` finds the newest file
    m = _compiled()
    assert tt.train.latest_checkpoint(str(tmp_path)) is None
    m.save_weights(str(tmp_path / "ckpt_1"))
    _step(m)
    want = _bits(m.weights)
    m.save_weights(str(tmp_path / "ckpt_2"))
    assert tt.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt_2")
    m.save_weights(str(tmp_path / "w.h5"))      # an HDF5 name: TF keeps no record of it
    assert tt.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt_2")
    m2 = _compiled()
    m2.load_weights(tt.train.latest_checkpoint(str(tmp_path)))
    assert _bits(m2.weights) == want
    with pytest.raises(TypeError, match="latest_checkpoint"):
        m2.load_weights(tt.train.latest_checkpoint(str(tmp_path / "empty")))


def test_model_checkpoint_weights_only_then_latest_checkpoint(tmp_path):
    # the "Distributed training with Keras" tutorial: ModelCheckpoint(save_weights_only=True)
    # each epoch, then load_weights(latest_checkpoint(dir)) gives the last epoch's weights
    m = _compiled()
    cb = tt.callbacks.ModelCheckpoint(str(tmp_path / "ckpt_{epoch}"), save_weights_only=True)
    m.fit(X, Y, epochs=3, batch_size=3, callbacks=[cb], verbose=0)
    assert tt.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt_3")
    m2 = _compiled()
    m2.load_weights(tt.train.latest_checkpoint(str(tmp_path)))
    assert _bits(m2.weights) == _bits(m.weights)


def test_load_weights_uncompiled_and_unbuilt(tmp_path, caplog):
    m = _compiled()
    _step(m)
    p = str(tmp_path / "w")
    m.save_weights(p)
    with caplog.at_level(logging.WARNING, logger="tnp_train.checkpoint"):
        plain = _seq()
        saving.load_weights(plain, p)          # no optimizer here: no warning about its state
        assert caplog.text == ""
    assert _bits(plain.weights) == _bits(m.weights)
    lazy = _seq(with_input=False)
    saving.load_weights(lazy, p).expect_partial()
    lazy(X)
    assert _bits(lazy.weights) == _bits(m.weights)


def test_load_weights_mismatch(tmp_path, caplog):
    m = _seq()
    p = str(tmp_path / "w")
    saving.save_weights(m, p)
    with pytest.raises(ValueError, match=r"layer-0/kernel.*\(5, 4\).*\(5, 7\)"):
        saving.load_weights(_seq(units=7), p)
    wide = _seq(units=7)
    with caplog.at_level(logging.WARNING, logger="tnp_train.checkpoint"):
        st = saving.load_weights(wide, p, skip_mismatch=True)
    assert "skip_mismatch" in caplog.text
    np.testing.assert_array_equal(wide.layers[1].bias.numpy(), m.layers[1].bias.numpy())
    with pytest.raises(AssertionError, match="layer-0/kernel"):
        st.expect_partial().assert_existing_objects_matched()
    # with optimizer state: the slots of a skipped weight are skipped with it
    src, dst = _compiled(), _seq(units=7)
    _step(src)
    dst.compile(optimizer=tt.optimizers.Adam(0.01), loss="mse")
    saving.save_weights(src, p)
    saving.load_weights(dst, p, skip_mismatch=True).expect_partial()
    _step(dst)                                   # slots created: nothing stale to apply
    np.testing.assert_array_equal(dst.optimizer.iterations.numpy(), 2)


# ------------------------------------------------------------------ whole models
def test_save_model_layout_and_round_trip(tmp_path):
    m = _compiled(tt.optimizers.SGD(0.05, momentum=0.9))
    _step(m, 2)
    path = str(tmp_path / "model")
    assert saving.save_model(m, path) == os.path.abspath(path)
    saved = _bits(m.weights)
    assert sorted(os.listdir(path)) == ["config.json", "weights.ckpt"]
    cfg = json.load(open(os.path.join(path, "config.json")))
    assert set(cfg) == {"format_version", "class_name", "config", "compile_config",
                        "tnp_train_version"}
    assert cfg["class_name"] == "Sequential" and cfg["compile_config"]["loss"] == "mse"
    m2 = load_model(path)
    assert type(m2) is tt.Sequential and m2.optimizer is not None
    assert _bits(m.weights) == _bits(m2.weights)
    assert int(m2.optimizer.iterations.numpy()) == 2
    _step(m, 2)
    _step(m2, 2)                                # momentum restored: identical continuation
    assert _bits(m.weights) == _bits(m2.weights)
    m3 = tt.models.load_model(path, compile=False)
    assert m3.optimizer is None and _bits(m3.weights) == saved


def test_save_model_without_optimizer(tmp_path):
    m = _compiled()
    _step(m)
    path = str(tmp_path / "m")
    saving.save_model(m, path, include_optimizer=False)
    assert json.load(open(os.path.join(path, "config.json")))["compile_config"] is None
    assert not any(k.startswith("optimizer/") for k, _ in tt.train.list_variables(
        os.path.join(path, "weights.ckpt")))
    m2 = load_model(path)
    assert m2.optimizer is None and _bits(m2.weights) == _bits(m.weights)


def test_save_model_replaces_atomically(tmp_path, monkeypatch):
    path = str(tmp_path / "m")
    first = _seq()
    saving.save_model(first, path)
    with pytest.raises(FileExistsError):
        saving.save_model(first, path, overwrite=False)
    second = _seq()

    def broken(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(saving, "write_graph", broken)
    with pytest.raises(OSError, match="disk full"):
        saving.save_model(second, path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["m"]          # no temporary left, old model intact
    assert _bits(load_model(path).weights) == _bits(first.weights)
    saving.save_model(second, path)
    assert sorted(os.listdir(tmp_path)) == ["m"]
    assert _bits(load_model(path).weights) == _bits(second.weights)
    assert saving.load_weights(_seq(), path)               # a model directory for load_weights


def test_subclassed_model_loads_lazily(tmp_path):
    net = Net(units=3)
    net(X)
    path = str(tmp_path / "net")
    net.save(path)
    with pytest.raises(ValueError, match="Net"):
        load_model(path)                   # Net is unknown without custom_objects
    net2 = load_model(path, custom_objects={"Net": Net})
    assert not net2.built
    np.testing.assert_array_equal(net2(X).numpy(), net(X).numpy())   # weights applied at build
    assert _bits(net2.weights) == _bits(net.weights)


def test_load_model_errors(tmp_path):
    m = _seq()
    path = str(tmp_path / "m")
    saving.save_model(m, path)
    with pytest.raises(ValueError, match="is a file"):
        load_model(os.path.join(path, "weights.ckpt"))
    with pytest.raises(FileNotFoundError, match="no saved model"):
        load_model(str(tmp_path / "missing"))
    cfg_path = os.path.join(path, "config.json")
    cfg = json.load(open(cfg_path))
    cfg["format_version"] = 99
    json.dump(cfg, open(cfg_path, "w"))
    with pytest.raises(CheckpointFormatError, match="format version 99"):
        load_model(path)
    open(cfg_path, "w").write("{not json")
    with pytest.raises(CheckpointFormatError, match="config.json"):
        load_model(path)


def test_bfloat16_model_weights(tmp_path):
    m = tt.Sequential([tt.Input((5,)), tt.layers.Dense(3, dtype="bfloat16")])
    p = str(tmp_path / "w")
    saving.save_weights(m, p)
    m2 = tt.Sequential([tt.Input((5,)), tt.layers.Dense(3, dtype="bfloat16")])
    saving.load_weights(m2, p).assert_consumed()
    assert m2.weights[0].dtype == tnp.bfloat16 and _bits(m2.weights) == _bits(m.weights)


def test_load_weights_before_compile_restores_the_optimizer_when_compile_attaches_one(tmp_path):
    """TF restores optimizer state that was loaded before the optimizer existed; so do we."""
    import numpy as np
    import tnp_train as tt

    r = np.random.default_rng(0)
    X, Y = r.standard_normal((16, 3)).astype(np.float32), r.integers(0, 2, 16)

    def make():
        tt.utils.set_random_seed(0)
        return tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="relu"),
                              tt.layers.Dense(2)])

    def comp(m):
        m.compile(tt.optimizers.Adam(0.01), tt.losses.SparseCategoricalCrossentropy(from_logits=True))

    a = make()
    comp(a)
    a.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    a.save_weights(str(tmp_path / "w"))
    b = make()
    b.load_weights(str(tmp_path / "w"))          # no optimizer yet
    comp(b)                                      # the saved Adam state goes to this optimizer
    assert int(b.optimizer.iterations.numpy()) == 4
    a.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    b.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    for var_a, var_b in zip(a.trainable_variables, b.trainable_variables):
        for slot in ("m", "v"):
            np.testing.assert_array_equal(a.optimizer.get_slot(var_a, slot).numpy(),
                                          b.optimizer.get_slot(var_b, slot).numpy())
