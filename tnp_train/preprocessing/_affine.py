"""Affine, channel and brightness transforms for ``tt.preprocessing.image`` (TF 2.4's
conventions; SciPy's ``ndimage.affine_transform`` when installed, else a NumPy equivalent)."""
from __future__ import annotations

import numpy as np

from ..backend import config as backend_config

try:  # SciPy is TF's engine for the affine transforms
    from scipy import ndimage as _ndimage
except ImportError:  # pragma: no cover - SciPy is a test dependency
    _ndimage = None

__all__ = ["apply_affine_transform", "random_rotation", "random_shift", "random_shear",
           "random_zoom", "apply_brightness_shift", "random_brightness", "apply_channel_shift",
           "random_channel_shift", "transform_matrix_offset_center", "flip_axis"]


def transform_matrix_offset_center(matrix, x, y):
    """``matrix`` conjugated so that it acts about the image centre."""
    o_x = float(x) / 2 - 0.5
    o_y = float(y) / 2 - 0.5
    offset = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return np.dot(np.dot(offset, matrix), reset)


def _map_coords(c, n, mode):
    """Coordinates outside [0, n - 1] mapped back as SciPy's boundary ``mode`` does; the mask
    is False where ``mode="constant"`` reads ``cval``."""
    inside = np.ones(c.shape, bool)
    if n == 1:
        return np.zeros_like(c), inside if mode != "constant" else (np.abs(c) <= 0)
    if mode == "nearest":
        c = np.clip(c, 0, n - 1)
    elif mode == "reflect":   # d c b a | a b c d | d c b a
        period = 2 * n
        c = np.mod(c + 0.5, period) - 0.5
        c = np.where(c > n - 0.5, period - 1 - c, c)
        c = np.clip(c, 0, n - 1)
    elif mode == "wrap":
        # SciPy's "wrap": period n - 1; a multiple of the period maps to n - 1 from below
        # and to 0 from above
        r = np.mod(c, n - 1)
        r = np.where((c < 0) & (r == 0), n - 1, r)
        c = np.where((c >= 0) & (c <= n - 1), c, r)
    elif mode == "constant":
        inside = (c >= 0) & (c <= n - 1)
        c = np.clip(c, 0, n - 1)
    else:
        raise ValueError(f"apply_affine_transform: fill_mode must be one of 'constant', "
                         f"'nearest', 'reflect', 'wrap', got {mode!r}")
    return c, inside


def _affine_numpy(img, matrix, offset, order, mode, cval):
    """``scipy.ndimage.affine_transform`` of a 2-D image for ``order`` 0 or 1."""
    if order not in (0, 1):
        raise ValueError(f"apply_affine_transform: without SciPy only order 0 and 1 are "
                         f"supported, got order={order}")
    h, w = img.shape
    r, c = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64),
                       indexing="ij")
    src_r = matrix[0, 0] * r + matrix[0, 1] * c + offset[0]
    src_c = matrix[1, 0] * r + matrix[1, 1] * c + offset[1]
    img = img.astype(np.float64)
    # SciPy maps the continuous coordinate into the image first, then samples
    rr, ok_r = _map_coords(src_r, h, mode)
    cc, ok_c = _map_coords(src_c, w, mode)
    if order == 0:   # the nearest sample, halves rounded up
        ri = np.clip(np.floor(rr + 0.5), 0, h - 1).astype(np.intp)
        ci = np.clip(np.floor(cc + 0.5), 0, w - 1).astype(np.intp)
        out = img[ri, ci]
    else:
        r0 = np.clip(np.floor(rr), 0, h - 1).astype(np.intp)
        c0 = np.clip(np.floor(cc), 0, w - 1).astype(np.intp)
        r1 = np.minimum(r0 + 1, h - 1)
        c1 = np.minimum(c0 + 1, w - 1)
        fr, fc = rr - r0, cc - c0
        top = img[r0, c0] * (1 - fc) + img[r0, c1] * fc
        bottom = img[r1, c0] * (1 - fc) + img[r1, c1] * fc
        out = top * (1 - fr) + bottom * fr
    if mode == "constant":
        out = np.where(ok_r & ok_c, out, cval)
    return out


