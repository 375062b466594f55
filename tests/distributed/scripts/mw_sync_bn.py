"""SyncBatchNormalization over 2 ranks equals BatchNormalization on the whole batch in one
process. Usage: ``mpiexec -n 2 python mw_sync_bn.py OUT_DIR``. Each rank trains (3 SGD steps,
custom loop, its half of each global batch of 16; then 3 steps of ``fit`` on arrays of
global batch 16), then, in the same process without a strategy, the reference with
``BatchNormalization(fused=False)`` on the whole batches, from worker 0's seed. Writes
``OUT_DIR/<rank>.npz``: the first step's outputs, the final weights (moving statistics
included) of both, for the distributed run and the reference."""
import sys

import numpy as np

from mw_common import rank_and_size, save, tt

B, STEPS = 16, 3


def make(sync):
    bn = (tt.layers.experimental.SyncBatchNormalization(momentum=0.9) if sync
          else tt.layers.BatchNormalization(momentum=0.9, fused=False))
    return tt.Sequential([tt.Input((6,)), tt.layers.Dense(5), bn, tt.layers.Dense(3)])


def data():
    rng = np.random.default_rng(7)
    return (rng.normal(2.0, 3.0, size=(B * STEPS, 6)).astype("float32"),
            rng.integers(0, 3, B * STEPS).astype("int64"))


def train(strategy, rank, size, out, tag):
    tt.utils.set_random_seed(1 + 1000 * rank)
    with strategy.scope():
        model = make(sync=tag.startswith("dist"))
        opt = tt.optimizers.SGD(0.1)
        loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    x, y = data()
    per = B // size

    def step(xb, yb):
        with tt.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = tt.nn.compute_average_loss(loss_obj(yb, logits), global_batch_size=B)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return logits

    for s in range(STEPS):
        lo = s * B + rank * per
        logits = strategy.run(step, args=(x[lo:lo + per], y[lo:lo + per]))
        if s == 0:
            out[f"{tag}_loop_out"] = np.asarray(logits)
    out[f"{tag}_loop"] = np.concatenate([w.numpy().ravel() for w in model.weights])

    tt.utils.set_random_seed(1 + 1000 * rank)
    with strategy.scope():
        model = make(sync=tag.startswith("dist"))
        model.compile(tt.optimizers.SGD(0.1),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=B, epochs=1, shuffle=False, verbose=0)
    out[f"{tag}_fit"] = np.concatenate([w.numpy().ravel() for w in model.weights])


def main():
    out_dir = sys.argv[1]
    rank, size = rank_and_size()
    out = {}
    train(tt.distribute.MultiWorkerMirroredStrategy(), rank, size, out, "dist")
    train(tt.distribute.get_strategy(), 0, 1, out, "ref")
    save(f"{out_dir}/{rank}.npz", **out)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
