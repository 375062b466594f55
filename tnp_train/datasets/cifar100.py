"""``tf.keras.datasets.cifar100`` (TF 2.4), read from a local ``cifar-100-python``."""
from __future__ import annotations

import os

import numpy as np

from ..backend import config as backend_config
from ._cifar import load_batch
from ._files import locate

__all__ = ["load_data"]

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"


def load_data(label_mode="fine", path=None):
    """``(x_train, y_train), (x_test, y_test)`` with ``label_mode`` "fine" (100 classes) or
    "coarse" (20), from the folder ``cifar-100-python`` (or its ``.tar.gz``) in
    ``~/.keras/datasets`` or at ``path`` (a tnp_train addition). Nothing is downloaded."""
    if label_mode not in ["fine", "coarse"]:
        raise ValueError('`label_mode` must be one of `"fine"`, `"coarse"`. '
                         f'Received: label_mode={label_mode}.')
    folder = locate("cifar100", "cifar-100-python", _ORIGIN, path, is_dir=True,
                    archive="cifar-100-python.tar.gz")
    x_train, y_train = load_batch(os.path.join(folder, "train"), label_key=label_mode + "_labels")
    x_test, y_test = load_batch(os.path.join(folder, "test"), label_key=label_mode + "_labels")
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if backend_config.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