def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=0,
                           col_axis=1, channel_axis=2, fill_mode="nearest", cval=0.0, order=1):
    """Rotation ``theta`` (degrees), shift ``tx`` (rows) / ``ty`` (columns), ``shear``
    (degrees) and zoom ``zx`` / ``zy`` of a 3-D image about its centre
    (``tf.keras.preprocessing.image.apply_affine_transform``, TF 2.4's defaults and matrix;
    see the module on later tf-keras)."""
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"apply_affine_transform: expected a 3-D image (rows, cols, channels "
                         f"in some order), got shape {x.shape}")
    if sorted((row_axis, col_axis, channel_axis)) != [0, 1, 2]:
        raise ValueError(f"apply_affine_transform: row_axis, col_axis and channel_axis must be "
                         f"0, 1 and 2 in some order, got {row_axis}, {col_axis}, "
                         f"{channel_axis}")
    matrix = None

    def then(m):
        nonlocal matrix
        matrix = m if matrix is None else np.dot(matrix, m)

    if theta != 0:
        t = np.deg2rad(theta)
        then(np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]]))
    if tx != 0 or ty != 0:
        then(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        s = np.deg2rad(shear)
        then(np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        then(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if matrix is None:
        return x
    h, w = x.shape[row_axis], x.shape[col_axis]
    matrix = transform_matrix_offset_center(matrix, h, w)
    x = np.rollaxis(x, channel_axis, 0)
    lin, off = matrix[:2, :2], matrix[:2, 2]
    if _ndimage is not None:
        chans = [_ndimage.affine_transform(c, lin, off, order=order, mode=fill_mode, cval=cval)
                 for c in x]
    else:
        chans = [_affine_numpy(c, lin, off, order, fill_mode, cval).astype(c.dtype, copy=False)
                 for c in x]
    x = np.stack(chans, axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def _transformed(x, args, **transform):
    """``apply_affine_transform(x, **transform)`` with the axes and filling of a ``random_*``
    function (``args``: its ``locals()``)."""
    return apply_affine_transform(x, row_axis=args["row_axis"], col_axis=args["col_axis"],
                                  channel_axis=args["channel_axis"], fill_mode=args["fill_mode"],
                                  cval=args["cval"], order=args["interpolation_order"],
                                  **transform)


def random_rotation(x, rg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                    cval=0.0, interpolation_order=1):
    """A rotation by a uniform angle in ``[-rg, rg]`` degrees (NumPy's global generator)."""
    theta = np.random.uniform(-rg, rg)
    return _transformed(x, locals(), theta=theta)


def random_shift(x, wrg, hrg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                 cval=0.0, interpolation_order=1):
    """A shift by uniform fractions ``hrg`` of the height and ``wrg`` of the width."""
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return _transformed(x, locals(), tx=tx, ty=ty)


def random_shear(x, intensity, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                 cval=0.0, interpolation_order=1):
    """A shear by a uniform angle in ``[-intensity, intensity]`` degrees."""
    shear = np.random.uniform(-intensity, intensity)
    return _transformed(x, locals(), shear=shear)


def random_zoom(x, zoom_range, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                cval=0.0, interpolation_order=1):
    """A zoom by two uniform factors in ``zoom_range`` (rows, then columns)."""
    if len(zoom_range) != 2:
        raise ValueError(f"`zoom_range` should be a tuple or list of two floats. Received: "
                         f"{zoom_range}")
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return _transformed(x, locals(), zx=zx, zy=zy)


def apply_channel_shift(x, intensity, channel_axis=0):
    """``intensity`` added to every channel, clipped to the image's own min and max."""
    x = np.rollaxis(np.asarray(x), channel_axis, 0)
    lo, hi = np.min(x), np.max(x)
    x = np.stack([np.clip(c + intensity, lo, hi) for c in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def random_channel_shift(x, intensity_range, channel_axis=0):
    """``apply_channel_shift`` by a uniform intensity in ``[-intensity_range,
    intensity_range]``."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def _brightness_channels_last(x, brightness, scale):
    x = np.asarray(x, dtype=backend_config.floatx())
    if x.ndim != 3:
        raise ValueError(f"apply_brightness_shift: expected a 3-D image, got shape {x.shape}")
    x_min, x_max = np.min(x), np.max(x)
    local_scale = (x_min < 0) or (x_max > 255)
    # array_to_img, then Image.blend(black, img, brightness) on uint8: Pillow multiplies in
    # float32 and truncates (clipping to [0, 255] when brightness > 1)
    if local_scale or scale:
        x = x - x_min
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    c = x.shape[2]
    if c not in (1, 3, 4):
        raise ValueError(f"Unsupported channel number: {c}")
    u8 = x.astype("uint8")
    out = np.clip(np.floor(np.float32(brightness) * u8.astype(np.float32)), 0, 255)
    out = out.astype("uint8")
    if c == 4:   # Pillow's Brightness keeps the alpha band
        out[..., 3] = u8[..., 3]
    out = out.astype(backend_config.floatx())
    if not scale and local_scale:
        out = out / 255 * (x_max - x_min) + x_min
    return out


def apply_brightness_shift(x, brightness, scale=True):
    """The image stretched to [0, 255] (with ``scale=False`` only when it leaves that range),
    cut to 8 bits and multiplied by ``brightness`` as Pillow's ``ImageEnhance.Brightness``
    does (``tf.keras.preprocessing.image.apply_brightness_shift``; TF 2.4 has no ``scale`` and
    always stretches). Channels as ``backend_config.image_data_format()`` says, as TF."""
    if backend_config.image_data_format() == "channels_first":
        x = np.moveaxis(np.asarray(x), 0, -1)
        return np.moveaxis(_brightness_channels_last(x, brightness, scale), -1, 0)
    return _brightness_channels_last(x, brightness, scale)


def random_brightness(x, brightness_range, scale=True):
    """``apply_brightness_shift`` by a uniform factor in ``brightness_range``."""
    if len(brightness_range) != 2:
        raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: "
                         f"{brightness_range}")
    u = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, u, scale)


def flip_axis(x, axis):
    """``x`` reversed along ``axis``."""
    return np.flip(np.asarray(x), axis)
