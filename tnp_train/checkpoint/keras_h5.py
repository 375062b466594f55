"""Keras's HDF5 files, read with the care our own checkpoints get, and written atomically.
Needs h5py (the optional extra ``tnp[h5]``).

The layouts (facts of the formats; the models decide what goes in them):

* tf_keras / TF 2.4 (``model.save("m.h5")``, ``save_weights("w.h5")``): a group (the root of a
  weights file; ``model_weights`` in a model file) whose attribute ``layer_names`` lists a
  group per layer; each has ``weight_names`` (``"dense/kernel:0"``), the datasets at those
  paths inside it. A model file adds the root attributes ``keras_version``, ``backend``,
  ``model_config`` and ``training_config`` (JSON) and ``optimizer_weights`` (a
  ``weight_names`` attribute and the datasets). An attribute over HDF5's 64 KB header limit is
  split into ``name0``, ``name1``, ...
* Keras 3 (``model.weights.h5`` in a ``.keras`` archive, ``save_weights("x.weights.h5")``):
  ``layers/<path>/vars/<i>`` and ``optimizer/vars/<i>``, each ``vars`` group with an attribute
  ``name``.

What a hostile file cannot do here: name an object through a soft or external link (which
could reach another file), hand over a virtual or externally stored dataset (whose bytes live
in other files), make us read a dataset before its shape has been checked against the one the
model expects (a compressed dataset could otherwise claim gigabytes), hand over a non-numeric
dataset, or an attribute or JSON document over :data:`MAX_ATTR_BYTES`. Nothing is unpickled.
Every refusal is a :class:`~._format.CheckpointFormatError` (a ValueError) naming the file and
the object.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile

import numpy as _np

from ._format import CheckpointFormatError
from ._io import _UMASK, atomic_write_bytes, fsync_dir, owned_prefix, stale_temporaries, tmp_prefix

__all__ = ["MAX_ATTR_BYTES", "h5py_module", "is_hdf5", "open_h5", "child", "dataset",
           "read_dataset", "text_attr", "names_attr", "json_attr", "weight_entries",
           "write_h5", "write_names_attr", "write_weight_group", "write_dataset", "to_bytes",
           "to_text", "atomic_write_bytes", "CheckpointFormatError"]

MAX_ATTR_BYTES = 64 << 20       # an attribute (a model's JSON config, a name list)
_HEADER_LIMIT = 64512           # HDF5's object-header limit: longer attributes are chunked
_NUMERIC = "biufc"


def h5py_module(path, what):
    """h5py, or an ImportError saying how to get it."""
    try:
        import h5py
    except ImportError as e:
        raise ImportError(f"{what}({path!r}): Keras HDF5 files need h5py: pip install h5py "
                          f"(or the extra: pip install 'tnp[h5]')") from e
    return h5py


def is_hdf5(path):
    """Whether the file ``path`` starts with HDF5's signature (at 0, 512, 1024, ... bytes)."""
    sig = b"\x89HDF\r\n\x1a\n"
    try:
        with open(path, "rb") as f:
            offset = 0
            while True:
                f.seek(offset)
                head = f.read(8)
                if head == sig:
                    return True
                if len(head) < 8 or offset >= (1 << 20):
                    return False
                offset = 512 if offset == 0 else offset * 2
    except OSError:
        return False


def open_h5(path_or_file, what, where=None):
    """The HDF5 file ``path_or_file`` (a path or a seekable binary file), read-only."""
    where = where or os.fspath(path_or_file)
    h5py = h5py_module(where, what)
    try:
        return h5py.File(path_or_file, "r")
    except OSError as e:
        raise CheckpointFormatError(f"{what}({where!r}): not a readable HDF5 file ({e})") from None


def child(group, relpath, where):
    """The object at ``relpath`` under ``group``, reached through hard links only."""
    import h5py
    obj = group
    for part in relpath.split("/"):
        if not part:
            continue
        if not isinstance(obj, h5py.Group) or part not in obj:
            raise CheckpointFormatError(f"{where}: no object {relpath!r} in {group.name!r}")
        link = obj.get(part, getlink=True)
        if not isinstance(link, h5py.HardLink):
            raise CheckpointFormatError(f"{where}: {obj.name}/{part} is a "
                                        f"{type(link).__name__}, not a plain object (links to "
                                        f"other objects or files are not followed)")
        obj = obj[part]
    return obj


def dataset(group, relpath, where):
    """The plain numeric dataset at ``relpath`` (not read yet)."""
    import h5py
    ds = child(group, relpath, where)
    if not isinstance(ds, h5py.Dataset):
        raise CheckpointFormatError(f"{where}: {ds.name} is not a dataset")
    if ds.is_virtual or ds.id.get_create_plist().get_external_count():
        raise CheckpointFormatError(f"{where}: dataset {ds.name} keeps its data in other files "
                                    f"(virtual or external storage), which is not read")
    if ds.dtype.kind not in _NUMERIC or ds.dtype.fields is not None:
        raise CheckpointFormatError(f"{where}: dataset {ds.name} holds {ds.dtype}, not numbers")
    return ds


def read_dataset(ds, expected_shape, where):
    """The array of ``ds``, once its shape is ``expected_shape`` (a ValueError naming both
    otherwise, before any byte is read)."""
    if tuple(ds.shape) != tuple(expected_shape):
        raise CheckpointFormatError(f"{where}: dataset {ds.name} has shape {tuple(ds.shape)}, "
                                    f"expected {tuple(expected_shape)}")
    try:
        return _np.asarray(ds[()])
    except (OSError, ValueError) as e:
        raise CheckpointFormatError(f"{where}: dataset {ds.name} cannot be read: {e}") from None


