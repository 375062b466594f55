"""tt.preprocessing.text against tf-keras 2.21 (tests/fixtures/make_kpre_fixtures.py)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import arrays, meta  # noqa: E402

from tnp_train.preprocessing import text as T  # noqa: E402

TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "Cat, dog; cat & dog...",
         "A\tquick brown fox\njumps", "the THE tHe"]
PROBE = TEXTS + ["unknown words and the cat"]


def test_text_to_word_sequence_and_md5_hashing_match_tf():
    ref = meta()["text"]
    assert [T.text_to_word_sequence(t) for t in TEXTS] == ref["words"]
    assert [T.text_to_word_sequence(t, lower=False, split=",", filters="!.")
            for t in TEXTS] == ref["words_nolower_comma"]
    assert [T.hashing_trick(t, 17, hash_function="md5") for t in TEXTS] == ref["md5"]


def test_one_hot_uses_pythons_hash_in_range():
    # Python's hash is salted per process (as in TF): check the formula, not fixed values
    words = T.text_to_word_sequence(TEXTS[0])
    assert T.one_hot(TEXTS[0], 11) == [hash(w) % 10 + 1 for w in words]
    assert T.hashing_trick(TEXTS[0], 11, hash_function=len) == [len(w) % 10 + 1 for w in words]


def test_one_hot_differs_between_processes_unless_hashseed_fixed():
    code = ("from tnp_train.preprocessing.text import one_hot;"
            "print(one_hot('alpha beta gamma delta epsilon zeta eta theta', 1000))")
    env = dict(os.environ, PYTHONHASHSEED="123")
    a = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    b = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout


@pytest.mark.parametrize("name", ["default", "num_words4", "oov", "char", "nolower"])
def test_tokenizer_matches_tf(name):
    ref = meta()["text"]["tokenizers"][name]
    tok = T.Tokenizer(**ref["kwargs"])
    tok.fit_on_texts(TEXTS)
    # word_counts keeps first-seen order; word_index ranks by count with ties in that order
    assert [list(kv) for kv in tok.word_counts.items()] == ref["word_counts"]
    assert [list(kv) for kv in tok.word_index.items()] == ref["word_index"]
    assert sorted([list(kv) for kv in tok.word_docs.items()]) == ref["word_docs"]
    assert sorted([list(kv) for kv in tok.index_docs.items()]) == ref["index_docs"]
    assert tok.document_count == ref["document_count"]
    seqs = tok.texts_to_sequences(PROBE)
    assert seqs == ref["sequences"]
    assert tok.sequences_to_texts(seqs) == ref["texts"]
    for mode in ("binary", "count", "freq", "tfidf"):
        np.testing.assert_allclose(tok.texts_to_matrix(PROBE, mode=mode),
                                   arrays()[f"tok/{name}/{mode}"], rtol=1e-12, atol=0)
    # word_docs is filled from set(words), whose order follows the salted str hash: compare
    # the JSON-encoded dictionaries as dictionaries
    def parsed(js):
        d = json.loads(js)
        return {k: (json.loads(v) if k in ("word_counts", "word_docs", "index_docs",
                                           "index_word", "word_index") else v)
                for k, v in d["config"].items()}, d["class_name"]
    assert parsed(tok.to_json()) == parsed(ref["json"])
    assert list(json.loads(json.loads(tok.to_json())["config"]["word_counts"])) == \
        [w for w, _ in ref["word_counts"]]


def test_tokenizer_json_round_trip_and_tf_json_loads():
    ref = meta()["text"]["tokenizers"]["oov"]
    tok = T.tokenizer_from_json(ref["json"])   # a tokenizer TF wrote
    assert tok.texts_to_sequences(PROBE) == ref["sequences"]
    np.testing.assert_array_equal(tok.texts_to_matrix(PROBE, mode="tfidf"),
                                  arrays()["tok/oov/tfidf"])
    again = T.tokenizer_from_json(tok.to_json())
    assert again.word_index == tok.word_index and again.index_docs == tok.index_docs


def test_fit_on_sequences_tfidf_and_errors():
    tok = T.Tokenizer(num_words=6)
    tok.fit_on_sequences([[1, 2, 2, 3], [3, 4], [5, 1, 1]])
    np.testing.assert_array_equal(tok.sequences_to_matrix([[1, 2, 2, 3], [3, 4, 9], []],
                                                          mode="tfidf"),
                                  arrays()["tok/seqs/tfidf"])
    kind, msg = meta()["text"]["matrix_unfit_error"]
    with pytest.raises(ValueError) as e:
        T.Tokenizer().texts_to_matrix(["a"])
    assert kind == "ValueError" and str(e.value) == msg
    tok = T.Tokenizer()
    tok.fit_on_texts(["a b"])
    with pytest.raises(ValueError, match="Unknown vectorization mode"):
        tok.texts_to_matrix(["a"], mode="onehot")
    with pytest.raises(TypeError, match="Unrecognized keyword arguments"):
        T.Tokenizer(nonsense=1)
