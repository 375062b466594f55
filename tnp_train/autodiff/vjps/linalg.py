"""VJPs of tnp's linalg functions: the products (dot, einsum, tensordot, kron, ...) and
``tnp.linalg``.

Conventions (shared with :mod:`.fft` and :mod:`.other`):

* Complex numbers follow HIPS autograd's convention: for a real loss ``L`` of a complex ``z``
  the cotangent is ``dL/dRe z - 1j dL/dIm z``, so a holomorphic ``f`` has the VJP
  ``g * f'(z)`` (no conjugation: matrix rules use plain transposes) and a real input gets the
  real part. The decompositions that are not holomorphic (cholesky, eigh, svd, qr, pinv) are
  implemented for real inputs; a complex input raises NotImplementedError at gradient time.
* Products are reduced to einsum: the cotangent of one operand is an einsum of the output
  cotangent with the other operands (:func:`einsum_cotangent`), so their gradients of
  gradients are einsums again.
* A few rules differentiate a tnp re-statement of the function (``cond``, ``lstsq``,
  ``matrix_power``, ``multi_dot``, ``tensorinv``, ``tensorsolve``) with a nested tape
  (:func:`._helpers.vjp_of`); the re-statement is made of operations that have rules, so higher orders
  work.
* Decompositions need distinct eigenvalues / singular values (eigh, eig, svd) and full rank
  (svd, qr, pinv, lstsq); at repeated values the gradient is not defined and comes out inf/nan.
  eigh/eigvalsh/cholesky read one triangle of a symmetric input: their gradient is the
  symmetric one (differentiate ``f((A + A.T) / 2)`` to compare with finite differences).
* eig/eigvals: any square matrix with distinct eigenvalues; eigenvectors are unit-length as
  NumPy's are. A complex eigenvector's phase is arbitrary, so only phase-invariant functions of
  complex eigenvectors have a gradient; the tests cover real matrices with real eigenvalues
  (values and vectors) and eigenvalues of complex matrices.
* svd with ``full_matrices=True`` has a rule for square matrices only (the extra singular
  vectors of a rectangular one are arbitrary); qr likewise for ``mode='complete'`` of a tall
  matrix; ``mode='raw'`` has none. Sign/phase choices of singular vectors and of Q follow
  LAPACK, which is continuous under small perturbations away from repeated values.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import is_inexact

from ..registry import defvjp, defvjp_argnum, get_rule, no_array_output, nondifferentiable, section
from ..tape import stop_gradient
from ._helpers import (_const, _einsum_labels, _is_complex, _match, _real_dtype, vjp_of,
                       with_keywords)

section("linalg")

_inf = float("inf")


# ============================================================================ small helpers
def _T(x):
    return tnp.linalg.matrix_transpose(x)


def _eye(n, like):
    return _const(_np.eye(n), like)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with ``v`` on the diagonal."""
    return v[..., :, None] * _eye(v.shape[-1], v)


def _diag(x):
    return tnp.einsum("...ii->...i", x)


def _no_complex(name, *xs):
    for x in xs:
        if isinstance(x, tnp.ndarray) and _is_complex(x):
            raise NotImplementedError(f"tnp_train: the gradient of tnp.{name} is implemented for "
                                      f"real inputs only (got {x.dtype})")


def _int_label(i):
    if 0 <= i < 26:
        return chr(ord("A") + i)
    if 26 <= i < 52:
        return chr(ord("a") + i - 26)
    raise ValueError(f"einsum: subscript {i} out of range")


def _term(t):
    out = []
    i = 0
    while i < len(t):
        if t.startswith("...", i):
            out.append(Ellipsis)
            i += 3
        else:
            out.append(t[i])
            i += 1
    return out


