"""VJPs of tnp's fft functions.

Complex cotangents follow HIPS autograd's convention (see :mod:`.linalg`): the transforms are
complex-linear, so the VJP of ``y = F P x`` (``P`` crops or zero-pads to ``n``/``s``) is
``P^T F^T g``; the DFT matrices are symmetric, so ``F^T g`` is the same transform of ``g`` with
the same ``norm``. A real input gets the real part. The real transforms are written out:

* ``rfft``: the real part of the full ``fft`` of ``g`` zero-extended to ``n`` (``fft(g, n=n)``);
* ``irfft`` (real output, Hermitian input): ``w * conj(rfft(g))`` with the opposite ``norm``,
  ``w`` = 2 for the bins that stand for two conjugate frequencies, 1 for the zero (and, for
  even ``n``, the Nyquist) bin, whose imaginary parts the forward ignores;
* ``hfft``/``ihfft``: NumPy's definitions, ``irfft(conj(a))``/``conj(rfft(a))`` with the
  opposite ``norm``, differentiated through;
* the n-dimensional versions: one axis after the other, in the reverse order of the forward.

Repeated axes in ``axes`` (NumPy transforms such an axis twice) have no rule.
"""
from __future__ import annotations

import numpy as _np

import tnp

from ..registry import defvjp, section
from ._helpers import _const, _einsum_labels, _match, with_keywords

section("fft")

_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _resize(x, axis, m):
    """``x`` cropped or zero-padded (at the end) to length ``m`` along ``axis``: the adjoint of
    the forward's padding/cropping."""
    axis %= x.ndim
    n = x.shape[axis]
    if n == m:
        return x
    if n > m:
        return x[(slice(None),) * axis + (slice(0, m),)]
    E = _const(_np.eye(n, m), x)
    labs = [("x", i) for i in range(x.ndim)]
    out = list(labs)
    out[axis] = ("new",)
    return _einsum_labels([x, E], [labs, [labs[axis], ("new",)]], out)


def _cook(a, s, axes, default_axes=None):
    """NumPy's resolution of ``s``/``axes``: (axes, s), axes non-negative."""
    nd = a.ndim
    if axes is None:
        if s is None:
            axes = list(range(nd)) if default_axes is None else list(default_axes)
        else:
            axes = list(range(-len(s), 0))
    axes = [int(ax) % nd for ax in axes]
    if len(set(axes)) != len(axes):
        raise NotImplementedError("tnp_train: no gradient for an fft over repeated axes")
    s = [a.shape[ax] for ax in axes] if s is None else [int(n) for n in s]
    return axes, s


# ---------------------------------------------------------------------------- complex transforms
def _c2c_rule(fn):
    """fft/ifft: the same transform of the cotangent (the DFT matrix is symmetric)."""
    def rule(ans, a, n=None, axis=-1, norm=None, out=None):
        def vjp(g):
            r = fn()(g, axis=axis, norm=norm)
            return _match(_resize(r, axis, a.shape[axis]), a)
        return vjp
    return rule


defvjp("fft.fft", _c2c_rule(lambda: tnp.fft.fft))
defvjp("fft.ifft", _c2c_rule(lambda: tnp.fft.ifft))


def _nd_c2c(fn, default):
    def rule(ans, a, s=None, axes=default, norm=None, out=None):
        def vjp(g):
            ax, _ = _cook(a, s, axes)
            r = fn()(g, axes=ax, norm=norm)
            for k in ax:
                r = _resize(r, k, a.shape[k])
            return _match(r, a)
        return vjp
    return rule


defvjp("fft.fftn", _nd_c2c(lambda: tnp.fft.fftn, None))
defvjp("fft.ifftn", _nd_c2c(lambda: tnp.fft.ifftn, None))
defvjp("fft.fft2", _nd_c2c(lambda: tnp.fft.fftn, (-2, -1)))
defvjp("fft.ifft2", _nd_c2c(lambda: tnp.fft.ifftn, (-2, -1)))


# ---------------------------------------------------------------------------- real transforms
def _rfft_back(h, axis, n, m, norm):
    """Cotangent of a real input of length ``m`` for ``rfft(x, n, axis, norm)`` and the
    cotangent ``h`` of its output."""
    r = tnp.fft.fft(h, n=n, axis=axis, norm=norm)
    return _resize(tnp.real(r), axis, m)


