"""Image resampling as TF's kernels compute it, on tnp arrays of shape ``(N, H, W, C)``.

``resize`` follows ``tf.image.resize`` (``resize_images_v2``, ``antialias=False``): "bilinear",
"nearest" and "bicubic" with half-pixel centers (bicubic: Keys' kernel with a = -0.5 read from
TF's 1024-entry table, taps outside the image dropped and the rest renormalised), "area" (TF's
``resize_area``), and "lanczos3", "lanczos5", "gaussian", "mitchellcubic" (TF's
``ScaleAndTranslate`` kernels). Sampling positions and weights are computed in float32 as TF
does; bilinear uses TF's lerp order, so it equals TF's values bit for bit (on the fixtures; a
compiler's FMA contraction in TF's kernel could differ in the last bit); the weight-matrix
methods sum in another order than TF (a few float32 ulps).

``transform`` follows ``ImageProjectiveTransformV3`` (the augmentation layers' op): fill modes
reflect/wrap/constant/nearest, interpolation nearest/bilinear.

Both gather from the image with tnp ops, so gradients flow to the image; positions and weights
are constants.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import is_floating

__all__ = ["resize", "transform", "RESIZE_METHODS"]

_F = _np.float32
RESIZE_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                  "mitchellcubic")


def _half_pixel(out_size, scale):
    return (_np.arange(out_size, dtype=_F) + _F(0.5)) * _F(scale) - _F(0.5)


def _bilinear_taps(in_size, out_size):
    scale = _F(in_size) / _F(out_size)
    pos = _half_pixel(out_size, scale)
    fl = _np.floor(pos)
    lo = _np.maximum(fl.astype(_np.int64), 0)
    hi = _np.minimum(_np.ceil(pos).astype(_np.int64), in_size - 1)
    return lo, hi, (pos - fl).astype(_F)


def _nearest_index(in_size, out_size):
    scale = _F(in_size) / _F(out_size)
    pos = (_np.arange(out_size, dtype=_F) + _F(0.5)) * scale
    return _np.minimum(_np.floor(pos).astype(_np.int64), in_size - 1)


def _keys_table():
    a = -0.5
    x = _np.arange(1025, dtype=_np.float64) / 1024
    t0 = (((a + 2) * x - (a + 3)) * x * x + 1).astype(_F)
    x1 = x + 1.0
    t1 = (((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a).astype(_F)
    return t0, t1


def _bicubic_matrix(in_size, out_size):
    t0, t1 = _keys_table()
    scale = _F(in_size) / _F(out_size)
    pos = _half_pixel(out_size, scale)
    m = _np.zeros((out_size, in_size), dtype=_F)
    for o, p in enumerate(pos):
        base = int(math.floor(p))
        off = int(_np.rint(_F(p - _F(base)) * _F(1024)))
        taps = ((base - 1, t1[off]), (base, t0[off]), (base + 1, t0[1024 - off]),
                (base + 2, t1[1024 - off]))
        w = [(i, wt) for i, wt in taps if 0 <= i < in_size]
        total = _F(sum(_F(wt) for _, wt in w))
        for i, wt in w:
            m[o, i] += _F(wt) / total if abs(total) >= 1000 * _np.finfo(_F).tiny else _F(wt)
    return m


def _area_matrix(in_size, out_size):
    scale = in_size / out_size
    m = _np.zeros((out_size, in_size), dtype=_np.float64)
    for o in range(out_size):
        a, b = o * scale, (o + 1) * scale
        for i in range(int(math.floor(a)), int(math.ceil(b))):
            w = min(i + 1, b) - max(i, a)
            m[o, min(max(i, 0), in_size - 1)] += w
    return (m / scale).astype(_F)


def _lanczos(radius):
    def k(x):
        x = abs(x)
        if x > radius:
            return 0.0
        if x <= 1e-3:
            return 1.0
        return radius * math.sin(math.pi * x) * math.sin(math.pi * x / radius) / \
            (math.pi * math.pi * x * x)
    return k, radius


def _gaussian(x):
    x = abs(x)
    return 0.0 if x >= 1.5 else math.exp(-x * x / (2 * 0.5 * 0.5))


def _mitchell(x):
    x = abs(x)
    if x >= 2:
        return 0.0
    if x >= 1:
        return ((-7.0 / 18.0 * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0
    return (7.0 / 6.0 * x - 2.0) * x * x + 8.0 / 9.0


_KERNELS = {"lanczos3": _lanczos(3), "lanczos5": _lanczos(5), "gaussian": (_gaussian, 1.5),
            "mitchellcubic": (_mitchell, 2.0)}


def _scale_translate_matrix(in_size, out_size, method):
    kernel, radius = _KERNELS[method]
    scale = _F(out_size) / _F(in_size)
    inv = _F(1.0) / scale
    m = _np.zeros((out_size, in_size), dtype=_F)
    for o in range(out_size):
        sample = _F(_F(o + 0.5) * inv)
        if sample < 0 or sample > in_size:
            continue
        start = min(max(int(math.ceil(sample - radius - 0.5)), 0), in_size - 1)
        end = min(max(int(math.floor(sample + radius - 0.5)), 0), in_size - 1) + 1
        w = [_F(kernel(float(_F(_F(i) + _F(0.5) - sample)))) for i in range(start, end)]
        total = _F(sum(w))
        if abs(total) >= 1000 * _np.finfo(_F).tiny:
            for j, wt in enumerate(w):
                m[o, start + j] = wt * (_F(1.0) / total)
    return m


def _matrix(method, in_size, out_size):
    if method == "bicubic":
        return _bicubic_matrix(in_size, out_size)
    if method == "area":
        return _area_matrix(in_size, out_size)
    return _scale_translate_matrix(in_size, out_size, method)


def resize(images, height, width, method="bilinear"):
    """``tf.image.resize(images, (height, width), method)`` for a 4-D tnp array; float32
    results, except "nearest" which keeps the dtype (as TF)."""
    if method not in RESIZE_METHODS:
        raise ValueError(f"resize: method must be one of {RESIZE_METHODS}, got {method!r}")
    n, h, w, c = images.shape
    dev = images.device
    if method == "nearest":
        iy = tnp.asarray(_nearest_index(h, height), device=dev)
        ix = tnp.asarray(_nearest_index(w, width), device=dev)
        return tnp.take(tnp.take(images, iy, axis=1), ix, axis=2)
    x = images if images.dtype == _F else images.astype(_F)
    if method == "bilinear":
        ylo, yhi, yl = _bilinear_taps(h, height)
        xlo, xhi, xl = _bilinear_taps(w, width)
        top_rows = tnp.take(x, tnp.asarray(ylo, device=dev), axis=1)
        bot_rows = tnp.take(x, tnp.asarray(yhi, device=dev), axis=1)
        ixlo, ixhi = tnp.asarray(xlo, device=dev), tnp.asarray(xhi, device=dev)
        xl = tnp.asarray(xl.reshape(1, 1, width, 1), device=dev)
        yl = tnp.asarray(yl.reshape(1, height, 1, 1), device=dev)
        tl, tr = tnp.take(top_rows, ixlo, axis=2), tnp.take(top_rows, ixhi, axis=2)
        bl, br = tnp.take(bot_rows, ixlo, axis=2), tnp.take(bot_rows, ixhi, axis=2)
        top = tl + (tr - tl) * xl
        bottom = bl + (br - bl) * xl
        return top + (bottom - top) * yl
    my = tnp.asarray(_matrix(method, h, height), device=dev)
    mx = tnp.asarray(_matrix(method, w, width), device=dev)
    # columns first, then rows, as ScaleAndTranslate gathers
    t = tnp.einsum("wx,nhxc->nhwc", mx, x)
    return tnp.einsum("hy,nywc->nhwc", my, t)


# ------------------------------------------------------------------ projective transform
def _map_coord(c, size, mode):
    """TF's ``MapCoordinate``: out-of-image sampling positions folded back per fill mode."""
    if mode == "constant":
        return c
    if size <= 1:
        return _np.zeros_like(c)
    L = _F(size)
    if mode == "reflect":
        c = c.copy()
        lo, hi = c < 0, c > L - 1     # TF's if / else-if: both decided on the input
        sz2 = _F(2) * L
        v = c[lo]
        v = _np.where(v < -sz2, sz2 * _np.trunc(-v / sz2).astype(_F) + v, v)
        c[lo] = _np.where(v < -L, v + sz2, -v - _F(1))
        v = c[hi]
        v = v - sz2 * _np.trunc(v / sz2).astype(_F)
        c[hi] = _np.where(v >= L, sz2 - v - _F(1), v)
    elif mode == "wrap":
        c = c.copy()
        sz = L - _F(1)
        lo, hi = c < 0, c > L - 1
        c[lo] = c[lo] + L * (_np.trunc(-c[lo] / sz).astype(_F) + _F(1))
        c[hi] = c[hi] - L * _np.trunc(c[hi] / sz).astype(_F)
    return _np.clip(c, _F(0), L - _F(1)).astype(_F)


