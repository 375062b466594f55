"""Normalization layers: ``BatchNormalization`` and ``LayerNormalization`` (TF 2.4 signatures).

Each forward pass and its backward pass is ONE tape node (a ``custom_gradient`` op written
against the array module of the input's device, ``xp``: NumPy on the CPU, CuPy on a GPU, so
nothing leaves the device). Statistics are computed in float32 when the inputs are
float16/bfloat16 (float64 stays float64); the result is cast back to the input dtype.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, device_of as _tnp_device, wrap

from ..autodiff.primitive import backend_op
from ..autodiff.tape import gradient_destination, hand_written_backward, paused
from ._common import add_option_weight, work_dtype, device_of as _device_of, on_device
from .base import Layer

__all__ = ["BatchNormalization", "LayerNormalization", "normalize"]


def _on(a, dev, xp, dt, who, strict=True):
    return on_device(a, dev, xp, dt, who, strict)


def _normalize_axes(axis, ndim, who):
    axes = [axis] if isinstance(axis, (int, _np.integer)) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{who}: invalid axis {a} for inputs of rank {ndim}")
        a %= ndim
        if a in out:
            raise ValueError(f"{who}: duplicate axis {a} in {axis!r}")
        out.append(a)
    return sorted(out)


def normalize(x, gamma, beta, stat_axes, epsilon, mean=None, variance=None, param_shape=None):
    """``(x - mean) / sqrt(variance + epsilon) * gamma + beta`` as one tape node.

    ``stat_axes``: the axes the statistics reduce over. With ``mean``/``variance`` given
    (arrays broadcastable to ``x``: tnp, NumPy or backend arrays; not differentiated) they are
    used; otherwise the batch's (biased) statistics are computed and differentiated through.
    ``gamma``/``beta`` (or None) broadcast against ``x``, or, with ``param_shape``, are read
    as that shape (a layer's weights as stored, reshaped inside the node, so that the node
    alone makes their gradients). Computes with the array module of ``x``'s device; the result
    and the gradients are on that device."""
    return _normalize(x, gamma, beta, stat_axes, epsilon, mean, variance,
                      param_shape=param_shape)[0]


def _normalize(x, gamma, beta, stat_axes, epsilon, mean=None, variance=None,
               sum_over_replicas=None, param_shape=None):
    """``normalize``, also returning the statistics used, ``(mean, var)``, tnp arrays on
    ``x``'s device (of the compute dtype, shaped to broadcast against ``x``).

    ``sum_over_replicas(buf, device)`` (a synchronized batch normalization under a strategy):
    the batch statistics are the global batch's. Each replica contributes its exact local
    two-pass moments as ``[n*mean, M2 + n*mean^2, n]`` in float64 (one all-reduce of 2C+1
    numbers, so only the small between-replica part cancels, in float64, where TF's
    ``E[x^2] - E[x]^2`` in float32 loses the variance when ``|mean| >> std``); the backward
    pass sums the two per-channel terms the input gradient needs (one all-reduce of 2C), while
    ``dgamma``/``dbeta`` stay per-replica sums for the optimizer's gradient all-reduce."""
    stat_axes = tuple(stat_axes)
    given = mean is not None
    out_dtype = x.dtype
    who = "normalization"

    # one primitive of a compiled program: every array it reads is an argument
    @backend_op(who, has_aux=True)
    def op(x, gamma, beta, mean, variance):
        dev, xp = _device_of(x)
        dt = work_dtype(x, gamma, beta)
        xn = _on(x, dev, xp, dt, who)
        n_global = None
        if given:
            mu = _on(mean, dev, xp, dt, who, strict=False)
            var = _on(variance, dev, xp, dt, who, strict=False)
        elif sum_over_replicas is None:
            mu = xn.mean(axis=stat_axes, keepdims=True)
            xc = xn - mu
            var = xp.mean(xc * xc, axis=stat_axes, keepdims=True)
        else:
            mu, var, n_global = _global_moments(xn, xp, dt, stat_axes, dev, sum_over_replicas)
        inv = 1.0 / xp.sqrt(var + dt.type(epsilon))
        xhat = (xn - mu) * inv
        # gamma and beta as stored (their gradients' shape) and as they broadcast against x
        gs = None if gamma is None else _on(gamma, dev, xp, dt, who)
        bs = None if beta is None else _on(beta, dev, xp, dt, who)
        g = gs if gs is None or param_shape is None else gs.reshape(param_shape)
        b = bs if bs is None or param_shape is None else bs.reshape(param_shape)
        y = xhat * g if g is not None else xhat.copy()
        if b is not None:
            y += b
        y = wrap(y.astype(out_dtype, copy=False), dev)

        def grad_fn(dy):
            dyn = _on(dy, dev, xp, dt, who, strict=False)
            if dyn is None:   # every replica must join the backward all-reduce
                dyn = xp.zeros_like(xn)
            dgamma = dbeta = None
            # gamma's and beta's gradients straight into a strategy's buckets when the tape
            # offers them (the same sums, their storage given)
            if gamma is not None:
                dgamma = _sum_to(dyn * xhat, g.shape, gradient_destination(gamma, gs), gs.shape)
            if beta is not None:
                dbeta = _sum_to(dyn, b.shape, gradient_destination(beta, bs), bs.shape)
            dxhat = dyn * g if g is not None else dyn
            if given:
                dx = dxhat * inv
            else:
                s1 = dxhat.sum(axis=stat_axes, keepdims=True)
                s2 = (dxhat * xhat).sum(axis=stat_axes, keepdims=True)
                if n_global is None:
                    n = 1
                    for a in stat_axes:
                        n *= xn.shape[a]
                else:           # the input gradient over the global batch
                    c = s1.size
                    tot = sum_over_replicas(xp.concatenate([s1.reshape(-1), s2.reshape(-1)]), dev)
                    s1 = tot[:c].reshape(s1.shape).astype(dt, copy=False)
                    s2 = tot[c:].reshape(s2.shape).astype(dt, copy=False)
                    n = dt.type(n_global)
                dx = (dxhat - (s1 + xhat * s2) / n) * inv
            return (wrap(dx, dev), None if dgamma is None else wrap(dgamma, dev),
                    None if dbeta is None else wrap(dbeta, dev), None, None)
        return y, hand_written_backward("normalization", grad_fn, (x, gamma, beta)), \
            (wrap(mu, dev), wrap(var, dev))

    return op(x, gamma, beta, mean, variance)


