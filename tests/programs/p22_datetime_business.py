"""Date arithmetic with datetime64/timedelta64: a project schedule on business days with
holidays, invoice ageing, and time series bucketing."""


def main(np):
    holidays = np.array(["2024-01-01", "2024-01-15", "2024-02-19", "2024-05-27",
                         "2024-07-04", "2024-09-02", "2024-11-28", "2024-12-25"], dtype="datetime64[D]")
    start = np.datetime64("2024-01-02")
    end = np.datetime64("2024-12-31")
    print("calendar days:", end - start, "| as int:", (end - start).astype(int))
    print("business days in 2024:", np.busday_count("2024-01-01", "2025-01-01", holidays=holidays))

    # month boundaries and business days per month
    months = np.arange("2024-01", "2025-01", dtype="datetime64[M]")
    first = months.astype("datetime64[D]")
    nxt = (months + 1).astype("datetime64[D]")
    per_month = np.busday_count(first, nxt, holidays=holidays)
    print("months:", months[:3], "...", months[-1])
    print("business days per month:", per_month, "total", per_month.sum())
    print("days per month:", (nxt - first).astype(int))

    # project tasks with durations in business days, chained end to start
    durations = np.array([5, 12, 3, 20, 8, 15])
    task_start = np.empty(len(durations), dtype="datetime64[D]")
    task_end = np.empty(len(durations), dtype="datetime64[D]")
    cur = np.busday_offset(start, 0, roll="forward", holidays=holidays)
    for i, d in enumerate(durations):
        task_start[i] = cur
        task_end[i] = np.busday_offset(cur, d - 1, holidays=holidays)
        cur = np.busday_offset(task_end[i], 1, holidays=holidays)
    for i in range(len(durations)):
        print(f"  task {i}: {task_start[i]} -> {task_end[i]}  ({durations[i]} bd)")
    print("all starts are business days:", bool(np.all(np.is_busday(task_start, holidays=holidays))))
    print("project length (calendar):", task_end[-1] - task_start[0])

    # day-of-week arithmetic: 1970-01-01 was a Thursday
    dow = (first.astype("datetime64[D]").view("int64") - 4) % 7
    names = np.array(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
    print("first weekday of each month:", names[dow])
    weekend_firsts = months[~np.is_busday(first)]
    print("months starting on a weekend:", weekend_firsts)

    # invoice ageing buckets
    issued = np.array(["2024-09-03", "2024-10-15", "2024-11-01", "2024-11-20", "2024-12-10",
                       "2024-06-30"], dtype="datetime64[D]")
    amounts = np.array([1200.0, 560.5, 89.99, 2300.0, 410.0, 75.0])
    today = np.datetime64("2024-12-16")
    age = (today - issued) / np.timedelta64(1, "D")
    buckets = np.digitize(age, [30, 60, 90])
    labels = np.array(["0-29", "30-59", "60-89", "90+"])
    for b in range(4):
        sel = buckets == b
        print(f"  {labels[b]:>5}: {sel.sum()} invoices, {amounts[sel].sum():9.2f}")
    print("oldest invoice:", issued.min(), "age", age.max(), "days")
    due = issued + np.timedelta64(30, "D")
    print("overdue:", np.sort(due[due < today]))

    # hourly timestamps bucketed to days, weeks and units
    t0 = np.datetime64("2024-03-09T18:00")
    ts = t0 + np.arange(0, 60, 7) * np.timedelta64(1, "h")
    print("timestamps:", ts[:3], "dtype", ts.dtype)
    days = ts.astype("datetime64[D]")
    uniq, counts = np.unique(days, return_counts=True)
    print("per day:", dict(zip([str(u) for u in uniq], counts.tolist())))
    gaps = np.diff(ts)
    print("gaps:", np.unique(gaps), "in minutes:", (gaps / np.timedelta64(1, "m"))[:2])
    print("span:", (ts[-1] - ts[0]).astype("timedelta64[h]"))
    print("datetime_as_string:", np.datetime_as_string(ts[:2], unit="m"))
    print("isnat:", np.isnat(np.array(["NaT", "2024-01-01"], dtype="datetime64[D]")))
    print("leap-year Feb:", np.datetime64("2024-03-01") - np.datetime64("2024-02-01"),
          np.datetime64("2023-03-01") - np.datetime64("2023-02-01"))
    return {"per_month": per_month, "task_end": task_end, "buckets": buckets, "age": age,
            "ts": ts, "counts": counts}
