"""Array manipulation routines (NumPy reference section of that name). Functions that NumPy
answers with a view (reshape, transpose, ravel of a contiguous array, ...) return a tnp view of
the same memory: writes through it show in the original."""
from __future__ import annotations

from .._core.dispatch import make_functions

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
