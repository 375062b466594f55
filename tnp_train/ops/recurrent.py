"""The fused recurrent kernel: a whole SimpleRNN / LSTM / GRU sequence as ONE tape node.

The forward loop runs time-major with the array module of the inputs' device (``xp``: NumPy on
the CPU, CuPy on a GPU), one GEMM for the input projection of every step and one per step for
the recurrent part; the backward is a hand-written backpropagation through time. Weights are in
Keras's layout (see :mod:`tnp_train.layers.recurrent`, whose layers call :func:`fused_rnn`).
"""
from __future__ import annotations

from tnp.extend import wrap

from ..autodiff.primitive import backend_op
from ..autodiff.tape import gradient_destination, hand_written_backward
from . import _rnn_cpu
from ._common import work_dtype, device_of as _device_of, on_device

__all__ = ["fused_rnn"]


# ---------------------------------------------------------------------------- helpers
def _sigmoid(xp, z):
    return 0.5 * (1.0 + xp.tanh(0.5 * z))


# activation name -> (f(xp, z), f'(xp, y) written in terms of y = f(z)); the fused kernels use
# these with the array module of the inputs' device
_ACTS = {
    "tanh": (lambda xp, z: xp.tanh(z), lambda xp, y: 1.0 - y * y),
    "sigmoid": (_sigmoid, lambda xp, y: y * (1.0 - y)),
    "relu": (lambda xp, z: xp.maximum(z, 0), lambda xp, y: (y > 0).astype(y.dtype)),
    "linear": (lambda xp, z: z, lambda xp, y: xp.ones_like(y)),
    "hard_sigmoid": (lambda xp, z: xp.clip(0.2 * z + 0.5, 0.0, 1.0),
                     lambda xp, y: ((y > 0) & (y < 1)).astype(y.dtype) * 0.2),
}


def _on(a, dev, xp, dt=None, who="RNN", strict=True):
    return on_device(a, dev, xp, dt, who, strict)


# ---------------------------------------------------------------------------- fused kernels
def _fused_forward(xp, kind, x, W, R, b, h0, c0, mask, rmask, act, ract, reset_after):
    """Time-major forward pass with the array module ``xp`` (all arrays are ``xp``'s). x (T, B,
    D); mask (T, B) bool or None; rmask (B, U) or None. Returns (ys (T, B, U), hT, cT, cache)."""
    T, B, _ = x.shape
    U = R.shape[0]
    f, _ = _ACTS[act]
    rf, _ = _ACTS[ract]
    dt = x.dtype
    G = R.shape[1]
    XP = (x.reshape(T * B, -1) @ W).reshape(T, B, G)     # the input projection of every step
    if b is not None:
        XP += b[0] if (kind == "gru" and reset_after) else b
    h = h0
    c = c0
    HR = xp.empty((T, B, U), dt)           # the (dropped-out) previous state each step used
    HP = xp.empty((T, B, U), dt) if kind == "gru" else None         # h_{t-1}
    EXTRA = xp.empty((T, B, U), dt) if kind in ("lstm", "gru") else None
    CP = xp.empty((T, B, U), dt) if kind == "lstm" else None        # c_{t-1}
    if _rnn_cpu.applies(xp, kind, dt, act, ract, reset_after):       # one Numba call per step
        # the activated gates overwrite the projection (each step reads its own slice first)
        cache = (None, HR, XP, HP, EXTRA, CP)
        brec = b[1] if (kind == "gru" and b is not None) else None
        ys, h, c = _rnn_cpu.forward(kind, XP, R, brec, h0, c0, mask, rmask, act, ract, cache)
        return ys, h, c, cache
    out = xp.zeros((B, U), dt)
    ys = xp.empty((T, B, U), dt)
    GATES = xp.empty((T, B, G), dt)        # activated gates (LSTM: i f g o; GRU: z r hh)
    cache = (XP, HR, GATES, HP, EXTRA, CP)
    for t in range(T):
        hr = h if rmask is None else h * rmask
        HR[t] = hr
        if kind == "rnn":
            hn = f(xp, XP[t] + hr @ R)
            GATES[t] = hn
        elif kind == "lstm":
            z = XP[t] + hr @ R
            g = GATES[t]
            g[:, :U] = rf(xp, z[:, :U])
            g[:, U:2 * U] = rf(xp, z[:, U:2 * U])
            g[:, 2 * U:3 * U] = f(xp, z[:, 2 * U:3 * U])
            g[:, 3 * U:] = rf(xp, z[:, 3 * U:])
            CP[t] = c
            cn = g[:, U:2 * U] * c + g[:, :U] * g[:, 2 * U:3 * U]
            ac = f(xp, cn)
            EXTRA[t] = ac
            hn = g[:, 3 * U:] * ac
        else:  # gru
            HP[t] = h
            g = GATES[t]
            xt = XP[t]
            if reset_after:
                rec = hr @ R
                if b is not None:
                    rec += b[1]
                g[:, :U] = rf(xp, xt[:, :U] + rec[:, :U])
                g[:, U:2 * U] = rf(xp, xt[:, U:2 * U] + rec[:, U:2 * U])
                EXTRA[t] = rec[:, 2 * U:]                       # r_h, the recurrent h part
                g[:, 2 * U:] = f(xp, xt[:, 2 * U:] + g[:, U:2 * U] * rec[:, 2 * U:])
            else:
                inner = hr @ R[:, :2 * U]
                g[:, :U] = rf(xp, xt[:, :U] + inner[:, :U])
                g[:, U:2 * U] = rf(xp, xt[:, U:2 * U] + inner[:, U:])
                rh = g[:, U:2 * U] * hr
                EXTRA[t] = rh                                     # r * h_{t-1}
                g[:, 2 * U:] = f(xp, xt[:, 2 * U:] + rh @ R[:, 2 * U:])
            z_ = g[:, :U]
            hn = z_ * h + (1.0 - z_) * g[:, 2 * U:]
        if mask is None:
            h = hn
            out = hn
            if kind == "lstm":
                c = cn
        else:
            m = mask[t][:, None]
            h = xp.where(m, hn, h)
            out = xp.where(m, hn, out)
            if kind == "lstm":
                c = xp.where(m, cn, c)
        ys[t] = out
    return ys, h, c, cache


