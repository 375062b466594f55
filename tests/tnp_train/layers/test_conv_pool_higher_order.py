"""Gradients of gradients through the convolution and pooling ops (tnp_train.ops.conv /
.pooling): when a tape records during their backward pass, the backward is recorded tnp code.
Checked against finite differences in float64: ``check_grads(order=2)``, mixed second
derivatives (the gradient of a norm of all first gradients), a Hessian through
``tape.jacobian``, and a WGAN-GP style gradient penalty of a small CNN."""
import contextlib

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from tnp_train.ops import conv as conv_ops
from tnp_train.ops import pooling as pool_ops

TOL = dict(eps=1e-6, rtol=1e-5, atol=1e-6)


@contextlib.contextmanager
def numba_path(on):
    saved = conv_ops.USE_NUMBA
    conv_ops.USE_NUMBA = on and conv_ops.HAVE_NUMBA
    try:
        yield
    finally:
        conv_ops.USE_NUMBA = saved


def _arr(rng, shape):
    return tnp.asarray(rng.standard_normal(shape))


def _grad_norm(f):
    """``sum of squares of every first gradient of sum(f(*args)**2 * u)``: its gradient needs
    all the second derivatives of ``f`` (mixed ones included)."""
    def h(*args):
        with tt.GradientTape() as t:
            t.watch(list(args))
            y = f(*args)
            target = tnp.sum(y * y * tnp.asarray(np.linspace(0.5, 1.5, y.size).reshape(y.shape)))
        gs = t.gradient(target, list(args))
        total = 0.0
        for g in gs:
            if g is not None:
                total = total + tnp.sum(g * g)
        return total
    return h


def _check_second_order(f, *args):
    check_grads(f, order=2, **TOL)(*args)
    check_grads(_grad_norm(f), order=1, **TOL)(*args)


CONV2D = [
    (dict(strides=(2, 2), padding="same"), (2, 5, 5, 2), (3, 3, 2, 3), True),
    (dict(strides=(2, 1), padding="valid", activation="relu"), (2, 6, 5, 2), (3, 2, 2, 3), True),
    (dict(padding="same", dilation_rate=(2, 2)), (1, 6, 6, 2), (3, 3, 2, 2), False),
    (dict(padding="valid", dilation_rate=(2, 1), activation="relu"), (2, 6, 4, 2), (2, 2, 2, 3), False),
    (dict(padding="same", groups=2, activation="relu"), (2, 4, 4, 4), (3, 3, 2, 4), True),
    (dict(strides=(2, 2), padding="valid", groups=2), (1, 5, 5, 4), (2, 2, 2, 6), False),
]


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "array-module"])
@pytest.mark.parametrize("kw,xs,ks,bias", CONV2D)
def test_conv2d_second_order(kw, xs, ks, bias, numba):
    rng = np.random.default_rng(0)
    args = [_arr(rng, xs), _arr(rng, ks)] + ([_arr(rng, (ks[-1],))] if bias else [])

    def f(x, k, *b):
        return conv_ops.conv2d(x, k, *b, **kw)
    with numba_path(numba):
        _check_second_order(f, *args)


@pytest.mark.parametrize("kw,xs,ks,bias", [
    (dict(strides=2, padding="same", groups=2, activation="relu"), (2, 7, 4), (3, 2, 4), True),
    (dict(padding="causal", dilation_rate=2), (2, 7, 2), (3, 2, 3), False),
    (dict(padding="valid"), (1, 6, 3), (2, 3, 2), True),
])
def test_conv1d_second_order(kw, xs, ks, bias):
    rng = np.random.default_rng(1)
    args = [_arr(rng, xs), _arr(rng, ks)] + ([_arr(rng, (ks[-1],))] if bias else [])
    with numba_path(False):
        _check_second_order(lambda x, k, *b: conv_ops.conv1d(x, k, *b, **kw), *args)


def test_conv2d_winograd_second_order():
    rng = np.random.default_rng(2)
    x = _arr(rng, (1, 4, 4, conv_ops.WINOGRAD_MIN_CHANNELS))
    k = _arr(rng, (3, 3, conv_ops.WINOGRAD_MIN_CHANNELS, 8)) * 0.2
    b = _arr(rng, (8,))
    assert conv_ops.USE_WINOGRAD and conv_ops._winograd_ok(np.asarray(x), 3, 3, 1, 1, 1, 1, 1,
                                                           x.shape[-1], 8, 2)
    _check_second_order(lambda x, k, b: conv_ops.conv2d(x, k, b, padding="same",
                                                        activation="relu"), x, k, b)


