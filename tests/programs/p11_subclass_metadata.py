"""An ndarray subclass that carries metadata (a unit and a history of operations) through
views, slicing, ufuncs and methods, following NumPy's "subclassing ndarray" guide."""


def make_class(np):
    class Measured(np.ndarray):
        """An array of measurements with a unit and a note of where it came from."""

        def __new__(cls, data, unit="", source="raw"):
            obj = np.asarray(data, dtype=float).view(cls)
            obj.unit = unit
            obj.source = source
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.unit = getattr(obj, "unit", "")
            self.source = getattr(obj, "source", "derived")

        def to(self, unit):
            factors = {("m", "cm"): 100.0, ("cm", "m"): 0.01, ("m", "km"): 1e-3, ("km", "m"): 1e3}
            out = self * factors[(self.unit, unit)]
            out.unit = unit
            out.source = f"{self.source}->{unit}"
            return out

        def describe(self):
            return (f"{type(self).__name__}(shape={self.shape}, unit={self.unit!r}, "
                    f"source={self.source!r})")

    return Measured


def make_quantity(np):
    """A unit-checking array in the style of NEP 13: __array_ufunc__ strips the subclass,
    checks units, calls the ufunc and re-attaches the resulting unit."""

    class Quantity(np.ndarray):
        def __new__(cls, value, unit):
            obj = np.asarray(value, dtype=float).view(cls)
            obj.unit = unit
            return obj

        def __array_finalize__(self, obj):
            self.unit = getattr(obj, "unit", "")

        def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
            units = [getattr(x, "unit", None) for x in inputs]
            args = [x.view(np.ndarray) if isinstance(x, Quantity) else x for x in inputs]
            if out is not None:
                kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, Quantity) else o
                                      for o in out)
            name = ufunc.__name__
            if name in ("add", "subtract", "maximum", "minimum") and method == "__call__":
                known = {u for u in units if u is not None}
                if len(known) > 1:
                    raise ValueError(f"cannot {name} {' and '.join(sorted(known))}")
                unit = known.pop() if known else ""
            elif name == "multiply":
                unit = "*".join(u for u in units if u)
            elif name in ("divide", "true_divide"):
                unit = f"{units[0] or '1'}/{units[1] or '1'}"
            elif name == "sqrt":
                unit = f"sqrt({units[0]})"
            else:
                unit = units[0] or ""
            result = super().__array_ufunc__(ufunc, method, *args, **kwargs)
            if result is NotImplemented:
                return NotImplemented
            if out is not None:
                if isinstance(out[0], Quantity):
                    out[0].unit = unit
                return out[0]
            if isinstance(result, np.ndarray) and result.ndim > 0:
                result = result.view(Quantity)
                result.unit = unit
            return result

    return Quantity


def main(np):
    Quantity = make_quantity(np)
    dist = Quantity([100.0, 250.0, 400.0], "m")
    time = Quantity([9.8, 24.1, 45.0], "s")
    speed = dist / time
    print("speed:", np.round(speed.view(np.ndarray), 3), speed.unit)
    total = np.add(dist, Quantity([1.0, 2.0, 3.0], "m"))
    print("sum:", total.view(np.ndarray), total.unit, "| product unit:", (dist * time).unit)
    print("root unit:", np.sqrt(dist).unit, "| negated unit:", (-dist).unit)
    try:
        dist + time
    except ValueError as e:
        print("refused:", e)
    acc = Quantity(np.zeros(3), "m")
    acc += dist
    np.multiply(acc, 2.0, out=acc)
    print("in place:", acc.view(np.ndarray), acc.unit, "| reduce:", f"{float(np.add.reduce(dist)):.1f}")

    Measured = make_class(np)
    rng = np.random.default_rng(11)
    d = Measured(np.round(rng.uniform(1.0, 5.0, size=(3, 4)), 3), unit="m", source="survey")
    print(d.describe())
    print("repr:", repr(d))
    print("isinstance of ndarray:", isinstance(d, np.ndarray), "type:", type(d).__name__)

    # slicing and views keep the metadata
    row = d[1]
    col = d[:, 2]
    tr = d.T
    print(row.describe(), col.describe(), tr.describe(), sep="\n")
    print("row values:", row)

    # arithmetic and ufuncs keep the subclass; __array_finalize__ copies the unit
    doubled = d * 2
    rooted = np.sqrt(d)
    shifted = d + np.ones(4)
    print(doubled.describe(), rooted.describe(), shifted.describe(), sep="\n")
    print(f"sqrt unit carried (even if wrong physically): {rooted.unit}")

    # explicit conversion helper builds on the same mechanism
    cm = d.to("cm")
    print(cm.describe())
    with np.printoptions(precision=1, suppress=True):
        print(cm)
    km = d.to("km")
    print("km max:", f"{float(km.max()):.6f}", km.unit)

    # axis reductions, cumulative operations, reshaping, sorting, astype
    means = d.mean(axis=0)
    cums = np.cumsum(d, axis=1)
    flat = d.reshape(-1)
    srt = np.sort(flat)
    as32 = d.astype(np.float32)
    for name, arr in [("mean(axis=0)", means), ("cumsum", cums), ("reshape", flat),
                      ("sort", srt), ("astype", as32)]:
        print(f"{name:>13s}: {type(arr).__name__} unit={arr.unit!r} shape={arr.shape}")
    print("column means:", np.round(np.asarray(means), 4))

    # full reductions: read the number out with float()
    total = float(d.sum())
    print(f"total length: {total:.3f} {d.unit}")
    print("max via np.max:", f"{float(np.max(d)):.3f}", "argmax:", int(np.argmax(d)))

    # boolean masks and fancy indexing
    long_ones = d[d > 3.0]
    print(long_ones.describe(), "count:", long_ones.size)
    picked = d[[0, 2], 1:3]
    print(picked.describe())

    # views with .view() keep it, np.asarray drops it
    v = d.view()
    plain = np.asarray(d)
    print("view:", type(v).__name__, v.unit, "| asarray:", type(plain).__name__,
          "has unit:", hasattr(plain, "unit"))

    # in-place operations keep the same object and metadata
    d -= 1.0
    d[0, 0] = 0.0
    print("after in-place:", d.describe(), np.round(np.asarray(d[0]), 3))
    copy = d.copy()
    copy.source = "copy"
    print(copy.describe(), "original source:", d.source)
    return {"data": np.asarray(d), "cm": np.asarray(cm), "means": np.asarray(means),
            "total": total, "units": [row.unit, rooted.unit, cm.unit, means.unit, srt.unit],
            "sources": [col.source, doubled.source, cm.source, copy.source],
            "speed": speed.view(np.ndarray), "speed_unit": speed.unit, "acc": acc.view(np.ndarray)}
