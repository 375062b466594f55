"""Floating-point error handling and machine limits: errstate/seterr/seterrcall, finfo,
nextafter, spacing, isclose tolerances, catastrophic cancellation and compensated sums."""

import warnings


def main(np):
    x = np.array([1.0, 0.0, -1.0, 2.0])
    y = np.array([0.0, 0.0, 0.0, 4.0])

    # default: warnings for divide and invalid
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        q = x / y
    print("x/y:", q, "warnings:", sorted({str(w.message) for w in caught}))

    with np.errstate(divide="ignore", invalid="ignore"):
        q2 = x / y
    print("silenced:", q2, "same:", np.array_equal(q, q2, equal_nan=True))

    with np.errstate(divide="raise"):
        try:
            x / y
        except FloatingPointError as e:
            print("raised FloatingPointError:", e)
    with np.errstate(all="raise"):
        try:
            np.sqrt(np.array([-1.0]))
        except FloatingPointError as e:
            print("invalid raised:", e)
        try:
            np.array([1e308]) * 10
        except FloatingPointError as e:
            print("overflow raised:", e)
    with np.errstate(under="raise"):
        try:
            np.array([1e-308]) / 1e10
        except FloatingPointError as e:
            print("underflow raised:", e)

    # element by element, the operands are scalars, and NumPy's scalar math reports "scalar divide"
    totals = np.array([4.5, 0.0, 2.0])
    counts = np.array([3, 0, 0])
    with np.errstate(divide="raise", invalid="raise"):
        for tot, cnt in zip(totals, counts):
            try:
                print("  rate:", tot / cnt)
            except FloatingPointError as e:
                print("  rate failed:", e)
    big = np.array([2**62]).sum()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = big * 4
        neg = -np.array([-128], dtype=np.int8)[0]
    print("scalar overflow:", wrapped, neg, [str(w.message) for w in caught])

    old = np.seterr(all="ignore")
    print("previous settings:", {k: old[k] for k in sorted(old)})
    print("log(0), log(-1):", np.log(np.array([0.0, -1.0])))
    print("current:", np.geterr()["divide"])
    np.seterr(**old)
    print("restored:", np.geterr() == old)

    log = []
    with np.errstate(call=lambda kind, flag: log.append(kind), divide="call"):
        np.array([1.0]) / np.array([0.0])
    print("seterrcall handler saw:", log)

    # machine limits
    for t in (np.float16, np.float32, np.float64):
        fi = np.finfo(t)
        print(f"  {fi.dtype}: eps={fi.eps} tiny={fi.tiny} max={fi.max} precision={fi.precision} bits={fi.bits}")
    eps = np.finfo(np.float64).eps
    print("1 + eps/2 == 1:", 1.0 + eps / 2 == 1.0, "1 + eps > 1:", 1.0 + eps > 1.0)
    print("spacing(1) == eps:", np.spacing(1.0) == eps, "spacing(1e16):", np.spacing(1e16))
    print("spacing float32:", np.spacing(np.float32(1.0)))
    print("nextafter(1, 2) - 1:", np.nextafter(1.0, 2.0) - 1.0, "nextafter(0, 1):", np.nextafter(0.0, 1.0))
    print("nextafter array:", np.nextafter(np.array([1.0, -1.0]), np.array([0.0, 0.0])))
    print("smallest subnormal == nextafter(0,1):", np.finfo(np.float64).smallest_subnormal == np.nextafter(0, 1))
    with np.errstate(over="ignore"):
        print("overflow to inf in float32:", np.array([3e38], dtype=np.float32) * 10)

    # isclose / allclose tolerances
    a = np.array([1.0, 1e-10, 1e10, np.nan, np.inf])
    b = a + np.array([1e-9, 2e-10, 1.0, 0.0, 0.0])
    print("isclose default:", np.isclose(a, b))
    print("isclose equal_nan:", np.isclose(a, b, equal_nan=True))
    print("isclose atol=0:", np.isclose(a, b, atol=0.0))
    print("allclose strict rtol:", np.allclose(1.0, 1.0 + 1e-6, rtol=1e-9), np.allclose(1.0, 1.0 + 1e-6))
    print("array_equal vs allclose for 0.1+0.2:", 0.1 + 0.2 == 0.3, np.isclose(0.1 + 0.2, 0.3))

    # cancellation: (1 - cos x) / x^2 near 0, naive vs stable
    xs = np.logspace(-8, -1, 8)
    with np.errstate(invalid="ignore"):
        naive = (1 - np.cos(xs)) / xs ** 2
    stable = 2 * np.sin(xs / 2) ** 2 / xs ** 2
    print("naive:", np.array2string(naive, precision=4))
    print("stable:", np.array2string(stable, precision=6))
    print("expm1/log1p accurate:", np.expm1(1e-10), np.log1p(1e-10), "vs", np.exp(1e-10) - 1)

    # summation error: float32 running sum vs pairwise vs Kahan
    vals = np.full(100_000, 0.1, dtype=np.float32)
    naive_sum = np.float32(0)
    for v in vals[:5000]:
        naive_sum = np.float32(naive_sum + v)
    kahan, c = np.float32(0), np.float32(0)
    for v in vals[:5000]:
        yk = np.float32(v - c)
        tk = np.float32(kahan + yk)
        c = np.float32((tk - kahan) - yk)
        kahan = tk
    print("5000 x 0.1f naive/kahan/np.sum:", naive_sum, kahan, vals[:5000].sum())
    print("100000 x 0.1f pairwise sum:", vals.sum(), "float64:", vals.astype(np.float64).sum())
    print("cumsum drift float32:", np.cumsum(vals)[-1], "math.fsum-like:", np.round(np.sum(vals, dtype=np.float64), 6))
    print("signbit of -0.0:", np.signbit(np.array([-0.0, 0.0])), "copysign:", np.copysign(3.0, -0.0))
    print("frexp/ldexp:", np.frexp(np.array([8.0, 0.3])), np.ldexp(0.6, np.array([1, 2])))
    return {"q": q, "naive": naive, "stable": stable, "isclose": np.isclose(a, b), "kahan": kahan,
            "sum": vals.sum()}
