"""Processes of the distributed tests' jobs, read from /proc (shared by ``conftest.py`` and
the simulated-hosts harness ``_hosts.py``, which a benchmark also loads outside pytest)."""
from __future__ import annotations

import os


def session_pids(sid):
    """PIDs of the live (not zombie) processes of session ``sid``, read from /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        # fields after the parenthesised command: state ppid pgrp session ...
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] not in "ZX":
            pids.append(int(entry))
    return pids
