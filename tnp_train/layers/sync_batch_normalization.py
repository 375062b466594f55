"""``SyncBatchNormalization`` (TF 2.4's ``tf.keras.layers.experimental``) and the kernel of
``BatchNormalization(synchronized=True)``: in training under a strategy with several replicas,
the batch statistics are those of the GLOBAL batch.

Forward: ONE all-reduce per call of ``[local sum, local sum of squares, local count]`` (TF 2.4
makes three). Backward: ONE all-reduce of the local sums of ``dy*gamma`` and
``dy*gamma*xhat``, which the input gradient needs over the global batch; ``dgamma``/``dbeta``
stay per-replica sums, because the optimizer's gradient all-reduce sums them already.

Numerics: TF computes ``E[x^2] - E[x]^2`` in the input's precision, which cancels
catastrophically in float32 when ``|mean| >> std``. Here each replica sends its exact local
two-pass moments as ``n*mean`` and ``M2 + n*mean^2`` in float64 (a buffer of 2C+1 numbers), so
only the small between-replica part cancels, in float64.
"""
from __future__ import annotations

import numpy as _np

from tnp.extend import backend_array, wrap

from ..autodiff import custom_gradient
from ..autodiff.tape import first_order_only
from ._common import work_dtype, device_of as _device_of, on_device
from .normalization import BatchNormalization, _sum_to

__all__ = ["SyncBatchNormalization", "sync_normalize"]


def _all_reduce_sum(ctx, buf, dev):
    """``buf`` (a backend array on ``dev``) summed over the replicas of ``ctx``: one
    collective."""
    return backend_array(ctx.strategy.extended._all_reduce_arrays("sum", [wrap(buf, dev)])[0])


def sync_normalize(x, gamma, beta, stat_axes, epsilon, ctx):
    """``normalization._normalize`` with the statistics of the global batch over the replicas
    of the replica context ``ctx``; returns ``(y, (mean, var))``, the global (biased)
    statistics as backend arrays of ``x``'s device (identical on every replica)."""
    stat_axes = tuple(stat_axes)
    out_dtype = x.dtype
    holder = {}
    who = "SyncBatchNormalization"

    @custom_gradient
    def op(x, gamma, beta):
        dev, xp = _device_of(x)
        dt = work_dtype(x, gamma, beta)
        xn = on_device(x, dev, xp, dt, who)
        n_local = 1
        for a in stat_axes:
            n_local *= xn.shape[a]
        if n_local:
            mu_l = xn.mean(axis=stat_axes, keepdims=True)
            xc = xn - mu_l
            m2_l = (xc * xc).sum(axis=stat_axes, keepdims=True)
        else:   # an empty local batch (an uneven last global batch) contributes nothing
            mu_l = xp.zeros(tuple(1 if i in stat_axes else s for i, s in enumerate(xn.shape)), dt)
            m2_l = mu_l
        shape = mu_l.shape
        mu64 = mu_l.astype(_np.float64)
        buf = xp.concatenate([(mu64 * n_local).reshape(-1),
                              (m2_l.astype(_np.float64) + n_local * mu64 * mu64).reshape(-1),
                              xp.asarray([float(n_local)], dtype=_np.float64)])
        red = _all_reduce_sum(ctx, buf, dev)
        c = mu_l.size
        n = float(red[2 * c])
        if n == 0:
            raise ValueError(f"{who}: the global batch is empty (inputs of shape "
                             f"{tuple(x.shape)} on every replica)")
        mean64 = red[:c] / n
        # the between-replica cancellation happens here, in float64; clamp its rounding
        var64 = xp.maximum(red[c:2 * c] / n - mean64 * mean64, 0.0)
        mu = mean64.reshape(shape).astype(dt)
        var = var64.reshape(shape).astype(dt)
        inv = 1.0 / xp.sqrt(var + dt.type(epsilon))
        xhat = (xn - mu) * inv
        holder["stats"] = (mu, var)
        g = None if gamma is None else on_device(gamma, dev, xp, dt, who)
        b = None if beta is None else on_device(beta, dev, xp, dt, who)
        y = xhat * g if g is not None else xhat.copy()
        if b is not None:
            y += b
        y = wrap(y.astype(out_dtype, copy=False), dev)

        def grad_fn(dy):
            dyn = on_device(dy, dev, xp, dt, who, strict=False)
            if dyn is None:
                dyn = xp.zeros_like(xn)
            dgamma = dbeta = None
            # per-replica sums: the optimizer's all-reduce sums them over the replicas
            if gamma is not None:
                dgamma = _sum_to(dyn * xhat, g.shape)
            if beta is not None:
                dbeta = _sum_to(dyn, b.shape)
            dxhat = dyn * g if g is not None else dyn
            s1 = dxhat.sum(axis=stat_axes, keepdims=True)
            s2 = (dxhat * xhat).sum(axis=stat_axes, keepdims=True)
            tot = _all_reduce_sum(ctx, xp.concatenate([s1.reshape(-1), s2.reshape(-1)]), dev)
            s1 = tot[:c].reshape(shape).astype(dt, copy=False)
            s2 = tot[c:].reshape(shape).astype(dt, copy=False)
            dx = (dxhat - (s1 + xhat * s2) / dt.type(n)) * inv
            return (wrap(dx, dev), None if dgamma is None else wrap(dgamma, dev),
                    None if dbeta is None else wrap(dbeta, dev))
        return y, first_order_only("normalization", grad_fn, (x, gamma, beta))

    y = op(x, gamma, beta)
    return y, holder["stats"]


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
