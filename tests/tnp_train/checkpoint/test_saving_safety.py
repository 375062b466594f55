"""model.save over an existing path: the commit is the one replacement of weights.ckpt, the
leftovers of killed saves are removed only when their process is gone, and a directory is
written into (as TF's SavedModel does), never deleted."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tnp_train as tt
from tnp_train.checkpoint import CheckpointFormatError, saving


def _model(units, seed):
    m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(units), tt.layers.Dense(2)])
    rng = np.random.default_rng(seed)
    for v in m.weights:
        v.assign(rng.standard_normal(v.shape).astype(np.float32))
    return m


def _bits(m):
    return [(v.numpy().shape, v.numpy().tobytes()) for v in m.weights]


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _interrupt_config_write(monkeypatch):
    """Make the save stop (as a kill would) right after weights.ckpt is committed."""
    real = saving.atomic_write_bytes

    def write(path, data):
        if os.path.basename(path) == saving.CONFIG_NAME:
            raise KeyboardInterrupt("killed")
        return real(path, data)
    monkeypatch.setattr(saving, "atomic_write_bytes", write)


def test_save_stopped_after_the_commit_loads_the_new_model(tmp_path, monkeypatch):
    path = str(tmp_path / "m")
    old, new = _model(4, 0), _model(7, 1)          # the config changes with the weights
    old.save(path)
    _interrupt_config_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    monkeypatch.undo()
    cfg = json.load(open(os.path.join(path, saving.CONFIG_NAME)))
    assert cfg["config"]["layers"][1]["config"]["units"] == 4    # config.json is still the old
    assert _bits(tt.models.load_model(path)) == _bits(new)
    _model(5, 2).save(path)                        # and the next save goes on from there
    assert _bits(tt.models.load_model(path)) == _bits(_model(5, 2))


def test_a_hand_edited_config_is_what_loads(tmp_path):
    path = str(tmp_path / "m")
    _model(4, 0).save(path)
    cfg_path = os.path.join(path, saving.CONFIG_NAME)
    cfg = json.load(open(cfg_path))
    cfg["config"]["layers"][1]["config"]["units"] = 5
    json.dump(cfg, open(cfg_path, "w"))
    with pytest.raises(ValueError, match=r"holds shape \(3, 4\) float32, the variable has "
                                         r"shape \(3, 5\)"):
        tt.models.load_model(path)


def test_config_json_nested_200000_levels(tmp_path):
    path = str(tmp_path / "m")
    _model(4, 0).save(path)
    with open(os.path.join(path, saving.CONFIG_NAME), "w") as f:
        f.write("[" * 200_000 + "]" * 200_000)
    with pytest.raises(CheckpointFormatError, match=r"config.json: unreadable model config: "
                                                    r"RecursionError"):
        tt.models.load_model(path)


def test_saving_into_a_directory_keeps_its_other_files(tmp_path):
    """TF's SavedModel writes into an existing directory; a save must not delete it."""
    path = tmp_path / "project"
    (path / "data").mkdir(parents=True)
    (path / "data" / "train.csv").write_text("x,y\n")
    (path / "notes.txt").write_text("keep me")
    m = _model(4, 0)
    m.save(str(path))
    assert (path / "notes.txt").read_text() == "keep me"
    assert (path / "data" / "train.csv").read_text() == "x,y\n"
    assert _bits(tt.models.load_model(str(path))) == _bits(m)


def test_next_save_removes_leftovers_of_dead_saves_only(tmp_path):
    path = tmp_path / "m"
    _model(4, 0).save(str(path))
    dead, live = _dead_pid(), os.getpid()

    def tmp_dir(name, files=("config.json", "weights.ckpt")):
        d = tmp_path / name
        d.mkdir()
        for f in files:
            (d / f).write_bytes(b"partial")
        return d

    gone = [tmp_dir(f"m.tmp-{dead}-abcd1234"),
            tmp_dir(f"m.tmp-{dead}-efgh5678", files=(f".weights.ckpt.tmp-{dead}-x1y2z3w4",)),
            path / f".weights.ckpt.tmp-{dead}-abcd1234",
            path / f".config.json.tmp-{dead}-abcd1234"]
    kept = [tmp_dir(f"m.tmp-{live}-abcd1234"),               # a save in progress (this process)
            tmp_dir(f"m.tmp-{dead}-ijkl9012", files=("mine.txt",)),   # not what a save writes
            tmp_dir("m.tmp-nopid123"),                       # no pid, newer than this process
            tmp_dir(f"other.tmp-{dead}-abcd1234"),           # another path's
            path / f".weights.ckpt.tmp-{live}-abcd1234"]
    for p in gone + kept:
        if not p.exists():
            p.write_bytes(b"partial")
    old_style = tmp_dir("m.tmp-abcd1234")                    # no pid, older than this process
    os.utime(old_style, (1.0, 1.0))
    gone.append(old_style)

    m = _model(4, 1)
    m.save(str(path))
    assert [p for p in gone if os.path.lexists(p)] == []
    assert [p for p in kept if not os.path.lexists(p)] == []
    assert _bits(tt.models.load_model(str(path))) == _bits(m)


def test_load_weights_from_a_model_directory(tmp_path):
    m = _model(4, 0)
    m.save(str(tmp_path / "m"))
    m2 = _model(4, 9)
    m2.load_weights(str(tmp_path / "m"))
    assert _bits(m2) == _bits(m)


def test_save_weights_removes_leftovers_of_dead_saves_only(tmp_path):
    dead, live = _dead_pid(), os.getpid()
    gone = tmp_path / f".w.ckpt.tmp-{dead}-abcd1234"
    kept = [tmp_path / f".w.ckpt.tmp-{live}-abcd1234", tmp_path / f".v.ckpt.tmp-{dead}-abcd1234"]
    for p in [gone] + kept:
        p.write_bytes(b"partial")
    _model(4, 0).save_weights(str(tmp_path / "w.ckpt"))
    assert not gone.exists() and all(p.exists() for p in kept)
