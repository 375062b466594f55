"""The string hashes TF's ops use, so hashed bins equal TF's: FarmHash ``Fingerprint64``
(``farmhashna::Hash64``; ``tf.strings.to_hash_bucket_fast``) and SipHash-2-4 keyed by two
64-bit words (TF's ``StrongKeyedHash``; ``tf.strings.to_hash_bucket_strong``).

Pure Python on the UTF-8 bytes of each string: a vocabulary or a batch of strings is small
next to the arrays the numeric layers see, and strings live on the host anyway.
"""
from __future__ import annotations

import struct

__all__ = ["fingerprint64", "siphash24"]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _f64(s, i):
    return struct.unpack_from("<Q", s, i)[0]


def _f32(s, i):
    return struct.unpack_from("<I", s, i)[0]


def _rot(v, r):
    return v if r == 0 else ((v >> r) | (v << (64 - r))) & _M


def _shift_mix(v):
    return v ^ (v >> 47)


def _len16(u, v, mul):
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s, n):
    if n >= 8:
        mul = (_K2 + n * 2) & _M
        a = (_f64(s, 0) + _K2) & _M
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _len16(c, d, mul)
    if n >= 4:
        mul = (_K2 + n * 2) & _M
        a = _f32(s, 0)
        return _len16((n + (a << 3)) & _M, _f32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _len17to32(s, n):
    mul = (_K2 + n * 2) & _M
    a = (_f64(s, 0) * _K1) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * _K2) & _M
    return _len16((_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
                  (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)


def _len33to64(s, n):
    mul = (_K2 + n * 2) & _M
    a = (_f64(s, 0) * _K2) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _len16(y, (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_f64(s, 16) * mul) & _M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & _M
    h = ((z + _f64(s, n - 24)) * mul) & _M
    return _len16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
                  (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s, i, a, b):
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(data: bytes) -> int:
    """FarmHash ``Fingerprint64`` of ``data`` (an unsigned 64-bit int), as TF computes it."""
    s, n = data, len(data)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _f64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    i = 0
    while True:
        x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * _K1) & _M
        y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * _K1) & _M
        x ^= w1
        y = (y + v0 + _f64(s, i + 40)) & _M
        z = (_rot((z + w0) & _M, 33) * _K1) & _M
        v0, v1 = _weak32(s, i, (v1 * _K1) & _M, (x + w0) & _M)
        w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = (_K1 + ((z & 0xFF) << 1)) & _M
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _f64(s, i + 40)) & _M
    z = (_rot((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(s, i, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
    z, x = x, z
    return _len16((_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _M,
                  (_len16(v1, w1, mul) + x) & _M, mul)


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rot(v1, 64 - 13) ^ v0
    v0 = _rot(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rot(v3, 64 - 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rot(v3, 64 - 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rot(v1, 64 - 17) ^ v2
    v2 = _rot(v2, 32)
    return v0, v1, v2, v3


def siphash24(key0: int, key1: int, data: bytes) -> int:
    """SipHash-2-4 of ``data`` with the 128-bit key ``(key0, key1)`` (TF's ``StrongKeyedHash``)."""
    k0, k1 = key0 & _M, key1 & _M
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _f64(data, i)
        v3 ^= m
        for _ in range(2):
            v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0 ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(data[full:], "little")
    v3 ^= last
    for _ in range(2):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3
