"""Every sample exactly once per epoch across the workers, every worker the same number of
steps, an uneven last batch split on every worker (an empty part when the batch is smaller
than the number of workers).

Usage: ``mpiexec -n N python mw_data.py OUT_DIR FILES_DIR``. Every rank is seeded differently
(1 + 1000 rank) and uses unseeded shuffles, so only the strategy keeps the workers' orders together.
Each rank writes ``OUT_DIR/<rank>.json``: for each case, per epoch, the list of sample ids of
each step it took:

* ``loop_37`` / ``loop_33``: ``experimental_distribute_dataset`` of ``range(n).shuffle(n)
  .batch(8)`` over 3 epochs (33 = 4 x 8 + 1: the last batch has one sample), each step a
  ``strategy.run`` that all-reduces, so a worker with a step fewer would stall the job;
* ``fit_arrays`` / ``fit_dataset``: ``fit`` of a model whose ``train_step`` records its ids
  (shuffled arrays of 37 samples; a shuffled dataset of 33), 3 epochs, batch 8; the final
  weights go to ``OUT_DIR/<rank>.npz`` (equal on every worker);
* ``file_auto``: the text files of FILES_DIR (one id per line, files of different lengths)
  through ``list_files(shuffle=False).interleave(TextLineDataset).batch(4)``: AUTO shards by
  FILE (each worker reads every N-th file), a worker whose files ran out takes empty batches
  until every worker is done, 3 epochs;
* ``data_off``: ``range(10).batch(4)`` with ``AutoShardPolicy.OFF``: every worker sees every
  sample, each global batch in N per-replica parts, one epoch.
"""
import json
import sys

import numpy as np

from mw_common import rank_and_size, save, tt

EPOCHS, B = 3, 8


class Recorder(tt.Model):
    """A small dense model that records the sample ids (input column 0) of each step."""

    def __init__(self, ledger):
        super().__init__()
        self.ledger = ledger
        self.dense = tt.layers.Dense(3)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        self.ledger[-1].append(np.asarray(data[0])[:, 0].astype(int).tolist())
        return super().train_step(data)


class EpochMark(tt.callbacks.Callback):
    def __init__(self, ledger):
        super().__init__()
        self.ledger = ledger

    def on_epoch_begin(self, epoch, logs=None):
        self.ledger.append([])


def loop_case(strategy, n):
    ds = tt.data.Dataset.from_tensor_slices(np.arange(n)).shuffle(n).batch(B)
    dist = strategy.experimental_distribute_dataset(ds)
    epochs = []
    for _ in range(EPOCHS):
        steps = []
        for batch in dist:
            ids = np.asarray(batch).tolist()
            total = strategy.run(lambda b: tt.distribute.get_replica_context().all_reduce(
                "SUM", np.array(len(b), "int64")), args=(batch,))
            steps.append(ids)
            assert int(np.asarray(total)) > 0
        epochs.append(steps)
    return epochs


def file_case(strategy, files_dir):
    ds = tt.data.Dataset.list_files(f"{files_dir}/*.txt", shuffle=False).interleave(
        tt.data.TextLineDataset, cycle_length=1).batch(4)
    dist = strategy.experimental_distribute_dataset(ds)
    epochs = []
    for _ in range(EPOCHS):
        steps = []
        for batch in dist:
            steps.append([int(v) for v in np.asarray(batch).tolist()])
            # a collective per step: a worker with a step fewer would stall the others
            strategy.reduce("SUM", np.array(1.0, "float32"), axis=None)
        epochs.append(steps)
    return epochs


def off_case(strategy):
    options = tt.data.Options()
    options.experimental_distribute.auto_shard_policy = \
        tt.data.experimental.AutoShardPolicy.OFF
    ds = tt.data.Dataset.range(10).batch(4).with_options(options)
    return [[np.asarray(b).tolist() for b in strategy.experimental_distribute_dataset(ds)]]


def fit_case(strategy, n, as_dataset):
    ledger = []
    with strategy.scope():
        model = Recorder(ledger)
        model.compile(tt.optimizers.SGD(0.1), loss=tt.losses.SparseCategoricalCrossentropy(
            from_logits=True), metrics=["accuracy"])
    rng = np.random.default_rng(7)                     # the same data on every rank
    x = np.stack([np.arange(n), rng.normal(size=n)], axis=1).astype("float32")
    y = rng.integers(0, 3, n)
    if as_dataset:
        data = tt.data.Dataset.from_tensor_slices((x, y)).shuffle(n).batch(B)
        hist = model.fit(data, epochs=EPOCHS, verbose=0, callbacks=[EpochMark(ledger)])
    else:
        hist = model.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=True, verbose=0,
                         callbacks=[EpochMark(ledger)])
    weights = np.concatenate([w.numpy().ravel() for w in model.weights])
    return ledger, weights, hist.history


def main():
    out_dir, files_dir = sys.argv[1], sys.argv[2]
    rank, _ = rank_and_size()
    tt.utils.set_random_seed(1 + 1000 * rank)
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    out = {"loop_37": loop_case(strategy, 37), "loop_33": loop_case(strategy, 33),
           "file_auto": file_case(strategy, files_dir), "data_off": off_case(strategy)}
    weights = {}
    out["fit_arrays"], weights["fit_arrays"], out["fit_arrays_history"] = \
        fit_case(strategy, 37, as_dataset=False)
    out["fit_dataset"], weights["fit_dataset"], out["fit_dataset_history"] = \
        fit_case(strategy, 33, as_dataset=True)
    with open(f"{out_dir}/{rank}.json", "w") as f:
        json.dump(out, f)
    save(f"{out_dir}/{rank}.npz", **weights)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
