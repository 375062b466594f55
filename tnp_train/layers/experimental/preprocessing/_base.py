"""What the preprocessing layers share: ``PreprocessingLayer`` (``adapt`` on arrays, lists and
``tt.data.Dataset``), and the conversions between user inputs and host (NumPy) arrays.

Strings: tnp has no string dtype of its own; a string array is a tnp array (or NumPy array,
or nested list) of NumPy's unicode dtype (``<U``), or of dtype ``object`` holding ``str`` or
``bytes`` (bytes are decoded as UTF-8, as TF's string ops read them). String outputs (an
inverted lookup) are tnp arrays of dtype ``<U`` on the CPU, since CuPy holds no strings; numeric
outputs land on the device of the numeric input, or the default device for string inputs.
"""
from __future__ import annotations

import functools

import numpy as _np

import tnp
from tnp.extend import array_module, device_of as _device_of, get_default_device as _default_device
from tnp.extend import UnsupportedTrace as _UnsupportedTrace, primitive as _primitive
from tnp.extend import tracing as _tracing

from ...base import Layer

__all__ = ["PreprocessingLayer", "to_host", "to_strings", "is_string_array", "to_device_array",
           "computed_on_host"]


def computed_on_host(call):
    """Decorator for a preprocessing layer's ``call(self, inputs)`` that computes on host arrays
    (a lookup, a hash, a histogram): while a function is traced (a compiled ``fit`` step) and
    ``inputs`` is a tnp array, the call is ONE primitive node of the program, which runs the
    eager ``call`` at every run with that run's inputs and the layer's state then (a vocabulary
    set later is used): the compiled step gives the eager step's values. Its output is not
    differentiated, as eagerly (the inputs become host arrays). A layer whose output's shape
    depends on the data (``self._output_shape_fixed()`` false) runs such a step eagerly; a run
    whose output's shape or dtype is not the traced one (the layer's state changed its width)
    is a ValueError naming the layer, never a silently reshaped value."""
    @functools.wraps(call)
    def traced_or_now(self, inputs):
        if _tracing() and isinstance(inputs, tnp.ndarray):
            if not self._output_shape_fixed():
                raise _UnsupportedTrace(
                    f"{type(self).__name__} {self.name!r}: the size of its output depends on "
                    f"the data (set output_sequence_length to compile it); it runs eagerly")
            return _primitive(_checked_call, call, self, inputs, _Traced(),
                              name=f"{type(self).__name__}.call")
        return call(self, inputs)
    return traced_or_now


class _Traced:
    """The output's shape and dtype seen while tracing (the first run of a primitive)."""
    __slots__ = ("spec",)

    def __init__(self):
        self.spec = None


def _checked_call(call, layer, inputs, traced):
    out = call(layer, inputs)
    spec = (tuple(out.shape), out.dtype)
    if traced.spec is None:
        traced.spec = spec
    elif spec != traced.spec:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: the compiled step was traced "
                         f"with an output of shape {traced.spec[0]} and dtype {traced.spec[1]}, "
                         f"this call gives shape {spec[0]} and dtype {spec[1]} (the layer's "
                         f"state changed since); call compile() again")
    return out


def to_host(x):
    """``x`` (a tnp array, NumPy array, list or scalar) as a NumPy array (a copy only when it
    lives on a GPU)."""
    if isinstance(x, tnp.ndarray):
        return _np.asarray(x.to_device(tnp.device("cpu")) if array_module(x) is not _np else x)
    if hasattr(x, "numpy") and not isinstance(x, _np.ndarray):   # a Variable
        return _np.asarray(x.numpy())
    return _np.asarray(x)


def is_string_array(a):
    """Whether the host array ``a`` holds strings (``<U``, ``|S`` or ``object`` of str/bytes)."""
    if a.dtype.kind in "US":
        return True
    if a.dtype == object:
        return a.size == 0 or isinstance(a.flat[0], (str, bytes))
    return False


def _decode(s):
    return s.decode("utf-8") if isinstance(s, bytes) else s


