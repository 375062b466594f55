"""The CPU time loop of the fused recurrent kernel, for float32: one Numba call per step.

:mod:`tnp_train.ops.recurrent` runs a whole sequence as one tape node. With NumPy, each step of
its time loop costs about twenty array operations on (batch, units) slices, each with its own
dispatch and temporary, around the one matrix product that is the step's real work. Here a step
is that product (``np.matmul`` into a reused buffer: BLAS) followed by ONE Numba loop doing all
the step's elementwise work (gates, cell and state updates, the mask, the recurrent dropout, the
values the backward pass keeps) in one pass over (batch, units), with no temporaries.

The loops compute what :func:`tnp_train.ops.recurrent._fused_forward` and ``_fused_backward``
compute, in the same layout and the same order; they fill the same cache arrays (the gates
overwrite the input projection in place), so the sequence-wide products (input projection,
weight gradients) are shared. float32 only: ``tanh`` and ``sigmoid`` are
:mod:`tnp.extend.vecmath`'s (computed in float64 and rounded once: within an ulp of the exact
value, written so that LLVM vectorizes them); float64 sequences keep the NumPy loop (libm
accuracy). Covered: SimpleRNN, LSTM, GRU with ``reset_after=True`` (TF 2's default), every
activation of the NumPy path.
"""
from __future__ import annotations

import numpy as np

try:  # numba is a dependency; the NumPy loop is the fallback
    import numba as _numba
    from tnp.extend import vecmath as _vm    # float32 tanh / sigmoid that vectorize
except Exception:  # pragma: no cover
    _numba = None

__all__ = ["available", "applies", "forward", "backward", "ACT_CODES"]

#: activation name -> the code the kernels branch on (outside each loop over units)
ACT_CODES = {"tanh": 0, "sigmoid": 1, "relu": 2, "linear": 3, "hard_sigmoid": 4}

_F32 = np.dtype(np.float32)


def available():
    """Whether the Numba loops exist (Numba imported)."""
    return _numba is not None


def applies(xp, kind, dtype, act, ract, reset_after):
    """Whether the Numba loop runs this sequence (else the NumPy loop does)."""
    return (_numba is not None and xp is np and np.dtype(dtype) == _F32
            and act in ACT_CODES and ract in ACT_CODES
            and (kind != "gru" or reset_after))


