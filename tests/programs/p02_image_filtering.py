"""Image filtering on a synthetic image with sliding windows and strided views:
box blur, Sobel edge magnitude, median filter and a thresholded edge map."""


def synthetic_image(np, n=32):
    yy, xx = np.mgrid[0:n, 0:n]
    img = np.zeros((n, n), dtype=np.float64)
    img[(xx - 10) ** 2 + (yy - 12) ** 2 < 36] = 1.0          # a disc
    img[18:28, 16:29] = 0.6                                  # a rectangle
    img += 0.05 * np.sin(xx / 3.0) * np.cos(yy / 5.0)        # smooth texture
    return img


def correlate2d(np, img, kernel):
    """'valid'-mode correlation with a sliding-window view and einsum."""
    kh, kw = kernel.shape
    win = np.lib.stride_tricks.sliding_window_view(img, (kh, kw))
    return np.einsum("ijkl,kl->ij", win, kernel)


def main(np):
    img = synthetic_image(np)
    print("image", img.shape, img.dtype, f"mean={img.mean():.5f}")

    # box blur: pad with edge values so the output keeps the image's shape
    padded = np.pad(img, 1, mode="edge")
    box = np.ones((3, 3)) / 9.0
    blurred = correlate2d(np, padded, box)
    print("blurred shape:", blurred.shape, "max:", np.round(blurred.max(), 6))

    # the same blur through as_strided, to check the two views agree
    s0, s1 = padded.strides
    h, w = img.shape
    windows = np.lib.stride_tricks.as_strided(padded, shape=(h, w, 3, 3),
                                              strides=(s0, s1, s0, s1), writeable=False)
    blurred2 = windows.mean(axis=(2, 3))
    print("as_strided agrees:", np.allclose(blurred, blurred2), "max abs diff:",
          f"{np.max(np.abs(blurred - blurred2)):.2e}")

    # Sobel edges
    kx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=float)
    ky = kx.T.copy()
    gx = correlate2d(np, padded, kx)
    gy = correlate2d(np, padded, ky)
    mag = np.hypot(gx, gy)
    angle = np.degrees(np.arctan2(gy, gx))
    print(f"edge magnitude: max={mag.max():.4f} mean={mag.mean():.4f}")
    thresh = 0.5 * mag.max()
    edges = mag > thresh
    print("edge pixels:", np.count_nonzero(edges))
    rows, cols = np.nonzero(edges)
    print("edge bounding box:", rows.min(), rows.max(), cols.min(), cols.max())
    hist, _ = np.histogram(angle[edges], bins=8, range=(-180, 180))
    print("orientation histogram:", hist)

    # median filter (3x3) on a salt-and-pepper corrupted copy
    rng = np.random.default_rng(7)
    noisy = img.copy()
    salt = rng.random(img.shape) < 0.05
    noisy[salt] = rng.choice([0.0, 1.0], size=int(salt.sum()))
    win = np.lib.stride_tricks.sliding_window_view(np.pad(noisy, 1, mode="reflect"), (3, 3))
    med = np.median(win.reshape(h, w, 9), axis=-1)
    err_noisy = np.abs(noisy - img).mean()
    err_med = np.abs(med - img).mean()
    print(f"mean abs error: noisy={err_noisy:.5f} median-filtered={err_med:.5f}")

    # downsample by block averaging, print a small ASCII rendering
    small = img.reshape(8, 4, 8, 4).mean(axis=(1, 3))
    with np.printoptions(precision=2, suppress=True, linewidth=100):
        print(small)
    chars = np.array(list(" .:-=+*#"))
    levels = np.clip((small * 7.99).astype(int), 0, 7)
    for row in chars[levels]:
        print("".join(row.tolist()))

    return {"blurred": blurred, "mag": mag, "edges": edges, "hist": hist, "median": med,
            "small": small, "err": (err_noisy, err_med)}
