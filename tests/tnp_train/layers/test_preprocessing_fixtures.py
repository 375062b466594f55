"""The preprocessing layers against TF 2.21 / tf-keras 2.21 outputs (fixtures made by
tests/fixtures/make_preprocessing_fixtures.py; arguments chosen so they are TF 2.4's)."""
import json
import os
import re

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.layers.experimental.preprocessing import _hash, _resize
from tnp_train.layers.experimental.preprocessing.image import (
    rotation_matrix, translation_matrix, zoom_matrix)

P = tt.layers.experimental.preprocessing
FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
REF = np.load(os.path.join(FIX, "preprocessing.npz"))
with open(os.path.join(FIX, "preprocessing.json"), encoding="utf-8") as f:
    META = json.load(f)


def col(strings):
    return np.asarray(strings)[:, None]


# ------------------------------------------------------------------ hashing
def test_fingerprint64_and_siphash_equal_tf():
    big = 2 ** 63 - 1
    s = META["hash_strings"]
    fast = [_hash.fingerprint64(t.encode()) % big for t in s]
    strong = [_hash.siphash24(133, 137, t.encode()) % big for t in s]
    np.testing.assert_array_equal(fast, REF["hash_fast"])
    np.testing.assert_array_equal(strong, REF["hash_strong"])


def test_hashing_layer_bins_equal_tf():
    s = col(META["hash_strings"])
    np.testing.assert_array_equal(P.Hashing(7)(s), REF["hashing_7"])
    np.testing.assert_array_equal(P.Hashing(7, salt=[133, 137])(s), REF["hashing_7_salt"])
    np.testing.assert_array_equal(P.Hashing(5, salt=42)(s), REF["hashing_5_salt_int"])
    out = P.Hashing(11)(tnp.asarray(REF["hashing_ints_in"]))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, REF["hashing_ints_11"])


def test_hashing_docstring_example():
    # TF 2.4's Hashing docstring: [['A'], ['B'], ['C'], ['D'], ['E']] -> 1, 0, 1, 1, 2, and
    # with salt=[133, 137] -> 1, 2, 1, 0, 2
    x = col(list("ABCDE"))
    np.testing.assert_array_equal(np.ravel(P.Hashing(3)(x)), [1, 0, 1, 1, 2])
    np.testing.assert_array_equal(np.ravel(P.Hashing(3, salt=[133, 137])(x)), [1, 2, 1, 0, 2])


# ------------------------------------------------------------------ resize
@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic", "area", "lanczos3",
                                    "lanczos5", "gaussian", "mitchellcubic"])
@pytest.mark.parametrize("size", [(3, 4), (8, 11), (5, 7)])
def test_resize_matches_tf(method, size):
    img = tnp.asarray(REF["resize_in"])
    out = P.Resizing(*size, interpolation=method)(img)
    ref = REF[f"resize_{method}_{size[0]}x{size[1]}"]
    assert out.shape == ref.shape and out.dtype == np.float32
    if method in ("bilinear", "nearest"):
        # TF's own float32 arithmetic in TF's order: the same bits
        np.testing.assert_array_equal(np.asarray(out), ref)
    else:
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=2e-6)


def test_resize_uint8_dtypes_match_tf():
    # TF 2.4's Resizing returns resize_images_v2's dtype: uint8 for "nearest", else float32
    # (tf-keras 2.21 casts to the compute dtype, so the fixture is float32): values compared
    u8 = tnp.asarray(REF["resize_u8_in"])
    near = P.Resizing(7, 3, interpolation="nearest")(u8)
    assert near.dtype == np.uint8
    np.testing.assert_array_equal(near, REF["resize_u8_nearest"])
    bil = P.Resizing(7, 3)(u8)
    assert bil.dtype == np.float32
    np.testing.assert_allclose(np.asarray(bil), REF["resize_u8_bilinear"], atol=1e-5)


