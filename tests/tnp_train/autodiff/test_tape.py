"""GradientTape behaviour, checked against hand-written NumPy gradients and finite differences."""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff.check import check_grads


def rand(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def test_dense_tanh_gradient_matches_numpy():
    x = rand(32, 8)
    w = tt.Variable(rand(8, 4, seed=1), name="w")
    with tt.GradientTape() as tape:
        y = tnp.tanh(x @ w)
        loss = tnp.mean(tnp.sum(y ** 2, axis=1))
    dw = tape.gradient(loss, w)
    X, W = np.asarray(x), w.numpy()
    Y = np.tanh(X @ W)
    expected = X.T @ ((2 * Y / 32) * (1 - Y ** 2))
    np.testing.assert_allclose(np.asarray(dw), expected, rtol=1e-12)
    assert type(dw) is tnp.ndarray and dw.dtype == w.dtype


def test_tf_numpy_guide_snippet_sum_after_the_block():
    def grad(x, wt):
        with tt.GradientTape() as tape:
            tape.watch(wt)
            output = tnp.dot(x, wt)
            output = 1 / (1 + tnp.exp(-output))
        return tape.gradient(tnp.sum(output), wt)

    x = rand(5, 3)
    wt = rand(3, 2, seed=1)
    X, W = np.asarray(x), np.asarray(wt)
    s = 1 / (1 + np.exp(-(X @ W)))
    np.testing.assert_allclose(np.asarray(grad(x, wt)), X.T @ (s * (1 - s)), rtol=1e-12)


def test_numpy_functions_on_tnp_arrays_are_recorded():
    x = rand(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sin(x) * x)          # numpy's functions dispatch to tnp
    g = tape.gradient(y, x)
    X = np.asarray(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(X) * X + np.sin(X), rtol=1e-12)


def test_second_gradient_call_on_non_persistent_tape_raises():
    x = rand(3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(x * x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_persistent_tape_gives_several_gradients():
    x = rand(3)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tnp.sum(x * x)
        z = tnp.sum(tnp.exp(x))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 2 * np.asarray(x))
    np.testing.assert_allclose(np.asarray(tape.gradient(z, x)), np.exp(np.asarray(x)))


def test_sources_structure_and_unconnected_gradients():
    a, b, c = rand(2), rand(2, seed=1), rand(2, seed=2)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch([a, b, c])
        y = tnp.sum(a * b)
    g = tape.gradient(y, {"a": a, "rest": [b, (c,)]})
    assert set(g) == {"a", "rest"}
    np.testing.assert_allclose(np.asarray(g["a"]), np.asarray(b))
    np.testing.assert_allclose(np.asarray(g["rest"][0]), np.asarray(a))
    assert g["rest"][1][0] is None
    gz = tape.gradient(y, c, unconnected_gradients="zero")
    np.testing.assert_array_equal(np.asarray(gz), np.zeros(2))
    with pytest.raises(ValueError):
        tape.gradient(y, c, unconnected_gradients="bogus")


def test_output_gradients_and_several_targets():
    x = rand(3)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y1 = x * 2.0
        y2 = x * x
    og = rand(3, seed=5)
    g = tape.gradient(y1, x, output_gradients=og)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(og))
    g2 = tape.gradient([y1, y2], x)  # gradient of the sum of the targets
    np.testing.assert_allclose(np.asarray(g2), 2 + 2 * np.asarray(x))


def test_integer_and_boolean_sources_get_none():
    i = tnp.arange(3)
    f = rand(3)
    with tt.GradientTape() as tape:
        tape.watch([i, f])
        y = tnp.sum(f * i)
    gi, gf = tape.gradient(y, [i, f])
    assert gi is None
    np.testing.assert_allclose(np.asarray(gf), np.arange(3.0))


def test_watch_accessed_variables_and_watched_variables():
    v1 = tt.Variable(rand(2), name="v1")
    v2 = tt.Variable(rand(2, seed=1), name="v2", trainable=False)
    with tt.GradientTape() as tape:
        y = tnp.sum(v1 * v2)
    assert tape.watched_variables() == (v1,)
    g1, g2 = tape.gradient(y, [v1, v2])
    np.testing.assert_allclose(np.asarray(g1), v2.numpy())
    assert g2 is None
    with tt.GradientTape(watch_accessed_variables=False) as tape:
        y = tnp.sum(v1 * v1)
    assert tape.watched_variables() == ()
    assert tape.gradient(y, v1) is None


def test_stop_recording_and_reset():
    x = rand(3)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = y * 3.0             # not recorded: z is not connected
        w = tnp.sum(y)
    assert tape.gradient(z, x) is None
    np.testing.assert_allclose(np.asarray(tape.gradient(w, x)), 2 * np.asarray(x))
    tape.reset()
    assert tape.gradient(w, x) is None


def test_nested_tapes_give_second_derivatives():
    x = tnp.asarray(0.7)
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sin(x) * x ** 2
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    X = 0.7
    assert float(dy) == pytest.approx(np.cos(X) * X ** 2 + 2 * X * np.sin(X), rel=1e-12)
    assert float(d2y) == pytest.approx(-np.sin(X) * X ** 2 + 4 * X * np.cos(X) + 2 * np.sin(X),
                                       rel=1e-12)


def test_check_grads_order_two_through_a_small_network():
    check_grads(lambda a, b: tnp.tanh(a @ b) * a[:, :1] + tnp.exp(-b[0]), order=2)(
        rand(3, 4), rand(4, 2, seed=1))


def test_jacobian_matches_finite_differences():
    x = rand(3)
    A = rand(2, 3, seed=3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.tanh(A @ x)
    J = tape.jacobian(y, x)
    X, AA = np.asarray(x), np.asarray(A)
    expected = (1 - np.tanh(AA @ X) ** 2)[:, None] * AA
    assert J.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(J), expected, rtol=1e-12)


def test_batch_jacobian_is_per_example():
    x = rand(4, 3)
    W = rand(3, 2, seed=1)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sin(x @ W)
    J = tape.batch_jacobian(y, x)
    assert J.shape == (4, 2, 3)
    X, WW = np.asarray(x), np.asarray(W)
    expected = np.cos(X @ WW)[:, :, None] * WW.T[None]
    np.testing.assert_allclose(np.asarray(J), expected, rtol=1e-12)


def test_tapes_are_thread_local():
    results = {}
    barrier = threading.Barrier(2)

    def worker(k):
        x = tnp.asarray(float(k + 1))
        with tt.GradientTape() as tape:
            tape.watch(x)
            barrier.wait()
            y = x ** 3
            barrier.wait()
        results[k] = (float(tape.gradient(y, x)), len(tape._nodes))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results[0][0] == pytest.approx(3.0) and results[1][0] == pytest.approx(12.0)


def test_custom_gradient_replaces_the_rule():
    @tt.custom_gradient
    def clip_grad_identity(x):
        def grad(dy):
            return tnp.clip(dy, -0.5, 0.5)
        return x * 1.0, grad

    x = rand(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(clip_grad_identity(x) * 3.0)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), np.full(4, 0.5))