def parse_einsum(args):
    """``(input label lists, output label list, operand positions)`` of an einsum call (string
    or interleaved form); ellipses become labels of their own, right-aligned over operands."""
    if isinstance(args[0], str):
        subs = args[0].replace(" ", "")
        ops = list(args[1:])
        positions = list(range(1, len(args)))
        if "->" in subs:
            ins_s, out_s = subs.split("->")
            out = _term(out_s)
        else:
            ins_s, out = subs, None
        ins = [_term(t) for t in ins_s.split(",")]
    else:
        n = len(args) // 2
        ops = [args[2 * i] for i in range(n)]
        positions = [2 * i for i in range(n)]
        ins = [[Ellipsis if e is Ellipsis else _int_label(int(e)) for e in args[2 * i + 1]]
               for i in range(n)]
        out = ([Ellipsis if e is Ellipsis else _int_label(int(e)) for e in args[2 * n]]
               if len(args) % 2 else None)
    nds = [_np.ndim(o) for o in ops]
    n_ell = [nd - (len(t) - 1) if Ellipsis in t else 0 for t, nd in zip(ins, nds)]
    m = max(n_ell) if n_ell else 0
    ell = [("...", i) for i in range(m)]
    exp_ins = []
    for t, e in zip(ins, n_ell):
        lab = []
        for c in t:
            if c is Ellipsis:
                lab.extend(ell[m - e:])
            else:
                lab.append(c)
        exp_ins.append(lab)
    if out is None:
        counts = {}
        for t in ins:
            for c in t:
                if c is not Ellipsis:
                    counts[c] = counts.get(c, 0) + 1
        exp_out = list(ell) + sorted(c for c, k in counts.items() if k == 1)
    else:
        exp_out = []
        for c in out:
            if c is Ellipsis:
                exp_out.extend(ell)
            else:
                exp_out.append(c)
    return exp_ins, exp_out, ops, positions


def einsum_cotangent(g, ins, out, ops, k):
    """The cotangent of operand ``k`` of ``einsum(ins -> out)(*ops)`` for the output cotangent
    ``g``: one einsum of ``g`` with the other operands, with constant ones/identity operands for
    labels summed only over this operand, broadcast dimensions and repeated labels (diagonals).
    Labels are any hashables."""
    shapes = [tuple(_np.shape(o)) for o in ops]
    full = {}
    others = [j for j in range(len(ops)) if j != k]
    for labs, shp in [(out, tuple(g.shape))] + [(ins[j], shapes[j]) for j in others]:
        for lab, s in zip(labs, shp):
            full[lab] = max(full.get(lab, 1), s)
    terms = [(g, list(out))] + [(ops[j], list(ins[j])) for j in others]
    fresh = [0]

    def new():
        fresh[0] += 1
        return ("fresh", fresh[0])

    first = {}
    res = []
    for lab, s in zip(ins[k], shapes[k]):
        if lab in first:                       # a repeated label: the cotangent is diagonal
            f = new()
            terms.append((_const(_np.eye(s), g), [first[lab], f]))
            res.append(f)
            continue
        if lab not in full:                    # summed over this operand only: broadcast g
            terms.append((_const(_np.ones(s), g), [lab]))
            use = lab
        elif s == 1 and full[lab] > 1:         # broadcast in the forward: sum it here
            use = new()
            terms.append((_const(_np.ones(1), g), [use]))
        elif s > 1 and full[lab] == 1:         # the others were broadcast along it
            terms.append((_const(_np.ones(s), g), [lab]))
            use = lab
        else:
            use = lab
        first[lab] = use
        res.append(use)
    arrays = [a if isinstance(a, tnp.ndarray) else tnp.asarray(a) for a, _ in terms]
    return _einsum_labels(arrays, [labs for _, labs in terms], res)


def _einsum_rule(argnum, ans, *args, **kwargs):
    ins, out, ops, positions = parse_einsum(args)
    if argnum not in positions:
        return lambda g: None
    k = positions.index(argnum)
    return lambda g: _match(einsum_cotangent(g, ins, out, ops, k), ops[k])


defvjp_argnum("einsum", _einsum_rule)
no_array_output("einsum_path", "returns the contraction order (a list) and a report string")


def _product_rules(labels_fn):
    """Rules for a two-operand product given ``labels_fn(a, b, *args, **kw) -> (ins, out)``."""
    def make(k):
        def rule(ans, a, b, *args, **kw):
            ins, out = labels_fn(a, b, *args, **kw)
            ops = [a, b]
            return lambda g: _match(einsum_cotangent(g, ins, out, ops, k), ops[k])
        return rule
    return make(0), make(1)


def _dot_labels(a, b, *args, **kw):
    na, nb = _np.ndim(a), _np.ndim(b)
    A = [("a", i) for i in range(na)]
    B = [("b", i) for i in range(nb)]
    if na == 0 or nb == 0:
        return [A, B], A + B
    if nb == 1:
        A[-1] = B[0] = "k"
        return [A, B], A[:-1]
    A[-1] = B[-2] = "k"
    return [A, B], A[:-1] + B[:-2] + B[-1:]


