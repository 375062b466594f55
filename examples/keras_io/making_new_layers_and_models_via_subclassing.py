"""Making new layers and models via subclassing: the variational autoencoder, from
https://keras.io/guides/making_new_layers_and_models_via_subclassing/ (keras-io guides/
making_new_layers_and_models_via_subclassing.py, fchollet, Keras 2 era, last modified
2020/04/13; the "Putting it all together: an end-to-end example" and "Beyond object-oriented
development: the Functional API" sections).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf``,
  ``from tensorflow import keras`` and ``from tensorflow.keras import layers``; under tnp_train
  ``tf.keras`` is ``tnp_train`` and ``tf.shape``/``tf.exp``/``tf.square``/``tf.reduce_mean`` are
  tnp's functions;
- data: scikit-learn's 8x8 digits (``_data.digits``, all 1,797 images flattened to 64 pixels)
  replace ``tf.keras.datasets.mnist.load_data()``, so ``original_dim = 64`` and the logging
  interval is 10 steps instead of 100;
- epochs 2 -> 20 (3 -> 30 for the functional VAE) for the smaller data;
- ``--quick``: 2 epochs on 256 images; the result line for compare.py (the subclassed VAE's
  ``fit`` loss) is printed before the functional section.
"""
from _backend import keras, layers, tf, QUICK, report
import numpy as np
import _data

EPOCHS = 2 if QUICK else 20

"""
## Putting it all together: an end-to-end example
"""


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        epsilon = tf.keras.backend.random_normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    """Maps digits to a triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
        super(Encoder, self).__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Converts z, the encoded digit vector, back into a readable digit."""

    def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
        super(Decoder, self).__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(keras.Model):
    """Combines the encoder and decoder into an end-to-end model for training."""

    def __init__(
        self,
        original_dim,
        intermediate_dim=64,
        latent_dim=32,
        name="autoencoder",
        **kwargs
    ):
        super(VariationalAutoEncoder, self).__init__(name=name, **kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        # Add KL divergence regularization loss.
        kl_loss = -0.5 * tf.reduce_mean(
            z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1
        )
        self.add_loss(kl_loss)
        return reconstructed


original_dim = 64
vae = VariationalAutoEncoder(original_dim, 64, 32)

optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
mse_loss_fn = tf.keras.losses.MeanSquaredError()

loss_metric = tf.keras.metrics.Mean()

(x_train, _), (x_test, _) = _data.digits()
x_train = np.concatenate([x_train, x_test])[: 256 if QUICK else None]
x_train = x_train.reshape(-1, 64).astype("float32") / 255

train_dataset = tf.data.Dataset.from_tensor_slices(x_train)
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(64)

epochs = EPOCHS

epoch_losses = []
# Iterate over epochs.
for epoch in range(epochs):
    print("Start of epoch %d" % (epoch,))

    # Iterate over the batches of the dataset.
    for step, x_batch_train in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            reconstructed = vae(x_batch_train)
            # Compute reconstruction loss
            loss = mse_loss_fn(x_batch_train, reconstructed)
            loss += sum(vae.losses)  # Add KLD regularization loss

        grads = tape.gradient(loss, vae.trainable_weights)
        optimizer.apply_gradients(zip(grads, vae.trainable_weights))

        loss_metric(loss)

        if step % 10 == 0:
            print("step %d: mean loss = %.4f" % (step, loss_metric.result()))
    epoch_losses.append(float(loss_metric.result()))

vae = VariationalAutoEncoder(64, 64, 32)

optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)

vae.compile(optimizer, loss=tf.keras.losses.MeanSquaredError())
fit_history = vae.fit(x_train, x_train, epochs=EPOCHS, batch_size=64, verbose=2)
h = fit_history.history
report(h["loss"][0], h["loss"][-1], "final loss", h["loss"][-1],
       loop_loss_start=epoch_losses[0], loop_loss_end=epoch_losses[-1])

"""
## Beyond object-oriented development: the Functional API
"""

original_dim = 64
intermediate_dim = 64
latent_dim = 32

# Define encoder model.
original_inputs = tf.keras.Input(shape=(original_dim,), name="encoder_input")
x = layers.Dense(intermediate_dim, activation="relu")(original_inputs)
z_mean = layers.Dense(latent_dim, name="z_mean")(x)
z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
z = Sampling()((z_mean, z_log_var))
encoder = tf.keras.Model(inputs=original_inputs, outputs=z, name="encoder")

# Define decoder model.
latent_inputs = tf.keras.Input(shape=(latent_dim,), name="z_sampling")
x = layers.Dense(intermediate_dim, activation="relu")(latent_inputs)
outputs = layers.Dense(original_dim, activation="sigmoid")(x)
decoder = tf.keras.Model(inputs=latent_inputs, outputs=outputs, name="decoder")

# Define VAE model.
outputs = decoder(z)
vae = tf.keras.Model(inputs=original_inputs, outputs=outputs, name="vae")

# Add KL divergence regularization loss.
kl_loss = -0.5 * tf.reduce_mean(z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1)
vae.add_loss(kl_loss)

# Train.
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
vae.compile(optimizer, loss=tf.keras.losses.MeanSquaredError())
functional_history = vae.fit(x_train, x_train, epochs=2 if QUICK else 30, batch_size=64,
                             verbose=2)
print("functional VAE: loss %.4f -> %.4f" % (functional_history.history["loss"][0],
                                             functional_history.history["loss"][-1]))
