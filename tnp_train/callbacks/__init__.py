"""Callbacks (``tt.callbacks``): hooks into ``fit``/``evaluate``/``predict`` (TF 2.4's
``tf.keras.callbacks``).

``Callback`` is the base class and ``CallbackList`` the container the training loop drives;
``History`` and ``ProgbarLogger`` (Keras's progress bar, ``tt.utils.Progbar``) are added by ``fit`` itself. The others:
``ModelCheckpoint``, ``EarlyStopping``, ``ReduceLROnPlateau``, ``LearningRateScheduler``,
``CSVLogger``, ``TerminateOnNaN``, ``LambdaCallback``, ``TensorBoard`` (needs the ``tensorboard``
package: ``pip install tnp[tensorboard]``), ``BackupAndRestore`` (fault-tolerant training), ``BaseLogger`` and
``RemoteMonitor`` (POSTs each epoch's logs). See docs/callbacks.md.
"""
from .base import Callback, CallbackList, History
from .progbar import ProgbarLogger
from .model_checkpoint import ModelCheckpoint
from .early_stopping import EarlyStopping
from .lr import LearningRateScheduler, ReduceLROnPlateau
from .csv_logger import CSVLogger
from .misc import BaseLogger, LambdaCallback, RemoteMonitor, TerminateOnNaN
from .tensorboard import TensorBoard
from .backup import BackupAndRestore

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "ModelCheckpoint",
           "EarlyStopping", "ReduceLROnPlateau", "LearningRateScheduler", "CSVLogger",
           "TerminateOnNaN", "LambdaCallback", "TensorBoard", "BackupAndRestore", "BaseLogger",
           "RemoteMonitor", "experimental"]


class experimental:   # noqa: N801 - TF 2.4's namespace ``tf.keras.callbacks.experimental``
    """``tt.callbacks.experimental``: TF 2.4's spelling of ``BackupAndRestore``."""
    BackupAndRestore = BackupAndRestore