def _raw_attr(obj, name, where):
    if name not in obj.attrs:
        return None
    try:
        size = obj.attrs.get_id(name).get_storage_size()
    except RuntimeError:        # HDF5 reports an empty attribute's size as an error
        size = 0
    if size > MAX_ATTR_BYTES:
        raise CheckpointFormatError(f"{where}: attribute {name!r} of {obj.name} is {size} bytes "
                                    f"(the limit is {MAX_ATTR_BYTES})")
    try:
        return obj.attrs[name]
    except (OSError, TypeError, ValueError) as e:
        raise CheckpointFormatError(f"{where}: attribute {name!r} of {obj.name} cannot be read: "
                                    f"{e}") from None


def to_text(v, where, name):
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise CheckpointFormatError(f"{where}: attribute {name!r} is not UTF-8") from None
    if isinstance(v, str):
        return v
    if isinstance(v, _np.ndarray) and v.ndim == 0:
        return to_text(v.item(), where, name)
    raise CheckpointFormatError(f"{where}: attribute {name!r} holds {type(v).__name__}, not text")


def text_attr(obj, name, where, default=None):
    """A text attribute (bytes or str in the file), or ``default`` when absent."""
    v = _raw_attr(obj, name, where)
    return default if v is None else to_text(v, where, name)


def names_attr(obj, name, where):
    """A list-of-names attribute (``layer_names``, ``weight_names``), joined from its chunks
    ``name0``, ``name1``... when HDF5's header limit split it; None when absent."""
    if name in obj.attrs:
        parts = [_raw_attr(obj, name, where)]
    else:
        parts, k = [], 0
        while f"{name}{k}" in obj.attrs:
            parts.append(_raw_attr(obj, f"{name}{k}", where))
            k += 1
        if not parts:
            return None
    out = []
    for p in parts:
        a = _np.asarray(p)
        if a.size == 0:
            continue
        if a.ndim != 1 or a.dtype.kind not in "SUO":
            raise CheckpointFormatError(f"{where}: attribute {name!r} of {obj.name} is not a "
                                        f"list of names")
        out.extend(to_text(v, where, name) for v in a)
    return out


def json_attr(obj, name, where):
    """A JSON attribute, parsed (None when absent)."""
    text = text_attr(obj, name, where)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CheckpointFormatError(f"{where}: attribute {name!r} is not valid JSON: "
                                    f"{type(e).__name__}: {e}") from None


def weight_entries(group, where):
    """``[(layer name, [(weight name, dataset), ...]), ...]`` of a tf_keras weights group (the
    file's root, or ``model_weights``), in the file's order; datasets checked, not read."""
    layer_names = names_attr(group, "layer_names", where)
    if layer_names is None:
        raise CheckpointFormatError(f"{where}: not a Keras HDF5 weights file (no 'layer_names' "
                                    f"attribute in {group.name!r})")
    out = []
    for lname in layer_names:
        g = child(group, lname, where)
        names = names_attr(g, "weight_names", where) or []
        out.append((lname, [(n, dataset(g, n, where)) for n in names]))
    return out


# ---------------------------------------------------------------- writing
def to_bytes(names):
    """Names as TF writes them in attributes: fixed-length UTF-8 bytes."""
    if not names:
        return _np.zeros((0,), "float64")      # TF's empty list (numpy's default dtype)
    return _np.array([n.encode("utf-8") for n in names])


def write_names_attr(obj, name, names):
    """``obj.attrs[name] = names``, split as Keras does into ``name0``, ``name1``... when over
    HDF5's object-header limit."""
    data = to_bytes(names)
    if data.nbytes <= _HEADER_LIMIT:
        obj.attrs[name] = data
        return
    chunks = int(_np.ceil(data.nbytes / _HEADER_LIMIT))
    while True:
        parts = _np.array_split(data, chunks)
        if all(p.nbytes <= _HEADER_LIMIT for p in parts):
            break
        chunks += 1
    for k, p in enumerate(parts):
        obj.attrs[f"{name}{k}"] = p


def write_weight_group(parent, layers):
    """tf_keras's weights layout under ``parent``: ``layers`` is ``[(layer name, [(weight name,
    array), ...]), ...]``."""
    write_names_attr(parent, "layer_names", [n for n, _ in layers])
    for lname, weights in layers:
        g = parent.create_group(lname)
        write_names_attr(g, "weight_names", [n for n, _ in weights])
        for wname, value in weights:
            write_dataset(g, wname, value)


def write_dataset(group, name, value):
    """The dataset ``name`` (a path: groups are made) of ``group`` holding ``value``."""
    value = _np.asarray(value)
    ds = group.create_dataset(name, value.shape, dtype=value.dtype)
    if value.shape:
        ds[:] = value
    else:
        ds[()] = value


def write_h5(path, fill, what):
    """Write the HDF5 file ``path`` by ``fill(h5py.File)``, atomically: a temporary file beside
    it, fsync'ed and renamed over it once ``fill`` returned (a failure leaves ``path`` as it
    was and no temporary). Temporaries of killed writes to ``path`` are removed first."""
    h5py = h5py_module(path, what)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    prefix = tmp_prefix(path)
    for stale in stale_temporaries(directory, prefix):
        with contextlib.suppress(OSError):
            os.unlink(stale)
    fd, tmp = tempfile.mkstemp(prefix=owned_prefix(prefix), dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            fill(f)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)
    return path
