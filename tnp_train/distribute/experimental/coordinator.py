"""``tt.distribute.experimental.coordinator`` (TF 2.4's): the parameter-server coordinator's
names, implemented by the parameter-server step."""
from ._pending import not_yet

__all__ = ["ClusterCoordinator", "PerWorkerValues", "RemoteValue"]


class ClusterCoordinator:
    """Mirrors ``tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)``: not
    implemented yet."""

    def __init__(self, strategy):
        not_yet("experimental.coordinator.ClusterCoordinator",
                "it schedules functions on the workers of a ParameterServerStrategy, which "
                "comes with the parameter-server step")


class PerWorkerValues:
    """Mirrors ``tf.distribute.experimental.coordinator.PerWorkerValues(values)``: not
    implemented yet."""

    def __init__(self, values):
        not_yet("experimental.coordinator.PerWorkerValues",
                "it belongs to ClusterCoordinator (the parameter-server step)")


class RemoteValue:
    """Mirrors ``tf.distribute.experimental.coordinator.RemoteValue`` (returned by
    ``ClusterCoordinator.schedule``): not implemented yet."""

    def fetch(self):
        not_yet("experimental.coordinator.RemoteValue", "the parameter-server step")

    def get(self):
        not_yet("experimental.coordinator.RemoteValue", "the parameter-server step")
