"""The Numba kernels of the convolutions: col2im, bias + ReLU and its gradient, and
Winograd F(2x2, 3x3) (the tile transforms, forward and adjoint, and the kernel transform).
They run on NumPy arrays only; :mod:`.conv` chooses when to use them."""
from __future__ import annotations

import numpy as _np

from ._common import _njit


# ----------------------------------------------------------------------------- Numba kernels
@_njit
def _col2im_nb(dcols, dx, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW):
    """The adjoint of im2col: dx (zeroed) += the patch rows, scattered back."""
    N, H, W, C = dx.shape
    xf = dx.reshape(-1)
    cf = dcols.reshape(-1)
    RC = KH * KW * C
    KWC = KW * C
    for n in range(N):
        for oh in range(OH):
            for ow in range(OW):
                src0 = ((n * OH + oh) * OW + ow) * RC
                w0 = ow * sw - pl
                full_w = w0 >= 0 and w0 + (KW - 1) * dw < W
                for i in range(KH):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    src = src0 + i * KWC
                    row = (n * H + ih) * W
                    if full_w and dw == 1:
                        dst = (row + w0) * C
                        for q in range(KWC):
                            xf[dst + q] += cf[src + q]
                        continue
                    for j in range(KW):
                        iw = w0 + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        dst = (row + iw) * C
                        s = src + j * C
                        for c in range(C):
                            xf[dst + c] += cf[s + c]


@_njit
def _bias_act_nb(z, b, use_bias, relu):
    M, F = z.shape
    for m in range(M):
        for f in range(F):
            v = z[m, f]
            if use_bias:
                v += b[f]
            if relu and v < 0:
                z[m, f] = 0
            else:
                z[m, f] = v


@_njit
def _relu_grad_nb(dy, y, dz, db, acc):
    """dz = dy * (y > 0); db = column sums of dz (blocks of 256 rows summed in the input dtype,
    the blocks in float64). Branch-free: a data-dependent branch costs 20x here. acc: (F,)
    zeros of the input dtype."""
    M, F = dy.shape
    for m0 in range(0, M, 256):
        for m in range(m0, min(m0 + 256, M)):
            for f in range(F):
                g = dy[m, f] * (y[m, f] > 0)
                dz[m, f] = g
                acc[f] += g
        for f in range(F):
            db[f] += acc[f]
            acc[f] = 0


# ----------------------------------------------------------------------------- Winograd F(2x2, 3x3)
# A 3x3, stride-1 convolution computed on 4x4 input tiles (2x2 output tiles):
#   Y = A^T [ (G g G^T) . (B^T d B) ] A,
# i.e. 16 GEMMs of (tiles, C) @ (C, F) in place of one (pixels, 9C) @ (9C, F): 2.25x fewer
# multiplications, and no 9x-wide patch matrix. The backward runs the adjoint transforms.
_WINO_G = _np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


