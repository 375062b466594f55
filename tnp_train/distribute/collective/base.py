"""The communicator contract every backend implements, its errors, and the no-hang clock.

Framework-free: arrays are ``numpy.ndarray`` (or ``cupy.ndarray``, staged through the host
where a backend has no device path). Nothing here imports tnp or tnp_train.
"""
from __future__ import annotations

import math
import os
import pickle
import time
import warnings

import numpy as np

from . import events

__all__ = ["Communicator", "Request", "CollectiveError", "CollectiveTimeoutError",
           "CollectiveMismatchError", "CollectivePeerExitError", "CollectiveStallWarning",
           "CollectiveWorkerLostError",
           "REDUCE_OPS", "DEFAULT_TIMEOUT_SECONDS", "DEFAULT_WARN_SECONDS"]

REDUCE_OPS = ("sum", "mean", "max", "min")
DEFAULT_TIMEOUT_SECONDS = 60.0
# Horovod's stall inspector warns after 60 s; ours warns well before the 60 s limit so the
# missing ranks are named while there is still time to look at them.
DEFAULT_WARN_SECONDS = 10.0


class CollectiveError(RuntimeError):
    """A collective could not complete (a peer left, the group was aborted, ...)."""


class CollectiveTimeoutError(CollectiveError):
    """Some ranks did not join a collective within ``timeout_seconds`` (TF would wait for ever,
    or raise ``DeadlineExceededError`` when a timeout is set)."""


class CollectiveMismatchError(CollectiveError, ValueError):
    """Ranks called the same collective with different shapes, dtypes or operations (TF raises
    ``InvalidArgumentError``)."""


class CollectivePeerExitError(CollectiveError):
    """A peer's process ended normally while this rank still expected it in a collective."""


class CollectiveWorkerLostError(CollectiveError):
    """A peer process died during a collective (``MPI_ERR_PROC_FAILED`` under Open MPI's ULFM):
    ``lost`` lists the ranks this rank knows to be gone, which can be none (a rank told by a
    peer's revoke before its own failure detector saw the death). The communicator is revoked
    on every rank; :meth:`MPICommunicator.shrink` makes one of the survivors, whose
    ``lost_at_shrink`` is the complete list, the same on every survivor (elastic training puts
    it in ``lost``)."""

    def __init__(self, message, lost=()):
        super().__init__(message)
        self.lost = tuple(lost)


class CollectiveStallWarning(RuntimeWarning):
    """A collective has waited long enough for some ranks that it names them."""


def normalize_op(op):
    """``"sum" | "mean" | "max" | "min"`` from a string in any case or an enum whose value is
    one (``ReduceOp.SUM``)."""
    name = getattr(op, "value", op)
    if isinstance(name, str) and name.lower() in REDUCE_OPS:
        return name.lower()
    raise ValueError(f"allreduce: unknown reduction op {op!r}; expected one of "
                     f"{', '.join(REDUCE_OPS)}")


def _env_seconds(name):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number of seconds") \
            from None
    if not value > 0 or math.isinf(value):
        raise ValueError(f"environment variable {name}={raw!r} must be a finite number of "
                         "seconds > 0")
    return value


def resolve_timeouts(options=None, timeout_seconds=None):
    """``(timeout, warn_after)`` in seconds: ``timeout_seconds``, else ``options.timeout_seconds``
    (a ``CommunicationOptions`` or a mapping), else env ``TNP_COLLECTIVE_TIMEOUT``, else 60 s.
    The stall warning comes at 10 s, or half the timeout when that is shorter (env
    ``TNP_COLLECTIVE_WARN_AFTER`` overrides)."""
    if timeout_seconds is None and options is not None:
        timeout_seconds = (options.get("timeout_seconds") if isinstance(options, dict)
                           else getattr(options, "timeout_seconds", None))
    if timeout_seconds is None:
        timeout_seconds = _env_seconds("TNP_COLLECTIVE_TIMEOUT")
    if timeout_seconds is None:
        timeout_seconds = DEFAULT_TIMEOUT_SECONDS
    timeout_seconds = float(timeout_seconds)
    # A job never hangs, so there is no "wait for ever" value, and 0 would fail every
    # collective whose peers are a microsecond late.
    if not timeout_seconds > 0 or math.isinf(timeout_seconds):
        raise ValueError(f"collective timeout_seconds must be a finite number > 0, got "
                         f"{timeout_seconds!r}")
    warn_after = _env_seconds("TNP_COLLECTIVE_WARN_AFTER")
    if warn_after is None:
        warn_after = min(DEFAULT_WARN_SECONDS, timeout_seconds / 2)
    return timeout_seconds, warn_after


