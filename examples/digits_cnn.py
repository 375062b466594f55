"""The main job (``make demo``): a small CNN on scikit-learn's bundled 8x8 digits.

Loads the digits offline, makes a fixed stratified split (20% test, ``random_state=0``), builds
the input pipeline with ``tt.data``, trains with ``model.fit`` (progress bar, validation,
checkpoints each epoch), reports the test accuracy, saves the model, loads it back and checks
that the reloaded model predicts exactly the same.

    python examples/digits_cnn.py [--seed 0] [--policy float32|mixed_float16|mixed_bfloat16]
                                  [--epochs 30] [--verbose 1]

The last line printed is ``test accuracy: 0.XXXX``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import tnp
import tnp_train as tt


def load_digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]      # (n, 8, 8, 1) in [0, 1]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)


def build_model():
    L = tt.layers
    return tt.Sequential([
        tt.Input((8, 8, 1)),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.MaxPooling2D(),
        L.Conv2D(64, 3, padding="same", activation="relu"),
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dropout(0.3),
        L.Dense(128, activation="relu"),
        # the last layer outputs float32 under any policy (Keras's advice for mixed precision)
        L.Dense(10, dtype="float32"),
    ], name="digits_cnn")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="float32",
                    help="dtype policy: float32, mixed_float16, mixed_bfloat16, float64")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--verbose", type=int, default=1, help="0 silent, 1 progress bar, 2 a line per epoch")
    ap.add_argument("--save-dir", default=None, help="where to save the model (default: a temp dir)")
    args = ap.parse_args(argv)

    tt.utils.set_random_seed(args.seed)
    tt.mixed_precision.set_global_policy(args.policy)
    x_train, x_test, y_train, y_test = load_digits_split()
    print(f"digits: {len(x_train)} train / {len(x_test)} test images of 8x8, policy {args.policy}, "
          f"seed {args.seed}")

    # the input pipeline: shuffled each epoch (seeded), batched, prefetched on a thread
    n_val = len(x_train) // 10
    train_ds = (tt.data.Dataset.from_tensor_slices((x_train[n_val:], y_train[n_val:]))
                .shuffle(2048, seed=args.seed).batch(args.batch_size).prefetch(2))
    val_ds = tt.data.Dataset.from_tensor_slices((x_train[:n_val], y_train[:n_val])).batch(256)

    model = build_model()
    model.compile(optimizer=tt.optimizers.Adam(2e-3),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    if args.verbose:
        model.summary()

    workdir = tempfile.mkdtemp(prefix="digits_cnn_")
    save_dir = args.save_dir or os.path.join(workdir, "digits_model")
    try:
        callbacks = [tt.callbacks.ModelCheckpoint(os.path.join(workdir, "ckpt", "best"),
                                                  monitor="val_accuracy", save_best_only=True,
                                                  save_weights_only=True),
                     tt.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=4)]
        t0 = time.perf_counter()
        model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, callbacks=callbacks,
                  verbose=args.verbose)
        train_s = time.perf_counter() - t0

        loss, acc = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
        print(f"training time: {train_s:.1f} s for {args.epochs} epochs; test loss {loss:.4f}")

        model.save(save_dir)
        reloaded = tt.models.load_model(save_dir)
        p1 = np.asarray(model.predict(x_test, batch_size=256))
        p2 = np.asarray(reloaded.predict(x_test, batch_size=256))
        same = np.array_equal(p1, p2)
        print(f"saved to {save_dir}; reloaded model gives identical predictions: {same}")
        if not same:
            print("error: the reloaded model's predictions differ", file=sys.stderr)
            return 1
    finally:
        if args.save_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            shutil.rmtree(os.path.join(workdir, "ckpt"), ignore_errors=True)
        tt.mixed_precision.set_global_policy(None)
    print(f"test accuracy: {acc:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
