"""Crash-safe file writes: a temporary file in the target's directory, flushed, fsync'ed, then
``os.replace``d over the target, and the directory fsync'ed so the rename itself is durable.

At every moment the target is either its complete old content or its complete new content; a
process killed mid-write leaves at most a hidden ``.<name>.tmp-<pid>-XXXX`` file behind, which
:func:`stale_temporaries` recognises once that process is gone.
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time

__all__ = ["atomic_write", "atomic_write_bytes", "fsync_dir", "tmp_prefix", "owned_prefix",
           "stale_temporaries"]

_UMASK = os.umask(0o022)   # read once at import (os.umask has no read-only form)
os.umask(_UMASK)
# No save of this process can have made a temporary before this moment, so an old-style one
# (no pid in its name) that is older belongs to a process that is gone or not ours to judge.
_STARTED = time.time()
# what follows the prefix: "<pid>-<mkstemp/mkdtemp's random letters>", or only the letters in
# the names of versions that did not record the pid
_SUFFIX = re.compile(r"(?:([0-9]+)-)?[a-z0-9_]+\Z")


def tmp_prefix(path):
    """The prefix of the temporary files written for ``path`` (hidden, in its directory)."""
    return f".{os.path.basename(path)}.tmp-"


def owned_prefix(prefix):
    """``prefix`` followed by this process's id, so a later save can tell whether the writer of
    a leftover is still alive."""
    return f"{prefix}{os.getpid()}-"


def _alive(pid):
    """Whether process ``pid`` exists on this machine (None: cannot tell here)."""
    if os.name == "nt":      # os.kill(pid, 0) would terminate the process on Windows
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # EPERM: it exists, under another user
        return True
    return True


def stale_temporaries(directory, prefix):
    """Paths in ``directory`` of temporaries named ``prefix`` + a temporary suffix whose writer
    is gone: the pid in the name is not a live process, or (names without a pid) the entry is
    older than this process. The temporaries of live saves, this process's included, are left
    alone. Assumes the writers ran on this machine (pids of other hosts mean nothing here)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.startswith(prefix):
            continue
        m = _SUFFIX.match(name, len(prefix))
        if m is None:
            continue
        path = os.path.join(directory, name)
        alive = _alive(int(m.group(1))) if m.group(1) is not None else None
        if alive is None:
            try:
                alive = os.lstat(path).st_mtime >= _STARTED
            except OSError:
                continue
        if not alive:
            out.append(path)
    return out


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
    fd, tmp = tempfile.mkstemp(prefix=owned_prefix(tmp_prefix(path)), dir=directory)
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
