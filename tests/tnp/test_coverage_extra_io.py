"""Input/output and printing against NumPy: ``.npy``/``.npz`` files (byte-identical to NumPy's,
read back by both), text files (``savetxt``/``loadtxt``/``genfromtxt``/``fromregex``), raw files
and strings (``fromfile``/``fromstring``), and the printing functions and print options, for
two dtypes and two shapes each; bad input raises NumPy's exception type."""
import io

import numpy as np
import pytest

import tnp
from tnp.testing import assert_same, both

CASES = [np.arange(6, dtype="int32").reshape(2, 3),
         np.linspace(-1, 1, 5, dtype="float32"),
         (np.arange(8) / 3).reshape(2, 2, 2),
         np.array([1 + 2j, -0.5j], dtype="complex128")]
IDS = [f"{c.dtype}{list(c.shape)}" for c in CASES]


def _path(tmp_path, xp, name):
    return tmp_path / f"{xp.__name__}_{name}"


# ------------------------------------------------------------------------------ .npy / .npz
@pytest.mark.parametrize("a", CASES, ids=IDS)
def test_save_load(tmp_path, a):
    def body(xp):
        p = _path(tmp_path, xp, "a.npy")
        assert xp.save(p, xp.asarray(a)) is None
        return xp.load(p), p.read_bytes()
    both(body)
    # each reads the other's file
    assert_same(np.load(_path(tmp_path, tnp, "a.npy")), tnp.load(_path(tmp_path, np, "a.npy")))

    def memmapped(xp):
        r = xp.load(_path(tmp_path, xp, "a.npy"), mmap_mode="r")
        return xp.asarray(r) + 0
    both(memmapped)

    def to_buffer(xp):
        f = io.BytesIO()
        xp.save(f, xp.asarray(a), allow_pickle=False)
        f.seek(0)
        return xp.load(f)
    both(to_buffer)


def test_load_refuses_pickles(tmp_path):
    obj = np.array([{"a": 1}, None], dtype=object)

    def body(xp):
        p = _path(tmp_path, xp, "o.npy")
        np.save(p, obj)
        return xp.load(p)              # ValueError: allow_pickle=False
    both(body)
    both(lambda xp: xp.save(_path(tmp_path, xp, "o2.npy"), obj, allow_pickle=False))   # ValueError
    both(lambda xp: xp.load(_path(tmp_path, xp, "missing.npy")))                         # OSError


@pytest.mark.parametrize("name", ["savez", "savez_compressed"])
def test_savez(tmp_path, name):
    a, b = CASES[0], CASES[2]

    def body(xp):
        p = _path(tmp_path, xp, f"{name}.npz")
        getattr(xp, name)(p, xp.asarray(a), second=xp.asarray(b))
        with xp.load(p) as z:
            return sorted(z.files), z["arr_0"], z["second"], "second" in z, len(z)
    both(body)
    # NumPy reads tnp's archive
    with np.load(_path(tmp_path, tnp, f"{name}.npz")) as z:
        np.testing.assert_array_equal(z["second"], b)
    both(lambda xp: getattr(xp, name)(_path(tmp_path, xp, "x.npz"), xp.asarray(a), arr_0=a))  # ValueError


# ------------------------------------------------------------------------------ text files
@pytest.mark.parametrize("a", CASES[:3], ids=IDS[:3])
def test_savetxt_loadtxt(tmp_path, a):
    a2 = a.reshape(a.shape[0], -1) if a.ndim > 1 else a

    def body(xp, **kw):
        p = _path(tmp_path, xp, "t.txt")
        xp.savetxt(p, xp.asarray(a2), **kw)
        return p.read_text(), xp.loadtxt(p, dtype=a2.dtype, ndmin=a2.ndim, delimiter=kw.get("delimiter"))
    both(body)
    both(body, fmt="%.4e", delimiter=",", header="h", footer="f")
    both(lambda xp: xp.savetxt(_path(tmp_path, xp, "bad.txt"), xp.zeros((2, 2, 2))))  # ValueError


def test_loadtxt_options():
    text = "# c\n1,2,3\n4,5,6\n7,8,9\n"
    both(lambda xp: xp.loadtxt(io.StringIO(text), delimiter=","))
    both(lambda xp: xp.loadtxt(io.StringIO(text), delimiter=",", dtype="int16", usecols=(0, 2)))
    both(lambda xp: xp.loadtxt(io.StringIO(text), delimiter=",", skiprows=2, unpack=True))
    both(lambda xp: xp.loadtxt(io.StringIO(text[4:]), delimiter=",", max_rows=1, ndmin=2))
    both(lambda xp: xp.loadtxt(io.StringIO("1,x\n"), delimiter=","))                   # ValueError
    both(lambda xp: xp.loadtxt(io.StringIO("a 1\nb 2"), dtype=[("k", "U1"), ("v", "i4")]))


