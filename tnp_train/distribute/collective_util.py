"""``tt.distribute.experimental.CommunicationOptions`` and ``CommunicationImplementation``
(TF 2.4's ``collective_util``), with the deprecated ``CollectiveHints`` and
``CollectiveCommunication`` aliases.

These are hints the collective layer reads: ``bytes_per_pack`` sizes the gradient buckets (0:
chosen by the layer), ``timeout_seconds`` bounds a wait for the other ranks, ``implementation``
prefers MPI's ring or NCCL. One difference from TF: ``timeout_seconds=None`` does not mean
"wait for ever" here; the collective layer applies its default limit (a job never hangs).
"""
from __future__ import annotations

import copy
import enum
import numbers
import warnings

__all__ = ["CommunicationImplementation", "CollectiveCommunication", "CommunicationOptions",
           "Options", "CollectiveHints", "Hints"]


class CommunicationImplementation(enum.Enum):
    """Mirrors ``tf.distribute.experimental.CommunicationImplementation``: ``AUTO`` (the layer
    chooses), ``RING`` (host all-reduce: MPI or threads), ``NCCL`` (GPUs, through CuPy)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation  # TF's deprecated alias


class CommunicationOptions:
    """Mirrors ``tf.distribute.experimental.CommunicationOptions(bytes_per_pack=0,
    timeout_seconds=None, implementation=AUTO)``; ``implementation`` may be a string in any
    case. Differs from TF: ``timeout_seconds=None`` means the collective layer's default limit
    (60 s, env ``TNP_COLLECTIVE_TIMEOUT``), not an unbounded wait."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if isinstance(bytes_per_pack, bool) or not isinstance(bytes_per_pack, numbers.Integral):
            raise TypeError("CommunicationOptions: bytes_per_pack must be a non-negative integer, "
                            f"got {bytes_per_pack!r}")
        if bytes_per_pack < 0:
            raise ValueError("CommunicationOptions: bytes_per_pack must be >= 0, got "
                             f"{bytes_per_pack}")
        if timeout_seconds is not None:
            if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, numbers.Real):
                raise TypeError("CommunicationOptions: timeout_seconds must be a number of "
                                f"seconds or None, got {timeout_seconds!r}")
            if timeout_seconds < 0:
                raise ValueError("CommunicationOptions: timeout_seconds must be >= 0, got "
                                 f"{timeout_seconds}")
        if isinstance(implementation, str):
            try:
                implementation = CommunicationImplementation(implementation.upper())
            except ValueError:
                raise ValueError(f"CommunicationOptions: invalid implementation "
                                 f"{implementation!r}; expected one of 'AUTO', 'RING', "
                                 "'NCCL'") from None
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("CommunicationOptions: implementation must be a "
                             "tt.distribute.experimental.CommunicationImplementation, got "
                             f"{implementation!r}")
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options):
        """A new options object: ``options``' values where they are not the defaults, else
        this one's (as TF's ``Options.merge``)."""
        merged = copy.copy(self)
        if options is None:
            return merged
        if options.bytes_per_pack != 0:
            merged.bytes_per_pack = options.bytes_per_pack
        if options.timeout_seconds is not None:
            merged.timeout_seconds = options.timeout_seconds
        if options.implementation != CommunicationImplementation.AUTO:
            merged.implementation = options.implementation
        return merged

    def __eq__(self, other):
        if not isinstance(other, CommunicationOptions):
            return NotImplemented
        return (self.bytes_per_pack, self.timeout_seconds, self.implementation) == \
            (other.bytes_per_pack, other.timeout_seconds, other.implementation)

    __hash__ = None  # mutable, as TF's

    def __repr__(self):
        return (f"CommunicationOptions(bytes_per_pack={self.bytes_per_pack}, "
                f"timeout_seconds={self.timeout_seconds!r}, "
                f"implementation=CommunicationImplementation.{self.implementation.name})")


Options = CommunicationOptions  # the name of TF's implementation class


def CollectiveHints(bytes_per_pack=0, timeout_seconds=None):  # noqa: N802  (TF's class name)
    """Mirrors ``tf.distribute.experimental.CollectiveHints`` (deprecated in TF 2.4): returns
    ``CommunicationOptions(bytes_per_pack, timeout_seconds)`` with a DeprecationWarning."""
    warnings.warn("CollectiveHints is deprecated: use "
                  "tt.distribute.experimental.CommunicationOptions instead",
                  DeprecationWarning, stacklevel=2)
    return CommunicationOptions(bytes_per_pack=bytes_per_pack, timeout_seconds=timeout_seconds)


Hints = CollectiveHints
