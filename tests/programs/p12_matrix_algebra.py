"""Matrix algebra: solving systems, inverses, determinants, matrix powers (a Markov chain and
Fibonacci numbers), einsum/tensordot contractions and Kronecker products."""


def main(np):
    A = np.array([[4.0, -2.0, 1.0], [-2.0, 4.0, -2.0], [1.0, -2.0, 4.0]])
    b = np.array([11.0, -16.0, 17.0])
    x = np.linalg.solve(A, b)
    print("solution:", x, "residual:", np.linalg.norm(A @ x - b))
    Ainv = np.linalg.inv(A)
    with np.printoptions(precision=5, suppress=True):
        print("inverse:\n", Ainv)
        print("A @ inv(A):\n", A @ Ainv)
    det = np.linalg.det(A)
    sign, logdet = np.linalg.slogdet(A)
    print(f"det={det:.6f} sign={sign} logdet={logdet:.6f} exp={np.exp(logdet):.6f}")

    # Cholesky and QR factorisations reproduce A
    L = np.linalg.cholesky(A)
    Q, R = np.linalg.qr(A)
    print("cholesky ok:", np.allclose(L @ L.T, A), "lower:", np.allclose(L, np.tril(L)))
    print("qr ok:", np.allclose(Q @ R, A), "Q orthogonal:", np.allclose(Q.T @ Q, np.eye(3)))
    evals = np.linalg.eigvalsh(A)
    print("eigenvalues:", np.round(evals, 6), "positive definite:", bool(np.all(evals > 0)))

    # Markov chain: stationary distribution by matrix power and by eigenvectors
    P = np.array([[0.9, 0.075, 0.025], [0.15, 0.8, 0.05], [0.25, 0.25, 0.5]])
    P50 = np.linalg.matrix_power(P, 50)
    print("P^50 first row:", np.round(P50[0], 6))
    w, V = np.linalg.eig(P.T)
    k = np.argmin(np.abs(w - 1.0))
    pi = np.real(V[:, k])
    pi = pi / pi.sum()
    print("stationary:", np.round(pi, 6), "agrees:", np.allclose(P50[0], pi))

    # Fibonacci numbers from an integer matrix power
    F = np.array([[1, 1], [1, 0]], dtype=np.int64)
    fibs = [int(np.linalg.matrix_power(F, n)[0, 1]) for n in range(1, 15)]
    print("fibonacci:", fibs)
    print("F^30:", np.linalg.matrix_power(F, 30))

    # einsum and tensordot: batched products, traces, bilinear forms
    rng = np.random.default_rng(8)
    batch = rng.standard_normal((5, 3, 3))
    vecs = rng.standard_normal((5, 3))
    bmv = np.einsum("bij,bj->bi", batch, vecs)
    print("batched matvec agrees:", np.allclose(bmv, (batch @ vecs[..., None])[..., 0]))
    traces = np.einsum("bii->b", batch)
    print("traces:", np.round(traces, 5), "agree:", np.allclose(traces, np.trace(batch, axis1=1, axis2=2)))
    quad = np.einsum("i,ij,j->", x, A, x)
    print("x^T A x =", f"{quad:.6f}", "vdot:", f"{np.vdot(x, A @ x):.6f}")
    T = rng.standard_normal((3, 4, 5))
    M = rng.standard_normal((4, 5, 2))
    td = np.tensordot(T, M, axes=([1, 2], [0, 1]))
    print("tensordot shape:", td.shape, "agrees with einsum:",
          np.allclose(td, np.einsum("ijk,jkl->il", T, M)))
    outer = np.tensordot(np.arange(3), np.arange(4), axes=0)
    print("outer via tensordot:\n", outer)

    # Kronecker products: a 2-D Laplacian from 1-D pieces
    n = 4
    D = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    I = np.identity(n)
    Lap = np.kron(D, I) + np.kron(I, D)
    print("laplacian:", Lap.shape, "symmetric:", np.allclose(Lap, Lap.T),
          "nnz:", np.count_nonzero(Lap))
    print("kron block:\n", np.kron(np.array([[1, 2], [3, 4]]), np.ones((2, 2), dtype=int)))
    lam = np.linalg.eigvalsh(Lap)
    print("smallest laplacian eigenvalues:", np.round(lam[:3], 6))
    u = np.linalg.solve(Lap, np.ones(n * n))
    print("poisson solution max:", repr(np.round(u.max(), 6)))
    print("norms:", f"{np.linalg.norm(A, 'fro'):.5f} {np.linalg.norm(A, 2):.5f} {np.linalg.norm(A, np.inf):.1f}")
    print("multi_dot:", np.linalg.multi_dot([A, Ainv, b]))
    return {"x": x, "inv": Ainv, "det": det, "pi": pi, "fibs": fibs, "traces": traces,
            "td": td, "lap": Lap, "u": u, "evals": evals}
