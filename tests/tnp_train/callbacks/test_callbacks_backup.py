"""BackupAndRestore with the real Model.fit: a training process killed with SIGKILL mid-epoch
resumes from its last completed epoch and ends with the weights of an uninterrupted run."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tnp_train as tt
from tnp_train.callbacks import BackupAndRestore, Callback

TRAIN_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys
    import numpy as np
    import tnp_train as tt
    from tnp_train.callbacks import BackupAndRestore, Callback

    backup_dir, out, kill_epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    layer_seed = None if sys.argv[4] == "-" else int(sys.argv[4])

    class KillMidEpoch(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.epoch == kill_epoch and batch == 1:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

    tt.utils.set_random_seed(1234)
    data = np.random.default_rng(0)
    x = data.normal(size=(24, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32") + 0.1).astype("float32")
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="tanh"),
                           tt.layers.Dropout(0.25, seed=layer_seed),
                           tt.layers.GaussianNoise(0.1), tt.layers.Dense(1)])
    model.compile(optimizer=tt.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    cbs = [KillMidEpoch()]
    if backup_dir != "-":
        cbs.insert(0, BackupAndRestore(backup_dir))
    hist = model.fit(x, y, batch_size=6, epochs=5, shuffle=True, verbose=0, callbacks=cbs)
    np.savez(out, *[np.asarray(w) for w in model.get_weights()])
    with open(out + ".json", "w") as f:
        json.dump({"epochs": hist.epoch,
                   "iterations": int(np.asarray(model.optimizer.iterations))}, f)
""")


def _run(tmp_path, backup_dir, out, kill_epoch, layer_seed=None):
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(backup_dir), str(out),
                             str(kill_epoch), "-" if layer_seed is None else str(layer_seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:          # never leave a process behind
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _load(out):
    with np.load(str(out) + ".npz") as z:
        weights = [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
    with open(str(out) + ".json") as f:
        return weights, json.load(f)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("layer_seed", [None, 5], ids=["global-rng", "layer-seed"])
def test_killed_run_resumes_with_the_same_weights(tmp_path, layer_seed):
    # the dropout masks come from tnp_train's generator, or (layer_seed) from the layer's own
    # generator: both are in the backup
    backup = tmp_path / "backup"
    rc, err = _run(tmp_path, backup, tmp_path / "killed", 2, layer_seed)
    assert rc == -signal.SIGKILL, err
    assert not (tmp_path / "killed.npz").exists()
    assert os.path.isdir(backup) and os.listdir(backup)      # the backup of epochs 0-1

    rc, err = _run(tmp_path, backup, tmp_path / "resumed", -1, layer_seed)
    assert rc == 0, err
    rc, err = _run(tmp_path, "-", tmp_path / "reference", -1, layer_seed)
    assert rc == 0, err

    resumed, info = _load(tmp_path / "resumed")
    reference, ref_info = _load(tmp_path / "reference")
    assert info["epochs"] == [2, 3, 4] and ref_info["epochs"] == [0, 1, 2, 3, 4]
    assert info["iterations"] == ref_info["iterations"] == 20     # optimizer state restored
    assert len(resumed) == len(reference) == 4
    for a, b in zip(resumed, reference):
        np.testing.assert_array_equal(a, b)
    assert not os.path.exists(backup)          # deleted at the end of the successful run


def _model():
    model = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1)])
    model.compile(optimizer=tt.optimizers.SGD(0.1, momentum=0.5), loss="mse")
    return model


_X = np.arange(16, dtype="float32").reshape(8, 2) / 10
_Y = _X.sum(1, keepdims=True)


