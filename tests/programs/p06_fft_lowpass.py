"""FFT low-pass filtering of a noisy two-tone signal: spectrum, peak detection, filtering,
and a check of Parseval's theorem."""


def main(np):
    fs = 256.0                       # sampling rate, Hz
    n = 512
    t = np.arange(n) / fs
    rng = np.random.default_rng(2024)
    clean = 1.5 * np.sin(2 * np.pi * 5.0 * t) + 0.7 * np.cos(2 * np.pi * 12.0 * t + 0.3)
    noise = 0.8 * rng.standard_normal(n) + 0.4 * np.sin(2 * np.pi * 60.0 * t)
    signal = clean + noise
    print(f"n={n}, fs={fs}, duration={t[-1] + 1 / fs:.2f}s, snr={10 * np.log10(np.var(clean) / np.var(noise)):.2f} dB")

    spec = np.fft.rfft(signal)
    freqs = np.fft.rfftfreq(n, d=1 / fs)
    amp = 2.0 * np.abs(spec) / n
    print("spectrum bins:", spec.shape, spec.dtype, "resolution:", freqs[1])
    top = np.argsort(amp)[::-1][:4]
    for k in np.sort(top):
        print(f"  peak at {freqs[k]:6.2f} Hz amplitude {amp[k]:.3f} phase {np.angle(spec[k]):+.3f}")

    # full complex FFT frequencies agree with the real-FFT ones on the positive half
    full_freqs = np.fft.fftfreq(n, d=1 / fs)
    print("fftfreq head:", full_freqs[:4], "nyquist:", np.abs(full_freqs).max())
    print("shifted ends:", np.fft.fftshift(full_freqs)[[0, -1]])

    # ideal low-pass at 20 Hz
    cutoff = 20.0
    mask = freqs <= cutoff
    filtered = np.fft.irfft(spec * mask, n=n)
    err_before = np.sqrt(np.mean((signal - clean) ** 2))
    err_after = np.sqrt(np.mean((filtered - clean) ** 2))
    print(f"RMS error before={err_before:.4f} after={err_after:.4f} kept bins={mask.sum()}")

    # smooth (raised cosine) transition band instead of a brick wall
    taper = np.clip((30.0 - freqs) / 10.0, 0.0, 1.0)
    taper = 0.5 - 0.5 * np.cos(np.pi * taper)
    smooth = np.fft.irfft(spec * taper, n)
    print(f"tapered RMS error={np.sqrt(np.mean((smooth - clean) ** 2)):.4f}")

    # Parseval: energy in time equals energy in frequency
    full = np.fft.fft(signal)
    e_time = np.sum(signal ** 2)
    e_freq = np.sum(np.abs(full) ** 2) / n
    print(f"Parseval: {e_time:.6f} vs {e_freq:.6f} close={np.isclose(e_time, e_freq)}")
    print("round trip exact:", np.allclose(np.fft.ifft(full).real, signal))

    # windowed spectrum reduces leakage
    win = np.hanning(n)
    amp_w = 2.0 * np.abs(np.fft.rfft(signal * win)) / win.sum()
    leak_plain = amp[(freqs > 30) & (freqs < 50)].mean()
    leak_win = amp_w[(freqs > 30) & (freqs < 50)].mean()
    print(f"mean amplitude 30-50 Hz: rect={leak_plain:.4f} hann={leak_win:.4f}")

    # convolution theorem: circular convolution through FFT equals direct sum
    kern = np.zeros(n)
    kern[:5] = 1 / 5
    conv_fft = np.fft.irfft(np.fft.rfft(signal) * np.fft.rfft(kern), n)
    conv_direct = np.array([np.dot(signal[(i - np.arange(5)) % n], kern[:5]) for i in range(8)])
    print("moving average agrees:", np.allclose(conv_fft[:8], conv_direct))
    with np.printoptions(precision=4):
        print("first filtered samples:", filtered[:6])
        print("spectrum sample:", spec[9:12])
    return {"freqs": freqs, "amp": amp, "filtered": filtered, "peaks": np.sort(top),
            "errors": (err_before, err_after), "parseval": e_time, "spec": spec}
