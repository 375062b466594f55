"""VJPs of tnp's statistics functions: extrema, means and variances, order statistics
(median, percentiles, quantiles), correlation and covariance, histograms.

Masks, ranks and bin indices are computed from values no tape follows (``stop_gradient`` copies
or host arrays): they carry no gradient. Everything that depends on a differentiated value is a
tnp operation, so gradients of gradients work.
"""
from __future__ import annotations

import inspect

import numpy as _np

import tnp
from tnp.extend import is_floating, is_inexact

from ..registry import defvjp, nondifferentiable, section
from ._helpers import (_NoValue, _arr, _axes_of, _cj, _expand_to, _extremum_vjp, _full_cotangent,
                       _host, _on, _sg, _where_mask, _zeros, on_array)
from .indexing import untake

section("statistics")

builtins_range = range   # rules below take a parameter named ``range``


def _kd(keepdims):
    return False if keepdims is _NoValue or keepdims is None else bool(keepdims)


def _reduced_count(x, axis, where=True):
    """The number of elements each output of a reduction over ``axis`` combines: an int, or a
    constant array (keepdims shape) when a ``where`` mask is given."""
    if where is True or where is _NoValue or where is None:
        n = 1
        for a in _axes_of(axis, x.ndim):
            n *= x.shape[a]
        return n
    w = tnp.broadcast_to(_sg(where), tuple(x.shape))
    return tnp.sum(w, axis=axis, keepdims=True)


