"""k-means clustering (Lloyd's algorithm with k-means++ seeding) on seeded Gaussian blobs."""


def make_blobs(np, rng, centers, n_per, spread):
    pts = [c + spread * rng.standard_normal((n_per, 2)) for c in centers]
    labels = np.repeat(np.arange(len(centers)), n_per)
    return np.vstack(pts), labels


def kmeans_pp_init(np, rng, X, k):
    idx = [int(rng.integers(X.shape[0]))]
    for _ in range(1, k):
        d2 = np.min(((X[:, None, :] - X[idx][None, :, :]) ** 2).sum(axis=-1), axis=1)
        probs = d2 / d2.sum()
        idx.append(int(rng.choice(X.shape[0], p=probs)))
    return X[idx].copy()


def kmeans(np, X, centroids, max_iter=50, tol=1e-8):
    k = centroids.shape[0]
    for it in range(max_iter):
        dists = np.linalg.norm(X[:, np.newaxis, :] - centroids[np.newaxis, :, :], axis=2)
        labels = np.argmin(dists, axis=1)
        new = np.empty_like(centroids)
        for j in range(k):
            members = X[labels == j]
            new[j] = members.mean(axis=0) if len(members) else centroids[j]
        shift = np.sqrt(np.sum((new - centroids) ** 2))
        centroids = new
        if shift < tol:
            break
    inertia = np.sum((X - centroids[labels]) ** 2)
    return centroids, labels, inertia, it + 1


def main(np):
    rng = np.random.default_rng(42)
    true_centers = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0], [6.0, -1.0]])
    X, y = make_blobs(np, rng, true_centers, 60, 0.8)
    perm = rng.permutation(len(X))
    X, y = X[perm], y[perm]
    print("data:", X.shape, "label counts:", np.bincount(y))

    results = {}
    for k in (2, 3, 4, 5):
        init = kmeans_pp_init(np, np.random.default_rng(k), X, k)
        cents, labels, inertia, n_iter = kmeans(np, X, init)
        results[k] = inertia
        print(f"k={k}: inertia={inertia:10.3f} after {n_iter:2d} iterations")

    inertias = np.array([results[k] for k in (2, 3, 4, 5)])
    drops = -np.diff(inertias)
    print("inertia drops:", np.round(drops, 2))

    init = kmeans_pp_init(np, np.random.default_rng(4), X, 4)
    cents, labels, inertia, n_iter = kmeans(np, X, init)
    order = np.lexsort((cents[:, 1], cents[:, 0]))
    cents = cents[order]
    relabel = np.empty(4, dtype=np.intp)
    relabel[order] = np.arange(4)
    labels = relabel[labels]
    with np.printoptions(precision=3, floatmode="fixed"):
        print("centroids (sorted by x, then y):")
        print(cents)
    sizes = np.bincount(labels, minlength=4)
    print("cluster sizes:", sizes, "total:", sizes.sum())

    # confusion between true labels and clusters
    conf = np.zeros((4, 4), dtype=np.int64)
    np.add.at(conf, (y, labels), 1)
    print("confusion:\n", conf)
    purity = conf.max(axis=1).sum() / conf.sum()
    print(f"purity={purity:.4f}", repr(purity))

    # silhouette-like score: mean intra distance vs nearest other centroid
    d_all = np.linalg.norm(X[:, None] - cents[None], axis=-1)
    own = np.take_along_axis(d_all, labels[:, None], axis=1)[:, 0]
    d_all[np.arange(len(X)), labels] = np.inf
    other = d_all.min(axis=1)
    score = np.mean((other - own) / np.maximum(other, own))
    print(f"separation score: {score:.4f}")
    return {"centroids": cents, "labels": labels, "inertia": inertia, "conf": conf,
            "inertias": inertias, "score": score, "iterations": n_iter}
