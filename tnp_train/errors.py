"""``tt.errors``: the exception classes of ``tf.errors`` that tnp_train raises.

``OpError`` is the base, as in TF. ``InvalidArgumentError`` is also a ``ValueError`` (the
type the rest of tnp_train raises for bad arguments), so either ``except`` catches it.
"""
from __future__ import annotations

__all__ = ["OpError", "InvalidArgumentError", "DataLossError", "NotFoundError"]


class OpError(Exception):
    """Mirrors ``tf.errors.OpError``: the base of the errors an operation raises; ``message``
    is its text."""

    @property
    def message(self):
        return str(self)


class InvalidArgumentError(OpError, ValueError):
    """Mirrors ``tf.errors.InvalidArgumentError``: an operation was given a bad value (also a
    ValueError)."""


class DataLossError(OpError):
    """Mirrors ``tf.errors.DataLossError``: unrecoverable data loss or corruption, such as a
    TFRecord whose checksum does not match."""


class NotFoundError(OpError, FileNotFoundError):
    """Mirrors ``tf.errors.NotFoundError``: a file or directory an operation needs does not
    exist (also a FileNotFoundError)."""
