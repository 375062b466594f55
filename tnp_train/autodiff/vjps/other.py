"""VJPs (and declarations) of tnp's remaining sections: logic, sorting, sets, io, misc, datetime,
bits, polynomial, functional, random.

Conventions (see also :mod:`.linalg`):

* Selections (sort, partition, extract, the set functions, ``random.choice``/``permutation`` of
  a float array) send each cotangent back to the input element it was taken from. The index
  arithmetic runs on integer arrays (not recorded); the differentiable part is a gather
  (``getitem``) and ``where``, so gradients of gradients work.
* Ties: where one output value stands for several equal input elements (``unique``, the set
  functions, a value drawn by ``choice`` from a repeated entry), its cotangent is shared
  equally among them, as math.py does for ties in max/min. The function is not differentiable
  there; this is the gradient for perturbations that keep the ties.
* Samplers of location-scale families get reparameterisation (pathwise) gradients: the draw is
  ``loc + scale * eps`` with ``eps`` recovered from the result, so a finite-difference check
  must draw both perturbed samples with the same seed.
"""
from __future__ import annotations

import numpy as _np

import tnp

from ..registry import defvjp, defvjp_argnum, no_array_output, nondifferentiable, section
from ..tape import stop_gradient
from ._helpers import _const, _is_complex, _match, _real_dtype, vjp_of, with_keywords
from .indexing import untake

_INT = "integer output"
_BOOL = "boolean output"


def _sg(x):
    """The values of ``x`` as an untracked tnp array (for index arithmetic)."""
    return stop_gradient(x) if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _zeros_like(x):
    return tnp.zeros(_np.shape(x), dtype=_real_dtype(x) if not _is_complex(x) else x.dtype,
                     device=x.device if isinstance(x, tnp.ndarray) else None)


def _arange(n, like):
    return tnp.arange(n, device=like.device) if isinstance(like, tnp.ndarray) else tnp.arange(n)


def _gather_along(g, idx, axis):
    """``take_along_axis(g, idx, axis)`` written as one ``getitem`` (``idx`` has g's shape)."""
    nd = g.ndim
    key = []
    for i in range(nd):
        if i == axis:
            key.append(idx)
        else:
            shape = [1] * nd
            shape[i] = g.shape[i]
            key.append(tnp.reshape(_arange(g.shape[i], g), shape))
    return g[tuple(key)]


# ============================================================================ logic
section("logic")
nondifferentiable(["isfinite", "isinf", "isnan", "isnat", "isneginf", "isposinf", "iscomplex",
                   "isreal", "isclose", "logical_and", "logical_or", "logical_not", "logical_xor",
                   "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "all",
                   "any"], _BOOL)
no_array_output(["iscomplexobj", "isrealobj", "isfortran", "isscalar", "allclose", "array_equal",
                 "array_equiv"], "returns a Python bool")


# ============================================================================ sorting
section("sorting")


def _permutation_back(g, a, ans, axis):
    """Cotangent of ``a`` for ``ans``, a permutation of ``a`` along ``axis`` (None: flattened):
    matching the stable sort orders of both pairs each output position with its source."""
    a0, y0 = _sg(a), _sg(ans)
    if axis is None:
        a0 = tnp.reshape(a0, (-1,))
        ax = 0
    else:
        ax = axis % a0.ndim
    sa = tnp.argsort(a0, axis=ax, kind="stable")
    sb = tnp.argsort(y0, axis=ax, kind="stable")
    q = tnp.take_along_axis(sb, tnp.argsort(sa, axis=ax, kind="stable"), axis=ax)
    if axis is None:
        return g[tnp.reshape(q, _np.shape(a))]
    return _gather_along(g, q, ax)


def _sort_vjp(ans, a, axis=-1, kind=None, order=None, **k):
    return lambda g: _match(_permutation_back(g, a, ans, axis), a)


def _partition_vjp(ans, a, kth, axis=-1, kind="introselect", order=None):
    return lambda g: _match(_permutation_back(g, a, ans, axis), a)


