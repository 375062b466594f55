"""A variational autoencoder for bump-shaped curves, built by subclassing.

Each curve is one Gaussian bump on a 32-point grid, placed and sized at random: two numbers
describe it, so the latent space has two dimensions.

Covers: Layer subclasses holding sublayers, add_loss from a nested layer, a subclassed Model
with its own train_step (unlabelled data, its own Mean trackers and metrics list), a
non-trainable weight changed by a Callback during fit, predict through call, and sampling
new curves from the decoder alone.
"""
import numpy as np

from _backend import QUICK, keras, layers, report, tf
import _data

POINTS = 32
NOISE = 0.02
# the Gaussian likelihood's scale: a squared error counts as error / (2 * SIGMA**2) nats, so
# SIGMA sets how much detail the code is worth spending KL on. A few times the data's noise
# keeps the bump's position and width and drops the noise.
SIGMA = 0.05


def bumps(n, seed):
    rng = np.random.RandomState(seed)
    centre = rng.uniform(0.2, 0.8, size=(n, 1))
    width = rng.uniform(0.04, 0.12, size=(n, 1))
    grid = np.linspace(0.0, 1.0, POINTS)
    curves = np.exp(-0.5 * ((grid - centre) / width) ** 2)
    return (curves + rng.normal(0, NOISE, size=curves.shape)).astype("float32")


class GaussianCode(layers.Layer):
    """Draws a code from N(mean, exp(log_var)) and charges its KL divergence from N(0, I)."""

    def call(self, inputs):
        mean, log_var = inputs
        kl = -0.5 * tf.reduce_sum(1.0 + log_var - tf.square(mean) - tf.exp(log_var), axis=1)
        self.add_loss(tf.reduce_mean(kl))
        return mean + tf.exp(0.5 * log_var) * tf.random.normal(tf.shape(mean), dtype=mean.dtype)


class Encoder(layers.Layer):
    def __init__(self, latent, hidden, **kwargs):
        super().__init__(**kwargs)
        self.first = layers.Dense(hidden, activation="relu")
        self.second = layers.Dense(hidden // 2, activation="relu")
        self.to_mean = layers.Dense(latent)
        self.to_log_var = layers.Dense(latent)
        self.code = GaussianCode()

    def call(self, curves):
        h = self.second(self.first(curves))
        mean = self.to_mean(h)
        return mean, self.code((mean, self.to_log_var(h)))


class BumpVAE(keras.Model):
    def __init__(self, latent=2, hidden=64, **kwargs):
        super().__init__(**kwargs)
        self.latent = latent
        self.encoder = Encoder(latent, hidden)
        self.decoder = keras.Sequential([layers.Dense(hidden // 2, activation="relu"),
                                         layers.Dense(hidden, activation="relu"),
                                         layers.Dense(POINTS)])
        self.kl_weight = self.add_weight(name="kl_weight", shape=(), initializer="zeros",
                                         trainable=False)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.fit_tracker = keras.metrics.Mean(name="reconstruction")
        self.kl_tracker = keras.metrics.Mean(name="kl")

    @property
    def metrics(self):
        # listed so that fit resets them at each epoch
        return [self.loss_tracker, self.fit_tracker, self.kl_tracker]

    def call(self, curves):
        # the code's mean, not a draw: predictions are then repeatable
        mean, _ = self.encoder(curves)
        return self.decoder(mean)

    def train_step(self, data):
        curves = data[0] if isinstance(data, tuple) else data
        with tf.GradientTape() as tape:
            _, code = self.encoder(curves, training=True)
            rebuilt = self.decoder(code, training=True)
            misfit = tf.reduce_mean(tf.reduce_sum(tf.square(curves - rebuilt), axis=1))
            reconstruction = misfit / (2 * SIGMA ** 2)
            kl = sum(self.losses)
            loss = reconstruction + self.kl_weight * kl
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.loss_tracker.update_state(loss)
        self.fit_tracker.update_state(reconstruction)
        self.kl_tracker.update_state(kl)
        return {m.name: m.result() for m in self.metrics}


class KLWarmUp(keras.callbacks.Callback):
    """Raises the KL weight from 0 to 1 over the first epochs: at full weight from the start
    the codes collapse onto the prior before the decoder has learnt to use them."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs = epochs

    def on_epoch_begin(self, epoch, logs=None):
        self.model.kl_weight.assign(min(1.0, epoch / self.epochs))


def linear_code_r2(train, test, size):
    """Test R^2 of the best linear code of the same size (PCA fitted on the training
    curves): the encoder's nonlinearity has to buy something over it."""
    centre = train.mean(0)
    axes = np.linalg.svd(train - centre, full_matrices=False)[2][:size]
    return _data.r_squared(test, (test - centre) @ axes.T @ axes + centre)


def main():
    train, test = bumps(1500 if QUICK else 5000, seed=1), bumps(1000, seed=2)
    epochs = 6 if QUICK else 30
    vae = BumpVAE(hidden=32 if QUICK else 64)
    vae.compile(optimizer=keras.optimizers.Adam(2e-3))
    history = vae.fit(train, batch_size=64, epochs=epochs, verbose=0,
                      callbacks=[KLWarmUp(max(1, epochs // 3))])
    rebuilt = np.asarray(vae.predict(test, verbose=0))
    # new curves from codes the prior makes likely, decoded without any input curve
    codes = np.random.RandomState(3).normal(size=(200, vae.latent)).astype("float32")
    made = np.asarray(vae.decoder.predict(codes, verbose=0))
    # the misfit is the comparable part: the total's KL weight follows the warm-up
    fits = history.history["reconstruction"]
    out = report(fits[0], fits[-1], "test reconstruction R^2", _data.r_squared(test, rebuilt),
                 pca_r2=linear_code_r2(train, test, vae.latent),
                 final_kl=history.history["kl"][-1],
                 sampled_peak_median=np.median(made.max(axis=1)),
                 sampled_floor_median=np.median(made.min(axis=1)))
    out["reconstruction_shape"] = rebuilt.shape
    out["sample_shape"] = made.shape
    return out


if __name__ == "__main__":
    main()
