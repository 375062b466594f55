"""Devices: interning and parsing, x.device/to_device, the rule that two devices never meet in one
operation (tested with the fake second CPU device 'cpu:1'), NumPy inputs moving to the array's
device, the default-device context (per thread), synchronize, and TNP_BACKEND."""
import operator
import os
import pickle
import subprocess
import sys
import threading

import numpy
import pytest

import tnp
from tnp.testing import assert_same

CPU = tnp.device("cpu")
CPU1 = tnp.device("cpu:1")


def on(dev, a):
    return tnp.asarray(numpy.asarray(a)).to_device(dev)


# ============================================================================ device objects
def test_interned():
    assert tnp.device("cpu") is tnp.device("cpu")
    assert tnp.device("cpu:0") is tnp.device("cpu")
    assert tnp.device(" CPU ") is tnp.device("cpu")
    assert tnp.device("cpu:1") is tnp.device("cpu:1")
    assert tnp.device("cpu:1") is not tnp.device("cpu")
    assert tnp.device(CPU1) is CPU1
    assert tnp.device() is CPU
    assert tnp.device("gpu:0") is tnp.device("cuda:0") is tnp.device("cuda") is tnp.device("GPU")
    assert pickle.loads(pickle.dumps(CPU1)) is CPU1


@pytest.mark.parametrize("spec,kind,index,name", [
    ("cpu", "cpu", 0, "cpu"), ("cpu:0", "cpu", 0, "cpu"), ("cpu:1", "cpu", 1, "cpu:1"),
    ("cpu:7", "cpu", 7, "cpu:7"), ("gpu", "gpu", 0, "gpu:0"), ("gpu:0", "gpu", 0, "gpu:0"),
    ("cuda", "gpu", 0, "gpu:0"), ("cuda:0", "gpu", 0, "gpu:0"), ("cuda:3", "gpu", 3, "gpu:3"),
    ("CUDA:1", "gpu", 1, "gpu:1"), (" gpu:2 ", "gpu", 2, "gpu:2"),
])
def test_parse(spec, kind, index, name):
    d = tnp.device(spec)
    assert isinstance(d, tnp.Device)
    assert (d.kind, d.index) == (kind, index)
    assert str(d) == name and d.name == name
    assert repr(d) == f"device({name!r})"
    assert d.is_gpu == (kind == "gpu")


@pytest.mark.parametrize("bad", ["tpu", "", "cpu:x", "gpu:-1", "cpu:-2", "cuda:a", "cpu:1:2", "gpu0",
                                 "cpu 1", "mps", ":0"])
def test_parse_errors(bad):
    with pytest.raises(ValueError):
        tnp.device(bad)


def test_non_string_device():
    with pytest.raises(TypeError):
        tnp.device(3)
    with pytest.raises(TypeError):
        tnp.device(None)

    class FakeCupyDevice:  # cupy.cuda.Device has .id
        id = 2
    assert tnp.device(FakeCupyDevice()) is tnp.device("gpu:2")


# ============================================================================ x.device / to_device
def test_array_device():
    assert tnp.arange(3).device is CPU
    assert tnp.arange(3).sum().device is CPU
    x = tnp.arange(6.0).reshape(2, 3)
    y = x.to_device("cpu:1")
    assert y.device is CPU1
    assert y.to_device(CPU1) is y  # already there: the array itself
    assert x.to_device("cpu") is x
    for r in (y[0], y[0, 1], y.T, y + 1, y.sum(), y.sum(axis=0), tnp.exp(y), y.astype("int8"), y.copy(),
              y.reshape(3, 2), y[[0, 1]], y[y > 2], -y, y.argmax(), y.nonzero()[0]):
        assert r.device is CPU1, r


