"""``tf.keras.datasets.imdb`` (TF 2.4), read from a local ``imdb.npz``."""
from __future__ import annotations

import numpy as np

from ._files import _BASE, load_npz, locate
from ._text import (_remove_long_seq, as_object_array, check_kwargs, cut_vocabulary, shift,
                    word_index)

__all__ = ["load_data", "get_word_index"]


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: reviews as object arrays of lists of word
    indices (shifted by ``index_from``, led by ``start_char``, words outside
    ``[skip_top, num_words)`` as ``oov_char``), both splits shuffled with
    ``np.random.RandomState(seed)``, as TF."""
    num_words = check_kwargs(kwargs, "imdb") or num_words
    p = locate("imdb", "imdb.npz", _BASE + "imdb.npz", path)
    f = load_npz(p, ["x_train", "y_train", "x_test", "y_test"])
    x_train, labels_train = f["x_train"], f["y_train"]
    x_test, labels_test = f["x_test"], f["y_test"]
    # one generator for both splits, in this order, as TF
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]
    x_train = shift(x_train, start_char, index_from)
    x_test = shift(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = _remove_long_seq(maxlen, x_train, labels_train)
        x_test, labels_test = _remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                             f"sequence was kept. Increase maxlen.")
    xs = cut_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([np.asarray(labels_train), np.asarray(labels_test)])
    idx = len(x_train)
    return ((as_object_array(xs[:idx]), labels[:idx]),
            (as_object_array(xs[idx:]), labels[idx:]))


def get_word_index(path="imdb_word_index.json"):
    """The word -> index dictionary (indices before ``index_from`` is added)."""
    return word_index("imdb", "imdb_word_index.json", path)