def _global_moments(xn, xp, dt, stat_axes, dev, sum_over_replicas):
    """The (biased) mean and variance of the global batch, and its size, from this replica's
    part ``xn`` (see ``_normalize``)."""
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
    mu64 = mu_l.astype(_np.float64)
    red = sum_over_replicas(xp.concatenate([
        (mu64 * n_local).reshape(-1),
        (m2_l.astype(_np.float64) + n_local * mu64 * mu64).reshape(-1),
        xp.asarray([float(n_local)], dtype=_np.float64)]), dev)
    c = mu_l.size
    n = float(red[2 * c])
    if n == 0:
        raise ValueError(f"SyncBatchNormalization: the global batch is empty (inputs of shape "
                         f"{tuple(xn.shape)} on every replica)")
    mean64 = red[:c] / n
    # the between-replica cancellation happens here, in float64; clamp its rounding
    var64 = xp.maximum(red[c:2 * c] / n - mean64 * mean64, 0.0)
    return (mean64.reshape(mu_l.shape).astype(dt), var64.reshape(mu_l.shape).astype(dt), n)


def _sum_to(a, shape, out=None, out_shape=None):
    """Sum ``a`` down to ``shape`` (``shape`` broadcasts to ``a.shape``), returned as
    ``out_shape`` (``shape`` by default); written into ``out`` (a contiguous array of ``a``'s
    dtype and of that shape) and ``out`` returned when given."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and a.shape[i + lead] != 1)
    if out is not None:
        kept = out.reshape(tuple(1 for _ in range(lead)) + tuple(shape))
        if axes:
            a.sum(axis=axes, keepdims=True, out=kept)
        else:
            kept[...] = a
        return out
    s = a.sum(axis=axes, keepdims=True) if axes else a
    return s.reshape(shape if out_shape is None else out_shape)


# the arguments both normalization layers take (Keras's names), after ``axis`` and ``epsilon``
_AFFINE_ARGS = ("center", "scale", "beta_initializer", "gamma_initializer", "beta_regularizer",
                "gamma_regularizer", "beta_constraint", "gamma_constraint")


def _set_affine_options(layer, args):
    """Sets ``axis``, ``epsilon`` and the gamma/beta options from ``args`` (the constructor's
    ``locals()``), with Keras's check of ``axis``."""
    axis = args["axis"]
    if isinstance(axis, (list, tuple)):
        layer.axis = [int(a) for a in axis]
    elif isinstance(axis, (int, _np.integer)):
        layer.axis = int(axis)
    else:
        raise TypeError(f"{layer.name}: expected an int or a list/tuple of ints for the "
                        f"argument 'axis', but received: {axis!r}")
    layer.epsilon = float(args["epsilon"])
    for k in _AFFINE_ARGS:
        setattr(layer, k, bool(args[k]) if k in ("center", "scale") else args[k])
    layer.supports_masking = True


def _affine_config(layer):
    return {"axis": layer.axis, "epsilon": layer.epsilon,
            **{k: getattr(layer, k) for k in _AFFINE_ARGS}}


