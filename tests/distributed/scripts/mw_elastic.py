"""Elastic training: rank KILL_RANK SIGKILLs itself at global step KILL_STEP (``when``:
"begin" before the step's work, "end" after its update), the survivors go on. Usage:
``mpiexec --with-ft ulfm -n 3 python mw_elastic.py OUT_DIR KILL_RANK KILL_STEP WHEN``
(``MW_ELASTIC=0``: without the opt-in, where the loss must end the job; ``MW_INPUT=dataset``:
a batched dataset instead of arrays).
Each survivor writes ``OUT_DIR/<old rank>.npz``: its final weights, the reference weights of
one process trained on the same data from the same initial weights, the workers-changed events
and the time from the kill to the first completed step on the survivors."""
import os
import signal
import sys
import time

import numpy as np

from mw_common import data, mlp, rank_and_size, save, tt

B, EPOCHS, N = 12, 3, 48


def compiled():
    model = mlp()
    model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def main(out_dir, kill_rank, kill_step, when):
    rank, size = rank_and_size()
    x, y = data("mlp", N)
    tt.utils.set_random_seed(1 + rank)                 # worker 0's initial weights win
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    if os.environ.get("MW_ELASTIC", "1") == "1":
        tt.distribute.experimental.enable_elastic_training(strategy)
    with strategy.scope():
        model = compiled()
    init = model.get_weights()
    events, marks = [], {}

    class Kill(tt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.step = 0

        def _maybe(self, at):
            if rank == kill_rank and self.step == kill_step and when == at:
                # the kill's time, for the survivors' recovery figure (same host, same clock)
                with open(os.path.join(out_dir, "killed_at"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)

        def on_train_batch_begin(self, batch, logs=None):
            self._maybe("begin")

        def on_train_batch_end(self, batch, logs=None):
            self._maybe("end")
            if events and "first_step_after" not in marks:
                marks["first_step_after"] = time.time()
            self.step += 1

        def on_workers_changed(self, logs=None):
            events.append((logs["old_workers"], logs["new_workers"], logs["step"]))

    if os.environ.get("MW_INPUT") == "dataset":      # DATA-sharded: re-split per step
        ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(B)
        hist = model.fit(ds, epochs=EPOCHS, verbose=0, callbacks=[Kill()])
    else:
        hist = model.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=False, verbose=0,
                         callbacks=[Kill()])

    ref = compiled()
    ref.set_weights(init)
    ref.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=False, verbose=0)
    killed_at = float(open(os.path.join(out_dir, "killed_at")).read())
    save(os.path.join(out_dir, f"{rank}.npz"),
         weights=np.concatenate([w.ravel() for w in model.get_weights()]),
         ref=np.concatenate([w.ravel() for w in ref.get_weights()]),
         events=np.array(events, dtype=np.int64).reshape(-1, 3),
         workers=strategy.extended._num_workers, new_rank=strategy.extended._worker_index,
         recovery_s=marks.get("first_step_after", np.nan) - killed_at,
         epochs=len(hist.epoch))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
