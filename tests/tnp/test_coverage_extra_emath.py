"""``tnp.emath`` against ``numpy.emath``: every function over real inputs inside and outside the
real domain (where the result turns complex), integer/float/complex dtypes, scalars, 0-d and n-d
shapes; ``logn``/``power`` with array and scalar second arguments."""
import numpy as np
import pytest

import tnp  # noqa: F401 (the namespace under test, through both())
from tnp.testing import both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

UNARY = ["sqrt", "log", "log2", "log10", "arccos", "arcsin", "arctanh"]
BINARY = ["logn", "power"]
DTYPES = ["int32", "int64", "float32", "float64", "complex128"]
SHAPES = [(), (5,), (2, 3)]


def _sample(dtype, shape, lo=-3, hi=3):
    n = int(np.prod(shape))
    x = np.linspace(lo, hi, n if n else 1).reshape(shape)
    if np.dtype(dtype).kind in "iu":
        x = np.round(x)
    if np.dtype(dtype).kind == "c":
        x = x + 0.5j * x[::-1] if shape else x + 0.5j
    return np.asarray(x).astype(dtype)


def test_every_emath_name_is_swept():
    assert set(np.emath.__all__) == set(UNARY) | set(BINARY)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dtype, shape):
    for lo, hi in ((-3, 3), (-0.9, 0.9), (1, 4)):
        x = _sample(dtype, shape, lo, hi)
        both(lambda xp: getattr(xp.emath, name)(xp.asarray(x)))


@pytest.mark.parametrize("name", UNARY)
def test_unary_python_scalars_and_lists(name):
    for v in (-2, -0.5, 0.25, 4.0, 1 + 1j):
        both(lambda xp: getattr(xp.emath, name)(v))
    both(lambda xp: getattr(xp.emath, name)([-4.0, 0.5, 9.0]))
    both(lambda xp: getattr(xp.emath, name)("x"))   # TypeError


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_logn_and_power(dtype, shape):
    x = _sample(dtype, shape, -4, 4)
    n = _sample(dtype, shape, 2, 3)
    both(lambda xp: xp.emath.logn(2, xp.asarray(x)))
    both(lambda xp: xp.emath.logn(xp.asarray(n), xp.asarray(x)))
    both(lambda xp: xp.emath.power(xp.asarray(x), 2))
    both(lambda xp: xp.emath.power(xp.asarray(x), 0.5))
    both(lambda xp: xp.emath.power(xp.asarray(x), xp.asarray(n)))
    both(lambda xp: xp.emath.power(xp.asarray(x), xp.ones((4,))))   # ValueError unless broadcastable


def test_named_examples():
    both(lambda xp: xp.emath.sqrt(-1))
    both(lambda xp: xp.emath.log(-xp.e))
    both(lambda xp: xp.emath.log2(xp.asarray([-8, 8])))
    both(lambda xp: xp.emath.log10(xp.asarray([-100.0, 1000.0], dtype="float32")))
    both(lambda xp: xp.emath.arccos(xp.asarray([1, 2])))
    both(lambda xp: xp.emath.arcsin(xp.asarray([[0.5], [-2.0]])))
    both(lambda xp: xp.emath.arctanh(xp.asarray([0.5, 2.0])))
    both(lambda xp: xp.emath.logn(xp.asarray([2, 3]), xp.asarray([[4, -8]])))
