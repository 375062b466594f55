"""Differential tests of tnp's products and ``tnp.linalg`` against NumPy.

Products (matmul and ``@``, dot, vdot, inner, outer, tensordot, einsum, kron, trace, vecdot) and
every function of ``numpy.linalg`` that tnp mirrors. Integer and low-precision results are
compared exactly; float32/float64 results of BLAS/LAPACK calls with a tight relative tolerance
(optimized BLAS kernels may take different paths for differently aligned copies of the same
data). Result types match too: named tuples (``EigResult``, ``SVDResult``...) with tnp arrays
inside, NumPy scalars where NumPy returns them, ``LinAlgError`` for singular input.
"""
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tnp
import tnp.linalg
from tnp.testing import assert_same, both
from tnp.testing.differential import both_labelled as _both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

LA_DTYPES = ["float32", "float64", "complex64", "complex128"]


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _data(dtype, shape, key="", lo=-2, hi=2):
    rng = _rng(dtype, shape, key)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else lo, hi + 1, size=shape).astype(dt)
    x = rng.uniform(lo, hi, size=shape)
    if dt.kind == "c":
        x = x + 1j * rng.uniform(lo, hi, size=shape)
    return x.astype(dt)


def _spd(dtype, n, key="", batch=()):
    """A well-conditioned Hermitian positive-definite matrix (stack)."""
    a = _data(dtype, batch + (n, n), key)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _wellcond(dtype, n, key="", batch=()):
    return (_data(dtype, batch + (n, n), key) + 4 * np.eye(n)).astype(dtype)


def _arr(xp, x):
    return xp.array(x, copy=True) if isinstance(x, np.ndarray) else x


def _tol(*dtypes):
    """Tolerance for BLAS/LAPACK floating results of these input dtypes (0 for exact types)."""
    kinds = {np.dtype(d).char for d in dtypes}
    if kinds & set("fF"):
        return {"rtol": 2e-5, "atol": 2e-5}
    if kinds & set("dD"):
        return {"rtol": 1e-12, "atol": 1e-12}
    return {}


# ------------------------------------------------------------------------------- matmul and @
MATMUL_SHAPES = [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (4, 3)), ((3, 4), (4,)),
                 ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((0, 3), (3, 2))]
PRODUCT_DTYPES = ["bool", "int8", "int32", "int64", "float16", "float32", "float64", "complex128"]


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES)
def test_matmul_and_operator(dtype):
    """``matmul(a, b)``, ``a @ b``, ``tnp @ numpy`` and ``numpy @ tnp``: vector cases give
    scalars, batches broadcast, int8 stays int8 (wrapping), bool is logical."""
    for sa, sb in MATMUL_SHAPES:
        a, b = _data(dtype, sa, "a"), _data(dtype, sb, "b")
        tol = _tol(dtype)
        _both((sa, sb), lambda xp: xp.matmul(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "@"), lambda xp: _arr(xp, a) @ _arr(xp, b), **tol)
        _both((sa, sb, "@ numpy"), lambda xp: _arr(xp, a) @ b.copy(), **tol)
        _both((sa, sb, "numpy @"), lambda xp: a.copy() @ _arr(xp, b), **tol)


@pytest.mark.parametrize("dta,dtb", [("int32", "float32"), ("float32", "float64"),
                                     ("int8", "uint8"), ("float16", "float32"),
                                     ("bool", "int16"), ("float64", "complex64")])
def test_matmul_promotes_like_numpy(dta, dtb):
    a, b = _data(dta, (3, 4), "a"), _data(dtb, (4, 2), "b")
    both(lambda xp: _arr(xp, a) @ _arr(xp, b), **_tol(dta, dtb))


def test_matmul_out_dtype_and_errors():
    a, b = _data("float64", (3, 4), "a"), _data("float64", (4, 2), "b")

    def with_out(xp):
        o = xp.zeros((3, 2))
        assert xp.matmul(_arr(xp, a), _arr(xp, b), out=o) is o
        return o
    both(with_out, **_tol("float64"))
    both(lambda xp: xp.matmul(_arr(xp, a), _arr(xp, b), dtype="float32"), **_tol("float32"))
    both(lambda xp: _arr(xp, a) @ _arr(xp, a))        # core dimensions differ: ValueError
    both(lambda xp: _arr(xp, a) @ 2.0)                # scalars are not allowed: ValueError
    both(lambda xp: 2 @ _arr(xp, a))


