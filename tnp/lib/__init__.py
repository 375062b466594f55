"""``tnp.lib``: the parts of ``numpy.lib`` that take arrays (``tnp.lib.stride_tricks``)."""
from . import stride_tricks  # noqa: F401
