"""Crash-safe file writes: a temporary file in the target's directory, flushed, fsync'ed, then
``os.replace``d over the target, and the directory fsync'ed so the rename itself is durable.

At every moment the target is either its complete old content or its complete new content; a
process killed mid-write leaves at most a hidden ``.<name>.tmp-XXXX`` file behind.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write", "atomic_write_bytes", "fsync_dir", "tmp_prefix"]

_UMASK = os.umask(0o022)   # read once at import (os.umask has no read-only form)
os.umask(_UMASK)


def tmp_prefix(path):
    """The prefix of the temporary files written for ``path`` (hidden, in its directory)."""
    return f".{os.path.basename(path)}.tmp-"


def fsync_dir(directory):
    """Make a rename/creation in ``directory`` durable (a no-op where directories cannot be
    opened, e.g. Windows)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path):
    """``with atomic_write(path) as f: f.write(...)``: ``f`` is a binary file that replaces
    ``path`` only when the block completes without an exception."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=tmp_prefix(path), dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):   # mkstemp makes 0600; give the usual file mode
                os.fchmod(f.fileno(), 0o666 & ~_UMASK)
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def atomic_write_bytes(path, data):
    """Replace ``path`` with ``data`` (bytes) atomically."""
    with atomic_write(path) as f:
        f.write(data)