@pytest.mark.parametrize("dtype", ["float16", tnp.bfloat16])
@pytest.mark.parametrize("product", [
    lambda xp, v: xp.dot(v, v), lambda xp, v: v @ v, lambda xp, v: xp.matmul(v, v),
    lambda xp, v: xp.inner(v, v), lambda xp, v: xp.vdot(v, v), lambda xp, v: xp.vecdot(v, v),
    lambda xp, v: xp.tensordot(v, v, axes=1),
    lambda xp, v: xp.stack([v, v]) @ xp.stack([v, v]).T,
    lambda xp, v: xp.dot(xp.stack([v, v, v]), v),
], ids=["dot", "@", "matmul", "inner", "vdot", "vecdot", "tensordot", "matrix@", "matrix-dot"])
def test_low_precision_products_accumulate_in_float32(dtype, product):
    """A sum of 4096 ones in float16 or bfloat16 is 2048 or 256 if accumulated in the input
    type; NumPy (with ml_dtypes for bfloat16) accumulates in float32 and gives 4096."""
    v = np.ones(4096, dtype=dtype)
    expected = both(lambda xp: product(xp, _arr(xp, v)))
    assert np.all(np.asarray(expected, dtype=np.float64) == 4096.0)


def test_matmul_of_float32_does_not_use_tensor_float_32_by_default():
    """1 + 2**-20 survives a float32 product (TF32 would keep 10 mantissa bits)."""
    a = np.full((2, 2), 1 + 2.0 ** -20, dtype=np.float32)
    e = np.eye(2, dtype=np.float32)
    got = tnp.asarray(a) @ tnp.asarray(e)
    assert_same(a @ e, got)
    assert float(got[0, 0]) != 1.0


