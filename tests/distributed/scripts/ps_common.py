"""Helpers of the ps_*.py scripts (ParameterServerStrategy jobs run by
tests/distributed/test_ps*.py): every rank writes its PID (so the chief can kill a task by
PID), the ps and worker ranks serve until the chief is done, the chief gets the strategy and
the coordinator."""
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tnp_train as tt  # noqa: E402


def start(outdir, num_ps=1):
    """On a ps or worker rank: serve, print ``JOINED <task>`` once the chief is done, exit.
    On the chief: ``(resolver, strategy, coordinator)``."""
    resolver = tt.distribute.cluster_resolver.MPIClusterResolver(num_ps=num_ps)
    task = f"{resolver.task_type}:{resolver.task_id}"
    Path(outdir, f"pid.{resolver.rank}").write_text(f"{os.getpid()} {task}\n")
    print(f"ROLE rank {resolver.rank} {task}", flush=True)
    if resolver.task_type in ("ps", "worker"):
        tt.distribute.Server(resolver).join()
        print(f"JOINED {task}", flush=True)
        sys.exit(0)
    strategy = tt.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tt.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    return resolver, strategy, coordinator


def pids(outdir, size):
    """``{rank: pid}`` of every rank (their files exist once the strategy is made: every rank
    wrote its file before joining the communicator)."""
    out = {}
    for r in range(size):
        pid, _ = Path(outdir, f"pid.{r}").read_text().split()
        out[r] = int(pid)
    return out


def small_mlp():
    return tt.Sequential([tt.Input((12,)), tt.layers.Dense(16, activation="relu"),
                          tt.layers.Dense(4)])


def dataset_fn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 12)).astype("float32")
    y = np.argmax(x @ rng.normal(size=(12, 4)), axis=1).astype("int64")
    return tt.data.Dataset.from_tensor_slices((x, y)).shuffle(256).batch(32).repeat()


def when_done(results, count, action):
    """Run ``action()`` on a thread once ``count`` of ``results`` (RemoteValues) are ready."""
    import threading

    def watch():
        while sum(r._event.is_set() for r in results) < count:
            time.sleep(0.005)
        action()
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t
