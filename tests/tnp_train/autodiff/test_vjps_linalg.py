"""VJP rules of the linalg section: finite-difference checks (first and second order) and a few
hand-derived formulas."""
import numpy as np
import pytest

import tnp
from tnp_train.autodiff import GradientTape, check_grads, registry
from tnp_train.autodiff.vjps.linalg import parse_einsum

LA = tnp.linalg


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def WC(n, batch=(), seed=1):
    """A well-conditioned matrix (random + n I)."""
    a = np.random.default_rng(seed).standard_normal(batch + (n, n)) + n * np.eye(n)
    return tnp.asarray(a)


def SPD(n, batch=(), seed=2):
    b = np.random.default_rng(seed).standard_normal(batch + (n, n))
    return tnp.asarray(b @ np.swapaxes(b, -1, -2) + n * np.eye(n))


def REALEIG(n, seed=3):
    """A non-symmetric matrix with real, well-separated eigenvalues."""
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((n, n)) + n * np.eye(n)
    return tnp.asarray(s @ np.diag(np.arange(1.0, n + 1) * 1.5) @ np.linalg.inv(s))


def sym(a):
    return (a + LA.matrix_transpose(a)) * 0.5


def grad(f, x):
    with GradientTape() as t:
        t.watch(x)
        y = f(x)
    return t.gradient(y, x)


# ------------------------------------------------------------------------------ products
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("i,i", [(4,), (4,)]),
    ("ij->", [(2, 3)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 1)]),
    ("i...i", [(3, 2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 3), (3, 2)]),
    ("ijj,j->ij", [(2, 3, 3), (3,)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM_CASES)
def test_einsum(subs, shapes):
    ops = [R(*s, seed=i) for i, s in enumerate(shapes)]
    check_grads(lambda *xs: tnp.einsum(subs, *xs), order=2)(*ops)


def test_einsum_interleaved():
    a, b = R(2, 3), R(3, 4, seed=1)
    check_grads(lambda x, y: tnp.einsum(x, [0, 1], y, [1, 2], [0, 2]), order=2)(a, b)
    check_grads(lambda x, y: tnp.einsum(x, [Ellipsis, 0], y, [0]), order=2)(R(2, 3, 3), R(3))


@pytest.mark.parametrize("subs,shapes", EINSUM_CASES)
def test_einsum_parse_matches_numpy(subs, shapes):
    ops = [np.ones(s) for s in shapes]
    ins, out, _, _ = parse_einsum((subs,) + tuple(ops))
    assert len(out) == np.einsum(subs, *ops).ndim
    assert [len(i) for i in ins] == [o.ndim for o in ops]


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                                   ((2, 3, 4), (5, 4, 2)), ((), (3,))])
def test_dot(sa, sb):
    check_grads(tnp.dot, order=2)(R(*sa), R(*sb, seed=1))


def test_dot_method():
    check_grads(lambda a, b: a.dot(b), order=2)(R(2, 3), R(3, 2, seed=1))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (6,))])
def test_vdot(sa, sb):
    check_grads(tnp.vdot, order=2)(R(*sa), R(*sb, seed=1))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((), (2, 2))])
def test_inner(sa, sb):
    check_grads(tnp.inner, order=2)(R(*sa), R(*sb, seed=1))


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 2), (3,))])
def test_outer(sa, sb):
    check_grads(tnp.outer, order=2)(R(*sa), R(*sb, seed=1))
    if len(sa) == 1:
        check_grads(LA.outer, order=2)(R(*sa), R(*sb, seed=1))


@pytest.mark.parametrize("sa,sb,axes", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1),
                                        ((2, 3), (4,), 0), ((3, 2, 4), (2, 3), ([1, 0], [0, 1]))])
def test_tensordot(sa, sb, axes):
    check_grads(lambda a, b: tnp.tensordot(a, b, axes), order=2)(R(*sa), R(*sb, seed=1))
    check_grads(lambda a, b: LA.tensordot(a, b, axes=axes), order=2)(R(*sa), R(*sb, seed=1))


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 2)), ((3,), (2, 2))])
def test_kron(sa, sb):
    check_grads(tnp.kron, order=2)(R(*sa), R(*sb, seed=1))


@pytest.mark.parametrize("shape,kw", [((3, 3), {}), ((3, 4, 5), dict(offset=1, axis1=1, axis2=2)),
                                      ((4, 3), dict(offset=-1))])