def _defined_axes(layer, input_shape):
    """The layer's axes for inputs of ``input_shape``, each of a known size."""
    axes = _normalize_axes(layer.axis, len(input_shape), layer.name)
    for a in axes:
        if input_shape[a] is None:
            raise ValueError(f"{layer.name}: axis {a} of the input shape {input_shape} must "
                             f"be defined")
    return axes


def _add_gamma_beta(layer, param_shape, dtype=None):
    """The layer's ``gamma`` and ``beta`` weights (None where ``scale``/``center`` is off)."""
    gamma = add_option_weight(layer, "gamma", param_shape, dtype=dtype) if layer.scale else None
    beta = add_option_weight(layer, "beta", param_shape, dtype=dtype) if layer.center else None
    return gamma, beta


def _check_rank(layer, x):
    if x.ndim != layer._ndim:
        raise ValueError(f"{layer.name}: expected inputs of rank {layer._ndim}, got shape "
                         f"{tuple(x.shape)}")


class BatchNormalization(Layer):
    """Normalizes with batch statistics when training and moving averages otherwise; mirrors
    ``tf.keras.layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001, center=True,
    scale=True, beta_initializer="zeros", gamma_initializer="ones",
    moving_mean_initializer="zeros", moving_variance_initializer="ones", beta_regularizer=None,
    gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, renorm=False,
    renorm_clipping=None, renorm_momentum=0.99, fused=None, trainable=True,
    virtual_batch_size=None, adjustment=None, name=None)`` (TF 2.x behaviour), plus Keras
    2.12's ``synchronized=False`` (True: as ``layers.experimental.SyncBatchNormalization``).

    Weights: ``gamma``, ``beta`` (trainable), ``moving_mean``, ``moving_variance``
    (non-trainable, ``aggregation="mean"``, ``synchronization="on_read"``), in that order.
    ``training=True`` normalizes with the batch's mean and (biased) variance and updates the
    moving ones with ``assign`` (``moving -= (moving - batch) * (1 - momentum)``), outside
    the tape; ``training`` False/None uses the moving statistics; a layer with
    ``trainable=False`` always runs in inference mode (TF 2.x). As TF's fused kernel (used by
    Keras for 4-D inputs normalized over axis 1 or 3), the variance that updates the moving
    variance of such inputs carries Bessel's correction n/(n-1); other inputs use the biased
    variance, as Keras's non-fused path. renorm, virtual_batch_size and adjustment are not
    supported. Parameters are float32 under 16-bit policies."""

    # the options not supported (the constructor refuses others)
    renorm = False
    renorm_clipping = None
    virtual_batch_size = None
    adjustment = None

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                 fused=None, trainable=True, virtual_batch_size=None, adjustment=None, name=None,
                 synchronized=False, **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError(f"{self.name}: renorm, virtual_batch_size and adjustment "
                                      f"are not supported")
        if synchronized and fused:
            raise ValueError(f"{self.name}: `fused=True` is not supported when "
                             f"`synchronized=True`")
        self.synchronized = bool(synchronized)
        _set_affine_options(self, locals())
        self.momentum = float(momentum)
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.renorm_momentum = renorm_momentum
        self.fused = fused

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        ndim = len(input_shape)
        if ndim == 0:
            raise ValueError(f"{self.name}: input has undefined rank (shape {input_shape})")
        self._axes = _defined_axes(self, input_shape)
        if len(self._axes) == 1:
            param_shape = (int(input_shape[self._axes[0]]),)
        else:
            param_shape = tuple(int(input_shape[i]) if i in self._axes else 1 for i in range(ndim))
        vdt = self.variable_dtype
        pdt = "float32" if vdt in ("float16", "bfloat16") else vdt
        self.gamma, self.beta = _add_gamma_beta(self, param_shape, pdt)
        self.moving_mean = self.add_weight("moving_mean", param_shape, dtype=pdt,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False, aggregation="mean",
                                           synchronization="on_read")
        self.moving_variance = self.add_weight("moving_variance", param_shape, dtype=pdt,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False, aggregation="mean",
                                               synchronization="on_read")
        # the variables themselves (the public attributes read as casts under autocast)
        self._vars = (self.gamma, self.beta, self.moving_mean, self.moving_variance)
        self._ndim = ndim
        fused_like = ndim == 4 and self._axes in ([1], [3]) and pdt != "float64"
        # synchronized: Keras's non-fused path (TF 2.4's SyncBatchNormalization passes fused=False)
        self._bessel = fused_like if self.fused is not False and not self.synchronized else False
        super().build(input_shape)

    def _bshape(self, ndim, shape):
        return tuple(shape[i] if i in self._axes else 1 for i in range(ndim))

    def call(self, inputs, training=None):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        _check_rank(self, x)
        gamma, beta, mm, mv = self._vars
        bshape = self._bshape(x.ndim, tuple(x.shape))
        want = (mm.shape[0],) if len(self._axes) == 1 else tuple(mm.shape[a] for a in self._axes)
        if tuple(x.shape[a] for a in self._axes) != tuple(want):
            raise ValueError(f"{self.name}: inputs of shape {tuple(x.shape)} do not fit "
                                 f"parameters of shape {tuple(mm.shape)} on axes {self._axes}")
        stat_axes = tuple(i for i in range(x.ndim) if i not in self._axes)
        training = bool(training) and self.trainable
        eps = max(self.epsilon, 1.001e-5) if self._bessel else self.epsilon
        if not training:
            # the moving statistics as they are stored, on their device (no tape node)
            return normalize(x, gamma, beta, stat_axes, eps, mean=_plain(mm).reshape(bshape),
                             variance=_plain(mv).reshape(bshape), param_shape=bshape)
        replicas = _sync_replicas() if self.synchronized else None
        if replicas is not None:
            from .sync_batch_normalization import sync_normalize
            y, (mu, var) = sync_normalize(x, gamma, beta, stat_axes, eps, replicas,
                                          param_shape=bshape)
        else:
            y, (mu, var) = _normalize(x, gamma, beta, stat_axes, eps, param_shape=bshape)
        n = 1
        for a in stat_axes:
            n *= x.shape[a]
        if self._bessel and n > 1:
            var = var * (n / (n - 1.0))
        f = 1.0 - self.momentum
        # tnp operations (the same NumPy calls as on the backend arrays), so that in a compiled
        # step the update is traced and its assign is an effect of every call; it runs on the
        # device of the batch statistics (x's), where the variables are
        dev = _tnp_device(x)
        with paused():      # the moving statistics are not differentiated
            mm_x = _plain(mm) if _tnp_device(mm) is dev else mm.to_device(dev)
            mv_x = _plain(mv) if _tnp_device(mv) is dev else mv.to_device(dev)
            new_mean = mm_x - (mm_x - mu.reshape(mm.shape).astype(mm_x.dtype)) * f
            new_var = mv_x - (mv_x - var.reshape(mv.shape).astype(mv_x.dtype)) * f
            mm.assign(new_mean.astype(mm_x.dtype))
            mv.assign(new_var.astype(mv_x.dtype))
        return y

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                **_affine_config(self),
                "moving_mean_initializer": self.moving_mean_initializer,
                "moving_variance_initializer": self.moving_variance_initializer,
                # as TF 2.4, a TF-only option appears only when set (Keras 3 refuses the key)
                **({"fused": self.fused} if self.fused is not None else {}),
                **({"synchronized": True} if self.synchronized else {})}


