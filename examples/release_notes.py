"""The TF 2.4 release-notes snippets, with tnp in place of tf.experimental.numpy and
tnp_train in place of tf.keras: each runs and checks what it computes.

    python examples/release_notes.py
"""
from __future__ import annotations

import numpy as np

import tnp
import tnp_train as tt


def numpy_input_pipeline():
    # "tf.data.Dataset.from_tensor_slices(tnp.random.randn(1000, 1024)).map(lambda z: z.clip(-1, 1)).batch(100)"
    tnp.random.seed(0)
    data = tnp.random.randn(1000, 1024)
    ds = tt.data.Dataset.from_tensor_slices(data).map(lambda z: z.clip(-1, 1)).batch(100)
    batches = list(ds)
    assert len(batches) == 10 and batches[0].shape == (100, 1024)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b) for b in batches]),
                                  np.clip(np.asarray(data), -1, 1))
    print("NumPy input pipeline: 10 batches of (100, 1024), clipped to [-1, 1]")


def minimize_with_tape():
    # "optimizer.minimize can now accept a loss Tensor and a GradientTape"
    tt.utils.set_random_seed(0)
    x = tnp.random.randn(64, 4).astype("float32")
    y_true = (x @ tnp.asarray([[1.0], [-2.0], [0.5], [3.0]], dtype="float32"))
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(1)])
    loss_fn = tt.losses.MeanSquaredError()
    optimizer = tt.optimizers.SGD(0.1)
    first = None
    for _ in range(50):
        with tt.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = loss_fn(y_true, y_pred)
        optimizer.minimize(loss, model.trainable_variables, tape=tape)
        first = float(loss) if first is None else first
    print(f"optimizer.minimize(loss, vars, tape=tape): loss {first:.3f} -> {float(loss):.5f}")
    assert float(loss) < 0.01 * first


def gradient_transformers_and_aggregator():
    # "Optimizer arguments gradient_transformers and gradient_aggregator"
    seen = []

    def clip_each(grads_and_vars):
        return [(tnp.clip(g, -0.1, 0.1), v) for g, v in grads_and_vars]

    def aggregator(grads_and_vars):          # one process: the identity, but it is called
        seen.append(len(grads_and_vars))
        return grads_and_vars

    v = tt.Variable([1.0, -1.0])
    opt = tt.optimizers.SGD(1.0, gradient_transformers=[clip_each], gradient_aggregator=aggregator)
    opt.apply_gradients([(tnp.asarray([5.0, -5.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.9, -0.9])
    assert seen == [1]
    print("gradient_transformers / gradient_aggregator: gradients clipped to 0.1, aggregator called")


def mixed_precision_policy():
    # "tf.keras.mixed_precision is no longer experimental"
    tt.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = tt.layers.Dense(3)
        out = layer(np.ones((2, 4), np.float32))
        assert layer.compute_dtype == "float16" and layer.kernel.dtype == np.float32
        assert out.dtype == np.float16
    finally:
        tt.mixed_precision.set_global_policy(None)
    print("mixed_float16: computes in float16, keeps float32 variables")


def main():
    numpy_input_pipeline()
    minimize_with_tape()
    gradient_transformers_and_aggregator()
    mixed_precision_policy()
    print("all release-notes snippets ran")


if __name__ == "__main__":
    main()
