"""The summary functions (``tf.summary.scalar``/``histogram``/``image``/``text``) and the
tensors they write: the layouts of TensorBoard's plugins, which its dashboards read.

| summary | tensor | plugin |
|---|---|---|
| scalar | float32, shape ``[]`` | ``scalars`` |
| histogram | float64 ``[buckets, 3]``: left edge, right edge, count | ``histograms`` |
| image | string ``[2 + k]``: width, height, then ``k`` PNG files | ``images`` |
| text | string, the data's shape | ``text`` |
| keras model | string ``[]``: the model's JSON config | ``graph_keras_model`` |
"""
from __future__ import annotations

import json
import operator
import struct
import zlib

import numpy as np

from ._writer import emit, host_array, scoped, tensorboard

__all__ = ["scalar", "histogram", "image", "text"]

DEFAULT_BUCKET_COUNT = 30


def plugin_metadata(plugin, description):
    # the plugins' own metadata builders: their content protos (a version field) are theirs
    if plugin == "scalars":
        from tensorboard.plugins.scalar import metadata
    elif plugin == "histograms":
        from tensorboard.plugins.histogram import metadata
    elif plugin == "images":
        from tensorboard.plugins.image import metadata
    else:
        from tensorboard.plugins.text import metadata
    return metadata.create_summary_metadata(display_name=None, description=description)


def tensor_proto(array):
    return tensorboard().tensor_util.make_tensor_proto(array)


# ------------------------------------------------------------------ scalar
def scalar_tensor(data):
    a = host_array(data)
    if a.shape != ():
        raise ValueError(f"Expected scalar shape for data, saw shape: {a.shape}.")
    if a.dtype.kind not in "biufV":      # V: ml_dtypes' bfloat16 and float8 types
        raise TypeError(f"scalar: cannot cast {a.dtype} to float32")
    return np.asarray(a, dtype=np.float32)


def scalar(name, data, step=None, description=None):
    """``tf.summary.scalar(name, data, step=None, description=None)``: ``data`` (a Python
    number, a 0-d tnp or NumPy array, a Variable) as a float32 scalar under the tag ``name``.
    Returns True when written, False without a default writer or outside ``record_if``;
    ValueError when neither ``step`` nor a default step is given."""
    return emit(scoped(name), lambda: (tensor_proto(scalar_tensor(data)),
                                       plugin_metadata("scalars", description)), step)


