"""What imdb and reuters share: index shifts, the maxlen filter and the vocabulary cut."""
from __future__ import annotations

import json

import numpy as np

from ..preprocessing.sequence import _remove_long_seq
from ._files import _BASE, locate

__all__ = ["check_kwargs", "shift", "cut_vocabulary", "as_object_array", "word_index",
           "_remove_long_seq"]


def check_kwargs(kwargs, dataset):
    import warnings
    num_words = None
    if "nb_words" in kwargs:
        warnings.warn("The `nb_words` argument in `load_data` has been renamed `num_words`.")
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"{dataset}.load_data: unrecognized keyword arguments: {kwargs}")
    return num_words


def shift(xs, start_char, index_from):
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in xs]
    if index_from:
        return [[w + index_from for w in x] for x in xs]
    return [list(x) for x in xs]


def cut_vocabulary(xs, num_words, skip_top, oov_char):
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def as_object_array(seqs):
    out = np.empty(len(seqs), dtype=object)
    for i, s in enumerate(seqs):
        out[i] = s
    return out


def word_index(dataset, fname, path):
    p = locate(dataset, fname, _BASE + fname, path)
    with open(p) as f:
        return json.load(f)

