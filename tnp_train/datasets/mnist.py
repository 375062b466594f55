"""``tf.keras.datasets.mnist`` (TF 2.4), read from a local ``mnist.npz``."""
from __future__ import annotations

from ._files import _BASE, load_npz, locate

__all__ = ["load_data"]


def load_data(path="mnist.npz"):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 28, 28) and labels, from
    ``path`` (a local file, or a name in ``~/.keras/datasets``; nothing is downloaded)."""
    p = locate("mnist", "mnist.npz", _BASE + "mnist.npz", path)
    f = load_npz(p, ["x_train", "y_train", "x_test", "y_test"])
    return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
