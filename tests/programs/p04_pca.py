"""Principal component analysis two ways: SVD of the centred data and eigh of the covariance."""


def fix_signs(np, components):
    """Make each component's largest-magnitude entry positive (SVD/eigh signs are arbitrary)."""
    idx = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), idx])
    return components * signs[:, None]


def main(np):
    rng = np.random.default_rng(123)
    n, d = 200, 5
    latent = rng.standard_normal((n, 2)) * np.array([3.0, 1.0])
    mixing = np.array([[0.8, 0.1, 0.5, -0.2, 0.3],
                       [-0.1, 0.9, 0.2, 0.4, -0.3]])
    X = latent @ mixing + 0.1 * rng.standard_normal((n, d)) + np.arange(d)
    print("data:", X.shape, "column means:", np.round(X.mean(axis=0), 3))

    mu = X.mean(axis=0, keepdims=True)
    Xc = X - mu

    # PCA via SVD
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    var_svd = S ** 2 / (n - 1)
    comps_svd = fix_signs(np, Vt)
    print("singular values:", np.round(S, 4))
    ratio = var_svd / var_svd.sum()
    print("explained variance ratio:", np.array2string(ratio, precision=5, suppress_small=True))
    print("cumulative:", np.round(np.cumsum(ratio), 5))

    # PCA via eigh of the covariance
    C = np.cov(Xc, rowvar=False)
    w, V = np.linalg.eigh(C)
    order = np.argsort(w)[::-1]
    w, V = w[order], V[:, order]
    comps_eig = fix_signs(np, V.T)
    print("eigenvalues:", np.round(w, 4))
    print("eigenvalues match SVD:", np.allclose(w, var_svd))
    print("components match:", np.allclose(comps_svd, comps_eig, atol=1e-8))
    print("trace check:", f"{np.trace(C):.6f} vs {w.sum():.6f}")

    # choose k components covering 95% of the variance
    k = int(np.searchsorted(np.cumsum(ratio), 0.95) + 1)
    print("components for 95%:", k)
    W = comps_svd[:k].T
    scores = Xc @ W
    recon = scores @ W.T + mu
    rmse = np.sqrt(np.mean((X - recon) ** 2))
    print(f"reconstruction RMSE with k={k}: {rmse:.5f}")
    print("scores std:", np.round(scores.std(axis=0, ddof=1), 4))

    # whitening: unit variance, uncorrelated
    white = scores / np.sqrt(w[:k])
    cw = np.cov(white, rowvar=False)
    with np.printoptions(precision=6, suppress=True):
        print("whitened covariance:\n", cw)
    print("orthonormal components:", np.allclose(comps_svd @ comps_svd.T, np.eye(d)))
    print("condition number of C:", f"{np.linalg.cond(C):.3e}")
    print("rank:", np.linalg.matrix_rank(Xc), "det(C):", f"{np.linalg.det(C):.3e}")
    loadings = comps_svd[:2] * np.sqrt(var_svd[:2])[:, None]
    with np.printoptions(precision=3, floatmode="fixed", sign="+"):
        print("loadings:\n", loadings)
    return {"S": S, "ratio": ratio, "k": k, "components": comps_svd[:k].round(6),
            "rmse": rmse, "eigvals": np.round(w, 8), "cov_white": np.round(cw, 8)}