def _fused_backward(xp, kind, x, W, R, b, mask, rmask, act, ract, reset_after, cache,
                    dys, dlast, dhT, dcT, into=(None, None, None)):
    """BPTT with the array module ``xp``. dys (T, B, U) or None; dlast (B, U) or None
    (cotangent of the last output); dhT, dcT: cotangents of the final states; ``into``: where
    to write dW, dR and db (arrays shaped and typed as W, R and b, or None each). Returns
    (dx, dW, dR, db, dh0, dc0)."""
    _, HR, GATES, HP, EXTRA, CP = cache
    T, B, D = x.shape
    U = R.shape[0]
    G = R.shape[1]
    dt = x.dtype
    _, fd = _ACTS[act]
    _, rfd = _ACTS[ract]
    dXP = xp.empty((T, B, G), dt)
    dREC = xp.empty((T, B, G), dt) if kind == "gru" else None
    if _rnn_cpu.applies(xp, kind, dt, act, ract, reset_after):
        dh, dc = _rnn_cpu.backward(kind, R, mask, rmask, act, ract, cache, dys, dlast, dhT, dcT,
                                   dXP, dREC)
        return _weight_gradients(xp, kind, x, W, R, b, reset_after, cache, dXP, dREC, dh, dc,
                                 into)
    dh = dhT.copy()
    dc = dcT.copy() if kind == "lstm" else None
    dout = xp.zeros((B, U), dt)
    RT = R.T
    for t in range(T - 1, -1, -1):
        g_out = dout
        if dys is not None:
            g_out = g_out + dys[t]
        if dlast is not None and t == T - 1:
            g_out = g_out + dlast
        if mask is None:
            dhn = g_out + dh
            dh_keep = None
            dcn = dc
            dc_keep = None
        else:
            m = mask[t][:, None]
            dhn = xp.where(m, g_out + dh, 0)
            dout = xp.where(m, 0, g_out)
            dh_keep = xp.where(m, 0, dh)
            if kind == "lstm":
                dcn = xp.where(m, dc, 0)
                dc_keep = xp.where(m, 0, dc)
        gates = GATES[t]
        if kind == "rnn":
            da = dhn * fd(xp, gates)
            dXP[t] = da
            dhr = da @ RT
            dh_prev = dhr * rmask if rmask is not None else dhr
        elif kind == "lstm":
            i, f_, g, o = gates[:, :U], gates[:, U:2 * U], gates[:, 2 * U:3 * U], gates[:, 3 * U:]
            ac = EXTRA[t]
            dct = dcn + dhn * o * fd(xp, ac)
            dz = dXP[t]
            dz[:, :U] = dct * g * rfd(xp, i)
            dz[:, U:2 * U] = dct * CP[t] * rfd(xp, f_)
            dz[:, 2 * U:3 * U] = dct * i * fd(xp, g)
            dz[:, 3 * U:] = dhn * ac * rfd(xp, o)
            dc = dct * f_ if dc_keep is None else dc_keep + dct * f_
            dhr = dz @ RT
            dh_prev = dhr * rmask if rmask is not None else dhr
        else:  # gru
            z_, r, hh = gates[:, :U], gates[:, U:2 * U], gates[:, 2 * U:]
            hp = HP[t]
            daz = dhn * (hp - hh) * rfd(xp, z_)
            dah = dhn * (1.0 - z_) * fd(xp, hh)
            dxt = dXP[t]
            drec = dREC[t]
            dxt[:, :U] = daz
            dxt[:, 2 * U:] = dah
            if reset_after:
                rh = EXTRA[t]
                dar = dah * rh * rfd(xp, r)
                dxt[:, U:2 * U] = dar
                drec[:, :U] = daz
                drec[:, U:2 * U] = dar
                drec[:, 2 * U:] = dah * r
                dhr = drec @ RT
            else:
                drh = dah @ R[:, 2 * U:].T
                hr = HR[t]
                dar = drh * hr * rfd(xp, r)
                dxt[:, U:2 * U] = dar
                drec[:, :U] = daz
                drec[:, U:2 * U] = dar
                drec[:, 2 * U:] = dah
                dhr = drec[:, :2 * U] @ R[:, :2 * U].T + drh * r
            dh_prev = dhn * z_ + (dhr * rmask if rmask is not None else dhr)
        dh = dh_prev if dh_keep is None else dh_keep + dh_prev
    return _weight_gradients(xp, kind, x, W, R, b, reset_after, cache, dXP, dREC, dh, dc, into)


