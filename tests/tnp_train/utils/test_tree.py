"""tnp_train.utils.tree against tf.nest.

The expected values were produced by ``tf.nest`` / ``tensorflow.python.util.nest``
(TensorFlow 2.21, whose rules for these cases are TF 2.4's: dict keys sorted, namedtuples kept,
mappings packed in the template's key order) and written in by hand; the hypothesis tests compare
with a recursive reference written here.
"""
import collections
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.utils import tree

P = collections.namedtuple("P", "y x")
P_AGAIN = collections.namedtuple("P", "y x")    # another class, the same name and fields
Q = collections.namedtuple("Q", "y x")


class MyList(list):
    pass


class MyDict(dict):
    pass


@dataclasses.dataclass
class Record:
    a: int
    b: int


# ----------------------------------------------------------------------------- flatten
@pytest.mark.parametrize("structure, leaves", [
    ({"b": 1, "a": [2, 3]}, [2, 3, 1]),
    ({"z": (1, {"d": 2, "c": [3, None]}), "a": P(4, 5)}, [4, 5, 1, 3, None, 2]),
    (collections.OrderedDict([("b", 1), ("a", 2)]), [2, 1]),
    ({3: "a", 1: "b", 2: "c"}, ["b", "c", "a"]),
    ({True: 1, False: 2}, [2, 1]),
    ({(2, 1): "a", (1, 5): "b"}, ["b", "a"]),
    ("abc", ["abc"]),
    (b"ab", [b"ab"]),
    (None, [None]),
    ([], []),
    ({}, []),
    ([(), {}, [1]], [1]),
    (MyList([1, [2]]), [1, 2]),
], ids=repr)
def test_flatten_matches_tf_nest(structure, leaves):
    assert tree.flatten(structure) == leaves


def test_sets_dataclasses_and_arrays_are_leaves():
    s = {1, 2}
    r = Record(1, 2)
    a, n = tnp.arange(3.0), np.arange(3)
    v = tt.Variable([1.0, 2.0])
    flat = tree.flatten([s, r, (a, {"v": v, "n": n}), tnp.float64(2.0)])
    assert len(flat) == 6
    assert all(x is y for x, y in zip(flat, [s, r, a, n, v]))
    assert not any(tree.is_nested(x) for x in (s, r, a, n, v, "ab"))


def test_is_nested():
    assert [tree.is_nested(x) for x in ([], (), {}, "s", None, {1}, P(1, 2),
                                        collections.OrderedDict(), MyDict(), 3)] == \
        [True, True, True, False, False, False, True, True, True, False]


def test_unsortable_keys_are_a_type_error():
    with pytest.raises(TypeError, match=r"sortable.*\[1, 'b'\]"):
        tree.flatten({1: "a", "b": 2})


# ----------------------------------------------------------------------------- pack
def test_pack_keeps_the_template_key_order_and_type():
    packed = tree.pack_sequence_as(collections.OrderedDict([("b", 0), ("a", 0)]), [10, 20])
    assert type(packed) is collections.OrderedDict
    assert list(packed.items()) == [("b", 20), ("a", 10)]
    packed = tree.pack_sequence_as({"b": 0, "a": 0}, [10, 20])
    assert list(packed.items()) == [("b", 20), ("a", 10)]
    assert tree.pack_sequence_as(P(0, 0), [1, 2]) == P(1, 2)
    packed = tree.pack_sequence_as(MyDict(b=1, a=2), [3, 4])
    assert type(packed) is MyDict and packed == {"b": 4, "a": 3}
    assert type(tree.pack_sequence_as(MyList([1, 2]), [3, 4])) is MyList
    dd = tree.pack_sequence_as(collections.defaultdict(list, {"b": 1, "a": 2}), [3, 4])
    assert type(dd) is collections.defaultdict and dd.default_factory is list
    assert dict(dd) == {"b": 4, "a": 3} and list(dd) == ["b", "a"]
    assert tree.pack_sequence_as([(), [()]], []) == [(), [()]]
    assert tree.pack_sequence_as([{}, [], (1,)], [9]) == [{}, [], (9,)]
    assert tree.pack_sequence_as(5, [7]) == 7
    assert tree.pack_sequence_as((1, 2, 3), (4, 5, 6)) == (4, 5, 6)


@pytest.mark.parametrize("structure, flat, error, match", [
    ([1, [2]], [1, 2, 3], ValueError, r"\[\., \[\.\]\] has 2 leaves but flat_sequence has 3"),
    ([1, [2]], [1], ValueError, "has 2 leaves but flat_sequence has 1"),
    ((1, 2), [1, 2, 3], ValueError, "has 2 leaves but flat_sequence has 3"),
    (1, [1, 2], ValueError, "single leaf"),
    (None, [], ValueError, "single leaf"),
    ([1], 5, TypeError, "must be a list or tuple, got int"),
])
def test_pack_errors(structure, flat, error, match):
    with pytest.raises(error, match=match):
        tree.pack_sequence_as(structure, flat)


# ----------------------------------------------------------------------------- compare
@pytest.mark.parametrize("a, b, check_types, error", [
    ([1, 2], (1, 2), True, TypeError),
    ([1, 2], [1, 2, 3], True, ValueError),
    ({"a": 1}, {"b": 1}, True, ValueError),
    (1, [1], True, ValueError),
    (None, [], True, ValueError),
    ([], (), True, TypeError),
    ("ab", ["a", "b"], True, ValueError),
    (P(1, 2), (1, 2), True, TypeError),
    (P(1, 2), Q(1, 2), True, TypeError),
    (P(1, 2), P_AGAIN(1, 2), True, None),
    ([1], MyList([1]), True, None),
    ({"a": 1}, MyDict(a=1), True, None),
    (collections.OrderedDict([("b", 1), ("a", 2)]), {"a": 1, "b": 2}, True, None),
    ([1], (1,), False, None),
    ((1, 2), P(1, 2), False, None),
    ({"a": 1}, [1], False, None),
    ("ab", 1, True, None),
], ids=repr)
def test_assert_same_structure_matches_tf_nest(a, b, check_types, error):
    if error is None:
        tree.assert_same_structure(a, b, check_types=check_types)
    else:
        with pytest.raises(error, match="assert_same_structure: the two structures"):
            tree.assert_same_structure(a, b, check_types=check_types)


