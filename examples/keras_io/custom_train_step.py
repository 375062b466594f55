"""A regression model that overrides Model.train_step.

The training targets carry gross outliers (a faulty logger, say) and the test targets do not.
The step jitters the inputs, computes the compiled (Huber) loss under a GradientTape, clips
the gradients to a global norm and logs that norm: three things fit's default step
does not do. Evaluation keeps the default test_step.

Covers: train_step overridden on a subclassed Model, compiled_loss / compiled_metrics called
from it, a Mean tracker the model owns, gradient clipping by hand, compile with a Huber loss.
"""
import numpy as np

from _backend import QUICK, keras, layers, report, tf
import _data

FEATURES = 6


def readings(n, seed, outlier_rate=0.0):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, FEATURES))
    # the last feature is noise the model has to learn to ignore
    y = np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.5 * x[:, 3] ** 2 - x[:, 4]
    y = y + rng.normal(0, 0.1, size=n)
    bad = rng.random_sample(n) < outlier_rate
    y[bad] += rng.choice([-1, 1], size=bad.sum()) * rng.uniform(3, 8, size=bad.sum())
    return x.astype("float32"), y.astype("float32")[:, None]


class JitteredRegressor(keras.Model):
    def __init__(self, hidden=64, jitter=0.05, clip_norm=1.0, **kwargs):
        super().__init__(**kwargs)
        self.first = layers.Dense(hidden, activation="relu")
        self.second = layers.Dense(hidden, activation="relu")
        self.head = layers.Dense(1)
        self.jitter = jitter
        self.clip_norm = clip_norm
        self.grad_norm = keras.metrics.Mean(name="grad_norm")

    def call(self, x):
        return self.head(self.second(self.first(x)))

    def train_step(self, data):
        x, y = data
        # fresh jitter each step: the model never sees the same point twice
        x = x + self.jitter * tf.random.normal(tf.shape(x), dtype=x.dtype)
        with tf.GradientTape() as tape:
            guess = self(x, training=True)
            loss = self.compiled_loss(y, guess, regularization_losses=self.losses)
        grads = tape.gradient(loss, self.trainable_weights)
        norm = tf.sqrt(sum(tf.reduce_sum(tf.square(g)) for g in grads))
        # the 1e-12 only matters for an all-zero gradient, which then stays zero
        scale = tf.minimum(self.clip_norm / (norm + 1e-12), 1.0)
        self.optimizer.apply_gradients(zip([g * scale for g in grads], self.trainable_weights))
        self.compiled_metrics.update_state(y, guess)
        self.grad_norm.update_state(norm)
        return {m.name: m.result() for m in self.metrics}


def build_model(hidden=64, jitter=0.05):
    model = JitteredRegressor(hidden=hidden, jitter=jitter)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.Huber(delta=1.0), metrics=["mae"])
    return model


def main():
    x_train, y_train = readings(1500 if QUICK else 6000, seed=1, outlier_rate=0.08)
    x_test, y_test = readings(2000, seed=2)
    model = build_model(hidden=32 if QUICK else 64)
    history = model.fit(x_train, y_train, batch_size=64, epochs=5 if QUICK else 25, verbose=0)
    guess = np.asarray(model.predict(x_test, verbose=0))
    scores = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test R^2", _data.r_squared(y_test, guess),
                 linear_r2=_data.least_squares_r2(x_train, y_train, x_test, y_test),
                 test_mae=scores["mae"],
                 mae_of_mean=np.mean(np.abs(y_test - y_test.mean())),
                 grad_norm_first=history.history["grad_norm"][0],
                 grad_norm_last=history.history["grad_norm"][-1])
    out["prediction_shape"] = guess.shape
    return out


if __name__ == "__main__":
    main()
