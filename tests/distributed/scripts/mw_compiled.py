"""``fit``/``evaluate``/``predict`` compiled under MultiWorkerMirroredStrategy, against the
eager step on the same ranks.

Usage: ``mpiexec -n N python mw_compiled.py OUT_DIR``. For each model (the MLP, the CNN, the
functional MLP with ``add_loss``/``add_metric``, the MLP with BatchNormalization under a
``LossScaleOptimizer``, and the dropout/noise MLP), every rank seeded alike trains 2 epochs of
10 batches of 32 (a last batch of 27 for 315 samples) with the compiled step
(``jit_compile=True``: compiled or an error) and with ``run_eagerly=True``, then evaluates and
predicts; then the MLP again with the default ``jit_compile`` under a strategy whose buckets
hold 256 bytes. Each rank writes
``OUT_DIR/<rank>.npz``: both runs' weights, batch logs, evaluate's and predict's results, what
``step_compilation`` reported, and the order of the aggregator's events in each compiled
training step (gradient hand-overs and bucket starts).
"""
import sys

import numpy as np

from mw_common import cnn, data, extras, mlp, noisy, rank_and_size, save, tt

B, EPOCHS = 32, 2


def bn_mlp():
    return tt.Sequential([tt.Input((12,)), tt.layers.Dense(16), tt.layers.BatchNormalization(),
                          tt.layers.Activation("relu"), tt.layers.Dense(4)])


def optimizer(kind):
    sgd = tt.optimizers.SGD(0.05, momentum=0.9)
    return tt.mixed_precision.LossScaleOptimizer(sgd) if kind == "bn" else sgd


def watch(model, events):
    """Record the aggregator's hand-overs ("g") and bucket starts ("s") of each step."""
    opt = model.optimizer
    inner = getattr(opt, "inner_optimizer", None) or opt
    agg = inner.aggregator
    ready = agg.gradient_ready

    def logged_ready(variable, gradient):
        events.append("g")
        ready(variable, gradient)
        bucketer = agg._bucketer
        if bucketer is not None and not hasattr(bucketer, "_logged"):
            launch = bucketer._launch

            def logged_launch():
                before = bucketer._next
                launch()
                events.extend("s" * (bucketer._next - before))
            bucketer._launch = logged_launch
            bucketer._logged = True
    agg.gradient_ready = logged_ready


def run(make, kind, strategy, eager, out, tag, n=320, jit=None):
    tt.utils.set_random_seed(7)
    with strategy.scope():
        model = make()
        model.compile(optimizer(kind),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], run_eagerly=eager, jit_compile=jit)
    x, y = data("cnn" if kind == "cnn" else "mlp", n)
    steps, events = [], []
    watch(model, events)
    record = tt.callbacks.LambdaCallback(
        on_train_batch_begin=lambda b, logs: events.append("|"),
        on_train_batch_end=lambda b, logs: steps.append([float(logs["loss"]),
                                                         float(logs["accuracy"])]))
    model.fit(x, y, batch_size=B, epochs=EPOCHS, shuffle=True, verbose=0, callbacks=[record])
    out[f"{tag}_batches"] = np.asarray(steps)
    out[f"{tag}_final"] = np.concatenate([w.numpy().ravel() for w in model.weights])
    xe, ye = data("cnn" if kind == "cnn" else "mlp", 70, seed=5)
    out[f"{tag}_eval"] = np.asarray(model.evaluate(xe, ye, batch_size=B, verbose=0))
    out[f"{tag}_pred"] = np.asarray(model.predict(xe, batch_size=B))
    out[f"{tag}_compiled"] = np.asarray(sorted(k for k, v in model.step_compilation.items()
                                               if v == "compiled"))
    out[f"{tag}_events"] = np.asarray("".join(events))


def main():
    out_dir = sys.argv[1]
    rank, _ = rank_and_size()
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    out = {}
    # "uneven": 319 samples end each epoch on a batch of 31, split 16/15: rank 0's rows have
    # the full batches' shape but are 16 of 31, not of 32 (the loss's scale differs: the
    # compiled step must be traced again for them)
    for kind, make, n in (("mlp", mlp, 320), ("cnn", cnn, 320), ("extras", extras, 320),
                          ("bn", bn_mlp, 315), ("noisy", noisy, 315), ("uneven", mlp, 319)):
        for eager in (False, True):
            # jit_compile=True: the compiled runs fail rather than run eagerly unnoticed
            run(make, kind, strategy, eager, out, f"{kind}_{'eager' if eager else 'compiled'}",
                n=n, jit=None if eager else True)
    # the default (jit_compile=None) compiles too; buckets of 256 bytes: one per variable,
    # each started as soon as the backward pass made its gradient
    small = tt.distribute.MultiWorkerMirroredStrategy(
        communication_options=tt.distribute.experimental.CommunicationOptions(
            bytes_per_pack=256))
    for eager in (False, True):
        run(mlp, "mlp", small, eager, out, f"buckets_{'eager' if eager else 'compiled'}")
    save(f"{out_dir}/{rank}.npz", **out)
    print(f"[rank {rank}] ALL OK", flush=True)


if __name__ == "__main__":
    main()
