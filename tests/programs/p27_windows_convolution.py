"""Window functions and convolution: window properties, spectral leakage, FIR smoothing,
correlation-based delay estimation and polynomial multiplication by convolution."""


def main(np):
    m = 16
    windows = {
        "hanning": np.hanning(m),
        "hamming": np.hamming(m),
        "blackman": np.blackman(m),
        "bartlett": np.bartlett(m),
        "kaiser(8.6)": np.kaiser(m, 8.6),
    }
    for name, w in windows.items():
        coherent_gain = w.sum() / m
        enbw = m * np.sum(w ** 2) / np.sum(w) ** 2
        print(f"  {name:12s} peak={w.max():.4f} ends=({w[0]:.4f},{w[-1]:.4f}) "
              f"gain={coherent_gain:.4f} enbw={enbw:.4f} symmetric={np.allclose(w, w[::-1])}")
    print("hanning:", np.round(np.hanning(7), 4))
    print("kaiser beta=0 is rectangular:", np.allclose(np.kaiser(m, 0), np.ones(m)))
    print("i0 at 0..3:", np.round(np.i0(np.arange(4.0)), 6))
    print("sinc:", np.round(np.sinc(np.linspace(-2, 2, 9)), 4))

    # leakage: a tone between bins, with and without a window
    n = 64
    t = np.arange(n)
    tone = np.sin(2 * np.pi * 10.5 * t / n)
    rect = np.abs(np.fft.rfft(tone))
    hann = np.abs(np.fft.rfft(tone * np.hanning(n)))
    far = np.r_[0:5, 17:33]
    print("leakage far from the tone (rect vs hann, dB):",
          np.round(20 * np.log10(rect[far].max() / rect.max()), 2),
          np.round(20 * np.log10(hann[far].max() / hann.max()), 2))

    # moving-average and windowed-sinc low-pass filters
    rng = np.random.default_rng(9)
    signal = np.sin(2 * np.pi * np.arange(200) / 50)
    noisy = signal + rng.normal(0, 0.4, 200)
    box = np.ones(9) / 9
    ma_full = np.convolve(noisy, box)
    ma_same = np.convolve(noisy, box, mode="same")
    ma_valid = np.convolve(noisy, box, mode="valid")
    print("convolve lengths full/same/valid:", len(ma_full), len(ma_same), len(ma_valid))
    taps = np.sinc(0.1 * (np.arange(31) - 15)) * np.hamming(31)
    taps /= taps.sum()
    lp = np.convolve(noisy, taps, mode="same")
    err_noisy = np.sqrt(np.mean((noisy - signal)[20:-20] ** 2))
    err_box = np.sqrt(np.mean((ma_same - signal)[20:-20] ** 2))
    err_lp = np.sqrt(np.mean((lp - signal)[20:-20] ** 2))
    print("rms error noisy/box/lowpass:", np.round([err_noisy, err_box, err_lp], 4))
    H = np.abs(np.fft.rfft(taps, 256))
    print("filter DC gain:", np.round(H[0], 6), "stopband max:", np.format_float_positional(H[60:].max(), precision=6))

    # delay estimation by cross-correlation
    ref = rng.normal(size=120)
    delay = 17
    echo = np.concatenate([np.zeros(delay), 0.6 * ref])[:120] + rng.normal(0, 0.05, 120)
    xc = np.correlate(echo, ref, mode="full")
    lags = np.arange(-len(ref) + 1, len(echo))
    est = lags[np.argmax(xc)]
    print("estimated delay:", est, "true:", delay)
    ac = np.correlate(ref, ref, mode="full")
    print("autocorrelation peak at zero lag:", lags[np.argmax(ac)] == 0, "symmetric:", np.allclose(ac, ac[::-1]))
    print("correlate valid:", np.correlate([1, 2, 3, 4], [1, 1]), "same:", np.correlate([1, 2, 3], [0, 1, 0.5], "same"))
    cc = np.corrcoef(echo[delay:], ref[:-delay])[0, 1]
    print("correlation after alignment:", np.round(cc, 4))

    # convolution multiplies polynomials
    p = np.array([1, 2, 3])
    q = np.array([4, 0, -1])
    print("convolve == polymul:", np.convolve(p, q), np.array_equal(np.convolve(p, q), np.polymul(p, q)))
    print("dice sum distribution (2d6 * 36):", np.convolve(np.ones(6, int), np.ones(6, int)))
    print("via FFT:", np.round(np.fft.irfft(np.fft.rfft(p, 8) * np.fft.rfft(q, 8), 8)[:5], 10))

    # 2-D smoothing by separable convolution along each axis
    img = np.zeros((7, 7))
    img[3, 3] = 1.0
    k = np.hanning(5)[1:-1]
    k = k / k.sum()
    rows = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, img)
    sm = np.apply_along_axis(lambda c: np.convolve(c, k, mode="same"), 0, rows)
    print("separable blur kernel:\n", np.round(sm[2:5, 2:5], 4), "sums to", np.round(sm.sum(), 6))
    print("equals outer(k, k):", np.allclose(sm[2:5, 2:5], np.outer(k, k)))
    return {"windows": np.vstack(list(windows.values())), "lp": lp, "xc": xc, "est": est, "sm": sm}