# ------------------------------------------------------------------ transforms
def test_augmentation_matrices_match_tf():
    np.testing.assert_allclose(rotation_matrix(REF["rotation_angles"], 6, 5),
                               REF["rotation_matrix"], atol=1e-6)
    z = np.array([[1.3, 0.7], [0.6, 0.6], [2.0, 1.1]])
    np.testing.assert_allclose(zoom_matrix(z[:, 0], z[:, 1], 6, 5), REF["zoom_matrix"],
                               atol=1e-6)
    t = np.array([[1.5, -2.25], [-3.0, 0.5], [7.0, 1.0]])
    np.testing.assert_allclose(translation_matrix(t[:, 0], t[:, 1]), REF["translation_matrix"],
                               atol=1e-6)


@pytest.mark.parametrize("fill", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("name", ["rot", "zoom", "trans"])
def test_projective_transform_matches_tf(name, fill, interp):
    mats = {"rot": REF["rotation_matrix"], "zoom": REF["zoom_matrix"],
            "trans": REF["translation_matrix"]}
    out = _resize.transform(tnp.asarray(REF["transform_in"]), mats[name], interp, fill, 0.5)
    np.testing.assert_allclose(np.asarray(out), REF[f"transform_{name}_{fill}_{interp}"],
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ text
def test_text_vectorization_int_matches_tf():
    corpus, queries = META["text_corpus"], META["text_queries"]
    tv = P.TextVectorization(max_tokens=12, output_mode="int", output_sequence_length=6)
    tv.adapt(tt.data.Dataset.from_tensor_slices(np.asarray(corpus)).batch(2))
    assert tv.get_vocabulary() == META["tv_int_vocab"]
    out = tv(col(queries))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, REF["tv_int"])
    tv = P.TextVectorization(output_mode="int")
    tv.adapt(corpus)
    assert tv.get_vocabulary() == META["tv_int_full_vocab"]
    np.testing.assert_array_equal(tv(np.asarray(queries[:3])), REF["tv_int_ragged"])


@pytest.mark.parametrize("mode,key", [("binary", "binary"), ("count", "count"),
                                      ("tf-idf", "tfidf")])
def test_text_vectorization_encodings_match_tf(mode, key):
    tv = P.TextVectorization(max_tokens=10, output_mode=mode)   # TF 2.4: pad_to_max_tokens=True
    tv.adapt(np.asarray(META["text_corpus"]))
    assert tv.get_vocabulary() == META[f"tv_{key}_vocab"]
    out = np.asarray(tv(np.asarray(META["text_queries"])))
    assert out.dtype == np.float32
    ref = REF[f"tv_{key}"]
    if mode != "tf-idf":
        np.testing.assert_allclose(out, ref, rtol=1e-6)
        return
    # the tokens' weights are tf-keras's; the OOV column (0) is TF 2.4's: its weight comes
    # from the documents holding a token outside the vocabulary (tf-keras 2.21: the mean)
    np.testing.assert_allclose(out[:, 1:], ref[:, 1:], rtol=1e-6)
    docs = [set(re.sub(r"[^\w\s]", "", d.lower()).split()) for d in META["text_corpus"]]
    oov_df = sum(1 for d in docs if not d <= set(META["tv_tfidf_vocab"]))
    oov_idf = np.log(1 + len(docs) / (1 + oov_df))
    oov_counts = [sum(t not in META["tv_tfidf_vocab"] for t in
                      re.sub(r"[^\w\s]", "", q.lower()).split()) for q in META["text_queries"]]
    np.testing.assert_allclose(out[:, 0], np.multiply(oov_counts, oov_idf), rtol=1e-6)


def test_text_vectorization_ngrams_match_tf():
    tv = P.TextVectorization(ngrams=2, output_mode="int")
    tv.adapt(np.asarray(META["text_corpus"]))
    assert tv.get_vocabulary() == META["tv_ngrams_vocab"]
    np.testing.assert_array_equal(tv(np.asarray(META["text_queries"][:2])), REF["tv_ngrams"])


# ------------------------------------------------------------------ lookups
def test_string_lookup_matches_tf():
    words = np.array([["a", "b", "c"], ["b", "b", "d"], ["e", "a", "b"]])
    sl = P.StringLookup()
    sl.adapt(words)
    assert sl.get_vocabulary() == META["sl_vocab"]
    np.testing.assert_array_equal(sl(np.array(META["sl_queries"])), REF["sl_out"])
    sl3 = P.StringLookup(num_oov_indices=3, vocabulary=["a", "b"])
    np.testing.assert_array_equal(sl3(np.array(META["sl3_queries"])), REF["sl3_out"])


def test_integer_lookup_matches_tf():
    il = P.IntegerLookup()
    il.adapt(np.array([[5, 7, 7], [9, 7, 5], [3, 0, 5]]))
    assert [int(v) for v in il.get_vocabulary()] == META["il_vocab"]
    np.testing.assert_array_equal(il(tnp.asarray([[5, 3, 100], [0, 9, 7]])), REF["il_out"])
    il3 = P.IntegerLookup(num_oov_indices=3, vocabulary=[10, 20])
    np.testing.assert_array_equal(il3(tnp.asarray(REF["il3_in"])), REF["il3_out"])


# ------------------------------------------------------------------ normalization
@pytest.mark.parametrize("axis,key", [(-1, "last"), ((1, 2), "12"), (1, "1")])
def test_normalization_adapt_matches_tf(axis, key):
    x = REF["norm_in"]
    n = P.Normalization(axis=axis)
    n.adapt(tt.data.Dataset.from_tensor_slices(x).batch(4))
    # TF 2.4 keeps the statistics in the shape of the kept axes (tf-keras 2.21 broadcasts
    # them to the input's rank): the values are compared
    assert n.mean.shape == tuple(x.shape[d] for d in np.atleast_1d(axis) % 3)
    np.testing.assert_allclose(n.mean.numpy().ravel(), REF[f"norm_{key}_mean"].ravel(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n.variance.numpy().ravel(), REF[f"norm_{key}_var"].ravel(),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(n(tnp.asarray(x))), REF[f"norm_{key}_out"],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", META["resize_grad_methods"])
def test_resize_gradients_match_tf(method):
    # TF has no gradient for "area"; finite differences cover it in test_preprocessing_image
    x = tnp.asarray(REF["resize_in"])
    u = tnp.asarray(REF[f"resize_grad_{method}_u"])
    layer = P.Resizing(8, 11, interpolation=method)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(layer(x) * u)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), REF[f"resize_grad_{method}"],
                               rtol=1e-5, atol=1e-5)


def test_discretization_and_category_encoding_match_tf():
    x = tnp.asarray(REF["disc_in"])
    # bin_boundaries: tf-keras's (TF 2.5+) semantics, equal to its output
    np.testing.assert_array_equal(P.Discretization(bin_boundaries=[0.0, 0.1, 1.0, 2.0])(x),
                                  REF["disc_upper"])
    # bins: TF 2.4's, where a value on a boundary goes to the lower bucket; elsewhere the same
    lower = np.asarray(P.Discretization(bins=[0.0, 0.1, 1.0, 2.0])(x))
    on_boundary = np.isin(REF["disc_in"], np.float32([0.0, 0.1, 1.0, 2.0]))
    np.testing.assert_array_equal(lower[~on_boundary], REF["disc_upper"][~on_boundary])
    np.testing.assert_array_equal(lower[on_boundary], REF["disc_upper"][on_boundary] - 1)
    ce = tnp.asarray(REF["ce_in"])
    np.testing.assert_array_equal(P.CategoryEncoding(5, output_mode="count")(ce), REF["ce_count"])
    np.testing.assert_array_equal(P.CategoryEncoding(5)(ce), REF["ce_binary"])
