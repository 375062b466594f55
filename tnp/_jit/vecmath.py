"""float32 ``exp``, ``log``, ``tanh``, ``expm1`` and ``sigmoid`` for Numba loops that LLVM
vectorizes (``tnp.extend.vecmath``).

Numba lowers ``np.tanh`` and ``np.exp`` of a scalar to calls of the C library, one element at a
time, which keeps a loop from vectorizing. These are written with the operations a SIMD unit
has (multiply-adds, selects, rounding, integer shifts on the bits of a float64): each float32
argument is widened to float64, the function is evaluated there to about 1e-11 relative error
or better, and the result is rounded once to float32. That is the correctly rounded float32
result, except when the exact value lies that close to a halfway point between two float32
numbers (a few arguments in a million), so it is within one ulp of the exact value, and within
one to four ulps of NumPy's own float32 loops (which are not correctly rounded either). On a
Zen 4 core a loop of ``exp_f32`` takes about 0.65 ns an element, ``tanh_f32`` 0.9 ns (NumPy's
own AVX-512 loops: 0.45 and 0.35 ns; Numba's scalar calls of the C library: 2.3 and 16 ns).

Special values are NumPy's: ``nan`` stays ``nan``, ``exp(inf) = inf``, ``exp(-inf) = 0``,
``log(0) = -inf``, ``log`` of a negative is ``nan``, ``tanh(+-inf) = +-1``, signed zeros are
kept; overflow gives ``inf`` and underflow gives the float32 subnormals, then zero, as NumPy's
do. Floating-point flags are not raised (NumPy's
loops raise ``overflow`` and ``invalid``).

Call them inside ``@numba.njit`` functions (``error_model="numpy"`` keeps divisions free of
Python's zero checks). Loading this module loads Numba.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["exp_f32", "expm1_f32", "log_f32", "tanh_f32", "sigmoid_f32"]

_inline = numba.njit(inline="always", error_model="numpy")
_f32, _f64, _i64 = np.float32, np.float64, np.int64


@intrinsic
def _f64_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits`` (a register move, no memory)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_of_f64(typingctx, x):
    """The IEEE bits of float64 ``x`` as an int64."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        v = context.cast(builder, args[0], signature.args[0], types.float64)
        return builder.bitcast(v, ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _fmuladd(typingctx, a, b, c):
    """``a * b + c`` as one fused multiply-add where the CPU has one (``llvm.fmuladd``: a
    multiply and an add elsewhere); vectorizes either way."""
    if not all(isinstance(t, types.Float) for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        vals = [context.cast(builder, v, t, types.float64) for v, t in zip(args, signature.args)]
        f = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]),
                                           "llvm.fmuladd.f64")
        return builder.call(f, vals)

    return types.float64(types.float64, types.float64, types.float64), codegen


_INV_LN2 = _f64(1.0 / math.log(2.0))
# ln 2 in two parts: k * _LN2_HI is exact for the |k| < 2**11 met here (Cody and Waite)
_LN2_HI = _f64(float.fromhex("0x1.62e42fefa3800p-1"))
_LN2_LO = _f64(math.log(2.0) - float.fromhex("0x1.62e42fefa3800p-1"))
_LN2 = _f64(math.log(2.0))
_ROUND = _f64(float.fromhex("0x1.8p52"))     # adding and subtracting it rounds to an integer
_ROUND_BITS = _i64(np.array(_ROUND).view(np.int64))
_SQRT2 = _f64(math.sqrt(2.0))
# 1/n! for n = 2..11: Taylor's series of expm1 on |r| <= ln(2)/2, cut where the rest is below
# 3e-13 of r (a float32 ulp is 6e-8)
_C = tuple(_f64(1.0 / math.factorial(n)) for n in range(2, 12))
# 1/(2n+1) for n = 1..8: atanh's series on |s| <= 3 - 2 sqrt(2), the rest below 1e-14 of s
_A = tuple(_f64(1.0 / (2 * n + 1)) for n in range(1, 9))


@_inline
def _reduce(y):
    """``(big, r)``: ``y = k ln 2 + r``, ``|r| <= ln(2) / 2``, with ``k`` in the low bits of
    ``big`` (round to nearest, as an integer)."""
    big = y * _INV_LN2 + _ROUND
    kf = big - _ROUND
    return big, _fmuladd(-kf, _LN2_LO, _fmuladd(-kf, _LN2_HI, y))


