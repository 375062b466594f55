"""A crafted checkpoint state file (``checkpoint.json``) is data: CheckpointManager deletes only
its own checkpoint files (``<checkpoint_name>-<N>``, regular files directly in its directory),
and a state file it cannot trust is a CheckpointFormatError naming it."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import tnp_train as tt
from tnp_train import train
from tnp_train.checkpoint import CheckpointFormatError
from tnp_train.checkpoint._format import write_checkpoint_file

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt",
                                    reason="needs symlinks")


def _state(directory, paths, latest=None, **extra):
    state = {"format": "tnp_train.checkpoint_state", "format_version": 1,
             "model_checkpoint_path": latest if latest is not None else paths[-1],
             "all_model_checkpoint_paths": paths,
             "all_model_checkpoint_timestamps": [1.0 + i for i in range(len(paths))],
             "last_preserved_timestamp": 0.5}
    state.update(extra)
    (directory / "checkpoint.json").write_text(json.dumps(state))


def _victim(path, text="precious"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@needs_symlinks
def test_crafted_state_file_deletes_nothing_but_the_managers_checkpoints(tmp_path, caplog):
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "outside"
    victims = [_victim(tmp_path / "victim"),                  # "../victim"
               _victim(outside / "absolute"),                 # an absolute path elsewhere
               _victim(outside / "linked"),                   # target of run/ckpt-7
               _victim(outside / "ckpt-2"),                   # reached through run/escape/
               _victim(tmp_path / "other_run" / "ckpt-3"),    # a checkpoint name, elsewhere
               _victim(run / "notes.txt"),                    # not the manager's pattern
               _victim(run / "model-4"),                      # another prefix
               _victim(run / "sub" / "ckpt-5")]               # not directly in the directory
    os.symlink(outside / "linked", run / "ckpt-7")
    os.symlink(outside, run / "escape", target_is_directory=True)
    write_checkpoint_file(str(run / "ckpt-6"), [("x", np.zeros(2))])   # a real old checkpoint
    crafted = ["../victim", str(outside / "absolute"), "ckpt-7", "escape/ckpt-2",
               "../other_run/ckpt-3", "notes.txt", "model-4", "sub/ckpt-5",
               "escape/../ckpt-6",       # (the kernel resolves it to outside/../ckpt-6)
               str(run / ".." / "run" / "ckpt-6")]
    _state(run, crafted + ["ckpt-6"])

    caplog.set_level(logging.WARNING, logger="tnp_train.checkpoint")
    mgr = train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(run), max_to_keep=1)
    assert mgr.checkpoints == [str(run / "ckpt-6")]
    for entry in crafted:
        assert repr(os.path.join(str(run), entry)) in caplog.text, entry
    first = mgr.save()
    second = mgr.save()
    assert mgr.checkpoints == [second]

    for v in victims:
        assert v.read_text() == "precious", v
    assert os.path.islink(run / "ckpt-7") and os.path.islink(run / "escape")
    assert sorted(os.listdir(run)) == ["checkpoint.json", "ckpt-2", "ckpt-7", "escape",
                                       "model-4", "notes.txt", "sub"]
    assert not os.path.exists(first) and not os.path.exists(run / "ckpt-6")
    # what the manager records from now on names only its own checkpoints
    state = train.get_checkpoint_state(str(run))
    assert state["all_model_checkpoint_paths"] == [second]


@needs_symlinks
def test_a_checkpoint_swapped_for_a_symlink_before_the_sweep_is_not_deleted(tmp_path, caplog):
    run = tmp_path / "run"
    victim = _victim(tmp_path / "victim")
    mgr = train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(run), max_to_keep=1)
    first = mgr.save()
    os.remove(first)
    os.symlink(victim, first)              # the directory changed after the manager read it
    caplog.set_level(logging.WARNING, logger="tnp_train.checkpoint")
    mgr.save()
    assert victim.read_text() == "precious" and os.path.islink(first)
    assert "a symlink" in caplog.text and "will not delete it" in caplog.text


def test_a_directory_named_like_a_checkpoint_is_not_removed(tmp_path):
    run = tmp_path / "run"
    _victim(run / "ckpt-1" / "data")
    _state(run, ["ckpt-1"])
    mgr = train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(run), max_to_keep=1)
    mgr.save(checkpoint_number=2)
    mgr.save(checkpoint_number=3)
    assert (run / "ckpt-1" / "data").read_text() == "precious"


def test_missing_listed_checkpoints_are_dropped_without_a_warning(tmp_path, caplog):
    run = tmp_path / "run"
    run.mkdir()
    write_checkpoint_file(str(run / "ckpt-2"), [("x", np.zeros(2))])
    _state(run, ["ckpt-1", "ckpt-2"])
    caplog.set_level(logging.WARNING, logger="tnp_train.checkpoint")
    mgr = train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(run))
    assert mgr.checkpoints == [str(run / "ckpt-2")] and caplog.text == ""


# ------------------------------------------------------------------ untrustworthy state files
@pytest.mark.parametrize("text", [
    "[" * 200_000 + "]" * 200_000,
    '{"format": "tnp_train.checkpoint_state", "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
    '{"format": "tnp_train.checkpoint_state", "format_version": ' + "1" * 5000 + "}",
], ids=["nested_200000", "nested_value", "int_5000_digits"])
def test_unparsable_state_file(tmp_path, text):
    (tmp_path / "checkpoint.json").write_text(text)
    with pytest.raises(CheckpointFormatError, match="checkpoint.json: unreadable checkpoint state"):
        train.latest_checkpoint(str(tmp_path))
    with pytest.raises(CheckpointFormatError, match="checkpoint.json"):
        train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(tmp_path))


@pytest.mark.parametrize("extra", [
    {"all_model_checkpoint_paths": "ckpt-1"},            # a string, not a list
    {"all_model_checkpoint_paths": {"ckpt-1": 1}},
    {"all_model_checkpoint_paths": [1, 2]},
    {"all_model_checkpoint_timestamps": "12"},
    {"all_model_checkpoint_timestamps": ["x"]},
    {"all_model_checkpoint_timestamps": [True]},
    {"last_preserved_timestamp": "yesterday"},
    {"last_preserved_timestamp": [1]},
    {"model_checkpoint_path": 5},
], ids=["paths_str", "paths_dict", "paths_ints", "stamps_str", "stamps_strs", "stamps_bool",
        "preserved_str", "preserved_list", "latest_int"])
def test_state_file_with_wrong_types(tmp_path, extra):
    paths = ["ckpt-1"] if "all_model_checkpoint_paths" not in extra else []
    _state(tmp_path, paths or ["ckpt-1"], latest="ckpt-1", **extra)
    with pytest.raises(CheckpointFormatError, match="checkpoint.json: unreadable checkpoint state"):
        train.get_checkpoint_state(str(tmp_path))
    with pytest.raises(CheckpointFormatError, match="checkpoint.json"):
        train.CheckpointManager(train.Checkpoint(v=tt.Variable(1.0)), str(tmp_path))