def _sort_complex_vjp(ans, a):
    return lambda g: _match(_permutation_back(g, a, ans, -1), a)


defvjp("sort", _sort_vjp)
defvjp("partition", _partition_vjp)
defvjp("sort_complex", _sort_complex_vjp)


def _extract_vjp(ans, condition, arr):
    def vjp(g):
        shape = _np.shape(arr)
        mask = tnp.reshape(_sg(condition) != 0, shape)
        if g.size == 0:
            return _zeros_like(arr)
        pos = tnp.cumsum(tnp.reshape(mask, (-1,))) - 1
        pos = tnp.reshape(tnp.clip(pos, 0, None), shape)
        return tnp.where(mask, g[pos], 0.0)
    return vjp


defvjp("extract", None, _extract_vjp)


def _where_x(ans, condition, x=None, y=None):
    return lambda g: tnp.where(condition, g, 0.0)


def _where_y(ans, condition, x=None, y=None):
    return lambda g: tnp.where(condition, 0.0, g)


# where(condition) (one argument) returns indices: its rule is never asked for x or y
defvjp("where", None, _where_x, _where_y)
nondifferentiable(["argsort", "argpartition", "lexsort", "argmax", "argmin", "nanargmax",
                   "nanargmin", "argwhere", "nonzero", "flatnonzero", "searchsorted",
                   "count_nonzero"], _INT + " (indices or counts)")


# ============================================================================ sets
section("sets")


def _match_values(u, x):
    """For each element of ``x``: whether it equals an element of the 1-d ``u`` (unique values,
    any order), and that element's index."""
    u0, x0 = tnp.reshape(_sg(u), (-1,)), _sg(x)
    order = tnp.argsort(u0, kind="stable")
    su = u0[order]
    pos = tnp.clip(tnp.searchsorted(su, x0), 0, su.shape[0] - 1)
    return su[pos] == x0, order[pos]


def _selection_back(gu, u, sources, x):
    """Cotangent of ``x`` (one of ``sources``) when the values ``u`` were selected from the
    sources: each value's cotangent is shared among the source elements equal to it."""
    if _np.size(u) == 0:
        return _zeros_like(x)
    n = _np.size(u)
    counts = None
    mine = None
    for s in sources:
        if s is None:
            continue
        hit, k = _match_values(u, s)
        c = tnp.bincount(tnp.reshape(k[hit], (-1,)), minlength=n)
        counts = c if counts is None else counts + c
        if s is x:
            mine = (hit, k)
    hit, k = mine
    w = 1.0 / tnp.maximum(counts, 1).astype(_real_dtype(gu))
    return tnp.where(hit, gu[k] * w[k], 0.0)


def _first(g):
    return g[0] if isinstance(g, (tuple, list)) else g


def _unique_vjp(ans, ar, return_index=False, return_inverse=False, return_counts=False,
                axis=None, *, equal_nan=True, **kw):
    def vjp(g):
        gv = _first(g)
        a0 = _sg(ar)
        _, inv, cnt = tnp.unique(a0, return_inverse=True, return_counts=True, axis=axis,
                                 equal_nan=equal_nan, **kw)
        inv = tnp.reshape(inv, (-1,))
        w = 1.0 / cnt.astype(_real_dtype(gv))
        if axis is None:
            idx = tnp.reshape(inv, _np.shape(ar))
            return gv[idx] * w[idx]
        ax = axis % a0.ndim
        shape = [1] * a0.ndim
        shape[ax] = inv.shape[0]
        return gv[(slice(None),) * ax + (inv,)] * tnp.reshape(w[inv], shape)
    return vjp


def _unique_api_vjp(ans, x):
    return lambda g: _selection_back(_first(g), _first(ans), [x], x)


defvjp("unique", _unique_vjp)
defvjp(["unique_all", "unique_counts", "unique_inverse", "unique_values"], _unique_api_vjp)


def _set_rule(i):
    def rule(ans, ar1, ar2, *args, **kwargs):
        def vjp(g):
            srcs = [ar1, ar2]
            return _selection_back(_first(g), _first(ans), srcs, srcs[i])
        return vjp
    return rule