def _inner_labels(a, b, *args, **kw):
    na, nb = _np.ndim(a), _np.ndim(b)
    A = [("a", i) for i in range(na)]
    B = [("b", i) for i in range(nb)]
    if na == 0 or nb == 0:
        return [A, B], A + B
    A[-1] = B[-1] = "k"
    return [A, B], A[:-1] + B[:-1]


def _tensordot_labels(a, b, axes=2, **kw):
    na, nb = _np.ndim(a), _np.ndim(b)
    A = [("a", i) for i in range(na)]
    B = [("b", i) for i in range(nb)]
    if isinstance(axes, (int, _np.integer)):
        axes = int(axes)
        ax_a = list(range(na - axes, na))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, _np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, _np.integer)) else list(ax_b)
    ax_a = [int(i) % na for i in ax_a]
    ax_b = [int(i) % nb for i in ax_b]
    for j, (i, k) in enumerate(zip(ax_a, ax_b)):
        A[i] = B[k] = ("k", j)
    out = [A[i] for i in range(na) if i not in ax_a] + [B[i] for i in range(nb) if i not in ax_b]
    return [A, B], out


def _linalg_tensordot_labels(x1, x2, axes=2, **kw):
    return _tensordot_labels(x1, x2, axes)


def _outer1_labels(a, b, *args, **kw):
    return [["i"], ["j"]], ["i", "j"]


defvjp("dot", *_product_rules(_dot_labels))
defvjp("inner", *_product_rules(_inner_labels))
defvjp("tensordot", *_product_rules(_tensordot_labels))
defvjp("linalg.tensordot", *_product_rules(_linalg_tensordot_labels))
defvjp("linalg.outer", *_product_rules(_outer1_labels))


def _outer_rule(k):
    def rule(ans, a, b, *args, **kw):
        def vjp(g):
            other = b if k == 0 else a
            mine = a if k == 0 else b
            o = tnp.reshape(other, (-1,)) if isinstance(other, tnp.ndarray) else _np.ravel(other)
            sub = "ij,j->i" if k == 0 else "ij,i->j"
            r = tnp.einsum(sub, g, o if isinstance(o, tnp.ndarray) else tnp.asarray(o))
            return _match(tnp.reshape(r, _np.shape(mine)), mine)
        return vjp
    return rule


defvjp("outer", _outer_rule(0), _outer_rule(1))


def _vdot_rule(k):
    def rule(ans, a, b, *args, **kw):
        def vjp(g):
            if k == 0:   # vdot(a, b) = sum(conj(a) * b): conjugate-linear in a
                r = g * tnp.reshape(b, _np.shape(a)) if _np.shape(a) != _np.shape(b) else g * b
                r = tnp.conjugate(r) if _is_complex(r) else r
                return _match(r, a)
            ca = tnp.conjugate(a) if _is_complex(a) else a
            r = g * (tnp.reshape(ca, _np.shape(b)) if _np.shape(a) != _np.shape(b) else ca)
            return _match(r, b)
        return vjp
    return rule


defvjp("vdot", _vdot_rule(0), _vdot_rule(1))


def _kron_rule(k):
    def rule(ans, a, b, *args, **kw):
        def vjp(g):
            na, nb = _np.ndim(a), _np.ndim(b)
            nd = max(na, nb)
            sa = (1,) * (nd - na) + tuple(_np.shape(a))
            sb = (1,) * (nd - nb) + tuple(_np.shape(b))
            inter = []
            for x, y in zip(sa, sb):
                inter += [x, y]
            gr = tnp.reshape(g, tuple(inter))
            A = [("a", i) for i in range(nd)]
            B = [("b", i) for i in range(nd)]
            glab = [lab for pair in zip(A, B) for lab in pair]
            ins = [A[nd - na:], B[nd - nb:]]
            return _match(einsum_cotangent(gr, ins, glab, [a, b], k), (a, b)[k])
        return vjp
    return rule


defvjp("kron", _kron_rule(0), _kron_rule(1))