def test_to_device_copies():
    x = tnp.arange(4.0)
    y = x.to_device("cpu:1")
    assert_same(numpy.arange(4.0), y)
    assert not numpy.shares_memory(numpy.asarray(x), numpy.asarray(y))
    y[0] = 100
    assert x[0] == 0
    z = y.to_device("cpu")
    assert z.device is CPU
    assert_same(numpy.asarray([100.0, 1, 2, 3]), z)
    z[1] = -1
    assert y[1] == 1
    # views and non-contiguous arrays move with their values
    v = tnp.arange(12).reshape(3, 4)[:, ::2].to_device("cpu:1")
    assert_same(numpy.arange(12).reshape(3, 4)[:, ::2], v.to_device("cpu"))
    # scalars move as scalars
    s = tnp.arange(3).sum().to_device("cpu:1")
    assert isinstance(s, tnp.Scalar) and s.device is CPU1 and s == 3
    assert repr(s) == "np.int64(3)"


def test_to_device_keeps_subclass():
    class Tagged(tnp.ndarray):
        def __array_finalize__(self, obj):
            self.tag = getattr(obj, "tag", None)
    t = tnp.arange(3).view(Tagged)
    t.tag = "x"
    m = t.to_device("cpu:1")
    assert type(m) is Tagged and m.tag == "x" and m.device is CPU1


def test_astype_device_and_asarray_device():
    x = tnp.arange(3)
    y = x.astype("float32", device="cpu:1")
    assert y.device is CPU1 and y.dtype == numpy.float32
    z = tnp.asarray(x, device="cpu:1")
    assert z.device is CPU1
    assert_same(numpy.arange(3), z)
    assert tnp.asarray(z).device is CPU1
    assert tnp.zeros(2, device="cpu:1").device is CPU1
    assert tnp.zeros(2, device=CPU1).device is CPU1


def test_pickle_keeps_device():
    y = tnp.arange(3.0, device="cpu:1")
    r = pickle.loads(pickle.dumps(y))
    assert r.device is CPU1
    assert_same(numpy.arange(3.0), r)
    s = pickle.loads(pickle.dumps(y.sum()))
    assert s.device is CPU1


# ============================================================================ mixing devices
MIXED = {
    "add": lambda a, b: a + b,
    "radd": lambda a, b: b + a,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
    "and": lambda a, b: (a > 1) & (b > 1),
    "matmul_op": lambda a, b: a @ b,
    "iadd": lambda a, b: operator.iadd(a, b),
    "imul": lambda a, b: operator.imul(a, b),
    "divmod": lambda a, b: divmod(a, b),
    "concatenate": lambda a, b: tnp.concatenate([a, b]),
    "stack": lambda a, b: tnp.stack([a, b]),
    "where": lambda a, b: tnp.where(a > 1, a, b),
    "where_cond": lambda a, b: tnp.where(b > 1, a, 0.0),
    "matmul": lambda a, b: tnp.matmul(a, b),
    "dot": lambda a, b: tnp.dot(a, b),
    "ufunc_add": lambda a, b: tnp.add(a, b),
    "ufunc_maximum": lambda a, b: tnp.maximum(a, b),
    "ufunc_out": lambda a, b: tnp.add(a, 1.0, out=b),
    "ufunc_outer": lambda a, b: tnp.multiply.outer(a, b),
    "numpy_ufunc": lambda a, b: numpy.add(a, b),
    "numpy_function": lambda a, b: numpy.concatenate([a, b]),
    "clip": lambda a, b: tnp.clip(a, b, 5.0),
    "allclose": lambda a, b: tnp.allclose(a, b),
    "setitem": lambda a, b: a.__setitem__(slice(None), b),
    "setitem_bool": lambda a, b: a.__setitem__(a > 1, b[:1]),
    "put": lambda a, b: a.put(tnp.asarray([0], device=b.device), 1.0),
    "copyto": lambda a, b: tnp.copyto(a, b),
}


