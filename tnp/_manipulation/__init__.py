"""Array manipulation routines (NumPy reference section of that name). Functions that NumPy
answers with a view (reshape, transpose, ravel of a contiguous array, ...) return a tnp view of
the same memory: writes through it show in the original."""
from __future__ import annotations

from .._core.dispatch import composite, make_functions

SECTION = "manipulation"

FUNCTIONS = [
    # basic operations / shape
    "shape", "size", "ndim", "reshape", "ravel",
    # transpose-like
    "moveaxis", "rollaxis", "swapaxes", "transpose", "permute_dims", "matrix_transpose",
    # number of dimensions
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "broadcast_arrays",
    "expand_dims", "squeeze",
    # joining / splitting
    "concatenate", "concat", "stack", "block", "vstack", "hstack", "dstack", "column_stack",
    "row_stack", "split", "array_split", "dsplit", "hsplit", "vsplit", "unstack",
    # tiling, adding and removing elements
    "tile", "repeat", "delete", "insert", "append", "resize", "trim_zeros", "pad",
    # rearranging
    "flip", "fliplr", "flipud", "roll", "rot90",
    # changing kind of array
    "astype",
]
META = ["broadcast_shapes"]
INPLACE = ["copyto"]

__all__ = make_functions(FUNCTIONS, SECTION, globals())
__all__ += make_functions(META, SECTION, globals(), kind="meta")
__all__ += make_functions(INPLACE, SECTION, globals(), kind="inplace")


# ---- astype(x, dtype, /, *, copy=True, device=None): ``device`` is any tnp device ----------------
# (numpy.astype takes only the string "cpu"; the array API standard passes ``device=x.device``.)
_astype = astype  # noqa: F821 (made above)


@composite("astype", SECTION)
def astype(x, dtype, /, *, copy=True, device=None):
    """tnp.astype: mirrors ``numpy.astype``; ``device=`` takes a tnp device (or its name) and
    gives the result on that device, as the array API standard asks."""
    if device is None:
        return _astype(x, dtype, copy=copy)
    from .._core.devices import device as _device
    from .._core.ndarray import ndarray

    dev = _device(device)
    if not isinstance(x, ndarray):
        from .._creation import asarray

        x = asarray(x, device=dev)
    elif x.device is not dev:
        return _astype(x.to_device(dev), dtype, copy=False)  # to_device made new memory already
    return _astype(x, dtype, copy=copy)
