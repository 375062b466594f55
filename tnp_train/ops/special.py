"""The error function on backend arrays without SciPy (``erf``), for ``gelu``'s exact form.

NumPy has no ``erf`` and SciPy is not a dependency of tnp_train, so the CPU path evaluates the
rational approximations of fdlibm's ``s_erf.c`` (Sun Microsystems, 1993; the method and the
coefficients below are theirs, their notice follows), vectorised over the four intervals of
``|x|``; fdlibm bounds its error by one ulp, and the tests hold it to SciPy's ``erf`` within
1e-15 relative. CuPy arrays go to ``cupyx.scipy.special.erf`` (part of CuPy itself).

    ====================================================
    Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.

    Developed at SunPro, a Sun Microsystems, Inc. business.
    Permission to use, copy, modify, and distribute this
    software is freely granted, provided that this notice
    is preserved.
    ====================================================
"""
from __future__ import annotations

import numpy as _np

from tnp.extend import cupy as _cupy, is_floating

__all__ = ["erf"]

# erf(x) = x + x * P(x^2) / Q(x^2) on |x| < 0.84375
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# erf(1 + s) = erx + P(s) / Q(s) on 0.84375 <= |x| < 1.25 (erx: erf(1) rounded to 24 bits)
_ERX = 8.45062911510467529297e-01
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# erfc(x) = exp(-x^2 - 0.5625 + R(1/x^2) / S(1/x^2)) / x on 1.25 <= |x| < 1/0.35 ...
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
# ... and on 1/0.35 <= |x| < 6 (above 6, erf rounds to +-1)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)

# fdlibm splits on the high 32 bits of |x|: 0x4006DB6E is 1/0.35 rounded that way
_ONE_OVER_035 = float(_np.array(0x4006DB6E00000000, dtype=_np.uint64).view(_np.float64))
_HIGH_WORD = _np.uint64(0xFFFFFFFF00000000)


def _poly(coefs, z):
    """``coefs[0] + coefs[1] z + ...`` by Horner's rule, in place on one temporary."""
    r = z * coefs[-1]
    r += coefs[-2]
    for c in coefs[-3::-1]:
        r *= z
        r += c
    return r


def _erf_f64(x):
    """erf of a 1-d float64 NumPy array."""
    ax = _np.abs(x)
    # |x| >= 6, +-inf and nan: sign(x) is erf to double precision (and nan for nan). Each
    # interval is gathered by integer index (take/put): boolean indexing of mixed inputs costs
    # several times more, mispredicting a branch per element
    out = _np.sign(x)
    i = _np.flatnonzero(ax < 0.84375)
    if i.size:
        xs = x.take(i)
        z = xs * xs
        r = _poly(_PP, z)
        r /= _poly(_QQ, z)
        r *= xs
        r += xs
        out.put(i, r)
    i = _np.flatnonzero((ax >= 0.84375) & (ax < 1.25))
    if i.size:
        s = ax.take(i)
        s -= 1.0
        r = _poly(_PA, s)
        r /= _poly(_QA, s)
        r += _ERX
        out.put(i, _np.copysign(r, x.take(i), out=r))
    for lo, hi, r_coefs, s_coefs in ((1.25, _ONE_OVER_035, _RA, _SA),
                                     (_ONE_OVER_035, 6.0, _RB, _SB)):
        i = _np.flatnonzero((ax >= lo) & (ax < hi))
        if not i.size:
            continue
        at = ax.take(i)
        s = at * at
        _np.divide(1.0, s, out=s)
        # exp(-x^2) as exp(-z^2) exp((z - x)(z + x)) with z = x cut to its high 32 bits: z^2 is
        # then exact, so the rounding of x^2 (amplified by exp) does not reach the result
        z = (at.view(_np.uint64) & _HIGH_WORD).view(_np.float64)
        ratio = _poly(r_coefs, s)
        ratio /= _poly(s_coefs, s)
        t = z - at
        t *= z + at
        t += ratio
        _np.exp(t, out=t)
        z *= z
        z += 0.5625
        _np.negative(z, out=z)
        _np.exp(z, out=z)
        z *= t
        z /= at
        _np.subtract(1.0, z, out=z)
        out.put(i, _np.copysign(z, x.take(i), out=z))
    return out


def erf(xp, a):
    """``erf`` of backend array ``a`` (float or integer; complex is refused), in ``a``'s dtype
    (integers give float64, as ``scipy.special.erf``); ``xp`` is ``a``'s array module."""
    if xp is _cupy():  # pragma: no cover - GPU only
        from cupyx.scipy.special import erf as cupy_erf
        return cupy_erf(a)
    a = _np.asarray(a)
    if a.dtype.kind == "c":
        raise TypeError(f"erf: complex input (dtype {a.dtype}) is not supported")
    out_dtype = a.dtype if is_floating(a.dtype) else _np.float64
    r = _erf_f64(a.astype(_np.float64).reshape(-1))
    return r.reshape(a.shape).astype(out_dtype, copy=False)