for _n in ("intersect1d", "setdiff1d", "setxor1d", "union1d"):
    defvjp(_n, _set_rule(0), _set_rule(1))
nondifferentiable("isin", _BOOL)


# ============================================================================ io, misc, datetime, bits
section("io")
no_array_output(["save", "savez", "savez_compressed", "savetxt"], "writes a file and returns None")
no_array_output(["array2string", "array_repr", "array_str", "format_float_positional",
                 "format_float_scientific", "binary_repr", "base_repr"], "returns a string")
nondifferentiable(["load", "loadtxt", "genfromtxt", "fromregex"],
                  "reads arrays from a file: no differentiable input")

section("misc")
no_array_output(["can_cast", "issubdtype", "isdtype", "iterable", "shares_memory",
                 "may_share_memory"], "returns a Python bool")
no_array_output(["promote_types", "min_scalar_type", "result_type", "common_type"],
                "returns a dtype (or scalar type)")
no_array_output(["typename", "mintypecode", "get_include"], "returns a string")
no_array_output(["datetime_data"], "returns a (unit, count) tuple")
no_array_output(["geterr", "seterr", "geterrcall", "seterrcall", "getbufsize", "setbufsize"],
                "reads or sets floating-point error handling / buffer settings")
no_array_output(["show_config", "show_runtime", "info"], "prints information and returns None")
no_array_output(["frompyfunc"], "returns a ufunc object (its calls run a Python function on the "
                                "host: see tnp.vectorize)")

section("datetime")
nondifferentiable("busday_count", _INT + " (day counts)")
nondifferentiable("busday_offset", "datetime64 output")
nondifferentiable("is_busday", _BOOL)
no_array_output("datetime_as_string", "returns strings (a str-dtype array), not numbers")

section("bits")
nondifferentiable(["packbits", "unpackbits"], _INT + " (uint8 bits)")


# ============================================================================ polynomial
section("polynomial")


def _powers(n, like):
    return _const(_np.arange(n - 1, -1, -1, dtype=float), like)


def _polyval_p(ans, p, x):
    def vjp(g):
        n = _np.shape(p)[0]
        xx = x if isinstance(x, tnp.ndarray) else tnp.asarray(x)
        V = tnp.power(xx[..., None], _powers(n, g))
        return _match(tnp.tensordot(g, V, axes=g.ndim), p)
    return vjp


def _polyval_x(ans, p, x):
    def vjp(g):
        if _np.shape(p)[0] <= 1:
            return _zeros_like(x)
        pp = p if isinstance(p, tnp.ndarray) else tnp.asarray(p)
        return g * tnp.polyval(tnp.polyder(pp), x)
    return vjp


defvjp("polyval", _polyval_p, _polyval_x)


def _tail(g, a, sign=1.0):
    n = max(_np.size(a), 1)
    r = g[g.shape[0] - n:]
    return -r if sign < 0 else r


defvjp("polyadd", lambda ans, a1, a2: lambda g: _tail(g, a1),
       lambda ans, a1, a2: lambda g: _tail(g, a2))
defvjp("polysub", lambda ans, a1, a2: lambda g: _tail(g, a1),
       lambda ans, a1, a2: lambda g: _tail(g, a2, -1.0))


def _polymul_rule(k):
    def rule(ans, a1, a2):
        def vjp(g):
            n1, n2 = max(_np.size(a1), 1), max(_np.size(a2), 1)
            idx = tnp.asarray(_np.arange(n1)[:, None] + _np.arange(n2)[None, :])
            if isinstance(g, tnp.ndarray):
                idx = tnp.asarray(idx, device=g.device)
            gm = g[idx]                       # gm[i, j] = g[i + j]
            other = a2 if k == 0 else a1
            other = other if isinstance(other, tnp.ndarray) else tnp.asarray(other)
            other = tnp.reshape(other, (-1,)) if other.ndim != 1 else other
            r = tnp.einsum("ij,j->i", gm, other) if k == 0 else tnp.einsum("ij,i->j", gm, other)
            return _match(r, (a1, a2)[k])
        return vjp
    return rule