def test_assert_same_structure_names_the_place_of_the_difference():
    with pytest.raises(ValueError, match=r"\[1\]\['k'\] the first has 2 entries and the second 3"):
        tree.assert_same_structure([0, {"k": [1, 2]}], [0, {"k": [1, 2, 3]}])


# ----------------------------------------------------------------------------- map
def test_map_structure_matches_tf_nest():
    assert tree.map_structure(lambda a, b: (a, b), [1, {"b": 2, "a": 3}], [4, {"a": 5, "b": 6}]) \
        == [(1, 4), {"b": (2, 6), "a": (3, 5)}]
    assert tree.map_structure(lambda a, b: a + b, 1, 2) == 3
    assert tree.map_structure(lambda a, b: a + b, {"b": 1, "a": 2}, {"a": 10, "b": 20}) == \
        {"b": 21, "a": 12}
    seen = []
    tree.map_structure(seen.append, {"b": 1, "a": [2, 3]})
    assert seen == [2, 3, 1]                              # func sees flatten's order


def test_map_structure_errors():
    with pytest.raises(ValueError, match="at least one structure"):
        tree.map_structure(lambda x: x)
    with pytest.raises(TypeError, match="func must be callable"):
        tree.map_structure(3, [1])
    with pytest.raises(TypeError, match="map_structure: .* list and the second a tuple"):
        tree.map_structure(lambda a, b: a, [1], (1,))
    assert tree.map_structure(lambda a, b: a, [1], (2,), check_types=False) == [1]


# ----------------------------------------------------------------------------- flatten_up_to
def test_flatten_up_to_matches_tf_nest():
    assert tree.flatten_up_to([1, (2, 3)], [[1, 1], ([2], {"a": 3})]) == [[1, 1], [2], {"a": 3}]
    assert tree.flatten_up_to((1, 2), [5, 6], check_types=False) == [5, 6]
    assert tree.flatten_up_to({"b": 1, "a": 2},
                              collections.OrderedDict([("a", 5), ("b", 6)])) == [5, 6]
    assert tree.flatten_up_to(1, [1, {"a": 2}]) == [[1, {"a": 2}]]


@pytest.mark.parametrize("shallow, value, check_types, error", [
    ((1, 2), [5, 6], True, TypeError),
    ((1, 2), [5, 6, 7], False, ValueError),
    ((1, 2), 5, True, TypeError),
    ({"a": 1}, {"b": 2}, True, ValueError),
    ({"a": 1}, {"a": 1, "b": 2}, True, ValueError),
    (P(1, 2), (1, 2), True, TypeError),
])
def test_flatten_up_to_errors(shallow, value, check_types, error):
    with pytest.raises(error, match="flatten_up_to: the input"):
        tree.flatten_up_to(shallow, value, check_types=check_types)


# ----------------------------------------------------------------------------- random structures
Pair = collections.namedtuple("Pair", "left right")
_keys = st.text("abcxyz", min_size=1, max_size=3)
_leaves = st.one_of(st.integers(-5, 5), st.none(), st.text("pq", max_size=2),
                    st.floats(-2, 2, width=32).map(tnp.asarray))


def _containers(children):
    return st.one_of(st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple),
                     st.builds(Pair, children, children),
                     st.dictionaries(_keys, children, max_size=4),
                     st.dictionaries(_keys, children, max_size=4).map(
                         lambda d: collections.OrderedDict(reversed(list(d.items())))))


structures = st.recursive(_leaves, _containers, max_leaves=12)


def _ref_flatten(s):
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _ref_flatten(s[k])]
    if isinstance(s, (list, tuple)):
        return [x for v in s for x in _ref_flatten(v)]
    return [s]


def _ref_map(f, s):
    if isinstance(s, dict):
        return type(s)((k, _ref_map(f, v)) for k, v in s.items())
    if isinstance(s, Pair):
        return Pair(*[_ref_map(f, v) for v in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_ref_map(f, v) for v in s)
    return f(s)


def _identical(a, b, leaf_equal):
    """Same types, same keys in the same order, and equal leaves."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(a[k], b[k], leaf_equal) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_identical(x, y, leaf_equal) for x, y in zip(a, b))
    return leaf_equal(a, b)


def _same_object(a, b):
    return a is b


@settings(max_examples=200, deadline=None)
@given(structures)
def test_flatten_then_pack_round_trips(s):
    flat = tree.flatten(s)
    assert len(flat) == len(_ref_flatten(s))
    assert all(x is y for x, y in zip(flat, _ref_flatten(s)))
    assert _identical(tree.pack_sequence_as(s, flat), s, _same_object)


@settings(max_examples=200, deadline=None)
@given(structures)
def test_map_structure_equals_a_recursive_reference(s):
    def tag(x):
        return f"leaf-{id(x)}"
    mapped = tree.map_structure(tag, s)
    assert _identical(mapped, _ref_map(tag, s), lambda a, b: a == b)
    both = tree.map_structure(lambda a, b: f"{b}/{id(a)}", s, mapped)
    assert _identical(both, _ref_map(lambda x: f"leaf-{id(x)}/{id(x)}", s), lambda a, b: a == b)
    tree.assert_same_structure(s, mapped)
