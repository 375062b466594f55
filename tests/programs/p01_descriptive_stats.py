"""Descriptive statistics of a seeded random sample: moments, order statistics, histograms."""


def summarize(np, x, name):
    """One line of summary statistics, formatted as a report would be."""
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    print(f"{name:>8s}: n={x.size:4d} mean={np.mean(x):8.4f} std={np.std(x, ddof=1):7.4f} "
          f"median={med:8.4f} IQR={q3 - q1:7.4f}")
    return q3 - q1


def main(np):
    rng = np.random.default_rng(20240501)
    heights = rng.normal(loc=170.0, scale=8.5, size=500)
    weights = 0.9 * (heights - 100.0) + rng.normal(0.0, 6.0, size=500)
    counts = rng.poisson(lam=3.2, size=500)

    print("first values:", heights[:5])
    iqr_h = summarize(np, heights, "height")
    iqr_w = summarize(np, weights, "weight")

    mean = heights.mean()
    var_pop = np.var(heights)
    var_smp = heights.var(ddof=1)
    print("mean repr:", repr(mean))
    print(f"variance population={var_pop:.5f} sample={var_smp:.5f} ratio={var_smp / var_pop:.6f}")
    print("min/max:", heights.min(), heights.max(), "ptp:", np.ptp(heights))

    # standardised moments
    z = (heights - mean) / heights.std()
    skew = np.mean(z ** 3)
    kurt = np.mean(z ** 4) - 3.0
    print(f"skewness={skew:+.4f} excess kurtosis={kurt:+.4f}")

    # quantiles with different methods
    probs = np.linspace(0.1, 0.9, 5)
    for method in ("linear", "lower", "higher", "nearest", "midpoint"):
        qs = np.quantile(weights, probs, method=method)
        print(f"{method:>9s}", np.round(qs, 3))

    # histogram with explicit bins and densities
    hist, edges = np.histogram(heights, bins=10, range=(140.0, 200.0))
    dens, _ = np.histogram(heights, bins=edges, density=True)
    print("edges:", edges)
    print("hist:", hist, "sum:", hist.sum())
    print("density integrates to", np.sum(dens * np.diff(edges)))
    widest = np.argmax(hist)
    print(f"modal bin [{edges[widest]:.1f}, {edges[widest + 1]:.1f}) holds {hist[widest]} values")

    # discrete counts
    bc = np.bincount(counts)
    print("bincount:", bc)
    print("most common count:", np.argmax(bc), "frequencies:", np.round(bc / bc.sum(), 3))

    # correlation and covariance
    cov = np.cov(heights, weights)
    corr = np.corrcoef(heights, weights)
    with np.printoptions(precision=4, suppress=True):
        print("cov:\n", cov)
        print("corr:\n", corr)

    # nan-aware statistics after masking outliers
    masked = np.where(np.abs(z) > 2.5, np.nan, heights)
    n_out = np.count_nonzero(np.isnan(masked))
    print(f"outliers: {n_out}, nanmean={np.nanmean(masked):.4f}, nanstd={np.nanstd(masked):.4f}, "
          f"nanmedian={np.nanmedian(masked):.4f}")
    print("nanpercentile 5/95:", np.nanpercentile(masked, [5, 95]))
    cs = np.cumsum(np.sort(counts))
    print("cumulative tail:", cs[-5:], "average:", np.average(counts, weights=np.arange(500) % 7 + 1))

    return {"hist": hist, "edges": edges, "bincount": bc, "cov": cov, "corr": corr,
            "mean": mean, "var": var_smp, "iqr": (iqr_h, iqr_w), "skew": skew,
            "kurt": kurt, "outliers": n_out, "masked": masked}