def test_trace(shape, kw):
    check_grads(lambda a: tnp.trace(a, **kw), order=2)(R(*shape))


def test_trace_formula():
    a = R(2, 3, 3)
    g = grad(lambda x: tnp.sum(LA.trace(x, offset=-1)), a)
    assert np.allclose(np.asarray(g), np.broadcast_to(np.eye(3, k=-1), (2, 3, 3)))
    check_grads(lambda x: LA.trace(x, offset=-1), order=2)(a)
    check_grads(lambda x: x.trace(), order=2)(R(3, 3))


@pytest.mark.parametrize("shape,offset", [((2, 3, 4), 1), ((3, 3), 0), ((3, 4), -1)])
def test_linalg_diagonal(shape, offset):
    check_grads(lambda a: LA.diagonal(a, offset=offset), order=2)(R(*shape))


def test_matrix_transpose_matmul_vecdot_cross():
    check_grads(LA.matrix_transpose, order=2)(R(2, 3, 4))
    check_grads(LA.matmul, order=2)(R(2, 3), R(3, 4, seed=1))
    check_grads(LA.matmul, order=2)(R(2, 2, 3), R(3, seed=1))
    check_grads(LA.vecdot, order=2)(R(2, 3), R(3, seed=1))
    check_grads(LA.cross, order=2)(R(4, 3), R(3, seed=1))
    check_grads(lambda a, b: LA.cross(a, b, axis=0), order=2)(R(3, 2), R(3, 2, seed=1))


# ------------------------------------------------------------------------------ inverse, solve, det
@pytest.mark.parametrize("batch", [(), (2,)])
def test_inv(batch):
    check_grads(LA.inv, order=2)(WC(3, batch))


@pytest.mark.parametrize("a,b", [(((3, 3)), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                 ((2, 3, 3), (2, 3, 2))])
def test_solve(a, b):
    A = WC(a[-1], a[:-2])
    check_grads(LA.solve, order=2)(A, R(*b))


@pytest.mark.parametrize("batch", [(), (2,)])
def test_det(batch):
    check_grads(LA.det, order=2)(WC(3, batch))


def test_det_formula():
    a = WC(4)
    g = grad(LA.det, a)
    an = np.asarray(a)
    assert np.allclose(np.asarray(g), np.linalg.det(an) * np.linalg.inv(an).T)


@pytest.mark.parametrize("seed", [1, 5])
def test_slogdet(seed):
    a = WC(3, seed=seed)
    a = a * tnp.asarray([1.0, -1.0, 1.0])  # a negative determinant too
    check_grads(lambda x: LA.slogdet(x)[1], order=2)(a)
    check_grads(lambda x: LA.slogdet(x).logabsdet, order=2)(WC(3, (2,), seed=seed))
    g = grad(lambda x: LA.slogdet(x)[1], a)
    assert np.allclose(np.asarray(g), np.linalg.inv(np.asarray(a)).T)


def test_slogdet_sign_has_no_gradient():
    a = WC(3)
    g = grad(lambda x: LA.slogdet(x)[0] * 1.0, a)
    assert g is None or np.allclose(np.asarray(g), 0)


# ------------------------------------------------------------------------------ decompositions
@pytest.mark.parametrize("batch,upper", [((), False), ((2,), False), ((), True)])
def test_cholesky(batch, upper):
    check_grads(lambda x: LA.cholesky(sym(x), upper=upper), order=2)(SPD(3, batch))


def test_cholesky_gradient_is_symmetric():
    g = grad(lambda x: tnp.sum(LA.cholesky(x) * R(3, 3, seed=4)), SPD(3))
    assert np.allclose(np.asarray(g), np.asarray(g).T)


def _eigh_out(x, uplo="L"):
    w, v = LA.eigh(sym(x), UPLO=uplo)
    return [w, v * v[..., :1, :]]


@pytest.mark.parametrize("batch,uplo", [((), "L"), ((2,), "L"), ((), "U")])
def test_eigh(batch, uplo):
    check_grads(lambda x: _eigh_out(x, uplo), order=2)(SPD(4, batch))


@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigvalsh(batch):
    check_grads(lambda x: LA.eigvalsh(sym(x)), order=2)(SPD(3, batch))


def test_eigvalsh_formula():
    a = SPD(3)
    g = grad(lambda x: tnp.sum(LA.eigvalsh(x)), a)       # d trace / dA = I
    assert np.allclose(np.asarray(g), np.eye(3))


@pytest.mark.parametrize("seed", [3, 4])
def test_eig(seed):
    a = REALEIG(3, seed)

    def f(x):
        w, v = LA.eig(x)
        return [w, v * v[..., :1, :]]
    check_grads(f, order=2)(a)
    check_grads(LA.eigvals, order=2)(a)


def _svd_out(x, full=False):
    u, s, vh = LA.svd(x, full_matrices=full)
    return [s, u * u[..., :1, :], vh * vh[..., :, :1], u @ vh]


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
def test_svd(shape):
    check_grads(_svd_out, order=2)(R(*shape, seed=7))


def test_svd_variants():
    check_grads(lambda x: _svd_out(x, True), order=2)(R(3, 3, seed=7))
    check_grads(lambda x: LA.svd(x, compute_uv=False), order=2)(R(4, 3, seed=7))
    check_grads(LA.svdvals, order=2)(R(2, 3, 4, seed=7))
    with pytest.raises(NotImplementedError):
        grad(lambda x: tnp.sum(LA.svd(x)[0]), R(4, 3))


def test_svdvals_formula():
    a = R(4, 3, seed=7)
    g = grad(lambda x: tnp.sum(LA.svdvals(x)), a)        # nuclear norm: U V^T
    u, s, vh = np.linalg.svd(np.asarray(a), full_matrices=False)
    assert np.allclose(np.asarray(g), u @ vh)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
def test_qr(shape):
    def f(x):
        q, r = LA.qr(x)
        return [q, r]
    check_grads(f, order=2)(R(*shape, seed=8))


def test_qr_r_mode():
    check_grads(lambda x: LA.qr(x, mode="r"), order=2)(R(4, 3, seed=8))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_pinv(shape):
    check_grads(LA.pinv, order=2)(R(*shape, seed=9))


@pytest.mark.parametrize("sa,sb", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 5), (3,))])
def test_lstsq(sa, sb):
    def f(a, b):
        x, res, rank, s = LA.lstsq(a, b)
        return [x, res, s]
    check_grads(f, order=2)(R(*sa, seed=10), R(*sb, seed=11))


