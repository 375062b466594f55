"""tnp.extend.primitive: backend code as one node of a compiled program, its results (arrays,
structures, opaque values that carry a forward's caches to its backward) equal to the eager
call's at every run, the arrays an opaque value holds kept alive, and what it refuses."""
import numpy as np
import pytest

import tnp
from tnp import extend
from tnp.extend import JitFallbackWarning, primitive


def tanh_matmul(x, w):
    """A forward on backend arrays returning its output and a backward closing over caches."""
    xa, wa = extend.backend_array(x), extend.backend_array(w)
    y = np.tanh(xa @ wa)

    def backward(g):
        dz = extend.backend_array(g) * (1.0 - y * y)
        return extend.wrap(dz @ wa.T), extend.wrap(xa.T @ dz)
    return extend.wrap(y), backward


def call_backward(backward, g):
    return backward(g)


def program(x, w, g):
    h = tnp.exp(x) * 0.5 + 1.0          # a fused kernel's output, held by the forward's caches
    y, backward = primitive(tanh_matmul, h, w, name="tanh_matmul")
    z = tnp.sin(x) * 3.0 - 2.0          # same shape as h: may take a buffer h no longer needs
    s = tnp.matmul(z, w)
    dh, dw = primitive(call_backward, backward, g, name="tanh_matmul_grad")
    return y * 2.0, dh, dw, s


def reference(x, w, g):
    x, w, g = (np.asarray(a) for a in (x, w, g))
    h = np.exp(x) * 0.5 + 1.0
    y = np.tanh(h @ w)
    dz = g * (1.0 - y * y)
    return y * 2.0, dz @ w.T, h.T @ dz, (np.sin(x) * 3.0 - 2.0) @ w


def bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_forward_and_its_backward_are_two_nodes_equal_to_eager_at_every_call(dtype):
    rng = np.random.default_rng(0)
    w = tnp.asarray(rng.standard_normal((5, 3)).astype(dtype))
    f = tnp.jit(program)
    for k in range(3):   # later calls replay with new values: the caches are that call's
        x = tnp.asarray(rng.standard_normal((4, 5)).astype(dtype))
        g = tnp.asarray(rng.standard_normal((4, 3)).astype(dtype))
        got = f(x, w, g)
        for a, b, e in zip(got, program(x, w, g), reference(x, w, g)):
            assert bits(a, b)
            np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5)
    assert f.trace_count == 1
    text = f.lower(x, w, g).as_text()
    assert text.count("primitive:tanh_matmul(") == 1
    assert text.count("primitive:tanh_matmul_grad(") == 1
    assert "opaque" in text


def test_an_opaque_value_keeps_the_buffers_it_holds_alive():
    # h lives in a buffer of the program; without the opaque value's dependencies the buffer
    # would be reused for z (same shape and dtype) before the backward reads h
    lo = tnp.jit(program).lower(tnp.ones((4, 5)), tnp.ones((5, 3)), tnp.ones((4, 3)))
    grad = next(n for n in lo.graph.nodes if n.name == "primitive:tanh_matmul_grad")
    fwd = next(n for n in lo.graph.nodes if n.name == "primitive:tanh_matmul")
    assert {v.id for v in fwd.inputs()} <= {v.id for v in grad.inputs()}


def test_the_trace_time_call_sees_shapes_and_the_run_sees_values():
    seen = []

    def stats(x):
        a = extend.backend_array(x)
        seen.append(float(a.sum()))
        return {"mean": extend.wrap(a.mean(axis=0)), "both": (extend.wrap(a.max()), None)}

    f = tnp.jit(lambda x: primitive(stats, x))
    x = tnp.asarray(np.arange(6.0).reshape(3, 2))
    r = f(x)
    assert seen == [0.0, 15.0]          # once on the placeholder's zeros, once on the values
    assert bits(r["mean"], np.asarray([2.0, 3.0])) and float(r["both"][0]) == 5.0
    assert r["both"][1] is None
    r = f(x + 1)
    assert bits(r["mean"], np.asarray([3.0, 4.0])) and seen[-1] == 21.0


def test_eagerly_it_is_a_plain_call():
    x = tnp.ones((2, 2))
    y, backward = primitive(tanh_matmul, x, x)
    assert callable(backward) and bits(y, np.tanh(np.full((2, 2), 2.0)))


def test_refusals():
    def closes_over(x):
        w = x * 2.0

        def fn(v):
            return extend.wrap(extend.backend_array(v) + extend.backend_array(w))
        return primitive(fn, x)

    # refused while tracing: the signature runs eagerly, after one warning naming the reason
    with pytest.warns(JitFallbackWarning, match="closes over a traced array"):
        assert bits(tnp.jit(closes_over)(tnp.ones(3)), np.full(3, 3.0))

    def gives_numpy(x):
        return primitive(lambda v: extend.backend_array(v) + 1, x)

    with pytest.warns(JitFallbackWarning, match="gave a NumPy array"):
        tnp.jit(gives_numpy)(tnp.ones(3))

    def returns_opaque(x):
        return primitive(tanh_matmul, x, x)[1]

    with pytest.warns(JitFallbackWarning, match="a primitive made"):
        assert callable(tnp.jit(returns_opaque)(tnp.ones((2, 2))))
