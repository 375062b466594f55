"""@numba.njit functions take tnp arrays on the CPU (issue 17, item 2): typed and unboxed as the
NumPy array they wrap, results NumPy arrays, registered through Numba's ``numba_extensions``
entry point without ``import tnp`` importing Numba. Reference: the same jitted function called
on the NumPy arrays."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import tnp  # noqa: E402
import tnp._numba  # noqa: E402,F401  (an uninstalled checkout has no entry point)
from tnp.extend import version, wrap  # noqa: E402


@numba.njit(cache=False)
def _stats(a, s):
    t = 0.0
    for i in range(a.shape[0]):
        t += a[i] * s
    return t, a * 2, a[::-1], a


@pytest.mark.parametrize("a", [np.arange(6.0), np.arange(6, dtype=np.int32),
                               np.linspace(0, 1, 7, dtype=np.float32)[::2],
                               np.array([1 + 2j, 3 - 1j])], ids=lambda a: f"{a.dtype}{a.strides}")
def test_njit_takes_tnp_arrays_as_their_numpy_array(a):
    t, doubled, rev, same = _stats(tnp.asarray(a), 3)
    rt, rdoubled, rrev, _ = _stats(a, 3)
    assert t == rt
    for got, ref in ((doubled, rdoubled), (rev, rrev)):
        assert type(got) is np.ndarray and got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    assert type(same) is np.ndarray and np.shares_memory(same, a)   # the argument, unboxed


def test_2d_readonly_and_signature():
    @numba.njit
    def colsum(m):
        return m.sum(axis=0)
    ro = tnp.broadcast_to(tnp.arange(3.0), (4, 3))
    np.testing.assert_array_equal(colsum(ro), colsum(np.broadcast_to(np.arange(3.0), (4, 3))))
    sig = colsum.nopython_signatures[0].args[0]
    assert isinstance(sig, numba.types.Array) and not sig.mutable and sig.ndim == 2


@pytest.mark.parametrize("value", [np.float64(2.5), np.float32(1.5), np.int64(-7), np.uint8(200),
                                   np.bool_(True), np.complex128(1 + 2j), np.complex64(-3 + 0.5j)],
                         ids=repr)
def test_tnp_scalars_unbox_as_numpy_scalars(value):
    @numba.njit
    def twice(s):
        return s * 2
    got = twice(tnp.asarray([value]).sum() if value.dtype.kind != "b" else tnp.asarray([value]).all())
    ref = twice(value)
    assert type(got) is type(ref) and got == ref   # a complex one keeps its imaginary part


def test_writes_in_jitted_code_show_but_bypass_the_version_counter():
    @numba.njit
    def fill(a, v):
        a[:] = v
    x = tnp.zeros(3)
    v0 = version(x)
    fill(x, 4.0)
    assert x.tolist() == [4.0, 4.0, 4.0]
    assert version(x) == v0        # documented: tnp does not see writes made by Numba


def test_gpu_arrays_are_refused_naming_the_device():
    class FakeGpu:
        shape, ndim, dtype = (2,), 1, np.dtype(np.float64)
    x = wrap(FakeGpu(), tnp.device("gpu:0"), cls=tnp.ndarray)

    @numba.njit
    def f(a):
        return a
    with pytest.raises(TypeError, match="gpu:0"):
        f(x)
    with pytest.raises(TypeError, match="cpu:1"):   # the fake device stands for memory elsewhere
        f(tnp.arange(2.0).to_device("cpu:1"))


FRESH = textwrap.dedent("""
    import sys
    import tnp
    assert "numba" not in sys.modules, "import tnp imported numba"
    from importlib.metadata import entry_points
    if "tnp._numba:init" not in [e.value for e in entry_points(group="numba_extensions", name="init")]:
        print("not installed")
        sys.exit(0)
    import numba
    @numba.njit
    def f(a):
        return a.sum()
    assert f(tnp.arange(4.0)) == 6.0   # tnp._numba was loaded by Numba, through the entry point
    print("ok")
""")


def test_import_tnp_does_not_import_numba_and_the_entry_point_registers():
    r = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "not installed":
        pytest.skip("tnp is not installed (pip install -e .): no entry point to check")
    assert r.stdout.strip() == "ok"
