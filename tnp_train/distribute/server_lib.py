"""``tt.distribute.Server`` (TF 2.4's ``tf.distribute.Server``): the ``ps`` and ``worker`` tasks
of a parameter-server job launched by ``mpiexec``. The implementation is in
``tnp_train.distribute.ps.server``."""
from .ps.server import Server

__all__ = ["Server"]
