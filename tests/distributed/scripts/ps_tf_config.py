"""TF's parameter-server tutorial's launch code, unchanged, under ``mpiexec`` with a
``TF_CONFIG`` per rank (tests/distributed/test_launch_tf_config.py).

    mpiexec --with-ft ulfm -n 1 -x TF_CONFIG=<chief> python ps_tf_config.py : -n 1 ... <ps> ...

Every task reads ``TFConfigClusterResolver()``; the ps and worker tasks start
``tt.distribute.Server`` with TF's arguments and join, the chief makes the strategy and a
coordinator, runs 8 closures of 5 ``assign_add(1.0)`` each and prints ``RESULT <json>``: its
task, the counter, the workers that ran closures. Each task prints ``ROLE <task>``."""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tnp_train as tt  # noqa: E402

cluster_resolver = tt.distribute.cluster_resolver.TFConfigClusterResolver()
task = f"{cluster_resolver.task_type}:{cluster_resolver.task_id}"
print(f"ROLE {task} rank {os.environ.get('OMPI_COMM_WORLD_RANK')}", flush=True)
if cluster_resolver.task_type in ("worker", "ps"):
    server = tt.distribute.Server(cluster_resolver.cluster_spec(),
                                  job_name=cluster_resolver.task_type,
                                  task_index=cluster_resolver.task_id,
                                  protocol=cluster_resolver.rpc_layer or "grpc", start=True)
    server.join()
    sys.exit(0)

strategy = tt.distribute.experimental.ParameterServerStrategy(cluster_resolver)
coordinator = tt.distribute.experimental.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    counter = tt.Variable(0.0, name="counter")


def add_five():
    for _ in range(5):
        counter.assign_add(1.0)


for _ in range(8):
    coordinator.schedule(add_five)
coordinator.join()
print("RESULT " + json.dumps({"task": task, "counter": float(counter.numpy()),
                              "workers": sorted({a.worker for a in coordinator.attempt_log()})}),
      flush=True)
