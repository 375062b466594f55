"""The sharded update (tnp_train.distribute.sharded_update) under MultiWorkerMirroredStrategy:
each case trains through ``fit`` and saves every weight and optimizer slot, every batch's logs
(loss and accuracy) and the class of the first kernel, per rank. tests/distributed/test_multiworker_sharded.py runs it with the
sharded update on and off (``TNP_SHARDED_UPDATE=0``) and compares the bits.

Cases (layer widths that no rank's part of a bucket lines up with):
  sgd     SGD with Nesterov momentum and weight decay, 6 steps
  plain   SGD without momentum (no slots), 6 steps
  adamw   AdamW, the biases excluded from the decay, a learning-rate schedule, 6 steps
  writes  SGD with momentum, 3 steps; set_weights (the same on every rank) and 3 steps; then
          compiled again with clipnorm (an optimizer that cannot shard: every rank updates
          its own copy again) and 3 steps; SGD again (shards again) and 3 steps;
          kernel += 1 and 2 steps; bias[0] = 0.25 and 2 steps (NumPy-style writes, applied
          once); np.copyto into a shared buffer fails (read-only); then SGD again and 3 steps
"""
import sys

import numpy as np

from mw_common import rank_and_size, save, tt


def model_and_data(seed):
    tt.utils.set_random_seed(seed)
    model = tt.Sequential([tt.Input((13,)), tt.layers.Dense(23, activation="relu"),
                           tt.layers.Dense(11, activation="tanh"), tt.layers.Dense(5)])
    rng = np.random.default_rng(7)
    x = rng.normal(size=(96, 13)).astype("float32")
    y = rng.integers(0, 5, 96).astype("int64")
    return model, x, y


def state(model):
    return model.get_weights() + model.optimizer.get_weights()


def main(out):
    rank, size = rank_and_size()
    strategy = tt.distribute.MultiWorkerMirroredStrategy()
    batch = 16
    loss = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
    results = {}
    for case in ("sgd", "plain", "adamw", "writes"):
        with strategy.scope():
            model, x, y = model_and_data(100 + rank)
            if case == "sgd":
                opt = tt.optimizers.SGD(0.05, momentum=0.9, nesterov=True, weight_decay=0.01)
            elif case == "plain":
                opt = tt.optimizers.SGD(0.1)
            elif case == "adamw":
                opt = tt.optimizers.AdamW(
                    tt.optimizers.schedules.ExponentialDecay(3e-3, 2, 0.8), weight_decay=0.1)
                opt.exclude_from_weight_decay(var_names=["bias"])
            else:
                opt = tt.optimizers.SGD(0.05, momentum=0.9)
            model.compile(opt, loss=loss, metrics=["accuracy"])
        steps = 6 if case != "writes" else 3
        logs = []
        record = tt.callbacks.LambdaCallback(on_train_batch_end=lambda b, l: logs.append(
            [l["loss"], l["accuracy"]]))
        model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=steps, shuffle=False,
                  verbose=0, callbacks=[record])
        # every batch's logs: the metrics' state summed at the end of the last bucket
        results[f"{case}_logs"] = [np.asarray(logs, np.float64)]
        classes = [type(model.trainable_variables[0]).__name__]
        if case == "writes":
            # a write outside the sharded update, the same on every rank
            model.set_weights([w * 0.5 for w in model.get_weights()])
            classes.append(type(model.trainable_variables[0]).__name__)
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=3, shuffle=False,
                      verbose=0)
            classes.append(type(model.trainable_variables[0]).__name__)
            with strategy.scope():
                model.compile(tt.optimizers.SGD(0.05, momentum=0.9, clipnorm=0.5), loss=loss)
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=3, shuffle=False,
                      verbose=0)
            classes.append(type(model.trainable_variables[0]).__name__)
            results["writes_clip"] = state(model)
            with strategy.scope():
                model.compile(tt.optimizers.SGD(0.03, momentum=0.9), loss=loss)
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=3, shuffle=False,
                      verbose=0)
            # NumPy-style writes into a shared variable (the same on every rank): applied once
            kernel = model.trainable_variables[0]
            kernel += 1.0
            classes.append(type(kernel).__name__)
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=2, shuffle=False,
                      verbose=0)
            bias = model.trainable_variables[1]
            bias[0] = 0.25
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=2, shuffle=False,
                      verbose=0)
            results["writes_inplace"] = state(model)
            # what bypasses the variable (np.copyto into its buffer) cannot reach the others:
            # the shared buffer is read-only (undone after, so both modes go on alike)
            target = model.trainable_variables[2]
            before = target.numpy()
            try:
                np.copyto(target, 0.0)
                results["writes_copyto"] = ["wrote"]
            except ValueError:
                results["writes_copyto"] = ["read-only"]
            target.assign(before)
            with strategy.scope():
                model.compile(tt.optimizers.SGD(0.02, momentum=0.5), loss=loss)
            model.fit(x, y, batch_size=batch, epochs=1, steps_per_epoch=3, shuffle=False,
                      verbose=0)
            classes.append(type(model.trainable_variables[0]).__name__)
        results[case] = state(model)
        results[f"{case}_classes"] = classes
    arrays = {}
    for key, value in results.items():
        if key.endswith(("_classes", "_copyto")):
            arrays[key] = np.array(value)
        else:
            for i, w in enumerate(value):
                arrays[f"{key}_{i}"] = w
    save(f"{out}/{rank}.npz", **arrays)
    print(f"rank {rank}/{size} done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
