"""``tt.datasets``: TF 2.4's ``tf.keras.datasets`` loaders (``mnist``, ``fashion_mnist``,
``cifar10``, ``cifar100``, ``imdb``, ``reuters``, ``boston_housing``).

Nothing is downloaded: each ``load_data`` reads Keras's own cache file, from ``path=`` when that
names a local file (or folder) or from ``~/.keras/datasets/``, and otherwise raises
FileNotFoundError naming the file, where to put it and the URL it comes from. The results are
TF's: the same arrays, shuffles (``seed``) and index shifts.
"""
from . import boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist, reuters

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist",
           "reuters"]