@pytest.mark.parametrize("op,kw,xs,ks,bias", [
    (conv_ops.conv2d_transpose, dict(strides=(2, 2), padding="same", output_shape=(6, 5)),
     (2, 3, 3, 2), (3, 3, 3, 2), True),
    (conv_ops.conv2d_transpose, dict(strides=(3, 2), padding="valid", activation="relu"),
     (1, 3, 2, 2), (2, 3, 2, 2), False),
    (conv_ops.conv2d_transpose, dict(padding="same", dilation_rate=(2, 1)), (1, 3, 3, 2),
     (2, 2, 2, 2), True),
    (conv_ops.conv1d_transpose, dict(strides=2, padding="same"), (2, 4, 3), (3, 2, 3), True),
])
def test_conv_transpose_second_order(op, kw, xs, ks, bias):
    rng = np.random.default_rng(3)
    args = [_arr(rng, xs), _arr(rng, ks)] + ([_arr(rng, (ks[-2],))] if bias else [])
    with numba_path(False):
        _check_second_order(lambda x, k, *b: op(x, k, *b, **kw), *args)


POOLS = [
    (pool_ops.max_pool2d, dict(pool_size=2, padding="valid"), (2, 4, 4, 2)),        # tiled
    (pool_ops.max_pool2d, dict(pool_size=(3, 2), strides=(2, 1), padding="same"), (2, 5, 4, 2)),
    (pool_ops.max_pool1d, dict(pool_size=3, strides=2, padding="same"), (2, 7, 3)),
    (pool_ops.avg_pool2d, dict(pool_size=(2, 3), strides=(1, 2), padding="same"), (2, 4, 5, 2)),
    (pool_ops.avg_pool2d, dict(pool_size=2, padding="valid"), (1, 5, 5, 3)),
    (pool_ops.avg_pool1d, dict(pool_size=3, strides=2, padding="same"), (2, 6, 2)),
]


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "array-module"])
@pytest.mark.parametrize("op,kw,xs", POOLS)
def test_pool_second_order(op, kw, xs, numba):
    rng = np.random.default_rng(4)
    x = _arr(rng, xs)
    with numba_path(numba):
        # sum(pool(x)**3): the gradient 3 y**2 routed back depends on x, so the second
        # derivative of a max pool is not zero (the routing itself is piecewise constant)
        _check_second_order(lambda x: op(x, **kw) ** 3, x)


def test_third_order_through_conv_and_pool():
    rng = np.random.default_rng(5)
    x, k = _arr(rng, (1, 5, 5, 2)), _arr(rng, (2, 2, 2, 2))

    def f(x, k):
        return pool_ops.avg_pool2d(conv_ops.conv2d(x, k, padding="same") ** 2, 2, 1, "valid")
    with numba_path(False):
        check_grads(f, order=3, **TOL)(x, k)


def test_jacobian_of_input_gradient_is_the_hessian():
    rng = np.random.default_rng(6)
    x0 = rng.standard_normal((1, 3, 3, 2))
    k = tnp.asarray(rng.standard_normal((2, 2, 2, 2)))
    b = tnp.asarray(rng.standard_normal(2))

    def input_grad(xv):
        x = tnp.asarray(xv)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(tnp.tanh(conv_ops.conv2d(x, k, b, strides=(1, 2), padding="same")))
        return inner.gradient(y, x)

    x = tnp.asarray(x0)
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(tnp.tanh(conv_ops.conv2d(x, k, b, strides=(1, 2), padding="same")))
        gx = inner.gradient(y, x)
    hess = np.asarray(outer.jacobian(gx, x)).reshape(x0.size, x0.size)
    eps = 1e-6
    fd = np.empty_like(hess)
    for j in range(x0.size):
        e = np.zeros(x0.size)
        e[j] = eps
        e = e.reshape(x0.shape)
        fd[:, j] = (np.asarray(input_grad(x0 + e)) - np.asarray(input_grad(x0 - e))).ravel() / (2 * eps)
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-9, atol=1e-12)


