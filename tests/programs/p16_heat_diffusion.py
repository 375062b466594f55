"""Explicit finite-difference solver for the 2-D heat equation on a square plate.

The interior is updated with the five-point Laplacian built from slices of a padded copy of
the field; the boundary conditions (fixed edges, or insulated edges) come from ``np.pad``.
"""


def laplacian(np, u, mode):
    if mode == "fixed":
        p = np.pad(u, 1, mode="constant", constant_values=0.0)
    else:
        p = np.pad(u, 1, mode="edge")
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u


def solve(np, u0, alpha, dt, steps, mode):
    u = u0.copy()
    energy = np.empty(steps)
    for k in range(steps):
        u = u + alpha * dt * laplacian(np, u, mode)
        energy[k] = u.sum()
    return u, energy


def main(np):
    n = 24
    x = np.linspace(0.0, 1.0, n)
    X, Y = np.meshgrid(x, x, indexing="ij")
    # a hot square in the middle, plus a Gaussian bump in a corner
    u0 = np.zeros((n, n))
    u0[8:16, 8:16] = 100.0
    u0 += 50.0 * np.exp(-((X - 0.2) ** 2 + (Y - 0.2) ** 2) / 0.01)
    print("initial max/mean:", np.round(u0.max(), 3), np.round(u0.mean(), 3))

    alpha, dt = 1.0, 0.2  # stable: alpha*dt <= 1/4 for unit grid spacing
    steps = 60
    u_fixed, e_fixed = solve(np, u0, alpha, dt, steps, "fixed")
    u_ins, e_ins = solve(np, u0, alpha, dt, steps, "insulated")

    print("fixed edges   : max", np.round(u_fixed.max(), 4), "total heat", np.round(e_fixed[-1], 4))
    print("insulated     : max", np.round(u_ins.max(), 4), "total heat", np.round(e_ins[-1], 4))
    # insulated edges conserve heat; fixed (cold) edges lose it
    print("heat conserved (insulated):", np.allclose(e_ins, u0.sum()))
    print("heat decreasing (fixed):", bool(np.all(np.diff(e_fixed) <= 1e-12)))

    centre = u_fixed[n // 2 - 2:n // 2 + 2, n // 2 - 2:n // 2 + 2]
    print("centre block:\n", np.array2string(centre, precision=3, suppress_small=True))
    hot = np.argwhere(u_fixed > 0.5 * u_fixed.max())
    print("cells above half max:", len(hot), "bounding box:", hot.min(axis=0), hot.max(axis=0))
    i, j = np.unravel_index(np.argmax(u_ins), u_ins.shape)
    print("hottest insulated cell:", (int(i), int(j)), np.round(u_ins[i, j], 4))

    # 1-D profile along the middle row, and its symmetry
    row = u_ins[n // 2]
    print("row profile:", np.array2string(row[::3], precision=2))
    sym_err = np.abs(u_fixed - u_fixed.T).max()
    print("symmetry error:", np.format_float_scientific(sym_err, precision=2))

    # time to cool below a threshold at the centre (fixed edges), by running longer
    u = u0.copy()
    centre_temps = []
    for _ in range(200):
        u = u + alpha * dt * laplacian(np, u, "fixed")
        centre_temps.append(u[n // 2, n // 2])
    centre_temps = np.asarray(centre_temps)
    below = np.nonzero(centre_temps < 20.0)[0]
    first = int(below[0]) + 1 if below.size else -1
    print("steps until centre < 20:", first)
    print("centre temps every 40 steps:", np.round(centre_temps[::40], 3))
    return {"u_fixed": u_fixed, "u_ins": u_ins, "energy": e_fixed, "first": first,
            "centre": centre_temps}