def describe(dtype, shape):
    """``float32 (3, 4)``: how error messages name an array."""
    return f"{np.dtype(dtype).name} {tuple(shape)}"


def format_ranks(ranks):
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks}"


# -- host staging: MPI here has no CUDA path, so a CuPy buffer travels through the host --------

def is_cupy(buf):
    return type(buf).__module__.split(".", 1)[0] == "cupy"


def to_host(buf, what):
    """``(numpy array, restore)``: ``restore(result)`` puts a result back where ``buf`` lives."""
    if is_cupy(buf):
        import cupy
        device_id = buf.device.id

        def restore(result):
            with cupy.cuda.Device(device_id):
                return cupy.asarray(result)
        return cupy.asnumpy(buf), restore
    arr = np.asarray(buf)
    if arr.dtype.hasobject:
        raise TypeError(f"{what}: arrays of dtype object cannot be communicated")
    return arr, None


def check_reducible(op, dtype, what="allreduce"):
    """Refuse what TF's collectives refuse instead of returning a meaningless number."""
    if dtype.kind == "b" and op in ("sum", "mean"):
        raise TypeError(f"{what}: op {op!r} is not defined for bool arrays; cast to an integer "
                        "dtype first")
    if dtype.kind == "c" and op in ("max", "min"):
        raise TypeError(f"{what}: op {op!r} is not defined for complex dtype {dtype.name}")
    if dtype.kind not in "biufc" and not is_ml_dtype(dtype):
        raise TypeError(f"{what}: cannot reduce arrays of dtype {dtype.name}")


def is_ml_dtype(dtype):
    """bfloat16, float8_*, int4 (ml_dtypes): NumPy ufuncs reduce them; MPI knows none of them."""
    return getattr(dtype.type, "__module__", "") == "ml_dtypes"


def apply_mean(total, size):
    """``total / size`` in place, in ``total``'s dtype; integers truncate toward zero, as TF's
    ``Div`` final op of a MEAN collective does."""
    if size == 1:
        return total
    if total.dtype.kind in "iu":
        quotient = np.floor_divide(total, size)
        if total.dtype.kind == "i":
            # floor_divide rounds toward -inf; bump the inexact negative quotients back up.
            quotient += (total < 0) & (quotient * size != total)
        total[...] = quotient
    else:
        np.divide(total, total.dtype.type(size), out=total)
    return total


def is_half_float(dtype):
    """float16 or bfloat16: the 2-byte floats, summed through float32 (:func:`sum_in_order`)."""
    return dtype.itemsize == 2 and (dtype.kind == "f" or dtype.name == "bfloat16")


def sum_in_order(parts, out):
    """``out = parts[0] + parts[1] + ...``, in that order (rank order: the same bits on every
    rank). float16 and bfloat16 are summed in float32 and rounded once, at the end: NumPy's
    half-precision add converts every element to float32 and back anyway (so for two parts
    the bits are the same), here about 8 times faster for float16, and with more parts one
    rounding instead of one per addition. A sum beyond the dtype's range is inf, silently (as
    IEEE addition in the dtype)."""
    if len(parts) == 1:
        out[...] = parts[0]
    elif is_half_float(out.dtype):
        acc = parts[0].astype(np.float32)
        for part in parts[1:]:
            np.add(acc, part, out=acc)
        with np.errstate(over="ignore"):
            out[...] = acc
    else:
        np.add(parts[0], parts[1], out=out)
        for part in parts[2:]:
            np.add(out, part, out=out)
    return out


def reduce_into(op, acc, other):
    """``acc = acc (op) other`` in place (``mean`` sums; the division comes once at the end)."""
    if op in ("sum", "mean"):
        if is_half_float(acc.dtype):
            sum_in_order([acc, other], acc)
        else:
            np.add(acc, other, out=acc)
    elif op == "max":
        np.maximum(acc, other, out=acc)
    else:
        np.minimum(acc, other, out=acc)
    return acc


class Request:
    """A collective in flight: ``test()`` drives it and says whether it is done; ``wait()``
    drives it to the end and returns its result (or raises its error)."""

    __slots__ = ()

    def test(self):
        raise NotImplementedError

    def wait(self):
        raise NotImplementedError


class CompletedRequest(Request):
    """A request whose result is already known (a size-1 group)."""

    __slots__ = ("_result",)

    def __init__(self, result):
        self._result = result

    def test(self):
        return True

    def wait(self):
        return self._result


