"""Attention layers: ``MultiHeadAttention`` and ``Attention`` (TF 2.4 signatures).

``MultiHeadAttention`` is ONE tape node per call: projections, scaled dot products, masked
softmax (float32 under 16-bit inputs), dropout on the probabilities and the output projection
run with the array module of the query's device (``xp``: NumPy on the CPU, CuPy on a GPU),
with a hand-written backward pass; the results and gradients stay on that device.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, device_of as _tnp_device, is_floating, wrap

from ..autodiff.primitive import backend_op
from ..autodiff.tape import gradient_destination, hand_written_backward
from ..utils.random import keep_mask
from ._common import work_dtype, device_of as _device_of, on_device
from .base import Layer

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention", "multi_head_attention"]

_NEG = -1e9


def _on(a, dev, xp, dt=None, who="attention", strict=True):
    return on_device(a, dev, xp, dt, who, strict)


def _moved(a, dev):
    """``a`` (a mask: a tnp or NumPy array) as a tnp array on ``dev``."""
    if isinstance(a, tnp.ndarray):
        return a if _device_of(a)[0] is dev else a.to_device(dev)
    return tnp.asarray(a, device=dev)


def _softmax(xp, s):
    m = s.max(axis=-1, keepdims=True)
    e = xp.exp(s - m)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def multi_head_attention(query, key, value, wq, bq, wk, bk, wv, bv, wo, bo, *, mask=None,
                         dropout_mask=None, return_scores=False):
    """Multi-head attention as one tape node, in Keras's weight layout.

    ``query`` (B, T, Dq), ``key`` (B, S, Dk), ``value`` (B, S, Dv); ``wq`` (Dq, H, K), ``bq``
    (H, K), ``wk`` (Dk, H, K), ``bk`` (H, K), ``wv`` (Dv, H, V), ``bv`` (H, V), ``wo`` (H, V, O)
    or (H, V, *output_shape), ``bo`` (O,) or output_shape (biases may be None); ``mask``
    (B, T, S) booleans (True: attend); ``dropout_mask`` (B, H, T, S) scaled keep mask for the
    probabilities. Returns the output
    (B, T, O), and with ``return_scores`` also the probabilities (B, H, T, S) (before dropout,
    as Keras returns them). Runs on ``query``'s device (the masks move there); the results and
    the gradients are on that device."""
    who = "MultiHeadAttention"
    out_dtype = query.dtype

    # one primitive of a compiled program (forward and backward): every array it reads is an
    # argument, the masks included
    @backend_op("multi_head_attention")
    def op(query, key, value, wq, bq, wk, bk, wv, bv, wo, bo, mask, dropout_mask):
        dev, xp = _device_of(query)
        mask_np = None if mask is None else _on(mask, dev, xp, strict=False).astype(bool)
        drop_np = None if dropout_mask is None else _on(dropout_mask, dev, xp, strict=False)
        dt = work_dtype(query, key, value, wq, wk, wv, wo)
        q = _on(query, dev, xp, dt, who)
        k = _on(key, dev, xp, dt, who)
        v = _on(value, dev, xp, dt, who)
        Wq, Wk, Wv, Wo = (_on(w, dev, xp, dt, who) for w in (wq, wk, wv, wo))
        Bq, Bk, Bv, Bo = (None if a is None else _on(a, dev, xp, dt, who)
                          for a in (bq, bk, bv, bo))
        B, T, Dq = q.shape
        S = k.shape[1]
        H, K = Wq.shape[1], Wq.shape[2]
        V = Wv.shape[2]
        O = Wo.size // (H * V)      # the output kernel as stored: (H, V, *output_shape)
        scale = dt.type(1.0 / math.sqrt(K))
        Q = (q.reshape(B * T, Dq) @ Wq.reshape(Dq, H * K)).reshape(B, T, H, K)
        Kp = (k.reshape(B * S, -1) @ Wk.reshape(-1, H * K)).reshape(B, S, H, K)
        Vp = (v.reshape(B * S, -1) @ Wv.reshape(-1, H * V)).reshape(B, S, H, V)
        if Bq is not None:
            Q += Bq
        if Bk is not None:
            Kp += Bk
        if Bv is not None:
            Vp += Bv
        Qh = Q.transpose(0, 2, 1, 3) * scale           # (B, H, T, K)
        Kh = Kp.transpose(0, 2, 3, 1)                   # (B, H, K, S)
        Vh = Vp.transpose(0, 2, 1, 3)                   # (B, H, S, V)
        scores = Qh @ Kh                                # (B, H, T, S)
        if mask_np is not None:
            scores = scores + xp.where(mask_np[:, None], dt.type(0), dt.type(_NEG))
        probs = _softmax(xp, scores)
        dropped = probs * drop_np.astype(dt) if drop_np is not None else probs
        ctx = dropped @ Vh                              # (B, H, T, V)
        ctx2 = ctx.transpose(0, 2, 1, 3).reshape(B * T, H * V)
        Wo2 = Wo.reshape(H * V, O)
        out = ctx2 @ Wo2
        if Bo is not None:
            out += Bo.reshape(O)
        outs = wrap(out.reshape(B, T, O).astype(out_dtype, copy=False), dev)
        if return_scores:
            outs = (outs, wrap(probs.astype(out_dtype), dev))

        def product(a, b, w, like):
            """``a @ b`` shaped like weight ``w``'s backend array ``like``: computed into the
            strategy's bucket the tape offers for ``w``'s gradient, if it does."""
            d = gradient_destination(w, like)
            if d is None:
                return (a @ b).reshape(like.shape)
            xp.matmul(a, b, out=d.reshape(a.shape[0], b.shape[1]))
            return d

        def column_sum(a, w, like):
            """The column sums of ``a``, shaped (and maybe written) as ``product``."""
            if like is None:
                return None
            d = gradient_destination(w, like)
            if d is None:
                return a.sum(0).reshape(like.shape)
            a.sum(0, out=d.reshape(a.shape[1]))
            return d

        def grad_fn(*dys):
            dout = _on(dys[0], dev, xp, dt, who, strict=False).reshape(B * T, O)
            dbo = column_sum(dout, bo, Bo)
            dWo = product(ctx2.T, dout, wo, Wo)
            dctx = (dout @ Wo2.T).reshape(B, T, H, V).transpose(0, 2, 1, 3)   # (B, H, T, V)
            ddropped = dctx @ Vh.transpose(0, 1, 3, 2)                       # (B, H, T, S)
            dVh = dropped.transpose(0, 1, 3, 2) @ dctx                       # (B, H, S, V)
            dprobs = ddropped * drop_np.astype(dt) if drop_np is not None else ddropped
            if return_scores and dys[1] is not None:
                dprobs = dprobs + _on(dys[1], dev, xp, dt, who, strict=False)
            dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True))
            dQh = (dscores @ Kh.transpose(0, 1, 3, 2)) * scale               # (B, H, T, K)
            dKh = Qh.transpose(0, 1, 3, 2) @ dscores                         # (B, H, K, S)
            dQ = dQh.transpose(0, 2, 1, 3).reshape(B * T, H * K)
            dK = dKh.transpose(0, 3, 1, 2).reshape(B * S, H * K)
            dV = dVh.transpose(0, 2, 1, 3).reshape(B * S, H * V)
            dWq = product(q.reshape(B * T, Dq).T, dQ, wq, Wq)
            dWk = product(k.reshape(B * S, -1).T, dK, wk, Wk)
            dWv = product(v.reshape(B * S, -1).T, dV, wv, Wv)
            dq = (dQ @ Wq.reshape(Dq, H * K).T).reshape(q.shape)
            dk = (dK @ Wk.reshape(-1, H * K).T).reshape(k.shape)
            dv = (dV @ Wv.reshape(-1, H * V).T).reshape(v.shape)
            dbq = column_sum(dQ, bq, Bq)
            dbk = column_sum(dK, bk, Bk)
            dbv = column_sum(dV, bv, Bv)
            def w(a):
                return wrap(a, dev)
            return (w(dq), w(dk), w(dv), w(dWq), None if dbq is None else w(dbq), w(dWk),
                    None if dbk is None else w(dbk), w(dWv), None if dbv is None else w(dbv),
                    w(dWo), None if dbo is None else w(dbo), None, None)
        return outs, hand_written_backward("MultiHeadAttention", grad_fn,
                                           (query, key, value, wq, bq, wk, bk, wv, bv, wo, bo))

    return op(query, key, value, wq, bq, wk, bk, wv, bv, wo, bo, mask, dropout_mask)


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention; mirrors ``tf.keras.layers.MultiHeadAttention(
    num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
    attention_axes=None, kernel_initializer="glorot_uniform", bias_initializer="zeros",
    kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    kernel_constraint=None, bias_constraint=None)`` and its ``call(query, value, key=None,
    attention_mask=None, return_attention_scores=False, training=None)``.

    Weights, in Keras's order: ``query/kernel`` (Dq, H, key_dim), ``query/bias`` (H, key_dim),
    ``key/kernel``, ``key/bias``, ``value/kernel`` (Dv, H, value_dim), ``value/bias``,
    ``attention_output/kernel`` (H, value_dim, *output_shape), ``attention_output/bias``.
    They are created on the first call (their shapes depend on query, value and key).
    ``attention_axes=None`` attends over every axis between the batch and the features (jointly,
    as Keras); other ``attention_axes`` raise NotImplementedError. ``attention_mask``: booleans
    broadcastable to (B, *T, *S), True where a query position may attend to a key position."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        for what, v in (("num_heads", num_heads), ("key_dim", key_dim)):
            if isinstance(v, bool) or not isinstance(v, (int, _np.integer)) or v <= 0:
                raise ValueError(f"{self.name}: {what} must be a positive integer, got {v!r}")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{self.name}: dropout must be in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if output_shape is not None and not isinstance(output_shape, (int, _np.integer)):
            output_shape = tuple(int(s) for s in output_shape)
        self._output_shape = output_shape
        if attention_axes is not None and not isinstance(attention_axes, (list, tuple)):
            attention_axes = (int(attention_axes),)
        self.attention_axes = tuple(attention_axes) if attention_axes is not None else None
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self._built_from_signature = False

    def build(self, input_shape):
        # the weights depend on value and key too: they are created by the first call
        self.built = True

    def _build_from_signature(self, query_shape, value_shape, key_shape):
        H, K, V = self.num_heads, self.key_dim, self.value_dim
        dq, dv, dk = query_shape[-1], value_shape[-1], key_shape[-1]
        if self._output_shape is None:
            out = (int(dq),)
        elif isinstance(self._output_shape, (int, _np.integer)):
            out = (int(self._output_shape),)
        else:
            out = tuple(self._output_shape)
        self._out_dims = out

        def kernel(name, shape):
            return self.add_weight(name, shape, initializer=self.kernel_initializer,
                                   regularizer=self.kernel_regularizer,
                                   constraint=self.kernel_constraint)

        def bias(name, shape):
            if not self.use_bias:
                return None
            return self.add_weight(name, shape, initializer=self.bias_initializer,
                                   regularizer=self.bias_regularizer,
                                   constraint=self.bias_constraint)
        self.query_kernel = kernel("query/kernel", (dq, H, K))
        self.query_bias = bias("query/bias", (H, K))
        self.key_kernel = kernel("key/kernel", (dk, H, K))
        self.key_bias = bias("key/bias", (H, K))
        self.value_kernel = kernel("value/kernel", (dv, H, V))
        self.value_bias = bias("value/bias", (H, V))
        self.output_kernel = kernel("attention_output/kernel", (H, V) + out)
        self.output_bias = bias("attention_output/bias", out)
        self._dims = (int(dq), int(dv), int(dk))
        self._built_from_signature = True

    def _check_axes(self, rank):
        if self.attention_axes is None:
            return
        axes = sorted(a % rank for a in self.attention_axes)
        if axes != list(range(1, rank - 1)):
            raise NotImplementedError(
                f"{self.name}: attention_axes={self.attention_axes} is not supported for inputs "
                f"of rank {rank}; only attention over all axes between the batch and the "
                f"features (attention_axes=None) is")

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
             training=None):
        cd = self.compute_dtype

        def conv(a):
            a = a if isinstance(a, tnp.ndarray) else tnp.asarray(a)
            if is_floating(a.dtype) and a.dtype.name != cd:
                a = a.astype(cd)
            return a
        query = conv(query)
        value = conv(value)
        key = value if key is None else conv(key)
        if query.ndim < 3 or value.ndim != query.ndim or key.ndim != query.ndim:
            raise ValueError(f"{self.name}: query, value and key must have the same rank >= 3, "
                             f"got shapes {tuple(query.shape)}, {tuple(value.shape)}, "
                             f"{tuple(key.shape)}")
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]) or key.shape[0] != query.shape[0]:
            raise ValueError(f"{self.name}: key {tuple(key.shape)} and value "
                             f"{tuple(value.shape)} need the same batch and attended axes, and "
                             f"query {tuple(query.shape)} the same batch")
        self._check_axes(query.ndim)
        if not self._built_from_signature:
            with self._get_build_lock():    # replicas calling it in threads build it once
                if not self._built_from_signature:
                    self._build_from_signature(tuple(query.shape), tuple(value.shape),
                                               tuple(key.shape))
        dims = (query.shape[-1], value.shape[-1], key.shape[-1])
        if tuple(dims) != self._dims:
            raise ValueError(f"{self.name}: built for query/value/key feature sizes {self._dims}, "
                             f"got {tuple(dims)}")
        B = query.shape[0]
        tq = tuple(query.shape[1:-1])
        ts = tuple(value.shape[1:-1])
        T, S = int(_np.prod(tq)), int(_np.prod(ts))
        q3 = query.reshape(B, T, query.shape[-1]) if len(tq) != 1 else query
        k3 = key.reshape(B, S, key.shape[-1]) if len(ts) != 1 else key
        v3 = value.reshape(B, S, value.shape[-1]) if len(ts) != 1 else value
        # the masks with tnp operations (a compiled step traces them); the op moves them to
        # the query's device
        mask = None
        if attention_mask is not None:
            m = _moved(attention_mask, _device_of(query)[0]).astype(bool)
            try:
                m = tnp.broadcast_to(m, (B,) + tq + ts)
            except ValueError:
                raise ValueError(f"{self.name}: attention_mask of shape {tuple(m.shape)} does "
                                 f"not broadcast to {(B,) + tq + ts} (batch, query axes, key "
                                 f"axes)") from None
            mask = m.reshape(B, T, S)
        drop = None
        if training and self.dropout > 0:
            keep = 1.0 - self.dropout
            # drawn on the host (the seeded NumPy Generator), moved to the device by the op
            drop = tnp.asarray(keep_mask((B, self.num_heads, T, S), self.dropout)) / keep
        # the output kernel and bias as stored: the node alone makes their gradients
        res = multi_head_attention(q3, k3, v3, self.query_kernel, self.query_bias,
                                   self.key_kernel, self.key_bias, self.value_kernel,
                                   self.value_bias, self.output_kernel, self.output_bias,
                                   mask=mask, dropout_mask=drop,
                                   return_scores=return_attention_scores)
        out, scores = (res if return_attention_scores else (res, None))
        out_shape = (B,) + tq + self._out_dims
        if tuple(out.shape) != out_shape:
            out = out.reshape(out_shape)
        if return_attention_scores:
            sshape = (B, self.num_heads) + tq + ts
            if tuple(scores.shape) != sshape:
                scores = scores.reshape(sshape)
            return out, scores
        return out

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self._output_shape, "attention_axes": self.attention_axes,
                "kernel_initializer": self.kernel_initializer,
                "bias_initializer": self.bias_initializer,
                "kernel_regularizer": self.kernel_regularizer,
                "bias_regularizer": self.bias_regularizer,
                "activity_regularizer": self.activity_regularizer,
                "kernel_constraint": self.kernel_constraint,
                "bias_constraint": self.bias_constraint}


class Attention(Layer):
    """Dot-product (Luong-style) attention; mirrors ``tf.keras.layers.Attention(use_scale=False,
    causal=False, dropout=0.0)`` with ``call(inputs=[query, value(, key)], mask=None,
    training=None, return_attention_scores=False)``. With ``use_scale`` a scalar weight
    ``scale`` (initialized to 1) multiplies the scores. ``mask``: ``[query_mask, value_mask]``
    (either may be None); the value mask hides key positions, the query mask zeroes the output
    rows of masked queries. Composed of tnp operations (the tape differentiates it); the
    softmax runs in float32 under 16-bit inputs."""

    def __init__(self, use_scale=False, causal=False, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)
        self.causal = bool(causal)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{self.name}: dropout must be in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) not in (2, 3):
            raise ValueError(f"{self.name}: the inputs must be a list [query, value] or "
                             f"[query, value, key], got input shape {input_shape}")
        self.scale = self.add_weight("scale", (), initializer="ones") if self.use_scale else None
        super().build(input_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{self.name}: the inputs must be a list [query, value] or "
                             f"[query, value, key]")
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        if q.shape[-1] != k.shape[-1] or k.shape[:-1] != v.shape[:-1] or q.ndim != 3:
            raise ValueError(f"{self.name}: incompatible shapes query {tuple(q.shape)}, value "
                             f"{tuple(v.shape)}, key {tuple(k.shape)}")
        qm = vm = None
        if mask is not None:
            if not isinstance(mask, (list, tuple)):
                raise ValueError(f"{self.name}: mask must be a list [query_mask, value_mask]")
            qm = mask[0]
            vm = mask[1] if len(mask) > 1 else None
        scores = self._calculate_scores(q, k)                   # (B, T, S)
        in_dtype = scores.dtype
        if in_dtype.name in ("float16", "bfloat16"):
            scores = scores.astype("float32")
        T, S = scores.shape[1], scores.shape[2]
        # masks with tnp operations (a compiled step traces them), on the scores' device
        dev = _device_of(scores)[0]
        hide = None
        if vm is not None:
            hide = ~_moved(vm, dev).astype(bool)[:, None, :]
        if self.causal:
            c = tnp.triu(tnp.ones((T, S), dtype=bool, device=dev), k=1)[None]
            hide = c if hide is None else (hide | c)
        if hide is not None:
            scores = scores - hide.astype(scores.dtype) * 1e9
        from ..autodiff import stop_gradient
        e = tnp.exp(scores - tnp.max(stop_gradient(scores), axis=-1, keepdims=True))
        probs = e / tnp.sum(e, axis=-1, keepdims=True)
        probs = probs.astype(in_dtype) if probs.dtype != in_dtype else probs
        p = probs
        if training and self.dropout > 0:
            keep = 1.0 - self.dropout
            dm = tnp.asarray(keep_mask(tuple(p.shape), self.dropout), device=dev).astype(p.dtype)
            dm = dm / tnp.asarray(keep, dtype=p.dtype, device=dev)
            p = p * dm
        out = tnp.matmul(p, v)
        if qm is not None:
            out = out * _moved(qm, dev).astype(out.dtype)[..., None]
        if return_attention_scores:
            return out, p      # after dropout, as TF 2.4 returns them
        return out

    def _calculate_scores(self, query, key):
        """Dot products ``query @ key^T``, times ``scale`` when ``use_scale``."""
        scores = tnp.matmul(query, tnp.swapaxes(key, 1, 2))
        return scores * self.scale if self.scale is not None else scores

    def compute_mask(self, inputs, mask=None):
        if mask is None or not isinstance(mask, (list, tuple)):
            return None
        qm = mask[0]
        if qm is None:
            return None
        if isinstance(qm, tnp.ndarray):
            return wrap(_backend(qm).astype(bool), _tnp_device(qm))
        return tnp.asarray(_np.asarray(qm).astype(bool))

    def compute_output_shape(self, input_shape):
        q, v = input_shape[0], input_shape[1]
        return tuple(q[:-1]) + (v[-1],)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "causal": self.causal,
                "dropout": self.dropout}


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention; mirrors ``tf.keras.layers.AdditiveAttention(
    use_scale=True, causal=False, dropout=0.0)`` (TF 2.4): scores ``sum(scale * tanh(q_i +
    k_j))`` over the feature axis, ``scale`` a weight of shape ``(dim,)`` (glorot-uniform) when
    ``use_scale``, else 1; masks, ``causal``, dropout and the returned scores as
    :class:`Attention`."""

    def __init__(self, use_scale=True, **kwargs):
        super().__init__(use_scale=use_scale, **kwargs)

    def build(self, input_shape):
        if not isinstance(input_shape, list) or len(input_shape) not in (2, 3):
            raise ValueError(f"{self.name}: the inputs must be a list [query, value] or "
                             f"[query, value, key], got input shape {input_shape}")
        dim = input_shape[1][-1]
        self.scale = self.add_weight("scale", (dim,), initializer="glorot_uniform") \
            if self.use_scale else None
        Layer.build(self, input_shape)

    def _calculate_scores(self, query, key):
        t = tnp.tanh(tnp.expand_dims(query, -2) + tnp.expand_dims(key, -3))  # (B, T, S, dim)
        if self.scale is not None:
            t = t * self.scale
        return tnp.sum(t, axis=-1)
