"""``tt.distribute``: distribution strategies (TF 2.4's ``tf.distribute``).

Every name of TF 2.4.4's ``tf.distribute`` tree except the TPU strategies and the cloud cluster
resolvers of GCE and TPUs. ``MultiWorkerMirroredStrategy`` runs one replica per
MPI rank (``mpiexec -n N python train.py``); ``MirroredStrategy`` and ``OneDeviceStrategy`` one
replica in the process. Names are imported when first used, so ``import tnp_train`` stays
cheap and mpi4py is imported only when a strategy needs a communicator. See
docs/distributed.md.
"""
import importlib

# name -> (module, attribute), in TF's order: modules, classes, functions
_NAMES = {
    "CrossDeviceOps": ("cross_device_ops", "CrossDeviceOps"),
    "DistributedDataset": ("input_lib", "DistributedDataset"),
    "DistributedIterator": ("input_lib", "DistributedIterator"),
    "DistributedValues": ("values", "DistributedValues"),
    "HierarchicalCopyAllReduce": ("cross_device_ops", "HierarchicalCopyAllReduce"),
    "InputContext": ("input_options", "InputContext"),
    "InputOptions": ("input_options", "InputOptions"),
    "InputReplicationMode": ("input_options", "InputReplicationMode"),
    "MirroredStrategy": ("mirrored_strategy", "MirroredStrategy"),
    "MultiWorkerMirroredStrategy": ("collective_all_reduce_strategy",
                                    "MultiWorkerMirroredStrategy"),
    "NcclAllReduce": ("cross_device_ops", "NcclAllReduce"),
    "OneDeviceStrategy": ("one_device_strategy", "OneDeviceStrategy"),
    "ReduceOp": ("reduce_util", "ReduceOp"),
    "ReductionToOneDevice": ("cross_device_ops", "ReductionToOneDevice"),
    "ReplicaContext": ("distribute_lib", "ReplicaContext"),
    "RunOptions": ("input_options", "RunOptions"),
    "Server": ("server_lib", "Server"),
    "Strategy": ("distribute_lib", "Strategy"),
    "StrategyExtended": ("distribute_lib", "StrategyExtended"),
    "experimental_set_strategy": ("distribute_lib", "experimental_set_strategy"),
    "get_replica_context": ("distribute_lib", "get_replica_context"),
    "get_strategy": ("distribute_lib", "get_strategy"),
    "has_strategy": ("distribute_lib", "has_strategy"),
    "in_cross_replica_context": ("distribute_lib", "in_cross_replica_context"),
}
_SUBMODULES = ("cluster_resolver", "experimental")

__all__ = list(_SUBMODULES) + list(_NAMES)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    entry = _NAMES.get(name)
    if entry is None:
        raise AttributeError(f"module 'tnp_train.distribute' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{entry[0]}"), entry[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
