"""``tt.distribute.experimental.CommunicationOptions`` and ``CommunicationImplementation``
(TF 2.4's ``collective_util``), with the deprecated ``CollectiveHints`` and
``CollectiveCommunication`` aliases, and ``Compression`` (Horovod's ``hvd.Compression``).

These are hints the collective layer reads: ``bytes_per_pack`` sizes the gradient buckets (0:
chosen by the layer), ``timeout_seconds`` bounds a wait for the other ranks, ``implementation``
prefers MPI's ring or NCCL. One difference from TF: ``timeout_seconds=None`` does not mean
"wait for ever" here; the collective layer applies its default limit (a job never hangs).
One field beyond TF: ``compression`` sends the gradient buckets as float16 or bfloat16.
"""
from __future__ import annotations

import copy
import enum
import numbers
import warnings

import numpy

__all__ = ["CommunicationImplementation", "CollectiveCommunication", "CommunicationOptions",
           "Compression", "Options", "CollectiveHints", "Hints"]


class CommunicationImplementation(enum.Enum):
    """Mirrors ``tf.distribute.experimental.CommunicationImplementation``: ``AUTO`` (the layer
    chooses), ``RING`` (host all-reduce: MPI or threads), ``NCCL`` (GPUs, through CuPy)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation  # TF's deprecated alias


class Compression(enum.Enum):
    """How the gradients travel between workers (Horovod's ``hvd.Compression.none`` /
    ``.fp16``, and ``.bf16``; not a TF name): ``CommunicationOptions(compression=...)``.
    ``fp16`` / ``bf16`` cast each floating gradient wider than 2 bytes to float16 / bfloat16
    before the all-reduce, sum in that dtype (as Horovod does) and cast the sums back to the
    variable's dtype: half the bytes of float32 on the wire."""
    none = "none"
    fp16 = "fp16"
    bf16 = "bf16"

    @property
    def wire_dtype(self):
        """The dtype gradients travel in (a NumPy dtype), or None for ``none``."""
        if self is Compression.none:
            return None
        if self is Compression.fp16:
            return numpy.dtype(numpy.float16)
        import ml_dtypes      # NumPy's bfloat16 (a dependency of tnp)
        return numpy.dtype(ml_dtypes.bfloat16)

    def __repr__(self):
        return f"Compression.{self.name}"


# the spellings a string may take (any case): Horovod's attribute names and the dtypes' names
_COMPRESSION_NAMES = {"none": Compression.none, "fp16": Compression.fp16,
                      "float16": Compression.fp16, "half": Compression.fp16,
                      "bf16": Compression.bf16, "bfloat16": Compression.bf16}


def as_compression(compression, who="CommunicationOptions"):
    """``compression`` (a :class:`Compression`, one of its names in any case, or None) as a
    :class:`Compression`; a ValueError naming ``who`` and the accepted values otherwise."""
    if compression is None:
        return Compression.none
    if isinstance(compression, Compression):
        return compression
    if isinstance(compression, str) and compression.lower() in _COMPRESSION_NAMES:
        return _COMPRESSION_NAMES[compression.lower()]
    raise ValueError(f"{who}: invalid compression {compression!r}; expected "
                     "tt.distribute.experimental.Compression.none, .fp16 or .bf16 (or the "
                     "strings 'none', 'fp16', 'bf16')")


def refuse_compression(options, who):
    """A per-call ``options`` (``all_reduce``, ``reduce_to``, ...) must not ask for
    compression: only the gradients of ``MultiWorkerMirroredStrategy`` travel compressed, and a
    setting silently ignored would be worse than an error."""
    compression = getattr(options, "compression", Compression.none)
    if compression is not Compression.none:
        raise ValueError(f"{who}: options asks for compression={compression!r}, which applies "
                         "to the gradients only: pass it to "
                         "MultiWorkerMirroredStrategy(communication_options=...); explicit "
                         "reductions are exact")


class CommunicationOptions:
    """Mirrors ``tf.distribute.experimental.CommunicationOptions(bytes_per_pack=0,
    timeout_seconds=None, implementation=AUTO)``; ``implementation`` may be a string in any
    case. Differs from TF: ``timeout_seconds=None`` means the collective layer's default limit
    (60 s, env ``TNP_COLLECTIVE_TIMEOUT``), not an unbounded wait. Beyond TF, ``compression``
    (a :class:`Compression` or its name: ``"none"``, ``"fp16"``, ``"bf16"``) is how
    ``MultiWorkerMirroredStrategy(communication_options=...)`` sends the gradients; a
    per-call ``all_reduce(..., options=...)`` refuses it."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO, compression=None):
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
        self.compression = as_compression(compression)

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
        if options.compression is not Compression.none:
            merged.compression = options.compression
        return merged

    def __eq__(self, other):
        if not isinstance(other, CommunicationOptions):
            return NotImplemented
        return (self.bytes_per_pack, self.timeout_seconds, self.implementation,
                self.compression) == (other.bytes_per_pack, other.timeout_seconds,
                                      other.implementation, other.compression)

    __hash__ = None  # mutable, as TF's

    def __repr__(self):
        return (f"CommunicationOptions(bytes_per_pack={self.bytes_per_pack}, "
                f"timeout_seconds={self.timeout_seconds!r}, "
                f"implementation=CommunicationImplementation.{self.implementation.name}, "
                f"compression={self.compression!r})")


Options = CommunicationOptions  # the name of TF's implementation class


def CollectiveHints(bytes_per_pack=0, timeout_seconds=None):  # noqa: N802  (TF's class name)
    """Mirrors ``tf.distribute.experimental.CollectiveHints`` (deprecated in TF 2.4): returns
    ``CommunicationOptions(bytes_per_pack, timeout_seconds)`` with a DeprecationWarning."""
    warnings.warn("CollectiveHints is deprecated: use "
                  "tt.distribute.experimental.CommunicationOptions instead",
                  DeprecationWarning, stacklevel=2)
    return CommunicationOptions(bytes_per_pack=bytes_per_pack, timeout_seconds=timeout_seconds)


Hints = CollectiveHints
