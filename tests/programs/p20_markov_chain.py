"""Linear algebra of a Markov chain: stationary distribution by eigenvectors, by powers of
the transition matrix and by a linear solve; absorption probabilities and mean hitting times."""


def main(np):
    # weather chain: sunny, cloudy, rainy, stormy
    states = ["sunny", "cloudy", "rainy", "stormy"]
    P = np.array([
        [0.60, 0.25, 0.10, 0.05],
        [0.30, 0.40, 0.25, 0.05],
        [0.20, 0.30, 0.40, 0.10],
        [0.10, 0.30, 0.40, 0.20],
    ])
    print("rows sum to one:", np.allclose(P.sum(axis=1), 1.0))

    # left eigenvector for eigenvalue 1
    vals, vecs = np.linalg.eig(P.T)
    order = np.argsort(-np.abs(vals))
    vals, vecs = vals[order], vecs[:, order]
    print("eigenvalue moduli:", np.round(np.abs(vals), 6))
    pi_eig = np.real(vecs[:, 0])
    pi_eig = pi_eig / pi_eig.sum()
    print("stationary (eig):", np.round(pi_eig, 6))

    # powers of P converge to a matrix with identical rows
    P50 = np.linalg.matrix_power(P, 50)
    print("P^50 rows equal:", np.allclose(P50, P50[0]))
    print("stationary (power):", np.round(P50[0], 6))

    # linear solve: pi (P - I) = 0 with sum(pi) = 1
    A = np.vstack([(P - np.eye(4)).T, np.ones(4)])
    b = np.zeros(5)
    b[-1] = 1.0
    pi_ls, res, rank, sv = np.linalg.lstsq(A, b, rcond=None)
    print("stationary (lstsq):", np.round(pi_ls, 6), "rank", rank)
    print("all agree:", np.allclose(pi_eig, P50[0]) and np.allclose(pi_eig, pi_ls))
    for s, p in zip(states, pi_eig):
        print(f"  long-run share of {s:6s}: {p:.4f}")

    # detailed balance check (this chain is not reversible)
    flow = pi_eig[:, None] * P
    print("reversible:", np.allclose(flow, flow.T))
    print("spectral gap:", np.round(1 - np.abs(vals[1]), 6))

    # mean first passage time to 'stormy' from each other state: (I - Q) m = 1
    keep = [0, 1, 2]
    Q = P[np.ix_(keep, keep)]
    m = np.linalg.solve(np.eye(3) - Q, np.ones(3))
    print("mean days until storm:", np.round(m, 4))
    print("mean return time to storm:", np.round(1 / pi_eig[3], 4))

    # the limit matrix of a chain that forgets its start at once has identical rows: singular
    try:
        np.linalg.inv(np.full((4, 4), 0.25))
    except np.linalg.LinAlgError as err:
        print("inverting the rank-one limit failed:", err)
    print("rank of P - I:", np.linalg.matrix_rank(P - np.eye(4)), "cond > 1e15:", np.linalg.cond(P - np.eye(4)) > 1e15)

    # absorbing chain: gambler's ruin with 5 states, 0 and 4 absorbing
    p_win = 0.45
    G = np.zeros((5, 5))
    G[0, 0] = G[4, 4] = 1.0
    for i in range(1, 4):
        G[i, i + 1] = p_win
        G[i, i - 1] = 1 - p_win
    Qg = G[1:4, 1:4]
    Rg = G[1:4][:, [0, 4]]
    N = np.linalg.inv(np.eye(3) - Qg)
    B = N @ Rg
    print("fundamental matrix:\n", np.round(N, 4))
    print("absorption probabilities [ruin, win]:\n", np.round(B, 4))
    print("expected steps to absorption:", np.round(N.sum(axis=1), 4))
    print("det(I-Q):", np.round(np.linalg.det(np.eye(3) - Qg), 6))

    # distribution after n days starting from sunny, and the total-variation distance
    x = np.array([1.0, 0.0, 0.0, 0.0])
    tv = []
    for n in range(1, 9):
        x = x @ P
        tv.append(0.5 * np.abs(x - pi_eig).sum())
    tv = np.array(tv)
    print("TV distance:", np.array2string(tv, precision=5, floatmode="fixed"))
    print("geometric decay ratio:", np.round(tv[1:] / tv[:-1], 4)[-3:])

    # simulate a path and compare empirical frequencies
    rng = np.random.default_rng(11)
    cum = np.cumsum(P, axis=1)
    s = 0
    path = np.empty(5000, dtype=int)
    u = rng.random(5000)
    for t in range(5000):
        s = int(np.searchsorted(cum[s], u[t]))
        path[t] = s
    freq = np.bincount(path, minlength=4) / path.size
    print("empirical frequencies:", np.round(freq, 3), "max error:", np.round(np.max(np.abs(freq - pi_eig)), 3))
    return {"pi": pi_eig, "P50": P50, "m": m, "B": B, "tv": tv, "freq": freq}
