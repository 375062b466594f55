"""Broadcasting tricks: pairwise distances, nearest neighbours, grids from meshgrid/ogrid/mgrid,
outer products and einsum contractions."""


def main(np):
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 10, size=(8, 2)).round(2)
    centres = np.array([[2.0, 2.0], [8.0, 3.0], [5.0, 8.0]])
    print("points:\n", pts)

    # pairwise Euclidean distances three ways
    diff = pts[:, np.newaxis, :] - pts[np.newaxis, :, :]
    D1 = np.sqrt((diff ** 2).sum(axis=-1))
    sq = (pts ** 2).sum(axis=1)
    D2 = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * pts @ pts.T, 0))
    D3 = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    print("distance methods agree:", np.allclose(D1, D2, atol=1e-6), np.allclose(D1, D3))
    print("symmetric, zero diagonal:", np.allclose(D1, D1.T), np.all(np.diag(D1) == 0))
    D = D1 + np.diag(np.full(len(pts), np.inf))
    nn = np.argmin(D, axis=1)
    print("nearest neighbour:", nn, "distances:", np.round(D.min(axis=1), 3))
    iu = np.triu_indices(len(pts), k=1)
    closest = np.argmin(D1[iu])
    print("closest pair:", (int(iu[0][closest]), int(iu[1][closest])), np.round(D1[iu].min(), 4))

    # assignment to centres (one k-means step)
    dc = np.linalg.norm(pts[:, None, :] - centres[None], axis=2)
    label = dc.argmin(axis=1)
    new_centres = np.array([pts[label == k].mean(axis=0) for k in range(3)])
    print("labels:", label, "new centres:\n", np.round(new_centres, 3))

    # grids: evaluate f(x, y) = x^2 - y on a 4x5 grid
    x = np.linspace(-1, 1, 5)
    y = np.linspace(0, 3, 4)
    X, Y = np.meshgrid(x, y)
    F = X ** 2 - Y
    print("meshgrid shapes:", X.shape, Y.shape)
    xo, yo = np.ogrid[0:4, 0:5]
    print("ogrid shapes:", xo.shape, yo.shape, "sum:\n", xo + yo)
    gy, gx = np.mgrid[0:4, 0:5]
    print("mgrid agrees with ogrid:", np.array_equal(gy + gx, xo + yo))
    Fb = x[np.newaxis, :] ** 2 - y[:, np.newaxis]
    print("broadcast agrees with meshgrid:", np.array_equal(F, Fb))
    print("F:\n", F)
    lin = np.mgrid[0:1:5j]
    print("mgrid complex step:", lin)

    # outer products and tables
    print("multiplication table:\n", np.outer(np.arange(1, 6), np.arange(1, 6)))
    print("ufunc.outer agrees:", np.array_equal(np.multiply.outer(np.arange(1, 6), np.arange(1, 6)),
                                               np.outer(np.arange(1, 6), np.arange(1, 6))))
    print("add.outer:\n", np.add.outer(np.arange(3), np.arange(0, 40, 10)))
    print("less.outer:\n", np.less.outer(np.arange(3), np.arange(3)).astype(int))

    # einsum: traces, batched products, bilinear forms
    A = np.arange(9.0).reshape(3, 3)
    B = np.arange(9.0, 18.0).reshape(3, 3)
    print("trace:", np.einsum("ii", A), "diag:", np.einsum("ii->i", A))
    print("matmul agrees:", np.allclose(np.einsum("ij,jk->ik", A, B), A @ B))
    batch = np.arange(24.0).reshape(2, 3, 4)
    print("batched A@x:\n", np.einsum("ij,bjk->bik", A, batch)[:, 0])
    v = np.array([1.0, -1.0, 2.0])
    print("bilinear v^T A v:", np.einsum("i,ij,j", v, A, v), "==", v @ A @ v)
    print("column sums:", np.einsum("ij->j", A), "transpose:", np.einsum("ij->ji", A)[0])
    print("tensordot:", np.tensordot(batch, np.ones(4), axes=([2], [0])).shape)

    # normalisation with keepdims and broadcasting a per-row scale
    M = rng.integers(1, 10, size=(4, 3)).astype(float)
    rows = M / M.sum(axis=1, keepdims=True)
    z = (M - M.mean(axis=0)) / M.std(axis=0)
    print("row-normalised sums:", rows.sum(axis=1))
    print("z-scored column means ~0:", np.allclose(z.mean(axis=0), 0))
    print("broadcast shapes:", np.broadcast_shapes((4, 1, 3), (5, 1)), np.broadcast_to(v, (2, 3)).shape)
    b = np.broadcast(np.arange(3)[:, None], np.arange(4))
    print("np.broadcast shape/size:", b.shape, b.size)
    return {"D": D1, "nn": nn, "label": label, "F": F, "centres": new_centres, "rows": rows}
