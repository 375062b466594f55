"""tt.train.Checkpoint, CheckpointManager, latest_checkpoint, list_variables, load_variable."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import tnp
import tnp_train as tt
import tnp_train.train  # noqa: F401
from tnp_train.checkpoint import CheckpointFormatError, restore_into

train = tnp_train.train


class Block(tt.layers.Layer):
    """A layer whose sub-layers are created in build (so they appear only once built), held in
    a list (checkpoint names with a '/') next to its own weight."""

    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, input_shape):
        self.scale = self.add_weight("scale.v", (self.units,), initializer="ones")
        self.parts = [tt.layers.Dense(self.units), tt.layers.Dense(self.units)]
        super().build(input_shape)

    def call(self, x):
        return self.parts[1](self.parts[0](x)) * self.scale


def _model(built=True, units=4):
    layers = [tt.layers.Dense(units, activation="tanh"), Block(3)]
    if built:
        layers = [tt.Input((5,))] + layers
    return tt.Sequential(layers)


def _x():
    return tnp.asarray(np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32))


def _step(model, opt):
    with tt.GradientTape() as tape:
        loss = tnp.sum(model(_x()) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x.numpy(), y.numpy()) and x.dtype == y.dtype
                                    for x, y in zip(a, b))


def _trained(tmp_path):
    model, opt = _model(), tt.optimizers.SGD(0.1, momentum=0.9)
    _step(model, opt)
    ckpt = train.Checkpoint(model=model, optimizer=opt, step=tt.Variable(np.int64(5)))
    return model, opt, ckpt, ckpt.save(str(tmp_path / "ck"))


# ------------------------------------------------------------------ Checkpoint
def test_save_numbers_and_counter(tmp_path):
    v = tt.Variable(np.float32(1.0))
    ckpt = train.Checkpoint(v=v)
    assert ckpt.v is v
    p1 = ckpt.save(str(tmp_path / "c"))
    p2 = ckpt.save(str(tmp_path / "c"))
    assert (os.path.basename(p1), os.path.basename(p2)) == ("c-1", "c-2")
    assert train.latest_checkpoint(str(tmp_path)) == p2
    assert ckpt.write(str(tmp_path / "w")) == str(tmp_path / "w")
    assert int(ckpt.save_counter.numpy()) == 2       # write does not count
    other = train.Checkpoint(v=tt.Variable(np.float32(0.0)))
    other.restore(p1).assert_consumed()
    assert int(other.save_counter.numpy()) == 1 and float(other.v.numpy()) == 1.0
    assert os.path.basename(other.save(str(tmp_path / "c"))) == "c-2"  # numbering continues


def test_untrackable_kwargs_refused():
    with pytest.raises(TypeError, match="'step' is not trackable.*int"):
        train.Checkpoint(step=0)
    with pytest.raises(TypeError, match="'arr'"):
        train.Checkpoint(arr=tnp.zeros(3))
    with pytest.raises(ValueError, match="save_counter"):
        train.Checkpoint(save_counter=tt.Variable(0))


def test_restore_none_is_initialization_only():
    st = train.Checkpoint(v=tt.Variable(1.0)).restore(None)
    assert st.expect_partial() is st
    st.run_restore_ops()
    for check in (st.assert_consumed, st.assert_existing_objects_matched,
                  st.assert_nontrivial_match):
        with pytest.raises(AssertionError, match="No checkpoint specified"):
            check()


def test_round_trip_with_optimizer_slots_and_keys(tmp_path):
    model, opt, ckpt, path = _trained(tmp_path)
    keys = dict(train.list_variables(path))
    assert keys["model/layer-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"] == [5, 4]
    assert "model/layer-1/scale..v/.ATTRIBUTES/VARIABLE_VALUE" in keys        # '.' escaped
    assert "model/layer-1/parts.S1/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys  # '/' escaped
    assert ("model/layer-0/kernel/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/"
            "VARIABLE_VALUE") in keys
    assert {"optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE", "step/.ATTRIBUTES/VARIABLE_VALUE",
            "save_counter/.ATTRIBUTES/VARIABLE_VALUE"} <= set(keys)
    np.testing.assert_array_equal(train.load_variable(str(tmp_path), "model/layer-0/kernel"),
                                  model.layers[0].kernel.numpy())
    # a fresh model and optimizer (different initial values)
    model2, opt2 = _model(), tt.optimizers.SGD(0.1, momentum=0.9)
    step2 = tt.Variable(np.int64(0))
    st = train.Checkpoint(model=model2, optimizer=opt2, step=step2).restore(path)
    assert _same(model.weights, model2.weights) and int(step2.numpy()) == 5
    st.assert_existing_objects_matched().assert_nontrivial_match()
    with pytest.raises(AssertionError, match="OPTIMIZER_SLOT/optimizer/momentum"):
        st.assert_consumed()          # slots not created yet: deferred
    # the next step creates the slots, from the saved momentum: same result as the original
    _step(model, opt)
    _step(model2, opt2)
    st.assert_consumed()
    assert _same(model.weights, model2.weights)
    assert _same(opt.variables(), opt2.variables())


def test_deferred_restoration_into_unbuilt_model(tmp_path):
    model, opt, ckpt, path = _trained(tmp_path)
    fresh = _model(built=False)
    assert fresh.weights == []
    st = train.Checkpoint(model=fresh).restore(path)
    with pytest.raises(AssertionError, match="model/layer-0/kernel"):
        st.assert_consumed()
    st.assert_existing_objects_matched()     # nothing exists yet
    fresh(_x())                              # build: weights get the saved values on creation
    assert _same(model.weights, fresh.weights)
    np.testing.assert_array_equal(fresh(_x()).numpy(), model(_x()).numpy())
    st.expect_partial()


def test_restore_into_refuses_other_values():
    with pytest.raises(TypeError, match="pending"):
        restore_into(tt.layers.Dense(2), {"kernel": 1})


def test_shape_mismatch_names_key_and_shapes(tmp_path):
    _, _, _, path = _trained(tmp_path)
    other = _model(units=6)
    other.layers[1].scale.assign(np.full(3, 7.0, np.float32))   # fits: (3,) either way
    with pytest.raises(ValueError, match=r"model/layer-0/kernel.*\(5, 4\).*\(5, 6\)"):
        train.Checkpoint(model=other).restore(path)
    np.testing.assert_array_equal(other.layers[1].scale.numpy(), 7.0)  # nothing was assigned
    unbuilt = _model(built=False, units=6)
    train.Checkpoint(model=unbuilt).restore(path).expect_partial()
    with pytest.raises(ValueError, match=r"layer-0/kernel.*\(5, 4\).*\(5, 6\)"):
        unbuilt(_x())                           # raised when the weight is created


def test_dtype_mismatch(tmp_path):
    p = train.Checkpoint(v=tt.Variable(np.zeros(3, np.float64))).write(str(tmp_path / "c"))
    with pytest.raises(ValueError, match="float64.*float32"):
        train.Checkpoint(v=tt.Variable(np.zeros(3, np.float32))).restore(p)


def test_assertions_and_warning(tmp_path, caplog):
    _, _, _, path = _trained(tmp_path)
    extra = tt.Variable(np.float32(3.0))
    st = train.Checkpoint(model=_model(), extra=extra).restore(path)
    with pytest.raises(AssertionError, match="extra"):
        st.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="optimizer/iter"):
        st.assert_consumed()
    unrelated = train.Checkpoint(other=tt.Variable(np.float32(0.0)))
    with pytest.raises(AssertionError, match="nothing was restored"):
        unrelated.restore(path).expect_partial().assert_nontrivial_match()
    with caplog.at_level(logging.WARNING, logger="tnp_train.checkpoint"):
        train.Checkpoint(model=_model()).restore(path)          # status dropped: warns
        assert "were not used" in caplog.text and "optimizer/iter" in caplog.text
        caplog.clear()
        train.Checkpoint(model=_model()).restore(path).expect_partial()
        assert caplog.text == ""


def test_shared_variable_saved_once(tmp_path):
    v = tt.Variable(np.arange(3.0))
    inner = train.Checkpoint(a=v)
    outer = train.Checkpoint(first=inner, second=inner, direct=v)
    p = outer.write(str(tmp_path / "c"))
    assert [k for k, _ in train.list_variables(p)] == ["direct/.ATTRIBUTES/VARIABLE_VALUE"]
    w = tt.Variable(np.zeros(3))
    train.Checkpoint(first=train.Checkpoint(a=w), direct=w).restore(p).assert_consumed()
    np.testing.assert_array_equal(w.numpy(), v.numpy())


def test_bfloat16_variable(tmp_path):
    v = tt.Variable(np.array([1.5, -0.0078125, 3e38], dtype=tnp.bfloat16))
    p = train.Checkpoint(v=v).write(str(tmp_path / "c"))
    w = tt.Variable(np.zeros(3, dtype=tnp.bfloat16))
    train.Checkpoint(v=w).restore(p).assert_consumed()
    assert w.dtype == tnp.bfloat16 and w.numpy().tobytes() == v.numpy().tobytes()


def test_damaged_file_changes_nothing(tmp_path):
    model, _, _, path = _trained(tmp_path)
    data = bytearray(open(path, "rb").read())
    data[-5] ^= 0xFF
    open(path, "wb").write(bytes(data))
    fresh = _model()
    before = [w.numpy() for w in fresh.weights]
    with pytest.raises(CheckpointFormatError, match="ck-1.*SHA-256"):
        train.Checkpoint(model=fresh).restore(path)
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, fresh.weights))
    with pytest.raises(IsADirectoryError, match="latest_checkpoint"):
        train.Checkpoint(model=fresh).restore(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        train.Checkpoint(model=fresh).restore(str(tmp_path / "nope"))


# ------------------------------------------------------------------ CheckpointManager
def test_manager_keeps_the_last_n(tmp_path):
    step = tt.Variable(np.int64(0))
    ckpt = train.Checkpoint(step=step)
    d = str(tmp_path / "run")
    mgr = train.CheckpointManager(ckpt, d, max_to_keep=2)
    assert mgr.latest_checkpoint is None and train.latest_checkpoint(d) is None
    paths = []
    for i in range(4):
        step.assign(np.int64(i))
        paths.append(mgr.save())
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2", "ckpt-3", "ckpt-4"]
    assert mgr.checkpoints == paths[2:] and mgr.latest_checkpoint == paths[3]
    assert sorted(os.listdir(d)) == ["checkpoint.json", "ckpt-3", "ckpt-4"]
    assert train.latest_checkpoint(d) == paths[3]
    # a new manager (a restarted job) picks up the state
    step2 = tt.Variable(np.int64(-1))
    mgr2 = train.CheckpointManager(train.Checkpoint(step=step2), d, max_to_keep=2)
    assert mgr2.checkpoints == paths[2:]
    assert mgr2.restore_or_initialize() == paths[3] and int(step2.numpy()) == 3
    assert os.path.basename(mgr2.save()) == "ckpt-5"          # the save counter was restored
    assert sorted(os.listdir(d)) == ["checkpoint.json", "ckpt-4", "ckpt-5"]
    assert os.path.basename(mgr2.save(checkpoint_number=tt.Variable(np.int64(100)))) == "ckpt-100"


def test_manager_init_fn_interval_and_errors(tmp_path):
    called = []
    step = tt.Variable(np.int64(0))
    ckpt = train.Checkpoint(step=step)
    mgr = train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=None, step_counter=step,
                                  checkpoint_interval=10, init_fn=lambda: called.append(1))
    assert mgr.restore_or_initialize() is None and called == [1]
    assert mgr.save() is not None
    step.assign(np.int64(5))
    assert mgr.save() is None                      # too early
    assert mgr.save(check_interval=False) is not None
    step.assign(np.int64(15))
    assert mgr.save() is not None
    assert len(mgr.checkpoints) == 3               # max_to_keep=None keeps all
    with pytest.raises(ValueError, match="step_counter"):
        train.CheckpointManager(ckpt, str(tmp_path), checkpoint_interval=5)
    with pytest.raises(ValueError, match="max_to_keep"):
        train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=0)
    with pytest.raises(TypeError, match="Checkpoint"):
        train.CheckpointManager(step, str(tmp_path))


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    import tnp_train.checkpoint.manager as mod
    now = [1000.0]
    monkeypatch.setattr(mod.time, "time", lambda: now[0])
    mgr = train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(tmp_path),
                                  max_to_keep=1, keep_checkpoint_every_n_hours=1)
    kept = []
    for i in range(6):
        now[0] += 1800.0            # half an hour per save
        kept.append(mgr.save())
    on_disk = sorted(f for f in os.listdir(tmp_path) if f.startswith("ckpt-"))
    assert on_disk == ["ckpt-2", "ckpt-4", "ckpt-6"]   # one per hour + the latest


def test_crash_during_save_keeps_previous_latest(tmp_path, monkeypatch):
    v = tt.Variable(np.arange(4.0))
    ckpt = train.Checkpoint(v=v)
    mgr = train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1)
    first = mgr.save()
    v.assign(np.zeros(4))
    real_replace = os.replace

    def crash(src, dst):
        raise KeyboardInterrupt("killed")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        mgr.save()
    monkeypatch.setattr(os, "replace", real_replace)
    assert train.latest_checkpoint(str(tmp_path)) == first
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.json", "ckpt-1"]   # no temp left
    w = tt.Variable(np.zeros(4))
    train.Checkpoint(v=w).restore(train.latest_checkpoint(str(tmp_path))).assert_consumed()
    np.testing.assert_array_equal(w.numpy(), np.arange(4.0))
    assert int(ckpt.save_counter.numpy()) == 1      # the failed save did not count


def test_stale_temporaries_removed_and_state_errors(tmp_path):
    d = tmp_path
    (d / ".ckpt-3.tmp-abc123").write_bytes(b"partial")
    (d / ".other.tmp-x").write_bytes(b"not ours")
    train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(d))
    assert sorted(os.listdir(d)) == [".other.tmp-x"]
    (d / "checkpoint.json").write_text("{broken")
    with pytest.raises(CheckpointFormatError, match="checkpoint.json"):
        train.latest_checkpoint(str(d))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="Couldn't find"):
        train.list_variables(str(empty))


def test_tt_train_namespace():
    assert tt.train.Checkpoint is train.Checkpoint
    assert set(train.__all__) >= {"Checkpoint", "CheckpointManager", "latest_checkpoint",
                                  "list_variables", "load_variable"}
