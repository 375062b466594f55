"""``tf.keras.datasets.fashion_mnist`` (TF 2.4), read from Keras's local cache folder."""
from __future__ import annotations

import gzip
import os

import numpy as np

from ._files import _BASE, locate

__all__ = ["load_data"]

_FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]


def load_data(path=None):
    """``(x_train, y_train), (x_test, y_test)`` from the four gzipped IDX files in
    ``~/.keras/datasets/fashion-mnist/`` (or the folder ``path``, a tnp_train addition: TF 2.4's
    ``load_data`` takes no argument). Nothing is downloaded."""
    origin = _BASE + "fashion-mnist/"
    folder = locate("fashion_mnist", "fashion-mnist", origin + "{" + ",".join(_FILES) + "}",
                    path, is_dir=True)
    missing = [f for f in _FILES if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise FileNotFoundError(f"fashion_mnist.load_data: {folder} lacks {missing}; download "
                                f"them from {origin} into it (tnp_train does not download).")

    def read(name, offset):
        with gzip.open(os.path.join(folder, name), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    y_train = read(_FILES[0], 8)
    x_train = read(_FILES[1], 16).reshape(len(y_train), 28, 28)
    y_test = read(_FILES[2], 8)
    x_test = read(_FILES[3], 16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)