# ---------------------------------------------------------------------------- extrema
def _max_vjp(ans, a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _extremum_vjp(ans, a, axis, _kd(keepdims), where)


defvjp(("amax", "amin", "max", "min", "nanmax", "nanmin"), on_array(_max_vjp))


def _ptp_vjp(ans, a, axis=None, out=None, keepdims=False):
    keepdims = _kd(keepdims)

    def vjp(g):
        ac = _sg(a)
        hi = _extremum_vjp(tnp.max(ac, axis=axis, keepdims=keepdims), a, axis, keepdims)
        lo = _extremum_vjp(tnp.min(ac, axis=axis, keepdims=keepdims), a, axis, keepdims)
        return hi(g) - lo(g)
    return vjp


defvjp("ptp", on_array(_ptp_vjp))


# ---------------------------------------------------------------------------- means and variances
def _mean_vjp(ans, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    keepdims = _kd(keepdims)

    def vjp(g):
        ge = _expand_to(g, a, axis, keepdims)
        m = _where_mask(where, a)
        if m is None:
            n = _reduced_count(a, axis)
            return ge / n if n else ge
        return ge * (m / tnp.maximum(tnp.sum(m, axis=axis, keepdims=True), 1))
    return vjp


def _nanmean_vjp(ans, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    keepdims = _kd(keepdims)

    def vjp(g):
        valid = ~tnp.isnan(_sg(a))
        m = _where_mask(where, a)
        if m is not None:
            valid = valid & m
        cnt = tnp.maximum(tnp.sum(valid, axis=axis, keepdims=True), 1)   # all-NaN slices: 0
        return _expand_to(g, a, axis, keepdims) * (valid / cnt)
    return vjp


defvjp("mean", on_array(_mean_vjp))
defvjp("nanmean", on_array(_nanmean_vjp))


def _var_setup(a, axis, ddof, where, mean, correction, nan):
    """(valid mask or None, 1/(N - ddof) as a constant, the centered values a - mean (0 where
    not valid), the mean array used)."""
    if correction is not _NoValue and correction is not None:
        ddof = correction
    ac = _sg(a)
    valid = _where_mask(where, a)
    if nan:
        isn = ~tnp.isnan(ac)
        valid = isn if valid is None else (valid & isn)
    if valid is None:
        n = _reduced_count(a, axis)
        dof = n - ddof
        inv = 1.0 / dof if dof > 0 else 0.0
    else:
        dof = tnp.sum(valid, axis=axis, keepdims=True) - ddof
        inv = (dof > 0) / tnp.maximum(dof, 1)
    if mean is not _NoValue and mean is not None:
        mu = mean
    elif nan:
        mu = tnp.nanmean(a, axis=axis, keepdims=True,
                         **({} if where is True or where is _NoValue else {"where": where}))
    elif valid is not None:
        mu = tnp.mean(a, axis=axis, keepdims=True, where=valid)
    else:
        mu = tnp.mean(a, axis=axis, keepdims=True)
    centered = a - mu
    if valid is not None:
        centered = tnp.where(valid, centered, 0.0)
    return valid, inv, centered


def _var_a(nan):
    def rule(ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
             mean=_NoValue, correction=_NoValue):
        keepdims = _kd(keepdims)

        def vjp(g):
            valid, inv, c = _var_setup(a, axis, ddof, where, mean, correction, nan)
            return _expand_to(g, a, axis, keepdims) * (2.0 * inv) * _cj(c)
        return vjp
    return rule


def _var_mean(nan):
    def rule(ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
             mean=_NoValue, correction=_NoValue):
        keepdims = _kd(keepdims)

        def vjp(g):
            valid, inv, c = _var_setup(a, axis, ddof, where, mean, correction, nan)
            return -tnp.sum(_expand_to(g, a, axis, keepdims) * (2.0 * inv) * _cj(c), axis=axis,
                            keepdims=True)
        return vjp
    return rule


def _std_rule(var_rule):
    """std = sqrt(var): the cotangent of var is g / (2 std); slices with std 0 or NaN get 0."""
    def rule(ans, a, *args, **kwargs):
        def vjp(g):
            s = _sg(ans)
            ok = tnp.isfinite(s) & (s != 0)
            gv = tnp.where(ok, g / (2.0 * tnp.where(ok, ans, 1.0)), 0.0)
            return var_rule(None, a, *args, **kwargs)(gv)
        return vjp
    return rule


for _name, _nan in (("var", False), ("nanvar", True)):
    defvjp(_name, _var_a(_nan), mean=_var_mean(_nan))
for _name, _nan in (("std", False), ("nanstd", True)):
    defvjp(_name, _std_rule(_var_a(_nan)), mean=_std_rule(_var_mean(_nan)))


def _average_weights(weights, a, axes):
    """``weights`` laid out to broadcast against ``a`` (as NumPy's average does)."""
    w = weights if isinstance(weights, tnp.ndarray) else _on(weights, a)
    if tuple(w.shape) == tuple(a.shape):
        return w
    order = tuple(int(i) for i in _np.argsort(axes))
    if order != tuple(range(len(order))):
        w = tnp.transpose(w, order)
    return tnp.reshape(w, tuple(s if i in axes else 1 for i, s in enumerate(a.shape)))


def _average_rule(which):
    def rule(ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
        keepdims = _kd(keepdims)
        axes_given = None if axis is None else \
            tuple(int(x) % a.ndim for x in ((axis,) if _np.ndim(axis) == 0 else axis))

        def vjp(g):
            g_avg, g_scl = (g[0], g[1]) if returned else (g, None)
            ge = _expand_to(g_avg, a, axis, keepdims)
            if weights is None:
                if which == 1:
                    return None
                n = _reduced_count(a, axis)
                return ge / n if n else ge
            w = _average_weights(weights, a, axes_given if axes_given is not None
                                 else tuple(range(a.ndim)))
            scl = tnp.sum(w, axis=axes_given, keepdims=True)
            if which == 0:
                return ge * w / scl
            avg = ans[0] if returned else ans
            gw = ge * (a - _expand_to(avg, a, axis, keepdims)) / scl
            if g_scl is not None:
                gw = gw + _expand_to(g_scl, a, axis, keepdims)
            wshape = tuple(_np.shape(weights))
            if wshape == tuple(a.shape):
                return gw
            others = tuple(i for i in range(a.ndim) if i not in axes_given)
            gw = tnp.sum(gw, axis=others) if others else gw
            order = _np.argsort(axes_given)      # gw's axes are sorted; weights' are as given
            inverse = tuple(int(i) for i in _np.argsort(order))
            if inverse != tuple(range(len(inverse))):
                gw = tnp.transpose(gw, inverse)
            return gw
        return vjp
    return rule


defvjp("average", _average_rule(0), None, _average_rule(1), weights=_average_rule(1))


# ---------------------------------------------------------------------------- order statistics
def _order_weights(fname, a, q, axis, method, weights, nan):
    """The constant W (q.shape + a.shape) with ``result = sum over a's reduced axes of W * a``:
    the order statistics NumPy's function combines, found by applying it to the ranks of a's
    values (a distinct sorted probe): for every method the result on ranks is the 'virtual
    index' ``lo + gamma`` of the two order statistics lo, lo+1 it interpolates between."""
    ah = _np.asarray(_host(a))
    nd = ah.ndim
    axes = _axes_of(axis, nd)
    rest = [i for i in range(nd) if i not in axes]
    perm = rest + list(axes)
    moved = ah.transpose(perm)
    rshape = moved.shape[:len(rest)]
    n = int(_np.prod([ah.shape[i] for i in axes], dtype=_np.int64))
    arr = moved.reshape(rshape + (n,))
    order = _np.argsort(arr, axis=-1, kind="stable")
    ranks = _np.empty(arr.shape, dtype=_np.float64)
    _np.put_along_axis(ranks, order, _np.broadcast_to(_np.arange(n, dtype=_np.float64),
                                                       arr.shape), axis=-1)
    nanm = _np.isnan(arr) if is_inexact(arr.dtype) else _np.zeros(arr.shape, bool)
    if nan:
        ranks[nanm] = _np.nan
    kw = {}
    if method is not None:
        kw["method"] = method
    if weights is not None:
        wh = _np.asarray(_host(weights), dtype=_np.float64)
        if wh.shape != ah.shape:
            ax = axes[0]
            wh = _np.broadcast_to(wh.reshape((-1,) + (1,) * (nd - ax - 1)), ah.shape)
        kw["weights"] = wh.transpose(perm).reshape(arr.shape)
    fn = getattr(_np, fname)
    v = fn(ranks, axis=-1, **kw) if q is None else fn(ranks, _host(q), axis=-1, **kw)
    v = _np.asarray(v, dtype=_np.float64)
    qshape = v.shape[:v.ndim - len(rshape)]
    ok = _np.isfinite(v)
    if not nan:
        ok = ok & ~nanm.any(axis=-1)       # NaN in a slice: NumPy's result is NaN
    v = _np.where(ok, v, 0.0)
    lo = _np.floor(v)
    gam = v - lo
    up = gam > 1 - 1e-9
    lo = _np.where(up, lo + 1, lo)
    gam = _np.where(up | (gam < 1e-9), 0.0, gam)
    hi = lo + (gam > 0)
    r = ranks[(None,) * len(qshape)]
    W = (((1 - gam) * ok)[..., None] * (r == lo[..., None])
         + (gam * ok)[..., None] * (r == hi[..., None]))
    W = W.reshape(qshape + moved.shape)
    inv = _np.argsort(perm)
    W = W.transpose(tuple(range(len(qshape))) + tuple(len(qshape) + i for i in inv))
    kd = tuple(1 if i in axes else s for i, s in enumerate(ah.shape))
    return W, qshape, kd


_ORDER_SIG = {n: inspect.signature(getattr(_np, n)) for n in
              ("median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile")}


def _order_rule(fname):
    sig = _ORDER_SIG[fname]
    nan = fname.startswith("nan")

    def rule(ans, a, *args, **kwargs):
        p = sig.bind(a, *args, **kwargs).arguments

        def vjp(g):
            W, qshape, kd = _order_weights(fname, a, p.get("q"), p.get("axis"),
                                           p.get("method"), p.get("weights"), nan)
            dt = a.dtype if is_floating(a.dtype) else None
            r = tnp.reshape(g, qshape + kd) if tuple(g.shape) != qshape + kd else g
            r = r * _on(W, a, dtype=dt)
            return tnp.sum(r, axis=tuple(range(len(qshape)))) if qshape else r
        return vjp
    return rule


for _name in _ORDER_SIG:
    defvjp(_name, _order_rule(_name))


# ---------------------------------------------------------------------------- covariance
def _as_rows(v, rowvar):
    """NumPy's cov layout of one input: (2-d array, transposed?)."""
    v = v if isinstance(v, tnp.ndarray) else tnp.asarray(v)
    if v.ndim == 0:
        v2 = tnp.reshape(v, (1, 1))
    elif v.ndim == 1:
        v2 = v[None, :]
    else:
        v2 = v
    if not rowvar and v2.shape[0] != 1:
        return v2.T, True
    return v2, False


def _cov_setup(m, y, rowvar, bias, ddof, fweights, aweights):
    X, tm = _as_rows(m, rowvar)
    parts = [(X, tm, m)]
    if y is not None:
        Y, ty = _as_rows(y, rowvar)
        parts.append((Y, ty, y))
        X = tnp.concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        w = _np.asarray(_host(fweights), dtype=_np.float64)
    if aweights is not None:
        aw = _np.asarray(_host(aweights), dtype=_np.float64)
        w = aw if w is None else w * aw
    nobs = X.shape[1]
    if w is None:
        fact = nobs - ddof
        avg = tnp.mean(X, axis=1, keepdims=True)
        wt = None
    else:
        wsum = w.sum()
        if ddof == 0:
            fact = wsum
        elif aweights is None:
            fact = wsum - ddof
        else:
            fact = wsum - ddof * (w * aw).sum() / wsum
        wt = _on(w, X, dtype=X.dtype if is_floating(X.dtype) else None)
        avg = tnp.sum(X * wt, axis=1, keepdims=True) / wsum
    return parts, X - avg, wt, float(fact)


def _split_back(gX, parts, which):
    start = 0
    for k, (P, transposed, orig) in enumerate(parts):
        rows = P.shape[0]
        if k == which:
            piece = gX[start:start + rows]
            if transposed:
                piece = piece.T
            shape = tuple(_np.shape(orig))
            return piece if tuple(piece.shape) == shape else tnp.reshape(piece, shape)
        start += rows
    return None


def _cov_rule(which):
    def rule(ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
             *, dtype=None):
        def vjp(g):
            parts, Xc, wt, fact = _cov_setup(m, y, rowvar, bias, ddof, fweights, aweights)
            V = Xc.shape[0]
            G = tnp.reshape(g, (V, V)) if tuple(g.shape) != (V, V) else g
            # C = Xc conj(Xc)^T / fact: holomorphic in the first factor, conjugate-linear in
            # the second, so a complex Xc's cotangent is (G + G^H) conj(Xc) / fact
            S = G + _cj(G).T
            Xh = _cj(Xc)
            gX = tnp.matmul(S, Xh if wt is None else Xh * wt) / fact
            return _split_back(gX, parts, which)
        return vjp
    return rule


defvjp("cov", _cov_rule(0), _cov_rule(1), y=_cov_rule(1))


def _corrcoef_rule(which):
    def rule(ans, x, y=None, rowvar=True, *, dtype=None):
        def vjp(g):
            if g.ndim == 0:        # one variable: the result is c / c
                src = x if which == 0 else y
                return _zeros(src if isinstance(src, tnp.ndarray) else tnp.asarray(src), g.dtype)
            parts, Xc, wt, fact = _cov_setup(x, y, rowvar, False, None, None, None)
            Xh = _cj(Xc)
            d = tnp.sum(Xc * Xh, axis=1) / fact            # the variances (real)
            if _np.iscomplexobj(d):
                d = tnp.real(d)
            s = tnp.sqrt(d)
            R = ans
            A = g / (s[:, None] * s[None, :])
            gd = -(tnp.sum(g * R, axis=1) + tnp.sum(g * R, axis=0)) / (2.0 * d)
            if _np.iscomplexobj(gd):     # d is real: the real part of its cotangent
                gd = tnp.real(gd)
            # as cov's: a complex Xc gets (A + A^H) conj(Xc), and through d = sum |Xc|^2 / fact
            # 2 gd conj(Xc)
            gX = (tnp.matmul(A + _cj(A).T, Xh) + (2.0 * gd)[:, None] * Xh) / fact
            return _split_back(gX, parts, which)
        return vjp
    return rule


defvjp("corrcoef", _corrcoef_rule(0), _corrcoef_rule(1), y=_corrcoef_rule(1))


def _correlate_rule(which):
    # correlate(a, v) (full) = convolve(a, u) with u = conj(v)[::-1]
    def rule(ans, a, v, mode="valid"):
        def vjp(g):
            gf = _full_cotangent(g, "correlate", a, v, mode)
            if which == 0:
                return tnp.correlate(gf, _arr(v)[::-1], "valid")
            gu = tnp.correlate(gf, _cj(_arr(a)), "valid")
            return _cj(gu[::-1])
        return vjp
    return rule


defvjp("correlate", _correlate_rule(0), _correlate_rule(1))


# ---------------------------------------------------------------------------- counting, histograms
def _bincount_weights(ans, x, weights=None, minlength=0):
    return lambda g: g[_sg(x)]


defvjp("bincount", None, _bincount_weights, weights=_bincount_weights)
nondifferentiable("digitize", "integer output (bin indices)")


def _bins_are_edges(bins):
    return not (isinstance(bins, (int, _np.integer, str)) or bins is None)


def _dim_specs(bins, D):
    """Per dimension of histogramdd: the bins argument for that dimension."""
    if isinstance(bins, (int, _np.integer)) or bins is None:
        return [bins] * D
    try:
        n = len(bins)
    except TypeError:
        return [bins] * D
    if D == 2 and n != 2:                      # histogram2d: one array of edges for both
        return [bins, bins]
    return list(bins)


def _edge_share(edges_g, nb, ac, lo_hi):
    """Cotangent of the data for edges ``linspace(min, max, nb + 1)``: min and max get the
    parts of sum_k g_k edges_k, shared among tied elements."""
    k = _on(_np.arange(nb + 1) / nb, edges_g, dtype=edges_g.dtype)
    g_max = tnp.sum(edges_g * k) + lo_hi
    g_min = tnp.sum(edges_g * (1 - k)) - lo_hi
    mx = ac == tnp.max(ac)
    mn = ac == tnp.min(ac)
    return g_max * (mx / tnp.sum(mx)) + g_min * (mn / tnp.sum(mn))


def _hist_core(samples, specs, rng, density, weights, hist, edges, g_hist, g_edges, which):
    """The histogram family's VJP. ``samples``: one array per dimension (the same shape);
    ``which``: 'weights' or the dimension whose sample coordinates are wanted."""
    D = len(samples)
    eh = [_np.asarray(_host(e), dtype=_np.float64) for e in edges]
    inside = None
    idx = []
    for d in range(D):
        s = _np.asarray(_host(samples[d]), dtype=_np.float64)
        nb = eh[d].shape[0] - 1
        b = _np.searchsorted(eh[d], s, side="right") - 1
        b = _np.where(s == eh[d][-1], nb - 1, b)
        ok = (b >= 0) & (b < nb)
        inside = ok if inside is None else inside & ok
        idx.append(_np.clip(b, 0, nb - 1))
    like = g_hist
    key = tuple(_on(i, like) for i in idx)
    ins = _on(inside, like)
    if which == "weights":
        if not density:
            return g_hist[key] * ins
        w = weights if isinstance(weights, tnp.ndarray) else _on(weights, like)
        total = tnp.sum(w * ins)
        vol = _np.ones(hist.shape)
        for d in range(D):
            vol = vol * _np.diff(eh[d]).reshape((-1,) + (1,) * (D - d - 1))
        inner = tnp.sum(g_hist * hist)
        return (g_hist[key] / _on(vol, like)[key] - inner) * ins / total
    d = which
    spec = specs[d]
    data_edges = (not _bins_are_edges(spec)) and (rng is None or rng[d] is None)
    if not data_edges:
        return _zeros(samples[d], g_hist.dtype)
    ac = _sg(samples[d])
    nb = eh[d].shape[0] - 1
    lo_hi = 0.0
    if density and eh[d][-1] - eh[d][0] > 0 and float(tnp.max(ac) - tnp.min(ac)) > 0:
        # h = c / (S * prod of widths); every width of dimension d is (max - min) / nb
        lo_hi = -tnp.sum(g_hist * hist) / float(eh[d][-1] - eh[d][0])
    ge = g_edges[d] if g_edges is not None and g_edges[d] is not None else \
        tnp.zeros(eh[d].shape, dtype=g_hist.dtype, device=g_hist.device)
    return _edge_share(ge, nb, ac, lo_hi)


def _histogram_rule(which):
    def rule(ans, a, bins=10, range=None, density=None, weights=None):
        def vjp(g):
            gh, ge = g
            return _hist_core([a], [bins], None if range is None else [range], density, weights,
                              ans[0], [ans[1]], gh, [ge], which)
        return vjp
    return rule


defvjp("histogram", _histogram_rule(0), None, None, None, _histogram_rule("weights"),
       weights=_histogram_rule("weights"))


def _histogram_bin_edges_rule(ans, a, bins=10, range=None, weights=None):
    def vjp(g):
        if _bins_are_edges(bins) or range is not None:
            return _zeros(a, g.dtype)
        return _edge_share(g, ans.shape[0] - 1, _sg(a), 0.0)
    return vjp


defvjp("histogram_bin_edges", _histogram_bin_edges_rule)


def _range_list(rng, D):
    """histogram2d/histogramdd's ``range``: None, or one (min, max) or None per dimension."""
    return None if rng is None else list(rng)


def _histogram2d_rule(which):
    def rule(ans, x, y, bins=10, range=None, density=None, weights=None):
        def vjp(g):
            gh, gx, gy = g
            return _hist_core([x, y], _dim_specs(bins, 2), _range_list(range, 2), density,
                              weights, ans[0], [ans[1], ans[2]], gh, [gx, gy], which)
        return vjp
    return rule


defvjp("histogram2d", _histogram2d_rule(0), _histogram2d_rule(1), None, None, None,
       _histogram2d_rule("weights"), weights=_histogram2d_rule("weights"))


def _dd_columns(sample):
    if isinstance(sample, (list, tuple)):
        return list(sample), True
    sc = _sg(sample)
    return [sc[:, d] for d in builtins_range(sample.shape[1])], False


def _dd_edge_cotangents(ge, D):
    # the tape sees histogramdd's edges (a list inside the result tuple) as no output: None
    return list(ge) if isinstance(ge, (list, tuple)) else [None] * D


def _histogramdd_sample(ans, sample, bins=10, range=None, density=None, weights=None):
    def vjp(g):
        gh, ge = g[0], g[1]
        cols, is_list = _dd_columns(sample)
        D = len(cols)
        grads = [_hist_core(cols, _dim_specs(bins, D), _range_list(range, D), density, weights,
                            ans[0], list(ans[1]), gh, _dd_edge_cotangents(ge, D), d)
                 for d in builtins_range(D)]
        if is_list:
            return grads
        shape = tuple(sample.shape)
        total = None
        for d, gd in enumerate(grads):
            t = untake(gd, (slice(None), d), shape)
            total = t if total is None else total + t
        return total
    return vjp


def _histogramdd_weights(ans, sample, bins=10, range=None, density=None, weights=None):
    def vjp(g):
        cols, _ = _dd_columns(sample)
        D = len(cols)
        return _hist_core(cols, _dim_specs(bins, D), _range_list(range, D), density, weights,
                          ans[0], list(ans[1]), g[0], None, "weights")
    return vjp


defvjp("histogramdd", _histogramdd_sample, None, None, None, _histogramdd_weights,
       weights=_histogramdd_weights)
