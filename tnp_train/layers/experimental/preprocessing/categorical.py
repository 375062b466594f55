"""``CategoryEncoding``, ``Discretization``, ``Hashing`` and ``CategoryCrossing`` (TF 2.4
signatures). Their outputs are integer indices or counts: constants to the tape."""
from __future__ import annotations

import collections
import itertools

import numpy as _np

from ._base import (PreprocessingLayer, computed_on_host, is_string_array, to_device_array,
                    to_host, to_strings)
from ._hash import fingerprint64, siphash24

__all__ = ["CategoryEncoding", "Discretization", "Hashing", "CategoryCrossing"]

_ENCODING_MODES = {"binary": "binary", "multi_hot": "binary", "count": "count",
                   "tf-idf": "tf-idf", "tf_idf": "tf-idf"}


class CategoryEncoding(PreprocessingLayer):
    """Mirrors TF 2.4's ``CategoryEncoding(max_tokens=None, output_mode="binary",
    sparse=False)``: integer inputs of shape ``(batch,)`` or ``(batch, k)`` to a
    ``(batch, max_tokens)`` multi-hot, count or tf-idf encoding. ``adapt`` sets ``max_tokens``
    (when None) to the largest value + 1 and, for "tf-idf", the weights ``log(1 + N / (1 +
    df))``. Also accepts the later ``num_tokens`` and ``"multi_hot"``; ``sparse=True`` is
    refused (tnp has no sparse arrays)."""

    def __init__(self, max_tokens=None, output_mode="binary", sparse=False, **kwargs):
        max_tokens = kwargs.pop("num_tokens", max_tokens)
        super().__init__(**kwargs)
        if output_mode not in _ENCODING_MODES:
            raise ValueError(f"CategoryEncoding: output_mode must be one of 'binary', 'count' "
                             f"or 'tf-idf', got {output_mode!r}")
        if max_tokens is not None and int(max_tokens) < 1:
            raise ValueError(f"CategoryEncoding: max_tokens must be > 0, got {max_tokens}")
        if sparse:
            raise ValueError("CategoryEncoding: sparse=True is not supported (tnp has no sparse "
                             "arrays)")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.output_mode = _ENCODING_MODES[output_mode]
        self.sparse = False
        self._idf = None

    @property
    def num_tokens(self):
        return self.max_tokens

    def set_num_elements(self, num_elements):
        """Mirrors TF 2.4's ``set_num_elements``: the output width."""
        if int(num_elements) < 1:
            raise ValueError(f"CategoryEncoding.set_num_elements: expected a positive integer, "
                             f"got {num_elements}")
        self.max_tokens = int(num_elements)

    def set_tfidf_data(self, tfidf_data):
        """Mirrors TF 2.4's ``set_tfidf_data``: the per-index tf-idf weights."""
        if self.output_mode != "tf-idf":
            raise ValueError(f"CategoryEncoding.set_tfidf_data: output_mode is "
                             f"{self.output_mode!r}, not 'tf-idf'")
        w = _np.asarray(to_host(tfidf_data), dtype=_np.float64).ravel()
        if self.max_tokens is not None and len(w) > self.max_tokens:
            raise ValueError(f"CategoryEncoding.set_tfidf_data: {len(w)} weights for "
                             f"max_tokens={self.max_tokens}")
        self._idf = w

    def _rows(self, a, who):
        if a.dtype.kind not in "iu":
            raise TypeError(f"{who}: expected integer inputs, got dtype {a.dtype}")
        if a.ndim == 0:
            a = a.reshape(1, 1)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2:
            raise ValueError(f"{who}: expected inputs of rank 1 or 2, got shape {a.shape}")
        if a.size and a.min() < 0:
            raise ValueError(f"{who}: input values must be non-negative, got {a.min()}")
        return a.astype(_np.int64)

    def _reset_state(self):
        self._max_seen, self._docs, self._df = -1, 0, collections.Counter()

    def _update_state(self, batch):
        a = self._rows(batch, "CategoryEncoding.adapt")
        if a.size:
            self._max_seen = max(self._max_seen, int(a.max()))
        if self.output_mode == "tf-idf":
            self._docs += a.shape[0]
            for row in a:
                self._df.update(set(row.tolist()))

    def _finalize_state(self):
        if self.max_tokens is None:
            self.max_tokens = self._max_seen + 1
        if self.output_mode == "tf-idf":
            df = _np.asarray([self._df.get(i, 0) for i in range(self.max_tokens)], _np.float64)
            self._idf = _np.log(1 + self._docs / (1 + df))
        del self._max_seen, self._docs, self._df

    @computed_on_host
    def call(self, inputs):
        a = self._rows(to_host(inputs), self.name)
        if self.max_tokens is None:
            raise RuntimeError(f"{self.name}: max_tokens is not set: pass it, or call adapt() "
                               f"or set_num_elements()")
        n = self.max_tokens
        if a.size and a.max() >= n:
            raise ValueError(f"{self.name}: input values must be in the range 0 <= values < "
                             f"max_tokens with max_tokens={n}, got a value {a.max()}")
        out = _np.zeros((a.shape[0], n), dtype=_np.float64)
        rows = _np.repeat(_np.arange(a.shape[0]), a.shape[1])
        _np.add.at(out, (rows, a.ravel()), 1.0)
        if self.output_mode == "binary":
            out = _np.minimum(out, 1.0)
        elif self.output_mode == "tf-idf":
            if self._idf is None:
                raise ValueError(f"{self.name}: output_mode 'tf-idf' needs weights: call adapt() "
                                 f"or set_tfidf_data() first")
            w = _np.zeros(n)
            w[:len(self._idf)] = self._idf
            out = out * w
        return to_device_array(out.astype(self.compute_dtype), inputs)

    def compute_output_shape(self, input_shape):
        return (tuple(input_shape)[0] if len(input_shape) else None, self.max_tokens)

    def get_config(self):
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "output_mode": self.output_mode, "sparse": False}


