#!/usr/bin/env python3
"""A small data-analysis job written against NumPy's API, run on tnp by default.

    python examples/demo.py            # import tnp as np
    python examples/demo.py --numpy    # import numpy as np (the reference)

Both print the same text: seeded random data, summary statistics, a k-means clustering, a
least-squares fit and an FFT low-pass filter. Nothing below knows which module ``np`` is.
"""
import argparse
import importlib

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--numpy", action="store_true", help="run on NumPy instead of tnp")
parser.add_argument("--device", default=None,
                    help="tnp only: device for the arrays, e.g. gpu:0 (output may then differ in the last digits)")
args = parser.parse_args()

np = importlib.import_module("numpy" if args.numpy else "tnp")
if args.device is not None and not args.numpy:
    np.set_default_device(args.device)

np.set_printoptions(precision=4, suppress=True)


def section(title):
    print()
    print(f"== {title} " + "=" * (60 - len(title)))


# ---------------------------------------------------------------- data
rng = np.random.default_rng(2024)
true_centers = np.array([[0.0, 0.0], [5.0, 5.0], [-4.0, 6.0]])
labels_true = rng.integers(0, 3, size=300)
points = true_centers[labels_true] + rng.normal(scale=0.8, size=(300, 2))

section("data")
print("points:", points.shape, points.dtype)
print("first rows:\n", points[:4])
print("points per true cluster:", np.bincount(labels_true, minlength=3))

# ---------------------------------------------------------------- statistics
section("statistics")
mean = points.mean(axis=0)
std = points.std(axis=0, ddof=1)
print("mean:", mean, " std:", std)
print("median:", np.median(points, axis=0))
print("5/50/95th percentiles of x:", np.percentile(points[:, 0], [5, 50, 95]))
print("correlation of x and y: %.4f" % np.corrcoef(points.T)[0, 1])
counts, edges = np.histogram(points[:, 1], bins=6)
print("histogram of y:", counts, "edges:", np.round(edges, 2))
zscores = (points - mean) / std
print("outliers (|z| > 2.5):", int(np.sum(np.abs(zscores) > 2.5)))
print(f"largest |value| = {np.abs(points).max():.3f} at {np.unravel_index(np.argmax(np.abs(points)), points.shape)}")


# ---------------------------------------------------------------- k-means
def kmeans(x, k, iters=50, seed=0):
    """Lloyd's algorithm with k-means++-style seeding from a fixed generator."""
    g = np.random.default_rng(seed)
    centers = x[g.choice(len(x), size=1, replace=False)]
    while len(centers) < k:
        d2 = ((x[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1).min(axis=1)
        nxt = g.choice(len(x), p=d2 / d2.sum())
        centers = np.concatenate([centers, x[nxt][None, :]], axis=0)
    for it in range(iters):
        dist = np.linalg.norm(x[:, None, :] - centers[None, :, :], axis=-1)
        assign = np.argmin(dist, axis=1)
        new = np.stack([x[assign == j].mean(axis=0) for j in range(k)])
        shift = np.abs(new - centers).max()
        centers = new
        if shift < 1e-9:
            break
    inertia = np.sum((x - centers[assign]) ** 2)
    return centers, assign, inertia, it + 1


section("k-means")
centers, assign, inertia, n_iter = kmeans(points, 3)
order = np.lexsort((centers[:, 1], centers[:, 0]))
centers = centers[order]
remap = np.empty_like(order)
remap[order] = np.arange(3)
assign = remap[assign]
print(f"converged after {n_iter} iterations, inertia {inertia:.4f}")
print("centers:\n", centers)
print("cluster sizes:", np.bincount(assign, minlength=3))
matched = np.argmin(np.linalg.norm(true_centers[:, None] - centers[None], axis=-1), axis=1)
accuracy = np.mean(matched[labels_true] == assign)
print("agreement with the true clusters:", round(float(accuracy), 4))

# ---------------------------------------------------------------- least squares
section("least squares")
t = np.linspace(0.0, 2.0, 60)
y = 1.5 - 0.7 * t + 2.0 * t**2 + rng.normal(scale=0.05, size=t.shape)
A = np.vander(t, 3, increasing=True)
coef, residuals, rank, sv = np.linalg.lstsq(A, y, rcond=None)
print("design matrix:", A.shape, "rank", rank)
print("coefficients (1, t, t^2):", coef)
print("residual sum of squares:", np.round(residuals, 6))
print("singular values:", sv)
fit = A @ coef
r2 = 1.0 - np.sum((y - fit) ** 2) / np.sum((y - y.mean()) ** 2)
print(f"R^2 = {r2:.6f}")
print("polyfit agrees:", np.allclose(np.polyfit(t, y, 2)[::-1], coef))
print("condition number: %.2f" % np.linalg.cond(A))

# ---------------------------------------------------------------- FFT low-pass filter
section("FFT low-pass filter")
fs = 256.0
n = 512
time = np.arange(n) / fs
clean = np.sin(2 * np.pi * 5.0 * time) + 0.5 * np.sin(2 * np.pi * 12.0 * time)
noisy = clean + 0.4 * np.sin(2 * np.pi * 70.0 * time) + rng.normal(scale=0.2, size=n)
spectrum = np.fft.rfft(noisy)
freqs = np.fft.rfftfreq(n, d=1.0 / fs)
peaks = freqs[np.argsort(np.abs(spectrum))[::-1][:3]]
print("strongest frequencies (Hz):", np.sort(peaks))
spectrum[freqs > 20.0] = 0
filtered = np.fft.irfft(spectrum, n=n)


def rms(v):
    return np.sqrt(np.mean(v**2))


print("rms error before: %.4f  after: %.4f" % (rms(noisy - clean), rms(filtered - clean)))
snr_db = 20 * np.log10(rms(clean) / rms(filtered - clean))
print(f"SNR after filtering: {snr_db:.2f} dB")
print("filtered[:6]:", filtered[:6])

# ---------------------------------------------------------------- a few scalars and dtypes
section("scalars")
total = points.sum()
print("sum of all points:", total, "| as float:", float(total), "| repr:", repr(np.round(total, 3)))
print("dtype of the mean of int data:", np.arange(10).mean().dtype)
print("float32 arithmetic:", np.float32(0.1) * np.ones(3, dtype=np.float32))
print("cumulative sizes:", np.cumsum(np.bincount(assign)))
print("done")
