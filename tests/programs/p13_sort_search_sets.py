"""Sorting, searching and set operations on a small order log: argsort/lexsort rankings,
searchsorted bucketing, unique with counts and inverse, and set algebra between customer lists."""


def main(np):
    rng = np.random.default_rng(77)
    n = 40
    customer = rng.integers(100, 115, size=n)
    amount = np.round(rng.gamma(2.0, 25.0, size=n), 2)
    day = rng.integers(1, 31, size=n)
    print("first orders:", list(zip(customer[:4].tolist(), amount[:4].tolist(), day[:4].tolist())))

    # rank orders by amount (descending, stable) and by (day, customer)
    top = np.argsort(-amount, kind="stable")[:5]
    print("top 5 amounts:", amount[top], "customers:", customer[top])
    by_day_cust = np.lexsort((customer, day))
    print("first by day/customer:", day[by_day_cust][:8], customer[by_day_cust][:8])
    ranks = np.empty(n, dtype=np.intp)
    ranks[np.argsort(amount)] = np.arange(n)
    print("rank of first five orders:", ranks[:5])
    part = np.partition(amount, 5)[:5]
    print("5 smallest (partition, sorted):", np.sort(part))
    print("argpartition agrees:", np.array_equal(np.sort(amount[np.argpartition(amount, 5)[:5]]), np.sort(part)))

    # searchsorted: bucket amounts by thresholds, insert into a sorted list
    thresholds = np.array([20.0, 50.0, 100.0])
    bucket = np.searchsorted(thresholds, amount, side="right")
    print("bucket sizes:", np.bincount(bucket, minlength=4))
    sorted_amt = np.sort(amount)
    pos_l = np.searchsorted(sorted_amt, [30.0, 60.0], side="left")
    pos_r = np.searchsorted(sorted_amt, sorted_amt[[3, 10]], side="right")
    print("positions:", pos_l, pos_r)
    print("digitize agrees:", np.array_equal(np.digitize(amount, thresholds), bucket))

    # unique with everything
    uniq, first_idx, inv, counts = np.unique(customer, return_index=True, return_inverse=True,
                                             return_counts=True)
    print("customers:", uniq)
    print("first order index:", first_idx)
    print("orders each:", counts)
    spend = np.bincount(inv, weights=amount)
    print("reconstructs:", np.array_equal(uniq[inv], customer))
    best = uniq[np.argmax(spend)]
    print(f"biggest spender: {best} with {spend.max():.2f} over {counts[np.argmax(spend)]} orders")
    repeat_customers = uniq[counts > 3]
    print("repeat customers (>3 orders):", repeat_customers)

    # set algebra between the first and second half of the month
    early = np.unique(customer[day <= 15])
    late = np.unique(customer[day > 15])
    both, i_e, i_l = np.intersect1d(early, late, return_indices=True)
    print("both halves:", both, "indices:", i_e, i_l)
    print("only early:", np.setdiff1d(early, late), "only late:", np.setdiff1d(late, early))
    print("either:", np.union1d(early, late), "exactly one:", np.setxor1d(early, late))
    vip = np.array([101, 105, 113, 120])
    print("vip ordered:", np.isin(vip, customer), "orders by vip:", np.isin(customer, vip).sum())
    print("vip not present:", vip[~np.isin(vip, customer)])

    # sorted() of records, the median order per customer via sort then take
    order = np.lexsort((amount, customer))
    cs, am = customer[order], amount[order]
    starts = np.r_[0, np.flatnonzero(np.diff(cs)) + 1]
    ends = np.r_[starts[1:], n]
    med_idx = (starts + ends - 1) // 2
    print("lower-median order per customer:", am[med_idx])
    print("max/min with argmax:", amount.argmax(), amount.max(), amount.argmin(), amount.min())
    nz = np.flatnonzero(amount > 80)
    print("large orders at:", nz, "count_nonzero:", np.count_nonzero(amount > 80))
    s = np.sort_complex(np.array([3 + 1j, 1 - 2j, 1 + 1j]))
    print("sort_complex:", s, "unique_values:", np.sort(np.unique_values(np.array([3, 1, 3, 2, 1]))))
    return {"top": top, "lexsort": by_day_cust, "ranks": ranks, "bucket": bucket, "uniq": uniq,
            "counts": counts, "inverse": inv, "spend": spend, "both": both,
            "median": am[med_idx], "best": best}
