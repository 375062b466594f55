"""Scatter-add accumulation: 2-D histograms with np.add.at, weighted bincounts, per-group
reductions with ufunc.reduceat, and the pitfall of fancy-index += with repeated indices."""


def main(np):
    rng = np.random.default_rng(31)
    n = 2000
    x = rng.normal(0.0, 1.0, n)
    y = 0.6 * x + rng.normal(0.0, 0.8, n)
    w = rng.exponential(2.0, n)

    # 2-D histogram by hand: bin indices then unbuffered scatter-add
    edges = np.linspace(-3.0, 3.0, 7)
    ix = np.clip(np.digitize(x, edges) - 1, 0, 5)
    iy = np.clip(np.digitize(y, edges) - 1, 0, 5)
    H = np.zeros((6, 6), dtype=np.int64)
    np.add.at(H, (ix, iy), 1)
    print("2-D counts:\n", H)
    ref, _, _ = np.histogram2d(np.clip(x, -3, 3 - 1e-12), np.clip(y, -3, 3 - 1e-12), bins=[edges, edges])
    print("matches histogram2d:", np.array_equal(H, ref.astype(np.int64)))

    # weighted version and the flat-index equivalent with bincount
    Hw = np.zeros((6, 6))
    np.add.at(Hw, (ix, iy), w)
    flat = np.ravel_multi_index((ix, iy), (6, 6))
    Hb = np.bincount(flat, weights=w, minlength=36).reshape(6, 6)
    print("weighted total:", f"{Hw.sum():.6f}", "bincount agrees:", np.allclose(Hw, Hb))
    with np.printoptions(precision=1, suppress=True):
        print("weighted histogram:\n", Hw)

    # the classic pitfall: a[idx] += 1 with repeated indices counts each index once
    idx = np.array([0, 1, 1, 3, 3, 3])
    a = np.zeros(5, dtype=int)
    a[idx] += 1
    b = np.zeros(5, dtype=int)
    np.add.at(b, idx, 1)
    print("fancy +=:", a, " add.at:", b)

    # other ufuncs' .at: running maximum and minimum per bucket
    buckets = rng.integers(0, 8, size=50)
    vals = rng.normal(size=50)
    hi = np.full(8, -np.inf)
    lo = np.full(8, np.inf)
    np.maximum.at(hi, buckets, vals)
    np.minimum.at(lo, buckets, vals)
    print("bucket max:", np.round(hi, 3))
    print("bucket min:", np.round(lo, 3))
    prod = np.ones(4)
    np.multiply.at(prod, [0, 0, 2, 3, 3], [2.0, 3.0, 5.0, 0.5, 4.0])
    print("multiply.at:", prod)

    # group means through bincount with weights
    sums = np.bincount(buckets, weights=vals, minlength=8)
    cnts = np.bincount(buckets, minlength=8)
    means = np.divide(sums, cnts, out=np.zeros_like(sums), where=cnts > 0)
    print("group counts:", cnts)
    print("group means:", np.round(means, 4))

    # reduceat over sorted groups gives the same sums
    order = np.argsort(buckets, kind="stable")
    sorted_b = buckets[order]
    starts = np.flatnonzero(np.r_[True, sorted_b[1:] != sorted_b[:-1]])
    seg = np.add.reduceat(vals[order], starts)
    print("reduceat agrees:", np.allclose(seg, sums[sorted_b[starts]]))
    print("segment starts:", starts)

    # accumulate: running totals per row and an image histogram equalisation
    img = rng.integers(0, 16, size=(12, 12))
    hist = np.bincount(img.ravel(), minlength=16)
    cdf = np.add.accumulate(hist)
    lut = np.round((cdf - cdf.min()) * 15 / (cdf.max() - cdf.min())).astype(np.uint8)
    eq = lut[img]
    print("cdf:", cdf)
    print("lut:", lut, lut.dtype)
    print("equalised histogram:", np.bincount(eq.ravel(), minlength=16))
    return {"H": H, "Hw": Hw, "fancy": a, "at": b, "hi": hi, "lo": lo, "prod": prod,
            "means": means, "seg": seg, "lut": lut, "eq": eq}
