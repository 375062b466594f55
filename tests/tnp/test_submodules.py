"""NumPy's submodules importable from tnp the same way (issue 17, item 4): ``import tnp.ma``,
``from tnp.typing import NDArray``, ``tnp.polynomial``, ``tnp.char``, ``tnp.strings``, ``tnp.rec``,
``tnp.exceptions``, ``tnp.lib.*``...; their functions take tnp arrays and give tnp arrays where
NumPy gives arrays (values, dtypes and shapes compared with NumPy's); NumPy's messages for the
names NumPy 2 removed; ``bfloat16`` loaded on first use."""
import importlib
import os
import pkgutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tnp
from tnp._handover import MODULES


def _public_numpy_submodules():
    """NumPy's importable public submodules, as pkgutil finds them (less build tooling)."""
    out = []

    def walk(pkg):
        for m in pkgutil.iter_modules(pkg.__path__):
            if m.name.startswith("_") or m.name in ("tests", "conftest", "setup"):
                continue
            name = f"{pkg.__name__}.{m.name}"
            if name.startswith(("numpy.distutils.", "numpy.typing.mypy")):
                continue   # build tooling's innards, the mypy plugin (needs mypy)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    mod = importlib.import_module(name)
            except ImportError:
                continue
            out.append(name)
            if hasattr(mod, "__path__"):
                walk(mod)
    walk(np)
    return out


NUMPY_SUBMODULES = _public_numpy_submodules()


@pytest.mark.parametrize("np_name", NUMPY_SUBMODULES)
def test_every_numpy_submodule_imports_from_tnp(np_name):
    name = "tnp" + np_name[len("numpy"):]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numpy.matlib's and numpy.core's own deprecations
        mod = importlib.import_module(name)
        assert sys.modules[name] is mod and mod.__name__ == name
        parent, _, leaf = name.rpartition(".")
        assert getattr(importlib.import_module(parent), leaf) is mod
        public = getattr(importlib.import_module(np_name), "__all__", [])
        for attr in public[:40]:
            getattr(mod, attr)


def test_the_list_is_numpys():
    assert {"numpy.ma", "numpy.polynomial.chebyshev", "numpy.lib.recfunctions", "numpy.lib.array_utils",
            "numpy.char", "numpy.strings", "numpy.rec", "numpy.exceptions", "numpy.typing"} <= \
        set(NUMPY_SUBMODULES)
    for rest, np_name in MODULES.items():
        assert importlib.import_module(np_name).__name__ == np_name


def test_import_forms():
    import tnp.ma  # noqa: F401
    from tnp.typing import NDArray, ArrayLike, DTypeLike  # noqa: F401
    from tnp.lib import recfunctions, array_utils, scimath, NumpyVersion  # noqa: F401
    from tnp.polynomial import Polynomial, chebyshev  # noqa: F401
    from tnp.exceptions import AxisError
    from tnp.ma import masked_array  # noqa: F401
    import tnp.lib.recfunctions as rfn  # noqa: F401
    assert AxisError is np.exceptions.AxisError and Polynomial is np.polynomial.Polynomial
    assert tnp.exceptions.ComplexWarning is np.exceptions.ComplexWarning
    assert tnp.dtypes.Float64DType is np.dtypes.Float64DType
    assert NumpyVersion is np.lib.NumpyVersion
    assert scimath.sqrt is tnp.emath.sqrt


def _same(got, ref):
    assert isinstance(got, tnp.ndarray) and not isinstance(got, tnp.Scalar), type(got)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_polynomial_functions_and_classes():
    x, y = np.linspace(-1, 1, 9), np.linspace(-1, 1, 9) ** 3 - 0.5
    tx, ty = tnp.asarray(x), tnp.asarray(y)
    P, tP = np.polynomial, tnp.polynomial
    _same(tP.polynomial.polyfit(tx, ty, 3), P.polynomial.polyfit(x, y, 3))
    _same(tP.chebyshev.chebval(tx, [1.0, 2.0, 3.0]), P.chebyshev.chebval(x, [1.0, 2.0, 3.0]))
    _same(tP.legendre.legval(tx, tnp.asarray([0.5, 1.0])), P.legendre.legval(x, [0.5, 1.0]))
    _same(tP.hermite.hermder(tnp.asarray([1.0, 2.0, 3.0])), P.hermite.hermder([1.0, 2.0, 3.0]))
    c = tP.polynomial.polyval(tnp.float64(2.0), [1.0, 2.0])
    assert isinstance(c, tnp.Scalar) and float(c) == 5.0
    p, ref = tP.Polynomial.fit(tx, ty, 3), P.Polynomial.fit(x, y, 3)
    np.testing.assert_array_equal(p.coef, ref.coef)            # NumPy's class, on NumPy arrays
    np.testing.assert_array_equal(np.asarray(p(tx)), ref(x))


