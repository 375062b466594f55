"""Fusion: the six workloads of the fusion benchmark become one kernel each and give eager's
results bit for bit; every inline operation of a kernel is NumPy's to the bit on every dtype
and on special values; intermediates live in reused buffers. A generator that got one
operation wrong is caught by these checks (the last test breaks one on purpose)."""
import os
import sys

import numpy as np
import pytest

import tnp
from tnp._jit import kernel as _kernel


def bits(r):
    if isinstance(r, tuple):
        return tuple(bits(e) for e in r)
    a = np.asarray(r)
    return (type(r).__name__, a.dtype.str, a.shape, a.tobytes())


def assert_same(got, want):
    assert bits(got) == bits(want)


# ------------------------------------------------------------------------- the six workloads
# the benchmark's own definitions (benchmarks/compile.py), so the two never drift apart
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from compile import adam, gelu, layernorm, mandel, xent  # noqa: E402


def smallloop(xp, h, w, b, steps=8):
    # (the benchmark takes 64 steps; 8 keep the kernel's first compilation short)
    for _ in range(steps):
        h = xp.tanh(h * w + b)
    return h


def _inputs(name):
    rng = np.random.default_rng(0)
    f = np.float32
    if name == "gelu":
        return (rng.standard_normal(3000).astype(f),)
    if name == "layernorm":
        return (rng.standard_normal((33, 40)).astype(f), rng.standard_normal(40).astype(f),
                rng.standard_normal(40).astype(f))
    if name == "xent":
        onehot = np.zeros((17, 50), f)
        onehot[np.arange(17), rng.integers(0, 50, 17)] = 1.0
        return (rng.standard_normal((17, 50)).astype(f) * 3, onehot)
    if name == "adam":
        return tuple(rng.standard_normal(2500).astype(f) * s for s in (1.0, 0.1, 0.01, 0.0))
    if name == "mandel":
        ys, xs = np.mgrid[-1.5:1.5:24j, -2.0:1.0:24j]
        zero = np.zeros((24, 24), f)
        return (zero, zero.copy(), xs.astype(f), ys.astype(f))
    rng2 = np.random.default_rng(1)
    return tuple(rng2.standard_normal(16).astype(f) * s for s in (1.0, 0.5, 0.1))


# what each becomes: kernels, the operations left to NumPy, the kind of kernel
_EXPECTED = {
    "gelu": (1, [], "elementwise"),
    "layernorm": (1, [], "rows"),
    "xent": (1, ["mean", "negative"], "rows"),
    "adam": (1, [], "elementwise"),
    "mandel": (1, [], "elementwise"),
    "smallloop": (1, [], "elementwise"),
}
_FNS = {"gelu": gelu, "layernorm": layernorm, "xent": xent, "adam": adam, "mandel": mandel,
        "smallloop": smallloop}


@pytest.mark.parametrize("name", sorted(_FNS))
def test_workload_is_one_kernel_and_bit_equal(name):
    fn = _FNS[name]
    raw = _inputs(name)
    args = tuple(tnp.asarray(a) for a in raw)
    jf = tnp.jit(lambda *a: fn(tnp, *a))
    got = jf(*args)
    assert_same(got, fn(tnp, *args))
    want_np = fn(np, *raw)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want_np if isinstance(want_np, tuple) else (want_np,)):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
    lo = jf.lower(*args)
    n_kernels, unfused, kind = _EXPECTED[name]
    assert len(lo.kernels) == n_kernels
    assert lo.unfused_nodes == unfused
    assert lo.kernels[0].group.kind == kind
    assert_same(jf(*args), got)       # the replay, again, with its buffers reused


def test_what_the_kernels_do():
    x = tnp.asarray(_inputs("xent")[0])
    lo = tnp.jit(lambda z: tnp.exp(z - z.max(axis=-1, keepdims=True))).lower(x)
    steps = lo.kernels[0].steps_text
    assert steps[0].startswith("row max")
    assert "NumPy loop exp" in "".join(steps)
    lo = tnp.jit(lambda a, b: tnp.sqrt(a * b + 1.0) - a).lower(x, x)
    assert lo.kernels[0].steps_text == ["column loop: multiply, add, sqrt, subtract"]


_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-30, -1e30, np.inf, -np.inf, np.nan,
             2.0 ** -140, 65504.0, 1e300]


