"""``TextVectorization`` (TF 2.4's signature): standardize, split, n-grams, then a vocabulary
lookup and the ``output_mode`` encoding.

As TF: "lower" lowers ASCII letters only (TF's ``string_lower`` without an encoding),
punctuation is TF's ``DEFAULT_STRIP_REGEX``, "whitespace" splits on runs of ASCII whitespace,
``ngrams=n`` makes the 1- to n-grams (all 1-grams, then all 2-grams, ...) joined by a space.
In "int" mode index 0 is the padding/mask token "" and 1 the OOV token "[UNK]"; in the other
modes index 0 is OOV. The tf-idf weights from ``adapt`` are ``log(1 + N / (1 + df))`` (N the
number of documents, df the number holding the token), the OOV's too, from the documents holding
a token outside the vocabulary (TF 2.4; tf-keras 2.21 gives OOV the mean weight instead).
A callable ``standardize`` gets a NumPy array of ``str`` and returns one; a callable ``split``
gets that array and returns a list of token lists.
"""
from __future__ import annotations

import re

import numpy as _np

from ._base import PreprocessingLayer, computed_on_host, to_device_array, to_host, to_strings
from .lookup import StringLookup

__all__ = ["TextVectorization"]

LOWER_AND_STRIP_PUNCTUATION = "lower_and_strip_punctuation"
SPLIT_ON_WHITESPACE = "whitespace"
INT, BINARY, COUNT, TFIDF = "int", "binary", "count", "tf-idf"
DEFAULT_STRIP_REGEX = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
_STRIP = re.compile(DEFAULT_STRIP_REGEX)
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_MODE_ALIASES = {"multi_hot": BINARY, "tf_idf": TFIDF}