# ------------------------------------------------------------------------------- other products
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
def test_dot(dtype):
    tol = _tol(dtype)
    for sa, sb in [((4,), (4,)), ((3, 4), (4,)), ((3, 4), (4, 2)), ((2, 3, 4), (4,)),
                   ((2, 3, 4), (5, 4, 2)), ((), (3, 2)), ((3,), ())]:
        a, b = _data(dtype, sa, "a"), _data(dtype, sb, "b")
        _both((sa, sb), lambda xp: xp.dot(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "method"), lambda xp: _arr(xp, a).dot(_arr(xp, b))
              if np.ndim(a) else xp.dot(a, _arr(xp, b)), **tol)
    both(lambda xp: xp.dot(xp.ones((3, 4)), xp.ones((3, 4))))   # ValueError: not aligned
    both(lambda xp: xp.dot(2, 3))

    def with_out(xp):
        o = xp.zeros((3, 2), dtype=dtype)
        r = xp.dot(_arr(xp, _data(dtype, (3, 4), "a")), _arr(xp, _data(dtype, (4, 2), "b")), out=o)
        assert r is o
        return o
    both(with_out, **tol)


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "complex128"])
def test_vdot_inner_outer_kron(dtype):
    """vdot conjugates its first argument and flattens; inner sums over last axes; outer
    flattens; kron makes the block product."""
    tol = _tol(dtype)
    for sa, sb in [((4,), (4,)), ((2, 3), (2, 3)), ((2, 3), (4, 3)), ((3,), (2, 3))]:
        a, b = _data(dtype, sa, "a"), _data(dtype, sb, "b")
        if a.size == b.size:
            _both((sa, sb, "vdot"), lambda xp: xp.vdot(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "inner"), lambda xp: xp.inner(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "outer"), lambda xp: xp.outer(_arr(xp, a), _arr(xp, b)))
        _both((sa, sb, "kron"), lambda xp: xp.kron(_arr(xp, a), _arr(xp, b)))
    both(lambda xp: xp.vdot(xp.ones(3), xp.ones(4)))    # ValueError
    both(lambda xp: xp.inner(xp.ones(3), xp.ones(4)))
    both(lambda xp: xp.inner(2.0, xp.ones(3)))
    both(lambda xp: xp.outer([1, 2], [3, 4, 5]))
    both(lambda xp: xp.kron(xp.eye(2, dtype=int), [[1, 2], [3, 4]]))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_tensordot(dtype):
    tol = _tol(dtype)
    a, b = _data(dtype, (2, 3, 4), "a"), _data(dtype, (3, 4, 5), "b")
    for axes in (2, ([1, 2], [0, 1]), ((2,), (1,)), 0, [[1], [0]]):
        _both(axes, lambda xp: xp.tensordot(_arr(xp, a), _arr(xp, b), axes=axes), **tol)
    both(lambda xp: xp.tensordot(_arr(xp, a), _arr(xp, b), axes=([0], [0])))  # sizes differ
    both(lambda xp: xp.tensordot(_arr(xp, a), _arr(xp, a)[0], axes=1), **tol)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 2)]), ("ij,jk", [(3, 4), (4, 2)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->ji", [(3, 4)]), ("i,i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("ijk->", [(2, 3, 4)]), ("ijk->kj", [(2, 3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("i,ij,j->", [(3,), (3, 4), (4,)]), ("ijk,ikl,ilm->jm", [(2, 3, 4), (2, 4, 3), (2, 3, 2)]),
    ("...,...", [(3,), (2, 3)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(subscripts, shapes):
    for dtype in ("int64", "float32", "float64", "complex128"):
        ops = [_data(dtype, s, f"{subscripts}{k}") for k, s in enumerate(shapes)]
        tol = _tol(dtype)
        _both(dtype, lambda xp: xp.einsum(subscripts, *[_arr(xp, o) for o in ops]), **tol)
        _both((dtype, "optimize"), lambda xp: xp.einsum(
            subscripts, *[_arr(xp, o) for o in ops], optimize=True), **tol)


def test_einsum_keywords_interleaved_form_and_errors():
    a, b = _data("float64", (3, 4), "a"), _data("float64", (4, 2), "b")
    both(lambda xp: xp.einsum(_arr(xp, a), [0, 1], _arr(xp, b), [1, 2], [0, 2]), **_tol("float64"))
    both(lambda xp: xp.einsum("ij,jk->ik", _arr(xp, a), _arr(xp, b), dtype="float32"),
         **_tol("float32"))

    def with_out(xp):
        o = xp.zeros((3, 2))
        assert xp.einsum("ij,jk->ik", _arr(xp, a), _arr(xp, b), out=o) is o
        return o
    both(with_out, **_tol("float64"))
    both(lambda xp: xp.einsum("ij,jk->ik", _arr(xp, a), _arr(xp, a)))     # ValueError: sizes
    both(lambda xp: xp.einsum("ij->k", _arr(xp, a)))                      # unknown output label
    both(lambda xp: xp.einsum("ij,jk->ik", _arr(xp, a)))                  # too few operands
    both(lambda xp: xp.einsum("i,i", xp.ones(3, dtype=tnp.bfloat16), xp.ones(3, dtype=tnp.bfloat16)))


def test_einsum_path_gives_numpys_plan():
    ops = [_data("float64", s, k) for k, s in enumerate([(3, 4), (4, 5), (5, 2)])]
    path, text = np.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")
    tpath, ttext = tnp.einsum_path("ij,jk,kl->il", *[tnp.asarray(o) for o in ops], optimize="greedy")
    assert tpath == path and ttext == text


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "complex128"])
def test_trace(dtype):
    for shape in [(4, 4), (3, 5), (2, 3, 4)]:
        a = _data(dtype, shape, "trace")
        for kw in ({}, {"offset": 1}, {"offset": -2}, {"axis1": 1, "axis2": 0},
                   {"dtype": "float64"}):
            _both((shape, kw), lambda xp: xp.trace(_arr(xp, a), **kw))
            _both((shape, kw, "method"), lambda xp: _arr(xp, a).trace(**kw))
        _both((shape, "linalg"), lambda xp: xp.linalg.trace(_arr(xp, a)))
    both(lambda xp: xp.trace(xp.ones(3)))  # ValueError: needs 2 dimensions


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
def test_vecdot(dtype):
    """``tnp.vecdot`` (a ufunc) and ``tnp.linalg.vecdot`` (a function with ``axis``) conjugate
    the first argument."""
    tol = _tol(dtype)
    for sa, sb in [((5,), (5,)), ((3, 5), (5,)), ((2, 3, 4), (3, 4))]:
        a, b = _data(dtype, sa, "a"), _data(dtype, sb, "b")
        _both((sa, sb), lambda xp: xp.vecdot(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "linalg"), lambda xp: xp.linalg.vecdot(_arr(xp, a), _arr(xp, b)), **tol)
        _both((sa, sb, "axis"), lambda xp: xp.vecdot(_arr(xp, a), _arr(xp, b), axis=0), **tol)
        _both((sa, sb, "linalg axis"), lambda xp: xp.linalg.vecdot(_arr(xp, a), _arr(xp, b), axis=0),
              **tol)


# ------------------------------------------------------------------------------- tnp.linalg
TESTED_LINALG = {"matrix_power", "solve", "tensorsolve", "tensorinv", "inv", "cholesky",
                 "eigvals", "eigvalsh", "pinv", "slogdet", "det", "svd", "svdvals", "eig", "eigh",
                 "lstsq", "norm", "qr", "cond", "matrix_rank", "multi_dot", "trace", "diagonal",
                 "cross", "outer", "tensordot", "matmul", "matrix_transpose", "matrix_norm",
                 "vector_norm", "vecdot"}


def test_every_linalg_function_is_tested_here():
    from tnp import linalg

    assert set(linalg._LINALG) == TESTED_LINALG
    assert tnp.linalg.LinAlgError is np.linalg.LinAlgError
    for n in linalg._LINALG:
        if hasattr(np.linalg, n):
            assert callable(getattr(tnp.linalg, n)), n


def _same_result_type(expected, got):
    """Named tuples come back as the same named tuple type."""
    if isinstance(expected, tuple):
        assert type(got) is type(expected), (type(expected), type(got))


@pytest.mark.parametrize("dtype", LA_DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)], ids=["matrix", "stack"])
def test_inv_solve_det_slogdet(dtype, batch):
    tol = _tol(dtype)
    a = _wellcond(dtype, 4, "inv", batch)
    b = _data(dtype, batch + (4, 2), "rhs")
    both(lambda xp: xp.linalg.inv(_arr(xp, a)), **tol)
    both(lambda xp: xp.linalg.solve(_arr(xp, a), _arr(xp, b)), **tol)
    if not batch:
        both(lambda xp: xp.linalg.solve(_arr(xp, a), _arr(xp, b[:, 0])), **tol)
    det = both(lambda xp: xp.linalg.det(_arr(xp, a)), **tol)
    assert isinstance(det, np.generic) == (not batch)
    e = both(lambda xp: xp.linalg.slogdet(_arr(xp, a)), **tol)
    _same_result_type(e, tnp.linalg.slogdet(tnp.asarray(a)))
    assert_same(e.logabsdet, tnp.linalg.slogdet(tnp.asarray(a)).logabsdet, **tol)


@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_eig_eigh_eigvals_eigvalsh(dtype):
    """The named results (``EigResult``/``EighResult``) hold tnp arrays; a real matrix with
    complex eigenvalues gives complex results as in NumPy."""
    tol = _tol(dtype)
    for batch in [(), (2,)]:
        h = _spd(dtype, 4, "eigh", batch)
        g = _data(dtype, batch + (4, 4), "eig")
        e = _both((batch, "eig"), lambda xp: xp.linalg.eig(_arr(xp, g)), **tol)
        _same_result_type(e, tnp.linalg.eig(tnp.asarray(g)))
        _both((batch, "eigvals"), lambda xp: xp.linalg.eigvals(_arr(xp, g)), **tol)
        for uplo in ("L", "U"):
            e = _both((batch, "eigh", uplo), lambda xp: xp.linalg.eigh(_arr(xp, h), UPLO=uplo), **tol)
            got = tnp.linalg.eigh(tnp.asarray(h), UPLO=uplo)
            _same_result_type(e, got)
            assert_same(e.eigenvalues, got.eigenvalues, **tol)
            _both((batch, "eigvalsh", uplo), lambda xp: xp.linalg.eigvalsh(_arr(xp, h), UPLO=uplo),
                  **tol)


@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_svd_svdvals_qr(dtype):
    tol = _tol(dtype)
    for shape in [(4, 3), (3, 5), (2, 4, 3)]:
        a = _data(dtype, shape, "svd")
        for full in (True, False):
            e = _both((shape, full), lambda xp: xp.linalg.svd(_arr(xp, a), full_matrices=full), **tol)
            _same_result_type(e, tnp.linalg.svd(tnp.asarray(a), full_matrices=full))
        _both((shape, "s only"), lambda xp: xp.linalg.svd(_arr(xp, a), compute_uv=False), **tol)
        _both((shape, "svdvals"), lambda xp: xp.linalg.svdvals(_arr(xp, a)), **tol)
        for mode in ("reduced", "complete", "r", "raw"):
            if mode == "raw" and len(shape) > 2:
                continue
            e = _both((shape, mode), lambda xp: xp.linalg.qr(_arr(xp, a), mode=mode), **tol)
            if mode in ("reduced", "complete"):
                _same_result_type(e, tnp.linalg.qr(tnp.asarray(a), mode=mode))
    h = _spd(dtype, 4, "svd-h")
    both(lambda xp: xp.linalg.svd(_arr(xp, h), hermitian=True), **tol)


@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_cholesky_pinv_lstsq(dtype):
    tol = _tol(dtype)
    for batch in [(), (3,)]:
        s = _spd(dtype, 4, "chol", batch)
        _both((batch, "cholesky"), lambda xp: xp.linalg.cholesky(_arr(xp, s)), **tol)
        _both((batch, "cholesky upper"), lambda xp: xp.linalg.cholesky(_arr(xp, s), upper=True), **tol)
        a = _data(dtype, batch + (5, 3), "pinv")
        _both((batch, "pinv"), lambda xp: xp.linalg.pinv(_arr(xp, a)), **tol)
        _both((batch, "pinv rcond"), lambda xp: xp.linalg.pinv(_arr(xp, a), rcond=0.5), **tol)
        _both((batch, "pinv rtol"), lambda xp: xp.linalg.pinv(_arr(xp, a), rtol=0.5), **tol)
        _both((batch, "pinv hermitian"), lambda xp: xp.linalg.pinv(_arr(xp, s), hermitian=True), **tol)
    a = _data(dtype, (6, 3), "lstsq")
    for b in (_data(dtype, (6,), "b1"), _data(dtype, (6, 2), "b2")):
        e = _both(b.shape, lambda xp: xp.linalg.lstsq(_arr(xp, a), _arr(xp, b)), **tol)
        assert len(e) == 4
        _both((b.shape, "rcond"), lambda xp: xp.linalg.lstsq(_arr(xp, a), _arr(xp, b), rcond=0.1),
              **tol)
    both(lambda xp: xp.linalg.lstsq(_arr(xp, a), _arr(xp, a)[:4]))  # LinAlgError: rows differ


NORM_ORDS_VECTOR = [None, 1, 2, np.inf, -np.inf, 0, 3, -1, 0.5]
NORM_ORDS_MATRIX = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", ["int64"] + LA_DTYPES)
def test_norm(dtype):
    """Vector and matrix norms of every order, axes and keepdims; 0-d results are scalars."""
    tol = _tol(dtype) or _tol("float64")
    v = _data(dtype, (5,), "norm-v")
    m = _data(dtype, (3, 4), "norm-m")
    t = _data(dtype, (2, 3, 4), "norm-t")
    for ord in NORM_ORDS_VECTOR:
        _both(("vector", ord), lambda xp: xp.linalg.norm(_arr(xp, v), ord=ord), **tol)
        _both(("rows", ord), lambda xp: xp.linalg.norm(_arr(xp, m), ord=ord, axis=1), **tol)
        _both(("vector_norm", ord), lambda xp: xp.linalg.vector_norm(_arr(xp, t), ord=ord), **tol)
    for ord in NORM_ORDS_MATRIX:
        _both(("matrix", ord), lambda xp: xp.linalg.norm(_arr(xp, m), ord=ord), **tol)
        _both(("stack", ord), lambda xp: xp.linalg.norm(_arr(xp, t), ord=ord, axis=(1, 2),
                                                        keepdims=True), **tol)
        _both(("matrix_norm", ord), lambda xp: xp.linalg.matrix_norm(
            _arr(xp, t), ord=ord if ord is not None else "fro"), **tol)
    _both("flat", lambda xp: xp.linalg.norm(_arr(xp, t)), **tol)
    _both("vector_norm axis", lambda xp: xp.linalg.vector_norm(_arr(xp, t), axis=(0, 2), keepdims=True),
          **tol)
    both(lambda xp: xp.linalg.norm(_arr(xp, m), ord="fro", axis=0))   # ValueError
    both(lambda xp: xp.linalg.norm(_arr(xp, t), ord=2))               # ValueError: 3-d
    both(lambda xp: xp.linalg.norm(_arr(xp, m), ord="bogus"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_matrix_rank_cond_matrix_power(dtype):
    tol = _tol(dtype)
    a = _wellcond(dtype, 4, "rank")
    low = (_data(dtype, (4, 2), "l") @ _data(dtype, (2, 4), "r")).astype(dtype)
    for m in (a, low, np.zeros((3, 3), dtype=dtype), _data(dtype, (2, 4, 4), "rank-stack")):
        _both("rank", lambda xp: xp.linalg.matrix_rank(_arr(xp, m)))
        _both("rank tol", lambda xp: xp.linalg.matrix_rank(_arr(xp, m), tol=1.0))
        _both("rank rtol", lambda xp: xp.linalg.matrix_rank(_arr(xp, m), rtol=0.1))
    both(lambda xp: xp.linalg.matrix_rank(_arr(xp, _spd(dtype, 4, "h")), hermitian=True))
    for p in (None, 1, -1, 2, -2, np.inf, -np.inf, "fro"):
        _both(("cond", p), lambda xp: xp.linalg.cond(_arr(xp, a), p=p), **tol)
    for n in (0, 1, 2, 3, 5, -1, -3):
        _both(("power", n), lambda xp: xp.linalg.matrix_power(_arr(xp, a), n), **tol)
    both(lambda xp: xp.linalg.matrix_power(xp.arange(9).reshape(3, 3), 3))  # exact ints
    both(lambda xp: xp.linalg.matrix_power(xp.arange(9).reshape(3, 3), -1))  # LinAlgError
    both(lambda xp: xp.linalg.matrix_power(_arr(xp, a), 1.5))               # TypeError
    both(lambda xp: xp.linalg.matrix_power(xp.ones((2, 3)), 2))             # LinAlgError


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_multi_dot(dtype):
    tol = _tol(dtype)
    shapes = [(3, 4), (4, 6), (6, 2), (2, 5)]
    ops = [_data(dtype, s, k) for k, s in enumerate(shapes)]
    for n in (2, 3, 4):
        _both(n, lambda xp: xp.linalg.multi_dot([_arr(xp, o) for o in ops[:n]]), **tol)
    v, w = _data(dtype, (3,), "v"), _data(dtype, (5,), "w")
    both(lambda xp: xp.linalg.multi_dot([_arr(xp, v)] + [_arr(xp, o) for o in ops] + [_arr(xp, w)]),
         **tol)  # vectors at both ends: a scalar
    both(lambda xp: xp.linalg.multi_dot([_arr(xp, ops[0])]))               # ValueError
    both(lambda xp: xp.linalg.multi_dot([_arr(xp, ops[0]), _arr(xp, ops[2])]))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_tensorsolve_and_tensorinv(dtype):
    tol = _tol(dtype)
    a = (_data(dtype, (6, 6), "tsolve") + 4 * np.eye(6)).astype(dtype).reshape(2, 3, 6)
    b = _data(dtype, (2, 3), "tsolve-b")
    both(lambda xp: xp.linalg.tensorsolve(_arr(xp, a), _arr(xp, b)), **tol)
    t = (_data(dtype, (6, 6), "tinv") + 4 * np.eye(6)).astype(dtype).reshape(6, 2, 3)
    both(lambda xp: xp.linalg.tensorinv(_arr(xp, t), ind=1), **tol)
    both(lambda xp: xp.linalg.tensorinv(_arr(xp, t.reshape(2, 3, 6)), ind=2), **tol)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_array_api_linalg_functions(dtype):
    """``linalg.cross/outer/tensordot/matmul/matrix_transpose/diagonal`` (Array API forms)."""
    tol = _tol(dtype)
    a = _data(dtype, (2, 3, 4), "api")
    v3, w3 = _data(dtype, (4, 3), "v3"), _data(dtype, (3,), "w3")
    both(lambda xp: xp.linalg.matrix_transpose(_arr(xp, a)))
    both(lambda xp: xp.linalg.diagonal(_arr(xp, a)))
    both(lambda xp: xp.linalg.diagonal(_arr(xp, a), offset=1))
    both(lambda xp: xp.linalg.cross(_arr(xp, v3), _arr(xp, w3)))
    both(lambda xp: xp.linalg.outer(_arr(xp, w3), _arr(xp, w3)))
    both(lambda xp: xp.linalg.outer(_arr(xp, v3), _arr(xp, w3)))   # 1-d only: ValueError
    both(lambda xp: xp.linalg.tensordot(_arr(xp, a), _arr(xp, v3).T, axes=1), **tol)
    both(lambda xp: xp.linalg.matmul(_arr(xp, a), _arr(xp, v3)), **tol)
    both(lambda xp: xp.linalg.matrix_transpose(_arr(xp, w3)))       # ValueError: 1-d


# ------------------------------------------------------------------------------- LinAlgError
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


@pytest.mark.parametrize("call", [
    lambda xp, s: xp.linalg.inv(s),
    lambda xp, s: xp.linalg.solve(s, xp.ones(2)),
    lambda xp, s: xp.linalg.cholesky(s),
    lambda xp, s: xp.linalg.cholesky(-xp.eye(2)),
    lambda xp, s: xp.linalg.matrix_power(s, -1),
    lambda xp, s: xp.linalg.tensorinv(s, ind=1),
    lambda xp, s: xp.linalg.inv(xp.ones((2, 3))),            # not square
    lambda xp, s: xp.linalg.det(xp.ones((2, 3))),
    lambda xp, s: xp.linalg.eig(xp.ones((2, 3))),
    lambda xp, s: xp.linalg.eigh(xp.ones(3)),               # 1-d
    lambda xp, s: xp.linalg.solve(s[0], xp.ones(2)),
    lambda xp, s: xp.linalg.inv(xp.asarray([[1, 0], [0, 0]])),
    lambda xp, s: xp.linalg.eigvals(xp.asarray([[xp.nan, 0.0], [0.0, 1.0]])),
    lambda xp, s: xp.linalg.inv(s.astype("float16")),        # TypeError: unsupported dtype
    lambda xp, s: xp.linalg.det(s.astype(tnp.bfloat16)),
], ids=["inv", "solve", "cholesky-singular", "cholesky-negative", "power", "tensorinv",
        "inv-nonsquare", "det-nonsquare", "eig-nonsquare", "eigh-1d", "solve-1d", "inv-int",
        "eigvals-nan", "inv-float16", "det-bfloat16"])
def test_linalg_errors_are_numpys(call):
    """Singular and malformed input raise ``tnp.linalg.LinAlgError`` (NumPy's class) where
    NumPy does, and NumPy's other exceptions elsewhere."""
    e = both(lambda xp: call(xp, _arr(xp, SINGULAR)))
    if isinstance(e, np.linalg.LinAlgError):
        with pytest.raises(tnp.linalg.LinAlgError):
            call(tnp, tnp.asarray(SINGULAR))


def test_singular_matrix_has_zero_det_and_reduced_rank_without_raising():
    both(lambda xp: xp.linalg.det(_arr(xp, SINGULAR)))
    both(lambda xp: xp.linalg.inv(xp.asarray([[2, 1], [1, 1]])), **_tol("float64"))  # ints: float64
    both(lambda xp: xp.linalg.matrix_rank(_arr(xp, SINGULAR)))
    both(lambda xp: xp.linalg.slogdet(_arr(xp, SINGULAR)))
    both(lambda xp: xp.linalg.pinv(_arr(xp, SINGULAR)), **_tol("float64"))


@given(a=hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)),
                    elements=st.integers(-5, 5).map(float)),
       b=st.integers(1, 3))
def test_products_of_small_integer_valued_matrices_are_exact(a, b):
    """Products of small integers are exact in floating point, so they match NumPy exactly."""
    c = np.arange(a.shape[1] * b, dtype=np.float64).reshape(a.shape[1], b)
    both(lambda xp: _arr(xp, a) @ _arr(xp, c))
    both(lambda xp: xp.dot(_arr(xp, a), _arr(xp, c)))
    both(lambda xp: xp.einsum("ij,jk->ik", _arr(xp, a), _arr(xp, c)))
    both(lambda xp: xp.tensordot(_arr(xp, a), _arr(xp, c), axes=1))
    both(lambda xp: xp.kron(_arr(xp, a), _arr(xp, c)))
    both(lambda xp: xp.linalg.matrix_rank(_arr(xp, a)))