class Discretization(PreprocessingLayer):
    """Mirrors TF 2.4's ``Discretization(bins)``: the index of the bucket of each value, where
    a value equal to a boundary falls in the lower bucket (``bins=[0., 1.]``: ``x <= 0`` is 0,
    ``0 < x <= 1`` is 1, ``x > 1`` is 2), as int32, inputs and bins compared in float32 (TF
    2.4's ``boosted_trees_bucketize``). Given TF 2.5's ``bin_boundaries`` instead, it follows
    TF 2.5+: a value equal to a boundary falls in the upper bucket, as int64. No ``adapt``
    (TF 2.4 has none)."""

    _adaptable = False

    def __init__(self, bins=None, **kwargs):
        boundaries = kwargs.pop("bin_boundaries", None)
        super().__init__(**kwargs)
        if (bins is None) == (boundaries is None):
            raise ValueError("Discretization: pass the bucket boundaries as bins (TF 2.4) or "
                             "as bin_boundaries (TF 2.5+), one of them")
        self._upper = boundaries is not None      # TF 2.5+'s side of a boundary
        b = [float(v) for v in (boundaries if self._upper else bins)]
        if any(x > y for x, y in zip(b, b[1:])):
            raise ValueError(f"Discretization: bins must be sorted in increasing order, got {b}")
        self.bins = b

    @property
    def bin_boundaries(self):
        return self.bins

    @computed_on_host
    def call(self, inputs):
        a = to_host(inputs)
        if a.dtype.kind not in "iuf":
            raise TypeError(f"{self.name}: expected numeric inputs, got dtype {a.dtype}")
        # both TF ops hold the boundaries as float32 (0.1 is rounded first); TF 2.4 casts the
        # inputs to float32 too, TF 2.5's Bucketize compares a float input in its own dtype
        bounds = _np.asarray(self.bins, dtype=_np.float32)
        if self._upper and a.dtype.kind == "f":
            bounds = bounds.astype(a.dtype)
        else:
            a = a.astype(_np.float32)
        side = "right" if self._upper else "left"
        out = _np.searchsorted(bounds, a, side=side)
        return to_device_array(out.astype(_np.int64 if self._upper else _np.int32), inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        key = "bin_boundaries" if self._upper else "bins"
        return {**super().get_config(), key: list(self.bins)}


def _as_hash_strings(a, who):
    """What TF hashes: strings as they are, integers by their decimal text (``as_string``)."""
    if is_string_array(a):
        return to_strings(a, who)
    if a.dtype.kind in "iu":
        return a.astype(str).astype(object)
    raise TypeError(f"{who}: expected string or integer inputs, got dtype {a.dtype}")


class Hashing(PreprocessingLayer):
    """Mirrors TF 2.4's ``Hashing(num_bins, salt=None)``: FarmHash ``Fingerprint64`` of each
    string (integers by their decimal text) modulo ``num_bins``, or with a ``salt`` (an int or
    two ints) SipHash-2-4 keyed by it, so the bins equal TF's. Input crosses (a list of
    inputs) are not supported."""

    _adaptable = False

    def __init__(self, num_bins, salt=None, **kwargs):
        super().__init__(**kwargs)
        if num_bins is None or int(num_bins) <= 0:
            raise ValueError(f"Hashing: num_bins must be a positive integer, got {num_bins!r}")
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2 and \
                    all(isinstance(s, (int, _np.integer)) for s in salt):
                salt = [int(s) for s in salt]
            elif isinstance(salt, (int, _np.integer)) and not isinstance(salt, bool):
                salt = [int(salt), int(salt)]
            else:
                raise ValueError(f"Hashing: salt must be an int or a tuple of two ints, got "
                                 f"{salt!r}")
        self.num_bins = int(num_bins)
        self.salt = salt

    @computed_on_host
    def call(self, inputs):
        if isinstance(inputs, (list, tuple)) and inputs and \
                all(hasattr(x, "shape") for x in inputs):
            raise NotImplementedError(f"{self.name}: hashing a cross of several inputs is not "
                                      f"supported; hash one input")
        a = to_host(inputs)
        s = _as_hash_strings(a, self.name)
        n = self.num_bins
        if self.salt is None:
            fn = fingerprint64
        else:
            k0, k1 = self.salt

            def fn(b):
                return siphash24(k0, k1, b)
        memo = {}
        out = _np.empty(s.size, dtype=_np.int64)
        for i, t in enumerate(s.ravel().tolist()):
            v = memo.get(t)
            if v is None:
                v = memo[t] = fn(t.encode("utf-8")) % n
            out[i] = v
        return to_device_array(out.reshape(s.shape), inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt}


class CategoryCrossing(PreprocessingLayer):
    """Mirrors TF 2.4's ``CategoryCrossing(depth=None, name=None, separator="_X_")``: for
    inputs of shape ``(batch, k_i)`` each row's cross product of the inputs' values, joined by
    ``separator`` (integers by their decimal text); ``depth`` crosses only that many inputs at
    a time (all combinations, smallest first). Dense rows have equal length here, so the output
    is a string array of shape ``(batch, n_crosses)``."""

    _adaptable = False

    def __init__(self, depth=None, name=None, separator="_X_", **kwargs):
        super().__init__(name=name, **kwargs)
        if depth is not None:
            depth = (int(depth),) if isinstance(depth, (int, _np.integer)) else \
                tuple(int(d) for d in depth)
        self.depth = depth
        self.separator = str(separator)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"{self.name}: expected a list of at least 2 inputs, got "
                             f"{type(inputs).__name__}")
        cols = []
        for x in inputs:
            a = to_host(x)
            if a.ndim == 1:
                a = a[:, None]
            cols.append(_as_hash_strings(a, self.name))
        batch = cols[0].shape[0]
        if any(c.shape[0] != batch for c in cols):
            raise ValueError(f"{self.name}: inputs have different batch sizes "
                             f"{[c.shape[0] for c in cols]}")
        groups = ([tuple(range(len(cols)))] if self.depth is None else
                  [g for d in self.depth for g in itertools.combinations(range(len(cols)), d)])
        rows = []
        for b in range(batch):
            row = []
            for g in groups:
                if len(g) == 1:
                    row += list(cols[g[0]][b])
                else:
                    row += [self.separator.join(p) for p in
                            itertools.product(*(cols[i][b] for i in g))]
            rows.append(row)
        return to_device_array(_np.asarray(rows, dtype=str))

    def get_config(self):
        return {**super().get_config(), "depth": None if self.depth is None else
                list(self.depth), "separator": self.separator}