@_njit
def _wino_in_nb(x, V, pt, pl, TH, TW, tile0):
    """V[4a+b, tile0 + tile, c] = (B^T d B)[a, b] for the 4x4 input tile d at (2ty - pt, 2tx - pl)."""
    N, H, W, C = x.shape
    d = _np.empty((16, C), x.dtype)
    t = _np.empty((16, C), x.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = tile0 + (n * TH + ty) * TW + tx
                h0 = 2 * ty - pt
                w0 = 2 * tx - pl
                for a in range(4):
                    ih = h0 + a
                    for b in range(4):
                        iw = w0 + b
                        k = a * 4 + b
                        if ih >= 0 and ih < H and iw >= 0 and iw < W:
                            for c in range(C):
                                d[k, c] = x[n, ih, iw, c]
                        else:
                            for c in range(C):
                                d[k, c] = 0
                for b in range(4):
                    for c in range(C):
                        d0 = d[b, c]
                        d1 = d[4 + b, c]
                        d2 = d[8 + b, c]
                        d3 = d[12 + b, c]
                        t[b, c] = d0 - d2
                        t[4 + b, c] = d1 + d2
                        t[8 + b, c] = d2 - d1
                        t[12 + b, c] = d1 - d3
                for a in range(4):
                    k = 4 * a
                    for c in range(C):
                        t0 = t[k, c]
                        t1 = t[k + 1, c]
                        t2 = t[k + 2, c]
                        t3 = t[k + 3, c]
                        V[k, ti, c] = t0 - t2
                        V[k + 1, ti, c] = t1 + t2
                        V[k + 2, ti, c] = t2 - t1
                        V[k + 3, ti, c] = t1 - t3


@_njit
def _wino_out_nb(M, y, bias, use_bias, relu, TH, TW):
    """y[2ty + i, 2tx + j] = (A^T m A)[i, j] (+ bias, ReLU) for each tile's 16 products m."""
    N, OH, OW, F = y.shape
    s = _np.empty((8, F), M.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for b in range(4):
                    for f in range(F):
                        m0 = M[b, ti, f]
                        m1 = M[4 + b, ti, f]
                        m2 = M[8 + b, ti, f]
                        m3 = M[12 + b, ti, f]
                        s[b, f] = m0 + m1 + m2
                        s[4 + b, f] = m1 - m2 - m3
                for i in range(2):
                    oh = 2 * ty + i
                    if oh >= OH:
                        continue
                    for j in range(2):
                        ow = 2 * tx + j
                        if ow >= OW:
                            continue
                        for f in range(F):
                            s0 = s[4 * i, f]
                            s1 = s[4 * i + 1, f]
                            s2 = s[4 * i + 2, f]
                            s3 = s[4 * i + 3, f]
                            v = s0 + s1 + s2 if j == 0 else s1 - s2 - s3
                            if use_bias:
                                v += bias[f]
                            if relu and v < 0:
                                y[n, oh, ow, f] = 0
                            else:
                                y[n, oh, ow, f] = v


@_njit
def _wino_dout_nb(dz, dM, TH, TW):
    """The adjoint of _wino_out_nb (before bias/ReLU): dM = A dY A^T per 2x2 tile of dz."""
    N, OH, OW, F = dz.shape
    p = _np.empty((8, F), dz.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for j in range(2):
                    ow = 2 * tx + j
                    in_w = ow < OW
                    for f in range(F):
                        y0 = dz[n, 2 * ty, ow, f] if in_w else 0
                        y1 = dz[n, 2 * ty + 1, ow, f] if (in_w and 2 * ty + 1 < OH) else 0
                        p[j, f] = y0
                        p[2 + j, f] = y0 + y1
                        p[4 + j, f] = y0 - y1
                        p[6 + j, f] = -y1
                for a in range(4):
                    for f in range(F):
                        q0 = p[2 * a, f]
                        q1 = p[2 * a + 1, f]
                        dM[4 * a, ti, f] = q0
                        dM[4 * a + 1, ti, f] = q0 + q1
                        dM[4 * a + 2, ti, f] = q0 - q1
                        dM[4 * a + 3, ti, f] = -q1


@_njit
def _wino_din_nb(dV, dx, pt, pl, TH, TW):
    """The adjoint of _wino_in_nb: dx (zeroed) += B dV B^T of every tile, at its place."""
    N, H, W, C = dx.shape
    q = _np.empty((16, C), dV.dtype)
    for n in range(N):
        for ty in range(TH):
            for tx in range(TW):
                ti = (n * TH + ty) * TW + tx
                for b in range(4):
                    for c in range(C):
                        v0 = dV[b, ti, c]
                        v1 = dV[4 + b, ti, c]
                        v2 = dV[8 + b, ti, c]
                        v3 = dV[12 + b, ti, c]
                        q[b, c] = v0
                        q[4 + b, c] = v1 - v2 + v3
                        q[8 + b, c] = v1 + v2 - v0
                        q[12 + b, c] = -v3
                h0 = 2 * ty - pt
                w0 = 2 * tx - pl
                for a in range(4):
                    ih = h0 + a
                    if ih < 0 or ih >= H:
                        continue
                    k = 4 * a
                    for b in range(4):
                        iw = w0 + b
                        if iw < 0 or iw >= W:
                            continue
                        for c in range(C):
                            q0 = q[k, c]
                            q1 = q[k + 1, c]
                            q2 = q[k + 2, c]
                            q3 = q[k + 3, c]
                            if b == 0:
                                v = q0
                            elif b == 1:
                                v = q1 - q2 + q3
                            elif b == 2:
                                v = q1 + q2 - q0
                            else:
                                v = -q3
                            dx[n, ih, iw, c] += v


def _wino_kernel(k):
    """U[4a+b, c, f] = (G g G^T)[a, b] of the (3, 3, C, F) kernel."""
    G = _WINO_G.astype(k.dtype)
    C, F = k.shape[2], k.shape[3]
    return _np.ascontiguousarray(_np.einsum("ai,ijcf,bj->abcf", G, k, G).reshape(16, C, F))


def _wino_kernel_adjoint(dU, out=None):
    """The (3, 3, C, F) kernel gradient of the transformed one ``dU`` (into ``out`` if given)."""
    G = _WINO_G.astype(dU.dtype)
    C, F = dU.shape[1], dU.shape[2]
    return _np.einsum("ai,abcf,bj->ijcf", G, dU.reshape(4, 4, C, F), G, out=out)
