"""Structured arrays: a small employee table with named fields, sorting by fields, grouping and
derived columns."""


def main(np):
    dt = np.dtype([("name", "U10"), ("dept", "U6"), ("age", np.int32),
                   ("salary", np.float64), ("rating", "f4")])
    rows = [
        ("alice", "eng", 34, 120000.0, 4.5),
        ("bob", "eng", 28, 95000.0, 3.9),
        ("carol", "sales", 45, 88000.0, 4.1),
        ("dave", "sales", 31, 72000.0, 3.2),
        ("erin", "ops", 39, 67000.0, 4.8),
        ("frank", "eng", 51, 150000.0, 4.0),
        ("grace", "ops", 25, 54000.0, 3.9),
        ("heidi", "sales", 29, 76000.0, 4.4),
    ]
    staff = np.array(rows, dtype=dt)
    print("dtype:", staff.dtype)
    print("fields:", staff.dtype.names, "itemsize:", staff.itemsize)
    print(staff[:3])
    print("record 4:", staff[4], "| its name:", staff[4]["name"])

    # field access gives views with the field's dtype
    ages = staff["age"]
    print("ages:", ages, ages.dtype, "mean age:", ages.mean())
    print(f"payroll: {staff['salary'].sum():,.2f}")

    # sorting by one field, then by two
    by_salary = np.sort(staff, order="salary")
    print("by salary:", by_salary["name"])
    by_dept_rating = np.sort(staff, order=["dept", "rating"])
    print("by dept, rating:", list(zip(by_dept_rating["dept"].tolist(), by_dept_rating["rating"].tolist())))
    idx = np.argsort(staff, order=("dept", "age"))
    print("argsort(dept, age):", idx)
    oldest_first = staff[np.argsort(-staff["age"], kind="stable")]
    print("oldest:", oldest_first["name"][:3])

    # group statistics per department
    depts, inverse, counts = np.unique(staff["dept"], return_inverse=True, return_counts=True)
    totals = np.bincount(inverse, weights=staff["salary"])
    for d, c, tot in zip(depts, counts, totals):
        mask = staff["dept"] == d
        best = staff[mask][np.argmax(staff["rating"][mask])]
        print(f"{d:>6s}: n={c} mean salary={tot / c:>10.2f} top rated={best['name']}")

    # update through a field view: 3% raise for ratings >= 4.0
    raise_mask = staff["rating"] >= 4.0
    staff["salary"][raise_mask] *= 1.03
    print("after raise:", np.round(staff["salary"], 2))

    # multi-field selection and conversion to an unstructured array
    sub = staff[["age", "salary"]]
    print("sub dtype:", sub.dtype)
    plain = np.column_stack([staff["age"].astype(np.float64), staff["salary"]])
    print("age/salary correlation:", f"{np.corrcoef(plain.T)[0, 1]:.4f}")

    # a new structured array with a computed field
    out_dt = np.dtype([("name", "U10"), ("score", "f8")])
    score = np.zeros(staff.shape, dtype=out_dt)
    score["name"] = staff["name"]
    score["score"] = staff["rating"] * 10 + staff["salary"] / 1e4
    top = np.sort(score, order="score")[::-1][:3]
    print("top scores:", top)
    print("found 'erin' at:", np.nonzero(staff["name"] == "erin")[0], "in list:",
          np.isin(np.array(["erin", "zoe"]), staff["name"]))
    # record-array access: attributes instead of string keys
    rec = staff.view(np.recarray)
    print("recarray ages:", rec.age, "senior:", rec.name[rec.age > 40])
    rec.rating[rec.name == "dave"] = 3.5
    print("write through recarray:", staff["rating"][3], type(rec).__name__)
    table = np.rec.array(score)
    print("rec.array scores:", np.round(table.score, 2), table[0].name)
    pairs = np.rec.fromarrays([staff["name"], staff["age"]], names="who,age")
    print("fromarrays:", pairs[:2], pairs.dtype)
    young = np.extract(staff["age"] < 30, staff["name"])
    print("under 30:", young, "count:", np.count_nonzero(staff["age"] < 30))
    return {"sorted_names": by_salary["name"], "argsort": idx, "totals": totals,
            "counts": counts, "salary": staff["salary"].copy(), "top": top["name"],
            "young": young}