defvjp("polymul", _polymul_rule(0), _polymul_rule(1))


def _linear_vjp(fn, n, g, like):
    """VJP of a linear map of length-``n`` vectors given by the NumPy function ``fn`` (its
    matrix is read off the unit vectors)."""
    cols = [_np.asarray(fn(_np.eye(n)[i]), dtype=float) for i in range(n)]
    if g.shape[0] == 0 or any(c.shape != (g.shape[0],) for c in cols):
        return _zeros_like(like)
    J = _const(_np.stack(cols, axis=1), g)      # (len(ans), n)
    return _match(tnp.einsum("j,ji->i", g, J), like)


def _polyder_vjp(ans, p, m=1):
    return lambda g: _linear_vjp(lambda e: _np.polyder(e, m), _np.shape(p)[0], g, p)


def _polyint_p(ans, p, m=1, k=None):
    return lambda g: _linear_vjp(lambda e: _np.polyint(e, m, k=0), _np.shape(p)[0], g, p)


def _polyint_k(ans, p, m=1, k=None):
    def vjp(g):
        n = _np.shape(p)[0]
        kk = _np.atleast_1d(_np.asarray(k, dtype=float))
        if kk.size == 1:
            J = _np.asarray(_np.polyint(_np.zeros(n), m, k=1.0))[:, None]
            r = tnp.einsum("j,ji->i", g, _const(J, g))
            return _match(tnp.reshape(r, _np.shape(k)), k)
        return _linear_vjp(lambda e: _np.polyint(_np.zeros(n), m, k=e), kk.size, g, k)
    return vjp


defvjp("polyder", _polyder_vjp)
defvjp("polyint", _polyint_p, None, _polyint_k, k=_polyint_k)


def _polydiv_forward(u, v, nr):
    """q, r of polydiv(u, v) in tnp operations; ``nr``: the length NumPy's remainder has."""
    u = u if isinstance(u, tnp.ndarray) else tnp.asarray(u, dtype=float)
    v = v if isinstance(v, tnp.ndarray) else tnp.asarray(v, dtype=float)
    n, m = u.shape[0], v.shape[0]
    k = n - m + 1
    if k <= 0:
        return [None, u[n - nr:]]
    i = _np.arange(n)[:, None] - _np.arange(k)[None, :]
    inside = (i >= 0) & (i < m)
    idx = tnp.asarray(_np.clip(i, 0, m - 1), device=u.device)
    C = tnp.where(tnp.asarray(inside, device=u.device), v[idx], 0.0)   # C[i, j] = v[i - j]
    q = tnp.linalg.solve(C[:k], u[:k])
    r = u - tnp.matmul(C, q)
    return [q, r[n - nr:]]


def _polydiv_rule(i):
    def rule(ans, u, v):
        def vjp(g):
            nr = ans[1].shape[0]
            return vjp_of(lambda a, b: _polydiv_forward(a, b, nr), (u, v), [i], list(g))[0]
        return vjp
    return rule


defvjp("polydiv", _polydiv_rule(0), _polydiv_rule(1))


