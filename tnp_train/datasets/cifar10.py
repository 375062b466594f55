"""``tf.keras.datasets.cifar10`` (TF 2.4), read from a local ``cifar-10-batches-py``."""
from __future__ import annotations

import os

import numpy as np

from ..backend import config as backend_config
from ._cifar import load_batch
from ._files import locate

__all__ = ["load_data"]

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def load_data(path=None):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 32, 32, 3) (channels first
    under ``image_data_format() == "channels_first"``) and int labels (N, 1), from the folder
    ``cifar-10-batches-py`` (or its ``.tar.gz``) in ``~/.keras/datasets`` or at ``path`` (a
    tnp_train addition). Nothing is downloaded."""
    folder = locate("cifar10", "cifar-10-batches-py", _ORIGIN, path, is_dir=True,
                    archive="cifar-10-batches-py.tar.gz")
    parts = [load_batch(os.path.join(folder, f"data_batch_{i}")) for i in range(1, 6)]
    num_train = sum(len(p[0]) for p in parts)
    x_train = np.empty((num_train, 3, 32, 32), dtype="uint8")
    y_train = np.empty((num_train,), dtype="uint8")
    at = 0
    for data, labels in parts:
        x_train[at:at + len(data)] = data
        y_train[at:at + len(data)] = labels
        at += len(data)
    x_test, y_test = load_batch(os.path.join(folder, "test_batch"))
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if backend_config.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    x_test = x_test.astype(x_train.dtype)
    y_test = y_test.astype(y_train.dtype)
    return (x_train, y_train), (x_test, y_test)