def test_genfromtxt():
    text = "a,b,c\n1,2,\n4,,6\n7,8,9\n"
    both(lambda xp: xp.genfromtxt(io.StringIO(text), delimiter=",", skip_header=1))
    both(lambda xp: xp.genfromtxt(io.StringIO(text), delimiter=",", skip_header=1,
                                  filling_values=-1, dtype="int32"))
    both(lambda xp: xp.genfromtxt(io.StringIO(text), delimiter=",", names=True, dtype=None,
                                  encoding="utf-8"))

    def masked(xp):
        # a masked array is NumPy's (tnp.ma is numpy.ma): the mask must survive
        m = xp.genfromtxt(io.StringIO(text), delimiter=",", skip_header=1, usemask=True)
        assert type(m) is np.ma.MaskedArray
        return xp.asarray(m.filled(0)), xp.asarray(m.mask), xp.asarray(m.sum(axis=0).filled(-1))
    both(masked)
    both(lambda xp: xp.genfromtxt(io.StringIO("1 2\n3 4 5\n")))                     # ValueError


def test_fromregex(tmp_path):
    text = "x=1 y=2.5\nx=3 y=-1\n"
    dt = [("x", "int64"), ("y", "float32")]
    both(lambda xp: xp.fromregex(io.StringIO(text), r"x=(\d+) y=(\S+)", dt))
    both(lambda xp: xp.fromregex(io.StringIO(text), r"x=(\d+)", [("x", "int16")]))
    p = tmp_path / "r.txt"
    p.write_text(text)
    both(lambda xp: xp.fromregex(p, r"y=(\S+)", [("y", "float64")], encoding="utf-8"))
    both(lambda xp: xp.fromregex(io.StringIO(text), r"x=(\d+)", "float64"))   # TypeError


@pytest.mark.parametrize("a", CASES, ids=IDS)
def test_fromfile_fromstring(tmp_path, a):
    def raw(xp):
        p = _path(tmp_path, xp, "raw.bin")
        xp.asarray(a).tofile(p)
        return xp.fromfile(p, dtype=a.dtype), xp.fromfile(p, dtype=a.dtype, count=2, offset=a.itemsize)
    both(raw)
    if a.dtype.kind != "c":
        def text(xp):
            p = _path(tmp_path, xp, "raw.txt")
            xp.asarray(a).tofile(p, sep=" ")
            return xp.fromfile(p, dtype=a.dtype, sep=" ")
        both(text)
        s = " ".join(str(v) for v in a.ravel().tolist())
        both(lambda xp: xp.fromstring(s, dtype=a.dtype, sep=" "))
    both(lambda xp: xp.fromstring("1,2,3", dtype="int8", sep=","))
    both(lambda xp: xp.fromstring(b"\x01\x02", dtype="int32"))                 # ValueError (binary)


# ------------------------------------------------------------------------------ printing
@pytest.mark.parametrize("a", CASES + [np.array(3.25), np.zeros((0, 2), "int8")],
                         ids=IDS + ["0d", "empty"])
def test_array_repr_str(a):
    both(lambda xp: xp.array_repr(xp.asarray(a)))
    both(lambda xp: xp.array_str(xp.asarray(a)))
    both(lambda xp: xp.array_repr(xp.asarray(a), max_line_width=20, precision=2, suppress_small=True))
    both(lambda xp: xp.array_str(xp.asarray(a), precision=1))
    both(lambda xp: xp.array2string(xp.asarray(a), separator=";", prefix="x("))


def test_print_options():
    a = np.array([1e-8, 1.0, 123456.789, np.nan])

    def body(xp, **opts):
        saved = xp.get_printoptions()
        try:
            xp.set_printoptions(**opts)
            r = (repr(xp.asarray(a)), str(xp.asarray(a).astype("float32")), xp.array_repr(xp.arange(12)),
                 xp.get_printoptions()["precision"])
        finally:
            xp.set_printoptions(**saved)
        assert xp.get_printoptions() == saved
        return r
    both(body, precision=3)
    both(body, suppress=True, nanstr="NaN", threshold=5, edgeitems=2)
    both(body, floatmode="fixed", sign="+", linewidth=30)
    both(body, precision=-1)                                                    # ValueError

    def ctx(xp):
        with xp.printoptions(precision=2, legacy="1.25"):
            inside = repr(xp.asarray(a)), repr(xp.asarray(a).sum())
        return inside + (repr(xp.asarray(a)),)
    both(ctx)


def test_scalar_formatting_through_print_options():
    both(lambda xp: repr(xp.asarray([1.5, 2.25], dtype="float32").sum()))
    both(lambda xp: str(xp.asarray([[1, 2]], dtype="uint8")))
    both(lambda xp: xp.array2string(xp.asarray([1.123456, 2.0]), formatter={"float": lambda v: f"{v:.1f}"}))
