"""``tf.keras.preprocessing.text`` of TF 2.4 (Keras-Preprocessing 1.1.2): splitting text into
words, hashing words to indices, and ``Tokenizer``.

``one_hot`` and ``hashing_trick`` without ``hash_function`` use Python's ``hash``, as TF does:
Python salts it per process (``PYTHONHASHSEED``), so those indices change from one run to the
next (in TF too). Pass ``hash_function="md5"`` for indices that are the same everywhere.
"""
from __future__ import annotations

import collections
import hashlib
import json
import warnings

import numpy as np

__all__ = ["text_to_word_sequence", "one_hot", "hashing_trick", "Tokenizer",
           "tokenizer_from_json"]

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text, filters=_FILTERS, lower=True, split=" "):
    """The words of ``input_text``: lower-cased, ``filters`` characters turned into ``split``,
    split on ``split``, empty words dropped (``tf.keras.preprocessing.text.
    text_to_word_sequence``)."""
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in input_text.split(split) if w]


def one_hot(input_text, n, filters=_FILTERS, lower=True, split=" ", analyzer=None):
    """``hashing_trick(input_text, n, hash_function=hash, ...)``: indices in ``[1, n)``
    (``tf.keras.preprocessing.text.one_hot``; Python's salted ``hash``, see the module)."""
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split, analyzer=analyzer)


def _md5(w):
    return int(hashlib.md5(w.encode()).hexdigest(), 16)


def hashing_trick(text, n, hash_function=None, filters=_FILTERS, lower=True, split=" ",
                  analyzer=None):
    """Each word as ``hash_function(word) % (n - 1) + 1`` (``tf.keras.preprocessing.text.
    hashing_trick``); ``hash_function`` is a callable, ``"md5"`` or None (Python's ``hash``)."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        hash_function = _md5
    if analyzer is None:
        seq = text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    else:
        seq = analyzer(text)
    return [hash_function(w) % (n - 1) + 1 for w in seq]


class Tokenizer:
    """Text to word indices by frequency rank (``tf.keras.preprocessing.text.Tokenizer``):
    ``fit_on_texts`` then ``texts_to_sequences`` / ``texts_to_matrix``. Index 0 is never a word;
    with ``oov_token`` it is index 1; ``num_words`` keeps indices below it."""

    def __init__(self, num_words=None, filters=_FILTERS, lower=True, split=" ",
                 char_level=False, oov_token=None, document_count=0, analyzer=None,
                 **kwargs):
        if "nb_words" in kwargs:
            warnings.warn("The `nb_words` argument in `Tokenizer` has been renamed "
                          "`num_words`.")
            num_words = kwargs.pop("nb_words")
        if kwargs:
            raise TypeError("Unrecognized keyword arguments: " + str(kwargs))
        # insertion order breaks ties in the frequency ranking (a stable sort), as in TF
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs = collections.defaultdict(int)
        self.word_index = {}
        self.index_word = {}
        self.analyzer = analyzer

    def _tokens(self, text):
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is None:
            return text_to_word_sequence(text, filters=self.filters, lower=self.lower,
                                         split=self.split)
        return self.analyzer(text)

    def fit_on_texts(self, texts):
        """Counts the words of ``texts`` (strings, or lists of tokens) and ranks them."""
        for text in texts:
            self.document_count += 1
            seq = self._tokens(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        wcounts = sorted(self.word_counts.items(), key=lambda kv: kv[1], reverse=True)
        vocab = [] if self.oov_token is None else [self.oov_token]
        vocab.extend(w for w, _ in wcounts)
        self.word_index = dict(zip(vocab, range(1, len(vocab) + 1)))
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences):
        """Counts the documents each index appears in (for ``sequences_to_matrix``'s tfidf)."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts):
        """Each text as a list of word indices (unknown words dropped, or ``oov_token``'s)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        """``texts_to_sequences`` one text at a time."""
        num_words = self.num_words
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            vect = []
            for w in self._tokens(text):
                i = self.word_index.get(w)
                if i is not None:
                    if num_words and i >= num_words:
                        if oov is not None:
                            vect.append(oov)
                    else:
                        vect.append(i)
                elif self.oov_token is not None:
                    vect.append(oov)
            yield vect

    def sequences_to_texts(self, sequences):
        """Each sequence of indices as its words joined by spaces."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        """``sequences_to_texts`` one sequence at a time."""
        num_words = self.num_words
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            vect = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None:
                    if num_words and num >= num_words:
                        if oov is not None:
                            vect.append(self.index_word[oov])
                    else:
                        vect.append(word)
                elif self.oov_token is not None:
                    vect.append(self.index_word[oov])
            yield " ".join(vect)

    def texts_to_matrix(self, texts, mode="binary"):
        """``sequences_to_matrix(texts_to_sequences(texts), mode)``."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """A float64 array ``(len(sequences), num_words)``; ``mode`` is "binary", "count",
        "freq" or "tfidf" (TF's ``1 + log(count)`` times ``log(1 + N / (1 + docs))``)."""
        if not self.num_words:
            if self.word_index:
                num_words = len(self.word_index) + 1
            else:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some "
                                 "text data first.")
        else:
            num_words = self.num_words
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for i, seq in enumerate(sequences):
            if not seq:
                continue
            counts = collections.defaultdict(int)
            for j in seq:
                if j >= num_words:
                    continue
                counts[j] += 1
            for j, c in list(counts.items()):
                if mode == "count":
                    x[i][j] = c
                elif mode == "freq":
                    x[i][j] = c / len(seq)
                elif mode == "binary":
                    x[i][j] = 1
                elif mode == "tfidf":
                    tf = 1 + np.log(c)
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i][j] = tf * idf
                else:
                    raise ValueError("Unknown vectorization mode:", mode)
        return x

    def get_config(self):
        """The arguments and the fitted state, the dictionaries as JSON strings (as TF)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        """``{"class_name": "Tokenizer", "config": get_config()}`` as JSON (``analyzer`` is
        not saved, as in TF)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def tokenizer_from_json(json_string):
    """A ``Tokenizer`` from ``Tokenizer.to_json()`` (``tf.keras.preprocessing.text.
    tokenizer_from_json``)."""
    config = dict(json.loads(json_string).get("config"))
    word_counts = json.loads(config.pop("word_counts"))
    word_docs = json.loads(config.pop("word_docs"))
    index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
    index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
    word_index = json.loads(config.pop("word_index"))
    tok = Tokenizer(**config)
    tok.word_counts = word_counts
    tok.word_docs = word_docs
    tok.index_docs = index_docs
    tok.word_index = word_index
    tok.index_word = index_word
    return tok
