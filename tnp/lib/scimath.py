"""``tnp.lib.scimath``: ``tnp.emath`` under the name ``numpy.lib.scimath`` also has."""
from ..emath import *  # noqa: F401,F403
from ..emath import __all__  # noqa: F401