@pytest.mark.parametrize("order", ["cpu_first", "cpu1_first"])
@pytest.mark.parametrize("name", list(MIXED), ids=list(MIXED))
def test_two_devices_raise_value_error(name, order):
    a = tnp.arange(3.0)
    b = tnp.arange(3.0, device="cpu:1")
    if order == "cpu1_first":
        a, b = b, a
    a_before = a.copy().to_device("cpu")
    with pytest.raises(ValueError) as ei:
        MIXED[name](a, b)
    msg = str(ei.value)
    assert "cpu:1" in msg and "cpu" in msg.replace("cpu:1", ""), msg
    # nothing was written
    assert_same(numpy.asarray(a_before), a.to_device("cpu"))


def test_error_message_names_operation_and_devices():
    with pytest.raises(ValueError, match=r"add: operands are on different devices \(cpu and cpu:1\)"):
        tnp.arange(3.0) + tnp.arange(3.0, device="cpu:1")
    with pytest.raises(ValueError, match=r"concatenate: .*cpu.*cpu:1"):
        tnp.concatenate([tnp.zeros(1), tnp.zeros(1, device="cpu:1")])


@pytest.mark.parametrize("index_kind", ["int_array", "bool_mask", "in_tuple", "scalar"])
def test_index_array_from_another_device(index_kind):
    x = tnp.arange(6.0).reshape(2, 3)
    idx = {"int_array": tnp.asarray([0, 1], device="cpu:1"),
           "bool_mask": tnp.asarray([True, False], device="cpu:1"),
           "in_tuple": (slice(None), tnp.asarray([0, 2], device="cpu:1")),
           "scalar": tnp.asarray([1], device="cpu:1")[0]}[index_kind]
    # docs/devices.md: indexing with an index array from another device is an IndexError
    with pytest.raises(IndexError) as ei:
        x[idx]
    msg = str(ei.value)
    assert "cpu:1" in msg and "cpu" in msg.replace("cpu:1", ""), msg  # names both devices
    with pytest.raises((IndexError, ValueError)):
        x[idx] = 0.0
    assert_same(numpy.arange(6.0).reshape(2, 3), x)
    # the same index on the array's device works
    y = x.to_device("cpu:1")
    assert y[idx].device is CPU1


def test_numpy_and_python_values_move_to_the_array_device():
    y = tnp.arange(3.0, device="cpu:1")
    n = numpy.arange(3.0)
    cases = [y + n, n + y, y * 2, 2 * y, y + 1.5, 1j * y, y + [1, 2, 3], [1, 2, 3] - y,
             tnp.add(y, n), numpy.add(n, y), numpy.multiply(numpy.float32(2), y), numpy.sum(y),
             tnp.concatenate([y, n]), tnp.where(n > 0, y, n), tnp.stack([n, y]), y @ n, n @ y,
             numpy.mean(y, axis=0), tnp.maximum(y, 1), y > n, y[numpy.asarray([0, 2])],
             y[numpy.asarray([True, False, True])], y[[0, 1]]]
    for k, r in enumerate(cases):
        assert r.device is CPU1, k
    assert_same(numpy.arange(3.0) + numpy.arange(3.0), y + n)
    y[numpy.asarray([0])] = numpy.asarray([5.0])
    y[1] = numpy.float64(6.0)
    y[2:] = [7.0]
    assert_same(numpy.asarray([5.0, 6.0, 7.0]), y)
    y += n
    assert y.device is CPU1
    assert_same(numpy.asarray([5.0, 7.0, 9.0]), y)


def test_only_numpy_inputs_use_default_device():
    with tnp.default_device("cpu:1"):
        assert tnp.add(numpy.ones(2), numpy.ones(2)).device is CPU1
        assert tnp.concatenate([numpy.ones(2), [1.0]]).device is CPU1
    assert tnp.add(numpy.ones(2), numpy.ones(2)).device is CPU


