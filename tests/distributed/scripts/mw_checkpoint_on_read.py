"""A ``tt.train.Checkpoint`` written under MultiWorkerMirroredStrategy holds the job's value of
each ON_READ variable (BatchNormalization's moving statistics averaged over the workers), as
TF saves a SyncOnReadVariable's aggregated value and as ``model.save_weights`` writes it; each
worker keeps its own local statistics afterwards.

Usage: ``mpiexec -n N python mw_checkpoint_on_read.py OUT_DIR``: every rank trains on data of
its own (so the ranks' statistics differ), writes ``OUT_DIR/ck<rank>`` with
``Checkpoint.write`` and ``OUT_DIR/ck-managed-<rank>/`` with a ``CheckpointManager``, the chief
writes ``OUT_DIR/w`` with ``save_weights``; each rank records its local moving mean before and
after, and the moving mean ``model.get_weights()`` gives (the job's, as TF's cross-replica
read), in ``OUT_DIR/<rank>.json``.
"""
import json
import os
import sys

import numpy as np

from mw_common import rank_and_size, tt


def main():
    out_dir = sys.argv[1]
    rank, _ = rank_and_size()
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.default_rng(rank)
    x = (rng.standard_normal((64, 3)) + 3.0 * rank).astype("float32")
    y = np.zeros((64, 1), "float32")
    with strategy.scope():
        model = tt.Sequential([tt.Input((3,)), tt.layers.BatchNormalization(),
                               tt.layers.Dense(1)])
        model.compile(tt.optimizers.SGD(0.01), "mse")
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    bn = model.layers[0]
    before = bn.moving_mean.numpy().tolist()
    model.save_weights(os.path.join(out_dir, "w"))
    checkpoint = tt.train.Checkpoint(model=model)
    checkpoint.write(os.path.join(out_dir, f"ck{rank}"))
    tt.train.CheckpointManager(checkpoint, os.path.join(out_dir, f"ck-managed-{rank}"),
                               max_to_keep=1).save()
    with open(os.path.join(out_dir, f"{rank}.json"), "w") as f:
        json.dump({"before": before, "after": bn.moving_mean.numpy().tolist(),
                   "get_weights": model.get_weights()[2].tolist()}, f)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
