"""tt.Variable: a mutable, named tnp array."""
import copy
import pickle

import numpy as np
import pytest

import tnp
import tnp_train as tt


def test_variable_is_a_tnp_array_and_results_are_plain():
    v = tt.Variable([1.0, 2.0], name="v")
    assert isinstance(v, tnp.ndarray)
    r = v * 2 + tnp.ones(2)
    assert type(r) is tnp.ndarray
    np.testing.assert_array_equal(np.asarray(r), [3.0, 5.0])
    assert type(v[0]) is tnp.Scalar and type(v.T) is tnp.ndarray
    assert type(np.add(v, 1)) is tnp.ndarray      # NumPy interop
    np.testing.assert_array_equal(np.asarray(v), [1.0, 2.0])


def test_variable_owns_its_buffer():
    init = tnp.arange(3.0)
    v = tt.Variable(init)
    v.assign([5.0, 6.0, 7.0])
    np.testing.assert_array_equal(np.asarray(init), [0.0, 1.0, 2.0])


def test_assign_add_sub_in_place_and_version():
    v = tt.Variable(tnp.zeros(3), dtype="float32")
    assert v.dtype == np.float32
    before = v._version
    assert v.assign_add(tnp.ones(3)) is v
    v.assign_sub([0.5, 0.5, 0.5])
    np.testing.assert_array_equal(v.numpy(), [0.5, 0.5, 0.5])
    assert v._version == before + 2
    with pytest.raises(ValueError, match="shape"):
        v.assign(tnp.zeros(4))


def test_value_is_a_snapshot():
    v = tt.Variable([1.0, 2.0])
    snap = v.value()
    v.assign([3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(snap), [1.0, 2.0])
    assert isinstance(v.numpy(), np.ndarray)


def test_metadata_and_enums():
    v = tt.Variable(1.0, trainable=False, name="step", aggregation="sum",
                    synchronization=tt.VariableSynchronization.ON_WRITE)
    assert v.name == "step" and not v.trainable
    assert v.aggregation is tt.VariableAggregation.SUM
    assert v.synchronization is tt.VariableSynchronization.ON_WRITE
    with pytest.raises(ValueError):
        tt.Variable(1.0, aggregation="bogus")
    with pytest.raises(ValueError):
        tt.Variable(1.0, synchronization="on_read")  # trainable on-read variables are refused


def test_ref_is_hashable_and_variables_are_not():
    v = tt.Variable([1.0])
    with pytest.raises(TypeError):
        hash(v)
    d = {v.ref(): 1}
    assert d[v.ref()] == 1 and v.ref().deref() is v


def test_pickle_and_copy_round_trip():
    v = tt.Variable([1.0, 2.0], name="w", trainable=False)
    for w in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
        assert isinstance(w, tt.Variable) and w.name == "w" and not w.trainable
        np.testing.assert_array_equal(w.numpy(), v.numpy())


def test_assign_after_recording_is_caught_by_the_tape():
    v = tt.Variable([1.0, 2.0])
    with tt.GradientTape() as tape:
        y = tnp.sum(v * v)
    v.assign([0.0, 0.0])
    with pytest.raises(RuntimeError, match="modified in place"):
        tape.gradient(y, v)


def test_shape_is_checked_against_the_initial_value_as_tf_does():
    # TF 2.4 (ResourceVariable._init_from_args): ValueError "The initial value's shape (...) is
    # not compatible with the explicitly supplied `shape` argument (...)"; None dims match any
    assert tt.Variable(np.zeros((2, 3)), shape=(2, 3)).shape == (2, 3)
    assert tt.Variable(np.zeros((2, 3)), shape=[None, 3]).shape == (2, 3)
    assert tt.Variable(np.zeros(4), shape=4).shape == (4,)           # an int is one dimension
    assert tt.Variable(1.0, shape=()).shape == ()
    for bad in [(3, 2), (2,), (2, 3, 1), [None, 4], 6]:
        with pytest.raises(ValueError, match=r"initial value's shape \(2, 3\) is not compatible "
                                             r"with the explicitly supplied `shape`"):
            tt.Variable(np.zeros((2, 3)), shape=bad)
    with pytest.raises(ValueError, match="dimension -1 must be >= 0"):
        tt.Variable(np.zeros(2), shape=[-1])
    with pytest.raises(TypeError, match="ints and None"):
        tt.Variable(np.zeros(2), shape=[2.0])


def test_a_declared_unknown_dimension_does_not_let_assign_change_the_shape():
    v = tt.Variable(np.zeros(2), shape=[None])     # TF would take any length here
    with pytest.raises(ValueError, match=r"cannot assign a value of shape \(3,\)"):
        v.assign(np.ones(3))
    v.assign(np.ones(2))
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