def _weight_gradients(xp, kind, x, W, R, b, reset_after, cache, dXP, dREC, dh, dc,
                      into=(None, None, None)):
    """The sequence-wide products after the time loop: (dx, dW, dR, db, dh0, dc0); dW, dR
    and db written into ``into``'s arrays where given (the same products and sums)."""
    _, HR, _, _, EXTRA, _ = cache
    W_out, R_out, b_out = into
    T, B, D = x.shape
    U, G = R.shape
    dXP2 = dXP.reshape(T * B, G)
    dx = (dXP2 @ W.T).reshape(T, B, D)
    dW = xp.matmul(x.reshape(T * B, D).T, dXP2, out=W_out)
    if kind == "gru":
        dR = xp.empty_like(R) if R_out is None else R_out
        dREC2 = dREC.reshape(T * B, G)
        if reset_after:
            xp.matmul(HR.reshape(T * B, U).T, dREC2, out=dR)
        else:
            dR[:, :2 * U] = HR.reshape(T * B, U).T @ dREC2[:, :2 * U]
            dR[:, 2 * U:] = EXTRA.reshape(T * B, U).T @ dREC2[:, 2 * U:]
    else:
        dR = xp.matmul(HR.reshape(T * B, U).T, dXP2, out=R_out)
    db = None
    if b is not None:
        if kind == "gru" and reset_after:
            db = xp.empty((2, G), dXP2.dtype) if b_out is None else b_out
            dXP2.sum(0, out=db[0])
            dREC.reshape(T * B, G).sum(0, out=db[1])
        else:
            db = dXP2.sum(0, out=b_out)
    return dx, dW, dR, db, dh, dc


