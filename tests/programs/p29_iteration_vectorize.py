"""Element-wise iteration and function lifting: nditer (with multi_index and write access),
ndenumerate, ndindex, vectorize, frompyfunc, apply_along_axis/apply_over_axes, piecewise and
select."""

import math


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def main(np):
    a = np.arange(12).reshape(3, 4)

    # nditer: read-only, with multi_index, and writing through readwrite operands
    total = 0
    for x in np.nditer(a):
        total += int(x)
    print("nditer total:", total, "== sum:", total == a.sum())
    it = np.nditer(a, flags=["multi_index"])
    diag_like = [(it.multi_index, int(v)) for v in it if it.multi_index[0] == it.multi_index[1]]
    print("diagonal via multi_index:", diag_like)
    out = np.zeros_like(a, dtype=float)
    with np.nditer([a, out], op_flags=[["readonly"], ["writeonly"]]) as it2:
        for x, y in it2:
            y[...] = math.sqrt(x)
    print("sqrt via nditer:", np.round(out[1], 4), "matches:", np.allclose(out, np.sqrt(a)))
    order_f = [int(x) for x in np.nditer(a, order="F")]
    print("Fortran order:", order_f)
    b = np.arange(4)
    pairs = [(int(x), int(y)) for x, y in np.nditer([a[:2], b])][:6]
    print("broadcast pairs:", pairs)

    # ndenumerate and ndindex
    grid = np.array([[3, 0, 7], [0, 5, 0]])
    nz = [(idx, int(v)) for idx, v in np.ndenumerate(grid) if v]
    print("nonzero via ndenumerate:", nz)
    print("agrees with argwhere:", [idx for idx, _ in nz] == [tuple(r) for r in np.argwhere(grid).tolist()])
    checker = np.zeros((3, 4), dtype=int)
    for i, j in np.ndindex(checker.shape):
        checker[i, j] = (i + j) % 2
    print("checkerboard:\n", checker)
    print("ndindex count:", sum(1 for _ in np.ndindex(2, 3, 4)))

    # vectorize a scalar Python function with control flow
    vsteps = np.vectorize(collatz_steps)
    ns = np.arange(1, 13)
    steps = vsteps(ns)
    print("collatz steps:", steps, steps.dtype)
    print("longest under 13:", int(ns[np.argmax(steps)]))
    vclass = np.vectorize(lambda x, lo, hi: "low" if x < lo else ("high" if x > hi else "ok"), otypes=[str])
    print("classified:", vclass(np.array([1.0, 5.0, 9.0]), 2.0, 8.0))
    vdot = np.vectorize(lambda u, v: float(np.dot(u, v)), signature="(n),(n)->()")
    print("signature vectorize:", vdot(np.arange(6.0).reshape(2, 3), np.ones(3)))
    print("excluded argument:", np.vectorize(lambda x, p: x ** p, excluded=["p"])(np.arange(4), p=3))

    # frompyfunc returns object arrays
    gcd_u = np.frompyfunc(math.gcd, 2, 1)
    g = gcd_u(np.array([12, 18, 35]), np.array([8, 27, 14]))
    print("frompyfunc gcd:", g, g.dtype, "as int:", g.astype(int))
    fact = np.frompyfunc(math.factorial, 1, 1)
    print("factorials:", fact(np.arange(8)))
    print("reduce with a frompyfunc ufunc:", gcd_u.reduce(np.array([48, 36, 120])))

    # apply_along_axis / apply_over_axes
    m = np.array([[4, 1, 3], [9, 7, 8], [2, 6, 5]])
    print("row ranges:", np.apply_along_axis(lambda r: r.max() - r.min(), 1, m))
    print("sorted columns:\n", np.apply_along_axis(np.sort, 0, m))
    print("row histograms:\n", np.apply_along_axis(lambda r: np.bincount(r % 3, minlength=3), 1, m))
    print("apply_over_axes sum:", np.apply_over_axes(np.sum, m.reshape(1, 3, 3), [1, 2]).ravel())

    # piecewise, select and where for a tax schedule
    income = np.array([5_000.0, 12_000.0, 30_000.0, 60_000.0, 150_000.0])
    tax = np.piecewise(
        income,
        [income <= 10_000, (income > 10_000) & (income <= 40_000), income > 40_000],
        [0.0, lambda x: 0.2 * (x - 10_000), lambda x: 6_000 + 0.4 * (x - 40_000)],
    )
    print("tax:", tax)
    band = np.select([income <= 10_000, income <= 40_000], ["none", "basic"], default="higher")
    print("bands:", band)
    print("effective rate %:", np.round(100 * np.where(income > 0, tax / income, 0), 2))
    xs = np.linspace(-2, 2, 9)
    hat = np.piecewise(xs, [np.abs(xs) < 1], [lambda x: 1 - np.abs(x), 0])
    print("hat function:", hat)
    return {"out": out, "steps": steps, "checker": checker, "tax": tax, "hat": hat,
            "gcd": g.astype(int)}