def to_strings(a, who):
    """The host array ``a`` as an array of ``str`` (dtype ``object``: unbounded lengths, so
    string ops never truncate); a non-string array is a TypeError naming ``who``."""
    if a.dtype.kind == "U":
        return a.astype(object)
    if a.dtype.kind == "S" or a.dtype == object:
        flat = [_decode(s) for s in a.ravel().tolist()]
        if not all(isinstance(s, str) for s in flat):
            bad = next(s for s in flat if not isinstance(s, str))
            raise TypeError(f"{who}: expected strings, got an element {bad!r} of type "
                            f"{type(bad).__name__}")
        out = _np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(a.shape)
    raise TypeError(f"{who}: expected a string input, got dtype {a.dtype} of shape {a.shape}")


def to_device_array(a, like=None, dtype=None):
    """The host array ``a`` as a tnp array on ``like``'s device (numeric ``like``), else on the
    default device; strings stay on the CPU."""
    a = _np.asarray(a, dtype=dtype)
    if a.dtype.kind in "USO":
        return tnp.asarray(a.astype(str) if a.dtype == object else a, device=tnp.device("cpu"))
    dev = _device_of(like) if isinstance(like, tnp.ndarray) and like.dtype.kind not in "USO" \
        else _default_device()
    return tnp.asarray(a, device=dev)


def _is_dataset(data):
    from ....data import Dataset
    return isinstance(data, Dataset)


def iter_batches(data, batch_size=None, steps=None, who="adapt"):
    """The batches ``adapt`` reads, as host arrays: a dataset's elements (``steps`` of them at
    most), or an array/list cut into ``batch_size`` rows (all at once by default)."""
    if _is_dataset(data):
        for i, element in enumerate(data):
            if steps is not None and i >= steps:
                break
            if isinstance(element, (tuple, list, dict)):
                raise ValueError(f"{who}: expected a dataset of single arrays (the layer's "
                                 f"inputs), got elements of type {type(element).__name__}")
            yield to_host(element)
        return
    if isinstance(data, (tuple, dict)):
        raise ValueError(f"{who}: expected an array, list or tt.data.Dataset, got "
                         f"{type(data).__name__}")
    a = to_host(data)
    if batch_size is None or a.ndim == 0:
        yield a
        return
    n = a.shape[0]
    for i, start in enumerate(range(0, n, int(batch_size))):
        if steps is not None and i >= steps:
            break
        yield a[start:start + int(batch_size)]


class PreprocessingLayer(Layer):
    """Mirrors ``tf.keras.layers.experimental.preprocessing.PreprocessingLayer``: a layer whose
    state is computed from data by ``adapt`` rather than trained. Subclasses write
    ``_reset_state``, ``_update_state(batch)`` (a host array) and ``_finalize_state``."""

    _adaptable = True

    def adapt(self, data, reset_state=True, batch_size=None, steps=None):
        """Compute the layer's state from ``data`` (an array, a nested list, or a
        ``tt.data.Dataset`` of input batches); mirrors ``adapt(data, reset_state=True)`` (TF
        2.4), with the later ``batch_size``/``steps`` too."""
        if not self._adaptable:
            raise TypeError(f"{type(self).__name__} has no state to adapt")
        if not reset_state:
            raise ValueError(f"{type(self).__name__}.adapt: reset_state=False is not supported "
                             f"(TF 2.4 does not support it for this layer either)")
        who = f"{type(self).__name__}.adapt"
        self._reset_state()
        seen = False
        for batch in iter_batches(data, batch_size, steps, who):
            self._update_state(batch)
            seen = True
        if not seen:
            raise ValueError(f"{who}: the data is empty")
        self._finalize_state()

    def _output_shape_fixed(self):
        """Whether the output's shape follows from the input's (not from the data): a call
        of a compiled step is then one primitive node (see :func:`computed_on_host`)."""
        return True

    def _reset_state(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _update_state(self, batch):  # pragma: no cover - overridden
        raise NotImplementedError

    def _finalize_state(self):  # pragma: no cover - overridden
        raise NotImplementedError