def _irfft_back(g, axis, n, m, norm):
    """Cotangent of a complex input of length ``m`` for ``irfft(x, n, axis, norm)`` (output
    length ``n``) and the real cotangent ``g`` of its output."""
    axis %= g.ndim
    k = n // 2 + 1
    w = _np.full(k, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * g.ndim
    shape[axis] = k
    z = tnp.fft.rfft(g, axis=axis, norm=_SWAP[norm])
    z = tnp.conjugate(z) * _const(w.reshape(shape), g)
    return _resize(z, axis, m)


def _rfft_rule(ans, a, n=None, axis=-1, norm=None, out=None):
    def vjp(g):
        nn = a.shape[axis] if n is None else int(n)
        return _rfft_back(g, axis, nn, a.shape[axis], norm)
    return vjp


def _irfft_rule(ans, a, n=None, axis=-1, norm=None, out=None):
    def vjp(g):
        nn = 2 * (a.shape[axis] - 1) if n is None else int(n)
        return _match(_irfft_back(g, axis, nn, a.shape[axis], norm), a)
    return vjp


def _hfft_rule(ans, a, n=None, axis=-1, norm=None, out=None):
    # hfft(a) = irfft(conj(a), n, axis, swapped norm)
    def vjp(g):
        nn = 2 * (a.shape[axis] - 1) if n is None else int(n)
        z = _irfft_back(g, axis, nn, a.shape[axis], _SWAP[norm])
        return _match(tnp.conjugate(z), a)
    return vjp


def _ihfft_rule(ans, a, n=None, axis=-1, norm=None, out=None):
    # ihfft(a) = conj(rfft(a, n, axis, swapped norm))
    def vjp(g):
        nn = a.shape[axis] if n is None else int(n)
        return _rfft_back(tnp.conjugate(g), axis, nn, a.shape[axis], _SWAP[norm])
    return vjp


def _rfftn_rule(default):
    def rule(ans, a, s=None, axes=default, norm=None, out=None):
        def vjp(g):
            ax, ss = _cook(a, s, axes)
            h = g
            if len(ax) > 1:   # forward: rfft on the last axis, then fft on the others
                h = tnp.fft.fftn(h, axes=ax[:-1], norm=norm)
                for k in ax[:-1]:
                    h = _resize(h, k, a.shape[k])
            return _rfft_back(h, ax[-1], ss[-1], a.shape[ax[-1]], norm)
        return vjp
    return rule


def _irfftn_rule(default):
    def rule(ans, a, s=None, axes=default, norm=None, out=None):
        def vjp(g):
            ax, ss = _cook(a, s, axes)
            if s is None:
                ss[-1] = 2 * (a.shape[ax[-1]] - 1)
            # forward: ifft on all axes but the last, then irfft on the last
            z = _irfft_back(g, ax[-1], ss[-1], a.shape[ax[-1]], norm)
            if len(ax) > 1:
                z = tnp.fft.ifftn(z, axes=ax[:-1], norm=norm)
                for k in ax[:-1]:
                    z = _resize(z, k, a.shape[k])
            return _match(z, a)
        return vjp
    return rule


defvjp("fft.rfft", _rfft_rule)
defvjp("fft.irfft", _irfft_rule)
defvjp("fft.hfft", _hfft_rule)
defvjp("fft.ihfft", _ihfft_rule)
defvjp("fft.rfftn", _rfftn_rule(None))
defvjp("fft.rfft2", _rfftn_rule((-2, -1)))
defvjp("fft.irfftn", _irfftn_rule(None))
defvjp("fft.irfft2", _irfftn_rule((-2, -1)))


# ---------------------------------------------------------------------------- shifts, frequencies
defvjp("fft.fftshift", lambda ans, x, axes=None: lambda g: tnp.fft.ifftshift(g, axes=axes))
defvjp("fft.ifftshift", lambda ans, x, axes=None: lambda g: tnp.fft.fftshift(g, axes=axes))


def _freq_d(ans, n, d=1.0, device=None, **k):
    # f = k / (n d): df/dd = -f / d. (n is an integer; only a floating-point d is differentiable)
    return lambda g: -tnp.sum(g * ans) / d


defvjp(["fft.fftfreq", "fft.rfftfreq"], None, _freq_d, d=_freq_d)
with_keywords({"fft"})
