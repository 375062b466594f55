"""The TF 2.5+ / tf_keras 2.x names of TF 2.4 features (docs/data/tf_keras_later_names.txt, made
by conformance/keras_later_names.py): each is the very object of its TF 2.4 location, and
answers as tf_keras does under that name (tests/fixtures/later_locations.json, made by
tests/fixtures/make_later_locations_fixture.py)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "conformance"))
import keras_later_names  # noqa: E402

ROWS = keras_later_names.load()
MOVED = [(m, s, old) for m, s, old in ROWS if m != "keras.strings"]
LAYERS = [s for m, s, _ in MOVED if m == "keras.layers"]
UTILS = [s for m, s, _ in MOVED if m == "keras.utils"]
REF = json.loads((ROOT / "tests" / "fixtures" / "later_locations.json").read_text())


def _resolve(dotted):
    obj = tt
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


# tf_keras 2.x changed these layers' defaults: the new name is a subclass with tf_keras's
NEW_DEFAULTS = {"StringLookup": {"mask_token": None}, "IntegerLookup": {"mask_token": None},
                "TextVectorization": {"pad_to_max_tokens": False}}


@pytest.mark.parametrize("name", LAYERS)
def test_layers_name_is_the_experimental_class(name):
    old = _resolve(dict((s, o) for _, s, o in MOVED)[name])
    new = getattr(tt.layers, name)
    assert name in tt.layers.__all__ and name in dir(tt.layers)
    if name not in NEW_DEFAULTS:
        assert new is old
        return
    assert issubclass(new, old) and new is not old
    config = new().get_config()
    assert {k: config[k] for k in NEW_DEFAULTS[name]} == NEW_DEFAULTS[name]
    # the configs travel both ways
    assert new.from_config(old.from_config(config).get_config()).get_config() == config


@pytest.mark.parametrize("name", UTILS)
def test_utils_name_is_the_preprocessing_function(name):
    old = dict((s, o) for _, s, o in MOVED)[name]
    assert getattr(tt.utils, name) is _resolve(old)
    assert name in dir(tt.utils)


def test_strings_names_are_all_there():
    assert sorted(s for m, s, _ in ROWS if m == "keras.strings") == sorted(tt.strings.__all__)


def standardize(x):
    x = tt.strings.lower(x)
    x = tt.strings.regex_replace(x, "<br />", " ")
    return tt.strings.regex_replace(x, r"[^\w\s]", "")


def test_text_vectorization_with_a_strings_standardization():
    ref = REF["text_vectorization"]
    vec = tt.layers.TextVectorization(max_tokens=8, output_mode="int",
                                      output_sequence_length=5, standardize=standardize)
    vec.adapt(np.array(ref["texts"]))
    assert vec.get_vocabulary() == ref["vocabulary"]
    for texts in (np.array(ref["texts"]), np.array([t.encode() for t in ref["texts"]])):
        np.testing.assert_array_equal(np.asarray(vec(texts)), ref["ids"])


def test_numeric_preprocessing_layers():
    data = np.array(REF["normalization"]["data"], dtype=np.float32)
    norm = tt.layers.Normalization()
    norm.adapt(data)
    np.testing.assert_allclose(np.asarray(norm(data)), REF["normalization"]["out"], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(tt.layers.Rescaling(1 / 255.0, offset=-0.5)(data)),
                               REF["rescaling"], rtol=1e-6)
    np.testing.assert_array_equal(
        np.asarray(tt.layers.CategoryEncoding(num_tokens=4, output_mode="multi_hot")(
            np.array([[0, 1], [3, 3]]))), REF["category_encoding"])
    np.testing.assert_array_equal(
        np.asarray(tt.layers.Discretization(bin_boundaries=[0.0, 1.5])(
            np.array([-1.0, 0.5, 2.0], dtype=np.float32))), REF["discretization"])


def test_lookup_layers():
    ref = REF["string_lookup"]
    sl = tt.layers.StringLookup(vocabulary=ref["vocab"])
    np.testing.assert_array_equal(np.asarray(sl(np.array(ref["words"]))), ref["ids"])
    ref = REF["integer_lookup"]
    il = tt.layers.IntegerLookup(vocabulary=ref["vocab"])
    np.testing.assert_array_equal(np.asarray(il(tnp.asarray(ref["values"]))), ref["ids"])
    with pytest.raises(TypeError, match="mask_token"):
        tt.layers.IntegerLookup(mask_value=0)


def test_timeseries_dataset_from_array_under_utils():
    ds = tt.utils.timeseries_dataset_from_array(np.arange(10), np.arange(10) * 10,
                                                sequence_length=3, sequence_stride=2,
                                                batch_size=2)
    got = [[np.asarray(x).tolist(), np.asarray(y).tolist()] for x, y in ds]
    assert got == REF["timeseries"]