def fused_rnn(kind, x, W, R, b=None, h0=None, c0=None, *, mask=None, rmask=None, activation="tanh",
              recurrent_activation="sigmoid", reset_after=True, go_backwards=False,
              return_sequences=False, time_major=False):
    """One tape node for a whole sequence of a SimpleRNN (``kind="rnn"``), LSTM or GRU.

    ``x``: (B, T, D) (or (T, B, D) with ``time_major``); ``W``/``R``/``b``: Keras's layout;
    ``h0``/``c0``: initial states (B, U) or None (zeros); ``mask``: (B, T) booleans (time-major:
    (T, B)); ``rmask``: the recurrent dropout mask (B, U) (scaled), not differentiated.
    Returns ``(y, h_T)`` or ``(y, h_T, c_T)`` (LSTM), where ``y`` is the output sequence (in
    processing order, as Keras returns it with ``go_backwards``) or the last output.
    Runs with the array module of ``x``'s device (the masks move there); the results and the
    gradients are on that device.
    """
    who = kind.upper()
    out_dtype = x.dtype
    U = R.shape[0]
    dev, xp = _device_of(x)

    # one primitive of a compiled program: the masks are arguments too
    @backend_op(who)
    def op(x, W, R, b, h0, c0, mask, rmask):
        mask_np = None
        if mask is not None:
            mask_np = _on(mask, dev, xp, strict=False).astype(bool)
            mask_np = mask_np if time_major else mask_np.T
            if go_backwards:
                mask_np = mask_np[::-1]
        rmask_np = _on(rmask, dev, xp, strict=False)
        dt = work_dtype(x, W, R, b, h0, c0)
        xn = _on(x, dev, xp, dt, who)
        xn = xn if time_major else xn.transpose(1, 0, 2)
        if go_backwards:
            xn = xn[::-1]
        xn = xp.ascontiguousarray(xn)
        Wn, Rn, bn = _on(W, dev, xp, dt, who), _on(R, dev, xp, dt, who), _on(b, dev, xp, dt, who)
        B = xn.shape[1]
        h0n = xp.zeros((B, U), dt) if h0 is None else _on(h0, dev, xp, dt, who)
        c0n = None
        if kind == "lstm":
            c0n = xp.zeros((B, U), dt) if c0 is None else _on(c0, dev, xp, dt, who)
        rm = None if rmask_np is None else rmask_np.astype(dt)
        ys, hT, cT, cache = _fused_forward(xp, kind, xn, Wn, Rn, bn, h0n, c0n, mask_np, rm,
                                           activation, recurrent_activation, reset_after)
        if return_sequences:
            y = ys if time_major else ys.transpose(1, 0, 2)
            y = xp.ascontiguousarray(y, dtype=out_dtype)
        else:
            y = ys[-1].astype(out_dtype, copy=True)
        outs = [wrap(y, dev), wrap(hT.astype(out_dtype, copy=True), dev)]
        if kind == "lstm":
            outs.append(wrap(cT.astype(out_dtype, copy=True), dev))

        def grad_fn(*dys):
            dy = _on(dys[0], dev, xp, dt, who, strict=False)
            dseq = dlast = None
            if return_sequences:
                dseq = dy if time_major else dy.transpose(1, 0, 2)
            else:
                dlast = dy
            dhT = _on(dys[1], dev, xp, dt, who, strict=False)
            dcT = _on(dys[2], dev, xp, dt, who, strict=False) if kind == "lstm" else None
            # the weights' gradients straight into a strategy's buckets when the tape offers
            # them (the same products, their storage given)
            into = (gradient_destination(W, Wn), gradient_destination(R, Rn),
                    None if b is None else gradient_destination(b, bn))
            dx, dW, dR, db, dh0, dc0 = _fused_backward(
                xp, kind, xn, Wn, Rn, bn, mask_np, rm, activation, recurrent_activation,
                reset_after, cache, dseq, dlast, dhT, dcT, into)
            if go_backwards:
                dx = dx[::-1]
            if not time_major:
                dx = dx.transpose(1, 0, 2)
            res = [wrap(xp.ascontiguousarray(dx), dev), wrap(dW, dev), wrap(dR, dev),
                   None if b is None else wrap(db, dev),
                   None if h0 is None else wrap(dh0, dev),
                   None if c0 is None else wrap(dc0, dev), None, None]
            return tuple(res)
        return tuple(outs), hand_written_backward(kind.upper(), grad_fn, (x, W, R, b, h0, c0))

    return op(x, W, R, b, h0, c0, mask, rmask)
