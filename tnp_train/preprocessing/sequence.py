"""``tf.keras.preprocessing.sequence`` of TF 2.4 (Keras-Preprocessing 1.1.2): padding, skip-gram
pairs and batches of time-series windows, all on the host with NumPy, as in TF.

They return NumPy arrays (or Python lists) as TF does; a model's ``fit`` takes those as they are.
``skipgrams`` draws from Python's global ``random`` in the order TF does, so after the same
``random.seed(...)`` (and with the same ``seed=``) it returns TF's pairs and labels.
"""
from __future__ import annotations

import json
import random

import numpy as np

from ..utils.data_utils import Sequence

__all__ = ["pad_sequences", "make_sampling_table", "skipgrams", "TimeseriesGenerator"]


def _host(x):
    # tnp arrays (and anything with __array__) become NumPy; lists stay lists
    return np.asarray(x) if hasattr(x, "__array__") and not isinstance(x, np.ndarray) else x


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pads (or truncates) each sequence to ``maxlen`` (``tf.keras.preprocessing.sequence.
    pad_sequences``): a NumPy array of shape ``(len(sequences), maxlen) + sample_shape``."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    sequences = _host(sequences)
    num_samples = len(sequences)
    lengths = []
    sample_shape = ()
    found = False
    for s in sequences:
        try:
            n = len(s)
        except TypeError:
            raise ValueError("`sequences` must be a list of iterables. "
                             f"Found non-iterable: {s}") from None
        lengths.append(n)
        # the sample shape is that of the first non-empty sequence; the rest are checked below
        if not found and n:
            sample_shape = np.asarray(s).shape[1:]
            found = True
    if maxlen is None:
        maxlen = int(np.max(lengths))   # no sequences: NumPy's ValueError, as TF
    is_str = np.issubdtype(np.dtype(dtype), np.str_)
    if isinstance(value, str) and np.dtype(dtype) != object and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         f"strings.")
    x = np.full((num_samples, maxlen) + tuple(sample_shape), value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            # s[-0:] is the whole sequence: with maxlen=0 TF then fails on the shape below
            trunc = s[-maxlen:]
        elif truncating == "post":
            trunc = s[:maxlen]
        else:
            raise ValueError(f'Truncating type "{truncating}" not understood')
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != tuple(sample_shape):
            raise ValueError(f"Shape of sample {trunc.shape[1:]} of sequence at position {idx} "
                             f"is different from expected shape {tuple(sample_shape)}")
        if padding == "post":
            x[idx, :len(trunc)] = trunc
        elif padding == "pre":
            x[idx, -len(trunc):] = trunc
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return x


def make_sampling_table(size, sampling_factor=1e-5):
    """word2vec's rank-based sampling probabilities, Zipf-approximated
    (``tf.keras.preprocessing.sequence.make_sampling_table``)."""
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True,
              categorical=False, sampling_table=None, seed=None):
    """(word, context) pairs labelled 1 and (word, random word) pairs labelled 0
    (``tf.keras.preprocessing.sequence.skipgrams``); index 0 is skipped. Randomness comes from
    Python's global ``random``, in TF's order of draws."""
    sequence = _host(sequence)
    couples, labels = [], []
    n = len(sequence)
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(n, i + window_size + 1)):
            if j == i:
                continue
            wj = sequence[j]
            if not wj:
                continue
            couples.append([wi, wj])
            labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        num_negative = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        # draws interleave as TF's list comprehension makes them: one randint per negative
        couples += [[words[i % len(words)], random.randint(1, int(vocabulary_size - 1))]
                    for i in range(num_negative)]
        labels += ([[1, 0]] if categorical else [0]) * num_negative
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        # the same seed before each shuffle keeps couples and labels aligned
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


def _remove_long_seq(maxlen, seq, label):
    """The sequences shorter than ``maxlen`` (strictly, as Keras) and their labels."""
    new_seq, new_label = [], []
    for x, y in zip(seq, label):
        if len(x) < maxlen:
            new_seq.append(x)
            new_label.append(y)
    return new_seq, new_label


class TimeseriesGenerator(Sequence):
    """Batches of windows of a time series and the target after each
    (``tf.keras.preprocessing.sequence.TimeseriesGenerator``): ``gen[i]`` is ``(samples,
    targets)`` with samples of shape ``(batch, length // sampling_rate, ...)``."""

    def __init__(self, data, targets, length, sampling_rate=1, stride=1, start_index=0,
                 end_index=None, shuffle=False, reverse=False, batch_size=128):
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is "
                             f"{len(data)} while target length is {len(targets)}")
        self.data = _host(data)
        self.targets = _host(targets)
        self.length = length
        self.sampling_rate = sampling_rate
        self.stride = stride
        self.start_index = start_index + length
        if end_index is None:
            end_index = len(data) - 1
        self.end_index = end_index
        self.shuffle = shuffle
        self.reverse = reverse
        self.batch_size = batch_size
        if self.start_index > self.end_index:
            raise ValueError(f"`start_index+length={self.start_index} > "
                             f"end_index={self.end_index}` is disallowed, as no part of the "
                             f"sequence would be left to be used as current step.")

    def __len__(self):
        return ((self.end_index - self.start_index + self.batch_size * self.stride)
                // (self.batch_size * self.stride))

    def __getitem__(self, index):
        if self.shuffle:
            # NumPy's global generator, as TF (np.random.seed makes it repeatable)
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            i = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(i, min(i + self.batch_size * self.stride, self.end_index + 1),
                             self.stride)
        samples = np.array([self.data[row - self.length:row:self.sampling_rate]
                            for row in rows])
        targets = np.array([self.targets[row] for row in rows])
        if self.reverse:
            return samples[:, ::-1, ...], targets
        return samples, targets

    def get_config(self):
        """The generator's arguments, ``data`` and ``targets`` as JSON strings (as TF)."""
        def as_json(v, what):
            if isinstance(v, np.ndarray):
                v = v.tolist()
            try:
                return json.dumps(v)
            except TypeError as e:
                raise TypeError(f"{what} not JSON Serializable:", v) from e
        return {"data": as_json(self.data, "Data"),
                "targets": as_json(self.targets, "Targets"),
                "length": self.length, "sampling_rate": self.sampling_rate,
                "stride": self.stride, "start_index": self.start_index,
                "end_index": self.end_index, "shuffle": self.shuffle, "reverse": self.reverse,
                "batch_size": self.batch_size}

    def to_json(self, **kwargs):
        """``{"class_name": "TimeseriesGenerator", "config": get_config()}`` as JSON."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)
