"""The control-flow nodes of tnp.jit (tnp.extend.control_switch / control_while): a traced
decision taken at every run, only the taken branch's operations and writes, loops run as many
times as the condition says; compared with the same Python run eagerly."""
import numpy as np
import pytest

import tnp
from tnp import extend


def _switch_fn(x, p, log):
    def neg():
        log[0] += 1.0                       # a write into an array from outside
        return [-x, x.sum()]

    def dbl():
        return [x * 2.0, x.max()]

    if extend.tracing():
        y, s = extend.control_switch(p, [neg, dbl])
    else:
        y, s = (dbl if bool(p) else neg)()
    return y + 1.0, s


@pytest.mark.parametrize("p", [True, False])
def test_switch_runs_only_the_taken_branch(p):
    log_c, log_e = tnp.zeros(1), tnp.zeros(1)
    f = tnp.jit(lambda x, q: _switch_fn(x, q, log_c))
    x = tnp.arange(4.0)
    for _ in range(3):
        got = f(x, tnp.asarray(p))
        want = _switch_fn(x, tnp.asarray(p), log_e)
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
        assert float(got[1]) == float(want[1])
    assert f.trace_count == 1
    assert float(log_c[0]) == float(log_e[0]) == (0.0 if p else 3.0)
    assert "switch" in f.lower(x, tnp.asarray(p)).as_text()


def test_switch_output_never_aliases_an_input():
    f = tnp.jit(lambda x, p: extend.control_switch(p, [lambda: [x], lambda: [x * 1.0]])[0])
    x = tnp.arange(3.0)
    y = f(x, tnp.asarray(False))
    y[0] = 7.0
    assert float(x[0]) == 0.0


def _loop_fn(n, x):
    def cond(i, a):
        return i < n

    def body(i, a):
        return [i + 1, a * 2.0 + 1.0]

    if extend.tracing():
        return extend.control_while(cond, body, [tnp.asarray(0), x])
    i, a = tnp.asarray(0), x
    while bool(cond(i, a)):
        i, a = body(i, a)
    return [i, a]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_runs_until_the_condition_is_false(n):
    f = tnp.jit(_loop_fn)
    x = tnp.ones(3)
    for k in (n, n + 2):
        got, want = f(tnp.asarray(k), x), _loop_fn(tnp.asarray(k), x)
        assert int(got[0]) == int(want[0]) == k
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    assert f.trace_count == 1


def test_while_effects_happen_once_per_iteration_and_maximum_iterations():
    calls = []
    f = tnp.jit(lambda n: extend.control_while(
        lambda i: i < n, lambda i: [extend.effect(calls.append, 1) or i + 1],
        [tnp.asarray(0)], maximum_iterations=4)[0])
    assert int(f(tnp.asarray(3))) == 3 and len(calls) == 3
    assert int(f(tnp.asarray(10))) == 4 and len(calls) == 7


def test_random_draws_in_branches_follow_the_eager_stream():
    def g(p):
        if extend.tracing():
            return extend.control_switch(p, [lambda: [tnp.random.random(2)],
                                             lambda: [tnp.zeros(2)]])[0]
        return tnp.zeros(2) if bool(p) else tnp.random.random(2)

    f = tnp.jit(g)
    pattern = [False, True, False, False]
    tnp.random.seed(3)
    got = [np.asarray(f(tnp.asarray(p))) for p in pattern]
    tnp.random.seed(3)
    want = [np.asarray(g(tnp.asarray(p))) for p in pattern]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_a_value_made_inside_a_branch_is_refused_outside():
    kept = []

    def g(x, p):
        def br():
            kept.append(x * 2.0)
            return [x]
        extend.control_switch(p, [br, br])
        return kept[-1] + 1.0

    f = tnp.jit(g)
    f.fallback = "raise"
    with pytest.raises(extend.UnsupportedTrace, match="used outside it"):
        f(tnp.ones(2), tnp.asarray(True))


def test_shape_changes_are_not_compiled_and_dtype_changes_are_errors():
    f = tnp.jit(lambda x: extend.control_while(lambda a: a.sum() < 5,
                                               lambda a: [tnp.concatenate([a, a])], [x]))
    f.fallback = "raise"
    with pytest.raises(extend.UnsupportedTrace, match="shape"):
        f(tnp.ones(1))
    g = tnp.jit(lambda x: extend.control_while(lambda a: a.sum() < 5,
                                               lambda a: [a.astype("float32")], [x]))
    with pytest.raises(TypeError, match="type float32"):
        g(tnp.ones(1))


# ----------------------------------------------------------------------------- backward nodes
def _sin_chain_and_derivative(x, n):
    """y = sin applied n times to x, and dy/dx by a backward loop over the forward's stack."""
    box = {}

    def body(i, y):
        box["y"] = y                        # this iteration's input: read by the backward
        return [i + 1, tnp.sin(y)]

    i, y = extend.control_while(lambda i, y: i < n, body, [tnp.asarray(0), x], taped=True)
    (g,) = extend.control_loop_backward(y, lambda g: [g * tnp.cos(box["y"])], [tnp.ones_like(x)])
    return y, g


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loop_backward_runs_once_per_iteration_in_reverse_on_the_stack(n):
    x = tnp.asarray([0.3, -1.2, 2.0])
    y, g = tnp.jit(_sin_chain_and_derivative)(x, tnp.asarray(n))
    want_y, want_g = np.asarray(x), np.ones(3)
    for _ in range(n):
        want_g = want_g * np.cos(want_y)
        want_y = np.sin(want_y)
    np.testing.assert_array_equal(np.asarray(y), want_y)
    np.testing.assert_allclose(np.asarray(g), want_g, rtol=1e-15)


def _branch_and_derivative(x, p):
    box = {}

    def square():
        box[0] = x * 3.0
        return [box[0] * box[0]]

    def exp():
        box[1] = tnp.exp(x)
        return [box[1]]

    (y,) = extend.control_switch(p, [square, exp], taped=True)
    (g,) = extend.control_switch_backward(y, [lambda: [18.0 * x], lambda: [box[1] * 1.0]])
    return y, g


@pytest.mark.parametrize("p", [0, 1])
def test_switch_backward_takes_the_branch_the_forward_took(p):
    x = tnp.asarray([0.5, -1.0])
    y, g = tnp.jit(_branch_and_derivative)(x, tnp.asarray(p))
    xv = np.asarray(x)
    np.testing.assert_array_equal(np.asarray(g), 18.0 * xv if p == 0 else np.exp(xv))
    np.testing.assert_array_equal(np.asarray(y), 9.0 * xv * xv if p == 0 else np.exp(xv))