if _numba is not None:
    _njit = _numba.njit(cache=True, nogil=True, error_model="numpy")
    _inline = _numba.njit(inline="always")
    _tanh, _sigmoid = _vm.tanh_f32, _vm.sigmoid_f32
    f32 = np.float32
    _ZERO, _HALF, _ONE, _FIFTH = f32(0.0), f32(0.5), f32(1.0), f32(0.2)

    @_inline
    def _act_into(dst, src, lo, hi, code):
        """dst[j] = f(src[j]) for j in [lo, hi): one branch-free loop per activation."""
        if code == 0:
            for j in range(lo, hi):
                dst[j] = _tanh(src[j])
        elif code == 1:
            for j in range(lo, hi):
                dst[j] = _sigmoid(src[j])
        elif code == 2:
            for j in range(lo, hi):
                x = src[j]
                dst[j] = x if x > _ZERO else _ZERO
        elif code == 3:
            for j in range(lo, hi):
                dst[j] = src[j]
        else:
            for j in range(lo, hi):
                y = _FIFTH * src[j] + _HALF
                y = _ZERO if y < _ZERO else y
                dst[j] = _ONE if y > _ONE else y

    @_inline
    def _dact_times(dst, y, lo, hi, code):
        """dst[j] *= f'(z_j), written with y = f(z), for j in [lo, hi)."""
        if code == 0:
            for j in range(lo, hi):
                dst[j] *= _ONE - y[j] * y[j]
        elif code == 1:
            for j in range(lo, hi):
                dst[j] *= y[j] * (_ONE - y[j])
        elif code == 2:
            for j in range(lo, hi):
                dst[j] = dst[j] if y[j] > _ZERO else _ZERO
        elif code == 4:
            for j in range(lo, hi):
                dst[j] = _FIFTH * dst[j] if (y[j] > _ZERO and y[j] < _ONE) else _ZERO

    # ------------------------------------------------------------------------------ forward
    # Shared arguments: t (the step), REC (B, G) = HR[t] @ R, XP (T, B, G) the input projection
    # with its bias, GATES (T, B, G) the activated gates kept for the backward, HR (T, B, U) the
    # (dropped-out) state each step multiplies R with (the kernel writes HR[t + 1]), ys (T, B, U)
    # the outputs, h / out (B, U) the state and the last output (they differ only under a mask),
    # mask (T, B) bool, rmask (B, U): read when has_mask / has_rmask. Every loop runs over one
    # row's units with its branches outside (so that it vectorizes).
    @_inline
    def _advance(t, bi, hn, keep, h, out, ys, HR, rmask, has_rmask):
        """Commit the step's new state ``hn`` (U,) of row ``bi`` unless the mask keeps the old."""
        T, _, U = ys.shape
        hb, ob, yb = h[bi], out[bi], ys[t, bi]
        if keep:
            for j in range(U):
                hb[j] = hn[j]
                ob[j] = hn[j]
        for j in range(U):
            yb[j] = ob[j]
        if t + 1 < T:
            nb = HR[t + 1, bi]
            if has_rmask:
                rb = rmask[bi]
                for j in range(U):
                    nb[j] = hb[j] * rb[j]
            else:
                for j in range(U):
                    nb[j] = hb[j]

    @_njit
    def _rnn_fwd(t, REC, XP, GATES, HR, ys, h, out, mask, has_mask, rmask, has_rmask, act):
        B, U = REC.shape
        for bi in range(B):
            gb, rb, xb = GATES[t, bi], REC[bi], XP[t, bi]
            for j in range(U):
                gb[j] = rb[j] + xb[j]
            _act_into(gb, gb, 0, U, act)
            _advance(t, bi, gb, (not has_mask) or mask[t, bi], h, out, ys, HR, rmask, has_rmask)

    @_njit
    def _lstm_fwd(t, REC, XP, GATES, HR, ys, h, out, mask, has_mask, rmask, has_rmask,
                  act, ract, c, CP, AC, scratch):
        B, G = REC.shape
        U = G // 4
        hn = scratch[:U]
        for bi in range(B):
            gb, rb, xb = GATES[t, bi], REC[bi], XP[t, bi]
            for j in range(G):
                gb[j] = rb[j] + xb[j]
            _act_into(gb, gb, 0, 2 * U, ract)          # i, f
            _act_into(gb, gb, 2 * U, 3 * U, act)       # g
            _act_into(gb, gb, 3 * U, G, ract)          # o
            cb, cpb, acb = c[bi], CP[t, bi], AC[t, bi]
            keep = (not has_mask) or mask[t, bi]
            for j in range(U):
                cp = cb[j]
                cpb[j] = cp
                acb[j] = gb[U + j] * cp + gb[j] * gb[2 * U + j]       # c_t, activated below
            if keep:
                for j in range(U):
                    cb[j] = acb[j]
            _act_into(acb, acb, 0, U, act)
            for j in range(U):
                hn[j] = gb[3 * U + j] * acb[j]
            _advance(t, bi, hn, keep, h, out, ys, HR, rmask, has_rmask)

    @_njit
    def _gru_fwd(t, REC, XP, GATES, HR, ys, h, out, mask, has_mask, rmask, has_rmask,
                 act, ract, brec, HP, RH, scratch):
        # reset_after: REC = HR[t] @ R, brec the recurrent bias (zeros without a bias)
        B, G = REC.shape
        U = G // 3
        hn = scratch[:U]
        for bi in range(B):
            gb, rb, xb = GATES[t, bi], REC[bi], XP[t, bi]
            rhb, hpb, hb = RH[t, bi], HP[t, bi], h[bi]
            for j in range(2 * U):
                gb[j] = xb[j] + (rb[j] + brec[j])
            _act_into(gb, gb, 0, 2 * U, ract)          # z, r
            for j in range(U):
                rh = rb[2 * U + j] + brec[2 * U + j]
                rhb[j] = rh
                gb[2 * U + j] = xb[2 * U + j] + gb[U + j] * rh
            _act_into(gb, gb, 2 * U, G, act)           # the candidate
            for j in range(U):
                z = gb[j]
                hp = hb[j]
                hpb[j] = hp
                hn[j] = z * hp + (_ONE - z) * gb[2 * U + j]
            _advance(t, bi, hn, (not has_mask) or mask[t, bi], h, out, ys, HR, rmask, has_rmask)

    # ----------------------------------------------------------------------------- backward
    # Shared: dys (T, B, U) read when has_dys; dlast (B, U) added at t = T - 1 when has_dlast;
    # dh (B, U): on entry the part of dL/dh_t not through R (the final state's cotangent, or what
    # the previous call left), DHR (B, U) the product dZ[t + 1] @ R.T of the step after (times
    # rmask); on exit dh holds the part of dL/dh_{t-1} not through R. dout (B, U): the output's
    # cotangent carried past masked steps. ``_incoming`` leaves in ``dhn`` the cotangent of the
    # step's new state (zero on a masked row) and updates dh/dout for what skips the step.
    @_inline
    def _incoming(t, T, bi, dys, has_dys, dlast, has_dlast, dout, dh, DHR, rmask, has_rmask,
                  keep, dhn):
        U = dhn.shape[0]
        ob, db, rb = dout[bi], dh[bi], DHR[bi]
        for j in range(U):
            dhn[j] = ob[j]
        if has_dys:
            yb = dys[t, bi]
            for j in range(U):
                dhn[j] += yb[j]
        if has_dlast and t == T - 1:
            lb = dlast[bi]
            for j in range(U):
                dhn[j] += lb[j]
        if has_rmask:
            mb = rmask[bi]
            for j in range(U):
                db[j] += rb[j] * mb[j]
        else:
            for j in range(U):
                db[j] += rb[j]
        if keep:                         # dh_t = what came through R + what skipped steps
            for j in range(U):
                dhn[j] += db[j]
                db[j] = _ZERO
                ob[j] = _ZERO
        else:                            # a masked step: everything passes to step t - 1
            for j in range(U):
                ob[j] = dhn[j]
                dhn[j] = _ZERO

    @_njit
    def _rnn_bwd(t, GATES, dXP, dys, has_dys, dlast, has_dlast, dout, dh, DHR, mask, has_mask,
                 rmask, has_rmask, act, scratch):
        B, U = dh.shape
        for bi in range(B):
            db = dXP[t, bi]
            _incoming(t, GATES.shape[0], bi, dys, has_dys, dlast, has_dlast, dout, dh, DHR,
                      rmask, has_rmask, (not has_mask) or mask[t, bi], db)
            _dact_times(db, GATES[t, bi], 0, U, act)

    @_njit
    def _lstm_bwd(t, GATES, dXP, dys, has_dys, dlast, has_dlast, dout, dh, DHR, mask,
                  has_mask, rmask, has_rmask, act, ract, dc, CP, AC, scratch):
        B, U = dh.shape
        dhn, dct = scratch[:U], scratch[U:2 * U]
        for bi in range(B):
            keep = (not has_mask) or mask[t, bi]
            _incoming(t, GATES.shape[0], bi, dys, has_dys, dlast, has_dlast, dout, dh, DHR,
                      rmask, has_rmask, keep, dhn)
            gb, d, acb, cpb, dcb = GATES[t, bi], dXP[t, bi], AC[t, bi], CP[t, bi], dc[bi]
            for j in range(U):
                dct[j] = dhn[j] * gb[3 * U + j]
            _dact_times(dct, acb, 0, U, act)
            if keep:
                for j in range(U):
                    dct[j] += dcb[j]
                    dcb[j] = dct[j] * gb[U + j]
            else:                         # the masked step passes dc on, its own dc_t is 0
                for j in range(U):
                    dcb[j] += dct[j] * gb[U + j]
            for j in range(U):
                d[j] = dct[j] * gb[2 * U + j]              # i
                d[U + j] = dct[j] * cpb[j]                 # f
                d[2 * U + j] = dct[j] * gb[j]              # g
                d[3 * U + j] = dhn[j] * acb[j]             # o
            _dact_times(d, gb, 0, 2 * U, ract)
            _dact_times(d, gb, 2 * U, 3 * U, act)
            _dact_times(d, gb, 3 * U, 4 * U, ract)

    @_njit
    def _gru_bwd(t, GATES, dXP, dys, has_dys, dlast, has_dlast, dout, dh, DHR, mask,
                 has_mask, rmask, has_rmask, act, ract, dREC, HP, RH, scratch):
        B, U = dh.shape
        dhn = scratch[:U]
        for bi in range(B):
            _incoming(t, GATES.shape[0], bi, dys, has_dys, dlast, has_dlast, dout, dh, DHR,
                      rmask, has_rmask, (not has_mask) or mask[t, bi], dhn)
            gb, d, dr = GATES[t, bi], dXP[t, bi], dREC[t, bi]
            hpb, rhb, db = HP[t, bi], RH[t, bi], dh[bi]
            for j in range(U):
                z = gb[j]
                d[j] = dhn[j] * (hpb[j] - gb[2 * U + j])           # z
                d[2 * U + j] = dhn[j] * (_ONE - z)                 # the candidate
                db[j] += dhn[j] * z
            _dact_times(d, gb, 0, U, ract)
            _dact_times(d, gb, 2 * U, 3 * U, act)
            for j in range(U):
                d[U + j] = d[2 * U + j] * rhb[j]                   # r
            _dact_times(d, gb, U, 2 * U, ract)
            for j in range(U):
                dr[j] = d[j]
                dr[U + j] = d[U + j]
                dr[2 * U + j] = d[2 * U + j] * gb[U + j]