def _ops_floats(a, b):
    return (a + b, a - b, a * b, a / b, -a, abs(b), a * a, tnp.sqrt(a), a < b, a <= b,
            a == b, a != b, a > b, a >= b, tnp.logical_and(a, b), tnp.logical_or(a > 0, b),
            tnp.logical_xor(a, b), tnp.logical_not(a), tnp.where(a > b, a, b),
            a.astype(tnp.float32) + 0, (a + 1).astype(tnp.bool_) | (b > 0),
            tnp.maximum(a, b), tnp.minimum(a, b), tnp.exp(a) + 0, tnp.log(b) - 0,
            a ** 2 + 0)


def _ops_ints(a, b):
    return (a + b, a - b, a * b, -a, abs(a), a * a, a & b, a | b, a ^ b, ~a, a < b, a == b,
            a >= b, tnp.logical_and(a, b), (a // (b | 1)) + 0, (a % (b | 1)) + 0,
            (a << 3) + 0, a.astype(tnp.float64) * 0.5, a.astype(tnp.int8) + a.astype(tnp.int8),
            tnp.where(a > b, a, b))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_inline_float_operations_are_numpys_to_the_bit(dt):
    s = np.array(_SPECIALS, dtype=np.float64)
    with np.errstate(all="ignore"):
        a = np.repeat(s, len(s)).astype(dt)
        b = np.tile(s, len(s)).astype(dt)
        jf = tnp.jit(_ops_floats)
        got = jf(tnp.asarray(a), tnp.asarray(b))
        want = _ops_floats(tnp.asarray(a), tnp.asarray(b))
    assert len(jf.lower(tnp.asarray(a), tnp.asarray(b)).kernels) == 1
    assert_same(got, want)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "uint64"])
def test_inline_integer_operations_wrap_as_numpys(dt):
    info = np.iinfo(dt)
    edge = np.array([0, 1, 2, 5, 100, info.max, info.max - 1, info.min, info.min + 1],
                    dtype=object)
    rng = np.random.default_rng(2)
    a = np.concatenate([edge.astype(dt), rng.integers(info.min, info.max, 50, dtype=dt,
                                                       endpoint=True)])
    b = np.roll(a, 3)
    with np.errstate(all="ignore"):
        jf = tnp.jit(_ops_ints)
        got = jf(tnp.asarray(a), tnp.asarray(b))
        want = _ops_ints(tnp.asarray(a), tnp.asarray(b))
    assert_same(got, want)


def test_bool_and_mixed_dtype_promotion():
    def f(b, i8, f4, f8):
        return (b & (i8 > 0), b + i8, i8 * 3, f4 * 2 + f8, f4 * 2.5 + i8, i8 / 3,
                tnp.where(b, i8, f4), (f4 > 1) != b)

    rng = np.random.default_rng(4)
    args = (rng.random(40) < 0.5, rng.integers(-100, 100, 40).astype(np.int8),
            rng.standard_normal(40).astype(np.float32), rng.standard_normal(40))
    targs = tuple(tnp.asarray(a) for a in args)
    with np.errstate(all="ignore"):
        assert_same(tnp.jit(f)(*targs), f(*targs))


def test_intermediates_share_reused_buffers():
    def chain(x, y):
        a = tnp.tanh(x) @ y          # a matmul between two fused chains
        b = tnp.exp(a) * 2.0 + 1.0
        c = tnp.sqrt(b) @ y
        return c.sum(axis=0)

    x = tnp.asarray(np.random.default_rng(3).standard_normal((64, 64)))
    jf = tnp.jit(chain)
    first = jf(x, x)
    prog = jf.lower(x, x).program
    n_buffers = len(prog._buffer_specs)
    pool_before = list(prog._pool)
    assert_same(jf(x, x), first)
    assert prog._pool == pool_before          # the same buffer set served the second call
    assert n_buffers <= 5
    assert_same(first, chain(x, x))


@pytest.mark.parametrize("dtype, n", [(np.float32, 3), (np.float32, 129), (np.float32, 300),
                                      (np.float32, 520), (np.float64, 512)])