@_inline
def _pow2(big):
    """``2**k`` from ``k``'s bits in ``big`` (no float-to-integer conversion; a nan gives some
    power of 2, and the caller's ``q`` is nan already)."""
    return _f64_from_bits((_bits_of_f64(big) - _ROUND_BITS + 1023) << 52)


@_inline
def _expm1_from(big, r, p):
    """``(2**k, q)`` from the reduction ``(big, r)`` and the polynomial's high part ``p`` (its
    coefficient of ``r**7`` and above, evaluated): the rest of Horner's scheme, the same for
    both lengths."""
    p = _fmuladd(p, r, _C[6])
    p = _fmuladd(p, r, _C[5])
    p = _fmuladd(p, r, _C[4])
    p = _fmuladd(p, r, _C[3])
    p = _fmuladd(p, r, _C[2])
    p = _fmuladd(p, r, _C[1])
    p = _fmuladd(p, r, _C[0])
    return _pow2(big), _fmuladd(r * r, p, r)


@_inline
def _expm1_parts(y):
    """``(2**k, q)`` with ``exp(y) = 2**k * (1 + q)``, ``|q| <= 0.42`` to 1e-12 relative, for
    float64 ``y`` in [-110, 110] (nan in, nan out)."""
    big, r = _reduce(y)
    return _expm1_from(big, r, _fmuladd(_fmuladd(_C[9], r, _C[8]), r, _C[7]))


@_inline
def _expm1_parts_short(y):
    """:func:`_expm1_parts` to 3e-11 relative (two terms fewer), for tanh: its float32
    result stays within an ulp, correctly rounded but for a few arguments in a million."""
    big, r = _reduce(y)
    return _expm1_from(big, r, _C[7])


@_inline
def exp_f32(x):
    """``exp`` of a float32, as float32 (within an ulp of the exact value)."""
    y = _f64(x)
    y = _f64(89.0) if y > 89.0 else y          # exp(89) rounds to inf in float32
    y = _f64(-104.0) if y < -104.0 else y      # exp(-104) rounds to 0 in float32
    s, q = _expm1_parts(y)
    return _f32(_fmuladd(s, q, s))


@_inline
def expm1_f32(x):
    """``expm1`` (``exp(x) - 1``, exact near 0) of a float32, as float32."""
    y = _f64(x)
    y = _f64(89.0) if y > 89.0 else y
    y = _f64(-20.0) if y < -20.0 else y        # expm1(-20) rounds to -1 in float32
    s, q = _expm1_parts(y)
    r = _fmuladd(s, q, s - 1.0)
    return _f32(y if y == 0.0 else r)           # expm1(-0.0) is -0.0


@_inline
def log_f32(x):
    """Natural ``log`` of a float32, as float32: ``log(0) = -inf``, ``log(x < 0) = nan``."""
    y = _f64(x)
    b = _bits_of_f64(y)
    e = ((b >> 52) & 0x7FF) - 1023
    m = _f64_from_bits((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)     # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = _fmuladd(_A[7], s2, _A[6])
    p = _fmuladd(p, s2, _A[5])
    p = _fmuladd(p, s2, _A[4])
    p = _fmuladd(p, s2, _A[3])
    p = _fmuladd(p, s2, _A[2])
    p = _fmuladd(p, s2, _A[1])
    p = _fmuladd(p, s2, _A[0])
    r = _fmuladd(_f64(e), _LN2, 2.0 * _fmuladd(s * s2, p, s))
    r = -np.inf if y == 0.0 else r
    r = np.nan if y < 0.0 else r
    r = y if y == np.inf else r
    r = y if y != y else r
    return _f32(r)


@_inline
def tanh_f32(x):
    """``tanh`` of a float32, as float32 (``tanh(-0.0) = -0.0``)."""
    y = _f64(x)
    a = abs(y)
    a = _f64(10.0) if a > 10.0 else a          # tanh(10) rounds to 1 in float32
    s, q = _expm1_parts_short(2.0 * a)
    u = _fmuladd(s, q, s - 1.0)               # expm1(2|x|), exact near 0
    t = u / (u + 2.0)
    t = a if a != a else t
    return _f32(math.copysign(t, y))


@_inline
def sigmoid_f32(x):
    """The logistic function ``1 / (1 + exp(-x))`` of a float32, as float32."""
    y = _f64(x)
    y = _f64(110.0) if y > 110.0 else y
    y = _f64(-110.0) if y < -110.0 else y
    s, q = _expm1_parts(-y)
    return _f32(1.0 / (1.0 + _fmuladd(s, q, s)))
