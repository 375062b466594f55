"""A gradient aggregator with ``gradient_ready`` sees each gradient during the backward pass of
``minimize`` and ``fit`` (how a strategy's all-reduce overlaps the backward pass), then gets the
pairs as usual; training is exactly what it is without it."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


class RecordingAggregator:
    """Stands in for a strategy's bucketed all-reduce: 'starts' each gradient as it is handed
    over, and when called with all pairs checks that every gradient was started before."""

    def __init__(self):
        self.started = []          # (variable name, gradient) in hand-over order
        self.steps = 0

    def gradient_ready(self, variable, gradient):
        self.started.append((variable.name, gradient))

    def __call__(self, pairs):
        pairs = list(pairs)
        seen = {id(g) for _, g in self.started}
        assert all(id(g) in seen for g, _ in pairs if g is not None), \
            "apply_gradients got a gradient the aggregator was never handed"
        self.steps += 1
        return pairs


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype("float32")
    y = (x[:, :3].sum(axis=1) > 0).astype("int64")
    return x, y


def _model(seed=1):
    tt.utils.set_random_seed(seed)
    return tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", name="first"),
                          tt.layers.Dense(8, activation="relu", name="middle"),
                          tt.layers.Dense(2, name="last")])


@pytest.mark.parametrize("make_opt", [
    lambda agg: tt.optimizers.SGD(0.1, momentum=0.9, gradient_aggregator=agg),
    lambda agg: tt.optimizers.Adam(0.01, gradient_aggregator=agg),
    lambda agg: tt.mixed_precision.LossScaleOptimizer(
        tt.optimizers.SGD(0.1, gradient_aggregator=agg), initial_scale=2 ** 10),
], ids=["sgd", "adam", "loss-scale"])
def test_fit_hands_gradients_over_in_reverse_layer_order_and_trains_identically(make_opt):
    x, y = _data()
    agg = RecordingAggregator()
    a = _model()
    a.compile(make_opt(agg), loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    ha = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    b = _model()
    b.compile(make_opt(None), loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    hb = b.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert agg.steps == 8
    np.testing.assert_array_equal(ha.history["loss"], hb.history["loss"])
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    per_step = len(a.trainable_weights)
    assert len(agg.started) == 8 * per_step
    layers = [name.split("/")[0] for name, _ in agg.started[:per_step]]
    assert layers.index("last") < layers.index("middle") < layers.index("first"), layers


def test_loss_scale_optimizer_hands_over_unscaled_gradients():
    x, y = _data(16)
    agg = RecordingAggregator()
    model = _model()
    opt = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.1, gradient_aggregator=agg),
                                                initial_scale=2 ** 12)
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tt.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    with tt.GradientTape() as ref_tape:
        ref_loss = loss_fn(y, model(x))
    want = ref_tape.gradient(ref_loss, model.trainable_weights)
    opt.minimize(loss, model.trainable_weights, tape=tape)
    got = {name: g for name, g in agg.started}
    for v, w in zip(model.trainable_weights, want):
        np.testing.assert_allclose(np.asarray(got[v.name]), np.asarray(w), rtol=1e-6, atol=1e-7)
