"""The chief killed (SIGKILL, by itself) during training (tests/distributed/test_ps.py): every
server and worker must end by itself.

    mpiexec --with-ft ulfm -n 4 python ps_chief_loss.py OUTDIR

After 10 closures have finished the chief writes the time (``time.time()``) to OUTDIR/killed
and kills itself; the test measures how long the other processes outlive it."""
import os
import signal
import sys
import time
from pathlib import Path

from ps_common import dataset_fn, small_mlp, start, tt, when_done

outdir = sys.argv[1]
resolver, strategy, coordinator = start(outdir)
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
    return loss


def train_step(iterator):
    return strategy.run(replica_fn, args=(next(iterator),))


def die():
    Path(outdir, "killed").write_text(f"{time.time()}\n")
    os.kill(os.getpid(), signal.SIGKILL)


it = iter(coordinator.create_per_worker_dataset(dataset_fn))
results = []
when_done(results, 10, die)
results.extend(coordinator.schedule(train_step, args=(it,)) for _ in range(5000))
coordinator.join()
print("NOT REACHED", flush=True)