class Boom(Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("interrupted")


def test_in_process_resume_and_keep_backup(tmp_path):
    model = _model()
    cb = BackupAndRestore(tmp_path / "b", delete_checkpoint=False)
    with pytest.raises(RuntimeError, match="interrupted"):
        model.fit(_X, _Y, batch_size=4, epochs=4, verbose=0, shuffle=False,
                  callbacks=[cb, Boom(3)])
    w3 = [np.array(w) for w in model.get_weights()]
    fresh = _model()
    hist = fresh.fit(_X, _Y, batch_size=4, epochs=3, verbose=0, shuffle=False, callbacks=[cb])
    # epochs 0-2 were backed up: nothing left to run, the weights are epoch 2's
    assert hist.epoch == []
    for a, b in zip(fresh.get_weights(), w3):
        np.testing.assert_array_equal(a, b)
    assert os.listdir(tmp_path / "b")          # delete_checkpoint=False keeps it
    hist = fresh.fit(_X, _Y, batch_size=4, epochs=5, verbose=0, shuffle=False, callbacks=[cb])
    assert hist.epoch == [3, 4]


def test_no_backup_starts_at_initial_epoch(tmp_path):
    model = _model()
    hist = model.fit(_X, _Y, batch_size=4, epochs=3, initial_epoch=1, verbose=0,
                     callbacks=[BackupAndRestore(tmp_path / "b")])
    assert hist.epoch == [1, 2]
    assert not os.path.exists(tmp_path / "b")


def test_arguments():
    with pytest.raises(ValueError, match="backup_dir"):
        BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        BackupAndRestore("d", save_freq="batch")


class BoomAtBatch(Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == (1, 1):
            raise RuntimeError("interrupted")


def test_batch_level_backup_asks_fit_to_skip_done_batches(tmp_path):
    model = _model()
    cb = BackupAndRestore(tmp_path / "b", save_freq=1)
    with pytest.raises(RuntimeError, match="interrupted"):
        # 3 batches per epoch; backups after each batch, the last at epoch 1, batch 1
        model.fit(_X, _Y, batch_size=3, epochs=3, verbose=0, shuffle=False,
                  callbacks=[cb, BoomAtBatch()])
    fresh = _model()
    cb2 = BackupAndRestore(tmp_path / "b", save_freq=1)
    cb2.set_model(fresh)
    cb2.on_train_begin()
    assert fresh._initial_epoch_from_backup == 1 and fresh._initial_step_from_backup == 2
    for a, b in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_mid_epoch_backup_resumes_fit_at_the_next_batch(tmp_path):
    """save_freq=2: a crash in the middle of epoch 1 resumes at the batch after the last
    backup, and ends with the weights of an uninterrupted run."""
    import numpy as np
    import tnp_train as tt

    r = np.random.default_rng(0)
    X, Y = r.standard_normal((40, 3)).astype(np.float32), r.integers(0, 2, 40)

    def make():
        tt.utils.set_random_seed(0)
        m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="relu"), tt.layers.Dense(2)])
        m.compile(tt.optimizers.Adam(0.01), tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    ref = make()
    ref.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)

    class Crash(tt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            if self.epoch == 1 and batch == 2:      # after the backup taken at batch 1
                raise KeyboardInterrupt("simulated crash")

    first = make()
    backup = tt.callbacks.BackupAndRestore(str(tmp_path / "bk"), save_freq=2)
    try:
        first.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[backup, Crash()])
    except KeyboardInterrupt:
        pass
    second = make()
    seen = []
    log = tt.callbacks.LambdaCallback(on_train_batch_begin=lambda b, logs: seen.append(b))
    second.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0,
               callbacks=[tt.callbacks.BackupAndRestore(str(tmp_path / "bk"), save_freq=2), log])
    assert seen[0] > 0                            # resumed mid-epoch, not at batch 0
    assert int(second.optimizer.iterations.numpy()) == int(ref.optimizer.iterations.numpy())
    for a, b in zip(ref.get_weights(), second.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_tf_2_4_spelling_is_the_same_callback():
    import tnp_train as tt
    assert tt.callbacks.experimental.BackupAndRestore is tt.callbacks.BackupAndRestore
