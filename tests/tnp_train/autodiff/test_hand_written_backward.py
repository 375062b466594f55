"""The one policy for hand-written backward passes (``tape.hand_written_backward``): first order
runs the NumPy backward; a gradient of a gradient runs the op's recorded fallback where it has
one (checked here against finite differences of the first-order gradient), and otherwise
raises NotImplementedError naming the op, never a silently missing term."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads, custom_gradient
from tnp_train.autodiff.tape import hand_written_backward
from tnp_train.ops.conv import conv2d
from tnp_train.ops.dense import dense
from tnp_train.ops.pooling import max_pool2d

A = tt.activations
TOL = dict(eps=1e-6, rtol=1e-5, atol=1e-6)


def _cube(calls, with_recorded=True):
    """y = x ** 3 with a hand-written backward 3 x^2 g; ``calls`` logs which backward ran."""
    @custom_gradient
    def cube(x):
        xa = np.asarray(x)

        def fast(g):
            calls.append("fast")
            return tnp.asarray(3 * xa ** 2 * np.asarray(g))

        def recorded(g):
            calls.append("recorded")
            return 3 * x * x * g
        return x ** 3, hand_written_backward("cube", fast, (x,),
                                             recorded if with_recorded else None)
    return cube


def _second(f, x, outer_watches=True):
    """d/dx of sum(grad(sum(f(x) * u))^2): needs the gradient of the backward pass, with
    respect to the input and, through u * x, to the cotangent."""
    with tt.GradientTape() as outer:
        if outer_watches:
            outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(f(x) * x)
        g = inner.gradient(y, x)
        p = tnp.sum(g * g)
    return outer.gradient(p, x)


def test_first_order_runs_the_hand_written_backward_only():
    calls = []
    x = tnp.asarray([0.5, -2.0])
    with tt.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(_cube(calls)(x))
    np.testing.assert_allclose(np.asarray(t.gradient(y, x)), 3 * np.asarray(x) ** 2)
    assert calls == ["fast"]


def test_an_enclosing_tape_that_follows_neither_input_nor_cotangent_keeps_the_fast_path():
    calls = []
    x = tnp.asarray([0.5, -2.0])
    other = tt.Variable([1.0, 2.0])
    with tt.GradientTape() as outer:
        z = tnp.sum(other * other)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(_cube(calls)(x))
        g = inner.gradient(y, x)
    assert calls == ["fast"]
    np.testing.assert_allclose(np.asarray(g), 3 * np.asarray(x) ** 2)
    np.testing.assert_allclose(np.asarray(outer.gradient(z, other)), [2.0, 4.0])


def test_a_gradient_of_a_gradient_runs_the_recorded_fallback():
    calls = []
    xv = np.array([0.5, -2.0, 1.5])
    got = _second(_cube(calls), tnp.asarray(xv))
    # p = sum((d/dx sum(x^4))^2) = sum(16 x^6), dp/dx = 96 x^5 (hand-derived)
    np.testing.assert_allclose(np.asarray(got), 96 * xv ** 5, rtol=1e-12)
    # the inner backward is differentiated (recorded); the outer tape's own pass through cube's
    # forward is first order (fast)
    assert calls == ["recorded", "fast"]


def test_without_a_fallback_a_gradient_of_a_gradient_names_the_op():
    calls = []
    x = tnp.asarray([0.5, -2.0])
    with pytest.raises(NotImplementedError, match="cube: gradients of gradients"):
        _second(_cube(calls, with_recorded=False), x)
    assert calls == ["fast"]


def test_without_a_fallback_an_outer_tape_that_asks_nothing_through_it_works():
    x = tnp.asarray([0.5, -2.0])
    w = tt.Variable([3.0, 4.0])
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(_cube([], with_recorded=False)(x))
        g = inner.gradient(y, x)                   # recorded on outer, with a refusing rule
        z = tnp.sum(w * x)                         # outer differentiates only this
    gw, gx = outer.gradient(z, [w, x])
    np.testing.assert_allclose(np.asarray(gw), [0.5, -2.0])
    np.testing.assert_allclose(np.asarray(gx), [3.0, 4.0])
    np.testing.assert_allclose(np.asarray(g), [0.75, 12.0])


def _grad_norm(f):
    """``sum of squares of every first gradient of sum(f(*args)**2 * u)``: its gradient needs
    every second derivative of ``f``, mixed ones and those through the cotangent included."""
    def h(*args):
        with tt.GradientTape() as t:
            t.watch(list(args))
            y = f(*args)
            u = tnp.asarray(np.linspace(0.5, 1.5, y.size).reshape(y.shape))
            target = tnp.sum(y * y * u)
        total = 0.0
        for g in t.gradient(target, list(args)):
            if g is not None:
                total = total + tnp.sum(g * g)
        return total
    return h


rng = np.random.default_rng(0)
X = tnp.asarray(rng.standard_normal((3, 4)))
K = tnp.asarray(rng.standard_normal((4, 2)))
B = tnp.asarray(rng.standard_normal(2))
ONE_HOT = tnp.asarray(np.eye(4)[[0, 2, 1]])
CASES = {
    "dense": (lambda x, k, b: dense(x, k, b), (X, K, B)),
    "dense_relu": (lambda x, k, b: dense(x, k, b, relu=True), (X, K, B)),
    "gelu": (A.gelu, (X,)),
    "softmax": (A.softmax, (X,)),
    "log_softmax": (A.log_softmax, (X,)),
    "crossentropy": (lambda z: tt.losses.categorical_crossentropy(ONE_HOT, z, from_logits=True),
                     (X,)),
    "sparse_crossentropy": (lambda z: tt.losses.sparse_categorical_crossentropy(
        tnp.asarray([0, 2, 1]), z, from_logits=True), (X,)),
    "conv2d": (lambda x, k: conv2d(x, k, padding="same"),
               (tnp.asarray(rng.standard_normal((1, 4, 4, 2))),
                tnp.asarray(rng.standard_normal((3, 3, 2, 2))))),
    "max_pool2d": (lambda x: max_pool2d(x * x, 2), (tnp.asarray(rng.standard_normal((1, 4, 4, 2))),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_fallbacks_match_finite_differences_of_the_first_order_gradient(name):
    f, args = CASES[name]
    check_grads(f, order=2, **TOL)(*args)
    check_grads(_grad_norm(f), order=1, **TOL)(*args)
