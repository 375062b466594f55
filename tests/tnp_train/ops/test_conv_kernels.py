"""The CPU kernels of tnp_train.ops.conv against the array-module (CuPy-style) formulas they
replace: the patch matrix (im2col) bit for bit, over strides, dilations and paddings,
negative (cropping) ones included."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tnp_train.ops import conv as conv_ops
from tnp_train.ops import pooling as pool_ops


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_im2col_equals_the_shifted_slices(data):
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    C = data.draw(st.integers(1, 5))
    H, W = data.draw(st.integers((kh - 1) * dh + 1, 9)), data.draw(st.integers((kw - 1) * dw + 1, 9))
    pt, pb = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    pl, pr = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    OH = (H + pt + pb - (kh - 1) * dh - 1) // sh + 1
    OW = (W + pl + pr - (kw - 1) * dw - 1) // sw + 1
    x = np.random.default_rng(data.draw(st.integers(0, 99))).standard_normal((2, H, W, C)).astype(dtype)
    got = conv_ops.im2col(np, x, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW).copy()
    saved = conv_ops.USE_NUMBA
    conv_ops.USE_NUMBA = False
    try:
        want = conv_ops.im2col(np, x, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW)
    finally:
        conv_ops.USE_NUMBA = saved
    assert got.shape == want.shape == (2 * OH * OW, kh * kw * C)
    assert np.array_equal(got, want)


def test_im2col_with_a_cropping_padding():
    """A negative padding drops rows and columns (the windows start inside the input)."""
    x = np.arange(2 * 6 * 7 * 2, dtype=np.float32).reshape(2, 6, 7, 2)
    got = conv_ops.im2col(np, x, 2, 2, 1, 1, 1, 1, -1, -2, 4, 4)
    want = conv_ops.im2col(np, np.ascontiguousarray(x[:, 1:, 2:]), 2, 2, 1, 1, 1, 1, 0, 0, 4, 4)
    assert np.array_equal(got, want)


# ----------------------------------------------------------------------------- destinations
class _Offer:
    """Offers a NaN-filled array for every source and keeps what it offered."""

    def __init__(self):
        self.offered = {}

    def destination(self, source):
        d = np.full(tuple(source.shape), np.nan, np.dtype(source.dtype.name))
        self.offered[source.name] = d
        return d


def _conv_model(dtype):
    import tnp_train as tt

    tt.utils.set_random_seed(5)
    L = tt.layers
    return tt.Sequential([
        tt.Input((9, 9, 3)),
        L.Conv2D(16, 3, padding="same", activation="relu", name="im2col", dtype=dtype),
        L.Conv2D(8, 3, padding="same", activation="relu", name="winograd", dtype=dtype),
        L.Conv2D(6, 2, strides=2, name="strided", dtype=dtype),
        L.Conv2DTranspose(4, 3, strides=2, name="transposed", dtype=dtype),
        L.Reshape((-1, 4)),
        L.Conv1D(3, 3, activation="relu", name="conv1d", dtype=dtype),
        L.Flatten(), L.Dense(2, name="head", dtype=dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_gradients_are_written_into_the_offered_arrays(dtype):
    """Under a strategy the kernels' and biases' gradients go straight into the bucket the
    tape offers: the very array offered, with the bits of the ordinary gradient."""
    import tnp
    import tnp_train as tt
    from tnp.extend import backend_array

    model = _conv_model(dtype)
    rng = np.random.default_rng(2)
    x = tnp.asarray(rng.standard_normal((4, 9, 9, 3)).astype(dtype))
    y = tnp.asarray(rng.standard_normal((4, 2)).astype(dtype))
    srcs = list(model.trainable_weights)

    def grads(offer=None):
        with tt.GradientTape() as tape:
            loss = tnp.mean((model(x) - y) ** 2)
        if offer is None:
            return tape.gradient(loss, srcs)
        return tape.gradient(loss, srcs, gradient_ready=lambda s, g: None,
                             gradient_destination=offer.destination)

    want = grads()
    offer = _Offer()
    got = grads(offer)
    assert sorted(offer.offered) == sorted(s.name for s in srcs)
    for s, g, w in zip(srcs, got, want):
        assert backend_array(g) is offer.offered[s.name], s.name
        assert np.array_equal(np.asarray(g), np.asarray(w)), s.name


# ----------------------------------------------------------------------------- Winograd blocks
def _wino_run(x, K, b, padding, relu, watch_x=True):
    import tnp
    import tnp_train as tt

    xs, ks = tnp.asarray(x), tnp.asarray(K)
    bs = None if b is None else tnp.asarray(b)
    srcs = ([xs] if watch_x else []) + [ks] + ([] if bs is None else [bs])
    with tt.GradientTape() as tape:
        tape.watch(srcs)
        y = conv_ops.conv2d(xs, ks, bs, padding=padding, activation="relu" if relu else None)
    dy = np.random.default_rng(7).standard_normal(tuple(y.shape)).astype(x.dtype)
    return [np.asarray(y)] + [np.asarray(g) for g in
                              tape.gradient(y, srcs, output_gradients=tnp.asarray(dy))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding,H,W", [("same", 6, 6), ("same", 5, 7), ("valid", 7, 6)])
@pytest.mark.parametrize("bias,relu", [(True, True), (False, False)])
def test_winograd_in_blocks_of_images_equals_one_block(dtype, padding, H, W, bias, relu,
                                                       monkeypatch):
    """The batch in blocks of one image (a tiny WINOGRAD_BLOCK_BYTES) against all at once: the
    output and the input's gradient bit for bit; the kernel's gradient sums the blocks in
    another order (to 1e-6 of its largest element in float32)."""
    rng = np.random.default_rng(H * W)
    x = rng.standard_normal((5, H, W, 16)).astype(dtype)
    K = (0.2 * rng.standard_normal((3, 3, 16, 8))).astype(dtype)
    b = rng.standard_normal(8).astype(dtype) if bias else None
    whole = _wino_run(x, K, b, padding, relu)
    monkeypatch.setattr(conv_ops, "WINOGRAD_BLOCK_BYTES", 1)
    assert len(conv_ops._wino_blocks(5, 9, 16, 8, 4)) == 5
    blocked = _wino_run(x, K, b, padding, relu)
    names = ["y", "dx", "dk"] + (["db"] if bias else [])
    for name, got, want in zip(names, blocked, whole):
        if name == "dk":
            scale = np.abs(want).max() * (1e-6 if dtype == "float32" else 1e-14)
            np.testing.assert_allclose(got, want, rtol=0, atol=scale)
        else:
            assert np.array_equal(got, want), name


def test_winograd_backward_makes_what_the_forward_did_not_expect(monkeypatch):
    """The backward makes both gradients in one pass when the forward saw a tape follow both;
    any gradient asked beyond that hint gets a pass of its own, with the same values."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 6, 16)).astype(np.float32)
    K = (0.2 * rng.standard_normal((3, 3, 16, 8))).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    monkeypatch.setattr(conv_ops, "WINOGRAD_BLOCK_BYTES", 1)
    want = _wino_run(x, K, b, "same", True)
    passes = []
    real = conv_ops._wino_dout_nb
    monkeypatch.setattr(conv_ops, "_wino_dout_nb", lambda *a: (passes.append(1), real(*a))[1])
    assert all(np.array_equal(g, w) for g, w in zip(_wino_run(x, K, b, "same", True), want))
    assert len(passes) == 3                           # one pass over the 3 one-image blocks
    passes.clear()
    monkeypatch.setattr(conv_ops, "needs_gradient", lambda arrays: [False] * len(arrays))
    got = _wino_run(x, K, b, "same", True)
    assert len(passes) == 6                           # dx and dk: a pass each
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    passes.clear()
    monkeypatch.undo()
    monkeypatch.setattr(conv_ops, "WINOGRAD_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv_ops, "_wino_dout_nb", lambda *a: (passes.append(1), real(*a))[1])
    got = _wino_run(x, K, b, "same", True, watch_x=False)
    assert len(passes) == 3                           # the kernel's gradient only
    for g, w in zip(got, [want[0]] + want[2:]):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("cin,bias", [(3, False), (16, True)])   # im2col, Winograd-sized
def test_an_empty_batch_gives_empty_outputs_and_zero_kernel_gradients(cin, bias):
    """As Keras: a batch of 0 images convolves to 0 images; the kernel's gradient is zeros."""
    import tnp
    import tnp_train as tt

    x = tnp.zeros((0, 6, 6, cin), dtype="float32")
    k = tnp.asarray(np.ones((3, 3, cin, 8), np.float32))
    b = tnp.ones(8, dtype="float32") if bias else None
    with tt.GradientTape() as tape:
        tape.watch([x, k])
        y = conv_ops.conv2d(x, k, b, padding="same", activation="relu")
    gx, gk = tape.gradient(y, [x, k])
    assert y.shape == (0, 6, 6, 8) and gx.shape == x.shape
    assert np.array_equal(np.asarray(gk), np.zeros((3, 3, cin, 8), np.float32))


# ----------------------------------------------------------------------------- result buffers
def _step(op, x, *params):
    import tnp
    import tnp_train as tt

    xs = tnp.asarray(x)
    ps = [tnp.asarray(p) for p in params]
    with tt.GradientTape() as tape:
        tape.watch([xs] + ps)
        y = op(xs, *ps)
    dy = tnp.asarray(np.cos(np.arange(np.prod(y.shape), dtype=x.dtype)).reshape(tuple(y.shape)))
    return y, tape, [xs] + ps, dy


OPS = {
    "im2col": (lambda x, k, b: conv_ops.conv2d(x, k, b, padding="same", activation="relu"),
               (2, 6, 6, 3), [(3, 3, 3, 5), (5,)]),
    "winograd": (lambda x, k, b: conv_ops.conv2d(x, k, b, padding="same", activation="relu"),
                 (2, 6, 6, 16), [(3, 3, 16, 8), (8,)]),
    "max_pool": (lambda x: pool_ops.max_pool2d(x, 2), (2, 6, 6, 4), []),
    "max_pool_same": (lambda x: pool_ops.max_pool2d(x, 3, 2, "same"), (2, 7, 7, 4), []),
    "avg_pool": (lambda x: pool_ops.avg_pool2d(x, 2), (2, 6, 6, 4), []),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_results_are_reused_only_once_dropped(name):
    """The ops' results come from a pool of buffers (fresh pages every step cost more than the
    kernels): a result still held -- with the tape that will differentiate it -- keeps its
    values and its gradient while the op runs again on other data; dropped, its buffer serves
    the next call."""
    op, xshape, pshapes = OPS[name]
    rng = np.random.default_rng(3)
    draw = [rng.standard_normal(s).astype(np.float32) for s in [xshape] + pshapes]
    y1, tape1, srcs1, dy1 = _step(op, *draw)
    kept = np.asarray(y1).copy()
    other = [rng.standard_normal(s).astype(np.float32) for s in [xshape] + pshapes]
    for _ in range(3):
        _step(op, *other)
    assert np.array_equal(np.asarray(y1), kept)
    got = [np.asarray(g) for g in tape1.gradient(y1, srcs1, output_gradients=dy1)]
    y2, tape2, srcs2, dy2 = _step(op, *draw)
    want = [np.asarray(g) for g in tape2.gradient(y2, srcs2, output_gradients=dy2)]
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    # dropped: the next call's result lives in a buffer the pool handed out before
    seen = set()
    for _ in range(4):
        y, tape, srcs, dy = _step(op, *draw)
        tape.gradient(y, srcs, output_gradients=dy)
        seen.add(np.asarray(y).__array_interface__["data"][0])
        del y, tape, srcs, dy
    assert len(seen) < 4


def test_the_scratch_pool_keeps_at_most_its_byte_budget(monkeypatch):
    """Many shapes do not pile up: past SCRATCH_MAX_BYTES the least recently used shapes' buffers
    leave the pool; a buffer in use stays valid with its holder, and a recent shape's buffer is
    still handed out again."""
    from tnp_train.ops import _common

    _common.clear_scratch()
    monkeypatch.setattr(_common, "SCRATCH_MAX_BYTES", 10_000)
    held = conv_ops.scratch((100,), np.float64)          # 800 bytes, kept by this test
    held[:] = 7.0
    for n in range(1, 40):                               # 39 shapes of 800 + 8 n bytes
        conv_ops.scratch((100 + n,), np.float64)
    pooled = sum(b.nbytes for bufs in _common._scratch.values() for b in bufs)
    assert pooled <= 10_000 and pooled == _common._scratch_bytes[0]
    assert ((100,), np.dtype(np.float64).str) not in _common._scratch   # the oldest went
    assert (held == 7.0).all()
    last = conv_ops.scratch((139,), np.float64)
    again = last.__array_interface__["data"][0]
    del last
    assert conv_ops.scratch((139,), np.float64).__array_interface__["data"][0] == again
    _common.clear_scratch()
