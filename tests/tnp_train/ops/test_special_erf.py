"""``tnp_train.ops.special.erf`` (NumPy-only: SciPy is not a core dependency) against SciPy's
``erf`` to 1e-15 relative where SciPy is installed, else against ``math.erf`` elementwise; and
the exact ``gelu`` (Keras's default form) with SciPy made unimportable."""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tnp_train.ops.special import erf


def _inputs():
    rng = np.random.default_rng(0)
    # every interval of the method and each boundary between two (0.84375, 1.25, 1/0.35, 6),
    # with their neighbours one ulp away, subnormals, signed zeros, infinities
    edges = np.array([0.84375, 1.25, 2.857142857142857, 2.8571434020996094, 6.0])
    edges = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 10)])
    special = np.array([0.0, -0.0, 5e-324, -1e-310, 1e-300, 3.7e-9, 1e-20, 27.0, 1e300,
                        np.inf, -np.inf])
    return np.concatenate([rng.standard_normal(4000) * 2, rng.uniform(-7, 7, 4000),
                           np.linspace(-6.5, 6.5, 2001), edges, -edges, special])


def _relative_error(got, want):
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float64).tiny))


def test_erf_matches_scipy_to_1e_15():
    special = pytest.importorskip("scipy.special")
    x = _inputs()
    assert _relative_error(erf(np, x), special.erf(x)) <= 1e-15


def test_erf_matches_math_erf():
    x = _inputs()
    want = np.array([math.erf(v) for v in x])
    assert _relative_error(erf(np, x), want) <= 1e-15


def test_erf_keeps_sign_of_zero_and_nan_shapes_and_dtypes():
    r = erf(np, np.array([-0.0, 0.0, np.nan]))
    assert np.signbit(r[0]) and not np.signbit(r[1]) and np.isnan(r[2])
    assert erf(np, np.float64(0.5)).shape == ()
    assert erf(np, np.ones((2, 0, 3))).shape == (2, 0, 3)
    assert erf(np, np.ones((2, 3), np.float32)).dtype == np.float32
    assert erf(np, np.arange(3)).dtype == np.float64       # integers: float64, as SciPy
    np.testing.assert_allclose(erf(np, np.arange(3)), [math.erf(v) for v in range(3)],
                               rtol=1e-15)
    with pytest.raises(TypeError, match="erf: complex"):
        erf(np, np.ones(2, complex))


def test_gelu_exact_without_scipy():
    """SciPy blocked in a fresh interpreter: gelu's value, gradient and second derivative."""
    code = textwrap.dedent("""
        import math, sys
        sys.modules["scipy"] = None            # import scipy (and scipy.special) now fails
        import numpy as np
        import tnp
        import tnp_train as tt
        from tnp_train.autodiff import GradientTape, check_grads
        x = tnp.asarray(np.linspace(-4.0, 4.0, 17))
        y = tt.activations.gelu(x)
        want = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in np.asarray(x)]
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-15, atol=1e-300)
        check_grads(tt.activations.gelu, order=2)(x)
        assert "scipy.special" not in sys.modules or sys.modules["scipy.special"] is None
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
