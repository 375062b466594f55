"""Finding a dataset file without a network, and reading Keras's cache formats safely."""
from __future__ import annotations

import io
import os
import pickle
import tarfile
import zipfile

import numpy as np

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def _cache_dirs():
    # TF's get_file uses ~/.keras, or /tmp/.keras where ~/.keras cannot be written
    return [os.path.join(os.path.expanduser("~"), ".keras", "datasets"),
            os.path.join("/tmp", ".keras", "datasets")]


def locate(dataset, fname, origin, path=None, is_dir=False, archive=None):
    """The local path of ``fname`` (a file, or a folder with ``is_dir``): ``path`` when it names
    an existing file or folder, else ``fname`` (or ``path``, as Keras treats it: a name
    relative to the cache) in ``~/.keras/datasets``; an archive there (``archive``, a
    ``.tar.gz``) is extracted beside it as Keras does. Otherwise FileNotFoundError saying which
    file to put where and where it comes from."""
    exists = os.path.isdir if is_dir else os.path.isfile
    if path is not None:
        p = os.path.expanduser(os.fspath(path))
        if exists(p):
            return p
        if archive is not None and os.path.isfile(p) and tarfile.is_tarfile(p):
            return _extract(p, fname)
        fname = os.fspath(path)
    for d in _cache_dirs():
        p = os.path.join(d, fname)
        if exists(p):
            return p
        if archive is not None and os.path.isfile(os.path.join(d, archive)):
            return _extract(os.path.join(d, archive), fname)
    want = archive if archive is not None else fname
    raise FileNotFoundError(
        f"{dataset}.load_data: {want!r} was not found in {_cache_dirs()[0]}, and tnp_train "
        f"does not download. Download {origin} and put it there"
        + (" (or the folder it extracts to)" if archive else "")
        + ", or pass path= the local file" + (" or folder" if is_dir else "") + ".")


def _extract(archive, fname):
    into = os.path.dirname(os.path.abspath(archive))
    with tarfile.open(archive) as t:
        t.extractall(into, filter="data")
    out = os.path.join(into, os.path.basename(fname))
    if not os.path.isdir(out):
        raise FileNotFoundError(f"{archive} did not hold the folder {os.path.basename(fname)}")
    return out


# numpy arrays inside pickles (CIFAR's batches, the object arrays of imdb.npz and
# reuters.npz) need these globals and nothing else; anything else is refused, so a crafted
# file cannot run code
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
            ("builtins", "list"), ("builtins", "dict"), ("builtins", "tuple"),
            ("builtins", "int"), ("builtins", "bytes"), ("builtins", "str")}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset "
                                         f"file (only NumPy arrays and plain Python data are "
                                         f"allowed)")
        return super().find_class(module, name)


def safe_pickle_load(f, encoding="ASCII"):
    return _SafeUnpickler(f, encoding=encoding).load()


def load_npz(path, keys):
    """The arrays ``keys`` of an ``.npz``; object arrays are unpickled with the restricted
    unpickler instead of ``np.load(allow_pickle=True)``."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for k in keys:
            try:
                raw = z.read(k + ".npy")
            except KeyError:
                raise KeyError(f"{path} has no array {k!r} (it has "
                               f"{[n[:-4] for n in z.namelist()]})") from None
            f = io.BytesIO(raw)
            version = np.lib.format.read_magic(f)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = reader(f)
            if dtype.hasobject:
                a = safe_pickle_load(f, encoding="latin1")
            else:
                f.seek(0)
                a = np.lib.format.read_array(f, allow_pickle=False)
            out[k] = a
    return out
