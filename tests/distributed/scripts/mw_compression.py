"""Gradients sent as float16 / bfloat16 under a real MPI job (run by
tests/distributed/test_wire_compression_mpi.py).

Usage: ``mpiexec -n N python mw_compression.py OUT_DIR``. The MLP of mw_common trains for 20
SGD-with-momentum steps through ``fit`` three times, with ``CommunicationOptions(compression=)``
``none``, ``fp16`` and ``bf16``, from the same weights; a callback counts the bytes this rank
hands the all-reduces in each step (the collective layer's events). Then the refusals: a complex
variable, and a gradient beyond float16 on the last rank only. Each rank writes
``OUT_DIR/<rank>.npz``.
"""
import sys

import numpy as np

from mw_common import data, mlp, rank_and_size, save, tt

import tnp  # noqa: E402

X = tt.distribute.experimental


class StepBytes(tt.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps, self.now = [], None

    def count(self, event):
        if self.now is not None and event["name"] == "allreduce":
            self.now += event["bytes"]

    def on_train_batch_begin(self, batch, logs=None):
        self.now = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(self.now)
        self.now = None


def main(out_dir):
    rank, size = rank_and_size()
    out = {}
    x, y = data("mlp", 320)
    for compression in ("none", "fp16", "bf16"):
        strategy = tt.distribute.MultiWorkerMirroredStrategy(
            communication_options=X.CommunicationOptions(compression=compression))
        tt.utils.set_random_seed(1 + 1000 * rank)   # worker 0's weights are broadcast
        with strategy.scope():
            model = mlp()
            model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                          loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        counter = StepBytes()
        with tt.distribute.collective.subscribe(counter.count):
            model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0,
                      callbacks=[counter])
        out[f"{compression}_final"] = np.concatenate([w.ravel() for w in model.get_weights()])
        out[f"{compression}_bytes"] = np.asarray(counter.steps)
        out["params"] = model.count_params()
        out["n_vars"] = len(model.trainable_variables)

    strategy = tt.distribute.MultiWorkerMirroredStrategy(
        communication_options=X.CommunicationOptions(compression=X.Compression.fp16))
    with strategy.scope():
        phase = tt.Variable(np.ones(3, np.complex64), name="phase")
        big = tt.Variable(np.zeros(4, np.float32), name="big")
        opt = tt.optimizers.SGD(0.1)
    try:
        strategy.run(lambda: opt.apply_gradients([(tnp.ones(3, dtype=tnp.complex64), phase)]))
        out["complex"] = "no error"
    except TypeError as e:
        out["complex"] = str(e)
    opt = tt.optimizers.SGD(0.1)
    for step in range(2):            # the first step, then the bucketed one
        g = np.full(4, 1e5 if rank == size - 1 and step == 1 else 1.0, np.float32)
        try:
            strategy.run(lambda: opt.apply_gradients([(tnp.asarray(g), big)]))
            out[f"overflow_{step}"] = "no error"
        except FloatingPointError as e:
            out[f"overflow_{step}"] = str(e)
    save(f"{out_dir}/{rank}.npz", **out)
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