def _plain(v):
    """Variable ``v``'s value as a plain tnp array (no copy): what a tape does not follow."""
    return tnp.asarray(v)


def _sync_replicas():
    """The replica context whose replicas a synchronized batch normalization spans, or None
    (no strategy, one replica, or cross-replica context: local statistics, as TF)."""
    from ..distribute import distribute_lib
    ctx = distribute_lib.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync <= 1:
        return None
    return ctx


class LayerNormalization(Layer):
    """Normalizes each example over ``axis``; mirrors ``tf.keras.layers.LayerNormalization(
    axis=-1, epsilon=0.001, center=True, scale=True, beta_initializer="zeros",
    gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
    beta_constraint=None, gamma_constraint=None)``. Weights ``gamma`` then ``beta``, of the
    shape of the normalized axes; statistics in float32 under 16-bit inputs, and (as Keras)
    the float32 weights are used as they are, not autocast, under a mixed policy."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        _set_affine_options(self, locals())

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        ndim = len(input_shape)
        self._axes = _defined_axes(self, input_shape)
        param_shape = tuple(int(input_shape[a]) for a in self._axes)
        self.gamma, self.beta = _add_gamma_beta(self, param_shape)
        # as Keras (experimental_autocast=False): the kernel reads the float32 variables
        # themselves, not 16-bit casts, under a mixed policy
        self._params = (self.gamma, self.beta)
        self._ndim = ndim
        super().build(input_shape)

    def call(self, inputs):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        _check_rank(self, x)
        bshape = tuple(x.shape[i] if i in self._axes else 1 for i in range(x.ndim))
        want = tuple(x.shape[a] for a in self._axes)
        gamma, beta = self._params
        ref = gamma if gamma is not None else beta
        if ref is not None and tuple(ref.shape) != want:
            raise ValueError(f"{self.name}: inputs of shape {tuple(x.shape)} do not fit "
                             f"parameters of shape {tuple(ref.shape)} on axes {self._axes}")
        return normalize(x, gamma, beta, tuple(self._axes), self.epsilon, param_shape=bshape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), **_affine_config(self)}
