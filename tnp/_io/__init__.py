"""Input and output (NumPy reference: "Input and output"): NumPy binary files, text files,
string formatting. Files are written by NumPy from the host values, so they are plain ``.npy``/
``.npz``/text files any NumPy reads; loading gives tnp arrays on the default device.
``allow_pickle`` defaults to False, as in NumPy."""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_functions, composite
from .._core.devices import get_default_device
from .._core.ndarray import wrap

SECTION = "io"

CREATION = ["loadtxt", "genfromtxt"]
WRITERS = ["save", "savez", "savez_compressed", "savetxt"]
FORMATTING = ["array2string", "array_repr", "array_str", "format_float_positional",
              "format_float_scientific", "binary_repr", "base_repr"]

__all__ = make_functions(CREATION, SECTION, globals(), kind="creation")
__all__ += make_functions(WRITERS + FORMATTING, SECTION, globals(), kind="meta")

# print options are NumPy's: tnp prints through NumPy, so one setting serves both
set_printoptions = _np.set_printoptions
get_printoptions = _np.get_printoptions
printoptions = _np.printoptions
__all__ += ["set_printoptions", "get_printoptions", "printoptions"]


class NpzFile:
    """``tnp.load`` of an ``.npz``: NumPy's lazy archive, members returned as tnp arrays."""

    def __init__(self, npz, dev):
        self._npz = npz
        self._dev = dev

    def __getitem__(self, key):
        return wrap(self._npz[key], self._dev)

    def __getattr__(self, name):
        return getattr(self._npz, name)

    def __iter__(self):
        return iter(self._npz)

    def __len__(self):
        return len(self._npz)

    def __contains__(self, key):
        return key in self._npz

    def keys(self):
        return self._npz.keys()

    def values(self):
        return [self[k] for k in self._npz.keys()]

    def items(self):
        return [(k, self[k]) for k in self._npz.keys()]

    def close(self):
        self._npz.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return repr(self._npz).replace("NpzFile", "tnp NpzFile")


@composite("load", SECTION)
def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *,
         max_header_size=None, device=None):
    """tnp.load: mirrors ``numpy.load``; arrays come back as tnp arrays (``.npz``: a lazy archive)."""
    from .._core.devices import device as _device

    kw = {"mmap_mode": mmap_mode, "allow_pickle": allow_pickle, "fix_imports": fix_imports,
          "encoding": encoding}
    if max_header_size is not None:
        kw["max_header_size"] = max_header_size
    r = _np.load(file, **kw)
    dev = _device(device) if device is not None else get_default_device()
    if isinstance(r, _np.lib.npyio.NpzFile):
        return NpzFile(r, dev)
    if dev.kind != "cpu":
        return wrap(dev.backend.xp.asarray(r), dev)
    return wrap(r, dev)


@composite("fromregex", SECTION)
def fromregex(file, regexp, dtype, encoding=None):
    """tnp.fromregex: mirrors ``numpy.fromregex``."""
    return wrap(_np.fromregex(file, regexp, dtype, encoding=encoding), get_default_device())


__all__ += ["load", "fromregex"]


# ---- genfromtxt(usemask=True): NumPy's masked array, as tnp.ma is NumPy's module ---------------
_genfromtxt_made = genfromtxt  # noqa: F821 (made above)
_GENFROMTXT_SIG = __import__("inspect").signature(_np.genfromtxt)


@composite("genfromtxt", SECTION)
def genfromtxt(fname, *args, **kwargs):
    """tnp.genfromtxt: mirrors ``numpy.genfromtxt``; with ``usemask=True`` the result is NumPy's
    ``numpy.ma.MaskedArray`` (on the CPU; ``tnp.ma`` is ``numpy.ma``), whose mask a tnp array
    would drop."""
    try:
        usemask = _GENFROMTXT_SIG.bind_partial(fname, *args, **{
            k: v for k, v in kwargs.items() if k != "device"}).arguments.get("usemask", False)
    except TypeError:
        usemask = False
    if usemask:
        kwargs.pop("device", None)
        return _np.genfromtxt(fname, *args, **kwargs)
    return _genfromtxt_made(fname, *args, **kwargs)


genfromtxt.__doc__ += "\n\nNumPy's documentation:\n\n" + (_np.genfromtxt.__doc__ or "")
