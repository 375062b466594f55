"""``tnp.lib``: mirrors ``numpy.lib``. ``stride_tricks`` and ``scimath`` are tnp's; the other
submodules (``recfunctions``, ``array_utils``, ``format``, ``npyio``, ``mixins``, ``introspect``,
``user_array``) are NumPy's taking tnp arrays (see ``tnp._handover``), and the rest of the names
(``NumpyVersion``, ``Arrayterator``...) are NumPy's own."""
from . import stride_tricks  # noqa: F401


def __getattr__(name):
    import importlib

    import numpy.lib as _nplib

    from .._handover import numpy_name

    if numpy_name(f"lib.{name}") is not None:
        return importlib.import_module(f"tnp.lib.{name}")
    if name == "scimath":
        return importlib.import_module("tnp.lib.scimath")
    return getattr(_nplib, name)   # NumPy's classes and its messages for removed names
