"""Inventory simulation on integer arrays: daily demand, a reorder-point policy, stock-outs,
drawdowns and replenishment statistics."""


def simulate(np, demand, start, reorder_point, order_qty, lead_time):
    days = len(demand)
    stock = np.zeros(days, dtype=np.int64)
    sold = np.zeros(days, dtype=np.int64)
    arrivals = np.zeros(days + lead_time + 1, dtype=np.int64)
    orders = []
    level = start
    pending = 0
    for t in range(days):
        level += arrivals[t]
        pending -= arrivals[t]
        s = min(level, demand[t])
        sold[t] = s
        level -= s
        if level + pending <= reorder_point:
            arrivals[t + lead_time] += order_qty
            pending += order_qty
            orders.append(t)
        stock[t] = level
    return stock, sold, np.array(orders, dtype=np.int64), arrivals[:days]


def main(np):
    rng = np.random.default_rng(2024)
    days = 90
    weekday = np.arange(days) % 7
    base = np.where(weekday >= 5, 14, 9)
    demand = rng.poisson(base).astype(np.int64)
    print("demand total:", demand.sum(), "max:", demand.max(), "dtype:", demand.dtype)
    print("mean demand by weekday:", np.round(np.bincount(weekday, weights=demand) / np.bincount(weekday), 2))

    stock, sold, orders, arrivals = simulate(np, demand, 120, 40, 90, 5)
    lost = demand - sold
    print("days ordered:", orders)
    print("order gaps:", np.diff(orders))
    print("units sold:", sold.sum(), "lost:", lost.sum(), "fill rate:", np.round(sold.sum() / demand.sum(), 4))
    stockout_days = np.flatnonzero(stock == 0)
    print("stock-out days:", stockout_days)

    # cumulative flows reconcile with the closing stock
    cum_in = np.cumsum(arrivals)
    cum_out = np.cumsum(sold)
    recon = 120 + cum_in - cum_out
    print("reconciles:", bool(np.array_equal(recon, stock)))

    # drawdown from the running peak of the stock level
    peak = np.maximum.accumulate(stock)
    drawdown = peak - stock
    print("max drawdown:", drawdown.max(), "at day", int(np.argmax(drawdown)))
    trough = np.minimum.accumulate(stock)
    print("running minimum at ends of months:", trough[[29, 59, 89]])

    # capacity: the warehouse holds 100 units at most
    capped = np.minimum(stock, 100)
    print("days at capacity:", np.count_nonzero(capped == 100))

    # weekly totals via reshape (12 full weeks, the rest dropped), and their changes
    weeks = demand[: 7 * (days // 7)].reshape(-1, 7)
    weekly = weeks.sum(axis=1)
    print("weekly demand:", weekly)
    print("week-over-week change:", np.diff(weekly))
    print("best/worst week:", int(np.argmax(weekly)), int(np.argmin(weekly)))

    # runs of consecutive low-stock days (< 20 units)
    low = (stock < 20).astype(np.int8)
    edges = np.diff(np.concatenate(([0], low, [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    print("low-stock runs (start, length):", list(zip(starts.tolist(), (ends - starts).tolist())))

    # cost accounting in integer cents
    holding = np.sum(stock) * 3
    shortage = np.sum(lost) * 250
    ordering = orders.size * 4000
    total = holding + shortage + ordering
    print(f"costs (cents): holding={holding} shortage={shortage} ordering={ordering} total={total}")
    print("cost per unit sold:", np.round(total / sold.sum() / 100, 4))
    return {"stock": stock, "sold": sold, "orders": orders, "drawdown": drawdown,
            "weekly": weekly, "total": total}
