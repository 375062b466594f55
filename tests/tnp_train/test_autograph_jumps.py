"""AutoGraph's break, continue and return inside loops: rewritten as loop-carried flags (TF's
AutoGraph passes), compiled results against the same Python run eagerly, for several trip
counts; where TF 2.21 refuses (a return inside a traced loop, a break on a traced condition in
a loop over a Python range), the same NotImplementedError and message (as TF 2.21's
tf.function gives them, checked with the reference environment)."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import JitFallbackWarning


def _same(f, *args):
    """f compiled (jit_compile=True: never silently eager) against f run as Python."""
    g = tt.function(f, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        got = g(*args)
    want = f(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return g


def while_break_continue(x, n):
    i = tnp.asarray(0)
    s = tnp.zeros_like(x)
    while i < n:
        i = i + 1
        if i % 3 == 0:
            continue
        if tnp.sum(s) > 20.0:
            break
        s = s + x * i
    return s, i


@pytest.mark.parametrize("n", [0, 1, 3, 5, 12])
def test_while_with_break_and_continue(n):
    g = _same(while_break_continue, tnp.ones(2), tnp.asarray(n))
    code = tt.autograph.to_code(while_break_continue)
    assert "ag__.while_stmt" in code and "_ag_break_" in code and "_ag_continue_" in code
    assert g.experimental_get_tracing_count() == 1


def for_rows_break_continue(x):
    total = tnp.zeros(())
    count = 0
    for v in x:
        if v < 0:
            break
        if v > 5:
            continue
        total = total + v
        count += 1
    return total, count


@pytest.mark.parametrize("x", [[1.0, 7.0, 2.0, -1.0, 4.0], [1.0, 2.0], [-3.0, 1.0],
                               [9.0, 9.0, 1.0]])
def test_for_over_rows_with_break_and_continue(x):
    _same(for_rows_break_continue, tnp.asarray(x))


def range_break_nested(x, n):
    for i in tt.range(n):
        for j in tt.range(3):
            if j > i:
                break           # the inner loop's
            x = x + j
        if tnp.sum(x) > 30.0:
            break
        x = x * 1.5
    return x


@pytest.mark.parametrize("n", [0, 2, 4, 9])
def test_tt_range_with_nested_breaks(n):
    _same(range_break_nested, tnp.ones(2), tnp.asarray(n))


def python_loop_return(x, scale):
    for i in range(5):
        if i == scale:              # Python values: a Python loop, the return taken in it
            return x * i
        x = x + 1.0
    if tnp.sum(x) > 0:              # traced: a tt.cond of both returns
        return x
    return -x


@pytest.mark.parametrize("scale", [2, 7])
@pytest.mark.parametrize("sign", [1.0, -100.0])
def test_return_inside_a_python_loop(scale, sign):
    _same(python_loop_return, sign * tnp.ones(2), scale)


def no_return_reached(x):
    for i in range(3):
        if i == 5:
            return x
    x = x + 1.0


def test_a_function_that_returns_nothing_still_returns_none():
    assert tt.function(no_return_reached)(tnp.ones(1)) is None


def traced_loop_return(x, n):
    for i in tt.range(n):
        x = x * 2.0
        if tnp.sum(x) > 50.0:
            return x
    return -x


def traced_break_in_python_range(x):
    for i in range(10):
        if tnp.sum(x) > 5.0:
            break
        x = x + 1.0
    return x


def test_what_tf_refuses_is_refused_alike():
    with pytest.raises(NotImplementedError,
                       match="a return statement cannot be placed inside this TensorFlow loop"):
        tt.function(traced_loop_return, jit_compile=True)(tnp.ones(2), tnp.asarray(3))
    with pytest.raises(NotImplementedError,
                       match="break and return statements which depend on a TF condition are "
                             "not supported in Python for loops"):
        tt.function(traced_break_in_python_range, jit_compile=True)(tnp.ones(2))
    # eagerly they are Python
    np.testing.assert_array_equal(np.asarray(traced_break_in_python_range(tnp.ones(2))),
                                  [3.0, 3.0])


def test_gradient_through_a_loop_with_break():
    w = tt.Variable(np.array([0.5, 0.25]))

    def step(n):
        with tt.GradientTape() as tape:
            y = tnp.ones(2)
            i = tnp.asarray(0)
            while i < n:
                i = i + 1
                y = y * w + 1.0
                if tnp.sum(y) > 3.0:
                    break
            loss = tnp.sum(y * y)
        return loss, tape.gradient(loss, w)

    for n in (0, 2, 10):
        got = tt.function(step, jit_compile=True)(tnp.asarray(n))
        want = step(tnp.asarray(n))
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-12)
        if want[1] is None:         # no iteration ran eagerly: zeros compiled, as in TF
            np.testing.assert_array_equal(np.asarray(got[1]), 0.0)
        else:
            np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-12)


def first_negative(x):
    index = tnp.asarray(-1)
    i = tnp.asarray(0)
    for v in x:
        if v < 0:
            index = i
            break
        i = i + 1
    return index


def carried_in_if(x):
    # i is read only inside the if, but by the next iteration: the if must give it back
    i = tnp.asarray(0)
    idx = tnp.asarray(-1)
    for v in x:
        if v < 0:
            idx = i
        else:
            i = i + 1
    return idx


@pytest.mark.parametrize("x", [[3.0, 1.0, -2.0, -5.0], [3.0, 1.0], [-1.0]])
def test_a_variable_carried_through_an_if_in_a_loop(x):
    _same(first_negative, tnp.asarray(x))
    _same(carried_in_if, tnp.asarray(x))
