"""StringLookup, IntegerLookup, TextVectorization, CategoryEncoding, Discretization, Hashing,
CategoryCrossing: TF 2.4's index layouts and arguments, hand-written references, errors,
configs, ``adapt`` on arrays, lists and datasets, and model save/load. TF's own values are in
test_preprocessing_fixtures.py."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

P = tt.layers.experimental.preprocessing


def round_trip(layer):
    again = tt.layers.deserialize(tt.layers.serialize(layer))
    a, b = layer.get_config(), again.get_config()
    a.pop("name"), b.pop("name")
    assert type(again) is type(layer) and a == b
    return again


# ------------------------------------------------------------------ StringLookup
def test_string_lookup_layout_and_invert():
    sl = P.StringLookup(vocabulary=["a", "b", "c"])
    assert sl.get_vocabulary() == ["", "[UNK]", "a", "b", "c"] and sl.vocab_size() == 5
    out = sl(tnp.asarray([["a", "c", "zz"], ["", "b", "a"]]))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[2, 4, 1], [0, 3, 2]])
    inv = P.StringLookup(vocabulary=["a", "b", "c"], invert=True)
    back = inv(out)
    assert back.dtype.kind == "U"
    np.testing.assert_array_equal(back, [["a", "c", "[UNK]"], ["", "b", "a"]])
    np.testing.assert_array_equal(inv(tnp.asarray([9, -1])), ["[UNK]", "[UNK]"])


def test_string_lookup_docstring_examples():
    # TF 2.4's StringLookup docstring: a given vocabulary, and one adapted from the data
    data = np.array([["a", "c", "d"], ["d", "z", "b"]])
    np.testing.assert_array_equal(P.StringLookup(vocabulary=["a", "b", "c", "d"])(data),
                                  [[2, 4, 5], [5, 1, 3]])
    layer = P.StringLookup()
    layer.adapt(data)
    assert layer.get_vocabulary() == ["", "[UNK]", "d", "z", "c", "b", "a"]


def test_string_lookup_special_tokens_and_errors():
    # a vocabulary as get_vocabulary() lists it is accepted
    sl = P.StringLookup(vocabulary=["", "[UNK]", "x", "y"])
    assert sl.get_vocabulary() == ["", "[UNK]", "x", "y"]
    no_mask = P.StringLookup(mask_token=None, vocabulary=["x"])
    np.testing.assert_array_equal(no_mask(np.array(["x", "", "q"])), [1, 0, 0])
    no_oov = P.StringLookup(num_oov_indices=0, vocabulary=["x"])
    np.testing.assert_array_equal(no_oov(np.array(["x", "q"])), [1, -1])
    with pytest.raises(ValueError, match="repeated"):
        P.StringLookup(vocabulary=["a", "b", "a"])
    with pytest.raises(ValueError, match="OOV token"):
        P.StringLookup(vocabulary=["a", "[UNK]"])
    with pytest.raises(ValueError, match="max_tokens"):
        P.StringLookup(max_tokens=3, vocabulary=["a", "b"])
    with pytest.raises(TypeError, match="string input"):
        P.StringLookup(vocabulary=["a"])(tnp.asarray([1, 2]))


def test_string_lookup_adapt_order_max_tokens_and_bytes():
    data = np.array([b"b", b"a", b"c", b"a", b"b", b"d", b"", b"[UNK]"], dtype=object)
    sl = P.StringLookup(max_tokens=4)
    sl.adapt(data)
    # counts a:2, b:2, c:1, d:1; ties by token descending; 4 - 2 special indices = 2 kept
    assert sl.get_vocabulary() == ["", "[UNK]", "b", "a"]
    ds = tt.data.Dataset.from_tensor_slices(np.array(["x", "y", "y"])).batch(2)
    sl.adapt(ds)
    assert sl.get_vocabulary() == ["", "[UNK]", "y", "x"]
    again = round_trip(sl)
    np.testing.assert_array_equal(again(np.array(["x", "y", "q"])), [3, 2, 1])


def test_string_lookup_model_saves_and_loads(tmp_path):
    sl = P.StringLookup()
    sl.adapt(np.array(["cat", "dog", "dog", "bird"]))
    model = tt.Sequential([sl])
    x = np.array([["dog", "cat"], ["emu", ""]])
    expected = np.asarray(model(x))
    np.testing.assert_array_equal(expected, [[2, 3], [1, 0]])   # dog, then cat > bird
    model.save(tmp_path / "m")
    again = tt.models.load_model(tmp_path / "m")
    np.testing.assert_array_equal(np.asarray(again(x)), expected)


# ------------------------------------------------------------------ IntegerLookup
def test_integer_lookup_tf24_and_newer_names():
    il = P.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    assert il.get_vocabulary() == [0, -1, 12, 36, 1138, 42]
    np.testing.assert_array_equal(il(tnp.asarray([[12, 1138, 42], [42, 1000, 36]])),
                                  [[2, 4, 5], [5, 1, 3]])       # TF 2.4's docstring example
    il2 = P.IntegerLookup(max_tokens=4, mask_token=None, oov_token=-7)
    il2.adapt(np.array([3, 3, 5, 5, 9, 1]))
    assert il2.get_vocabulary() == [-7, 5, 3, 9]
    inv = P.IntegerLookup(vocabulary=[12, 36], invert=True)
    np.testing.assert_array_equal(inv(tnp.asarray([2, 3, 1, 0, 8])), [12, 36, -1, 0, -1])
    cfg = round_trip(il2).get_config()
    assert cfg["max_values"] == 4 and cfg["mask_value"] is None and cfg["oov_value"] == -7
    with pytest.raises(TypeError, match="mask_value"):
        P.IntegerLookup(mask_value="0")


# ------------------------------------------------------------------ TextVectorization
def test_text_vectorization_docstring_example():
    # TF 2.4's TextVectorization docstring: adapt on ["foo", "bar", "baz"], then
    # [["foo qux bar"], ["qux baz"]] -> [[2, 1, 4, 0], [1, 3, 0, 0]]
    layer = P.TextVectorization(max_tokens=5000, output_mode="int", output_sequence_length=4)
    layer.adapt(tt.data.Dataset.from_tensor_slices(np.array(["foo", "bar", "baz"])).batch(64))
    out = layer(np.array([["foo qux bar"], ["qux baz"]]))
    np.testing.assert_array_equal(out, [[2, 1, 4, 0], [1, 3, 0, 0]])
    assert layer.compute_output_shape((None, 1)) == (None, 4)


def test_text_vectorization_standardize_split_callables_and_no_split():
    layer = P.TextVectorization(standardize=None, split=None, vocabulary=["A b", "c"])
    np.testing.assert_array_equal(layer(np.array([["A b"], ["a b"], ["c"]])), [[2], [1], [3]])
    up = P.TextVectorization(standardize=lambda s: np.char.upper(s.astype(str)),
                             split=lambda s: [t.split("-") for t in s],
                             vocabulary=["AB", "CD"])
    np.testing.assert_array_equal(up(np.array(["ab-cd", "cd-x-ab"])), [[2, 3, 0], [3, 1, 2]])
    # lowering is ASCII-only, as TF's string_lower: "É" stays upper case
    lo = P.TextVectorization(vocabulary=["école", "École"])
    np.testing.assert_array_equal(lo(np.array(["ÉCOLE"])), [[3]])
    with pytest.raises(ValueError, match="output_sequence_length"):
        P.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match=r"\(batch, 1\)"):
        layer2 = P.TextVectorization(vocabulary=["a"])
        layer2(np.array([["a", "b"]]))


def test_text_vectorization_count_tfidf_by_hand_and_round_trip(tmp_path):
    corpus = np.array(["a a b", "b c", "c c c d"])
    tv = P.TextVectorization(output_mode="tf-idf", pad_to_max_tokens=False)
    tv.adapt(corpus)
    vocab = tv.get_vocabulary()
    assert vocab == ["[UNK]", "c", "b", "a", "d"]     # c:4, b:2, a:2, d:1; ties descending
    # documents holding OOV (none: every token is in the vocabulary), c, b, a, d; TF 2.4
    # weighs OOV by its own document count
    df = np.array([0, 2, 2, 1, 1.0])
    w = np.log(1 + 3 / (1 + df))
    out = np.asarray(tv(np.array(["a c c zz", "d"])))
    counts = np.array([[1, 2, 0, 1, 0], [0, 0, 0, 0, 1.0]])
    np.testing.assert_allclose(out, counts * w, rtol=1e-6)
    again = round_trip(tv)
    np.testing.assert_allclose(np.asarray(again(np.array(["a c c zz", "d"]))), out, rtol=1e-6)
    model = tt.Sequential([tv])
    model(np.array(["a"]))
    model.save(tmp_path / "tv")
    loaded = tt.models.load_model(tmp_path / "tv")
    np.testing.assert_allclose(np.asarray(loaded(np.array(["a c c zz", "d"]))), out, rtol=1e-6)


# ------------------------------------------------------------------ CategoryEncoding
def test_category_encoding_modes():
    x = tnp.asarray([[0, 1], [0, 0], [1, 2], [3, 1]])
    binary = np.asarray(P.CategoryEncoding(max_tokens=4)(x))
    np.testing.assert_array_equal(binary, [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0],
                                           [0, 1, 0, 1]])
    count = np.asarray(P.CategoryEncoding(num_tokens=4, output_mode="count")(x))
    np.testing.assert_array_equal(count, [[1, 1, 0, 0], [2, 0, 0, 0], [0, 1, 1, 0],
                                          [0, 1, 0, 1]])
    one_d = P.CategoryEncoding(max_tokens=3)(tnp.asarray([2, 0]))
    np.testing.assert_array_equal(one_d, [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(ValueError, match="0 <= values < max_tokens"):
        P.CategoryEncoding(max_tokens=3)(tnp.asarray([[3]]))
    with pytest.raises(ValueError, match="sparse"):
        P.CategoryEncoding(max_tokens=3, sparse=True)
    round_trip(P.CategoryEncoding(max_tokens=4, output_mode="count"))


def test_category_encoding_adapt_tfidf():
    data = np.array([[0, 1], [1, 1], [2, 1]])
    ce = P.CategoryEncoding(output_mode="tf-idf")
    ce.adapt(data)
    assert ce.max_tokens == 3
    idf = np.log(1 + 3 / (1 + np.array([1, 3, 1.0])))
    np.testing.assert_allclose(np.asarray(ce(tnp.asarray([[1, 1, 2]]))),
                               [[0, 2 * idf[1], idf[2]]], rtol=1e-6)


# ------------------------------------------------------------------ Discretization, Hashing
def test_discretization_tf24_bins():
    # TF 2.4's Discretization docstring (its doctest output): bins=[0., 1., 2.] on
    # [[-1.5, 1.0, 3.4, .5], [0.0, 3.0, 1.3, 0.0]] -> [[0, 1, 3, 1], [0, 3, 2, 0]], int32: a
    # value on a boundary falls in the lower bucket
    layer = P.Discretization(bins=[0.0, 1.0, 2.0])
    out = layer(tnp.asarray([[-1.5, 1.0, 3.4, .5], [0.0, 3.0, 1.3, 0.0]]))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [[0, 1, 3, 1], [0, 3, 2, 0]])
    x = np.random.default_rng(0).uniform(-1, 3, (3, 5)).astype(np.float32)
    np.testing.assert_array_equal(layer(tnp.asarray(x)), np.digitize(x, [0, 1, 2], right=True))
    # TF 2.4 compares in float32: under a float64 policy 0.1 equals the boundary float32(0.1)
    f64 = P.Discretization(bins=[0.1], dtype="float64")
    np.testing.assert_array_equal(f64(tnp.asarray([0.1, 0.2], dtype="float64")), [0, 1])
    np.testing.assert_array_equal(layer(tnp.asarray([[0, 1, 5]])), [[0, 1, 3]])
    round_trip(layer)
    with pytest.raises(ValueError, match="sorted"):
        P.Discretization(bins=[2.0, 1.0])
    with pytest.raises(ValueError, match="one of them"):
        P.Discretization()


def test_discretization_tf25_bin_boundaries():
    # tf-keras 2.21 (TF 2.5+ semantics): a value on a boundary falls in the upper bucket, int64;
    # a float64 input is compared with the float32 boundaries in float64 (0.1 < float32(0.1))
    layer = P.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    out = layer(tnp.asarray([[-1.5, 1.0, 3.4, .5], [0.0, 3.0, 1.3, 0.0]]))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[0, 2, 3, 1], [1, 3, 2, 1]])
    f64 = P.Discretization(bin_boundaries=[0.1], dtype="float64")
    np.testing.assert_array_equal(f64(tnp.asarray([0.1, 0.2], dtype="float64")), [0, 1])
    again = round_trip(layer)
    assert again.get_config()["bin_boundaries"] == [0.0, 1.0, 2.0]


def test_hashing_errors_and_config():
    with pytest.raises(ValueError, match="num_bins"):
        P.Hashing(0)
    with pytest.raises(ValueError, match="salt"):
        P.Hashing(3, salt="x")
    with pytest.raises(TypeError, match="string or integer"):
        P.Hashing(3)(tnp.asarray([1.5]))
    again = round_trip(P.Hashing(5, salt=7))
    assert again.salt == [7, 7]


def test_category_crossing():
    # TF 2.4's CategoryCrossing docstring examples
    i1, i2, i3 = (np.array([[c] for c in s]) for s in ("abc", "def", "ghi"))
    np.testing.assert_array_equal(P.CategoryCrossing()([i1, i2]),
                                  [["a_X_d"], ["b_X_e"], ["c_X_f"]])
    np.testing.assert_array_equal(P.CategoryCrossing(separator="-")([i1, i2]),
                                  [["a-d"], ["b-e"], ["c-f"]])
    np.testing.assert_array_equal(P.CategoryCrossing(depth=2)([i1, i2, i3]),
                                  [["a_X_d", "a_X_g", "d_X_g"], ["b_X_e", "b_X_h", "e_X_h"],
                                   ["c_X_f", "c_X_i", "f_X_i"]])
    a = np.array([["a"], ["b"]])
    b = np.array([[1], [2]])
    out = P.CategoryCrossing()([a, b])
    np.testing.assert_array_equal(out, [["a_X_1"], ["b_X_2"]])
    out = P.CategoryCrossing(depth=(1, 2), separator="-")([a, b])
    np.testing.assert_array_equal(out, [["a", "1", "a-1"], ["b", "2", "b-2"]])


def test_text_vectorization_tfidf_oov_weight_and_set_vocabulary():
    # max_tokens=3 keeps [UNK], a, b: documents 2 and 3 hold a dropped token (c or d)
    tv = P.TextVectorization(max_tokens=3, output_mode="tf-idf")
    tv.adapt(np.array(["a a b", "a c", "b d d", "a b"]))
    assert tv.get_vocabulary() == ["[UNK]", "a", "b"]
    w = np.log(1 + 4 / (1 + np.array([2, 3, 3.0])))
    np.testing.assert_allclose(np.asarray(tv(np.array(["c a a"]))), [[w[0], 2 * w[1], 0]],
                               rtol=1e-6)
    # TF 2.4's set_vocabulary(vocab, df_data, oov_df_value): df_data are the weights
    tv.set_vocabulary(["x", "y"], df_data=[0.5, 2.0], oov_df_value=3.0)
    np.testing.assert_allclose(np.asarray(tv(np.array(["y q y"]))), [[3.0, 0.0, 4.0]])
    with pytest.raises(ValueError, match="oov_df_value"):
        tv.set_vocabulary(["x", "y"], df_data=[0.5, 2.0])
    tv.set_vocabulary(["x", "y"], idf_weights=[0.5, 2.0])      # tf-keras: OOV gets the mean
    np.testing.assert_allclose(np.asarray(tv(np.array(["q"]))), [[1.25, 0, 0]])


def test_text_model_fits_on_strings():
    docs = np.array(["good movie", "bad movie", "good good", "bad bad film", "great good",
                     "awful bad"])
    y = np.array([[1], [0], [1], [0], [1], [0]], np.float32)
    tv = P.TextVectorization(max_tokens=20, output_mode="binary")
    tv.adapt(docs)
    model = tt.Sequential([tv, tt.layers.Dense(1, activation="sigmoid")])
    model.compile(tt.optimizers.Adam(0.1), "binary_crossentropy", metrics=["accuracy"])
    hist = model.fit(docs, y, epochs=10, batch_size=2, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0] / 2
    ds = tt.data.Dataset.from_tensor_slices((docs, y)).batch(3)
    assert model.evaluate(ds, verbose=0)[1] == 1.0
