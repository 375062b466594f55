"""Helpers of the coll_*.py scripts (run under mpiexec by tests/distributed/test_collective*.py).

``load_collective()`` imports ``tnp_train.distribute.collective`` without running the
``tnp_train`` and ``tnp_train.distribute`` package initialisers: the collective layer must work
without tnp (and each rank starts a second faster), and the scripts check that neither tnp nor
tnp_train's other modules were imported.
"""
import importlib
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def load_collective():
    for name, path in (("tnp_train", ROOT / "tnp_train"),
                       ("tnp_train.distribute", ROOT / "tnp_train" / "distribute")):
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = [str(path)]
            sys.modules[name] = stub
    coll = importlib.import_module("tnp_train.distribute.collective")
    leaked = sorted(m for m in sys.modules if m == "tnp" or m.startswith("tnp.")
                    or (m.startswith("tnp_train.") and not m.startswith(
                        "tnp_train.distribute.collective") and m != "tnp_train.distribute"))
    assert not leaked, f"the collective layer imported {leaked}"
    return coll


def say(comm, *parts):
    """One line of output per call, prefixed with the rank, flushed (ranks interleave)."""
    print(f"[rank {comm.rank}]", *parts, flush=True)