class Communicator:
    """A group of ``size`` ranks running the same sequence of collectives.

    Every collective gets a sequence number (the same on every rank), checks before moving the
    payload that every rank called it with the same op, shape and dtype, never waits longer than
    ``timeout_seconds`` for a missing rank, and reports an event to :func:`subscribe`'s
    listeners once it completes. Results are new arrays; inputs are not modified.
    """

    rank = 0
    size = 1

    def __init__(self, options=None, timeout_seconds=None):
        self.timeout_seconds, self.warn_seconds = resolve_timeouts(options, timeout_seconds)
        self._seq = 0

    def set_options(self, options=None, timeout_seconds=None):
        """Take the timeout of a ``CommunicationOptions`` (or ``timeout_seconds``)."""
        self.timeout_seconds, self.warn_seconds = resolve_timeouts(options, timeout_seconds)

    @property
    def seq(self):
        """The sequence number the next collective on this communicator gets."""
        return self._seq

    def _next_seq(self):
        seq = self._seq
        self._seq = seq + 1
        return seq

    # -- arrays --------------------------------------------------------------------------------
    def allreduce(self, buf, op="sum"):
        """Every rank's ``buf`` combined elementwise with ``op`` (``sum``, ``mean``, ``max``,
        ``min``); the same new array on every rank."""
        return self.allreduce_async(buf, op).wait()

    def allreduce_async(self, buf, op="sum"):
        """:meth:`allreduce` started now, finished through the returned :class:`Request`;
        ``buf`` must not be written until the request completes."""
        raise NotImplementedError

    def allgather(self, buf):
        """Every rank's ``buf`` concatenated along axis 0 in rank order (dim 0 may differ)."""
        raise NotImplementedError

    def broadcast(self, buf, root=0):
        """``root``'s ``buf`` on every rank (every rank passes an array of the same shape and
        dtype, as with ``MPI_Bcast``)."""
        raise NotImplementedError

    # -- small metadata ------------------------------------------------------------------------
    def broadcast_object(self, obj, root=0):
        """``root``'s picklable ``obj`` on every rank (small metadata between ranks of one job)."""
        raise NotImplementedError

    def allgather_object(self, obj):
        """The list of every rank's picklable ``obj``, in rank order."""
        raise NotImplementedError

    def barrier(self):
        """Return once every rank has called it (bounded by the timeout like any collective)."""
        raise NotImplementedError

    def abort(self, errorcode=1):
        """End the whole job at once (``MPI_Abort``)."""
        raise NotImplementedError

    def persistent_allreduce(self, specs, op="sum", xp=None, transient=False):
        """A plan that all-reduces the same buffers (``(count, dtype)`` each) round after round
        (see :mod:`.shm`); collective: every rank calls it with the same ``specs``.
        ``transient=True``: a result may be overwritten by the buffer's next round."""
        from .shm import make_plan
        return make_plan(self, specs, op, np if xp is None else xp, transient)

    # -- shared helpers ------------------------------------------------------------------------
    def _report(self, name, op, seq, nbytes, t_start, t_wait_end, t_end):
        if events.has_listeners():
            events.emit({"name": name, "op": op, "seq": seq, "bytes": int(nbytes),
                         "t_start": t_start, "t_wait_end": t_wait_end, "t_end": t_end,
                         "rank": self.rank})

    def _warn_stall(self, what, waited, missing, arrived):
        warnings.warn(
            f"[rank {self.rank}] {what} has waited {waited:.1f} s for {format_ranks(missing)}"
            + (f" ({format_ranks(arrived)} arrived)" if arrived else "")
            + f"; the job fails after {self.timeout_seconds:g} s",
            CollectiveStallWarning, stacklevel=4)

    def _timeout_error(self, what, waited, missing, arrived, detail="never arrived"):
        return CollectiveTimeoutError(
            f"[rank {self.rank}] {what} timed out after {waited:.1f} s: "
            f"{format_ranks(missing)} {detail}"
            + (f" ({format_ranks(arrived)} arrived)" if arrived else "")
            + ". Set CommunicationOptions(timeout_seconds=...) or TNP_COLLECTIVE_TIMEOUT to "
            "wait longer")


def pickle_bytes(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)


def unpickle_bytes(arr):
    return pickle.loads(arr.tobytes())


def now():
    """The clock of events and timeouts: ``time.perf_counter()`` (monotonic, and on Linux the
    same clock in every process of a machine)."""
    return time.perf_counter()