def _gp_model():
    tt.utils.set_random_seed(7)
    return tt.Sequential([
        tt.Input((6, 6, 2)),
        tt.layers.Conv2D(3, 3, padding="same", activation="relu", dtype="float64"),
        tt.layers.MaxPooling2D(2, dtype="float64"),
        tt.layers.Conv2D(2, 2, strides=1, padding="valid", activation="tanh", dtype="float64"),
        tt.layers.Flatten(dtype="float64"),
        tt.layers.Dense(1, dtype="float64"),
    ])


def _penalty(model, x):
    with tt.GradientTape() as inner:
        inner.watch(x)
        y = tnp.sum(model(x) ** 2)
    gx = inner.gradient(y, x)
    return tnp.sum(gx ** 2)


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "array-module"])
def test_gradient_penalty_of_a_cnn(numba):
    model = _gp_model()
    x = tnp.asarray(np.random.default_rng(8).standard_normal((2, 6, 6, 2)))
    with numba_path(numba):
        with tt.GradientTape() as outer:
            penalty = _penalty(model, x)
        grads = outer.gradient(penalty, model.trainable_variables)
        assert all(g is not None for g in grads)
        eps = 1e-6
        rng = np.random.default_rng(9)
        # one weight of the first kernel, then a random direction through all the weights
        k0 = model.trainable_variables[0]
        saved = k0.numpy().copy()
        e = np.zeros_like(saved)
        e[1, 2, 0, 1] = eps
        k0.assign(saved + e)
        hi = float(_penalty(model, x))
        k0.assign(saved - e)
        lo = float(_penalty(model, x))
        k0.assign(saved)
        np.testing.assert_allclose(float(np.asarray(grads[0])[1, 2, 0, 1]), (hi - lo) / (2 * eps),
                                   rtol=1e-5, atol=1e-7)
        vs = [rng.standard_normal(tuple(v.shape)) for v in model.trainable_variables]
        saved = [v.numpy().copy() for v in model.trainable_variables]

        def at(sign):
            for v, s, d in zip(model.trainable_variables, saved, vs):
                v.assign(s + sign * eps * d)
            return float(_penalty(model, x))
        fd = (at(1) - at(-1)) / (2 * eps)
        for v, s in zip(model.trainable_variables, saved):
            v.assign(s)
        analytic = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, vs))
        np.testing.assert_allclose(analytic, fd, rtol=1e-5, atol=1e-7)


def test_first_order_keeps_the_fast_path(monkeypatch):
    """With no tape recording during the backward (or one that follows nothing of the op),
    the recorded formulas are never used."""
    def boom(*a, **k):
        raise AssertionError("the recorded backward was used for a first-order gradient")
    monkeypatch.setattr(conv_ops, "_conv_grads_recorded", boom)
    monkeypatch.setattr(conv_ops, "_conv_t_grads_recorded", boom)
    monkeypatch.setattr(pool_ops, "_pool_grad_recorded", boom)
    rng = np.random.default_rng(10)
    x, k, kt = _arr(rng, (1, 4, 4, 2)), _arr(rng, (2, 2, 2, 2)), _arr(rng, (2, 2, 2, 2))
    other = tnp.asarray(rng.standard_normal(3))
    for numba in (True, False):
        with numba_path(numba), tt.GradientTape() as outer:   # records during the backward,
            outer.watch(other)                                # but follows only `other`
            with tt.GradientTape() as tape:
                tape.watch([x, k, kt])
                y = pool_ops.max_pool2d(conv_ops.conv2d(x, k, padding="same"), 2)
                y = pool_ops.avg_pool2d(conv_ops.conv2d_transpose(y, kt, strides=(2, 2)), 2)
                loss = tnp.sum(y ** 2)
            gx, gk, gkt = tape.gradient(loss, [x, k, kt])
            z = tnp.sum(other ** 2)
        assert gx.shape == x.shape and gk.shape == k.shape and gkt.shape == kt.shape
        assert outer.gradient(z, other) is not None
        with numba_path(numba), tt.GradientTape() as tape:     # no enclosing tape at all
            tape.watch([x, k, kt])
            y = pool_ops.max_pool2d(conv_ops.conv2d(x, k, padding="same"), 2)
            y = pool_ops.avg_pool2d(conv_ops.conv2d_transpose(y, kt, strides=(2, 2)), 2)
            loss = tnp.sum(y ** 2)
        assert all(g is not None for g in tape.gradient(loss, [x, k, kt]))
