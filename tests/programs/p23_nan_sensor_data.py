"""Cleaning sensor readings with missing values marked as NaN: nan-aware statistics, gap
filling by interpolation, outlier masking and per-sensor summaries."""


def main(np):
    rng = np.random.default_rng(5)
    n_sensors, n_times = 5, 48
    t = np.arange(n_times)
    truth = 20 + 5 * np.sin(2 * np.pi * t / 24)[None, :] + np.arange(n_sensors)[:, None]
    data = truth + rng.normal(0, 0.3, size=truth.shape)
    # drop-outs: random missing readings, and one sensor dead for a stretch
    missing = rng.random(data.shape) < 0.1
    data[missing] = np.nan
    data[3, 10:22] = np.nan
    data[1, 5] = 95.0  # a spike
    print("missing per sensor:", np.isnan(data).sum(axis=1))
    print("any sensor fully missing at a time:", np.flatnonzero(np.all(np.isnan(data), axis=0)))

    print("plain mean is nan:", np.isnan(np.mean(data)))
    print("nanmean per sensor:", np.round(np.nanmean(data, axis=1), 3))
    print("nanstd per sensor:", np.round(np.nanstd(data, axis=1), 3))
    print("nanmedian per sensor:", np.round(np.nanmedian(data, axis=1), 3))
    print("nanmin/nanmax:", np.round(np.nanmin(data), 3), np.round(np.nanmax(data), 3))
    print("nanargmax per sensor:", np.nanargmax(data, axis=1))
    print("nanargmin per sensor:", np.nanargmin(data, axis=1))
    print("nanpercentile 5/95:", np.round(np.nanpercentile(data, [5, 95]), 3))
    print("nanquantile median row 0:", np.round(np.nanquantile(data[0], 0.5), 4))
    print("nansum/nanprod of small slice:", np.round(np.nansum(data[:, :3]), 3), np.round(np.nanprod(data[0, :2]), 3))
    print("nancumsum row 4 head:", np.round(np.nancumsum(data[4, :5]), 2))
    print("nanvar sensor 2:", np.round(np.nanvar(data[2], ddof=1), 5))

    # robust outlier detection: distance from median in MAD units
    med = np.nanmedian(data, axis=1, keepdims=True)
    mad = np.nanmedian(np.abs(data - med), axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        z = np.abs(data - med) / (1.4826 * mad)
        outliers = z > 6
    print("outliers at:", np.argwhere(outliers).tolist())
    clean = np.where(outliers, np.nan, data)

    # fill gaps by linear interpolation along time, per sensor
    filled = clean.copy()
    for s in range(n_sensors):
        row = filled[s]
        bad = np.isnan(row)
        row[bad] = np.interp(t[bad], t[~bad], row[~bad])
    print("remaining nans after fill:", int(np.isnan(filled).sum()))
    err = np.abs(filled - truth)
    print("fill error on dead stretch (max):", np.round(err[3, 10:22].max(), 3))
    print("rmse vs truth:", np.round(np.sqrt(np.mean((filled - truth) ** 2)), 4))

    # the standard library's statistics module agrees on a filled row
    import statistics
    row0 = filled[0]
    print("statistics.mean/median:", statistics.mean(row0), statistics.median(row0))
    print("statistics.pstdev vs np.std:", round(statistics.pstdev(row0), 9), np.round(np.std(row0), 9))

    # masked arrays give the same per-sensor means as nanmean
    ma = np.ma.masked_invalid(clean)
    print("masked mean agrees:", np.allclose(ma.mean(axis=1).filled(np.nan), np.nanmean(clean, axis=1)))

    # nan_to_num and fmax/fmin
    sample = np.array([1.0, np.nan, np.inf, -np.inf, -2.5])
    print("nan_to_num:", np.nan_to_num(sample))
    print("nan_to_num custom:", np.nan_to_num(sample, nan=0.0, posinf=1e3, neginf=-1e3))
    print("fmax ignores nan:", np.fmax(sample, 0.0), "maximum propagates:", np.maximum(sample, 0.0))
    print("isfinite:", np.isfinite(sample), "isinf:", np.isinf(sample))
    print("all-nan slice warns and gives:", end=" ")
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = np.nanmean(np.array([np.nan, np.nan]))
    print(r, "| warning category:", caught[0].category.__name__ if caught else None)

    # hourly averages across sensors, ignoring gaps, and the hour of peak temperature
    hourly = np.nanmean(clean.reshape(n_sensors, 2, 24), axis=(0, 1))
    print("peak hour:", int(np.nanargmax(hourly)), "trough hour:", int(np.nanargmin(hourly)))
    print("hourly range:", np.round(np.ptp(hourly), 3))
    return {"filled": filled, "clean": clean, "hourly": hourly, "outliers": outliers,
            "nanmean": np.nanmean(data, axis=1)}
