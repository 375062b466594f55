"""A parameter server killed (SIGKILL, by PID) during training (tests/distributed/test_ps.py).

    mpiexec --with-ft ulfm -n 4 python ps_kill_ps.py OUTDIR

Rank 0 the chief, rank 1 the ps, ranks 2-3 the workers. After 10 closures have finished the
chief kills the ps, then calls join, fetch, schedule and done; it prints ``RESULT <json>`` with
what each raised and how many seconds after the kill."""
import json
import os
import signal
import sys
import time

from ps_common import dataset_fn, pids, small_mlp, start, tt, when_done

outdir = sys.argv[1]
resolver, strategy, coordinator = start(outdir)
rank_pids = pids(outdir, resolver.size)
with strategy.scope():
    model = small_mlp()
    optimizer = tt.optimizers.SGD(0.05)
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")


def replica_fn(batch):                  # TF's tutorial: the step runs under strategy.run
    x, y = batch
    with tt.GradientTape() as tape:
        loss = tt.nn.compute_average_loss(loss_fn(y, model(x, training=True)))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    time.sleep(0.01)
    return loss


def train_step(iterator):
    return strategy.run(replica_fn, args=(next(iterator),))


it = iter(coordinator.create_per_worker_dataset(dataset_fn))
killed = {}


def kill_ps():
    killed["at"] = time.monotonic()
    os.kill(rank_pids[1], signal.SIGKILL)


results = []
when_done(results, 10, kill_ps)
results.extend(coordinator.schedule(train_step, args=(it,)) for _ in range(2000))
out = {}


def attempt(name, fn):
    try:
        fn()
        out[name] = None
    except Exception as e:    # noqa: BLE001
        out[name] = {"type": type(e).__name__, "message": str(e),
                     "seconds_after_kill": time.monotonic() - killed["at"]}


attempt("join", coordinator.join)
attempt("fetch", results[-1].fetch)
attempt("schedule", lambda: coordinator.schedule(train_step, args=(it,)))
attempt("done", coordinator.done)
print("RESULT " + json.dumps(out), flush=True)
