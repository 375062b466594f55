"""A CNN trained 20 steps with tt gives the losses of a hand-written NumPy CNN (im2col conv,
max pooling, dense, softmax cross-entropy, SGD with momentum) from the same weights."""
import numpy as np
import pytest

import tnp_train as tt


def conv_same(x, K, b):
    B, H, W, C = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.concatenate([xp[:, i:i + H, j:j + W, :] for i in range(3) for j in range(3)], -1)
    cols = cols.reshape(B * H * W, 9 * C)
    return (cols @ K.reshape(9 * C, -1) + b).reshape(B, H, W, -1), cols


def conv_same_back(d, cols, K, xshape):
    B, H, W, C = xshape
    F = d.shape[-1]
    d2 = d.reshape(-1, F)
    dK = (cols.T @ d2).reshape(K.shape)
    dcols = (d2 @ K.reshape(9 * C, F).T).reshape(B, H, W, 9, C)
    dxp = np.zeros((B, H + 2, W + 2, C), d.dtype)
    for k in range(9):
        i, j = divmod(k, 3)
        dxp[:, i:i + H, j:j + W, :] += dcols[:, :, :, k, :]
    return dxp[:, 1:H + 1, 1:W + 1, :], dK, d2.sum(0)


def pool(x):
    B, H, W, C = x.shape
    r = x.reshape(B, H // 2, 2, W // 2, 2, C)
    return r.max(axis=(2, 4)), r


def pool_back(d, r, out):
    B, h, w, C = d.shape
    # the first maximum of each window takes the gradient (ties do not occur with random data)
    mask = r == out[:, :, None, :, None, :]
    return (mask * d[:, :, None, :, None, :]).reshape(B, 2 * h, 2 * w, C)


def numpy_cnn_losses(params, X, Y, steps, lr, mu):
    p = [a.copy() for a in params]
    v = [np.zeros_like(a) for a in p]
    out = []
    for _ in range(steps):
        K1, c1, K2, c2, Wd, bd = p
        z1, cols1 = conv_same(X, K1, c1)
        h1 = np.maximum(z1, 0)
        p1, r1 = pool(h1)
        z2, cols2 = conv_same(p1, K2, c2)
        h2 = np.maximum(z2, 0)
        p2, r2 = pool(h2)
        f = p2.reshape(len(X), -1)
        logits = f @ Wd + bd
        m = logits.max(1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(1, keepdims=True)
        out.append(float(np.mean(np.log(s[:, 0]) + m[:, 0] - logits[np.arange(len(Y)), Y])))
        g = e / s
        g[np.arange(len(Y)), Y] -= 1
        g /= len(Y)
        gWd, gbd = f.T @ g, g.sum(0)
        dp2 = (g @ Wd.T).reshape(p2.shape)
        dz2 = pool_back(dp2, r2, p2) * (z2 > 0)
        dp1, gK2, gc2 = conv_same_back(dz2, cols2, K2, p1.shape)
        dz1 = pool_back(dp1, r1, p1) * (z1 > 0)
        _, gK1, gc1 = conv_same_back(dz1, cols1, K1, X.shape)
        for i, gr in enumerate([gK1, gc1, gK2, gc2, gWd, gbd]):
            v[i] = mu * v[i] - lr * gr
            p[i] = p[i] + v[i]
    return out


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-10), ("float32", 1e-5)])
def test_cnn_fit_matches_numpy_for_20_steps(dtype, rtol):
    r = np.random.default_rng(0)
    hw, cin, c1, c2, k, B = 8, 2, 4, 6, 5, 16

    def glorot(shape, fi, fo):
        s = np.sqrt(6.0 / (fi + fo))
        return r.uniform(-s, s, shape).astype(dtype)

    flat = (hw // 4) ** 2 * c2
    params = [glorot((3, 3, cin, c1), 9 * cin, 9 * c1), r.uniform(-.1, .1, c1).astype(dtype),
              glorot((3, 3, c1, c2), 9 * c1, 9 * c2), r.uniform(-.1, .1, c2).astype(dtype),
              glorot((flat, k), flat, k), r.uniform(-.1, .1, k).astype(dtype)]
    X = r.random((B, hw, hw, cin)).astype(dtype)
    Y = r.integers(0, k, B)
    L = tt.layers
    model = tt.Sequential([tt.Input((hw, hw, cin), dtype=dtype),
                           L.Conv2D(c1, 3, padding="same", activation="relu", dtype=dtype), L.MaxPooling2D(dtype=dtype),
                           L.Conv2D(c2, 3, padding="same", activation="relu", dtype=dtype), L.MaxPooling2D(dtype=dtype),
                           L.Flatten(dtype=dtype), L.Dense(k, dtype=dtype)])
    model.set_weights(params)
    model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                  tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(X, Y, batch_size=B, epochs=20, shuffle=False, verbose=0)
    ref = numpy_cnn_losses(params, X, Y, 20, 0.05, 0.9)
    np.testing.assert_allclose(hist.history["loss"], ref, rtol=rtol)
    assert ref[-1] < ref[0]
