"""Normalization: adapt on arrays, lists and datasets (batches combine exactly), the axis
forms, TF 2.5's mean/variance arguments, float64, errors, and a functional model that trains,
saves and loads back with its adapted statistics."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

P = tt.layers.experimental.preprocessing


def _rand(shape, seed=0, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 3).astype(dtype)


def test_adapt_by_hand_and_batches_combine():
    x = _rand((20, 3), 1, np.float64)
    whole = P.Normalization()
    whole.adapt(x)
    np.testing.assert_allclose(whole.mean.numpy(), x.mean(0), rtol=1e-6)
    np.testing.assert_allclose(whole.variance.numpy(), x.var(0), rtol=1e-6)
    assert int(whole.count.numpy()) == 20
    batched = P.Normalization()
    batched.adapt(tt.data.Dataset.from_tensor_slices(x).batch(7))
    np.testing.assert_allclose(batched.mean.numpy(), whole.mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(batched.variance.numpy(), whole.variance.numpy(), rtol=1e-6)
    out = np.asarray(whole(tnp.asarray(x.astype(np.float32))))
    np.testing.assert_allclose(out, (x - x.mean(0)) / x.std(0), rtol=1e-4, atol=1e-5)
    assert [w.name.split("/")[-1] for w in whole.weights] == ["mean", "variance", "count"]
    ints = np.asarray(whole(tnp.asarray([[1, 2, 3]])))     # integers are cast, as TF 2.4
    assert ints.dtype == np.float32
    np.testing.assert_allclose(ints, (np.array([[1, 2, 3]]) - x.mean(0)) / x.std(0), rtol=1e-5)
    assert whole.trainable_weights == []


def test_axis_forms_rank1_and_constant_feature():
    x = _rand((5, 2, 3), 2)
    n = P.Normalization(axis=None)
    n.adapt(x)
    assert n.mean.shape == ()
    np.testing.assert_allclose(float(n.mean.numpy()), x.astype(np.float64).mean(), rtol=1e-5)
    r1 = P.Normalization()
    r1.adapt([1.0, 2.0, 3.0])                  # rank-1 data: one feature, as TF 2.4
    out = r1(tnp.asarray([1.0, 3.0]))
    assert out.shape == (2, 1)
    np.testing.assert_allclose(np.asarray(out).ravel(), [-np.sqrt(1.5), np.sqrt(1.5)],
                               rtol=1e-5)
    const = P.Normalization()
    const.adapt(np.ones((4, 2), np.float32))
    # variance 0: the std is floored at Keras's epsilon (1e-7), so no NaN
    np.testing.assert_array_equal(np.asarray(const(tnp.ones((1, 2)))), [[0, 0]])
    with pytest.raises(ValueError, match="batch axis"):
        P.Normalization(axis=0)


def test_mean_variance_arguments_float64_and_errors():
    n = P.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0], dtype="float64")
    out = n(tnp.asarray([[3.0, 5.0]], dtype="float64"))
    assert out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), [[1.0, 1.0]])
    again = tt.layers.deserialize(tt.layers.serialize(n))
    np.testing.assert_allclose(np.asarray(again(tnp.asarray([[3.0, 5.0]]))), [[1.0, 1.0]])
    with pytest.raises(ValueError, match="do not fit"):
        n(tnp.asarray([[1.0, 2.0, 3.0]], dtype="float64"))
    with pytest.raises(ValueError, match="both mean and variance"):
        P.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="empty"):
        P.Normalization().adapt(tt.data.Dataset.from_tensor_slices(np.zeros((0, 2))).batch(2))


def test_normalized_model_trains_saves_and_loads(tmp_path):
    x = _rand((32, 3), 3)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))
    norm = P.Normalization()
    norm.adapt(x)
    inp = tt.Input(shape=(3,))
    model = tt.Model(inp, tt.layers.Dense(1)(norm(inp)))
    model.compile(tt.optimizers.Adam(0.05), "mse")
    hist = model.fit(x, y, epochs=5, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    model.save(tmp_path / "m")
    again = tt.models.load_model(tmp_path / "m")
    restored = [l for l in again.layers if isinstance(l, P.Normalization)][0]
    np.testing.assert_array_equal(restored.mean.numpy(), norm.mean.numpy())
    np.testing.assert_array_equal(np.asarray(again.predict(x)), np.asarray(model.predict(x)))


class RunningMax(P.PreprocessingLayer):
    """A user's adaptive layer on the base contract: ``_reset_state``/``_update_state``/
    ``_finalize_state``, then a call that divides by the adapted maximum."""

    def _reset_state(self):
        self.batches, self.peak = 0, -np.inf

    def _update_state(self, batch):
        self.batches += 1
        self.peak = max(self.peak, float(np.max(batch)))

    def _finalize_state(self):
        self.scale = self.peak

    def call(self, inputs):
        return inputs / self.scale


def test_preprocessing_layer_adapt_contract():
    x = np.array([[1.0], [4.0], [2.0], [8.0], [3.0]], np.float32)
    layer = RunningMax()
    layer.adapt(x)                                  # an array: one batch
    assert (layer.batches, layer.scale) == (1, 8.0)
    layer.adapt(x, batch_size=2, steps=2)           # rows 0..3 in two batches
    assert (layer.batches, layer.scale) == (2, 8.0)
    layer.adapt(x, batch_size=2, steps=1)
    assert (layer.batches, layer.scale) == (1, 4.0)
    layer.adapt(tt.data.Dataset.from_tensor_slices(x).batch(2), steps=3)
    assert layer.batches == 3
    np.testing.assert_allclose(np.asarray(layer(tnp.asarray(x))), x / 8.0)
    with pytest.raises(ValueError, match="single arrays"):
        layer.adapt(tt.data.Dataset.from_tensor_slices((x, x)).batch(2))
    with pytest.raises(ValueError, match="reset_state=False"):
        layer.adapt(x, reset_state=False)
    with pytest.raises(TypeError, match="no state to adapt"):
        P.Rescaling(2.0).adapt(x)
