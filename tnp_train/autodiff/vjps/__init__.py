"""VJP rules, one module per tnp section (the layout of ``tnp`` itself)."""
from . import math, manipulation, indexing, creation, statistics, linalg, fft, other, emath  # noqa: F401
