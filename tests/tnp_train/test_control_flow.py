"""tt.cond, tt.while_loop, tt.switch_case, tt.map_fn and AutoGraph: eager values against the
Python (NumPy) reference, compiled values against eager ones, effects of the taken branch only,
loop counts, TF's errors (types and messages as TF 2.4/2.21 give them)."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import JitFallbackWarning, TraceError, UnsupportedTrace


def _compiled(f):
    """f as tt.function(jit_compile=True): compiled or an error, never silently eager."""
    return tt.function(f, jit_compile=True)


def _eq(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------- cond
def test_cond_eager_and_compiled_nested_structures():
    def f(x, p):
        return tt.cond(p, lambda: {"a": x * 2.0, "b": (x.sum(), None)},
                       lambda: {"a": x - 1.0, "b": (x.max(), None)})

    g = _compiled(f)
    x = tnp.arange(4.0)
    for p in (True, False, True):
        got, want = g(x, tnp.asarray(p)), f(x, tnp.asarray(p))
        ref = np.arange(4.0) * 2 if p else np.arange(4.0) - 1
        _eq(got["a"], ref)
        _eq(want["a"], ref)
        assert float(got["b"][0]) == float(want["b"][0]) and got["b"][1] is None
    assert g.experimental_get_tracing_count() == 1


def test_cond_runs_only_the_taken_branch_effects():
    v = tt.Variable(0.0)

    @tt.function(jit_compile=True)
    def step(x):
        return tt.cond(x.sum() > 0, lambda: v.assign_add(1.0) * 0 + x,
                       lambda: v.assign_add(10.0) * 0 - x)

    for s in (1, 1, -1):
        step(s * tnp.ones(2))
    assert float(np.asarray(v)) == 12.0


def test_cond_errors_as_tf():
    with pytest.raises(TypeError, match="'true_fn' argument required"):
        tt.cond(True, None, lambda: 1)
    with pytest.raises(TypeError, match="'false_fn' must be callable"):
        tt.cond(True, lambda: 1, 2)
    x = tnp.ones(2)
    with pytest.raises(ValueError, match="same number, type, and overall structure"):
        _compiled(lambda p: tt.cond(p, lambda: x, lambda: (x, x)))(tnp.asarray(True))
    with pytest.raises(TypeError, match="different types"):
        _compiled(lambda p: tt.cond(p, lambda: x, lambda: x.astype("int32")))(
            tnp.asarray(True))
    with pytest.raises(ValueError, match="scalar"):
        tt.cond(tnp.asarray([True, False]), lambda: x, lambda: x)


# ----------------------------------------------------------------------------- switch_case
@pytest.mark.parametrize("i", [0, 1, 2, -1, 9])
def test_switch_case_default_and_out_of_range(i):
    x = tnp.arange(3.0)
    branches = [lambda: x, lambda: x * 10.0]
    ref = {0: [0, 1, 2], 1: [0, 10, 20]}.get(i, [-0.0, -1.0, -2.0])
    f = lambda k: tt.switch_case(k, branches, default=lambda: -x)   # noqa: E731
    _eq(f(tnp.asarray(i)), ref)
    _eq(_compiled(f)(tnp.asarray(i)), ref)
    # without default, the last branch
    _eq(_compiled(lambda k: tt.switch_case(k, {1: branches[1], 0: branches[0]}))(
        tnp.asarray(i)), {0: [0, 1, 2]}.get(i, [0, 10, 20]))


def test_switch_case_errors_as_tf():
    with pytest.raises(ValueError, match="at least one item"):
        tt.switch_case(tnp.asarray(0), [])
    with pytest.raises(ValueError, match=r"contiguous range of \[0 to 2\) but found \{1,3\}"):
        tt.switch_case(tnp.asarray(0), {3: lambda: 1, 1: lambda: 2})
    with pytest.raises(TypeError, match="integer Tensor, got float32"):
        tt.switch_case(tnp.asarray(1.0, dtype="float32"), [lambda: 1])
    with pytest.raises(TypeError, match="same number, type"):
        _compiled(lambda i: tt.switch_case(i, [lambda: tnp.asarray(1),
                                               lambda: tnp.asarray(2.0)]))(tnp.asarray(0))


# ----------------------------------------------------------------------------- while_loop
def _collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop_values_and_loop_counts_against_python():
    def f(n):
        def body(k, steps):
            return tt.cond(k % 2 == 0, lambda: k // 2, lambda: 3 * k + 1), steps + 1
        return tt.while_loop(lambda k, steps: k != 1, body, (n, tnp.asarray(0)))

    g = _compiled(f)
    for n in (1, 6, 27):
        got, want = g(tnp.asarray(n)), f(tnp.asarray(n))
        assert int(got[1]) == int(want[1]) == _collatz_steps(n)
        assert isinstance(got, tuple)
    assert g.experimental_get_tracing_count() == 1


def test_while_loop_effects_per_iteration_and_maximum_iterations():
    v = tt.Variable(0.0)

    def f(n):
        def body(i):
            v.assign_add(1.0)
            return i + 1
        return tt.while_loop(lambda i: i < n, body, [tnp.asarray(0)], maximum_iterations=5)

    g = _compiled(f)
    assert int(g(tnp.asarray(3))[0]) == 3 and float(np.asarray(v)) == 3.0
    assert int(g(tnp.asarray(50))[0]) == 5 and float(np.asarray(v)) == 8.0
    assert int(f(tnp.asarray(50))[0]) == 5 and float(np.asarray(v)) == 13.0


def test_while_loop_nested_structures():
    def f(x):
        return tt.while_loop(lambda s: s["i"] < 3,
                             lambda s: {"i": s["i"] + 1, "acc": [s["acc"][0] * x]},
                             [{"i": tnp.asarray(0), "acc": [tnp.ones(2)]}])

    got, want = _compiled(f)(tnp.full(2, 2.0)), f(tnp.full(2, 2.0))
    _eq(got[0]["acc"][0], [8.0, 8.0])
    _eq(want[0]["acc"][0], [8.0, 8.0])


def test_while_loop_errors_as_tf():
    with pytest.raises(TypeError, match="'cond' must be callable"):
        tt.while_loop(1, lambda i: i, [0])
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        tt.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(ValueError, match=r"enters the loop with shape \(1,\), but has shape "
                                         r"\(2,\) after one iteration"):
        _compiled(lambda: tt.while_loop(lambda i: i.sum() < 3,
                                        lambda i: tnp.concatenate([i, i]), [tnp.zeros(1)]))()
    with pytest.raises(TypeError, match="enters the loop with type int64 but has type "
                                        "float64 after 1 iteration"):
        _compiled(lambda: tt.while_loop(lambda i: i < 3, lambda i: i * 1.5, [0]))()
    with pytest.raises(ValueError, match="same nested structure"):
        tt.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [0, 1])


def test_shape_invariants_allow_a_loop_that_then_runs_eagerly():
    f = tt.function(lambda: tt.while_loop(lambda i: i.size < 4,
                                          lambda i: tnp.concatenate([i, i]), [tnp.zeros(1)],
                                          shape_invariants=[(None,)]))
    with pytest.warns(JitFallbackWarning, match="shape"):
        assert f()[0].shape == (4,)


# ----------------------------------------------------------------------------- map_fn
def test_map_fn_against_numpy_and_signatures():
    x = tnp.asarray(np.arange(6.0).reshape(3, 2))
    f = lambda a: tt.map_fn(lambda r: r * r.sum(), a)   # noqa: E731
    ref = np.arange(6.0).reshape(3, 2) * np.arange(6.0).reshape(3, 2).sum(1, keepdims=True)
    _eq(f(x), ref)
    _eq(_compiled(f)(x), ref)
    out = tt.map_fn(lambda t: (t[0], t[0].astype("int64")), (x, x),
                    fn_output_signature=(tnp.float64, tnp.int64))
    assert out[1].dtype == np.int64 and out[1].shape == (3, 2)
    with pytest.raises(tt.errors.InvalidArgumentError, match="TensorArray dtype is float64"):
        tt.map_fn(lambda r: r.astype("int64"), x)
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tt.map_fn(lambda r: r, tnp.asarray(1.0))
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        tt.map_fn(lambda t: t[0], (tnp.zeros(2), tnp.zeros(3)))


# ----------------------------------------------------------------------------- gradients
def test_gradients_through_eager_cond_and_while():
    x = tt.Variable(3.0)
    with tt.GradientTape() as tape:
        y = tt.cond(x > 0, lambda: x * x, lambda: -x)
        z = tt.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), (0, y))[1]
    assert float(np.asarray(tape.gradient(z, x))) == pytest.approx(5 * 3.0 ** 4)


def test_a_tape_inside_a_compiled_cond_compiles_and_a_second_order_one_runs_eagerly():
    x = tt.Variable(2.0)

    def f():
        with tt.GradientTape() as tape:
            y = tt.cond(x > 0, lambda: x * x, lambda: -x)
        return tape.gradient(y, x)

    assert float(np.asarray(_compiled(f)())) == 4.0     # see test_control_flow_gradients.py

    def second():
        with tt.GradientTape() as outer:
            with tt.GradientTape() as inner:
                y = tt.cond(x > 0, lambda: x * x * x, lambda: -x)
            g = inner.gradient(y, x)
        return outer.gradient(g, x)

    with pytest.warns(JitFallbackWarning, match="gradient of the gradient"):
        assert float(np.asarray(tt.function(second)())) == 12.0
    with pytest.raises(UnsupportedTrace, match="gradient of the gradient"):
        _compiled(second)()


# ----------------------------------------------------------------------------- AutoGraph
def _no_fallback(g, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return g(*args)


def piecewise(x):
    if x.sum() > 10:
        y = x * 0.5
    elif x.sum() > 0 and not x.max() > 5:
        y = x + 1.0
    else:
        y = -x
    return y


@pytest.mark.parametrize("scale", [10.0, 1.0, -1.0, 3.0])
def test_autograph_if_elif_else(scale):
    g = tt.function(piecewise)
    x = tnp.arange(1.0, 4.0) * scale
    _eq(_no_fallback(g, x), piecewise(x))


def count_down(n, x):
    i = 0
    total = tnp.zeros_like(x)
    while i < n:
        total = total + x * i
        i += 1
    for k in tt.range(n):
        total = total + k
    for row in x[None]:
        total = total - row
    return total, i


@pytest.mark.parametrize("n", [0, 1, 4])
def test_autograph_while_and_for_loops(n):
    g = tt.function(count_down, jit_compile=True)
    x = tnp.ones(2)
    got, want = g(tnp.asarray(n), x), count_down(tnp.asarray(n), x)
    _eq(got[0], want[0])
    assert int(got[1]) == int(want[1]) == n
    assert g.experimental_get_tracing_count() == 1


def early_return(x):
    if x.sum() > 0:
        return x * 2.0
    x = x - 1.0
    return x


def test_autograph_if_with_return_and_to_code():
    g = tt.function(early_return, jit_compile=True)
    for s in (1.0, -1.0):
        _eq(g(s * tnp.ones(2)), early_return(s * tnp.ones(2)))
    code = tt.autograph.to_code(early_return)
    assert "ag__.if_return" in code
    assert "ag__.if_stmt" in tt.autograph.to_code(piecewise)
    assert "ag__.while_stmt" in tt.autograph.to_code(count_down)


def one_sided(x):
    if x.sum() > 0:
        y = x
    return y


def break_in_with(x):
    while x.sum() < 10:
        x = x + 1.0
        with warnings.catch_warnings():
            if x.sum() > 5:
                break
    return x


def test_autograph_errors_name_the_line():
    # a break inside a with statement is not rewritten (see test_autograph_jumps.py)
    with pytest.raises(TraceError, match="while statement at line .* break"):
        tt.function(break_in_with, jit_compile=True)(tnp.ones(2))
    with pytest.warns(JitFallbackWarning):      # not jit_compile: runs eagerly
        _eq(tt.function(break_in_with)(tnp.ones(2)), [3.0, 3.0])
    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        tt.function(one_sided, jit_compile=True)(tnp.ones(2))


def test_autograph_false_and_do_not_convert_leave_python():
    with pytest.raises(TraceError, match="bool"):
        tt.function(piecewise, autograph=False, jit_compile=True)(tnp.ones(2))
    kept = tt.autograph.experimental.do_not_convert(lambda x: piecewise(x))
    with pytest.raises(TraceError, match="bool"):
        tt.function(kept, jit_compile=True)(tnp.ones(2))


def test_python_conditions_stay_python():
    seen = []

    @tt.function(jit_compile=True)
    def f(x, mode):
        if mode == "double":        # a Python value: a Python if, decided while tracing
            seen.append(mode)
            x = x * 2.0
        for _ in range(2):          # a Python range: unrolled
            x = x + 1.0
        return x

    _eq(f(tnp.ones(1), "double"), [4.0])
    _eq(f(tnp.ones(1), "double"), [4.0])
    _eq(f(tnp.ones(1), "plain"), [3.0])
    assert seen == ["double"]


def test_a_traced_if_then_a_traced_while_compile():
    # two comparisons giving booleans in a row: tnp shares its True/False scalar objects, but
    # not while a trace records, so each traced condition is its own value (it failed to
    # trace: "two operations gave a boolean scalar")
    @tt.function(jit_compile=True)
    def f(x):
        if tnp.sum(x) > 0:
            x = x * 2
        while tnp.sum(x) < 100:
            x = x + 1
        return x

    for v in (1.0, -1.0, 60.0):
        x = np.full(3, v, dtype=np.float32)
        expected = x * 2 if x.sum() > 0 else x.copy()
        while expected.sum() < 100:
            expected = expected + 1
        np.testing.assert_array_equal(np.asarray(f(tnp.asarray(x))), expected)
    assert f.experimental_get_tracing_count() == 1
    # outside a trace the booleans are still NumPy's two shared objects
    assert (tnp.asarray([1, 2]).sum() > 0) is (tnp.asarray([3, 4]).sum() > 0)


def test_two_traced_booleans_alive_at_once_compile():
    # both comparisons' results used after the second was made: with one shared True object
    # they could not be told apart ("which one is used here is unknown": the function ran
    # eagerly); while a trace records, each is an object of its own
    @tt.function(jit_compile=True)
    def g(x, y):
        p = tnp.sum(x) > 0
        q = tnp.sum(y) > 0
        return tnp.where(p, x, -x) + tnp.where(q, y, -y)

    x, y = np.arange(1, 4, dtype=np.float32), -np.ones(3, dtype=np.float32)
    for a, b in ((x, y), (y, x), (x, x), (-x, y)):
        expected = (a if a.sum() > 0 else -a) + (b if b.sum() > 0 else -b)
        np.testing.assert_array_equal(np.asarray(g(tnp.asarray(a), tnp.asarray(b))), expected)
    assert g.experimental_get_tracing_count() == 1