# ============================================================================ default device
CREATION = {
    "zeros": lambda: tnp.zeros(3), "ones": lambda: tnp.ones((2, 2)), "empty": lambda: tnp.empty(2),
    "full": lambda: tnp.full(2, 3.0), "arange": lambda: tnp.arange(4), "linspace": lambda: tnp.linspace(0, 1, 5),
    "eye": lambda: tnp.eye(3), "identity": lambda: tnp.identity(2), "array": lambda: tnp.array([1, 2]),
    "asarray_list": lambda: tnp.asarray([1.0, 2.0]), "asarray_numpy": lambda: tnp.asarray(numpy.ones(2)),
    "zeros_like_numpy": lambda: tnp.zeros_like(numpy.ones(2)), "tri": lambda: tnp.tri(3),
    "indices": lambda: tnp.indices((2, 2)), "fromfunction": lambda: tnp.fromfunction(lambda i: i, (3,)),
    "logspace": lambda: tnp.logspace(0, 1, 3), "frombuffer": lambda: tnp.frombuffer(b"\x00\x01", dtype="uint8"),
    "rng": lambda: tnp.random.default_rng(0).random(3),
}


@pytest.mark.parametrize("name", list(CREATION), ids=list(CREATION))
def test_default_device_context(name):
    make = CREATION[name]
    assert make().device is CPU
    with tnp.default_device("cpu:1") as d:
        assert d is CPU1
        assert tnp.get_default_device() is CPU1
        r = make()
        assert r.device is CPU1
        assert (r + 1).device is CPU1
    assert tnp.get_default_device() is CPU
    assert make().device is CPU
    # explicit device= wins over the context
    if name in ("zeros", "ones", "arange", "asarray_list", "full", "eye", "linspace", "empty"):
        with tnp.default_device("cpu:1"):
            f = getattr(tnp, name.split("_")[0])
            args = {"zeros": (3,), "ones": (3,), "arange": (3,), "asarray": ([1.0],), "full": (2, 1.0),
                    "eye": (2,), "linspace": (0, 1, 3), "empty": (2,)}[name.split("_")[0]]
            assert f(*args, device="cpu").device is CPU


def test_like_functions_follow_prototype_device():
    with tnp.default_device("cpu:1"):
        assert tnp.zeros_like(tnp.zeros(2, device="cpu")).device is CPU
        assert tnp.ones_like(tnp.zeros(2)).device is CPU1
    assert tnp.full_like(tnp.zeros(2, device="cpu:1"), 3).device is CPU1


def test_default_device_nesting_and_exceptions():
    with tnp.default_device("cpu:1"):
        with tnp.default_device("cpu"):
            assert tnp.zeros(1).device is CPU
            with tnp.default_device("cpu:2"):
                assert tnp.zeros(1).device is tnp.device("cpu:2")
            assert tnp.zeros(1).device is CPU
        assert tnp.zeros(1).device is CPU1
    assert tnp.get_default_device() is CPU
    with pytest.raises(KeyError):
        with tnp.default_device("cpu:1"):
            raise KeyError("boom")
    assert tnp.get_default_device() is CPU
    # a device object is itself a context manager
    with CPU1:
        assert tnp.arange(2).device is CPU1
    assert tnp.arange(2).device is CPU


def test_default_device_is_per_thread():
    results = {}
    main_inside = threading.Event()
    thread_done = threading.Event()
    thread_inside = threading.Event()
    main_checked = threading.Event()

    def worker_plain():
        main_inside.wait(10)
        results["plain_thread"] = tnp.zeros(1).device  # the main thread's context is not seen
        results["plain_default"] = tnp.get_default_device()
        thread_done.set()

    def worker_with_context():
        with tnp.default_device("cpu:1"):
            thread_inside.set()
            results["ctx_thread"] = tnp.zeros(1).device
            main_checked.wait(10)
        results["ctx_after"] = tnp.zeros(1).device

    t1 = threading.Thread(target=worker_plain)
    t1.start()
    with tnp.default_device("cpu:1"):
        main_inside.set()
        thread_done.wait(10)
        results["main_inside"] = tnp.zeros(1).device
    t1.join(10)
    t2 = threading.Thread(target=worker_with_context)
    t2.start()
    thread_inside.wait(10)
    results["main_while_thread_inside"] = tnp.zeros(1).device  # not the other thread's context
    main_checked.set()
    t2.join(10)
    assert results == {"plain_thread": CPU, "plain_default": CPU, "main_inside": CPU1,
                       "ctx_thread": CPU1, "main_while_thread_inside": CPU, "ctx_after": CPU}


