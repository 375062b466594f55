"""``tf.keras.applications.imagenet_utils`` (TF 2.4.4): ``preprocess_input`` and
``decode_predictions``.

``decode_predictions`` needs ImageNet's class index (``imagenet_class_index.json``), which TF
downloads. Nothing is downloaded here: pass ``class_index_path=``, or put the file where TF
caches it (``$KERAS_HOME/models/`` or ``~/.keras/models/``); otherwise FileNotFoundError.
"""
from __future__ import annotations

import json
import os

import numpy as _np

import tnp
from tnp import extend as _ext

from ..backend import config as backend_config

__all__ = ["preprocess_input", "decode_predictions"]

CLASS_INDEX_FILE = "imagenet_class_index.json"
_MODES = {"caffe", "tf", "torch"}
_CLASS_INDEX: dict = {}     # path -> the parsed index (TF keeps one global too)


def _channel_slices(ndim, data_format):
    if data_format == "channels_first":
        lead = (slice(None),) if ndim == 4 else ()
        return lambda c: lead + (c,)
    return lambda c: (Ellipsis, c)


# the ImageNet statistics each mode subtracts and divides by (None: no division)
_MEAN_STD = {"torch": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
             "caffe": ([103.939, 116.779, 123.68], None)}


def _rgb_to_bgr(x, data_format):
    """``x`` with its channels reversed (a view)."""
    if data_format == "channels_first":
        return x[::-1, ...] if x.ndim == 3 else x[:, ::-1, ...]
    return x[..., ::-1]


def _as_numpy(x):
    a = _ext.backend_array(x)
    return a if isinstance(a, (_np.ndarray, _np.generic)) else a.get()


def _preprocess_numpy(x, data_format, mode):
    # TF converts non-float input to floatx and then works in place: a float NumPy array
    # passed in is modified, as in TF.
    if not issubclass(x.dtype.type, _np.floating):
        x = x.astype(backend_config.floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
    else:
        x = _rgb_to_bgr(x, data_format)
    mean, std = _MEAN_STD[mode]
    ch = _channel_slices(x.ndim, data_format)
    for c in range(3):
        x[ch(c)] -= mean[c]
        if std is not None:
            x[ch(c)] /= std[c]
    return x


def _preprocess_array(x, data_format, mode):
    """The tensor path: a new array (a tnp array is never modified)."""
    if not _ext.is_floating(x.dtype):
        x = x.astype(backend_config.floatx())
    if mode == "tf":
        return x / 127.5 - 1.0
    if mode == "torch":
        x = x / 255.0
    else:
        x = _rgb_to_bgr(x, data_format)
    mean, std = _MEAN_STD[mode]
    shape = [1] * x.ndim
    shape[0 if (data_format == "channels_first" and x.ndim == 3) else
          (1 if data_format == "channels_first" else -1)] = 3
    x = x - tnp.asarray(mean, dtype=x.dtype).reshape(shape)
    if std is not None:
        x = x / tnp.asarray(std, dtype=x.dtype).reshape(shape)
    return x


def preprocess_input(x, data_format=None, mode="caffe"):
    """``imagenet_utils.preprocess_input``: 'caffe' (RGB to BGR, ImageNet means subtracted),
    'tf' (to [-1, 1]) or 'torch' (to [0, 1], then ImageNet mean/std). A float NumPy array is
    modified in place, as in TF; a tnp array or a KerasTensor gives a new value."""
    if mode not in _MODES:
        raise ValueError(f"preprocess_input: expected mode to be one of `caffe`, `tf` or "
                         f"`torch`. Received: mode={mode}")
    if data_format is None:
        data_format = backend_config.image_data_format()
    elif data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"preprocess_input: expected data_format to be one of "
                         f"`channels_first` or `channels_last`. Received: "
                         f"data_format={data_format}")
    from ..layers.keras_tensor import KerasTensor
    if isinstance(x, KerasTensor):
        from ..layers.core import TFOpLambda
        return TFOpLambda(lambda t: _preprocess_array(t, data_format, mode),
                          name="preprocess_input")(x)
    if _ext.is_tnp_array(x):
        return _preprocess_array(x, data_format, mode)
    return _preprocess_numpy(_np.asarray(x) if not isinstance(x, _np.ndarray) else x,
                             data_format, mode)


def _class_index(path):
    if path is None:
        home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        path = os.path.join(home, "models", CLASS_INDEX_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"decode_predictions needs ImageNet's class index ({CLASS_INDEX_FILE}), which "
                f"cannot be downloaded here: pass class_index_path='/path/to/{CLASS_INDEX_FILE}', "
                f"or put the file at {path}")
    path = os.fspath(path)
    if path not in _CLASS_INDEX:
        with open(path) as f:
            _CLASS_INDEX[path] = json.load(f)
    return _CLASS_INDEX[path]


def decode_predictions(preds, top=5, class_index_path=None):
    """``imagenet_utils.decode_predictions``: for each sample, the ``top`` (class_id,
    class_name, score) tuples, best first. ``class_index_path`` (not in TF): the local
    ``imagenet_class_index.json``."""
    preds = _as_numpy(preds) if _ext.is_tnp_array(preds) else _np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(f"`decode_predictions` expects a batch of predictions (i.e. a 2D array "
                         f"of shape (samples, 1000)). Found array with shape: {preds.shape}")
    index = _class_index(class_index_path)
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(index[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda t: t[2], reverse=True)
        results.append(result)
    return results
