"""Identity as NumPy's, for training Variables and under a gradient tape: a Variable is answered
with where NumPy answers a subclass instance with itself, its views' ``.base`` is the Variable,
and calls that give back their input neither break nor double a gradient."""
import numpy as np

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape


def test_a_variable_is_answered_as_numpy_answers_a_subclass_instance():
    class Sub(np.ndarray):
        pass

    v = tt.Variable(tnp.arange(6.0))
    n = np.arange(6.0).view(Sub).copy()      # owns its memory, as a Variable does
    for x, xp in ((n, np), (v, tnp)):
        assert xp.asanyarray(x) is x
        assert xp.atleast_1d(x) is x
        assert x.real is x and x.conj() is x
        assert x[1:].base is x and x.reshape(2, 3).base is x and x.T.base is x
        plain = xp.asarray(x)                  # a plain array over the variable's memory
        assert plain is not x and plain.base is x
        assert xp.ascontiguousarray(x) is not x
    assert type(tnp.asarray(v)) is tnp.ndarray
    # a Variable's views are plain arrays, so a view of one stops at it, by NumPy's rule (a
    # base collapses only through arrays of the view's own type)
    r = v.reshape(2, 3)
    assert r.T.base is r


def test_the_copy_idiom_leaves_a_variables_value_alone():
    v = tt.Variable(tnp.arange(4.0))
    b = tnp.asanyarray(v)
    if b is v:
        b = b.copy()
    b *= 2
    assert v.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_gradients_through_calls_that_answer_with_their_input():
    x = tnp.asarray([1.0, 2.0, 3.0])
    y = tnp.asarray([[4.0]])
    with GradientTape() as tape:
        tape.watch([x, y])
        a = tnp.asarray(x)                 # x itself
        b, c = tnp.atleast_1d(x, y)        # x itself, y itself
        d = tnp.atleast_1d(tnp.sum(x))     # a new array
        loss = tnp.sum(a * a) + tnp.sum(b) + tnp.sum(c * c) + tnp.sum(d)
    gx, gy = tape.gradient(loss, [x, y])
    # d/dx: 2x + 1 + 1 (one each from b and d), d/dy: 2y; never counted twice through a node
    # whose output is its own input
    np.testing.assert_allclose(gx.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 2.0)
    np.testing.assert_allclose(gy.numpy(), [[8.0]])
