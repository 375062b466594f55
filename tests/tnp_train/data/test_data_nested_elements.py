"""Dict elements of a tt.data pipeline come out as tf.data gives them.

Each expected key order and value was produced by tf.data (TensorFlow 2.21, whose rules here are
TF 2.4's) on the same pipeline: dict components are matched by key (tf.nest's sorted order
inside), and an element keeps the key order of the structure that made it.
"""
import collections

import numpy as np
import pytest

from tnp_train.data import Dataset, TensorSpec


def py(e):
    return {k: np.asarray(v).tolist() for k, v in e.items()}


def test_batch_and_map_keep_the_key_order_and_mapping_type():
    ds = Dataset.from_tensor_slices(collections.OrderedDict([("b", [1, 2]), ("a", [3, 4])]))
    e = next(iter(ds.batch(2)))
    assert type(e) is collections.OrderedDict and list(e) == ["b", "a"]
    assert py(e) == {"b": [1, 2], "a": [3, 4]}
    m = next(iter(ds.map(lambda d: {"z": d["b"], "c": d["a"]})))
    assert list(m) == ["z", "c"] and py(m) == {"z": 1, "c": 3}


def test_padded_batch_matches_dict_arguments_by_key():
    ds = Dataset.from_tensor_slices({"b": [[1], [2]], "a": [[3, 4], [5, 6]]})
    e = next(iter(ds.padded_batch(2, padded_shapes={"a": [3], "b": [2]},
                                  padding_values={"a": 0, "b": -1})))
    # tf.data: {'b': [[1, -1], [2, -1]], 'a': [[3, 4, 0], [5, 6, 0]]}
    assert list(e) == ["b", "a"]
    assert py(e) == {"b": [[1, -1], [2, -1]], "a": [[3, 4, 0], [5, 6, 0]]}


def test_concatenate_gives_every_element_the_first_datasets_structure():
    first = Dataset.from_tensor_slices({"b": [[1], [2]], "a": [[3, 4], [5, 6]]})
    second = Dataset.from_tensor_slices({"a": [[7, 8]], "b": [[9]]})
    out = list(first.concatenate(second))
    # tf.data: [{'b': [1], 'a': [3, 4]}, {'b': [2], 'a': [5, 6]}, {'b': [9], 'a': [7, 8]}]
    assert [list(e) for e in out] == [["b", "a"]] * 3
    assert [py(e) for e in out] == [{"b": [1], "a": [3, 4]}, {"b": [2], "a": [5, 6]},
                                    {"b": [9], "a": [7, 8]}]


def test_from_generator_packs_in_the_signature_key_order():
    def gen():
        yield {"b": np.int64(1), "a": np.float32(2.5)}
    ds = Dataset.from_generator(gen, output_signature={"a": TensorSpec((), np.float32),
                                                       "b": TensorSpec((), np.int64)})
    (e,) = list(ds)
    assert list(e) == ["a", "b"] and py(e) == {"a": 2.5, "b": 1}     # tf.data: ['a', 'b']
    assert e["a"].dtype == np.float32 and e["b"].dtype == np.int64


def test_a_list_is_not_a_structure_of_datasets_or_specs():
    ds = Dataset.range(2)
    # tf.data: TypeError for each (a list is a value in tf.data, never a structure)
    with pytest.raises(TypeError, match="Dataset.zip: .*Python lists"):
        Dataset.zip((ds, [ds, ds]))
    with pytest.raises(TypeError, match="output_signature: .*Python lists"):
        Dataset.from_generator(lambda: iter([(1.0, 2.0)]),
                               output_signature=(TensorSpec(()), [TensorSpec(())]))
    with pytest.raises(TypeError, match="output_types: .*Python lists"):
        Dataset.from_generator(lambda: iter([(1.0, 2.0)]), output_types=(np.float32, [np.float32]))
