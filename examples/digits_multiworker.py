"""The digits CNN of ``examples/digits_cnn.py`` trained on several workers (``make demo-distributed``).

Each MPI rank is one worker of ``tt.distribute.MultiWorkerMirroredStrategy``: the model and its
optimizer are made in the strategy's scope (worker 0's initial weights are broadcast), the
dataset is batched with the GLOBAL batch size and ``fit`` shards it across the workers, gradients
are summed across the workers each step, and the reported loss and metrics are global. The chief
(worker 0) prints; the others train silently.

    mpiexec -n 2 python examples/digits_multiworker.py [--epochs 30] [--seed 0]
    mpiexec -n 2 python examples/digits_multiworker.py --compression fp16   # half the bytes
    python examples/digits_multiworker.py          # without mpiexec: one worker

As root, Open MPI needs ``OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``; on a
machine with fewer cores than ranks add ``--oversubscribe`` and ``OMPI_MCA_mpi_yield_when_idle=1``
(``make demo-distributed`` sets them). The last line printed (by the chief) is
``test accuracy: 0.XXXX``; the line before it gives the bytes each worker handed the
all-reduces per training step (gradients and the metrics' state), counted from the collective
layer's events.
"""
from __future__ import annotations

import argparse
import sys
import time

import tnp_train as tt

# the model and the data split are the one-process example's, not copies of them
from digits_cnn import build_model, load_digits_split


class WireBytes(tt.callbacks.Callback):
    """Counts the bytes this worker hands the all-reduces inside training steps (the collective
    layer's events: the gradient buckets and the metrics' state that rides with them)."""

    def __init__(self):
        super().__init__()
        self.bytes = self.steps = 0
        self._in_step = False
        self._subscription = None

    def _count(self, event):
        if self._in_step and event["name"] == "allreduce":
            self.bytes += event["bytes"]

    def on_train_begin(self, logs=None):
        self._subscription = tt.distribute.collective.subscribe(self._count)

    def on_train_batch_begin(self, batch, logs=None):
        self._in_step = True

    def on_train_batch_end(self, batch, logs=None):
        self._in_step = False
        self.steps += 1

    def on_train_end(self, logs=None):
        self._subscription.remove()

    def per_step(self):
        return self.bytes / max(self.steps, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=32,
                    help="the GLOBAL batch size, split across the workers")
    ap.add_argument("--verbose", type=int, default=2,
                    help="0 silent, 1 progress bar, 2 a line per epoch (the chief only)")
    ap.add_argument("--compression", default="none", choices=("none", "fp16", "bf16"),
                    help="how the gradients travel between the workers "
                         "(tt.distribute.experimental.Compression)")
    args = ap.parse_args(argv)

    options = tt.distribute.experimental.CommunicationOptions(compression=args.compression)
    strategy = tt.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    resolver = strategy.cluster_resolver
    chief = strategy.extended.should_checkpoint
    # Every rank uses the same seed: the shuffle order must be the same on every worker for the
    # auto-sharding to give each sample to exactly one of them.
    tt.utils.set_random_seed(args.seed)
    x_train, x_test, y_train, y_test = load_digits_split()
    if chief:
        print(f"digits: {len(x_train)} train / {len(x_test)} test images of 8x8, seed "
              f"{args.seed}; {strategy.num_replicas_in_sync} worker(s), global batch "
              f"{args.batch_size}")
    print(f"worker {resolver.task_type}:{resolver.task_id} of {strategy.num_replicas_in_sync} "
          f"ready", flush=True)

    # the same pipeline as digits_cnn.py; fit auto-shards it (AutoShardPolicy.AUTO -> DATA)
    n_val = len(x_train) // 10
    train_ds = (tt.data.Dataset.from_tensor_slices((x_train[n_val:], y_train[n_val:]))
                .shuffle(2048, seed=args.seed).batch(args.batch_size).prefetch(2))
    val_ds = tt.data.Dataset.from_tensor_slices((x_train[:n_val], y_train[:n_val])).batch(256)

    with strategy.scope():
        model = build_model()
        model.compile(optimizer=tt.optimizers.Adam(2e-3),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    # callbacks run on every worker (ReduceLROnPlateau must change every worker's rate alike:
    # it reads the global val_loss, the same on each)
    wire = WireBytes()
    callbacks = [tt.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=4),
                 wire]
    t0 = time.perf_counter()
    model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, callbacks=callbacks,
              verbose=args.verbose)   # the progress output is the chief's only
    train_s = time.perf_counter() - t0

    # evaluate is collective too: every worker calls it and gets the global figures
    loss, acc = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if chief:
        print(f"training time: {train_s:.1f} s for {args.epochs} epochs on "
              f"{strategy.num_replicas_in_sync} worker(s); test loss {loss:.4f}")
        print(f"wire bytes per training step: {wire.per_step():.0f} "
              f"(compression {options.compression.name})")
        print(f"test accuracy: {acc:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