class TextVectorization(PreprocessingLayer):
    """Mirrors TF 2.4's ``TextVectorization(max_tokens=None,
    standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
    output_mode="int", output_sequence_length=None, pad_to_max_tokens=True, vocabulary=None)``;
    also accepts the later ``"lower"`` standardization, ``"multi_hot"``/``"tf_idf"`` and
    ``idf_weights``."""

    def __init__(self, max_tokens=None, standardize=LOWER_AND_STRIP_PUNCTUATION,
                 split=SPLIT_ON_WHITESPACE, ngrams=None, output_mode=INT,
                 output_sequence_length=None, pad_to_max_tokens=True, vocabulary=None,
                 idf_weights=None, **kwargs):
        super().__init__(**kwargs)
        if max_tokens is not None and int(max_tokens) < 1:
            raise ValueError(f"TextVectorization: max_tokens must be > 1, got {max_tokens}")
        if not (standardize in (None, LOWER_AND_STRIP_PUNCTUATION, "lower") or
                callable(standardize)):
            raise ValueError(f"TextVectorization: standardize must be None, "
                             f"'{LOWER_AND_STRIP_PUNCTUATION}', 'lower' or a callable, got "
                             f"{standardize!r}")
        if not (split in (None, SPLIT_ON_WHITESPACE) or callable(split)):
            raise ValueError(f"TextVectorization: split must be None, 'whitespace' or a "
                             f"callable, got {split!r}")
        mode = _MODE_ALIASES.get(output_mode, output_mode)
        if mode not in (INT, BINARY, COUNT, TFIDF):
            raise ValueError(f"TextVectorization: output_mode must be one of 'int', 'binary', "
                             f"'count', 'tf-idf', got {output_mode!r}")
        if ngrams is not None and not (isinstance(ngrams, int) and ngrams > 0 or
                                       isinstance(ngrams, (tuple, list)) and
                                       all(isinstance(n, int) and n > 0 for n in ngrams)):
            raise ValueError(f"TextVectorization: ngrams must be None, a positive integer or a "
                             f"tuple of positive integers, got {ngrams!r}")
        if output_sequence_length is not None:
            if mode != INT:
                raise ValueError(f"TextVectorization: output_sequence_length must only be set "
                                 f"when output_mode is 'int', got output_mode={output_mode!r}")
            if int(output_sequence_length) < 1:
                raise ValueError(f"TextVectorization: output_sequence_length must be positive, "
                                 f"got {output_sequence_length}")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.standardize = standardize
        self.split = split
        self.ngrams = list(ngrams) if isinstance(ngrams, (tuple, list)) else ngrams
        self._widths = (tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else
                        tuple(ngrams) if ngrams else None)
        self.output_mode = mode
        self.output_sequence_length = (None if output_sequence_length is None else
                                       int(output_sequence_length))
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._lookup = StringLookup(max_tokens=self.max_tokens, num_oov_indices=1,
                                    mask_token="" if mode == INT else None, oov_token="[UNK]",
                                    name=f"{self.name}_lookup")
        self._idf = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights=idf_weights)

    # ------------------------------------------------------------------ text -> tokens
    def _standardize(self, s):
        if self.standardize is None:
            return s
        if callable(self.standardize):
            out = to_strings(to_host(self.standardize(s)), f"{self.name}.standardize")
            if out.shape != s.shape:
                raise ValueError(f"{self.name}: the standardize callable changed the shape "
                                 f"{s.shape} to {out.shape}")
            return out
        low = _np.frompyfunc(lambda t: t.translate(_ASCII_LOWER), 1, 1)(s)
        if self.standardize == "lower":
            return low
        return _np.frompyfunc(lambda t: _STRIP.sub("", t), 1, 1)(low)

    def _tokens(self, inputs, who):
        """A list (one entry per input string) of token lists; None entries when not split."""
        a = to_host(inputs)
        if a.ndim == 0:
            raise ValueError(f"{who}: expected a batch of strings of shape (batch,) or "
                             f"(batch, 1), got a scalar")
        s = to_strings(a, who)
        if self.split is not None and s.ndim > 1:
            if s.shape[-1] != 1:
                raise ValueError(f"{who}: when splitting, the input must have shape (batch,) "
                                 f"or (batch, 1), got {s.shape}")
            s = s[..., 0]
        s = self._standardize(s)
        if self.split is None:
            return s, None
        if callable(self.split):
            toks = [list(t) for t in self.split(s)]
        else:
            toks = [[t for t in _WHITESPACE.split(x) if t] for x in s.tolist()]
        if self._widths is not None:
            toks = [[" ".join(t[i:i + w]) for w in self._widths for i in range(len(t) - w + 1)]
                    for t in toks]
        return s, toks

    # ------------------------------------------------------------------ vocabulary
    def get_vocabulary(self):
        """The vocabulary, special tokens first (as TF 2.4)."""
        return self._lookup.get_vocabulary()

    def vocabulary_size(self):
        return self._lookup.vocab_size()

    def set_vocabulary(self, vocab, df_data=None, oov_df_value=None, idf_weights=None):
        """Mirrors TF 2.4's ``set_vocabulary(vocab, df_data=None, oov_df_value=None)``:
        ``df_data`` are the tokens' tf-idf weights (TF 2.4 multiplies the counts by them, despite
        the name) and ``oov_df_value`` the OOV's, required with ``df_data`` as in TF 2.4. With
        tf-keras's later ``idf_weights`` the OOV weight defaults to their mean, as there."""
        weights = idf_weights if idf_weights is not None else df_data
        if self.output_mode == TFIDF and weights is None:
            raise ValueError("TextVectorization.set_vocabulary: idf weights (df_data) must be "
                             "given when output_mode is 'tf-idf'")
        if df_data is not None and idf_weights is None and oov_df_value is None and \
                self.output_mode == TFIDF:
            raise ValueError("TextVectorization.set_vocabulary: you must pass an oov_df_value "
                             "with df_data when output_mode is 'tf-idf'")
        if self.output_mode != TFIDF and (weights is not None or oov_df_value is not None):
            raise ValueError(f"TextVectorization.set_vocabulary: idf weights are only used when "
                             f"output_mode is 'tf-idf', got output_mode={self.output_mode!r}")
        self._lookup.set_vocabulary(vocab)
        if weights is not None:
            w = _np.asarray(to_host(weights), dtype=_np.float64).ravel()
            n = len(self._lookup._tokens)
            if len(w) == n + 1:     # given with the OOV weight first, as get_vocabulary lists it
                oov, w = w[0], w[1:]
            elif len(w) == n:
                oov = _np.mean(w) if n else 0.0
            else:
                raise ValueError(f"TextVectorization.set_vocabulary: {len(w)} idf weights for a "
                                 f"vocabulary of {n} tokens")
            if oov_df_value is not None:
                oov = float(oov_df_value)
            self._idf = _np.concatenate([[oov], w])

    def _reset_state(self):
        self._lookup._reset_state()
        self._docs = 0
        self._doc_counts = {}
        self._doc_sets = []

    def _update_state(self, batch):
        s, toks = self._tokens(batch, f"{type(self).__name__}.adapt")
        if toks is None:
            toks = [[t] for t in _np.ravel(s)]
        for t in toks:
            self._lookup._counts.update(t)
        if self.output_mode == TFIDF:
            self._docs += len(toks)
            for t in toks:
                doc = frozenset(t)
                self._doc_sets.append(doc)
                for tok in doc:
                    self._doc_counts[tok] = self._doc_counts.get(tok, 0) + 1

    def _finalize_state(self):
        self._lookup._finalize_state()
        if self.output_mode == TFIDF:
            vocab = self._lookup._tokens
            # TF 2.4 counts the OOV index's documents like any index's: the documents holding
            # a token left out of the vocabulary (tf-keras 2.21 uses the mean idf instead)
            kept = set(vocab)
            oov_df = sum(1 for d in self._doc_sets if not d <= kept)
            df = _np.asarray([oov_df] + [self._doc_counts.get(t, 0) for t in vocab],
                             dtype=_np.float64)
            self._idf = _np.log(1 + self._docs / (1 + df))
        del self._docs, self._doc_counts, self._doc_sets

    # ------------------------------------------------------------------ call
    def _width(self):
        if self.pad_to_max_tokens and self.max_tokens is not None:
            return self.max_tokens
        return self._lookup.vocab_size()

    def _lookup_rows(self, toks):
        """The token lists' indices, looked up in one pass: (indices, row of each index)."""
        flat = _np.empty(sum(len(t) for t in toks), dtype=object)
        flat[:] = [tok for t in toks for tok in t]
        rows = _np.repeat(_np.arange(len(toks)), [len(t) for t in toks])
        return self._lookup.lookup(flat), rows

    def _output_shape_fixed(self):
        # token ids of split text: as long as the longest text unless output_sequence_length
        return not (self.output_mode == INT and self.split is not None and
                    self.output_sequence_length is None)

    @computed_on_host
    def call(self, inputs):
        s, toks = self._tokens(inputs, self.name)
        if self.output_mode == INT:
            if toks is None:
                return to_device_array(self._lookup.lookup(s), dtype=_np.int64)
            n = self.output_sequence_length
            if n is None:
                n = max((len(t) for t in toks), default=0)
            toks = [t[:n] for t in toks]
            idx, rows = self._lookup_rows(toks)
            cols = _np.concatenate([_np.arange(len(t)) for t in toks]) if toks else rows
            out = _np.zeros((len(toks), n), dtype=_np.int64)
            out[rows, cols.astype(_np.int64)] = idx
            return to_device_array(out)
        if toks is None:
            toks = [[t] for t in _np.ravel(s)] if s.ndim <= 1 else [list(r) for r in s]
        if self.output_mode == TFIDF and self._idf is None:
            raise ValueError(f"{self.name}: output_mode 'tf-idf' needs idf weights: call "
                             f"adapt() or set_vocabulary(vocab, idf_weights) first")
        width = self._width()
        idx, rows = self._lookup_rows(toks)
        if idx.size and idx.max() >= width:
            raise ValueError(f"{self.name}: token index {idx.max()} is outside the output width "
                             f"{width}")
        out = _np.zeros((len(toks), width), dtype=_np.float64)
        _np.add.at(out, (rows, idx), 1.0)
        if self.output_mode == BINARY:
            out = _np.minimum(out, 1.0)
        elif self.output_mode == TFIDF:
            w = _np.zeros(width)
            w[:min(width, len(self._idf))] = self._idf[:width]
            out = out * w
        return to_device_array(out.astype(self.compute_dtype))

    def compute_output_shape(self, input_shape):
        batch = tuple(input_shape)[0] if len(input_shape) else None
        if self.output_mode == INT:
            if self.split is None:
                return tuple(input_shape)
            return (batch, self.output_sequence_length)
        return (batch, self.max_tokens if self.pad_to_max_tokens else None)

    def get_config(self):
        idf = None
        if self._idf is not None:
            idf = [float(v) for v in self._idf]
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": self.standardize, "split": self.split, "ngrams": self.ngrams,
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary": list(self._lookup._tokens) or None, "idf_weights": idf}
