"""N ranks with global batch B train exactly as one process with batch B.

Usage: ``mpiexec -n N python mw_equivalence.py OUT_DIR`` (every rank seeded differently:
rank r uses seed 1 + 1000 r), or ``python mw_equivalence.py OUT_DIR --ref`` (one process, no
strategy, seed 1: the reference). Four trainings of 20 SGD-with-momentum steps (2 epochs of 10
batches of 32): the MLP and the CNN, each through ``fit`` (shuffled arrays, metrics, then
``evaluate`` and ``predict``) and through the custom loop of TF's guide
(``experimental_distribute_dataset`` of a shuffled dataset, ``strategy.run``,
``tt.nn.compute_average_loss``, ``strategy.reduce``); then an MLP with dropout and Gaussian
noise the same two ways, every rank seeded alike, on 315 samples; and through ``fit`` a
functional MLP with an ``add_loss`` term and an ``add_metric``. Each rank writes
``OUT_DIR/<rank>.npz`` (the reference ``ref.npz``): initial and final weights, the fit history,
the loop's reduced losses, evaluate's numbers and predict's outputs.
"""
import contextlib
import sys

import numpy as np

from mw_common import cnn, data, extras, mlp, noisy, rank_and_size, save, tt

B, N_SAMPLES, EPOCHS = 32, 320, 2


def build(make, strategy):
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = make()
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


def run_fit(make, kind, strategy, out, tag, n=N_SAMPLES):
    model = build(make, strategy)
    out[f"{tag}_init"] = np.concatenate([w.numpy().ravel() for w in model.weights])
    x, y = data(kind, n)
    batches = []
    record = tt.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(
        [float(logs["loss"]), float(logs["accuracy"])]))
    # the metrics' state rides with the gradients after the first (unbucketed) step: count the
    # strategy's own collectives for logs during fit
    counted = []
    if strategy is not None:
        ext = strategy.extended
        plain = ext._all_reduce_arrays
        ext._all_reduce_arrays = lambda op, arrays: counted.append(op) or plain(op, arrays)
    hist = model.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=True, verbose=0,
                     callbacks=[record])
    if strategy is not None:
        del ext._all_reduce_arrays
    out[f"{tag}_batches"] = np.asarray(batches)
    out[f"{tag}_log_collectives"] = len(counted)
    out[f"{tag}_loss"] = hist.history["loss"]
    out[f"{tag}_acc"] = hist.history["accuracy"]
    if "mean_h" in hist.history:              # the add_metric of `extras`
        out[f"{tag}_mean_h"] = hist.history["mean_h"]
    out[f"{tag}_final"] = np.concatenate([w.numpy().ravel() for w in model.weights])
    xe, ye = data(kind, 70, seed=5)           # 70 = 2 batches of 32 + an uneven 6
    out[f"{tag}_eval"] = model.evaluate(xe, ye, batch_size=B, verbose=0)
    out[f"{tag}_pred"] = np.asarray(model.predict(xe, batch_size=B))
    out[f"{tag}_steps"] = np.asarray(sorted(k for k, v in model.step_compilation.items()
                                            if v == "compiled"))


def run_loop(make, kind, strategy, out, tag, n=N_SAMPLES):
    strategy = strategy if strategy is not None else tt.distribute.get_strategy()
    with strategy.scope():
        model = make()
        opt = tt.optimizers.SGD(0.05, momentum=0.9)
        loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    out[f"{tag}_init"] = np.concatenate([w.numpy().ravel() for w in model.weights])
    x, y = data(kind, n)
    ds = tt.data.Dataset.from_tensor_slices((x, y)).shuffle(n).batch(B)
    dist = strategy.experimental_distribute_dataset(ds)

    def step(batch):
        xb, yb = batch
        with tt.GradientTape() as tape:
            per_example = loss_obj(yb, model(xb, training=True))
            loss = tt.nn.compute_average_loss(per_example, global_batch_size=B)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = []
    for _ in range(EPOCHS):
        total, steps = 0.0, 0
        for batch in dist:
            per_replica = strategy.run(step, args=(batch,))
            total += float(strategy.reduce("SUM", per_replica, axis=None))
            steps += 1
        losses.append(total / steps)
    out[f"{tag}_loss"] = losses
    out[f"{tag}_final"] = np.concatenate([w.numpy().ravel() for w in model.weights])


def main():
    out_dir, ref = sys.argv[1], "--ref" in sys.argv
    rank, _ = rank_and_size()
    tt.utils.set_random_seed(1 + 1000 * rank)
    strategy = None if ref else tt.distribute.MultiWorkerMirroredStrategy()
    out = {}
    for kind, make in (("mlp", mlp), ("cnn", cnn)):
        run_fit(make, kind, strategy, out, f"{kind}_fit")
        run_loop(make, kind, strategy, out, f"{kind}_loop")
    # dropout and noise: every rank seeded alike (as a job should be), each draws its rows of
    # the global batch's masks, so the job draws one process's; 315 samples end each epoch on
    # a batch of 27, split 14/13 (its replicas' losses weighted 14/27 and 13/27)
    for tag, run in (("noisy_fit", run_fit), ("noisy_loop", run_loop)):
        tt.utils.set_random_seed(77)
        run(noisy, "noisy", strategy, out, tag, n=N_SAMPLES - 5)
    # add_loss and add_metric terms of a functional model (means over the batch)
    run_fit(extras, "mlp", strategy, out, "extras_fit")
    save(f"{out_dir}/{'ref' if ref else rank}.npz", **out)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
