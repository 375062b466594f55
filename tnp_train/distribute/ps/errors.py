"""The errors of parameter-server training (TF raises ``tf.errors.UnavailableError`` and
``tf.errors.CancelledError`` in the same situations; tnp_train has no ``tf.errors`` module, so
they live here and in ``tt.distribute.experimental.coordinator``)."""
from __future__ import annotations

__all__ = ["UnavailableError", "CancelledError", "PeerLostError"]


class UnavailableError(RuntimeError):
    """A task the job needs is gone: a parameter server (its variables are lost with it), every
    worker, or the chief (TF: ``tf.errors.UnavailableError``)."""


class CancelledError(RuntimeError):
    """A scheduled function that never ran because an earlier one failed (TF: the
    ``RemoteValue`` of a cancelled closure raises ``tf.errors.CancelledError``)."""


class PeerLostError(UnavailableError):
    """A request whose destination rank was lost before it answered."""

    def __init__(self, rank, what=None):
        self.rank = rank
        super().__init__(what or f"rank {rank} of the job was lost before it answered")
