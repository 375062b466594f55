"""The core of tnp: the array class and what is built on it, assembled in dependency order.

:mod:`.ndarray` defines the class and the wrapping helpers. :mod:`.scalar` (``tnp.Scalar``)
and :mod:`.operators` (the operators of both classes) import it and register what it needs of
them; then the optional C base is put in place over all of them (its slots would be reset by
operators set after it), and :mod:`.flatiter` comes last, taking the C ``bump_version``. Every
import of a ``tnp._core`` module runs this first, so the classes are complete whichever module
is imported. The modules above them (``dispatch``, ``methods``...) import them, never the
reverse.
"""
from . import ndarray as _ndarray_module
from . import scalar as _scalar_module, operators as _operators_module  # noqa: F401

_ndarray_module.install_speedups()

from . import flatiter as _flatiter_module  # noqa: E402,F401
