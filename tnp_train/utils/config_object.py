"""``ConfigObject``: the base of the Keras objects whose ``get_config()`` is their constructor's
arguments (constraints, regularizers, learning-rate schedules)."""
from __future__ import annotations

__all__ = ["ConfigObject"]


class ConfigObject:
    """``get_config()`` returns the constructor's arguments (none here), ``from_config``
    calls the constructor with them, and ``repr`` shows them, as Keras's objects do."""

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"
