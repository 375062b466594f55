"""Under MultiWorkerMirroredStrategy the chief (worker 0) draws the progress bar and makes every
write (ModelCheckpoint, CSVLogger, BackupAndRestore, ``model.save``/``save_weights``); every
worker restores a backup, so a relaunched job resumes where the killed one stopped.

Usage: ``mpiexec -n N python mw_callbacks.py OUT_DIR MODE`` where MODE is

* ``writes``: ``fit`` (verbose=1, 2 epochs) with ModelCheckpoint, CSVLogger and
  BackupAndRestore, then ``model.save`` on every rank followed at once by ``load_model`` of
  what the chief wrote, ``model.save_weights``, and twice a ``model.save`` that fails on the
  chief; each rank writes ``OUT_DIR/<rank>.json`` with what it printed during ``fit``, how many
  times it called each writer, whether the loaded model equals its own, the save errors it got
  and an ``evaluate`` run afterwards;
* ``crash``: ``fit`` for 4 epochs with BackupAndRestore(OUT_DIR/backup) that raises at the end
  of epoch 1 (after the backup): the job ends with an error;
* ``resume``: the same ``fit`` again, uninterrupted: it resumes at epoch 2; each rank writes
  its epochs and final weights to ``OUT_DIR/resume-<rank>.npz``;
* ``straight``: the 4 epochs in one go with another backup folder (the reference):
  ``OUT_DIR/straight-<rank>.npz``.
"""
import contextlib
import io
import json
import sys

import numpy as np

from mw_common import data, mlp, rank_and_size, save, tt

COUNTS = {}


def count_calls(owner, name):
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        COUNTS[name] = COUNTS.get(name, 0) + 1
        return original(*args, **kwargs)
    setattr(owner, name, counted)


def build(strategy):
    with strategy.scope():
        model = mlp()
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


class CrashAfter(tt.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError(f"simulated failure at the end of epoch {epoch}")


def main():
    out_dir, mode = sys.argv[1], sys.argv[2]
    rank, _ = rank_and_size()
    tt.utils.set_random_seed(1 + 1000 * rank)
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    x, y = data("mlp", 128)
    if mode == "writes":
        import tnp_train.checkpoint.manager as manager
        import tnp_train.checkpoint.saving as saving
        count_calls(saving, "save_model")
        count_calls(saving, "save_weights")
        count_calls(manager.CheckpointManager, "save")
        model = build(strategy)
        cbs = [tt.callbacks.ModelCheckpoint(f"{out_dir}/ckpt-{{epoch}}", verbose=1),
               tt.callbacks.CSVLogger(f"{out_dir}/log.csv"),
               tt.callbacks.experimental.BackupAndRestore(f"{out_dir}/backup")
               if hasattr(tt.callbacks, "experimental") else
               tt.callbacks.BackupAndRestore(f"{out_dir}/backup")]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            model.fit(x, y, batch_size=32, epochs=2, verbose=1, callbacks=cbs)
        model.save(f"{out_dir}/final")
        # TF's multi-worker tutorial: every worker saves, then at once loads the chief's model
        loaded = tt.models.load_model(f"{out_dir}/final")
        same = all(np.array_equal(a, b) for a, b in zip(loaded.get_weights(), model.get_weights()))
        model.save_weights(f"{out_dir}/final-weights")
        # a write that fails on the chief raises on every worker, and the job goes on
        if rank == 0:
            open(f"{out_dir}/blocker", "w").close()
        errors = []
        for _ in range(2):
            try:
                model.save(f"{out_dir}/blocker/model" if rank == 0 else f"{out_dir}/tmp-{rank}")
            except Exception as e:   # noqa: BLE001
                errors.append(f"{type(e).__name__}: {e}")
        after = model.evaluate(x, y, batch_size=32, verbose=0)   # collectives still line up
        with open(f"{out_dir}/{rank}.json", "w") as f:
            json.dump({"printed": printed.getvalue(), "counts": COUNTS, "loaded_same": same,
                       "errors": errors, "after": after}, f)
    else:
        backup = f"{out_dir}/{'straight-backup' if mode == 'straight' else 'backup'}"
        model = build(strategy)
        cbs = [tt.callbacks.BackupAndRestore(backup)]
        if mode == "crash":
            cbs.append(CrashAfter(1))
        hist = model.fit(x, y, batch_size=32, epochs=4, verbose=0, callbacks=cbs)
        save(f"{out_dir}/{mode}-{rank}.npz", epochs=hist.epoch, loss=hist.history["loss"],
             weights=np.concatenate([w.numpy().ravel() for w in model.weights]))
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