# ------------------------------------------------------------------ histogram
def histogram_buckets(data, buckets=None):
    """The ``[buckets, 3]`` float64 array TensorBoard's ``histogram`` writes (TensorFlow's and
    tensorboard's ``histogram_pb`` bucketing): ``buckets`` equal-width buckets from the minimum
    to the maximum, the maximum counted in the last; all values equal: every edge is that
    value and the last bucket holds the count; no data: zeros. Non-finite values are left out
    (they have no bucket; TF's edges would come out NaN)."""
    count = DEFAULT_BUCKET_COUNT if buckets is None else operator.index(buckets)
    count = max(count, 0)      # tensorboard treats a negative count as zero
    x = np.asarray(host_array(data), dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if count == 0 or x.size == 0:
        return np.zeros((count, 3))
    lo, hi = x.min(), x.max()
    if hi == lo:
        out = np.zeros((count, 3))
        out[:, 0] = out[:, 1] = lo
        out[-1, 2] = x.size
        return out
    # bincount, not tensorboard's one-hot matrix (values x buckets): a large weight fits
    index = np.floor((x - lo) / ((hi - lo) / count)).astype(np.int64)
    np.minimum(index, count - 1, out=index)
    edges = np.linspace(lo, hi, count + 1)
    return np.stack([edges[:-1], edges[1:],
                     np.bincount(index, minlength=count).astype(np.float64)], axis=1)


def histogram(name, data, step=None, buckets=None, description=None):
    """``tf.summary.histogram(name, data, step=None, buckets=None, description=None)``: the
    histogram of every element of ``data`` (any shape), ``buckets`` (default 30) buckets, for
    TensorBoard's Histograms and Distributions dashboards."""
    return emit(scoped(name), lambda: (tensor_proto(histogram_buckets(data, buckets)),
                                       plugin_metadata("histograms", description)), step)


# ------------------------------------------------------------------ image
def to_uint8(images):
    """``tf.image.convert_image_dtype(images, tf.uint8, saturate=True)``: floats are taken in
    [0, 1] (scaled by 255.5, clipped, truncated); integers are shifted from their type's
    range; uint8 is kept."""
    a = np.asarray(images)
    kind = a.dtype.kind
    if a.dtype == np.uint8:
        return a
    if kind == "f" or kind == "V":
        if a.dtype not in (np.float16, np.float32, np.float64):
            a = a.astype(np.float32)
        scaled = a * a.dtype.type(255.5)
        scaled = np.where(np.isnan(scaled), 0, scaled)
        return np.clip(scaled, 0, 255).astype(np.uint8)
    if kind in "iu":
        top = int(np.iinfo(a.dtype).max)
        if top > 255:
            return np.clip(a // ((top + 1) // 256), 0, 255).astype(np.uint8)
        return (np.clip(a, 0, 255).astype(np.uint8) * np.uint8(256 // (top + 1)))
    raise TypeError(f"image: data must be of a floating point or integer type, got {a.dtype}")


_PNG_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}     # grey, grey + alpha, RGB, RGBA


def _png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode_png(image):
    """An 8-bit PNG file of a ``[height, width, channels]`` uint8 image (1 to 4 channels), as
    ``tf.image.encode_png`` makes (zlib's default compression, no row filter)."""
    h, w, c = image.shape
    rows = np.zeros((h, 1 + w * c), np.uint8)        # each row starts with its filter: none
    rows[:, 1:] = image.reshape(h, w * c)
    header = struct.pack(">IIBBBBB", w, h, 8, _PNG_COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header)
            + _png_chunk(b"IDAT", zlib.compress(rows.tobytes()))
            + _png_chunk(b"IEND", b""))


def image_tensor(data, max_outputs=3):
    """The string array TensorBoard's image summary holds: width, height, then the first
    ``max_outputs`` images of ``data`` (``[k, h, w, c]``) as PNG files."""
    a = host_array(data)
    if a.ndim != 4:
        raise ValueError(f"image: data must be of rank 4 [k, h, w, c], got shape {a.shape}")
    max_outputs = operator.index(max_outputs)
    if max_outputs < 0:
        raise ValueError(f"image: max_outputs must be non-negative, got {max_outputs}")
    k, h, w, c = a.shape
    if c not in _PNG_COLOR_TYPE:
        raise ValueError(f"image: the number of channels must be 1, 2, 3 or 4, got {c}")
    if (h == 0 or w == 0) and k and max_outputs:
        raise ValueError(f"image: an image must have pixels, got shape {a.shape}")
    pixels = to_uint8(a[:max_outputs])
    return np.array([str(w).encode(), str(h).encode()] + [encode_png(im) for im in pixels],
                    dtype=object)


def image(name, data, step=None, max_outputs=3, description=None):
    """``tf.summary.image(name, data, step=None, max_outputs=3, description=None)``: the first
    ``max_outputs`` images of ``data``, shaped ``[k, h, w, c]`` with ``c`` 1 (grey), 2 (grey and
    alpha), 3 (RGB) or 4 (RGBA); floats are taken in [0, 1] and clipped, uint8 in [0, 255]."""
    return emit(scoped(name), lambda: (tensor_proto(image_tensor(data, max_outputs)),
                                       plugin_metadata("images", description)), step)


# ------------------------------------------------------------------ text
def text_tensor(data):
    a = host_array(data)
    if a.dtype.kind in "SU" or (a.dtype.kind == "O" and
                                all(isinstance(s, (str, bytes)) for s in a.flat)):
        out = np.empty(a.shape, dtype=object)
        out.flat[:] = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in a.flat]
        return out
    raise TypeError(f"text: data must be strings (str or bytes), got {a.dtype}")


def text(name, data, step=None, description=None):
    """``tf.summary.text(name, data, step=None, description=None)``: a string, or an array of
    strings (shown as a table), rendered as Markdown by TensorBoard's Text dashboard."""
    return emit(scoped(name), lambda: (tensor_proto(text_tensor(data)),
                                       plugin_metadata("text", description)), step)


# ------------------------------------------------------------------ keras model (Graphs tab)
def keras_model_value(model_json):
    """``(TensorProto, SummaryMetadata)`` of TF's ``keras_model`` summary: the model's JSON
    config, which TensorBoard's Graphs dashboard draws as the model's conceptual graph."""
    lib = tensorboard()
    meta = lib.summary_pb2.SummaryMetadata()
    # the name and content TF hard-codes (summary_ops_v2.keras_model)
    meta.plugin_data.plugin_name = "graph_keras_model"
    meta.plugin_data.content = b"1"
    json.loads(model_json)       # a config that is not JSON would break the dashboard
    return tensor_proto(np.array(model_json.encode("utf-8"), dtype=object)), meta
