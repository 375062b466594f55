"""A worker launched as TF's multi-worker tutorial launches one: ``TF_CONFIG`` in its
environment, ``tt.distribute.MultiWorkerMirroredStrategy()`` with no arguments (for
tests/distributed/test_launch_tf_config.py).

Usage: ``python launch_tf_config.py OUT_DIR`` (under ``mpiexec``, or as a plain process). Each
rank is seeded differently (1 + 1000 rank), trains the MLP with ``fit`` on fixed data (2 epochs,
global batch 16) and writes ``OUT_DIR/<rank>.npz``: the task it was (``worker_index``,
``num_workers``, the resolver's class), the per-epoch losses and the final weights.
"""
import sys

import numpy as np

from mw_common import data, mlp, rank_and_size, save, tt

rank, size = rank_and_size()
tt.utils.set_random_seed(1 + 1000 * rank)
strategy = tt.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = mlp()
    model.compile(optimizer=tt.optimizers.SGD(0.1),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
x, y = data("mlp", 96)
history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
resolver = strategy.cluster_resolver
save(f"{sys.argv[1]}/{rank}.npz", worker_index=strategy.extended.worker_index,
     num_workers=strategy.extended.num_workers, replicas=strategy.num_replicas_in_sync,
     resolver=type(resolver).__name__, task=f"{resolver.task_type}:{resolver.task_id}",
     loss=np.array(history.history["loss"]),
     weights=np.concatenate([w.ravel() for w in model.get_weights()]))