# ------------------------------------------------------------------------------ norms
VEC = [None, 2, 1, np.inf, -np.inf, 3, 0.5]


@pytest.mark.parametrize("ord", VEC)
def test_norm_vector(ord):
    x = R(5, seed=12)
    check_grads(lambda a: LA.norm(a, ord), order=2)(x)
    check_grads(lambda a: LA.norm(a, ord, axis=1, keepdims=True), order=2)(R(3, 4, seed=12))


MAT = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MAT)
def test_norm_matrix(ord):
    check_grads(lambda a: LA.norm(a, ord), order=2)(R(4, 3, seed=13))
    check_grads(lambda a: LA.norm(a, ord, axis=(2, 0)), order=2)(R(3, 2, 4, seed=13))


def test_norm_flat_and_formula():
    x = R(2, 3, 4, seed=14)
    check_grads(LA.norm, order=2)(x)
    g = grad(LA.norm, x)
    assert np.allclose(np.asarray(g), np.asarray(x) / np.linalg.norm(np.asarray(x)))


@pytest.mark.parametrize("kw", [dict(), dict(axis=(1, 2)), dict(ord=1, axis=0), dict(ord=np.inf),
                                dict(ord=2, axis=-1, keepdims=True)])
def test_vector_norm(kw):
    check_grads(lambda a: LA.vector_norm(a, **kw), order=2)(R(2, 3, 4, seed=15))


@pytest.mark.parametrize("kw", [dict(), dict(ord="nuc"), dict(ord=2, keepdims=True), dict(ord=1),
                                dict(ord=np.inf)])
def test_matrix_norm(kw):
    check_grads(lambda a: LA.matrix_norm(a, **kw), order=2)(R(2, 4, 3, seed=16))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", 1, np.inf])
def test_cond(p):
    check_grads(lambda a: LA.cond(a, p), order=2)(WC(3, seed=17))


# ------------------------------------------------------------------------------ powers, chains, tensors
@pytest.mark.parametrize("n", [3, 0, -2, 1, 5])
def test_matrix_power(n):
    a = WC(3, seed=18) * 0.3
    check_grads(lambda x: LA.matrix_power(x, n), order=2)(a)


