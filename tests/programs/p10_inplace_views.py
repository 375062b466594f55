"""In-place updates through views: slices, out= arguments, augmented assignment on views,
np.copyto with where=, np.put, np.place, np.putmask, fill_diagonal and shared-memory checks."""


def main(np):
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    base_id_view = a[1:3, ::2]
    print("view shape:", base_id_view.shape, "is view:", base_id_view.base is not None,
          "shares memory:", np.shares_memory(a, base_id_view))
    base_id_view += 100
    print("after view += 100:\n", a)

    # writing through a transposed view and a reshaped view
    t = a.T
    t[0] = -1
    r = a.reshape(-1)
    r[-3:] = [7, 8, 9]
    print("after T and reshape writes:\n", a)

    # ufuncs with out=: write into a preallocated buffer, including a view of it
    buf = np.empty((4, 6))
    np.multiply(a, 0.5, out=buf)
    np.sqrt(np.abs(buf[:, :3]), out=buf[:, :3])
    with np.printoptions(precision=3):
        print("buf:\n", buf)
    col_sums = np.zeros(6)
    np.sum(a, axis=0, out=col_sums)
    print("column sums via out=:", col_sums)
    acc = np.zeros(4)
    np.add(acc, a[:, 0], out=acc)
    np.add(acc, a[:, 1], out=acc)
    print("accumulated:", acc)

    # copyto with broadcasting and a where mask
    grid = np.zeros((3, 5), dtype=np.int32)
    np.copyto(grid, np.arange(5))
    np.copyto(grid, -1, where=(np.arange(15).reshape(3, 5) % 4 == 0))
    print("copyto grid:\n", grid)
    dst = np.ones(4, dtype=np.float32)
    np.copyto(dst, np.array([1.5, 2.5, 3.5, 4.5]), casting="same_kind")
    print("copyto float32:", dst, dst.dtype)

    # put / place / putmask on flat positions
    v = np.zeros(10, dtype=int)
    np.put(v, [0, 3, 7], [10, 30, 70])
    np.put(v, [11, -1], [99, 5], mode="clip")
    print("put:", v)
    w = np.arange(10)
    np.place(w, w % 3 == 0, [-1, -2])
    print("place:", w)
    m = np.arange(12).reshape(3, 4)
    np.putmask(m, m > 8, m * 10)
    print("putmask:\n", m)
    a2 = a.copy()
    a2.put([0, 1], [0.25, 0.5])
    print("method put:", a2[0, :3])

    # diagonal writes and views of diagonals
    sq = np.zeros((4, 4))
    np.fill_diagonal(sq, [1, 2, 3, 4])
    sq[np.triu_indices(4, k=1)] = 0.5
    d = np.diagonal(sq)
    print("diagonal (read-only view):", d, "writeable:", d.flags.writeable)
    print("square:\n", sq)

    # in-place clip and rounding, in-place sort of a row view
    noisy = np.linspace(-2, 2, 9)
    np.clip(noisy, -1, 1, out=noisy)
    np.round(noisy, 1, out=noisy)
    print("clipped:", noisy)
    rows = np.array([[3, 1, 2], [9, 7, 8]])
    rows[1].sort()
    rows[0, ::-1].sort()
    print("sorted rows:\n", rows)

    # views that do not share memory after fancy indexing
    fancy = a[[0, 2]]
    fancy[:] = 0
    print("fancy copy left a unchanged:", a[0, 0], a[2, 0], "shares:", np.shares_memory(a, fancy))
    s = a[::2, 1::2]
    s *= 2
    s[...] = np.where(s > 100, 100, s)
    print("final a:\n", a)
    print("total:", repr(a.sum()), "c-contiguous view:", s.flags.c_contiguous)
    return {"a": a, "buf": buf, "grid": grid, "v": v, "w": w, "m": m, "sq": sq,
            "noisy": noisy, "rows": rows, "col_sums": col_sums, "dst": dst}