def transform(images, transforms, interpolation="bilinear", fill_mode="reflect",
              fill_value=0.0):
    """``ImageProjectiveTransformV3``: output pixel ``(x, y)`` samples the input at
    ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``, for each
    image's row ``[a0, a1, a2, b0, b1, b2, c0, c1]`` of ``transforms`` (a host array)."""
    n, h, w, c = images.shape
    t = _np.asarray(transforms, dtype=_F).reshape(-1, 8)
    if t.shape[0] == 1 and n != 1:
        t = _np.repeat(t, n, axis=0)
    oy, ox = _np.meshgrid(_np.arange(h, dtype=_F), _np.arange(w, dtype=_F), indexing="ij")
    proj = t[:, 6, None, None] * ox + t[:, 7, None, None] * oy + _F(1)
    xs = (t[:, 0, None, None] * ox + t[:, 1, None, None] * oy + t[:, 2, None, None]) / proj
    ys = (t[:, 3, None, None] * ox + t[:, 4, None, None] * oy + t[:, 5, None, None]) / proj
    bad = proj == 0
    xs = _map_coord(xs.astype(_F), w, fill_mode)
    ys = _map_coord(ys.astype(_F), h, fill_mode)
    dev = images.device
    flat = tnp.reshape(images, (n * h * w, c))
    batch = (_np.arange(n) * h * w)[:, None, None]
    fill = images.dtype.type(fill_value) if is_floating(images.dtype) else fill_value

    def read(yi, xi):
        ok = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w) & ~bad
        idx = batch + _np.clip(yi, 0, h - 1) * w + _np.clip(xi, 0, w - 1)
        vals = tnp.take(flat, tnp.asarray(idx.ravel(), device=dev), axis=0)
        vals = tnp.reshape(vals, (n, h, w, c))
        return tnp.where(tnp.asarray(ok[..., None], device=dev), vals, fill)

    if interpolation == "nearest":
        ry = (_np.sign(ys) * _np.floor(_np.abs(ys) + _F(0.5))).astype(_np.int64)
        rx = (_np.sign(xs) * _np.floor(_np.abs(xs) + _F(0.5))).astype(_np.int64)
        return read(ry, rx)
    yf, xf = _np.floor(ys), _np.floor(xs)
    yc, xc = yf + _F(1), xf + _F(1)
    yfi, xfi = yf.astype(_np.int64), xf.astype(_np.int64)

    def wgt(a):
        return tnp.asarray(a[..., None].astype(_F), device=dev)

    out_dt = images.dtype
    v00, v01 = read(yfi, xfi), read(yfi, xfi + 1)
    v10, v11 = read(yfi + 1, xfi), read(yfi + 1, xfi + 1)
    if out_dt != _F:
        v00, v01, v10, v11 = (v.astype(_F) for v in (v00, v01, v10, v11))
    top = wgt(xc - xs) * v00 + wgt(xs - xf) * v01
    bottom = wgt(xc - xs) * v10 + wgt(xs - xf) * v11
    out = wgt(yc - ys) * top + wgt(ys - yf) * bottom
    return out if out_dt == _F else out.astype(out_dt)
