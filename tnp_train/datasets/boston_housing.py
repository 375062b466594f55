"""``tf.keras.datasets.boston_housing`` (TF 2.4), read from a local ``boston_housing.npz``."""
from __future__ import annotations

import numpy as np

from ._files import _BASE, load_npz, locate

__all__ = ["load_data"]


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``: the rows shuffled by
    ``np.random.RandomState(seed)`` and the last ``test_split`` of them held out, as TF."""
    if not 0 <= test_split < 1:
        # TF asserts; the same condition, with a message
        raise ValueError(f"boston_housing.load_data: test_split must be in [0, 1), got "
                         f"{test_split}")
    p = locate("boston_housing", "boston_housing.npz", _BASE + "boston_housing.npz", path)
    f = load_npz(p, ["x", "y"])
    x, y = f["x"], f["y"]
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x))
    rng.shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