# ============================================================================ trace, diagonal, transpose
def _trace_vjp(g, a, offset, axis1, axis2):
    nd = a.ndim
    axis1 %= nd
    axis2 %= nd
    E = _const(_np.eye(a.shape[axis1], a.shape[axis2], k=offset), g)
    labs = [("x", i) for i in range(nd)]
    rest = [labs[i] for i in range(nd) if i not in (axis1, axis2)]
    # the cotangent is g spread along the traced diagonal: out[labs] = g[rest] * E[axis1, axis2]
    return _match(_einsum_labels([g, E], [rest, [labs[axis1], labs[axis2]]], labs), a)


defvjp("trace", lambda ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None:
       lambda g: _trace_vjp(g, a, offset, axis1, axis2))
defvjp("linalg.trace", lambda ans, x, offset=0, dtype=None, **k:
       lambda g: _trace_vjp(g, x, offset, -2, -1))


def _diagonal_selector(n1, n2, offset):
    """E[i, j, l] = 1 where (i, j) is the l-th element of the ``offset`` diagonal."""
    L = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    E = _np.zeros((n1, n2, L))
    for l in range(L):
        if offset >= 0:
            E[l, l + offset, l] = 1
        else:
            E[l - offset, l, l] = 1
    return E


def _linalg_diagonal_vjp(ans, x, offset=0, **k):
    def vjp(g):
        E = _const(_diagonal_selector(x.shape[-2], x.shape[-1], offset), g)
        return _match(tnp.einsum("...l,ijl->...ij", g, E), x)
    return vjp


defvjp("linalg.diagonal", _linalg_diagonal_vjp)
defvjp("linalg.matrix_transpose", lambda ans, x, **k: lambda g: tnp.linalg.matrix_transpose(g))


def _same_as(name, pos):
    """The rule of ``name`` (looked up when used), for ``linalg.`` aliases of math functions."""
    def rule(ans, *args, **kwargs):
        r = get_rule(name)
        if r is None:
            raise LookupError(f"No gradient defined for tnp.{name} (needed by its linalg alias)")
        rr = r.for_position(pos)
        if rr is None:
            return lambda g: None
        return rr(ans, *args, **kwargs)
    return rule


defvjp("linalg.matmul", _same_as("matmul", 0), _same_as("matmul", 1))
defvjp("linalg.vecdot", _same_as("vecdot", 0), _same_as("vecdot", 1))


def _cross_rules():
    def r0(ans, x1, x2, axis=-1, **k):
        return lambda g: _match(tnp.linalg.cross(x2, g, axis=axis), x1)

    def r1(ans, x1, x2, axis=-1, **k):
        return lambda g: _match(tnp.linalg.cross(g, x1, axis=axis), x2)
    return r0, r1


defvjp("linalg.cross", *_cross_rules())


# ============================================================================ inverse, solve, det
defvjp("linalg.inv", lambda ans, a: lambda g: -tnp.matmul(tnp.matmul(_T(ans), g), _T(ans)))


def _solve_a(ans, a, b):
    def vjp(g):
        if _np.ndim(b) == 1:
            gb = tnp.linalg.solve(_T(a), g[..., None])[..., 0]
            return -gb[..., :, None] * ans[..., None, :]
        gb = tnp.linalg.solve(_T(a), g)
        return -tnp.matmul(gb, _T(ans))
    return vjp


def _solve_b(ans, a, b):
    def vjp(g):
        if _np.ndim(b) == 1:
            return tnp.linalg.solve(_T(a), g[..., None])[..., 0]
        return tnp.linalg.solve(_T(a), g)
    return vjp


defvjp("linalg.solve", _solve_a, _solve_b)
defvjp("linalg.det", lambda ans, a: lambda g: (g * ans)[..., None, None] * _T(tnp.linalg.inv(a)))


def _slogdet_vjp(ans, a):
    def vjp(g):
        gl = g[1]
        if _is_complex(a) and g[0] is not None:
            # sign = exp(i Im log det) is smooth in a complex a: its cotangent reaches
            # log det as i Im(g_sign * sign) (for a real a the sign is piecewise constant)
            gl = gl + tnp.imag(g[0] * ans[0]) * 1j
        r = gl[..., None, None] * _T(tnp.linalg.inv(a))
        return _match(r, a)
    return vjp


defvjp("linalg.slogdet", _slogdet_vjp)


