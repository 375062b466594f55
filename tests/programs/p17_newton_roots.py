"""Root finding for polynomials: Newton's method against np.roots, with np.poly,
np.polyder, np.polyval, np.polyfit and deflation."""


def newton(np, coeffs, x0, tol=1e-12, maxiter=50):
    d = np.polyder(coeffs)
    x = x0
    for it in range(1, maxiter + 1):
        fx = np.polyval(coeffs, x)
        step = fx / np.polyval(d, x)
        x = x - step
        if np.abs(step) < tol:
            return x, it
    return x, maxiter


def main(np):
    true_roots = np.array([-2.0, 0.5, 1.0, 3.0])
    p = np.poly(true_roots)
    print("coefficients:", p)
    print("derivative:", np.polyder(p))
    print("second derivative:", np.polyder(p, 2))
    print("antiderivative:", np.round(np.polyint(p), 4))

    r = np.sort(np.roots(p))
    print("np.roots:", np.round(r, 10))
    print("matches:", np.allclose(r, true_roots))

    starts = np.array([-3.0, 0.2, 1.2, 4.0])
    found, iters = [], []
    for s in starts:
        x, it = newton(np, p, s)
        found.append(x)
        iters.append(it)
    found = np.array(found)
    print("newton roots:", np.round(found, 12))
    print("iterations:", iters)
    print("residuals small:", bool(np.all(np.abs(np.polyval(p, found)) < 1e-9)))

    # vectorised Newton on a grid of starting points: basins of attraction
    x = np.linspace(-4, 5, 37)
    d = np.polyder(p)
    for _ in range(60):
        x = x - np.polyval(p, x) / np.polyval(d, x)
    basin = np.argmin(np.abs(x[:, None] - true_roots[None, :]), axis=1)
    print("basin labels:", basin)
    print("basin sizes:", np.bincount(basin, minlength=4))

    # deflation: divide out each root in turn
    q = p.copy()
    deflated = []
    for root in true_roots:
        q, rem = np.polydiv(q, np.array([1.0, -root]))
        deflated.append(float(np.abs(rem).max()))
    print("deflation remainders tiny:", max(deflated) < 1e-9, "final quotient:", q)

    # complex roots of x^2 + 2x + 5 and of x^4 + 1
    c = np.roots([1, 2, 5])
    print("complex roots:", np.sort_complex(c))
    w = np.roots([1, 0, 0, 0, 1])
    print("|roots of x^4+1|:", np.round(np.abs(w), 12))
    print("angles/pi:", np.round(np.sort(np.angle(w)) / np.pi, 6))

    # polynomial fit recovers the coefficients from noisy-free samples
    xs = np.linspace(-2, 3, 11)
    ys = np.polyval(p, xs)
    fit = np.polyfit(xs, ys, 4)
    print("polyfit error:", np.format_float_scientific(np.abs(fit - p).max(), precision=1) if np.abs(fit - p).max() > 0 else "0")
    print("fit close:", np.allclose(fit, p))
    prod = np.polymul([1, -1], [1, 1])
    print("polymul:", prod, "polyadd:", np.polyadd(prod, [1, 0, 1]), "polysub:", np.polysub(prod, [1, 0]))

    # extrema: roots of the derivative, classified by the second derivative
    crit = np.sort(np.roots(np.polyder(p)).real)
    curv = np.polyval(np.polyder(p, 2), crit)
    kinds = np.where(curv > 0, "min", "max")
    for c0, k in zip(crit, kinds):
        print(f"  critical point {c0:+.6f}: {k}, value {np.polyval(p, c0):.6f}")
    return {"roots": r, "newton": found, "basin": basin, "quotient": q, "crit": crit}
