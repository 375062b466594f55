"""VJP rules of the fft section, checked against finite differences (first and second order).

The transforms are linear, so the losses square their outputs: the second-order check then
differentiates each rule with respect to its cotangent as well. Complex inputs are built from
two real arrays (``re + 1j * im``), so both parts are checked."""
import numpy as np
import pytest

import tnp
from tnp_train.autodiff import GradientTape, check_grads, registry

F = tnp.fft

# complex inputs are built as re + im * 1j: the tape casts the complex cotangents of re and im
# to their real dtype with ndarray.astype, which warns (a tape matter, not these rules')
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def parts(y):
    """A real, nonlinear read-out of a (possibly complex) output."""
    if np.iscomplexobj(np.asarray(y)):
        re, im = tnp.real(y), tnp.imag(y)
        return [re * re + im, re * im]
    return [y * y + y]


def cplx(fn):
    return lambda re, im: parts(fn(re + im * 1j))


def real_in(fn):
    return lambda x: parts(fn(x))


C2C = [
    (dict(), (8,)), (dict(n=6), (8,)), (dict(n=11), (8,)),
    (dict(axis=0, norm="ortho"), (5, 3)), (dict(norm="forward", n=4), (2, 6)),
]


@pytest.mark.parametrize("name", ["fft", "ifft"])
@pytest.mark.parametrize("kw,shape", C2C)
def test_fft_ifft(name, kw, shape):
    fn = getattr(F, name)
    check_grads(real_in(lambda x: fn(x, **kw)), order=2)(R(*shape))
    check_grads(cplx(lambda z: fn(z, **kw)), order=2)(R(*shape), R(*shape, seed=1))


CN = [
    (dict(), (4, 6)), (dict(s=(3, 8), axes=(0, 1)), (4, 6)), (dict(axes=(0, 2), norm="ortho"), (2, 3, 4)),
    (dict(s=(3, 5), axes=(1, 2), norm="forward"), (2, 3, 4)),
]


@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2", "ifft2"])
@pytest.mark.parametrize("kw,shape", CN)
def test_fftn(name, kw, shape):
    fn = getattr(F, name)
    if name.endswith("2") and len(kw.get("axes", (0, 0))) != 2:
        pytest.skip("fft2 takes two axes")
    check_grads(real_in(lambda x: fn(x, **kw)), order=2)(R(*shape))
    check_grads(cplx(lambda z: fn(z, **kw)), order=2)(R(*shape), R(*shape, seed=1))


@pytest.mark.parametrize("kw,shape", [(dict(), (8,)), (dict(), (7,)), (dict(n=6), (8,)),
                                      (dict(n=11), (8,)), (dict(axis=0, norm="ortho"), (6, 3)),
                                      (dict(norm="forward"), (2, 5))])
def test_rfft(kw, shape):
    check_grads(real_in(lambda x: F.rfft(x, **kw)), order=2)(R(*shape))


@pytest.mark.parametrize("kw,shape", [(dict(), (5,)), (dict(n=9), (5,)), (dict(n=6), (5,)),
                                      (dict(n=13), (5,)), (dict(axis=0, norm="ortho"), (4, 3)),
                                      (dict(norm="forward", n=7), (2, 4))])
def test_irfft(kw, shape):
    check_grads(cplx(lambda z: F.irfft(z, **kw)), order=2)(R(*shape), R(*shape, seed=1))
    check_grads(real_in(lambda x: F.irfft(x, **kw)), order=2)(R(*shape))


@pytest.mark.parametrize("kw,shape", [(dict(), (5,)), (dict(n=7), (5,)),
                                      (dict(norm="ortho"), (3, 4)), (dict(norm="forward", n=6), (4,))])
def test_hfft(kw, shape):
    check_grads(cplx(lambda z: F.hfft(z, **kw)), order=2)(R(*shape), R(*shape, seed=1))


@pytest.mark.parametrize("kw,shape", [(dict(), (8,)), (dict(), (7,)), (dict(n=6), (8,)),
                                      (dict(norm="ortho"), (3, 5)), (dict(norm="forward", n=9), (6,))])
def test_ihfft(kw, shape):
    check_grads(real_in(lambda x: F.ihfft(x, **kw)), order=2)(R(*shape))


RN = [(dict(), (4, 6)), (dict(s=(5, 7), axes=(0, 1)), (4, 6)), (dict(s=(3, 4), axes=(-2, -1)), (4, 6)),
      (dict(axes=(0, 2), norm="ortho"), (3, 4, 5)), (dict(norm="forward"), (3, 5))]


@pytest.mark.parametrize("name", ["rfftn", "rfft2"])
@pytest.mark.parametrize("kw,shape", RN)
def test_rfftn(name, kw, shape):
    check_grads(real_in(lambda x: getattr(F, name)(x, **kw)), order=2)(R(*shape))


IRN = [(dict(), (4, 5)), (dict(s=(4, 7), axes=(0, 1)), (4, 5)), (dict(s=(3, 10), axes=(0, 1)), (4, 5)),
       (dict(axes=(0, 2), norm="ortho"), (3, 2, 4)), (dict(norm="forward", s=(5, 6), axes=(0, 1)), (4, 3))]


@pytest.mark.parametrize("name", ["irfftn", "irfft2"])
@pytest.mark.parametrize("kw,shape", IRN)
def test_irfftn(name, kw, shape):
    fn = getattr(F, name)
    check_grads(cplx(lambda z: fn(z, **kw)), order=2)(R(*shape), R(*shape, seed=1))


def test_real_input_gets_real_gradient():
    x = R(6)
    with GradientTape() as t:
        t.watch(x)
        y = tnp.sum(tnp.imag(F.fft(x)) ** 2)
    g = t.gradient(y, x)
    assert g.dtype == np.float64


def test_fft_formula():
    # d/dx sum(u * real(fft(x))) = real(fft(u)) for the symmetric DFT matrix
    x, u = R(8), R(8, seed=3)
    with GradientTape() as t:
        t.watch(x)
        y = tnp.sum(u * tnp.real(F.fft(x)))
    g = t.gradient(y, x)
    assert np.allclose(np.asarray(g), np.real(np.fft.fft(np.asarray(u))))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("shape,axes", [((5,), None), ((4, 3), 0), ((3, 5), (0, 1))])
def test_shifts(name, shape, axes):
    check_grads(lambda x: getattr(F, name)(x, axes=axes) ** 2, order=2)(R(*shape))


@pytest.mark.parametrize("name,n", [("fftfreq", 8), ("fftfreq", 7), ("rfftfreq", 8)])
def test_freq_spacing(name, n):
    check_grads(lambda d: getattr(F, name)(n, d) ** 2, order=2)(tnp.asarray(0.7))
    out = getattr(F, name)(n, 0.5)
    assert np.allclose(np.asarray(out), getattr(np.fft, name)(n, 0.5))


def test_arrays_passed_by_keyword():
    check_grads(real_in(lambda x: F.rfft(a=x, n=6)), order=2)(R(5))
    check_grads(lambda d: F.fftfreq(6, d=d) ** 2, order=2)(tnp.asarray(0.3))


def test_fft_section_complete():
    missing = [n for n in registry.missing() if tnp.REGISTRY[n].section == "fft"]
    assert missing == []
