"""Every layer kind's gradients written straight into the gradient buckets, in a real job.
Usage: ``mpiexec -n 2 python mw_destinations.py OUT_DIR``. For each model (an Embedding with
SimpleRNN, LSTM and GRU; synchronized BatchNormalization with LayerNormalization; a
MultiHeadAttention), each rank trains through ``fit`` (global batch 16, 3 steps, accuracy
metric) twice under MultiWorkerMirroredStrategy: as the strategy does, its aggregator offering
the buckets' slots, then with the offers turned off; then, in the same process without a
strategy, one process on the whole batches. Writes ``OUT_DIR/<rank>.npz``: the final weights
and losses of the three, and how many gradients arrived in the slot lent for them."""
import sys

import numpy as np

from mw_common import rank_and_size, save, tt
from tnp.extend import backend_array

B, STEPS = 16, 3


def sequence():
    return tt.Sequential([
        tt.Input((7,), dtype="int64"), tt.layers.Embedding(20, 6),
        tt.layers.SimpleRNN(5, return_sequences=True), tt.layers.LSTM(4, return_sequences=True),
        tt.layers.GRU(3), tt.layers.Dense(3)])


def normalization(sync=True):
    return tt.Sequential([
        tt.Input((6, 5)), tt.layers.BatchNormalization(axis=1, synchronized=sync),
        tt.layers.LayerNormalization(axis=[1, 2]), tt.layers.Flatten(), tt.layers.Dense(3)])


def attention():
    inp = tt.Input((4, 6))
    ctx = tt.layers.MultiHeadAttention(2, 3)(inp, inp)
    return tt.Model(inp, tt.layers.Dense(3)(tt.layers.Flatten()(ctx)))


MODELS = {"sequence": (sequence, "ids"), "normalization": (normalization, (6, 5)),
          "attention": (attention, (4, 6))}


def data(what):
    rng = np.random.default_rng(11)
    if what == "ids":
        x = rng.integers(0, 20, (B * STEPS, 7)).astype("int64")
    else:
        x = rng.normal(1.0, 2.0, size=(B * STEPS,) + what).astype("float32")
    return x, rng.integers(0, 3, B * STEPS).astype("int64")


class Counting:
    """Counts, on the strategy's aggregator, the gradients handed over in the slot it lent."""

    def __init__(self, agg, offer):
        self.lent, self.written = {}, 0
        plain_dest, plain_ready = agg.gradient_destination, agg.gradient_ready

        def destination(v):
            d = plain_dest(v)
            self.lent[v.key] = d
            return d

        def ready(v, g):
            if g is not None and self.lent.pop(v.key, None) is backend_array(g):
                self.written += 1
            return plain_ready(v, g)
        agg.gradient_destination, agg.gradient_ready = destination, ready
        agg.offers_destination = offer


def train(name, strategy, out, tag, offer=True):
    make, what = MODELS[name]
    tt.utils.set_random_seed(3)
    with strategy.scope():
        model = make()
        # the eager step: a compiled step's backward writes into the program's buffers and
        # hands them over (one copy into the bucket), so only the eager step takes slots
        model.compile(tt.optimizers.SGD(0.1, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], run_eagerly=True)
    count = None
    agg = model.optimizer.gradient_aggregator
    if strategy.num_replicas_in_sync > 1:
        count = Counting(agg, offer)
    x, y = data(what)
    hist = model.fit(x, y, batch_size=B, epochs=1, shuffle=False, verbose=0)
    out[f"{name}_{tag}"] = np.concatenate([w.numpy().ravel() for w in model.weights])
    out[f"{name}_{tag}_loss"] = hist.history["loss"]
    out[f"{name}_{tag}_acc"] = hist.history["accuracy"]
    out[f"{name}_{tag}_written"] = -1 if count is None else count.written
    out[f"{name}_{tag}_variables"] = len(model.trainable_variables)


def main():
    out_dir = sys.argv[1]
    rank, _ = rank_and_size()
    out = {}
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    for name in MODELS:
        train(name, strategy, out, "slots")
        train(name, strategy, out, "copies", offer=False)
    for name in MODELS:
        train(name, tt.distribute.get_strategy(), out, "ref")
    save(f"{out_dir}/{rank}.npz", **out)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
