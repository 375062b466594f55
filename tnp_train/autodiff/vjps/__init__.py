"""VJP rules, one module per tnp section (the layout of ``tnp`` itself)."""
from . import math, manipulation, indexing, statistics, linalg, fft, other  # noqa: F401
