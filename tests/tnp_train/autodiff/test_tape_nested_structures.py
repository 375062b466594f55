"""GradientTape with nested targets, sources and output_gradients, as tf.GradientTape.

Expected values and structures were produced by tf.GradientTape (TensorFlow 2.21, the same rules
as TF 2.4: tf.nest flattens both sides, dict entries by sorted key, and the gradients are packed
in the sources' structure, mapping type and key order included).
"""
import collections

import numpy as np

import tnp
import tnp_train as tt

P = collections.namedtuple("P", "w b")


def _program():
    v1, v2 = tt.Variable(1.0), tt.Variable(2.0)
    tape = tt.GradientTape(persistent=True)
    with tape:
        y1 = 3 * v1 + 5 * v2
        y2 = v1 * v2
    return tape, v1, v2, y1, y2


def test_dict_target_output_gradients_and_sources_are_matched_by_key():
    tape, v1, v2, y1, y2 = _program()
    g = tape.gradient({"b": y1, "a": y2}, {"z": v1, "a": v2},
                      output_gradients={"a": tnp.asarray(10.0), "b": tnp.asarray(1.0)})
    # TF: {'z': 23.0, 'a': 15.0} (1 * dy1 + 10 * dy2)
    assert list(g) == ["z", "a"]
    assert {k: float(v) for k, v in g.items()} == {"z": 23.0, "a": 15.0}


def test_gradients_come_back_in_the_sources_structure():
    tape, v1, v2, y1, y2 = _program()
    g = tape.gradient(y1, collections.OrderedDict([("z", v1), ("a", v2)]))
    assert type(g) is collections.OrderedDict and list(g) == ["z", "a"]
    assert [float(x) for x in g.values()] == [3.0, 5.0]
    g = tape.gradient(y1, P(v1, [v2]))
    assert type(g) is P and type(g.b) is list and (float(g.w), float(g.b[0])) == (3.0, 5.0)
    g = tape.gradient(collections.OrderedDict([("b", y1), ("a", y2)]), [v1, v2])
    assert [float(x) for x in g] == [5.0, 6.0]                     # TF: [5.0, 6.0]


def test_watch_and_jacobian_with_a_dict():
    x = tnp.asarray([1.0, 2.0])
    with tt.GradientTape(persistent=True) as tape:
        tape.watch({"q": x})
        y = x * x
    jac = tape.jacobian(y, {"q": x})
    assert list(jac) == ["q"]
    np.testing.assert_array_equal(np.asarray(jac["q"]), [[2.0, 0.0], [0.0, 4.0]])   # TF