def test_row_sums_inline_are_numpys_bits(dtype, n):
    """Row sums and means of up to 512 are computed inline in NumPy's pairwise order (longer
    rows call NumPy's loop): eager's bits on values whose magnitudes spread over 12 decades
    (any other order shows), with a row of specials."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 10.0 ** rng.uniform(-6, 6, (5, n))).astype(dtype)
    x[1, :3] = [-0.0, np.inf, 1.0]
    x[2] = -0.0
    x[3, min(5, n - 1)] = np.nan

    def f(a):
        return tnp.sum(a * 1.5, axis=-1), tnp.mean(a - 1.0, axis=-1, keepdims=True)

    t = tnp.asarray(x)
    jf = tnp.jit(f)
    lo = jf.lower(t)
    assert len(lo.kernels) == 1
    assert ("pairwise_leaf" in lo.kernels[0].source) == (8 <= n <= 512)
    with np.errstate(all="ignore"):
        assert_same(jf(t), f(t))


def test_inline_sums_only_where_numpys_order_is_checked(monkeypatch):
    """Where NumPy's add.reduce does not sum in the order the kernels would (checked once per
    process and dtype), kernels call its loop instead; a kernel summing in another order is
    caught by the bit-for-bit comparison."""
    x = tnp.asarray(np.random.default_rng(1).standard_normal((4, 300)) * 1e3)

    def f(a):
        return (a * 2.0).sum(axis=-1)

    monkeypatch.setattr(_kernel, "_inline_sum_checked", {})
    monkeypatch.setattr(_kernel, "_pairwise_py", lambda a, s, n: sum(a[s + 1:s + n], a[s]))
    assert not _kernel.inline_sum_ok(np.float64)
    jf = tnp.jit(f)
    assert "pairwise_leaf" not in jf.lower(x).kernels[0].source
    assert_same(jf(x), f(x))
    # the generator's order broken on purpose (halves split elsewhere): not NumPy's bits
    monkeypatch.setattr(_kernel, "_inline_sum_checked", {"d": True})
    monkeypatch.setattr(_kernel, "_pairwise_expr", lambda arr, s, n: (
        f"(pairwise_leaf({arr}, 0, 128) + pairwise_leaf({arr}, 128, 128) + "
        + " + ".join(f"{arr}[{i}]" for i in range(256, n)) + ")"))
    monkeypatch.setattr(_kernel, "_GENERATOR_STAMP", _kernel._GENERATOR_STAMP + "seq")
    broken = tnp.jit(f)
    with pytest.raises(AssertionError):
        assert_same(broken(x), f(x))


def test_unfused_ufuncs_write_in_place_into_a_dead_operand():
    """Without kernels each ufunc writes into a reused buffer; an operand the node reads last
    gives its buffer to the result (NumPy's eager temporaries do the same), also where the
    operand is read through an overlapping view (NumPy then computes as without overlap)."""
    def chain(x):
        a = x * 2.0
        b = a.T + a                  # reads a twice, through a transposed view: overlap
        c = tnp.tanh(b) * 0.5 + 1.0
        return c * x

    x = tnp.asarray(np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32))
    jf = tnp.jit(chain, fuse=False)
    assert_same(jf(x), chain(x))
    assert_same(jf(x), chain(x))
    src = jf.lower(x).replay_source()
    assert len(jf.lower(x).program._buffer_specs) == 1, src     # (two without in-place)
    g = tnp.jit(lambda x: gelu(tnp, x), fuse=False)
    x1 = tnp.asarray(_inputs("gelu")[0])
    assert_same(g(x1), gelu(tnp, x1))
    assert len(g.lower(x1).program._buffer_specs) <= 2


def test_without_numba_compiles_without_kernels_and_says_so(monkeypatch):
    """Numba missing (a broken install): the replay alone, bit for bit eager's, after one
    JitFallbackWarning that says why the kernels are off; a silent slowdown would hide it."""
    from tnp._jit import program as _program

    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.setattr(_program, "_NO_KERNELS", [None, False])
    args = tuple(tnp.asarray(a) for a in _inputs("layernorm"))
    with pytest.warns(tnp._jit.JitFallbackWarning, match="Numba.*without fused kernels"):
        jf = tnp.jit(lambda *a: layernorm(tnp, *a))
        got = jf(*args)
    assert_same(got, layernorm(tnp, *args))
    assert jf.lower(*args).kernels == []
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")       # said once per process
        tnp.jit(lambda *a: gelu(tnp, *a))(tnp.asarray(_inputs("gelu")[0]))


def test_a_broken_generator_is_caught(monkeypatch):
    """If the generator computed ``add`` wrongly, the bit-for-bit comparison fails: these
    tests do look at what the kernels compute."""
    monkeypatch.setitem(_kernel._BINARY, "add", "-")
    monkeypatch.setattr(_kernel, "_GENERATOR_STAMP", _kernel._GENERATOR_STAMP + "broken")
    x = tnp.asarray(np.arange(1.0, 9.0))
    jf = tnp.jit(lambda a: a * 2.0 + a)
    assert len(jf.lower(x).kernels) == 1
    with pytest.raises(AssertionError):
        assert_same(jf(x), x * 2.0 + x)