def _opt(a, shape):
    """An unused placeholder for an absent array (one compiled signature per kernel)."""
    return a if a is not None else np.zeros(shape, np.float32)


def forward(kind, XP, R, brec, h0, c0, mask, rmask, act, ract, cache):
    """The time loop of ``_fused_forward``: fills ``cache``'s arrays (HR, GATES, HP, EXTRA, CP)
    and returns (ys, hT, cT). XP (T, B, G) already holds the input projection and its bias."""
    T, B, G = XP.shape
    U = R.shape[0]
    _, HR, GATES, HP, EXTRA, CP = cache
    a, ra = ACT_CODES[act], ACT_CODES[ract]
    has_mask, has_rmask = mask is not None, rmask is not None
    mask_ = np.ascontiguousarray(mask) if has_mask else np.zeros((1, 1), bool)
    rmask_ = np.ascontiguousarray(_opt(rmask, (1, 1)))
    h = np.array(h0, np.float32, copy=True, order="C")
    out = np.zeros((B, U), np.float32)
    ys = np.empty((T, B, U), np.float32)
    HR[0] = h0 * rmask if has_rmask else h0
    REC = np.empty((B, G), np.float32)
    c = np.array(c0, np.float32, copy=True, order="C") if kind == "lstm" else None
    brec_ = np.zeros((G,), np.float32) if brec is None else np.ascontiguousarray(brec)
    scratch = np.empty((2 * U,), np.float32)
    matmul = np.matmul
    for t in range(T):
        matmul(HR[t], R, out=REC)
        if kind == "lstm":
            _lstm_fwd(t, REC, XP, GATES, HR, ys, h, out, mask_, has_mask, rmask_, has_rmask,
                      a, ra, c, CP, EXTRA, scratch)
        elif kind == "gru":
            _gru_fwd(t, REC, XP, GATES, HR, ys, h, out, mask_, has_mask, rmask_, has_rmask,
                     a, ra, brec_, HP, EXTRA, scratch)
        else:
            _rnn_fwd(t, REC, XP, GATES, HR, ys, h, out, mask_, has_mask, rmask_, has_rmask, a)
    return ys, h, c