def test_stop_gradient_blocks_the_gradient():
    x = rand(3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(x * tt.stop_gradient(x))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), np.asarray(x))


def test_in_place_writes_into_tracked_arrays_are_recorded():
    # (these were refused before gradients through in-place writes; see test_inplace.py)
    x = rand(3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2
        y[0] = 1.0
        y += 1.0
        out = tnp.zeros(3)
        out[:] = y * x
        loss = tnp.sum(out)
    X = np.asarray(x)
    expected = np.where(np.arange(3) == 0, 2.0, 4 * X + 1)   # d/dx of (x*2 or 1, +1) * x
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, x)), expected, rtol=1e-12)


def test_value_overwritten_after_recording_is_detected():
    x = rand(3)
    c = rand(3, seed=1)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(x * c)
    c[0] = 10.0   # c was saved for the gradient of x * c
    with pytest.raises(RuntimeError, match="modified in place"):
        tape.gradient(y, x)


def test_missing_rule_raises_lookup_error(monkeypatch):
    from tnp_train.autodiff import registry
    monkeypatch.delitem(registry.VJPS, "sin")
    x = rand(2)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sin(x)
    with pytest.raises(LookupError, match="sin"):
        tape.gradient(y, x)


def test_no_recording_hook_without_tapes():
    from tnp._core import state
    import gc
    with tt.GradientTape() as tape:
        x = rand(2)
        tape.watch(x)
        y = x * 2
    del tape, y
    gc.collect()
    assert state.get_recording_hook() is None


def test_in_place_functions_that_read_a_tracked_array_are_recorded():
    src = rand(2)
    dst = tnp.zeros(2)
    with tt.GradientTape() as tape:
        tape.watch(src)
        tnp.copyto(dst, src * 3)
        tnp.add.at(dst, [0, 0], src)
        loss = tnp.sum(dst * dst)
    S = np.asarray(src)
    D = 3 * S + np.asarray([S[0] + S[1], 0.0])    # add.at adds src[0] and src[1] to dst[0]
    expected = np.asarray([2 * D[0] * 4, 2 * D[0] + 2 * D[1] * 3])
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, src)), expected, rtol=1e-12)


