"""Least-squares fitting: lstsq on a design matrix, polyfit/polyval, Vandermonde systems,
weighted fits and model selection by residuals."""


def main(np):
    rng = np.random.default_rng(5)
    x = np.linspace(-2.0, 3.0, 40)
    true = np.array([0.5, -1.2, 2.0, 0.7])            # highest power first (polyval order)
    y = np.polyval(true, x) + rng.normal(0.0, 0.4, x.size)
    print("x range:", x[0], x[-1], "n =", x.size)

    # straight line through lstsq with an explicit design matrix
    A = np.column_stack([x, np.ones_like(x)])
    (slope, intercept), res, rank, sv = np.linalg.lstsq(A, y, rcond=None)
    print(f"line: y = {slope:.4f} x + {intercept:.4f}; rank={rank}; residual={res[0]:.4f}")
    print("singular values:", sv)

    # polynomial fits of increasing degree
    fits = {}
    for deg in range(1, 6):
        coef = np.polyfit(x, y, deg)
        resid = y - np.polyval(coef, x)
        rss = float(np.dot(resid, resid))
        aic = x.size * np.log(rss / x.size) + 2 * (deg + 1)
        fits[deg] = coef
        print(f"deg {deg}: rss={rss:9.4f} aic={aic:8.3f} coef={np.array2string(coef, precision=3)}")
    best = min(fits, key=lambda d: x.size * np.log(np.sum((y - np.polyval(fits[d], x)) ** 2) / x.size) + 2 * (d + 1))
    print("best degree by AIC:", best)

    # the same cubic via a Vandermonde matrix and lstsq
    V = np.vander(x, 4)
    coef_v, *_ = np.linalg.lstsq(V, y, rcond=None)
    print("vander cubic:", np.round(coef_v, 6))
    print("agrees with polyfit:", np.allclose(coef_v, fits[3]))
    print("increasing vander row:", np.vander(np.array([2.0]), 4, increasing=True))

    # normal equations and the pseudo-inverse give the same answer
    coef_ne = np.linalg.solve(V.T @ V, V.T @ y)
    coef_pinv = np.linalg.pinv(V) @ y
    print("normal eq. max diff:", f"{np.max(np.abs(coef_ne - coef_v)):.2e}",
          "pinv max diff:", f"{np.max(np.abs(coef_pinv - coef_v)):.2e}")

    # covariance of the estimate, standard errors
    coef_c, cov = np.polyfit(x, y, 3, cov=True)
    se = np.sqrt(np.diag(cov))
    for name, c, s in zip(["a3", "a2", "a1", "a0"], coef_c, se):
        print(f"  {name} = {c:+.4f} +/- {s:.4f}")

    # weighted fit: downweight the noisiest half
    w = np.where(x > 0.5, 0.25, 1.0)
    coef_w = np.polyfit(x, y, 3, w=w)
    print("weighted:", np.round(coef_w, 4))

    # evaluate on a fine grid, roots and derivative of the fitted cubic
    xf = np.linspace(-2, 3, 6)
    print("fitted values:", np.round(np.polyval(coef_c, xf), 4))
    roots = np.roots(coef_c)
    real_roots = np.sort(roots[np.isclose(roots.imag, 0)].real)
    print("real roots:", np.round(real_roots, 5))
    dcoef = np.polyder(coef_c)
    icoef = np.polyint(coef_c)
    print("derivative coef:", np.round(dcoef, 4), "area on [-2,3]:",
          f"{np.polyval(icoef, 3.0) - np.polyval(icoef, -2.0):.4f}")
    r2 = 1 - np.sum((y - np.polyval(coef_c, x)) ** 2) / np.sum((y - y.mean()) ** 2)
    print("R^2:", repr(np.round(r2, 6)))
    return {"line": (slope, intercept), "coef3": coef_c, "se": se, "best": best,
            "weighted": coef_w, "roots": real_roots, "r2": r2, "sv": sv}
