"""Elastic training: rank KILL_RANK SIGKILLs itself at global step KILL_STEP (``when``:
"begin" before the step's work, "end" after its update), the survivors go on. Usage:
``mpiexec --with-ft ulfm -n 3 python mw_elastic.py OUT_DIR KILL_RANK KILL_STEP WHEN``
(``MW_ELASTIC=0``: without the opt-in, where the loss must end the job; ``MW_INPUT=dataset``:
a batched dataset instead of arrays; ``MW_LEARNS_BY_REVOKE=R``: rank R learns of the death only
from a peer's revoke, see ``learn_only_by_revoke``; ``MW_MIN_WORKERS=M``: the opt-in's
``min_workers``, each survivor then writing the error that stops it to ``OUT_DIR/<rank>.err``;
``MW_KILL_HOST=1``: under simulated hosts, KILL_RANK kills every rank of its host, then
itself).
Each survivor writes ``OUT_DIR/<old rank>.npz``: its final weights, the reference weights of
one process trained on the same data from the same initial weights, the workers-changed events
the lost ranks each event named (to the callbacks, to ``elastic.subscribe``'s listeners and in
the strategy's record of changes), and the time from the kill to the first completed step on the
survivors."""
import json
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


def learn_only_by_revoke(strategy):
    """Make this rank learn of the death the way a slow failure detector does: its own ULFM
    query sees no dead rank, and it enters the interrupted step only once a peer has revoked
    the communicator, so the revoke is what fails its collective. Returns the wait to call at
    the kill step's beginning."""
    from mpi4py import MPI

    from tnp_train.distribute.collective.mpi import MPICommunicator
    MPICommunicator._failed_ranks = lambda self: []

    def wait_for_the_revoke():
        comm = strategy.extended._worker_comm._comm
        # a revoke arrives in milliseconds; a bound 1000 times that only keeps a broken run
        # from hanging (the job then fails on the error below)
        deadline = time.monotonic() + 60.0
        while not comm.Is_revoked():
            if time.monotonic() > deadline:
                raise TimeoutError("no peer revoked the communicator within 60 s")
            MPI.COMM_SELF.Iprobe()          # lets MPI take in the peer's revoke
            time.sleep(1e-3)
    return wait_for_the_revoke


def kill_my_host():
    """SIGKILL the other ranks of this rank's host (simulated hosts, tests/distributed/_hosts.py:
    the processes of this network namespace that Open MPI's daemon here started). The daemon
    lives on: Open MPI 5.0's runtime ends the job when it loses one, ULFM or not."""
    mine, daemon = os.readlink("/proc/self/ns/net"), os.getppid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            same = ppid == daemon and os.readlink(f"/proc/{entry}/ns/net") == mine
        except (OSError, IndexError, ValueError):
            continue
        if same:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:
                pass


def main(out_dir, kill_rank, kill_step, when):
    rank, size = rank_and_size()
    x, y = data("mlp", N)
    tt.utils.set_random_seed(1 + rank)                 # worker 0's initial weights win
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    min_workers = int(os.environ.get("MW_MIN_WORKERS", "1"))
    if os.environ.get("MW_ELASTIC", "1") == "1":
        tt.distribute.experimental.enable_elastic_training(strategy, min_workers=min_workers)
    heard = []
    tt.distribute.experimental.elastic.subscribe(lambda old, new, gone: heard.append(list(gone)))
    with strategy.scope():
        model = compiled()
    init = model.get_weights()
    events, lost, marks = [], [], {}
    by_revoke = os.environ.get("MW_LEARNS_BY_REVOKE")
    wait = learn_only_by_revoke(strategy) if by_revoke is not None and \
        int(by_revoke) == rank else None

    class Kill(tt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.step = 0

        def _maybe(self, at):
            if rank == kill_rank and self.step == kill_step and when == at:
                # the kill's time, for the survivors' recovery figure (same host, same clock)
                with open(os.path.join(out_dir, "killed_at"), "w") as f:
                    f.write(repr(time.time()))
                if os.environ.get("MW_KILL_HOST") == "1":
                    kill_my_host()
                os.kill(os.getpid(), signal.SIGKILL)

        def on_train_batch_begin(self, batch, logs=None):
            self._maybe("begin")
            if wait is not None and self.step == kill_step:
                wait()

        def on_train_batch_end(self, batch, logs=None):
            self._maybe("end")
            if events and "first_step_after" not in marks:
                marks["first_step_after"] = time.time()
            self.step += 1

        def on_workers_changed(self, logs=None):
            events.append((logs["old_workers"], logs["new_workers"], logs["step"]))
            lost.append(list(logs["lost"]))

    try:
        if os.environ.get("MW_INPUT") == "dataset":      # DATA-sharded: re-split per step
            ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(B)
            hist = model.fit(ds, epochs=EPOCHS, verbose=0, callbacks=[Kill()])
        else:
            hist = model.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=False, verbose=0,
                             callbacks=[Kill()])
    except RuntimeError as exc:
        if min_workers == 1:
            raise
        with open(os.path.join(out_dir, f"{rank}.err"), "w") as f:
            f.write(str(exc))
        # the survivors' shrunk communicator still works: no survivor leaves (which could end
        # the job) before every survivor has written its error
        strategy.extended._worker_comm.barrier()
        return

    ref = compiled()
    ref.set_weights(init)
    ref.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=False, verbose=0)
    killed_at = float(open(os.path.join(out_dir, "killed_at")).read())
    save(os.path.join(out_dir, f"{rank}.npz"),
         weights=np.concatenate([w.ravel() for w in model.get_weights()]),
         ref=np.concatenate([w.ravel() for w in ref.get_weights()]),
         events=np.array(events, dtype=np.int64).reshape(-1, 3), lost=json.dumps(lost),
         heard=json.dumps(heard),
         elastic_changes=json.dumps([list(c[2]) for c in strategy.extended._elastic.changes]),
         workers=strategy.extended._num_workers, new_rank=strategy.extended._worker_index,
         recovery_s=marks.get("first_step_after", np.nan) - killed_at,
         epochs=len(hist.epoch))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
