"""``StringLookup`` and ``IntegerLookup`` (TF 2.4 signatures), on one vocabulary core.

Index layout, as TF 2.4: the mask token (if any) at 0, then ``num_oov_indices`` OOV indices,
then the vocabulary. ``adapt`` orders the vocabulary by count, ties by the token, both
descending (TF's ``sorted(..., key=itemgetter(1, 0), reverse=True)``), and keeps the most
frequent ``max_tokens`` minus the special indices. With several OOV indices a string is
bucketed by FarmHash ``Fingerprint64`` and an integer by ``floormod``, as TF's table does; with
none, an OOV input looks up ``-1``.

The vocabulary is part of ``get_config`` (a list), so ``from_config`` and ``model.save``
round-trip an adapted layer (TF 2.4 kept it in a SavedModel asset instead).
"""
from __future__ import annotations

import collections

import numpy as _np

from ._base import (PreprocessingLayer, computed_on_host, is_string_array, to_device_array,
                    to_host, to_strings)
from ._hash import fingerprint64

__all__ = ["StringLookup", "IntegerLookup"]


class _IndexLookup(PreprocessingLayer):
    """The vocabulary core: token <-> index (``invert``), ``adapt``, ``set_vocabulary``."""

    _string = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary=None,
                 invert=False, **kwargs):
        cls = type(self).__name__
        super().__init__(**kwargs)
        if max_tokens is not None and int(max_tokens) <= 1:
            raise ValueError(f"{cls}: if set, max_tokens must be greater than 1, got "
                             f"{max_tokens}")
        if int(num_oov_indices) < 0:
            raise ValueError(f"{cls}: num_oov_indices must be greater than or equal to 0, got "
                             f"{num_oov_indices}")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.invert = bool(invert)
        self._tokens = []
        self._index = {}
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    # ------------------------------------------------------------------ vocabulary
    @property
    def _token_start(self):
        return (0 if self.mask_token is None else 1) + self.num_oov_indices

    def _canon(self, tokens):
        """Host tokens as Python strs or ints (the vocabulary's key type)."""
        a = _np.asarray(tokens) if not isinstance(tokens, _np.ndarray) else tokens
        if self._string:
            return list(to_strings(a, type(self).__name__).ravel())
        if a.dtype.kind not in "iu" and a.size:
            raise TypeError(f"{type(self).__name__}: expected integer tokens, got dtype "
                            f"{a.dtype}")
        return [int(t) for t in a.ravel().tolist()]

    def get_vocabulary(self):
        """The vocabulary, the mask token and OOV tokens first (as TF 2.4)."""
        head = [] if self.mask_token is None else [self.mask_token]
        return head + [self.oov_token] * self.num_oov_indices + list(self._tokens)

    def vocab_size(self):
        """The number of indices: the vocabulary plus the mask and OOV indices."""
        return self._token_start + len(self._tokens)

    vocabulary_size = vocab_size

    def set_vocabulary(self, vocab):
        """Set the vocabulary (a list, array or the path of a file of one token a line); it
        may start with the mask and OOV tokens, as ``get_vocabulary`` returns them."""
        cls = type(self).__name__
        if isinstance(vocab, str) and self._string and not isinstance(vocab, list):
            with open(vocab, encoding="utf-8") as f:
                vocab = [line.rstrip("\n") for line in f]
        tokens = self._canon(to_host(vocab) if not isinstance(vocab, list) else
                             _np.asarray(vocab, dtype=object if self._string else None))
        head = [] if self.mask_token is None else [self.mask_token]
        oov = [self.oov_token] * self.num_oov_indices
        if head and tokens[:1] == head and tokens[1:1 + len(oov)] == oov:
            tokens = tokens[1 + len(oov):]
        elif oov and tokens[:len(oov)] == oov and not head:
            tokens = tokens[len(oov):]
        elif head and tokens[:1] == head:
            raise ValueError(f"{cls}: invalid vocabulary format: it starts with the mask token "
                             f"{self.mask_token!r} but not with the {self.num_oov_indices} OOV "
                             f"tokens {self.oov_token!r} that follow it in get_vocabulary()")
        for special, what in ((self.mask_token, "mask"), (self.oov_token, "OOV")):
            if special is not None and special in tokens:
                raise ValueError(f"{cls}: the {what} token {special!r} may appear only at the "
                                 f"start of the vocabulary, but it is at index "
                                 f"{tokens.index(special)} of the tokens after it")
        counts = collections.Counter(tokens)
        dups = sorted((t for t, c in counts.items() if c > 1), key=str)
        if dups:
            raise ValueError(f"{cls}: the vocabulary contains repeated tokens: {dups}")
        total = self._token_start + len(tokens)
        if self.max_tokens is not None and total > self.max_tokens:
            raise ValueError(f"{cls}: attempted to set a vocabulary larger than max_tokens "
                             f"({total} > {self.max_tokens})")
        self._set_tokens(tokens)

    def _set_tokens(self, tokens):
        self._tokens = list(tokens)
        start = self._token_start
        self._index = {t: i + start for i, t in enumerate(self._tokens)}

    # ------------------------------------------------------------------ adapt
    def _reset_state(self):
        self._counts = collections.Counter()

    def _update_state(self, batch):
        self._counts.update(self._canon(batch))

    def _finalize_state(self):
        counts = self._counts
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        if self.max_tokens is not None:
            ordered = ordered[:max(0, self.max_tokens - self._token_start)]
        self._set_tokens([t for t, _ in ordered])
        del self._counts

    # ------------------------------------------------------------------ lookup
    def _oov_index(self, token):
        n = self.num_oov_indices
        if n == 0:
            return -1
        base = 0 if self.mask_token is None else 1
        if n == 1:
            return base
        if self._string:
            return base + fingerprint64(token.encode("utf-8")) % n
        return base + token % n

    def lookup(self, a):
        """Host tokens -> host int64 indices (the shape kept)."""
        flat = self._canon(a)
        memo = {}
        out = _np.empty(len(flat), dtype=_np.int64)
        mask = self.mask_token
        for i, t in enumerate(flat):
            j = memo.get(t)
            if j is None:
                if mask is not None and t == mask:
                    j = 0
                else:
                    j = self._index.get(t)
                    if j is None:
                        j = self._oov_index(t)
                memo[t] = j
            out[i] = j
        return out.reshape(_np.shape(a))

    def invert_lookup(self, a):
        """Host int indices -> host tokens; unknown indices give the OOV token."""
        if a.dtype.kind not in "iu":
            raise TypeError(f"{type(self).__name__}(invert=True): expected integer indices, got "
                            f"dtype {a.dtype}")
        vocab = self.get_vocabulary()
        table = _np.asarray(vocab, dtype=object if self._string else _np.int64)
        idx = a.astype(_np.int64)
        ok = (idx >= 0) & (idx < len(vocab))
        out = _np.where(ok, table[_np.where(ok, idx, 0)] if len(vocab) else self.oov_token,
                        self.oov_token)
        if self._string:
            return out.astype(str)
        return out.astype(_np.int64)

    @computed_on_host
    def call(self, inputs):
        a = to_host(inputs)
        if self.invert:
            return to_device_array(self.invert_lookup(a), inputs)
        if self._string and not is_string_array(a):
            raise TypeError(f"{self.name}: expected a string input, got dtype {a.dtype}")
        return to_device_array(self.lookup(a), inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _base_config(self):
        return {**PreprocessingLayer.get_config(self), "num_oov_indices": self.num_oov_indices,
                "invert": self.invert,
                "vocabulary": list(self._tokens) if self._tokens else None}


class StringLookup(_IndexLookup):
    """Mirrors TF 2.4's ``StringLookup(max_tokens=None, num_oov_indices=1, mask_token="",
    oov_token="[UNK]", vocabulary=None, encoding=None, invert=False)``: strings to indices
    (``invert``: indices to strings). ``encoding`` must be UTF-8 (or None)."""

    _string = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token="", oov_token="[UNK]",
                 vocabulary=None, encoding=None, invert=False, **kwargs):
        if encoding not in (None, "utf-8", "UTF-8", "utf8"):
            raise ValueError(f"StringLookup: only the utf-8 encoding is supported, got "
                             f"{encoding!r}")
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         invert, **kwargs)

    def get_config(self):
        return {**self._base_config(), "max_tokens": self.max_tokens,
                "mask_token": self.mask_token, "oov_token": self.oov_token,
                "encoding": self.encoding}