def test_matrix_power_batched():
    check_grads(lambda x: LA.matrix_power(x, 2), order=2)(WC(2, (2,), seed=18))


def test_multi_dot():
    a, b, c = R(2, 3), R(3, 4, seed=1), R(4, 2, seed=2)
    check_grads(lambda x, y, z: LA.multi_dot([x, y, z]), order=2)(a, b, c)
    v, w = R(3, seed=3), R(2, seed=4)
    check_grads(lambda x, y, z, t: LA.multi_dot([x, y, z, t]), order=2)(v, b, c, w)


@pytest.mark.parametrize("shape,ind", [((2, 3, 6), 2), ((6, 2, 3), 1)])
def test_tensorinv(shape, ind):
    a = tnp.reshape(WC(6, seed=19), shape)
    check_grads(lambda x: LA.tensorinv(x, ind=ind), order=2)(a)


@pytest.mark.parametrize("axes", [None, (0,)])
def test_tensorsolve(axes):
    a = tnp.reshape(WC(6, seed=20), (2, 3, 6))
    if axes is not None:
        a = tnp.asarray(np.moveaxis(np.asarray(a), -1, 0).copy())
    b = R(2, 3, seed=21)
    check_grads(lambda x, y: LA.tensorsolve(x, y, axes=axes), order=2)(a, b)


# ------------------------------------------------------------------------------ complex inputs
def _parts(y):
    re, im = tnp.real(y), tnp.imag(y)
    return [re * re + im, re * im]


def _c(fn, nargs):
    """fn of complex arguments, each built from two real ones (both parts are checked)."""
    def f(*xs):
        zs = [xs[2 * i] + xs[2 * i + 1] * 1j for i in range(nargs)]
        return _parts(fn(*zs))
    return f


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # the tape's complex->real cast
@pytest.mark.parametrize("name", ["vdot", "einsum", "kron", "inv", "det", "solve", "eigvals",
                                  "slogdet", "norm"])
def test_complex_autograd_convention(name):
    I3 = tnp.asarray(3 * np.eye(3))
    A = [R(3, 3, seed=1) + I3, R(3, 3, seed=2)]
    V = [R(3, seed=3), R(3, seed=4)]
    cases = {
        "vdot": (_c(tnp.vdot, 2), V + [R(3, seed=5), R(3, seed=6)]),
        "einsum": (_c(lambda x, y: tnp.einsum("ij,j->i", x, y), 2), A + V),
        "kron": (_c(tnp.kron, 2), V + A),
        "inv": (_c(LA.inv, 1), A), "det": (_c(LA.det, 1), A),
        "solve": (_c(LA.solve, 2), A + V), "eigvals": (_c(LA.eigvals, 1), A),
        "slogdet": (lambda a, b: LA.slogdet(a + b * 1j)[1], A),
        "norm": (lambda a, b: [LA.norm(a + b * 1j), LA.norm(a + b * 1j, 1, axis=0)], A),
    }
    f, args = cases[name]
    check_grads(f, order=1)(*args)


def test_arrays_passed_by_keyword():
    a, b = WC(3), R(3, seed=1)
    check_grads(lambda x, y: LA.solve(a=x, b=y), order=2)(a, b)
    check_grads(lambda x, y: tnp.dot(x, b=y), order=2)(R(2, 3), b)
    check_grads(lambda x: LA.norm(x=x, ord=1), order=2)(b)
    check_grads(lambda x: LA.cond(x=x, p=1), order=2)(a)
    t = tnp.reshape(WC(6, seed=20), (2, 3, 6))
    check_grads(lambda x, y: LA.tensorsolve(x, b=y), order=2)(t, R(2, 3))


# ------------------------------------------------------------------------------ declarations
def test_matrix_rank_is_integer():
    a = R(4, 3)
    assert np.issubdtype(np.asarray(LA.matrix_rank(a)).dtype, np.integer)
    assert "linalg.matrix_rank" in registry.NONDIFF
    assert "einsum_path" in registry.NO_ARRAY_OUTPUT
    path = tnp.einsum_path("ij,jk->ik", R(2, 3), R(3, 4))
    assert not isinstance(path, tnp.ndarray)


def test_linalg_section_complete():
    missing = [n for n in registry.missing() if tnp.REGISTRY[n].section == "linalg"]
    assert missing == []
