"""tnp.extend.vecmath: float32 exp, expm1, log, tanh and sigmoid for Numba loops, within one ulp
of the exact value (NumPy's float64 result rounded to float32) over random bit patterns (every
exponent, subnormals included) and dense ranges; NumPy's special values; and loops that call
them vectorize (LLVM's IR has vector types)."""
import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")
from tnp.extend import vecmath  # noqa: E402

F32 = np.float32


def _loop(f):
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return loop


_LOOPS = {}


def run(name, x):
    if name not in _LOOPS:
        _LOOPS[name] = _loop(getattr(vecmath, name))
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


def _sigmoid64(v):
    return 1.0 / (1.0 + np.exp(-v))


REF64 = {"exp_f32": np.exp, "expm1_f32": np.expm1, "log_f32": np.log, "tanh_f32": np.tanh,
         "sigmoid_f32": _sigmoid64}
REF32 = {"exp_f32": np.exp, "expm1_f32": np.expm1, "log_f32": np.log, "tanh_f32": np.tanh,
         # NumPy has no sigmoid: its float32 formula underflows early (exp(103) is inf), so
         # the reference is the float64 one, rounded
         "sigmoid_f32": lambda v: _sigmoid64(v.astype(np.float64)).astype(F32)}


def ulps(a, b):
    """Distance in float32 steps between same-signed finite values (monotone integer map)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def samples():
    rng = np.random.default_rng(7)
    every = rng.integers(0, 2 ** 32, 400_000, dtype=np.uint64).astype(np.uint32).view(F32)
    return np.concatenate([every, np.linspace(-120, 120, 200_001, dtype=F32),
                           np.linspace(-1, 1, 200_001, dtype=F32),
                           np.geomspace(1e-44, 1e-3, 20_001, dtype=F32)])


@pytest.mark.parametrize("name", sorted(REF64))
def test_within_one_ulp_of_the_exact_value(name):
    x = samples()
    got = run(name, x)
    with np.errstate(all="ignore"):
        want = REF64[name](x.astype(np.float64)).astype(F32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    d = ulps(got[ok], want[ok])
    assert d.max() <= 1, x[ok][d > 1][:5]
    assert (d == 0).mean() > 0.999          # correctly rounded but for rare halfway cases


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.2e-38,
                     -1.2e-38, 1.0, -1.0, 88.7, 88.73, 89.0, 1e30, -1e30, -87.4, -103.0,
                     -103.98, -104.0, -110.0, 9.0, 9.02, 10.0, -20.0, 3.4e38, -3.4e38], F32)


@pytest.mark.parametrize("name", sorted(REF64))
def test_special_values_are_numpys(name):
    got = run(name, SPECIALS)
    with np.errstate(all="ignore"):
        want = REF32[name](SPECIALS)
    for g, w, x in zip(got, want, SPECIALS):
        if np.isnan(w) or np.isinf(w) or w == 0 or abs(w) == 1:
            # nan, infinities, zeros (with their sign), and saturation at +-1: NumPy's bits
            assert (np.isnan(g) and np.isnan(w)) or g.tobytes() == w.tobytes(), (x, g, w)
        else:
            assert ulps(np.array([g]), np.array([w]))[0] <= 4, (x, g, w)


@pytest.mark.parametrize("name", sorted(REF64))
def test_a_loop_calling_it_vectorizes(name):
    run(name, np.ones(64, F32))
    loop = _LOOPS[name]
    ir = loop.inspect_llvm(loop.signatures[0])
    assert re.search(r"<\d+ x double>", ir), "the loop did not vectorize"
    # no call of the C library's scalar functions is left in the loop
    assert not re.search(r"call [^@]*@(exp|expf|log|logf|tanh|tanhf|expm1)\b", ir)