def backward(kind, R, mask, rmask, act, ract, cache, dys, dlast, dhT, dcT, dXP, dREC):
    """The time loop of ``_fused_backward``: fills dXP (and dREC for a GRU) and returns
    (dh0, dc0)."""
    _, HR, GATES, HP, EXTRA, CP = cache
    T, B, G = GATES.shape
    U = R.shape[0]
    a, ra = ACT_CODES[act], ACT_CODES[ract]
    has_mask, has_rmask = mask is not None, rmask is not None
    has_dys, has_dlast = dys is not None, dlast is not None
    mask_ = np.ascontiguousarray(mask) if has_mask else np.zeros((1, 1), bool)
    rmask_ = np.ascontiguousarray(_opt(rmask, (1, 1)))
    dys_ = np.ascontiguousarray(dys, np.float32) if has_dys else np.zeros((1, 1, 1), np.float32)
    dlast_ = np.ascontiguousarray(dlast, np.float32) if has_dlast else np.zeros((1, 1), np.float32)
    dh = np.array(dhT, np.float32, copy=True, order="C")
    dout = np.zeros((B, U), np.float32)
    DHR = np.zeros((B, U), np.float32)
    dc = np.array(dcT, np.float32, copy=True, order="C") if kind == "lstm" else None
    RT = np.ascontiguousarray(R.T)
    scratch = np.empty((2 * U,), np.float32)
    matmul = np.matmul
    for t in range(T - 1, -1, -1):
        if kind == "lstm":
            _lstm_bwd(t, GATES, dXP, dys_, has_dys, dlast_, has_dlast, dout, dh, DHR, mask_,
                      has_mask, rmask_, has_rmask, a, ra, dc, CP, EXTRA, scratch)
            matmul(dXP[t], RT, out=DHR)
        elif kind == "gru":
            _gru_bwd(t, GATES, dXP, dys_, has_dys, dlast_, has_dlast, dout, dh, DHR, mask_,
                     has_mask, rmask_, has_rmask, a, ra, dREC, HP, EXTRA, scratch)
            matmul(dREC[t], RT, out=DHR)
        else:
            _rnn_bwd(t, GATES, dXP, dys_, has_dys, dlast_, has_dlast, dout, dh, DHR, mask_,
                     has_mask, rmask_, has_rmask, a, scratch)
            matmul(dXP[t], RT, out=DHR)
    dh += DHR * rmask if has_rmask else DHR
    return dh, dc
