"""``tf.keras.datasets.reuters`` (TF 2.4), read from a local ``reuters.npz``."""
from __future__ import annotations

import numpy as np

from ._files import _BASE, load_npz, locate
from ._text import (_remove_long_seq, as_object_array, check_kwargs, cut_vocabulary, shift,
                    word_index)

__all__ = ["load_data", "get_word_index"]


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: newswires as object arrays of lists of word
    indices (as imdb's) and topic labels; shuffled with ``np.random.RandomState(seed)``, the
    last ``test_split`` held out, as TF."""
    num_words = check_kwargs(kwargs, "reuters") or num_words
    p = locate("reuters", "reuters.npz", _BASE + "reuters.npz", path)
    f = load_npz(p, ["x", "y"])
    xs, labels = f["x"], f["y"]
    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs, labels = xs[indices], labels[indices]
    xs = shift(xs, start_char, index_from)
    if maxlen:
        xs, labels = _remove_long_seq(maxlen, xs, labels)
    xs = cut_vocabulary(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    return ((as_object_array(xs[:idx]), np.array(labels[:idx])),
            (as_object_array(xs[idx:]), np.array(labels[idx:])))


def get_word_index(path="reuters_word_index.json"):
    """The word -> index dictionary (indices before ``index_from`` is added)."""
    return word_index("reuters", "reuters_word_index.json", path)
