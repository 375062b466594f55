"""``SyncBatchNormalization`` (TF 2.4's ``tf.keras.layers.experimental``) and the kernel of
``BatchNormalization(synchronized=True)``: in training under a strategy with several replicas,
the batch statistics are those of the GLOBAL batch.

The normalization itself is ``normalization._normalize`` with a ``sum_over_replicas``: ONE
all-reduce forward (the local moments; TF 2.4 makes three) and ONE backward (the two sums the
input gradient needs); ``dgamma``/``dbeta`` stay per-replica sums, because the optimizer's
gradient all-reduce sums them already. Numerics are explained there.
"""
from __future__ import annotations

from tnp.extend import backend_array, wrap

from .normalization import BatchNormalization, _normalize

__all__ = ["SyncBatchNormalization", "sync_normalize"]


def sync_normalize(x, gamma, beta, stat_axes, epsilon, ctx, param_shape=None):
    """``normalization._normalize`` with the statistics of the global batch over the replicas
    of the replica context ``ctx``; returns ``(y, (mean, var))``, the global (biased)
    statistics as backend arrays of ``x``'s device (identical on every replica)."""
    extended = ctx.strategy.extended

    def sum_over_replicas(buf, dev):
        # one collective for the whole buffer (a backend array on dev)
        return backend_array(extended.all_reduce_arrays("sum", [wrap(buf, dev)])[0])

    return _normalize(x, gamma, beta, tuple(stat_axes), epsilon,
                      sum_over_replicas=sum_over_replicas, param_shape=param_shape)


class SyncBatchNormalization(BatchNormalization):
    """Mirrors ``tf.keras.layers.experimental.SyncBatchNormalization(axis=-1, momentum=0.99,
    epsilon=0.001, center=True, scale=True, beta_initializer="zeros", gamma_initializer="ones",
    moving_mean_initializer="zeros", moving_variance_initializer="ones", beta_regularizer=None,
    gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, renorm=False,
    renorm_clipping=None, renorm_momentum=0.99, trainable=True, adjustment=None, name=None)``:
    ``BatchNormalization(synchronized=True, fused=False)``. Without a strategy, with one
    replica, in inference or in cross-replica context it is ``BatchNormalization(fused=False)``
    (no Bessel correction of the moving variance, as TF's non-fused path)."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                 trainable=True, adjustment=None, name=None, **kwargs):
        # a config of BatchNormalization(synchronized=True) may carry these two
        kwargs.pop("synchronized", None)
        if kwargs.pop("fused", None):
            raise ValueError("SyncBatchNormalization: `fused=True` is not supported")
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         moving_mean_initializer=moving_mean_initializer,
                         moving_variance_initializer=moving_variance_initializer,
                         beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                         beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                         renorm=renorm, renorm_clipping=renorm_clipping,
                         renorm_momentum=renorm_momentum, fused=False, trainable=trainable,
                         adjustment=adjustment, name=name, synchronized=True, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("fused", None)
        config.pop("synchronized", None)
        return config