class IntegerLookup(_IndexLookup):
    """Mirrors TF 2.4's ``IntegerLookup(max_values=None, num_oov_indices=1, mask_value=0,
    oov_value=-1, vocabulary=None, invert=False)``; TF 2.5's names ``max_tokens``,
    ``mask_token`` and ``oov_token`` are accepted too."""

    _string = False

    def __init__(self, max_values=None, num_oov_indices=1, mask_value=0, oov_value=-1,
                 vocabulary=None, invert=False, **kwargs):
        max_values = kwargs.pop("max_tokens", max_values)
        mask_value = kwargs.pop("mask_token", mask_value)
        oov_value = kwargs.pop("oov_token", oov_value)
        for name, v in (("mask_value", mask_value), ("oov_value", oov_value)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, _np.integer))):
                raise TypeError(f"IntegerLookup: {name} must be an integer or None, got {v!r}")
        super().__init__(max_values, num_oov_indices,
                         None if mask_value is None else int(mask_value),
                         None if oov_value is None else int(oov_value), vocabulary, invert,
                         **kwargs)

    @property
    def max_values(self):
        return self.max_tokens

    def get_config(self):
        return {**self._base_config(), "max_values": self.max_tokens,
                "mask_value": self.mask_token, "oov_value": self.oov_token}