def _polyfit_forward(x, y, w, deg, rcond, full, cov, has_res):
    order = int(deg) + 1
    x = x if isinstance(x, tnp.ndarray) else tnp.asarray(x, dtype=float)
    y = y if isinstance(y, tnp.ndarray) else tnp.asarray(y, dtype=float)
    if rcond is None:
        rcond = x.shape[0] * _np.finfo(_real_dtype(x)).eps
    lhs = tnp.power(x[:, None], _powers(order, x)[None, :])
    rhs = y
    if w is not None:
        w = w if isinstance(w, tnp.ndarray) else tnp.asarray(w, dtype=float)
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    scale = tnp.sqrt(tnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    cs = tnp.matmul(tnp.linalg.pinv(lhs, rcond=rcond), rhs)
    c = cs / (scale[:, None] if cs.ndim == 2 else scale)
    if not full and not cov:
        return [c]
    resids = None
    if has_res:
        r = rhs - tnp.matmul(lhs, cs)
        resids = tnp.sum(r * r, axis=0)
        if resids.ndim == 0:
            resids = resids[None]
    if full:
        return [c, resids, None, tnp.linalg.svdvals(lhs), None]
    vbase = tnp.linalg.inv(tnp.matmul(tnp.linalg.matrix_transpose(lhs), lhs))
    vbase = vbase / (scale[:, None] * scale[None, :])
    if cov == "unscaled":
        fac = 1.0
    else:
        fac = resids / (x.shape[0] - order)
    if y.ndim == 1:
        return [c, vbase * fac]
    return [c, vbase[:, :, None] * fac]


def _polyfit_rule(which):
    def rule(ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
        def vjp(g):
            gs = list(g) if isinstance(g, (tuple, list)) else [g]
            if full:
                has_res = _np.size(ans[1]) > 0
            elif cov:
                has_res = cov != "unscaled"
            else:
                has_res = False

            def fwd(a, b, c):
                return _polyfit_forward(a, b, c, deg, rcond, full, cov, has_res)
            return vjp_of(fwd, (x, y, w), [which], gs)[0]
        return vjp
    return rule


defvjp("polyfit", _polyfit_rule(0), _polyfit_rule(1), None, None, None, _polyfit_rule(2),
       w=_polyfit_rule(2))


def _poly_forward(r):
    r = r if isinstance(r, tnp.ndarray) else tnp.asarray(r)
    if r.ndim == 2:     # the characteristic polynomial (Faddeev-LeVerrier)
        n = r.shape[0]
        eye = _const(_np.eye(n), r)
        c = _const(_np.eye(n + 1)[0], r)
        M = eye
        for k in range(1, n + 1):
            AM = tnp.matmul(r, M)
            ck = -tnp.trace(AM) / k
            c = c + ck * _const(_np.eye(n + 1)[k], r)
            M = AM + ck * eye
        return c
    c = _const(_np.ones(1), r)
    for i in range(r.shape[0]):
        k = c.shape[0]
        c = (tnp.matmul(_const(_np.eye(k + 1, k), r), c)
             - r[i] * tnp.matmul(_const(_np.eye(k + 1, k, -1), r), c))
    return c


def _poly_vjp(ans, seq_of_zeros):
    def vjp(g):
        return _match(vjp_of(_poly_forward, (seq_of_zeros,), [0], g)[0], seq_of_zeros)
    return vjp


defvjp("poly", _poly_vjp)


def _roots_vjp(ans, p):
    # a simple root z of p moves by dz = -(sum_k dp_k z^(N-1-k)) / p'(z)
    def vjp(g):
        n = _np.shape(p)[0]
        if _np.size(ans) == 0 or n <= 1:
            return _zeros_like(p)
        dp = tnp.polyval(tnp.polyder(p), ans)
        V = tnp.power(ans[:, None], _powers(n, g)[None, :])
        return _match(-tnp.einsum("i,ik->k", g / dp, V), p)
    return vjp


defvjp("roots", _roots_vjp)


# ============================================================================ functional
section("functional")


def _opaque(name):
    def rule(ans, *args, **kwargs):
        raise LookupError(
            f"No gradient for tnp.{name}: it runs a Python callable on NumPy values, which the "
            f"tape cannot see into. Write the computation with vectorised tnp operations (or "
            f"give it a rule with tnp_train.autodiff.custom_gradient).")
    return rule


def _piecewise_rule(ans, x, condlist, funclist, *args, **kw):
    if any(callable(f) for f in funclist):
        return _opaque("piecewise (with callables)")(ans)
    return lambda g: _zeros_like(x)     # constants on each piece: zero almost everywhere


def _declare_opaque(name, keywords, first=None):
    r = _opaque(name)
    rules = [r] * 16
    if first is not None:
        rules[0] = first
    defvjp(name, *rules, **{k: r for k in keywords})


_declare_opaque("apply_along_axis", ("func1d", "axis", "arr"))
_declare_opaque("apply_over_axes", ("func", "a", "axes"))
_declare_opaque("piecewise", ("condlist", "funclist"), first=_piecewise_rule)
_declare_opaque("vectorize", ())   # not in tnp.REGISTRY: what tnp.vectorize objects record


# ============================================================================ random
section("random")


def _loc(ans, loc=0.0, scale=1.0, size=None, **k):
    return lambda g: g


def _scale(ans, loc=0.0, scale=1.0, size=None, **k):
    return lambda g: g * (ans - loc) / scale


def _low(ans, low=0.0, high=1.0, size=None, **k):
    return lambda g: g * (1.0 - (ans - low) / (high - low))


def _high(ans, low=0.0, high=1.0, size=None, **k):
    return lambda g: g * (ans - low) / (high - low)


def _scale_only(ans, scale=1.0, size=None, **k):
    return lambda g: g * ans / scale


def _lognormal_mean(ans, mean=0.0, sigma=1.0, size=None, **k):
    return lambda g: g * ans


def _lognormal_sigma(ans, mean=0.0, sigma=1.0, size=None, **k):
    return lambda g: g * ans * (tnp.log(ans) - mean) / sigma


def _safe(d):
    return tnp.where(d == 0, 1.0, d)


def _triangular(which):
    # x = left + sqrt(U (right-left)(mode-left))       where x <= mode
    #   = right - sqrt((1-U) (right-left)(right-mode)) elsewhere, U held fixed
    def rule(ans, left, mode, right, size=None, **k):
        def vjp(g):
            lower = _sg(ans) <= _sg(mode)
            span = _safe(right - left)
            s = ans - left
            t = right - ans
            ml = _safe(mode - left)
            rm = _safe(right - mode)
            if which == 0:
                d1, d2 = 1.0 - 0.5 * s * (1.0 / span + 1.0 / ml), 0.5 * t / span
            elif which == 1:
                d1, d2 = 0.5 * s / ml, 0.5 * t / rm
            else:
                d1, d2 = 0.5 * s / span, 1.0 - 0.5 * t * (1.0 / span + 1.0 / rm)
            return g * tnp.where(lower, d1, d2)
        return vjp
    return rule


def _gamma_scale(ans, shape, scale=1.0, size=None, **k):
    return lambda g: g * ans / scale


def _vonmises_mu(ans, mu, kappa, size=None, **k):
    # mu + (a draw that does not depend on mu), wrapped to [-pi, pi]; kappa < 1e-8 draws a
    # uniform angle that ignores mu
    return lambda g: tnp.where(_sg(kappa) < 1e-8, 0.0, g)


def _mvn_mean(ans, mean, cov, size=None, *args, **k):
    return lambda g: g


def _mvn_cov(ans, mean, cov, size=None, *args, **k):
    # NumPy draws x = z @ (sqrt(s)[:, None] * vh) + mean with (u, s, vh) = svd(cov)
    def vjp(g):
        _, s0, vh0 = tnp.linalg.svd(_sg(cov))
        a0 = tnp.sqrt(s0)[:, None] * vh0
        z = tnp.linalg.matrix_transpose(
            tnp.linalg.solve(tnp.linalg.matrix_transpose(a0),
                             tnp.linalg.matrix_transpose(tnp.reshape(_sg(ans) - _sg(mean),
                                                                     (-1, a0.shape[0])))))
        z = tnp.reshape(z, _np.shape(ans))

        def fwd(c):
            _, s, vh = tnp.linalg.svd(c)
            return tnp.matmul(z, tnp.sqrt(s)[:, None] * vh)
        return vjp_of(fwd, (cov,), [0], g)[0]
    return vjp


def _selection_drawn(ans, a, *args, **k):
    """choice/permutation of a float array: a value drawn k times receives its k cotangents,
    shared among the elements of ``a`` equal to it."""
    def vjp(g):
        if not isinstance(a, tnp.ndarray) or a.ndim == 0:
            return None   # choice(5): the population is arange(5), not an array to differentiate
        u = tnp.unique(_sg(a))
        _, k = _match_values(u, _sg(ans))
        return _selection_back(untake(g, k, u.shape), u, [a], a)
    return vjp


def _permutation_rule(ans, x, *args, **k):
    return _selection_drawn(ans, x)


_LOC_SCALE = ("normal", "laplace", "logistic", "gumbel")
_PREFIXES = ("random.", "random.Generator.", "random.RandomState.")
for _p in _PREFIXES:
    for _n in _LOC_SCALE:
        defvjp(_p + _n, _loc, _scale, loc=_loc, scale=_scale)
    defvjp(_p + "uniform", _low, _high, low=_low, high=_high)
    defvjp([_p + "exponential", _p + "rayleigh"], _scale_only, scale=_scale_only)
    defvjp(_p + "lognormal", _lognormal_mean, _lognormal_sigma, mean=_lognormal_mean,
           sigma=_lognormal_sigma)
    defvjp(_p + "triangular", _triangular(0), _triangular(1), _triangular(2),
           left=_triangular(0), mode=_triangular(1), right=_triangular(2))
    defvjp(_p + "gamma", None, _gamma_scale, scale=_gamma_scale)
    defvjp(_p + "vonmises", _vonmises_mu, None, mu=_vonmises_mu)
    defvjp(_p + "choice", _selection_drawn, a=_selection_drawn)
    defvjp(_p + "permutation", _permutation_rule, x=_permutation_rule)
for _p in ("random.", "random.RandomState."):
    defvjp(_p + "multivariate_normal", _mvn_mean, _mvn_cov, mean=_mvn_mean, cov=_mvn_cov)

nondifferentiable(["random." + n for n in (
    "binomial", "poisson", "randint", "random_integers", "geometric", "hypergeometric",
    "negative_binomial", "zipf", "logseries", "multinomial")], _INT + " (counts or integers)")
nondifferentiable(["random." + n for n in (
    "rand", "randn", "random", "random_sample", "ranf", "sample", "standard_normal",
    "standard_cauchy", "standard_exponential")],
    "no floating-point parameter: the draw depends only on the shape and the generator state")


def _no_pathwise_gradient(name):
    """The rule of a sampler whose draw depends on a shape parameter: such a draw has a
    non-zero derivative (so it may not be declared non-differentiable), but no pathwise
    gradient is implemented; a gradient that would flow through it stops with a clear error
    instead of silently being None."""
    def rule(ans, *args, **kwargs):
        def vjp(g):
            raise LookupError(
                f"No gradient for tnp.{name} with respect to its shape parameter(s): the draw "
                f"has no pathwise (reparameterised) gradient in tnp_train. Pass the parameter "
                f"through tt.stop_gradient to treat the draw as a constant, or use a "
                f"location-scale sampler (normal, uniform, laplace, logistic, gumbel, ...).")
        return vjp
    return rule


_SHAPE_SAMPLERS = ("beta", "chisquare", "dirichlet", "f", "noncentral_chisquare", "noncentral_f",
                   "pareto", "power", "standard_gamma", "standard_t", "wald", "weibull")
for _p in ("random.", "random.RandomState.", "random.Generator."):
    for _n in _SHAPE_SAMPLERS:
        _r = _no_pathwise_gradient(_p + _n)
        defvjp_argnum(_p + _n, lambda i, ans, *a, _r=_r, **k: _r(ans, *a, **k))
    _gamma_shape = _no_pathwise_gradient(_p + "gamma")
    defvjp(_p + "gamma", _gamma_shape, _gamma_scale, shape=_gamma_shape, scale=_gamma_scale)
no_array_output(["random.seed", "random.get_state", "random.set_state", "random.default_rng",
                 "random.get_bit_generator", "random.set_bit_generator"],
                "reads or sets the generator state")
no_array_output("random.bytes", "returns Python bytes")
no_array_output("random.shuffle", "shuffles in place and returns None (the tape refuses "
                                  "in-place writes into arrays it tracks)")

with_keywords({"logic", "sorting", "sets", "io", "misc", "datetime", "bits", "polynomial",
               "functional", "random"})
