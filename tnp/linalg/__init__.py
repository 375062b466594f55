"""``tnp.linalg``: mirrors ``numpy.linalg`` (CuPy's ``cupy.linalg`` on a GPU).

The products that NumPy documents in its linear-algebra section but exports at the top level
(``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``, ``einsum``, ``kron``, ...) are made
here too and re-exported by ``tnp``.
"""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_function, make_functions

SECTION = "linalg"

LinAlgError = _np.linalg.LinAlgError

_LINALG = ["matrix_power", "solve", "tensorsolve", "tensorinv", "inv", "cholesky", "eigvals",
           "eigvalsh", "pinv", "slogdet", "det", "svd", "svdvals", "eig", "eigh", "lstsq", "norm",
           "qr", "cond", "matrix_rank", "multi_dot", "trace", "diagonal", "cross", "outer",
           "tensordot", "matmul", "matrix_transpose", "matrix_norm", "vector_norm", "vecdot"]

__all__ = ["LinAlgError"]
for _n in _LINALG:
    if hasattr(_np.linalg, _n):
        globals()[_n] = make_function(f"linalg.{_n}", SECTION)
        __all__.append(_n)

# top-level products (tnp.dot, tnp.einsum, ...)
PRODUCTS = ["dot", "vdot", "inner", "outer", "tensordot", "einsum", "einsum_path", "kron",
            "trace"]
_products: dict = {}
make_functions(PRODUCTS, SECTION, _products)
