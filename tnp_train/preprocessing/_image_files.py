"""Image files and arrays for ``tt.preprocessing.image``: ``array_to_img``, ``img_to_array``,
``load_img``, ``save_img`` (on optional Pillow, as in TF) and ``smart_resize``."""
from __future__ import annotations

import io
import os
import pathlib
import warnings

import numpy as np

from ..backend import config as backend_config

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]


def _pil_image(what):
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{what} requires Pillow (PIL), which is not installed: "
                          f"pip install pillow") from None
    return Image


def _resampling(Image):
    r = getattr(Image, "Resampling", Image)
    return {"nearest": r.NEAREST, "bilinear": r.BILINEAR, "bicubic": r.BICUBIC,
            "hamming": r.HAMMING, "box": r.BOX, "lanczos": r.LANCZOS}


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image from a 3-D array (``tf.keras.preprocessing.image.array_to_img``); with
    ``scale`` the values are stretched to [0, 255] first. Needs Pillow."""
    data_format = data_format or backend_config.image_data_format()
    dtype = dtype or backend_config.floatx()
    Image = _pil_image("array_to_img")
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with "
                         f"shape: {x.shape}")
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"Invalid data_format: {data_format}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        x_max = np.max(x)
        if x_max != 0:
            x /= x_max
        x *= 255
    if x.shape[2] == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if x.shape[2] == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if x.shape[2] == 1:
        if np.max(x) > 255:
            # 32-bit signed integer grayscale image. PIL mode "I"
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {x.shape[2]}")


def img_to_array(img, data_format=None, dtype=None):
    """A PIL image (or anything array-like) as a 3-D float array
    (``tf.keras.preprocessing.image.img_to_array``)."""
    data_format = data_format or backend_config.image_data_format()
    dtype = dtype or backend_config.floatx()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"Unknown data_format: {data_format}")
    x = np.asarray(img, dtype=dtype)
    if x.ndim == 3:
        if data_format == "channels_first":
            x = x.transpose(2, 0, 1)
    elif x.ndim == 2:
        x = x.reshape((1,) + x.shape if data_format == "channels_first" else x.shape + (1,))
    else:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes a 3-D array as an image file (``tf.keras.preprocessing.image.save_img``); Pillow
    picks the format from ``file_format`` or the extension."""
    img = array_to_img(x, data_format=data_format or backend_config.image_data_format(),
                       scale=scale)
    if img.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def load_img(path, grayscale=False, color_mode="rgb", target_size=None,
             interpolation="nearest"):
    """A PIL image from a file (``tf.keras.preprocessing.image.load_img``), converted to
    ``color_mode`` and resized to ``target_size`` ``(height, width)`` with Pillow's
    ``interpolation``. Needs Pillow."""
    if grayscale:
        warnings.warn('grayscale is deprecated. Please use color_mode = "grayscale"')
        color_mode = "grayscale"
    Image = _pil_image("load_img")
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        with open(os.fspath(path), "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    if color_mode == "grayscale":
        # 16- and 32-bit grayscale stay as they are, as in TF
        if img.mode not in ("L", "I;16", "I"):
            img = img.convert("L")
    elif color_mode == "rgba":
        if img.mode != "RGBA":
            img = img.convert("RGBA")
    elif color_mode == "rgb":
        if img.mode != "RGB":
            img = img.convert("RGB")
    else:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if target_size is not None:
        wh = (target_size[1], target_size[0])
        if img.size != wh:
            methods = _resampling(Image)
            if interpolation not in methods:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. "
                                 f"Supported methods are {', '.join(methods)}")
            img = img.resize(wh, methods[interpolation])
    return img


def smart_resize(x, size, interpolation="bilinear"):
    """Resizes an image ``(h, w, c)`` (or a batch) to ``size`` without distorting it: the
    largest centred crop of the target's aspect ratio, then ``tf.image.resize``
    (``tf.keras.preprocessing.image.smart_resize``). Returns a NumPy array for a NumPy input,
    else a tnp array; float32 except for "nearest"."""
    import tnp
    from tnp.extend import is_tnp_array
    from ..layers.experimental.preprocessing._resize import RESIZE_METHODS, resize
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    if interpolation not in RESIZE_METHODS:
        raise ValueError(f"smart_resize: interpolation must be one of {RESIZE_METHODS}, got "
                         f"{interpolation!r}")
    as_numpy = not is_tnp_array(x)
    img = tnp.asarray(x)
    if img.ndim not in (3, 4):
        raise ValueError(f"Expected an image array with shape `(height, width, channels)`, or "
                         f"`(batch_size, height, width, channels)`, but got input with "
                         f"incorrect rank, of shape {tuple(img.shape)}.")
    height, width = img.shape[-3], img.shape[-2]
    th, tw = size
    # TF computes the crop in float32 and truncates
    crop_h = min(height, int(np.float32(width * th) / np.float32(tw)))
    crop_w = min(width, int(np.float32(height * tw) / np.float32(th)))
    h0 = int(np.float32(height - crop_h) / np.float32(2))
    w0 = int(np.float32(width - crop_w) / np.float32(2))
    img = img[..., h0:h0 + crop_h, w0:w0 + crop_w, :]
    batched = img.ndim == 4
    out = resize(img if batched else img[None], int(th), int(tw), interpolation)
    if not batched:
        out = out[0]
    return np.asarray(out) if as_numpy else out
