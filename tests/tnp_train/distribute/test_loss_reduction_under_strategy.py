"""A mean-reduced ``Loss`` called by the user under a strategy is refused, as TF 2.4 refuses it
(``Loss._get_reduction``): each replica's mean, differentiated and summed across N replicas by
the all-reduce, is N times the gradient of the global batch's mean. compile's losses are
exempt (fit scales them itself), and so is the object compile was given, as TF marks it.

The doubled gradient itself is shown first, so the refusal guards a real wrong number."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

D = tt.distribute
RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 16)
YF = RNG.standard_normal((16, 3)).astype(np.float32)


def _two():
    return D.MirroredStrategy(["cpu:0", "cpu:1"])


def _model():
    return tt.Sequential([tt.Input((4,)), tt.layers.Dense(3, kernel_initializer="ones")])


def _grads(strategy, loss_of):
    """The kernel's gradient summed over the replicas (what apply_gradients applies)."""
    with strategy.scope():
        model = _model()
    ds = strategy.experimental_distribute_dataset(
        tt.data.Dataset.from_tensor_slices((X, Y)).batch(16))

    def step(batch):
        xb, yb = batch
        with tt.GradientTape() as tape:
            loss = loss_of(yb, model(xb))
        return tape.gradient(loss, model.trainable_variables[0])

    per_replica = strategy.run(step, args=(next(iter(ds)),))
    return np.asarray(strategy.reduce("SUM", per_replica, axis=None))


def test_a_per_replica_mean_would_double_the_gradient():
    none = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    one = _grads(D.MirroredStrategy(["cpu:0"]),
                 lambda y, p: tt.nn.compute_average_loss(none(y, p), global_batch_size=16))
    two = _grads(_two(),
                 lambda y, p: tt.nn.compute_average_loss(none(y, p), global_batch_size=16))
    np.testing.assert_allclose(two, one, rtol=1e-6, atol=1e-7)
    # the per-replica mean, written by hand: twice the gradient. A Loss object refuses it.
    doubled = _grads(_two(), lambda y, p: tnp.mean(none(y, p)))
    np.testing.assert_allclose(doubled, 2 * one, rtol=1e-6, atol=1e-7)


LOSSES = [
    ("sparse", lambda **kw: tt.losses.SparseCategoricalCrossentropy(from_logits=True, **kw), Y),
    ("categorical", lambda **kw: tt.losses.CategoricalCrossentropy(from_logits=True, **kw),
     np.eye(3, dtype=np.float32)[Y]),
    ("mse", lambda **kw: tt.losses.MeanSquaredError(**kw), YF),
    ("wrapper", lambda **kw: tt.losses.LossFunctionWrapper(tt.losses.mae, **kw), YF),
]


@pytest.mark.parametrize("name,make,y", LOSSES, ids=[c[0] for c in LOSSES])
@pytest.mark.parametrize("reduction", ["auto", "sum_over_batch_size"])
def test_mean_reductions_raise_in_scope_and_in_run(name, make, y, reduction):
    strategy = _two()
    loss = make(reduction=reduction)
    model = _model()
    expected = float(loss(y, model(X)))                 # outside any strategy: fine
    with strategy.scope():
        with pytest.raises(ValueError, match=r"MirroredStrategy \(2 replica\(s\)\).*"
                                             r"compute_average_loss"):
            loss(y, model(X))
        mirrored = _model()

    def step(batch):
        return loss(batch[1], mirrored(batch[0]))

    ds = strategy.experimental_distribute_dataset(
        tt.data.Dataset.from_tensor_slices((X, y)).batch(16))
    with pytest.raises(ValueError, match="reduction="):
        strategy.run(step, args=(next(iter(ds)),))
    assert float(loss(y, model(X))) == expected          # and fine again after the scope


@pytest.mark.parametrize("name,make,y", LOSSES, ids=[c[0] for c in LOSSES])
def test_sum_and_none_are_allowed(name, make, y):
    model = _model()
    with _two().scope():
        per = make(reduction="none")(y, model(X))
        total = make(reduction="sum")(y, model(X))
    np.testing.assert_allclose(float(tnp.sum(per)), float(total), rtol=1e-6)


def test_one_device_strategy_refuses_too():
    # TF: has_strategy() is True under any strategy but the default one
    with D.OneDeviceStrategy("cpu:0").scope():
        with pytest.raises(ValueError, match="OneDeviceStrategy"):
            tt.losses.MeanSquaredError()(YF, _model()(X))


def test_compiled_losses_are_exempt_and_fit_equals_one_device():
    results = []
    for devices in (["cpu:0"], ["cpu:0", "cpu:1"]):
        loss = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
        with D.MirroredStrategy(devices).scope():
            model = _model()
            model.compile(optimizer=tt.optimizers.SGD(0.1), loss=loss)
            hist = model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
            loss(Y, model(X))       # the object compile was given: marked, as TF marks it
        results.append((hist.history["loss"], model.get_weights()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    for a, b in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_custom_train_step_with_its_own_loss_object_raises_under_fit():
    class Custom(tt.Model):
        def __init__(self):
            super().__init__()
            self.dense = tt.layers.Dense(3)
            self.loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tt.GradientTape() as tape:
                loss = self.loss_fn(y, self(x, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}

    with _two().scope():
        model = Custom()
        model.compile(optimizer=tt.optimizers.SGD(0.1))
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy: reduction='auto'"):
        model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    plain = Custom()                       # no strategy: the same step trains
    plain.compile(optimizer=tt.optimizers.SGD(0.1))
    plain.fit(X, Y, batch_size=8, epochs=1, verbose=0)