def test_set_default_device():
    old = tnp.get_default_device()
    try:
        tnp.set_default_device("cpu:1")
        assert tnp.zeros(1).device is CPU1
        with tnp.default_device("cpu"):
            assert tnp.zeros(1).device is CPU
        assert tnp.zeros(1).device is CPU1
    finally:
        tnp.set_default_device(old)
    assert tnp.zeros(1).device is old


def test_bad_default_device():
    with pytest.raises(ValueError):
        tnp.default_device("tpu:0")
    with pytest.raises(ValueError):
        tnp.zeros(2, device="nowhere")


def test_synchronize_on_cpu():
    assert tnp.synchronize() is None
    assert tnp.synchronize("cpu") is None
    assert tnp.synchronize("cpu:1") is None
    assert tnp.synchronize(CPU1) is None
    assert CPU.synchronize() is None
    assert tnp.arange(3).device.synchronize() is None
    with pytest.raises(ValueError):
        tnp.synchronize("bogus")


# ============================================================================ TNP_BACKEND
_SCRIPT = """
import sys
try:
    import tnp
    d = tnp.get_default_device()
    x = tnp.zeros(2)
    print("OK", d, x.device)
except Exception as e:
    print("ERR", type(e).__name__, str(e).replace("\\n", " "))
"""


def _run_with_backend(value):
    env = dict(os.environ)
    env.pop("TNP_BACKEND", None)
    if value is not None:
        env["TNP_BACKEND"] = value
    p = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]


def _gpu_here():
    from tnp._core.backend import cupy_available
    return cupy_available()


@pytest.mark.parametrize("value", [None, "numpy", "NumPy", " numpy ", ""])
def test_backend_env_numpy(value):
    assert _run_with_backend(value) == "OK cpu cpu"


@pytest.mark.parametrize("value", ["bogus", "torch", "cpu"])
def test_backend_env_invalid(value):
    out = _run_with_backend(value)
    assert out.startswith("ERR ValueError"), out
    assert "TNP_BACKEND" in out


def test_backend_env_cupy():
    out = _run_with_backend("cupy")
    if _gpu_here():
        assert out == "OK gpu:0 gpu:0"
    else:
        assert out.startswith("ERR RuntimeError"), out
        assert "cupy" in out.lower()


def test_backend_env_auto():
    out = _run_with_backend("auto")
    assert out == ("OK gpu:0 gpu:0" if _gpu_here() else "OK cpu cpu")


def test_backend_name_parsing_in_process(monkeypatch):
    from tnp._core.backend import backend_name_from_env
    for v, exp in [("numpy", "numpy"), ("CUPY", "cupy"), (" auto ", "auto"), ("", "numpy")]:
        monkeypatch.setenv("TNP_BACKEND", v)
        assert backend_name_from_env() == exp
    monkeypatch.delenv("TNP_BACKEND")
    assert backend_name_from_env() == "numpy"
    monkeypatch.setenv("TNP_BACKEND", "jax")
    with pytest.raises(ValueError):
        backend_name_from_env()


def test_gpu_device_without_gpu_raises_runtime_error():
    if _gpu_here():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError):
        tnp.zeros(2, device="gpu:0")
    with pytest.raises(RuntimeError):
        tnp.arange(3).to_device("gpu:0")
    assert tnp.device("gpu:0") not in tnp.__array_namespace_info__().devices()
