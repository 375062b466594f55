"""NumPy's classes and modules that tnp re-exports (``matrix``, ``bmat``, ``asmatrix``,
``memmap``, ``recarray``, ``record``) and the modules that hand over to NumPy (``ma``,
``polynomial``, ``char``, ``strings``, ``rec``), used with tnp arrays: the results are NumPy's
objects, identical (type, dtype, shape, values) to what NumPy gives for NumPy arrays; where they
meet tnp arrays (``asarray``, arithmetic after conversion) the results are tnp arrays."""
import numpy as np
import pytest

import tnp
from tnp.testing import both

pytestmark = [pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

DTYPES = ["int32", "float64"]
SHAPES = [(2, 3), (3, 3)]


def _a(xp, dtype, shape):
    return (xp.arange(int(np.prod(shape))) - 2).reshape(shape).astype(dtype)


def numpy_same(fn, *args):
    """``fn(xp, ...)`` gives the same NumPy objects under NumPy and under tnp (these classes are
    NumPy's): same type, and for arrays the same dtype, shape and values; or the same
    exception type."""
    try:
        expected = fn(np, *args)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(tnp, *args)
        return
    got = fn(tnp, *args)
    _cmp(expected, got)


def _cmp(e, g):
    if isinstance(e, (tuple, list)):
        assert type(g) is type(e) and len(g) == len(e)
        for x, y in zip(e, g):
            _cmp(x, y)
        return
    if isinstance(e, np.ndarray) and not isinstance(e, np.ma.MaskedArray):
        # a plain NumPy result may come back from tnp as a tnp array (tnp functions applied)
        g2 = np.asarray(g) if isinstance(g, tnp.ndarray) and type(e) is np.ndarray else g
        assert type(g2) is type(e), (type(g), type(e))
        assert g2.dtype == e.dtype and g2.shape == e.shape
        np.testing.assert_array_equal(g2, e)
        return
    if isinstance(e, np.ma.MaskedArray):
        assert type(g) is type(e) and g.dtype == e.dtype
        np.testing.assert_array_equal(g.mask, e.mask)
        np.testing.assert_array_equal(g.filled(0), e.filled(0))
        return
    assert type(g) is type(e), (type(g), type(e))
    if isinstance(e, float) and e != e:
        assert g != g
    else:
        assert g == e


# ------------------------------------------------------------------------------ matrix
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_bmat_asmatrix(dtype, shape):
    def body(xp):
        a = _a(xp, dtype, shape)
        m = xp.matrix(a)
        am = xp.asmatrix(a)
        b = xp.bmat([[a, a], [a, a]])
        s = xp.bmat("A B; B A", ldict={"A": a, "B": a * 2}, gdict={})
        return (m, m * m.T, m.T, m.I.round(6) if shape[0] == shape[1] and dtype == "float64"
                and abs(np.linalg.det(np.asarray(a))) > 1e-9 else m.A, m.sum(axis=0), am, b, s,
                xp.matrix("1 2; 3 4"), m[0], m.tolist(), m.shape)
    numpy_same(body)
    numpy_same(lambda xp: xp.matrix(xp.ones((2, 2, 2))))                    # ValueError
    numpy_same(lambda xp: xp.bmat("A B", ldict={"A": xp.ones((2, 2))}, gdict={}))  # NameError


def test_matrix_meets_tnp_arrays():
    """``asarray`` of a matrix gives a tnp array; then tnp's arithmetic applies."""
    def body(xp):
        m = xp.matrix([[1.0, 2.0], [3.0, 4.0]])
        a = xp.asarray(m)
        return a @ a, a * a, xp.linalg.inv(a)
    both(body)


# ------------------------------------------------------------------------------ memmap
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_memmap(tmp_path, dtype, shape):
    def body(xp):
        p = tmp_path / f"{xp.__name__}.dat"
        m = xp.memmap(p, dtype=dtype, mode="w+", shape=shape)
        m[:] = _a(xp, dtype, shape)
        m[0, 0] = 42
        m.flush()
        r = xp.memmap(p, dtype=dtype, mode="r", shape=shape)
        off = xp.memmap(p, dtype=dtype, mode="r", offset=np.dtype(dtype).itemsize, shape=(2,))
        return (type(m).__name__, xp.asarray(r) * 2, xp.asarray(off), r.mode, r.offset,
                p.read_bytes(), xp.asarray(r).sum())
    both(body)
    both(lambda xp: xp.memmap(tmp_path / "missing.dat", mode="r"))            # FileNotFoundError
    numpy_same(lambda xp: xp.memmap(tmp_path / f"{xp.__name__}.dat", dtype=dtype, mode="c",
                                    shape=shape))


# ------------------------------------------------------------------------------ records
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("fdtype", ["float32", "float64"])
def test_recarray_and_record(fdtype, n):
    dt = [("id", "int32"), ("x", fdtype), ("name", "U3")]

    def body(xp):
        r = xp.recarray((n,), dtype=dt)
        r.id = xp.arange(n)
        r.x = xp.linspace(0, 1, n)
        r.name = "ab"
        rec = r[1]
        assert isinstance(rec, xp.record)
        return (r, r.id, r.x, rec.id, rec.x, rec.name, rec["x"], r[r.id > 0], r.field(1),
                xp.rec.fromarrays([xp.arange(n), xp.ones(n, dtype=fdtype)], names="a,b"),
                xp.rec.fromrecords([(1, 2.5)] * n, names="a,b"),
                xp.rec.array([(1, 2.0)], dtype=[("a", "i4"), ("b", fdtype)]))
    numpy_same(body)
    numpy_same(lambda xp: xp.recarray((2,), dtype=dt).nosuchfield)            # AttributeError

    def structured(xp):
        s = xp.zeros(n, dtype=dt)
        v = s.view(xp.recarray)
        return type(v).__name__, v.x.dtype.name, xp.asarray(v.x) + 1
    both(structured)


# ------------------------------------------------------------------------------ NumPy's modules
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ma(dtype, shape):
    def body(xp):
        a = _a(xp, dtype, shape)
        m = xp.ma.masked_array(a, mask=a < 0)
        return (m, m.sum(), m.mean(axis=0), xp.ma.masked_where(a > 2, a), m.filled(-1),
                xp.ma.getmaskarray(m), xp.ma.is_masked(m), m.count(), xp.ma.masked)
    numpy_same(body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polynomial(dtype):
    for shape in [(5,), (2, 3)]:
        def body(xp):
            x = _a(xp, dtype, shape)
            P = xp.polynomial.Polynomial
            p = P([1, -2, 3])
            c = xp.polynomial.Chebyshev([0, 1, 0.5])
            return (p(x), c(x), p.deriv()(x), xp.polynomial.polynomial.polyval(x, [1, 2]),
                    xp.polynomial.legendre.legval(x, [0.5, 1]), p.roots(), (p * p).coef,
                    P.fit(xp.linspace(0, 1, 6), xp.linspace(0, 1, 6) ** 2, 2).convert().coef.round(8))
        numpy_same(body)
    numpy_same(lambda xp: xp.polynomial.Polynomial([[1, 2]]))                  # ValueError


@pytest.mark.parametrize("module", ["char", "strings"])
def test_char_and_strings(module):
    words = ["ab", "Cd ", " e"]
    for shape in [(3,), (1, 3)]:
        def body(xp):
            a = xp.asarray(words).reshape(shape)
            m = getattr(xp, module)
            return (m.upper(a), m.strip(a), m.str_len(a), m.add(a, "!"), m.find(a, "d"),
                    m.replace(a, "b", "B"), m.startswith(a, "a"), m.multiply(a, 2))
        numpy_same(body)
        both(lambda xp: xp.asarray(getattr(xp, module).upper(xp.asarray(words).reshape(shape))) == "AB")
    numpy_same(lambda xp: getattr(xp, module).add(xp.asarray(["a"]), xp.asarray([1])))  # TypeError


def test_rec_module():
    def body(xp, dtype):
        a = xp.arange(3, dtype=dtype)
        r = xp.rec.fromarrays([a, a * 2], names="x,y")
        return r, r.x, r.y, xp.rec.format_parser(["i4", "f8"], "a,b", None).dtype
    numpy_same(body, "int64")
    numpy_same(body, "float32")
    numpy_same(lambda xp: xp.rec.fromarrays([xp.ones(2), xp.ones(3)]))          # ValueError
