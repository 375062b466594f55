"""Complex numbers and signals: phasors, a quadrature demodulator, FFT spectra with fftshift,
and the analytic signal."""


def main(np):
    fs = 64.0
    n = 128
    t = np.arange(n) / fs
    # two tones plus a DC offset
    x = 0.5 + 1.5 * np.cos(2 * np.pi * 5 * t + np.pi / 4) + 0.75 * np.sin(2 * np.pi * 12 * t)
    X = np.fft.fft(x)
    f = np.fft.fftfreq(n, d=1 / fs)
    mag = np.abs(X) / n
    peaks = np.flatnonzero(mag > 0.1)
    print("peak bins:", peaks, "frequencies:", f[peaks])
    print("peak magnitudes:", np.round(mag[peaks], 4))
    k5 = int(np.argmin(np.abs(f - 5)))
    print("phase at 5 Hz / pi:", np.round(np.angle(X[k5]) / np.pi, 6))
    print("phase in degrees:", np.round(np.angle(X[k5], deg=True), 4))

    # fftshift puts zero frequency in the middle
    fs_shift = np.fft.fftshift(f)
    print("shifted freqs (ends):", fs_shift[:3], fs_shift[-3:])
    print("ifftshift undoes:", np.array_equal(np.fft.ifftshift(fs_shift), f))
    Xs = np.fft.fftshift(X)
    print("DC in centre:", np.round(Xs[n // 2].real / n, 6))

    # Hermitian symmetry of a real signal's spectrum
    print("conjugate symmetric:", np.allclose(X[1:][::-1], np.conj(X[1:])))
    print("rfft agrees:", np.allclose(np.fft.rfft(x), X[: n // 2 + 1]))
    print("round trip:", np.allclose(np.fft.ifft(X).real, x), "imag residue tiny:", np.abs(np.fft.ifft(X).imag).max() < 1e-12)
    print("Parseval:", np.allclose(np.sum(np.abs(x) ** 2), np.sum(np.abs(X) ** 2) / n))

    # phasors: adding sinusoids of one frequency is adding complex numbers
    p1 = 2.0 * np.exp(1j * np.pi / 6)
    p2 = 1.0 * np.exp(-1j * np.pi / 3)
    s = p1 + p2
    print("phasor sum:", np.round(s, 6), "amplitude:", np.round(np.abs(s), 6), "phase:", np.round(np.angle(s), 6))
    direct = 2 * np.cos(3 * t + np.pi / 6) + np.cos(3 * t - np.pi / 3)
    via = np.real(s * np.exp(1j * 3 * t))
    print("phasor identity holds:", np.allclose(direct, via))

    # quadrature demodulation of an AM signal
    carrier = 16.0
    env = 1.0 + 0.5 * np.cos(2 * np.pi * 1 * t)
    am = env * np.cos(2 * np.pi * carrier * t)
    iq = am * np.exp(-2j * np.pi * carrier * t)
    # ideal low-pass by zeroing the spectrum above 4 Hz
    IQ = np.fft.fft(iq)
    IQ[np.abs(f) > 4] = 0
    base = np.fft.ifft(IQ)
    recovered = 2 * np.abs(base)
    print("envelope recovered:", np.allclose(recovered, env, atol=1e-9))
    print("I/Q at t=0:", np.round(np.real(base[0]), 6), np.round(np.imag(base[0]), 6))

    # analytic signal (Hilbert transform via the FFT)
    h = np.zeros(n)
    h[0] = h[n // 2] = 1
    h[1:n // 2] = 2
    analytic = np.fft.ifft(np.fft.fft(am) * h)
    print("analytic envelope matches:", np.allclose(np.abs(analytic), env, atol=1e-9))
    inst_phase = np.unwrap(np.angle(analytic))
    inst_freq = np.diff(inst_phase) * fs / (2 * np.pi)
    print("instantaneous frequency mean:", np.round(inst_freq.mean(), 6))

    # complex arithmetic and dtypes
    z = np.array([3 + 4j, -1 + 1j, 2 - 2j, -5j])
    print("abs:", np.abs(z), "conj:", np.conjugate(z))
    print("real/imag:", np.real(z), np.imag(z), "dtype:", z.dtype, np.real(z).dtype)
    print("polar -> rect:", np.allclose(np.abs(z) * np.exp(1j * np.angle(z)), z))
    print("sqrt of -4:", np.sqrt(-4 + 0j), "emath:", np.emath.sqrt(-4), "log(-1):", np.log(-1 + 0j))
    print("iscomplexobj:", np.iscomplexobj(z), "isreal:", np.isreal(np.array([1 + 0j, 1j])))
    print("real_if_close:", np.real_if_close(np.array([2.0 + 1e-16j, 3.0 + 0j])))
    print("sort_complex:", np.sort_complex(z))
    print("complex64 precision:", z.astype(np.complex64).dtype, np.finfo(np.complex64).eps)
    roots_of_unity = np.exp(2j * np.pi * np.arange(6) / 6)
    print("sum of 6th roots of unity ~ 0:", np.abs(roots_of_unity.sum()) < 1e-12)
    print("product:", np.round(np.prod(roots_of_unity), 6))
    return {"X": X, "mag": mag, "recovered": recovered, "inst_freq": inst_freq, "s": s, "z": z}
