"""``tt.distribute.ReduceOp`` (``tf.distribute.ReduceOp``): how values are combined across
replicas."""
from __future__ import annotations

import enum

from tnp_train.autodiff import VariableAggregation

__all__ = ["ReduceOp", "as_reduce_op", "collective_op"]


class ReduceOp(enum.Enum):
    """Mirrors ``tf.distribute.ReduceOp``: ``SUM`` or ``MEAN`` across replicas."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        """The ReduceOp of a ``VariableAggregation`` (SUM or MEAN; ValueError for the others)."""
        op = _FROM_AGGREGATION.get(aggregation) if isinstance(aggregation,
                                                              VariableAggregation) else None
        if op is None:
            raise ValueError(f"ReduceOp.from_variable_aggregation: cannot convert {aggregation!r} "
                             "to a tt.distribute.ReduceOp (only VariableAggregation.SUM and MEAN "
                             "have one)")
        return op


_FROM_AGGREGATION = {VariableAggregation.SUM: ReduceOp.SUM,
                     VariableAggregation.MEAN: ReduceOp.MEAN}


def as_reduce_op(reduce_op, where="reduce"):
    """``reduce_op`` as a ReduceOp: a ReduceOp, or a string in any case (``"SUM"``, ``"mean"``),
    as ``strategy.reduce`` and ``ReplicaContext.all_reduce`` accept in TF (they upper-case it).
    ``where`` names the operation in the error."""
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, str):
        try:
            return ReduceOp(reduce_op.upper())
        except ValueError:
            pass
        raise ValueError(f"{where}: invalid reduce_op {reduce_op!r}; expected "
                         "tt.distribute.ReduceOp.SUM or MEAN, or the string 'SUM' or 'MEAN'")
    raise TypeError(f"{where}: reduce_op must be a tt.distribute.ReduceOp or a string, got "
                    f"{type(reduce_op).__name__}")


def collective_op(reduce_op):
    """The collective layer's op name (``"sum"``/``"mean"``) for a ReduceOp or string."""
    return as_reduce_op(reduce_op).value.lower()
