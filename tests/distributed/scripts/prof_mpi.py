"""The profiler in a real 2-rank ``mpiexec`` job (tests/distributed/test_profiler_mpi.py).

Usage: ``mpiexec -n 2 python prof_mpi.py OUT_DIR``. Rank 1's trace clock is shifted by +1000 s
(``TNP_PROFILER_CLOCK_SHIFT_US``, the profiler's test hook): far more than a loaded machine ever
holds a process up, so the test tells an applied offset from a missing one with bounds of a
second. After a warm-up ``fit``, two profiled ``fit``s of 8 steps each under
MultiWorkerMirroredStrategy: ``even`` (both ranks alike) into ``OUT_DIR/even`` and ``late``
(rank 1 sleeps 200 ms at the start of every step) into ``OUT_DIR/late``. Each rank writes
``OUT_DIR/runs-<rank>.json``: the run folder of each phase as ``stop()`` returned it, and the
number of steps it ran.
"""
import json
import os
import sys
import time

from mw_common import data, mlp, rank_and_size, tt

SHIFT_US = 1e9
LATE_S = 0.200


class SleepOnRankOne(tt.callbacks.Callback):
    """Rank 1 arrives late at every step: the sleep is inside the step (after its batch)."""

    def __init__(self, rank, seconds):
        super().__init__()
        self.rank, self.seconds = rank, seconds

    def on_train_batch_begin(self, batch, logs=None):
        if self.rank == 1 and self.seconds:
            time.sleep(self.seconds)


def main():
    out_dir = sys.argv[1]
    rank, _ = rank_and_size()
    if rank == 1:
        os.environ["TNP_PROFILER_CLOCK_SHIFT_US"] = str(SHIFT_US)
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    x, y = data("mlp", 256)
    with strategy.scope():
        model = mlp()
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)          # warm-up, not profiled
    runs = {}
    for phase, sleep in (("even", 0.0), ("late", LATE_S)):
        tt.profiler.experimental.start(os.path.join(out_dir, phase))
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False,
                  callbacks=[SleepOnRankOne(rank, sleep)])
        runs[phase] = tt.profiler.experimental.stop()
    with open(os.path.join(out_dir, f"runs-{rank}.json"), "w") as f:
        json.dump({"runs": runs, "steps": 256 // 32}, f)


if __name__ == "__main__":
    main()
