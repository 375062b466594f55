"""``tt.distribute.InputContext``, ``InputOptions``, ``InputReplicationMode`` and ``RunOptions``
(TF 2.4's ``distribute_lib`` input and run configuration)."""
from __future__ import annotations

import collections
import enum
import numbers

__all__ = ["InputContext", "InputOptions", "InputReplicationMode", "RunOptions"]


def _count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"InputContext: {name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"InputContext: {name} must be >= {minimum}, got {value}")
    return int(value)


class InputContext:
    """Mirrors ``tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
    num_replicas_in_sync=1)``: what ``distribute_datasets_from_function``'s function is told
    about its input pipeline (shard with ``ds.shard(num_input_pipelines, input_pipeline_id)``)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = _count(num_input_pipelines, "num_input_pipelines", 1)
        self._input_pipeline_id = _count(input_pipeline_id, "input_pipeline_id", 0)
        self._num_replicas_in_sync = _count(num_replicas_in_sync, "num_replicas_in_sync", 1)
        if self._input_pipeline_id >= self._num_input_pipelines:
            raise ValueError(f"InputContext: input_pipeline_id ({input_pipeline_id}) must be < "
                             f"num_input_pipelines ({num_input_pipelines})")

    @property
    def num_replicas_in_sync(self):
        """The number of replicas in sync (all workers)."""
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        """The id of this input pipeline, in ``[0, num_input_pipelines)``."""
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        """The number of input pipelines (one per worker)."""
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        """``global_batch_size // num_replicas_in_sync``; ValueError when it does not divide, as
        TF."""
        if isinstance(global_batch_size, bool) or not isinstance(
                global_batch_size, numbers.Integral):
            try:
                as_int = int(global_batch_size)
            except (TypeError, ValueError):
                as_int = None
            if as_int is None or as_int != global_batch_size:
                raise TypeError("InputContext.get_per_replica_batch_size: global_batch_size must "
                                f"be an integer, got {global_batch_size!r}")
            global_batch_size = as_int
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"InputContext.get_per_replica_batch_size: the global_batch_size "
                             f"{global_batch_size!r} is not divisible by num_replicas_in_sync "
                             f"{self._num_replicas_in_sync!r}")
        return int(global_batch_size) // self._num_replicas_in_sync

    def __str__(self):
        return (f"tt.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")

    __repr__ = __str__


class InputReplicationMode(enum.Enum):
    """Mirrors ``tf.distribute.InputReplicationMode``: ``PER_WORKER`` (one input pipeline per
    worker, its replicas dequeue from it) or ``PER_REPLICA`` (one pipeline per replica)."""
    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputOptions(collections.namedtuple("InputOptions", [
        "experimental_prefetch_to_device", "experimental_replication_mode",
        "experimental_place_dataset_on_device", "experimental_fetch_to_device"])):
    """Mirrors TF 2.4's ``tf.distribute.InputOptions(experimental_prefetch_to_device=True,
    experimental_replication_mode=PER_WORKER, experimental_place_dataset_on_device=False)``;
    also accepts TF 2.5's name ``experimental_fetch_to_device`` (None: same as
    ``experimental_prefetch_to_device``; the two fields always agree)."""

    def __new__(cls, experimental_prefetch_to_device=True,
                experimental_replication_mode=InputReplicationMode.PER_WORKER,
                experimental_place_dataset_on_device=False, experimental_fetch_to_device=None):
        if isinstance(experimental_replication_mode, str):
            try:
                experimental_replication_mode = InputReplicationMode(
                    experimental_replication_mode.upper())
            except ValueError:
                pass
        if not isinstance(experimental_replication_mode, InputReplicationMode):
            raise ValueError("InputOptions: experimental_replication_mode must be a "
                             "tt.distribute.InputReplicationMode, got "
                             f"{experimental_replication_mode!r}")
        prefetch = bool(experimental_prefetch_to_device)
        if experimental_fetch_to_device is not None:
            fetch = bool(experimental_fetch_to_device)
            # prefetch_to_device=True is also the default: then the newer name decides
            if not prefetch and fetch:
                raise ValueError("InputOptions: experimental_prefetch_to_device=False and "
                                 "experimental_fetch_to_device=True contradict each other "
                                 "(they are TF 2.4's and TF 2.5's names of one option)")
            prefetch = fetch
        return super().__new__(cls, prefetch, experimental_replication_mode,
                               bool(experimental_place_dataset_on_device), prefetch)


class RunOptions(collections.namedtuple("RunOptions", [
        "experimental_enable_dynamic_batch_size", "experimental_bucketizing_dynamic_shape",
        "experimental_xla_options"])):
    """Mirrors ``tf.distribute.RunOptions(experimental_enable_dynamic_batch_size=True,
    experimental_bucketizing_dynamic_shape=False, experimental_xla_options=None)`` (the last
    is TF 2.5's); these are TPU compilation hints, accepted and without effect here."""

    def __new__(cls, experimental_enable_dynamic_batch_size=True,
                experimental_bucketizing_dynamic_shape=False, experimental_xla_options=None):
        return super().__new__(cls, experimental_enable_dynamic_batch_size,
                               experimental_bucketizing_dynamic_shape, experimental_xla_options)
