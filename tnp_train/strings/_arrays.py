"""The string arrays ``tt.strings`` takes and gives back.

An input is a NumPy array, a tnp array (strings live on the CPU) or a Python string or (nested)
list. The result is of the caller's kind: a NumPy array for a NumPy array, a tnp array
otherwise. Its strings are of the input's kind: ``bytes`` for bytes (``|S`` arrays, what
``text_dataset_from_directory`` yields, as in TF) and ``str`` for str (``<U`` arrays): TF
always answers bytes, a NumPy program handing str gets str back. An ``object`` array keeps its
dtype. ``bytes`` are read as UTF-8 where an operation needs characters, and a byte that is not
UTF-8 survives the round trip (``surrogateescape``).
"""
from __future__ import annotations

import numpy as _np

import tnp

__all__ = ["StringArgument", "as_text", "from_text", "string_result", "ragged_result"]


class StringArgument:
    """One string input: its host array, its string kind and how to hand a result back."""

    __slots__ = ("host", "is_bytes", "dtype_kind", "_tnp", "who")

    def __init__(self, x, who):
        self.who = who
        self._tnp = not isinstance(x, _np.ndarray)
        if isinstance(x, tnp.ndarray):
            a = _np.asarray(x.to_device(tnp.device("cpu")))
        else:
            a = _np.asarray(x)
        if a.dtype.kind not in "USO":
            raise TypeError(f"{who}: expected a string input, got dtype {a.dtype} of shape "
                            f"{a.shape}")
        if a.dtype == object:
            bad = next((v for v in a.ravel().tolist() if not isinstance(v, (str, bytes))),
                       None)
            if bad is not None:
                raise TypeError(f"{who}: expected strings, got an element {bad!r} of type "
                                f"{type(bad).__name__}")
        self.host = a
        self.dtype_kind = a.dtype.kind
        flat = a.ravel().tolist()
        self.is_bytes = a.dtype.kind == "S" or (a.dtype == object and bool(flat) and
                                                isinstance(flat[0], bytes))

    def wrap(self, a):
        """``a`` (a host array) as the caller's kind of array."""
        if not self._tnp:
            return a
        return tnp.asarray(a, device=tnp.device("cpu"))

    def strings(self, values, shape):
        """The flat list ``values`` of results (str or bytes) as an array of ``shape`` of the
        input's dtype kind."""
        return self.wrap(string_array(values, shape, self.dtype_kind))


def as_text(s):
    """``s`` (str or bytes) as str; bytes are read as UTF-8, any byte kept."""
    return s.decode("utf-8", "surrogateescape") if isinstance(s, bytes) else s


def from_text(t, like):
    """The str ``t`` as the kind of ``like`` (bytes: UTF-8, the bytes ``as_text`` kept)."""
    return t.encode("utf-8", "surrogateescape") if isinstance(like, bytes) else t


def string_array(values, shape, kind):
    """A host array of the flat ``values`` (str or bytes): ``<U`` for "U", ``|S`` for "S"
    (``object`` where a value ends in a NUL byte, which ``|S`` would drop), else ``object``."""
    out = _np.empty(len(values), dtype=object)
    out[:] = values
    out = out.reshape(shape)
    if kind == "U" and all(isinstance(v, str) for v in values):
        return out.astype(str) if values else _np.empty(shape, dtype="<U1")
    if kind == "S" and all(isinstance(v, bytes) and not v.endswith(b"\0") for v in values):
        return out.astype(bytes) if values else _np.empty(shape, dtype="|S1")
    return out


def string_result(arg, fn):
    """``fn`` applied to each string of ``arg``, the results as an array like the input."""
    values = [fn(v) for v in arg.host.ravel().tolist()]
    return arg.strings(values, arg.host.shape)


def ragged_result(arg, rows):
    """The per-string lists ``rows`` in the ragged form: for a scalar input, a 1-D array of its
    one row; else nested Python lists of the input's shape (TF's ``RaggedTensor.to_list()``)."""
    if arg.host.ndim == 0:
        row = rows[0]
        kind = "S" if row and isinstance(row[0], bytes) else arg.dtype_kind
        return arg.wrap(string_array(row, (len(row),), kind))
    out = _np.empty(len(rows), dtype=object)
    out[:] = [list(r) for r in rows]
    return out.reshape(arg.host.shape).tolist()
