"""Conway's game of life on a torus with np.roll, plus a 1-D elementary cellular automaton
(rule 30/110) with boolean masks and bit tricks."""


def life_step(np, grid):
    neighbours = sum(np.roll(np.roll(grid, dy, axis=0), dx, axis=1)
                     for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
    born = (~grid) & (neighbours == 3)
    survive = grid & ((neighbours == 2) | (neighbours == 3))
    return born | survive


def show(np, grid):
    for row in np.where(grid, "#", ".").tolist():
        print("".join(row))


def elementary(np, rule, width, steps):
    table = np.array([(rule >> i) & 1 for i in range(8)], dtype=bool)
    row = np.zeros(width, dtype=bool)
    row[width // 2] = True
    rows = [row]
    for _ in range(steps - 1):
        left, right = np.roll(row, 1), np.roll(row, -1)
        idx = (left.astype(np.uint8) << 2) | (row.astype(np.uint8) << 1) | right.astype(np.uint8)
        row = table[idx]
        rows.append(row)
    return np.array(rows)


def main(np):
    n = 12
    grid = np.zeros((n, n), dtype=bool)
    glider = np.array([[0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=bool)
    grid[1:4, 1:4] = glider
    grid[8, 7:10] = True                       # a blinker
    print("initial population:", grid.sum())
    show(np, grid)

    history = [grid]
    for step in range(4):
        grid = life_step(np, grid)
        history.append(grid)
    print("after 4 steps, population:", np.count_nonzero(grid))
    show(np, grid)

    # the glider moved one cell diagonally; the blinker is back in phase
    glider_now = grid[:6, :6]
    ys, xs = np.nonzero(glider_now)
    print("glider cells:", list(zip(ys.tolist(), xs.tolist())))
    print("glider shifted by (1,1):", np.array_equal(np.roll(np.roll(history[0][:6, :6], 1, 0), 1, 1), glider_now))
    print("blinker period 2:", np.array_equal(history[0][6:, 6:], history[2][6:, 6:]))

    # run a random soup for a while and track population
    rng = np.random.default_rng(3)
    soup = rng.random((24, 24)) < 0.35
    pops = []
    for _ in range(40):
        soup = life_step(np, soup)
        pops.append(int(soup.sum()))
    pops = np.array(pops)
    print("population trace:", pops[::5])
    print(f"population min={pops.min()} max={pops.max()} mean={pops.mean():.2f}")
    alive_rows = np.flatnonzero(soup.any(axis=1))
    alive_cols = np.flatnonzero(soup.any(axis=0))
    print("live rows:", alive_rows.size, "live cols:", alive_cols.size)
    density = soup.reshape(6, 4, 6, 4).mean(axis=(1, 3))
    with np.printoptions(precision=2, floatmode="fixed"):
        print("block densities:\n", density)

    # elementary automata
    for rule in (30, 90, 110):
        pattern = elementary(np, rule, 31, 12)
        print(f"rule {rule}: live cells per step {pattern.sum(axis=1)}")
    r30 = elementary(np, 30, 31, 16)
    for row in r30[:8]:
        print("".join(np.where(row, "X", " ")))
    centre = r30[:, 15].astype(np.int64)
    value = int(np.dot(centre, 1 << np.arange(centre.size)[::-1]))
    print("rule 30 centre column bits:", centre, "as integer:", value)
    packed = np.packbits(r30[:, :16], axis=1)
    print("packed rows (first 4):\n", packed[:4])
    print("symmetric rule 90:", np.array_equal(elementary(np, 90, 31, 12), elementary(np, 90, 31, 12)[:, ::-1]))
    return {"grid": grid, "pops": pops, "soup": soup, "density": density, "r30": r30,
            "value": value, "packed": packed}