# ============================================================================ cholesky
def _cholesky_vjp(ans, a, upper=False):
    def vjp(g):
        _no_complex("linalg.cholesky", a)
        L = _T(ans) if upper else ans
        gL = _T(g) if upper else g
        n = a.shape[-1]
        phi = _const(_np.tril(_np.ones((n, n))) - 0.5 * _np.eye(n), g)
        P = tnp.matmul(_T(L), gL) * phi
        # S = L^-T P L^-1
        S = tnp.linalg.solve(_T(L), _T(tnp.linalg.solve(_T(L), _T(P))))
        return (S + _T(S)) * 0.5
    return vjp


defvjp("linalg.cholesky", _cholesky_vjp)


# ============================================================================ eigen
def _eig_f(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    n = w.shape[-1]
    I = _eye(n, w)
    d = w[..., None, :] - w[..., :, None]
    return (1 - I) / (d + I)


def _eigh_vjp(ans, a, UPLO="L"):
    def vjp(g):
        _no_complex("linalg.eigh", a)
        w, v = ans
        gw, gv = g
        inner = _diag_embed(gw) + _eig_f(w) * tnp.matmul(_T(v), gv)
        r = tnp.matmul(tnp.matmul(v, inner), _T(v))
        return (r + _T(r)) * 0.5
    return vjp


def _eigvalsh_vjp(ans, a, UPLO="L"):
    def vjp(g):
        _no_complex("linalg.eigvalsh", a)
        w, v = tnp.linalg.eigh(a, UPLO)
        r = tnp.matmul(v * g[..., None, :], _T(v))
        return (r + _T(r)) * 0.5
    return vjp


defvjp("linalg.eigh", _eigh_vjp)
defvjp("linalg.eigvalsh", _eigvalsh_vjp)


def _eig_grad(a, w, v, gw, gv):
    vt = _T(v)
    inner = _diag_embed(gw)
    if gv is not None:
        vtgv = tnp.matmul(vt, gv)
        # eigenvectors are normalised to unit length: project that direction out
        vv = tnp.matmul(vt, tnp.conjugate(v)) if _is_complex(v) else tnp.matmul(vt, v)
        d = _diag(vtgv)
        d = tnp.real(d) if _is_complex(d) else d
        inner = inner + _eig_f(w) * (vtgv - vv * d[..., None, :])
    r = tnp.linalg.solve(vt, tnp.matmul(inner, vt))
    return _match(r, a)


def _eig_vjp(ans, a):
    return lambda g: _eig_grad(a, ans[0], ans[1], g[0], g[1])


def _eigvals_vjp(ans, a):
    def vjp(g):
        w, v = tnp.linalg.eig(a)
        return _eig_grad(a, w, v, g, None)
    return vjp


defvjp("linalg.eig", _eig_vjp)
defvjp("linalg.eigvals", _eigvals_vjp)


# ============================================================================ svd, qr, pinv
def _svd_grad(a, u, s, vh, gu, gs, gvh):
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    I = _eye(k, s)
    r = _diag_embed(gs)
    if gu is not None or gvh is not None:
        s2 = s * s
        F = (1 - I) / (s2[..., None, :] - s2[..., :, None] + I)
        if gu is not None:
            utgu = tnp.matmul(_T(u), gu)
            r = r + (F * (utgu - _T(utgu))) * s[..., None, :]
        if gvh is not None:
            gv = _T(gvh)
            vtgv = tnp.matmul(vh, gv)
            r = r + s[..., :, None] * (F * (vtgv - _T(vtgv)))
    out = tnp.matmul(tnp.matmul(u, r), vh)
    if gu is not None and m > k:
        # (I - U U^T) gU S^-1 V^T
        proj = gu - tnp.matmul(u, tnp.matmul(_T(u), gu))
        out = out + tnp.matmul(proj / s[..., None, :], vh)
    if gvh is not None and n > k:
        # U S^-1 gV^T (I - V V^T)
        gvt = gvh - tnp.matmul(tnp.matmul(gvh, _T(vh)), vh)
        out = out + tnp.matmul(u / s[..., None, :], gvt)
    return out


def _svd_vjp(ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    def vjp(g):
        _no_complex("linalg.svd", a)
        if not compute_uv:
            u, s, vh = tnp.linalg.svd(a, full_matrices=False)
            return _svd_grad(a, u, s, vh, None, g, None)
        m, n = a.shape[-2], a.shape[-1]
        if full_matrices and m != n:
            raise NotImplementedError(
                "tnp_train: the gradient of tnp.linalg.svd(full_matrices=True) of a non-square "
                "matrix is not defined (the extra singular vectors are arbitrary); use "
                "full_matrices=False")
        u, s, vh = ans
        return _svd_grad(a, u, s, vh, g[0], g[1], g[2])
    return vjp


def _svdvals_vjp(ans, x):
    def vjp(g):
        _no_complex("linalg.svdvals", x)
        u, s, vh = tnp.linalg.svd(x, full_matrices=False)
        return _svd_grad(x, u, s, vh, None, g, None)
    return vjp


defvjp("linalg.svd", _svd_vjp)
defvjp("linalg.svdvals", _svdvals_vjp)


def _copyltu(M):
    n = M.shape[-1]
    low = _const(_np.tril(_np.ones((n, n)), -1), M)
    Ml = M * low
    return Ml + _T(Ml) + _diag_embed(_diag(M))


def _qr_grad_tall(q, r, gq, gr):
    """m >= n: A = QR with Q (m, n), R (n, n)."""
    M = tnp.matmul(r, _T(gr)) - tnp.matmul(_T(gq), q)
    b = gq + tnp.matmul(q, _copyltu(M))
    # b R^-T
    return _T(tnp.linalg.solve(r, _T(b)))


def _qr_vjp(ans, a, mode="reduced"):
    def vjp(g):
        _no_complex("linalg.qr", a)
        m, n = a.shape[-2], a.shape[-1]
        if mode == "r":
            q, r = tnp.linalg.qr(a)
            gq, gr = None, g
        elif mode in ("reduced", "complete"):
            if mode == "complete" and m > n:
                raise NotImplementedError(
                    "tnp_train: the gradient of tnp.linalg.qr(mode='complete') of a tall matrix "
                    "is not defined (the extra columns of Q are arbitrary); use mode='reduced'")
            q, r = ans
            gq, gr = g
        else:
            raise NotImplementedError(f"tnp_train: no gradient for tnp.linalg.qr(mode={mode!r})")
        if gq is None:
            gq = tnp.zeros(q.shape, dtype=q.dtype, device=q.device)
        if m >= n:
            return _qr_grad_tall(q, r, gq, gr)
        # m < n: A = [X | Y], R = [U | V], X = QU
        y = a[..., :, m:]
        u = r[..., :, :m]
        gu = gr[..., :, :m]
        gv = gr[..., :, m:]
        gx = _qr_grad_tall(q, u, gq + tnp.matmul(y, _T(gv)), gu)
        gy = tnp.matmul(q, gv)
        return tnp.concatenate([gx, gy], axis=-1)
    return vjp


defvjp("linalg.qr", _qr_vjp)


def _pinv_grad(a, x, g):
    m, n = a.shape[-2], a.shape[-1]
    Im = _eye(m, a)
    In = _eye(n, a)
    xt = _T(x)
    t1 = -tnp.matmul(tnp.matmul(xt, g), xt)
    t2 = tnp.matmul(tnp.matmul(Im - tnp.matmul(a, x), _T(g)), tnp.matmul(x, xt))
    t3 = tnp.matmul(tnp.matmul(xt, x), tnp.matmul(_T(g), In - tnp.matmul(x, a)))
    return t1 + t2 + t3


def _pinv_vjp(ans, a, *args, **kwargs):
    def vjp(g):
        _no_complex("linalg.pinv", a)
        return _pinv_grad(a, ans, g)
    return vjp


defvjp("linalg.pinv", _pinv_vjp)


def _lstsq_forward(a, b, rcond=None):
    m, n = a.shape[-2], a.shape[-1]
    if rcond is None:
        rcond = _np.finfo(_real_dtype(a)).eps * max(m, n)
    x = tnp.matmul(tnp.linalg.pinv(a, rcond=rcond), b)
    res_ans = tnp.linalg.lstsq(stop_gradient(a), stop_gradient(b), rcond=rcond)[1]
    if res_ans.size:
        r = b - tnp.matmul(a, x)
        res = tnp.sum(r * r, axis=0)
        if _np.ndim(b) == 1:
            res = res[None]
    else:
        res = None
    s = tnp.linalg.svdvals(a)
    return [x, res, None, s]


def _lstsq_rule(i):
    def rule(ans, a, b, rcond=None):
        def vjp(g):
            _no_complex("linalg.lstsq", a, b)
            return vjp_of(lambda a_, b_: _lstsq_forward(a_, b_, rcond), (a, b), [i],
                          [g[0], g[1], None, g[3]])[0]
        return vjp
    return rule


defvjp("linalg.lstsq", _lstsq_rule(0), _lstsq_rule(1))


# ============================================================================ norms
def _norm_axes(x, axis):
    nd = x.ndim
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (int, _np.integer)):
        return (int(axis) % nd,)
    return tuple(int(a) % nd for a in axis)


def _keep(g, nd, axes):
    """``g`` with size-1 axes put back at ``axes`` (undoing ``keepdims=False``)."""
    return g[tuple(None if i in axes else slice(None) for i in range(nd))]


def _sgn(x):
    """d|x|/dx in the autograd convention (conj(x)/|x| for complex; 0 at 0)."""
    s = tnp.sign(x)
    return tnp.conjugate(s) if _is_complex(s) else s


def _safe_div(num, den):
    zero = den == 0
    return tnp.where(zero, 0.0, num / tnp.where(zero, 1.0, den))


def _vector_norm_grad(x, ans, g, ord, axes, keepdims):
    nd = x.ndim
    if not keepdims:
        g = _keep(g, nd, axes)
        ans = _keep(ans, nd, axes)
    if ord is None or ord == 2:
        xc = tnp.conjugate(x) if _is_complex(x) else x
        return _safe_div(g * xc, ans)
    ax = tnp.absolute(x)
    if ord == _inf or ord == -_inf:
        hit = stop_gradient(ax) == stop_gradient(ans)
        count = tnp.sum(hit, axis=axes, keepdims=True)
        return g * _sgn(x) * hit / count
    if ord == 0:
        return tnp.zeros(x.shape, dtype=x.dtype, device=x.device)
    if ord == 1:
        return g * _sgn(x)
    p = float(ord)
    return _safe_div(g * _sgn(x) * tnp.power(ax, p - 1), tnp.power(ans, p - 1))


def _move_last(x, r, c):
    """Axes ``r, c`` of ``x`` moved to the end (a permutation, written as einsum)."""
    nd = x.ndim
    labs = [("x", i) for i in range(nd)]
    out = [labs[i] for i in range(nd) if i not in (r, c)] + [labs[r], labs[c]]
    return _einsum_labels([x], [labs], out)


def _move_back(y, r, c, nd):
    labs = [("x", i) for i in range(nd)]
    src = [labs[i] for i in range(nd) if i not in (r, c)] + [labs[r], labs[c]]
    return _einsum_labels([y], [src], labs)


def _matrix_norm_grad(x, ans, g, ord, axes, keepdims):
    r, c = axes
    nd = x.ndim
    if not keepdims:
        g = _keep(g, nd, axes)
        ans = _keep(ans, nd, axes)
    if ord in (None, "fro", "f"):
        xc = tnp.conjugate(x) if _is_complex(x) else x
        return _safe_div(g * xc, ans)
    if ord in ("nuc", 2, -2):
        _no_complex("linalg.norm (ord=%r)" % (ord,), x)
        xm = _move_last(x, r, c)
        u, s, vh = tnp.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            gs = tnp.ones(s.shape, dtype=s.dtype, device=s.device)
        else:
            k = s.shape[-1]
            oh = _np.zeros(k)
            oh[0 if ord == 2 else k - 1] = 1
            gs = _const(oh, s) * tnp.ones(s.shape, dtype=s.dtype, device=s.device)
        gm = tnp.matmul(u * gs[..., None, :], vh)
        return _move_back(gm, r, c, nd) * g
    if ord in (1, -1, _inf, -_inf):
        ax = tnp.absolute(x)
        sum_axis = r if ord in (1, -1) else c
        sums = tnp.sum(stop_gradient(ax), axis=sum_axis, keepdims=True)
        hit = sums == stop_gradient(ans)
        count = tnp.sum(hit, axis=axes, keepdims=True)
        return g * _sgn(x) * hit / count
    raise ValueError(f"tnp_train: no gradient for matrix norm ord={ord!r}")


def _norm_vjp(ans, x, ord=None, axis=None, keepdims=False):
    def vjp(g):
        nd = x.ndim
        if axis is None and ord is None:
            return _vector_norm_grad(x, ans, g, 2, tuple(range(nd)), keepdims)
        if axis is None:
            axes = tuple(range(nd))
        else:
            axes = _norm_axes(x, axis)
        if len(axes) == 1:
            return _vector_norm_grad(x, ans, g, ord, axes, keepdims)
        return _matrix_norm_grad(x, ans, g, ord, axes, keepdims)
    return vjp


def _vector_norm_vjp(ans, x, axis=None, keepdims=False, ord=2):
    return lambda g: _vector_norm_grad(x, ans, g, ord, _norm_axes(x, axis), keepdims)


def _matrix_norm_vjp(ans, x, keepdims=False, ord="fro"):
    return lambda g: _matrix_norm_grad(x, ans, g, ord, (x.ndim - 2, x.ndim - 1), keepdims)


defvjp("linalg.norm", _norm_vjp)
defvjp("linalg.vector_norm", _vector_norm_vjp)
defvjp("linalg.matrix_norm", _matrix_norm_vjp)


def _cond_forward(x, p=None):
    if p is None or p == 2 or p == -2:
        s = tnp.linalg.svdvals(x)
        hi, lo = s[..., 0], s[..., -1]
        return hi / lo if p != -2 else lo / hi
    ax = (-2, -1)
    return tnp.linalg.norm(x, p, axis=ax) * tnp.linalg.norm(tnp.linalg.inv(x), p, axis=ax)


defvjp("linalg.cond", lambda ans, x, p=None: lambda g: vjp_of(_cond_forward, (x, p), [0], g)[0])


# ============================================================================ powers, chains, tensors
def _matrix_power_forward(a, n):
    n = int(n)
    if n < 0:
        a = tnp.linalg.inv(a)
        n = -n
    result = None
    z = a
    while n > 0:
        if n & 1:
            result = z if result is None else tnp.matmul(result, z)
        n >>= 1
        if n:
            z = tnp.matmul(z, z)
    return result


def _matrix_power_vjp(ans, a, n):
    def vjp(g):
        if int(n) == 0:
            return tnp.zeros(a.shape, dtype=a.dtype, device=a.device)
        return vjp_of(_matrix_power_forward, (a, n), [0], g)[0]
    return vjp


defvjp("linalg.matrix_power", _matrix_power_vjp)


def _multi_dot_forward(arrays):
    out = arrays[0]
    for x in arrays[1:]:
        out = tnp.matmul(out, x)
    return out


def _multi_dot_vjp(ans, arrays, out=None):
    def vjp(g):
        idx = [(0, j) for j, x in enumerate(arrays)
               if isinstance(x, tnp.ndarray) and is_inexact(x.dtype)]
        gs = vjp_of(lambda arrs: _multi_dot_forward(arrs), (list(arrays),), idx, g)
        res = [None] * len(arrays)
        for (_, j), gj in zip(idx, gs):
            res[j] = gj
        return res
    return vjp


defvjp("linalg.multi_dot", _multi_dot_vjp)


def _tensorinv_forward(a, ind=2):
    sh = a.shape
    rows = int(_np.prod(sh[:ind]))
    inv = tnp.linalg.inv(tnp.reshape(a, (rows, -1)))
    return tnp.reshape(inv, sh[ind:] + sh[:ind])


defvjp("linalg.tensorinv",
       lambda ans, a, ind=2: lambda g: vjp_of(_tensorinv_forward, (a, ind), [0], g)[0])


def _tensorsolve_forward(a, b, axes=None):
    an = a.ndim
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k % an)
            allaxes.insert(an, k % an)
        labs = [("x", i) for i in range(an)]
        a = _einsum_labels([a], [labs], [labs[i] for i in allaxes])
    bshape = tuple(_np.shape(b))
    xshape = a.shape[len(bshape):]
    m = int(_np.prod(bshape))
    a2 = tnp.reshape(a, (m, int(_np.prod(xshape))))
    x = tnp.linalg.solve(a2, tnp.reshape(b, (m,)))
    return tnp.reshape(x, xshape)


def _tensorsolve_rule(i):
    def rule(ans, a, b, axes=None):
        return lambda g: vjp_of(_tensorsolve_forward, (a, b, axes), [i], g)[0]
    return rule


defvjp("linalg.tensorsolve", _tensorsolve_rule(0), _tensorsolve_rule(1))

# ============================================================================ no gradient
nondifferentiable("linalg.matrix_rank", "integer output (the number of singular values above a "
                                        "tolerance)")

with_keywords({"linalg"})