def test_masked_arrays_are_numpys():
    x = tnp.arange(6.0)
    m = tnp.ma.masked_where(x > 3, x)
    ref = np.ma.masked_where(np.arange(6.0) > 3, np.arange(6.0))
    assert type(m) is np.ma.MaskedArray
    np.testing.assert_array_equal(m.mask, ref.mask)
    assert m.sum() == ref.sum() and repr(m) == repr(ref)
    _same(tnp.ma.getdata(m), np.ma.getdata(ref))
    v = tnp.ma.masked_array(x, mask=x > 3)                      # copy=False: a view, as in NumPy
    assert np.shares_memory(v.data, x.numpy())
    assert not np.shares_memory(m.data, x.numpy())              # masked_where copies, as in NumPy
    assert tnp.ma.masked is np.ma.masked


def test_strings_char_rec_and_recfunctions():
    s, ns = tnp.asarray(["ab", "Cd"]), np.array(["ab", "Cd"])
    _same(tnp.strings.upper(s), np.strings.upper(ns))
    _same(tnp.strings.str_len(s), np.strings.str_len(ns))
    _same(tnp.strings.add(s, s), np.strings.add(ns, ns))        # a ufunc
    _same(tnp.char.add(s, tnp.asarray(["x", "y"])), np.char.add(ns, np.array(["x", "y"])))
    assert type(tnp.char.array(s)) is np.char.chararray
    t = np.array([(1, 2.0), (3, 4.5)], dtype=[("x", "i8"), ("y", "f8")])
    assert repr(tnp.rec.array(tnp.asarray(t))) == repr(np.rec.array(t))
    from numpy.lib import recfunctions as nrf
    _same(tnp.lib.recfunctions.structured_to_unstructured(tnp.asarray(t)),
          nrf.structured_to_unstructured(t))
    _same(tnp.lib.recfunctions.drop_fields(tnp.asarray(t), "y"), nrf.drop_fields(t, "y"))
    assert tnp.lib.array_utils.normalize_axis_index(-1, 3) == 2
    with pytest.raises(np.exceptions.AxisError):
        tnp.lib.array_utils.normalize_axis_index(3, 3)


def test_lib_format_and_npyio_round_trip(tmp_path):
    import io
    buf = io.BytesIO()
    tnp.lib.format.write_array(buf, tnp.arange(5.0))
    buf.seek(0)
    _same(tnp.lib.format.read_array(buf), np.arange(5.0))


def test_handover_calls_are_reported_so_a_tape_cannot_drop_a_gradient():
    from tnp.extend import add_op_listener
    seen = []
    with add_op_listener(before=lambda name, args, kwargs: seen.append(name)):
        tnp.polynomial.polynomial.polyval(tnp.arange(3.0), [1.0, 2.0])
    assert "polynomial.polynomial.polyval" in seen


def test_typing_ndarray_alias():
    from tnp.typing import NDArray
    a = NDArray[np.float64]
    assert a.__origin__ is tnp.ndarray
    assert a.__args__[1] == np.dtype[np.float64]
    assert np.typing.NDArray[np.float64].__args__ == a.__args__

    def f(x: NDArray[np.float32]) -> NDArray[np.float32]:
        return x
    assert f.__annotations__["x"] == NDArray[np.float32]


@pytest.mark.parametrize("name", ["Inf", "NaN", "infty", "round_", "alltrue", "string_", "unicode_",
                                  "float", "mat", "product", "in1d", "trapz", "find_common_type"])
def test_removed_names_carry_numpys_message(name):
    with pytest.raises(AttributeError) as ref:
        getattr(np, name)
    with pytest.raises(AttributeError) as got:
        getattr(tnp, name)
    assert str(got.value) == str(ref.value).replace("module 'numpy'", "module 'tnp'")


def test_unknown_names_still_raise_tnps_error():
    with pytest.raises(AttributeError, match="module 'tnp' has no attribute 'no_such_thing'"):
        tnp.no_such_thing


LAZY = textwrap.dedent("""
    import sys
    import tnp
    heavy = [m for m in ("ml_dtypes", "numpy.testing", "numba", "pandas", "scipy") if m in sys.modules]
    assert not heavy, heavy
    import numpy as np
    assert np.dtype(tnp.bfloat16).name == "bfloat16" and "ml_dtypes" in sys.modules
    assert tnp.zeros(2, dtype="bfloat16").dtype == tnp.bfloat16
    assert tnp.finfo(tnp.bfloat16).bits == 16
    tnp.testing.assert_array_equal(tnp.arange(2), [0, 1])
    print("ok")
""")


def test_heavy_modules_load_on_first_use():
    r = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_finfo_by_name_loads_bfloat16():
    assert tnp.finfo("bfloat16").bits == 16 and tnp.finfo("float32") == np.finfo("float32")


def test_bfloat16_by_name_loads_ml_dtypes_on_first_use():
    # a fresh process: tnp does not import ml_dtypes at import, yet the name works in tnp calls
    import subprocess
    import sys
    code = ("import sys, tnp; assert 'ml_dtypes' not in sys.modules; "
            "a = tnp.zeros(2, dtype='bfloat16'); b = tnp.ones(2).astype('bfloat16'); "
            "print(a.dtype, b.dtype, 'ml_dtypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["bfloat16", "bfloat16", "True"], out.stderr
