"""Helpers of the mw_*.py scripts (tnp_train under MultiWorkerMirroredStrategy, run by
tests/distributed/test_multiworker*.py): the models and data every script and its one-process
reference share, and the per-rank output file."""
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tnp_train as tt  # noqa: E402


def rank_and_size():
    """This process's rank and the job's size from the launcher's environment ((0, 1) alone)."""
    return (int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)),
            int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1)))


def mlp():
    return tt.Sequential([tt.Input((12,)), tt.layers.Dense(16, activation="relu"),
                          tt.layers.Dense(16, activation="tanh"), tt.layers.Dense(4)])


def noisy():
    """The MLP with per-sample draws: dropout and Gaussian noise (trained on mlp data)."""
    return tt.Sequential([tt.Input((12,)), tt.layers.Dense(16, activation="relu"),
                          tt.layers.Dropout(0.3), tt.layers.Dense(16, activation="tanh"),
                          tt.layers.GaussianNoise(0.1), tt.layers.Dense(4)])


def extras():
    """A functional MLP with an add_loss term and an add_metric (the Keras guides' way),
    both means over the batch, so N workers report and train as one process."""
    import tnp
    inp = tt.Input((12,))
    h = tt.layers.Dense(16, activation="relu")(inp)
    out = tt.layers.Dense(4)(tt.layers.Dense(16, activation="tanh")(h))
    model = tt.Model(inp, out)
    model.add_loss(tnp.mean(h) * 0.1)
    model.add_metric(tnp.mean(h), name="mean_h")
    return model


def cnn():
    return tt.Sequential([tt.Input((8, 8, 1)), tt.layers.Conv2D(4, 3, activation="relu"),
                          tt.layers.MaxPooling2D(2), tt.layers.Flatten(), tt.layers.Dense(4)])


def data(kind, n, seed=0):
    """Fixed inputs (the same on every rank, whatever the rank's seed) and labels 0..3."""
    rng = np.random.default_rng(seed)
    shape = (n, 12) if kind in ("mlp", "noisy") else (n, 8, 8, 1)
    x = rng.normal(size=shape).astype("float32")
    y = rng.integers(0, 4, n).astype("int64")
    return x, y


def save(path, **arrays):
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
