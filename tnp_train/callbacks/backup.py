"""``BackupAndRestore``: resume an interrupted ``fit`` where it stopped (TF 2.4's
``tf.keras.callbacks.experimental.BackupAndRestore``, with the ``save_freq`` and
``delete_checkpoint`` arguments of later versions).

The backup is a ``tt.train.Checkpoint`` of the model, its optimizer, the epoch (and batch)
counter and the states of tnp_train's random generator and of the layers' own (``seed=``)
generators, written by a ``CheckpointManager`` (``max_to_keep=1``), whose saves are atomic: a
process killed at any moment leaves the previous complete backup or the new one.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from ._util import batch_save_due, check_save_freq, chief_only, wait_for_chief
from .base import Callback

__all__ = ["BackupAndRestore"]

_MASK64 = (1 << 64) - 1


def _rng_words(rng=None):
    """A generator's state (PCG64; by default tnp_train's, this thread's) as 6 uint64 words,
    or None."""
    if rng is None:
        from ..utils.random import get_rng
        rng = get_rng()
    state = rng.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        return None
    s, inc = state["state"]["state"], state["state"]["inc"]
    return np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"],
                     state["uinteger"]], dtype=np.uint64)


def _set_rng_words(words, rng=None):
    if rng is None:
        from ..utils.random import get_rng
        rng = get_rng()
    if rng.bit_generator.state.get("bit_generator") != "PCG64":
        return
    w = [int(x) for x in words]
    rng.bit_generator.state = {"bit_generator": "PCG64",
                               "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
                               "has_uint32": w[4], "uinteger": w[5]}


def _layer_generators(model):
    """The generators of ``model``'s layers made with their own ``seed`` (Dropout, the noise
    and random image layers), each once, in layer order."""
    from ..layers.base import seeded_generators
    return [g for g in seeded_generators(model)
            if g.bit_generator.state.get("bit_generator") == "PCG64"]


def _layer_words(gens):
    return np.stack([_rng_words(g) for g in gens]) if gens else None


class BackupAndRestore(Callback):
    """Mirrors ``tf.keras.callbacks.BackupAndRestore(backup_dir, save_freq="epoch",
    delete_checkpoint=True)``.

    At each epoch's end (``save_freq="epoch"``) a backup of the model's weights, the optimizer's
    state (slots, iterations), the epoch number and the states of tnp_train's random generator
    and of the layers' own (``seed=``) generators (which fix the next epochs' shuffling and
    dropout) is written to ``backup_dir``. When ``fit`` starts and a backup exists, all of it
    is restored and training resumes at the epoch after the last completed one
    (``model._initial_epoch_from_backup``), so an interrupted run ends with the weights an
    uninterrupted one would have had. With ``delete_checkpoint`` the backup
    is deleted when ``fit`` ends normally (also after an early stop), and kept when it fails.

    ``save_freq=N`` (an integer) backs up every ``N`` training batches instead; a run resumed
    from such a backup restarts the interrupted epoch with the generator state of that epoch's
    start (same shuffling) and asks ``fit`` to skip the batches already done through
    ``model._initial_step_from_backup``.

    ``backup_dir`` must be used by this callback only, and by one job at a time. Under a
    multi-worker strategy (TF 2.4's multi-worker BackupAndRestore) the chief (worker 0) writes
    and deletes the backup and every worker restores from it, so a relaunched job resumes on
    every worker at the same epoch with the same state.
    """

    _supports_tf_logs = True     # never looks at the logs

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed")
        self.save_freq = check_save_freq(save_freq, "BackupAndRestore")
        self.backup_dir = os.fspath(backup_dir)
        self.delete_checkpoint = delete_checkpoint
        self._manager = None
        self._batches_since_save = 0
        self._epoch_start_rng = None
        self._epoch_start_layers = None

    # ------------------------------------------------------------------ the checkpoint
    def _build(self):
        from ..autodiff import Variable
        from ..checkpoint import Checkpoint, CheckpointManager

        self._epoch_var = Variable(np.int64(-1), trainable=False, name="backup/epoch",
                                   dtype="int64")
        # batches done in epoch `epoch`; -1 when the epoch is complete
        self._step_var = Variable(np.int64(-1), trainable=False, name="backup/step",
                                  dtype="int64")
        words = _rng_words()
        self._rng_var = Variable(np.zeros(6, np.uint64) if words is None else words,
                                 trainable=False, name="backup/rng", dtype="uint64")
        self._has_rng = Variable(np.int64(0 if words is None else 1), trainable=False,
                                 name="backup/has_rng", dtype="int64")
        children = dict(model=self.model, epoch=self._epoch_var, step=self._step_var,
                        rng=self._rng_var, has_rng=self._has_rng)
        # the layers' own generators (a seeded Dropout's masks), when the model has any
        self._layer_gens = _layer_generators(self.model)
        self._layer_rngs_var = None
        if self._layer_gens:
            self._layer_rngs_var = Variable(_layer_words(self._layer_gens), trainable=False,
                                            name="backup/layer_rngs", dtype="uint64")
            children["layer_rngs"] = self._layer_rngs_var
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            children["optimizer"] = optimizer
        self._checkpoint = Checkpoint(**children)
        self._manager = CheckpointManager(self._checkpoint, self.backup_dir, max_to_keep=1,
                                          checkpoint_name="backup")

    def _save(self, epoch, step, rng_words, layer_words):
        self._epoch_var.assign(np.int64(epoch))
        self._step_var.assign(np.int64(step))
        if rng_words is not None:
            self._rng_var.assign(rng_words)
            self._has_rng.assign(np.int64(1))
        else:
            self._has_rng.assign(np.int64(0))
        if layer_words is not None:
            self._layer_rngs_var.assign(layer_words)
        with chief_only(self.model) as writes:
            if writes:
                self._manager.save()
        wait_for_chief(self.model)   # no worker runs ahead of (and aborts) the chief's write

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, logs=None):
        self._build()
        self._batches_since_save = 0
        latest = self._manager.latest_checkpoint
        if latest is None:
            return
        self._checkpoint.restore(latest)
        epoch = int(self._epoch_var.numpy())
        step = int(self._step_var.numpy())
        if int(self._has_rng.numpy()):
            _set_rng_words(self._rng_var.numpy())
        if self._layer_rngs_var is not None:
            for gen, words in zip(self._layer_gens, self._layer_rngs_var.numpy()):
                if words.any():                 # zeros: a backup made without this state
                    _set_rng_words(words, gen)
        if step < 0:
            self.model._initial_epoch_from_backup = epoch + 1
        else:                       # a mid-epoch backup: redo that epoch, skipping `step` batches
            self.model._initial_epoch_from_backup = epoch
            self.model._initial_step_from_backup = step

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch
        if self.save_freq != "epoch":
            self._epoch_start_rng = _rng_words()
            self._epoch_start_layers = _layer_words(self._layer_gens)

    def on_train_batch_end(self, batch, logs=None):
        if batch_save_due(self):
            self._save(self._current_epoch, batch + 1, self._epoch_start_rng,
                       self._epoch_start_layers)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, -1, _rng_words(), _layer_words(self._layer_gens))

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and self._manager is not None:
            with chief_only(self.model) as writes:
                if writes:
                    self._delete_backup()
        self._manager = None

    def _delete_backup(self):
        from ..checkpoint.manager import STATE_FILENAME

        for path in self._manager.checkpoints:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self._manager.directory, STATE_FILENAME))
        with contextlib.suppress(OSError):      # only if nothing else is in it
            os.rmdir(self._manager.directory)
