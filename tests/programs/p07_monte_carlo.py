"""Seeded random walks and Monte Carlo estimates, with the Generator API and the legacy
module-level functions (np.random.seed / rand / randn / choice)."""


def main(np):
    # --- legacy global state
    np.random.seed(1234)
    u = np.random.rand(5)
    g = np.random.randn(2, 3)
    print("rand:", u)
    print("randn:\n", g)
    pts = np.random.rand(20000, 2)
    inside = np.sum(pts ** 2, axis=1) <= 1.0
    pi_est = 4.0 * inside.mean()
    print(f"pi estimate: {pi_est:.5f} (error {abs(pi_est - np.pi):.5f})")

    faces = np.random.choice(6, size=600) + 1
    counts = np.bincount(faces, minlength=7)[1:]
    chi2 = np.sum((counts - 100.0) ** 2 / 100.0)
    print("die counts:", counts, f"chi2={chi2:.3f}")
    colours = np.random.choice(["red", "green", "blue"], size=8, p=[0.5, 0.3, 0.2])
    print("colours:", colours)
    print("randint:", np.random.randint(0, 10, size=6), "uniform:", np.round(np.random.uniform(-1, 1, 3), 4))

    # re-seeding reproduces the stream
    np.random.seed(1234)
    print("reproducible:", np.array_equal(np.random.rand(5), u))
    state = np.random.get_state()
    a = np.random.normal(size=3)
    np.random.set_state(state)
    b = np.random.normal(size=3)
    print("state restore:", np.array_equal(a, b), a)

    # --- Generator API: random walks
    rng = np.random.default_rng(99)
    n_walkers, n_steps = 200, 500
    steps = rng.choice(np.array([-1, 1]), size=(n_walkers, n_steps))
    paths = np.cumsum(steps, axis=1)
    final = paths[:, -1]
    print(f"final position: mean={final.mean():+.3f} var={final.var():.2f} (theory {n_steps})")
    max_dist = np.abs(paths).max(axis=1)
    print("max excursion quartiles:", np.percentile(max_dist, [25, 50, 75]))
    first_hit = np.argmax(np.abs(paths) >= 20, axis=1)
    hit = np.any(np.abs(paths) >= 20, axis=1)
    print(f"walkers reaching |x|=20: {hit.sum()} mean first hit: {first_hit[hit].mean():.1f}")
    returns = np.sum(paths == 0, axis=1)
    print("returns to origin (first 10):", returns[:10])

    # Gaussian random walk with drift, 2-D
    incr = rng.normal(loc=[0.05, -0.02], scale=1.0, size=(1000, 2))
    pos = np.cumsum(incr, axis=0)
    print("2-D walk end:", np.round(pos[-1], 4), "dist:", f"{np.linalg.norm(pos[-1]):.4f}")

    # Monte Carlo integral of exp(-x^2) on [0, 2] with a standard error
    xs = rng.uniform(0.0, 2.0, size=50000)
    fx = np.exp(-xs ** 2)
    est = 2.0 * fx.mean()
    se = 2.0 * fx.std(ddof=1) / np.sqrt(xs.size)
    print(f"integral ~ {est:.5f} +/- {se:.5f}")

    # option pricing by geometric Brownian motion
    s0, k, r, sigma, T = 100.0, 105.0, 0.03, 0.2, 1.0
    z = rng.standard_normal(40000)
    sT = s0 * np.exp((r - 0.5 * sigma ** 2) * T + sigma * np.sqrt(T) * z)
    payoff = np.maximum(sT - k, 0.0)
    price = np.exp(-r * T) * payoff.mean()
    print(f"call price ~ {price:.4f}; in the money: {np.mean(payoff > 0):.2%}")
    shuffled = rng.permutation(10)
    ints = rng.integers(1, 7, size=(2, 5))
    print("permutation:", shuffled, "integers:\n", ints)
    print("repr of estimate:", repr(est))
    return {"u": u, "pi": pi_est, "counts": counts, "colours": colours, "final": final,
            "pos": pos[-1], "integral": est, "price": price, "perm": shuffled, "ints": ints}
