"""Workers killed (SIGKILL, by PID) while a parameter-server job trains
(tests/distributed/test_ps.py; benchmarks/ps_training.py --sweep runs it at random points).

    mpiexec --with-ft ulfm -n 5 python ps_worker_kill.py OUTDIR CLOSURES KILL_AFTER... [--mlp]
        [--kill-host]

Rank 0 the chief, rank 1 the ps, ranks 2.. the workers. Each closure adds 1 to a counter
variable, then trains one step. When KILL_AFTER[i] closures have finished, the chief kills worker
i's process (with ``--kill-host``, under simulated hosts, every rank of that worker's host; with
``--mlp``, the reference MLP, after a further delay of up to 30 ms drawn from the kill point, so
kills land anywhere in a closure). The chief prints ``RESULT <json>``: every closure's value (or error), the attempt log, the updates the ps applied per attempt, the
counter, the losses and the step count."""
import json
import os
import random
import signal
import sys
import time

import numpy as np

from ps_common import dataset_fn, pids, small_mlp, start, tt, when_done

args = [a for a in sys.argv[1:] if not a.startswith("--")]
outdir, closures, kills = args[0], int(args[1]), [int(k) for k in args[2:]]
reference = "--mlp" in sys.argv
kill_host = "--kill-host" in sys.argv
jitter = 0.03 if reference else 0.0
resolver, strategy, coordinator = start(outdir)
rank_pids = pids(outdir, resolver.size)

tt.utils.set_random_seed(0)
with strategy.scope():
    if reference:
        model = tt.Sequential([tt.Input((784,)), tt.layers.Dense(512, activation="relu"),
                               tt.layers.Dense(512, activation="relu"), tt.layers.Dense(10)])
    else:
        model = small_mlp()
    optimizer = tt.optimizers.SGD(0.05)
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    counter = tt.Variable(0.0, name="attempts_counter")


def mlp_dataset_fn():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, 784), dtype=np.float32)
    y = np.argmax(x @ rng.standard_normal((784, 10)).astype(np.float32), axis=1)
    return tt.data.Dataset.from_tensor_slices((x, y.astype("int64"))).shuffle(2048).batch(64)\
        .repeat()


def train_step(iterator):
    def replica_fn(batch):
        # first: an attempt lost later in the step has reached the increment (at least once)
        counter.assign_add(1.0)
        x, y = batch
        with tt.GradientTape() as tape:
            loss = tt.nn.compute_average_loss(loss_fn(y, model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return strategy.run(replica_fn, args=(next(iterator),))


it = iter(coordinator.create_per_worker_dataset(mlp_dataset_fn if reference else dataset_fn))
killed = []


def host_of(pid):
    """The ranks on ``pid``'s simulated host (tests/distributed/_hosts.py): the processes of its
    network namespace that Open MPI's daemon there started (the daemon lives on: Open MPI 5.0's
    runtime ends the job when it loses one)."""
    def ppid(p):
        with open(f"/proc/{p}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    target, daemon = os.readlink(f"/proc/{pid}/ns/net"), ppid(pid)
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if ppid(entry) == daemon and os.readlink(f"/proc/{entry}/ns/net") == target:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def killer(rank, delay):
    def kill():
        time.sleep(delay)
        victims = host_of(rank_pids[rank]) if kill_host else [rank_pids[rank]]
        killed.append({"rank": rank, "at": time.time(), "at_monotonic": time.monotonic(),
                       "ranks": sorted(r for r, p in rank_pids.items() if p in victims)})
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return kill


results = []
# a delay drawn from the kill point: the kill lands anywhere in the worker's closure
delays = [random.Random(k).uniform(0, jitter) for k in kills]
for i, (k, d) in enumerate(zip(kills, delays)):
    when_done(results, k, killer(2 + i, d))
t0 = time.perf_counter()
results.extend(coordinator.schedule(train_step, args=(it,)) for _ in range(closures))
coordinator.join()
seconds = time.perf_counter() - t0
values = []
for r in results:
    try:
        values.append(float(r.fetch()))
    except Exception as e:        # noqa: BLE001 -- reported, the test says it must not happen
        values.append(f"{type(e).__name__}: {e}")
applied = coordinator.applied_updates()
out = {
    "values": values,
    "seconds": seconds,
    "killed": killed,
    "attempts": [list(a[:5]) for a in coordinator.attempt_log()],
    "attempt_times": [list(a[5:7]) for a in coordinator.attempt_log()],
    "counter_updates": {f"{k[0]}:{k[1]}": v.get("attempts_counter", 0)
                        for k, v in applied.items() if k is not None},
    "counter": float(counter.numpy()),
    "iterations": int(optimizer.iterations.numpy()),
    "workers_left": coordinator.num_workers,
}
print("RESULT " + json.dumps(out), flush=True)
