"""Numerical integration and differentiation on sampled data: trapezoid and Simpson rules,
gradients on uniform and non-uniform grids, cumulative integrals and interpolation."""


def simpson(np, y, x):
    """Composite Simpson's rule for an even number of intervals on a uniform grid."""
    h = x[1] - x[0]
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


def main(np):
    # integrals of sin on [0, pi] with increasing resolution: convergence orders
    print("   n   trapezoid error    simpson error")
    errs = []
    for n in (4, 8, 16, 32, 64):
        x = np.linspace(0.0, np.pi, n + 1)
        y = np.sin(x)
        et = abs(np.trapezoid(y, x) - 2.0)
        es = abs(simpson(np, y, x) - 2.0)
        errs.append((et, es))
        print(f"{n:4d}  {et:16.3e}  {es:15.3e}")
    errs = np.array(errs)
    orders = np.log2(errs[:-1] / errs[1:])
    print("observed orders:", np.round(orders.mean(axis=0), 3))

    # trapezoid with dx and along an axis of a 2-D array
    t = np.linspace(0, 1, 101)
    family = np.vstack([t ** k for k in range(4)])
    areas = np.trapezoid(family, dx=t[1] - t[0], axis=1)
    print("areas of t^k:", np.round(areas, 6), "exact:", np.round(1 / np.arange(1, 5), 6))

    # derivatives: gradient (second order) vs forward differences
    x = np.linspace(0, 2 * np.pi, 50)
    f = np.sin(x) * np.exp(-x / 4)
    exact = np.cos(x) * np.exp(-x / 4) - f / 4
    g = np.gradient(f, x)
    g2 = np.gradient(f, x, edge_order=2)
    fd = np.diff(f) / np.diff(x)
    print(f"max error: gradient={np.max(np.abs(g - exact)):.3e} edge_order2={np.max(np.abs(g2 - exact)):.3e} "
          f"forward={np.max(np.abs(fd - exact[:-1])):.3e}")
    second = np.diff(f, n=2) / (x[1] - x[0]) ** 2
    print("second derivative at the middle:", f"{second[24]:.5f}")

    # non-uniform grid: gradient with coordinates
    xn = np.sort(np.concatenate([np.linspace(0, 1, 8), np.array([0.05, 0.33, 0.71])]))
    yn = xn ** 3
    gn = np.gradient(yn, xn)
    print("non-uniform grid:", np.round(xn, 3))
    print("d/dx x^3 vs 3x^2 max error:", f"{np.max(np.abs(gn - 3 * xn ** 2)[1:-1]):.4f}")

    # 2-D gradient of a scalar field; divergence of that gradient (a Laplacian)
    yy, xx = np.meshgrid(np.linspace(-1, 1, 21), np.linspace(-1, 1, 21), indexing="ij")
    phi = xx ** 2 + 2 * yy ** 2
    dphi_dy, dphi_dx = np.gradient(phi, 0.1, 0.1)
    lap = np.gradient(dphi_dy, 0.1, axis=0) + np.gradient(dphi_dx, 0.1, axis=1)
    print("laplacian interior (expect 6):", np.unique(np.round(lap[2:-2, 2:-2], 8)))

    # cumulative integral with cumsum of trapezoids; velocity -> position
    tt = np.linspace(0, 10, 201)
    vel = 3 * np.cos(tt) + 0.5 * tt
    dt = np.diff(tt)
    pos = np.concatenate(([0.0], np.cumsum(0.5 * (vel[1:] + vel[:-1]) * dt)))
    exact_pos = 3 * np.sin(tt) + 0.25 * tt ** 2
    print(f"final position {pos[-1]:.6f} exact {exact_pos[-1]:.6f}; cumsum of steps {np.cumsum(dt)[-1]:.1f}")
    print("max cumulative error:", f"{np.abs(pos - exact_pos).max():.2e}")

    # interpolation: resample a coarse table, periodic interpolation, integrate interpolant
    xp = np.array([0.0, 1.0, 2.5, 4.0, 6.0])
    fp = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    xq = np.linspace(-1, 7, 9)
    print("interp:", np.interp(xq, xp, fp))
    print("with fill:", np.interp(xq, xp, fp, left=np.nan, right=-1.0))
    ang = np.interp(np.array([350.0, 5.0, 185.0]), np.array([0.0, 90.0, 180.0, 270.0]),
                    np.array([0.0, 1.0, 0.0, -1.0]), period=360)
    print("periodic:", np.round(ang, 6))
    fine = np.linspace(0, 6, 601)
    area = np.trapezoid(np.interp(fine, xp, fp), fine)
    print("area under table:", repr(np.round(area, 10)), "exact piecewise:",
          np.trapezoid(fp, xp))
    # ediff1d and the fundamental theorem: sum of differences telescopes
    dd = np.ediff1d(fp, to_begin=0.0)
    print("ediff1d:", dd, "telescopes:", np.isclose(dd.sum(), fp[-1] - fp[0]))
    return {"errs": errs, "areas": areas, "g": g, "g2": g2, "lap": lap, "pos": pos,
            "interp": np.interp(xq, xp, fp), "area": area, "periodic": ang}
