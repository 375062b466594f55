"""``model.fit`` under ParameterServerStrategy (``trainers.ps_fit``, TF's fit over a
ClusterCoordinator) and checkpoints of a parameter-server model, in a job run inside this
process. References: a NumPy forward pass on the weights the server holds, the step count, and
the values written; a checkpoint restores across strategies (none, MultiWorkerMirrored, ps
with other shards) to the exact values saved."""
import numpy as np
import pytest

import tnp_train as tt
from tnp_train.distribute.experimental import partitioners
from tnp_train.trainers import ps_fit

from ps_local import cluster, server_value, strategy  # noqa: F401 (fixtures)

rng = np.random.default_rng(0)
X = rng.normal(size=(256, 4)).astype("float32")
Y = (X @ np.array([1.0, -2.0, 0.5, 3.0], "float32") > 0).astype("int64")


def make_model():
    return tt.Sequential([tt.Input((4,)), tt.layers.Dense(8, activation="relu"),
                          tt.layers.Dense(2)])


def compiled(strategy, optimizer=None):
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model = make_model()
        # the optimizer is made in the scope too: its step count and learning rate are
        # variables, which must live on the servers
        model.compile(optimizer() if optimizer else tt.optimizers.SGD(0.1, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


def numpy_eval(cluster, model):
    """Loss and accuracy of ``model`` on (X, Y) in NumPy, from the weights on the servers."""
    w1, b1, w2, b2 = [server_value(cluster, v) for v in model.weights]
    logits = np.maximum(X @ w1 + b1, 0) @ w2 + b2
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(len(Y)), Y].mean(), (logits.argmax(1) == Y).mean()


def test_fit_trains_on_the_workers_and_evaluates_on_the_chief(cluster, strategy):
    model = compiled(strategy)
    history = ps_fit.fit(model, X, Y, batch_size=32, epochs=3, steps_per_epoch=10,
                            verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]
    losses = history.history["loss"]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert int(model.optimizer.iterations.numpy()) == 30     # every step applied exactly once
    loss, acc = model.evaluate(X, Y, batch_size=64, verbose=0)
    ref_loss, ref_acc = numpy_eval(cluster, model)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(acc, ref_acc)
    # the chief's copies after fit (refreshed by join) are the servers' values
    for v in model.weights:
        np.testing.assert_array_equal(v.numpy(), server_value(cluster, v))


def test_fit_takes_a_dataset_or_a_dataset_fn(cluster, strategy):
    model = compiled(strategy, lambda: tt.optimizers.Adam(0.05))
    ds = tt.data.Dataset.from_tensor_slices((X, Y)).batch(32)
    h1 = ps_fit.fit(model, ds, epochs=1, steps_per_epoch=12, verbose=0)   # repeated
    seen = []

    def dataset_fn(ctx):
        seen.append(ctx.num_input_pipelines)
        return tt.data.Dataset.from_tensor_slices((X, Y)).shard(
            ctx.num_input_pipelines, ctx.input_pipeline_id).batch(16).repeat()

    h2 = ps_fit.fit(model, dataset_fn, epochs=2, steps_per_epoch=5, verbose=0)
    assert len(h1.history["loss"]) == 1 and len(h2.history["loss"]) == 2
    assert int(model.optimizer.iterations.numpy()) == 22
    assert seen == [1]      # the chief's own call (to build the model) sees one pipeline


def test_fit_arguments_are_checked(strategy):
    with strategy.scope():
        outside = make_model()
    outside.compile(tt.optimizers.SGD(0.1), loss="mse")
    with pytest.raises(ValueError, match="'SGD/(iter|learning_rate)'.*not created in the"):
        ps_fit.fit(outside, X, Y.astype("float32")[:, None].repeat(2, 1), steps_per_epoch=2,
                      verbose=0)
    model = compiled(strategy)
    with pytest.raises(ValueError, match="`steps_per_epoch` must be given"):
        ps_fit.fit(model, X, Y, epochs=1)
    with pytest.raises(ValueError, match="validation_split"):
        ps_fit.fit(model, X, Y, steps_per_epoch=2, validation_split=0.2)
    with pytest.raises(ValueError, match="sample_weight"):
        ps_fit.fit(model, X, Y, steps_per_epoch=2, sample_weight=np.ones(256))


def test_fit_builds_an_unbuilt_model_and_its_slots_on_the_chief(cluster, strategy):
    with strategy.scope():
        model = tt.Sequential([tt.layers.Dense(3), tt.layers.Dense(2)])   # no input shape
        model.compile(tt.optimizers.Adam(0.01),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    ps_fit.fit(model, X, Y, batch_size=64, epochs=1, steps_per_epoch=2, verbose=0)
    opt = model.optimizer
    for v in model.trainable_variables:
        assert opt.get_slot(v, "m").ps_task == v.ps_task


def train_a_little(cluster, strategy, model):
    ps_fit.fit(model, X, Y, batch_size=32, epochs=1, steps_per_epoch=6, verbose=0)


def test_checkpoint_restores_without_a_strategy_and_back(cluster, strategy, tmp_path):
    model = compiled(strategy)
    train_a_little(cluster, strategy, model)
    path = str(tmp_path / "ps")
    tt.train.Checkpoint(model=model, optimizer=model.optimizer).write(path)

    plain = make_model()
    plain_opt = tt.optimizers.SGD(0.1, momentum=0.9)
    tt.train.Checkpoint(model=plain, optimizer=plain_opt).read(path)
    for v, p in zip(model.weights, plain.weights):
        np.testing.assert_array_equal(p.numpy(), server_value(cluster, v))
    plain_opt._build_new(plain.trainable_variables)       # deferred slots are assigned now
    for v, p in zip(model.trainable_variables, plain.trainable_variables):
        np.testing.assert_array_equal(plain_opt.get_slot(p, "momentum").numpy(),
                                      server_value(cluster, model.optimizer.get_slot(v,
                                                                                     "momentum")))
    assert int(plain_opt.iterations.numpy()) == 6

    # and back: a plain checkpoint restored into a parameter-server model reaches the servers
    for p in plain.weights:
        p.assign(p.numpy() + 1.0)
    path2 = str(tmp_path / "plain")
    tt.train.Checkpoint(model=plain).write(path2)
    fresh = compiled(strategy)
    tt.train.Checkpoint(model=fresh).read(path2)
    for v, p in zip(fresh.weights, plain.weights):
        np.testing.assert_array_equal(server_value(cluster, v), p.numpy())
        np.testing.assert_array_equal(v.numpy(), p.numpy())


def test_checkpoint_of_sharded_variables_is_rejoined_and_resplit(cluster, tmp_path):
    two = tt.distribute.experimental.ParameterServerStrategy(
        cluster.resolver, variable_partitioner=partitioners.FixedShardsPartitioner(2))
    model = compiled(two)
    assert len(model.layers[0].kernel.variables) == 2
    train_a_little(cluster, two, model)
    path = str(tmp_path / "sharded")
    tt.train.Checkpoint(model=model).write(path)
    saved = [server_value(cluster, v) for v in model.weights]

    plain = make_model()
    tt.train.Checkpoint(model=plain).read(path)
    for s, p in zip(saved, plain.weights):
        np.testing.assert_array_equal(p.numpy(), s)

    mw = tt.distribute.MultiWorkerMirroredStrategy()
    with mw.scope():
        mirrored = make_model()
    tt.train.Checkpoint(model=mirrored).read(path)
    for s, p in zip(saved, mirrored.weights):
        np.testing.assert_array_equal(p.numpy(), s)

    three = tt.distribute.experimental.ParameterServerStrategy(
        cluster.resolver, variable_partitioner=partitioners.FixedShardsPartitioner(3))
    with three.scope():
        resplit = make_model()
    assert [tuple(p.shape) for p in resplit.layers[0].kernel.variables] == [(2, 8), (1, 8),
                                                                           (1, 8)]
    tt.train.Checkpoint(model=resplit).read(path)
    for s, v in zip(saved, resplit.weights):
        np.testing.assert_array_equal(server_value(cluster, v), s)


def test_fit_under_mixed_precision(cluster, strategy):
    # a LossScaleOptimizer (its scale and counters on the servers too); the metric's write
    # between the forward and the backward pass must not look like a write into the weights
    tt.mixed_precision.set_global_policy("mixed_float16")
    try:
        with strategy.scope():
            model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(8, activation="relu"),
                                   tt.layers.Dense(2, dtype="float32")])
            model.compile(tt.optimizers.SGD(0.1),
                          loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        assert type(model.optimizer).__name__ == "LossScaleOptimizer"
        history = ps_fit.fit(model, X, Y, batch_size=32, epochs=2, steps_per_epoch=5,
                                verbose=0)
    finally:
        tt.mixed_precision.set_global_policy("float32")
    assert int(model.optimizer.iterations.numpy()) == 10
    assert np.isfinite(history.history["loss"]).all()
    assert float(np.asarray(model.optimizer.loss_scale)) == 2.0 ** 15


def test_model_fit_is_the_coordinator_fit(cluster, strategy):
    """``model.fit`` itself takes the coordinator path under this strategy (the hook in
    Trainer.fit): every step is applied once on the servers."""
    model = compiled(strategy)
    history = model.fit(X, Y, batch_size=32, epochs=2, steps_per_epoch=5, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]
    assert int(model.optimizer.iterations.numpy()) == 10
