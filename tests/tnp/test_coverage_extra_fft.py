"""``tnp.fft`` against ``numpy.fft``: every transform over real and complex inputs of two
precisions and several shapes, with ``n=``/``s=``, ``axis=``/``axes=`` and every ``norm=``; the
helper functions; bad arguments raise NumPy's exception type. On the CPU NumPy computes the
values, so they are compared exactly."""
import zlib

import numpy as np
import pytest

import tnp  # noqa: F401 (the namespace under test, through both())
from tnp.testing import both

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]
HELPERS = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "rfftn"}
NORMS = [None, "backward", "ortho", "forward"]
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _sample(dtype, shape):
    rng = np.random.default_rng(zlib.crc32(repr((str(dtype), shape)).encode()))
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def test_every_fft_name_is_swept():
    assert set(np.fft.__all__) == set(ONE_D) | set(N_D) | set(HELPERS)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape", [(8,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_transforms(name, dtype, shape, norm):
    if name in REAL_ONLY and dtype.startswith("complex"):
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(_sample(dtype, shape))))  # TypeError
        return
    x = _sample(dtype, shape)
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), norm=norm))
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), n=6, axis=0, norm=norm))
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), n=11, axis=-1))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 4)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", N_D)
def test_n_dimensional_transforms(name, dtype, shape, norm):
    if name in REAL_ONLY and dtype.startswith("complex"):
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(_sample(dtype, shape))))  # TypeError
        return
    x = _sample(dtype, shape)
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), norm=norm))
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), s=(3, 4), axes=(0, -1), norm=norm))
    if name.endswith("n"):
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), axes=[-1]))


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_bad_arguments(name):
    x = _sample("float64", (4, 4))
    both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), norm="bogus"))     # ValueError
    if name in ONE_D:
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), n=0))           # ValueError
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), axis=3))        # AxisError
    else:
        both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), s=(2, 2, 2), axes=(0, 1)))


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex128"])
def test_shifts(dtype):
    for shape in [(7,), (4, 5)]:
        x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
        for name in ("fftshift", "ifftshift"):
            both(lambda xp: getattr(xp.fft, name)(xp.asarray(x)))
            both(lambda xp: getattr(xp.fft, name)(xp.asarray(x), axes=0))
            both(lambda xp: getattr(xp.fft, name)(x.tolist(), axes=(-1,)))


@pytest.mark.parametrize("d", [1.0, 0.25, 3])
@pytest.mark.parametrize("n", [1, 8, 9])
def test_frequencies(n, d):
    both(lambda xp: xp.fft.fftfreq(n, d))
    both(lambda xp: xp.fft.rfftfreq(n, d=d))
    both(lambda xp: xp.fft.fftfreq(0))                                        # ZeroDivisionError


def test_round_trips_keep_numpys_values():
    x = _sample("float64", (6, 4))
    both(lambda xp: xp.fft.irfftn(xp.fft.rfftn(xp.asarray(x)), s=x.shape, axes=(0, 1)))
    both(lambda xp: xp.fft.ifft2(xp.fft.fft2(xp.asarray(x))))
    both(lambda xp: xp.fft.hfft(xp.fft.ihfft(xp.asarray(x[0])), n=4))