def test_arrays_passed_by_keyword_and_nested_in_lists_are_recorded():
    a = tnp.asarray(2.0)
    b = rand(2, 2)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(a)
        y1 = tnp.sum(a=b * a)
        y2 = tnp.sum(tnp.block([[b * a, b], [b, b]]))
        y3 = tnp.sum(tnp.pad(b, 1, constant_values=(a, a)))
    B = np.asarray(b)
    assert float(tape.gradient(y1, a)) == pytest.approx(B.sum())
    assert float(tape.gradient(y2, a)) == pytest.approx(B.sum())
    assert float(tape.gradient(y3, a)) == pytest.approx(12.0)


def test_nested_outputs_carry_gradients():
    s = rand(10, 2)
    with tt.GradientTape() as tape:
        tape.watch(s)
        counts, edges = tnp.histogramdd(s, bins=2)
    g = tape.gradient(tnp.sum(edges[0]), s)
    S = np.asarray(s)[:, 0]
    expected = np.zeros_like(S)
    expected[np.argmin(S)] += 3   # edges = linspace(min, max, 3): sum = 1.5 (min + max)
    expected[np.argmax(S)] += 3
    np.testing.assert_allclose(np.asarray(g)[:, 0], expected / 2)


def test_training_with_the_tape_matches_hand_written_numpy_training():
    """Five SGD-momentum steps of a small ReLU MLP with softmax cross-entropy: the tape's
    parameters equal those of the same training written by hand in NumPy."""
    rng = np.random.default_rng(3)
    sizes = (6, 16, 16, 4)
    params = []
    for fi, fo in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((fi, fo)) * 0.5, rng.standard_normal(fo) * 0.1]
    X = rng.standard_normal((32, sizes[0]))
    y = rng.integers(0, sizes[-1], 32)
    Y = np.eye(sizes[-1])[y]
    lr, mu = 0.1, 0.9

    # hand-written NumPy reference
    p = [a.copy() for a in params]
    v = [np.zeros_like(a) for a in p]
    for _ in range(5):
        W1, b1, W2, b2, W3, b3 = p
        z1 = X @ W1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ W2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ W3 + b3
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        dlog = (e / e.sum(axis=1, keepdims=True) - Y) / len(X)
        dz2 = (dlog @ W3.T) * (z2 > 0)
        dz1 = (dz2 @ W2.T) * (z1 > 0)
        grads = [X.T @ dz1, dz1.sum(0), h1.T @ dz2, dz2.sum(0), h2.T @ dlog, dlog.sum(0)]
        for pi, vi, gi in zip(p, v, grads):
            vi *= mu
            vi += gi
            pi -= lr * vi

    # the same training through the tape
    tv = [tt.Variable(a) for a in params]
    vel = [tnp.zeros_like(a) for a in params]
    tX, ty = tnp.asarray(X), tnp.asarray(y[:, None])
    for _ in range(5):
        with tt.GradientTape() as tape:
            W1, b1, W2, b2, W3, b3 = tv
            logits = tnp.maximum(tnp.maximum(tX @ W1 + b1, 0) @ W2 + b2, 0) @ W3 + b3
            z = logits - tt.stop_gradient(tnp.max(logits, axis=1, keepdims=True))
            lse = tnp.log(tnp.sum(tnp.exp(z), axis=1, keepdims=True))
            loss = tnp.mean(lse - tnp.take_along_axis(z, ty, axis=1))
        for var, vi, gi in zip(tv, vel, tape.gradient(loss, tv)):
            vi *= mu
            vi += gi
            var.assign_sub(lr * vi)
    for var, ref in zip(tv, p):
        np.testing.assert_allclose(var.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "nansum", "nanmean",
                                  "ptp"])
def test_reductions_of_a_list_of_arrays_are_differentiable(name):
    """``tnp.sum([a, b])`` (NumPy code reducing a list of arrays, as ``np.sum(losses)``): each
    element gets its slice of the gradient; checked against finite differences."""
    from tnp_train.autodiff.check import check_grads
    fn = getattr(tnp, name)

    def f(a, b):
        return fn([a * 2.0, tnp.sin(b)], axis=0).sum() if name != "ptp" else \
            fn([a * 2.0, tnp.sin(b)])
    rng = np.random.default_rng(3)
    check_grads(f)(tnp.asarray(rng.normal(size=3)), tnp.asarray(rng.normal(size=3)))
