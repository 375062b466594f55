"""A GradientTape through compiled tt.cond / tt.switch_case / tt.while_loop / tt.map_fn: the
compiled gradients against the eager tape's and against central differences (float64), every
branch and several iteration counts, and a compiled train step that holds them."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import JitFallbackWarning

W0 = np.array([0.7, -1.3, 0.4])


def _compiled(f):
    """f as tt.function(jit_compile=True): compiled or an error, never silently eager."""
    return tt.function(f, jit_compile=True)


def _flag(x, test):
    """``test(x)`` as a 0-d boolean array, not a scalar: tnp answers every boolean scalar with
    one of two shared objects, which the tracer refuses to tell apart when two operations give
    the same one."""
    return tnp.reshape(test(tnp.reshape(x, (1,))), ())


def _numeric(loss, w, eps=1e-6):
    """Central differences of ``loss(w)`` (NumPy in, float out)."""
    g = np.zeros_like(w)
    for k in range(w.size):
        d = np.zeros_like(w)
        d[k] = eps
        g[k] = (loss(w + d) - loss(w - d)) / (2 * eps)
    return g


def _check(step, args, w, loss_np, eager_none=False):
    """``step(*args)`` -> (loss, grads of w and x): compiled equals eager (to rounding), and
    the gradient of w equals central differences of ``loss_np``."""
    c = _compiled(step)
    lc, gc = c(*args)
    le, ge = step(*args)
    np.testing.assert_allclose(np.asarray(lc), np.asarray(le), rtol=1e-12)
    for a, b in zip(gc, ge):
        if b is None:           # eagerly unconnected (no operation ran); compiled: zeros, as TF
            assert eager_none
            np.testing.assert_array_equal(np.asarray(a), 0.0)
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(np.asarray(gc[0]), _numeric(loss_np, np.asarray(w.numpy())),
                               rtol=1e-6, atol=1e-8)
    return c


# ----------------------------------------------------------------------------- cond
@pytest.mark.parametrize("p", [1.0, -1.0])
def test_cond_gradient_is_the_taken_branchs(p):
    w = tt.Variable(W0.copy())
    x0 = np.array([0.3, 0.5, -0.2])

    def step(x, p):
        with tt.GradientTape() as tape:
            tape.watch(x)
            y = tt.cond(p > 0, lambda: tnp.sum(tnp.sin(x * w) * w),
                        lambda: tnp.sum(tnp.exp(x * w)) + tnp.sum(x))
        return y, tape.gradient(y, [w, x])

    def loss(wv):
        return np.sum(np.sin(x0 * wv) * wv) if p > 0 else np.sum(np.exp(x0 * wv)) + x0.sum()

    c = _check(step, (tnp.asarray(x0), tnp.asarray(p)), w, loss)
    assert c.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("i", [0, 1, 2, 7])
def test_switch_case_gradient_each_branch_and_default(i):
    w = tt.Variable(W0.copy())
    fns = [lambda: tnp.sum(w * w), lambda: tnp.sum(tnp.tanh(w)) * 3.0,
           lambda: tnp.sum(w ** 3)]
    refs = [lambda v: np.sum(v * v), lambda v: np.sum(np.tanh(v)) * 3.0,
            lambda v: np.sum(v ** 3)]

    def step(i):
        with tt.GradientTape() as tape:
            y = tt.switch_case(i, fns)
        return y, tape.gradient(y, [w])

    _check(step, (tnp.asarray(i),), w, refs[min(i, 2)])


def test_cond_returning_an_outer_value_and_an_integer():
    w = tt.Variable(W0.copy())

    def step(p):
        with tt.GradientTape() as tape:
            a, k = tt.cond(p, lambda: (w, tnp.asarray(1)), lambda: (w * 2.0, tnp.asarray(2)))
            y = tnp.sum(a * a) * k
        return y, tape.gradient(y, [w])

    for p in (True, False):
        m = 1.0 if p else 2.0
        _check(step, (tnp.asarray(p),), w, lambda v: np.sum((v * m) ** 2) * m)


# ----------------------------------------------------------------------------- while_loop
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_while_loop_gradient_through_every_iteration(n):
    w = tt.Variable(W0.copy())
    x0 = np.array([0.3, 0.5, -0.2])

    def step(x, n):
        with tt.GradientTape() as tape:
            tape.watch(x)
            _, y = tt.while_loop(lambda i, y: i < n,
                                 lambda i, y: (i + 1, tnp.sin(y * w) + x),
                                 (tnp.asarray(0), x))
            loss = tnp.sum(y * y)
        return loss, tape.gradient(loss, [w, x])

    def loss(wv):
        y = x0
        for _ in range(n):
            y = np.sin(y * wv) + x0
        return np.sum(y * y)

    _check(step, (tnp.asarray(x0), tnp.asarray(n)), w, loss, eager_none=(n == 0))


def test_while_loop_maximum_iterations_and_a_loop_var_the_body_keeps():
    w = tt.Variable(W0.copy())

    def step(limit):
        with tt.GradientTape() as tape:
            _, a, b = tt.while_loop(lambda i, a, b: i < 10,
                                    lambda i, a, b: (i + 1, a * w, b),
                                    (tnp.asarray(0), tnp.ones(3), w * 1.0),
                                    maximum_iterations=limit)
            loss = tnp.sum(a) + tnp.sum(b * b)
        return loss, tape.gradient(loss, [w])

    _check(step, (tnp.asarray(3),), w, lambda v: np.sum(v ** 3) + np.sum(v * v))


def test_while_loop_forward_runs_once_per_iteration_and_backward_keeps_a_stack():
    # random draws in the body: the backward reads the forward's draws, not new ones
    w = tt.Variable(W0.copy())
    seen = []

    def step(n):
        with tt.GradientTape() as tape:
            def body(i, y):
                d = tnp.random.uniform(size=3)
                return i + 1, y * w * d
            _, y = tt.while_loop(lambda i, y: i < n, body, (tnp.asarray(0), tnp.ones(3)))
            loss = tnp.sum(y)
        return y, tape.gradient(loss, [w])

    c = _compiled(step)
    for n in (1, 3):
        y, (g,) = c(tnp.asarray(n))
        y, g = np.asarray(y), np.asarray(g)
        # y = prod(w * d_k) = w^n * D, so dy/dw = n * y / w, whatever the draws were
        np.testing.assert_allclose(g, n * y / W0, rtol=1e-10)
        seen.append(y)
    assert c.experimental_get_tracing_count() == 1


def test_cond_inside_a_while_body():
    w = tt.Variable(W0.copy())

    def step(n):
        with tt.GradientTape() as tape:
            def body(i, y):
                return i + 1, tt.cond(_flag(i, lambda j: j % 2 == 0), lambda: y * w, lambda: tnp.sin(y) + w)
            _, y = tt.while_loop(lambda i, y: i < n, body, (tnp.asarray(0), tnp.ones(3)))
            loss = tnp.sum(y * y)
        return loss, tape.gradient(loss, [w])

    def loss(v):
        y = np.ones(3)
        for i in range(4):
            y = y * v if i % 2 == 0 else np.sin(y) + v
        return np.sum(y * y)

    _check(step, (tnp.asarray(4),), w, loss)


# ----------------------------------------------------------------------------- map_fn
def test_map_fn_gradient():
    w = tt.Variable(W0.copy())
    x0 = np.arange(6.0).reshape(2, 3) / 5

    def step(x):
        with tt.GradientTape() as tape:
            y = tt.map_fn(lambda r: tnp.tanh(r * w), x)
            loss = tnp.sum(y ** 2)
        return loss, tape.gradient(loss, [w])

    _check(step, (tnp.asarray(x0),), w, lambda v: np.sum(np.tanh(x0 * v) ** 2))


# ----------------------------------------------------------------------------- a train step
def test_a_compiled_train_step_with_cond_and_while_matches_eager():
    def make(weights=None):
        layer = tt.layers.Dense(3)
        layer.build((None, 4))
        if weights is not None:
            layer.set_weights(weights)
        return layer, tt.optimizers.SGD(0.1)

    def train(layer, opt):
        def step(x, n):
            with tt.GradientTape() as tape:
                h = layer(x)
                h = tt.cond(_flag(tnp.sum(h), lambda s: s > 0), lambda: tnp.tanh(h), lambda: h * 0.5)
                _, h = tt.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, tnp.sin(h)),
                                     (tnp.asarray(0), h))
                loss = tnp.mean(h * h)
            grads = tape.gradient(loss, layer.trainable_variables)
            opt.apply_gradients(zip(grads, layer.trainable_variables))
            return loss
        return step

    rng = np.random.default_rng(1)
    xs = [tnp.asarray(rng.normal(size=(5, 4)).astype(np.float32)) for _ in range(6)]
    le, oe = make()
    lc, oc = make(le.get_weights())
    eager, compiled = train(le, oe), _compiled(train(lc, oc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        for k, x in enumerate(xs):
            n = tnp.asarray(k % 3)
            np.testing.assert_allclose(np.asarray(compiled(x, n)), np.asarray(eager(x, n)),
                                       rtol=1e-5)
    for a, b in zip(lc.get_weights(), le.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------- AutoGraph
def _autograph_step(x, n):
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x
        i = 0
        while i < n:                # a traced loop
            y = tnp.sin(y) * x
            i = i + 1
        if tnp.sum(y) > 0.0:        # a traced if
            z = y * y
        else:
            z = -y
        loss = tnp.sum(z)
    return loss, tape.gradient(loss, [x])


@pytest.mark.parametrize("x0, n", [([0.4, 0.9], 3), ([-0.4, -0.9], 1), ([0.4, 0.9], 0)])
def test_autograph_converted_if_and_while_are_differentiated(x0, n):
    x0 = np.array(x0)
    c = _compiled(_autograph_step)
    lc, (gc,) = c(tnp.asarray(x0), tnp.asarray(n))
    le, (ge,) = _autograph_step(tnp.asarray(x0), n)
    np.testing.assert_allclose(np.asarray(lc), np.asarray(le), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gc), np.asarray(ge), rtol=1e-10)


# ----------------------------------------------------------------------------- primitives inside
@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("n", [0, 2])
def test_primitives_inside_branches_and_bodies_give_the_eager_bits(p, n):
    # a convolution (one forward and one backward primitive) in each branch and in the body:
    # its caches are exported with the branch's and each iteration's values
    conv = tt.layers.Conv2D(2, 3, padding="same")
    x = tnp.asarray(np.random.default_rng(0).normal(size=(2, 5, 5, 1)).astype(np.float32))
    conv(x)

    def step(x, p, n):
        with tt.GradientTape() as tape:
            y = tt.cond(p, lambda: conv(x) * 2.0, lambda: tnp.tanh(conv(x)))
            _, z = tt.while_loop(lambda i, z: i < n,
                                 lambda i, z: (i + 1, conv(tnp.tanh(z))[..., :1]),
                                 (tnp.asarray(0), y[..., :1]))
            loss = tnp.sum(z * z)
        return loss, tape.gradient(loss, conv.trainable_variables)

    got = _compiled(step)(x, tnp.asarray(p), tnp.asarray(n))
    want = step(x, tnp.asarray(p), tnp.asarray(n))
    assert np.asarray(got[0]).tobytes() == np.asarray(want[0]).tobytes()
    for a, b in zip(got[1], want[1]):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
