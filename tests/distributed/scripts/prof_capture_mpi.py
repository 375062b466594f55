"""Capture on demand from a running 2-rank job (tests/distributed/test_profiler_capture_mpi.py).

Usage: ``mpiexec -n 2 python prof_capture_mpi.py OUT_DIR PORT DURATION_MS``. Every rank starts
its profiler server on ``PORT`` (rank r binds ``PORT + local rank``) and trains an MLP under
MultiWorkerMirroredStrategy, rank 1 sleeping 200 ms at the start of every step, one epoch after
another. After the warm-up, rank 0 starts a separate process, ``python -m tnp_train.profiler
capture`` against both servers into ``OUT_DIR/logs``; the ranks go on training until it ends.
Rank 0 writes ``OUT_DIR/capture.json``: the capture's exit code and output, and the epochs that
ran meanwhile.
"""
import json
import os
import subprocess
import sys
import time

from mw_common import data, mlp, rank_and_size, tt

LATE_S = 0.200        # longer than a loaded machine holds a process up


class SleepOnRankOne(tt.callbacks.Callback):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def on_train_batch_begin(self, batch, logs=None):
        if self.rank == 1:
            time.sleep(LATE_S)


def main():
    out_dir, port, duration_ms = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rank, _ = rank_and_size()
    from tnp_train.distribute.collective import get_world
    from tnp_train.profiler.experimental import server
    server.start(port)
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    x, y = data("mlp", 128)
    with strategy.scope():
        model = mlp()
        model.compile(tt.optimizers.SGD(0.05),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    late = [SleepOnRankOne(rank)]
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=late)     # warm-up
    world = get_world()
    proc = None
    if rank == 0:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tnp_train.profiler", "capture", "--service",
             f"localhost:{port},localhost:{port + 1}", "--duration-ms", duration_ms,
             os.path.join(out_dir, "logs")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    epochs, deadline = 0, time.monotonic() + 90
    while True:
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False, callbacks=late)
        epochs += 1
        done = proc.poll() is not None if rank == 0 else None
        if world.broadcast_object(done or time.monotonic() > deadline, root=0):
            break
    server.stop()
    if rank == 0:
        out, err = proc.communicate(timeout=60)
        with open(os.path.join(out_dir, "capture.json"), "w") as f:
            json.dump({"returncode": proc.returncode, "stdout": out, "stderr": err,
                       "epochs": epochs}, f)


if __name__ == "__main__":
    main()
