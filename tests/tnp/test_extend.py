"""tnp.extend: the public door into tnp (backend arrays, wrapping, versions, op listeners)."""
import sys
import threading

import numpy as np
import pytest

import tnp
from tnp import extend


# ---------------------------------------------------------------------------- backend arrays
def test_backend_array_is_the_wrapped_buffer_without_copy():
    x = tnp.arange(6.0).reshape(2, 3)
    a = extend.backend_array(x)
    assert type(a) is np.ndarray
    a[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0


def test_backend_array_of_a_non_array_is_a_type_error():
    with pytest.raises(TypeError, match="backend_array"):
        extend.backend_array(np.zeros(3))


def test_wrap_round_trip_and_device():
    a = np.arange(4.0)
    x = extend.wrap(a, "cpu:1")
    assert isinstance(x, tnp.ndarray) and extend.device_of(x) is tnp.device("cpu:1")
    assert extend.backend_array(x) is a
    assert type(extend.wrap(np.float64(2.0))) is tnp.Scalar


def test_wrap_with_a_subclass_skips_its_constructor():
    class Tagged(tnp.ndarray):
        __slots__ = ()

        def __new__(cls, *a, **k):
            raise AssertionError("not called")

    t = extend.wrap(np.ones(3), tnp.device("cpu"), cls=Tagged)
    assert type(t) is Tagged and float(tnp.sum(t)) == 3.0
    with pytest.raises(TypeError, match="subclass of tnp.ndarray"):
        extend.wrap(np.ones(3), None, cls=int)


def test_array_module():
    assert extend.array_module(tnp.ones(2)) is np
    assert extend.array_module(tnp.device("cpu")) is np
    assert extend.array_module("cpu:1") is np
    assert extend.array_module(np.ones(2)) is np
    assert extend.array_module() is np


class _NoCupyImport:
    """A meta-path finder that fails the test if anything imports CuPy."""

    def find_spec(self, name, path=None, target=None):
        if name == "cupy" or name.startswith("cupy."):
            raise AssertionError(f"{name} was imported")
        return None


def test_cupy_is_none_without_a_running_gpu_backend_and_never_imports_cupy(monkeypatch):
    from tnp._core import backend as backends

    if backends.active_cupy_backend() is not None:
        pytest.skip("a GPU backend runs in this process")
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_NoCupyImport()] + sys.meta_path)
    assert extend.cupy() is None
    assert "cupy" not in sys.modules


def test_cupy_and_array_module_of_a_gpu_array_give_the_running_cupy(monkeypatch):
    import types

    from tnp._core import backend as backends

    fake = types.ModuleType("cupy")
    fake_array = type("ndarray", (), {"__module__": "cupy"})
    fake.ndarray = fake_array
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(backends, "_cupy_state",
                        {"checked": True, "error": None,
                         "backend": backends.Backend("cupy", fake, fake_array, True)})
    assert extend.cupy() is fake
    assert extend.array_module(fake_array()) is fake


# NumPy's floating types, and bfloat16, which NumPy files under kind 'V' (not np.floating)
FLOATING = ["float16", "float32", "float64", "longdouble", "bfloat16"]
NOT_FLOATING = ["complex64", "complex128", "int8", "int64", "uint16", "bool", "V2", "U3", "S2",
                "object", "datetime64[s]", [("a", "f4")]]


@pytest.mark.parametrize("spec", FLOATING)
def test_is_floating_takes_numpys_floats_and_bfloat16(spec):
    d = np.dtype(tnp.bfloat16) if spec == "bfloat16" else np.dtype(spec)
    for form in (spec, d, d.type):
        assert extend.is_floating(form) and extend.is_inexact(form)
    assert np.issubdtype(d, np.floating) or d == np.dtype(tnp.bfloat16)


@pytest.mark.parametrize("spec", NOT_FLOATING, ids=str)
def test_is_floating_refuses_everything_else(spec):
    d = np.dtype(spec)
    assert not extend.is_floating(d)
    assert extend.is_inexact(d) == (d.kind == "c")       # complex carries gradients too


def test_ml_dtypes_other_than_bfloat16_are_not_tnps_floats():
    # float8_e5m2 has NumPy kind 'f' but is no np.floating: the kind is not the test
    import ml_dtypes
    for t in (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, ml_dtypes.int4):
        assert not extend.is_floating(t) and not extend.is_inexact(t)


def test_is_floating_agrees_with_tnps_dtype_list():
    for d in [np.dtype(t) for t in np.sctypeDict.values() if t is not np.void] + \
            [np.dtype(tnp.bfloat16)]:
        ref = bool(tnp.issubdtype(d, tnp.floating)) or d == np.dtype(tnp.bfloat16)
        assert extend.is_floating(d) is ref, d
        assert extend.is_inexact(d) is (ref or bool(tnp.issubdtype(d, tnp.complexfloating))), d


def test_bfloat16_by_name_before_ml_dtypes_is_loaded():
    # NumPy knows the name only once ml_dtypes is imported; is_floating loads it for the name
    code = ("import sys; from tnp import extend; assert 'ml_dtypes' not in sys.modules; "
            "assert extend.is_floating('bfloat16') and 'ml_dtypes' in sys.modules; "
            "assert not extend.is_floating('int32')")
    import subprocess
    subprocess.run([sys.executable, "-c", code], check=True)


def test_versions_are_shared_by_views_and_bumped_by_writes():
    x = tnp.zeros(4)
    v = x[1:3]
    v0 = extend.version(x)
    x[0] = 1.0
    assert extend.version(x) == extend.version(v) == v0 + 1
    extend.bump_version(v)
    assert extend.version(x) == v0 + 2
    extend.bump_version(extend.backend_array(x))
    assert extend.version(extend.backend_array(v)) == v0 + 3


# ---------------------------------------------------------------------------- listeners
@pytest.fixture
def log():
    events = []
    handles = []

    def listen(tag):
        h = extend.add_op_listener(
            before=lambda n, a, k: events.append((tag, "before", n)) or (tag, n),
            after=lambda tok, n, a, k, r: events.append((tag, "after", n, tok, r)),
            error=lambda tok, n, a, k, e: events.append((tag, "error", n, type(e).__name__)))
        handles.append(h)
        return h
    yield events, listen
    for h in handles:
        h.remove()


def test_listener_sees_functions_operators_methods_and_indexing(log):
    events, listen = log
    x = tnp.arange(6.0)
    listen("A")
    y = tnp.exp(x)                  # ufunc, fast path
    z = x + y                       # operator
    s = tnp.sum(z)                  # function (reduction)
    r = z.reshape(2, 3)             # method (the C fast path steps aside)
    e = r[1]                        # indexing
    r[0, 0] = 5.0                   # item assignment
    t = r.T
    names = [ev[2] for ev in events if ev[1] == "before"]
    assert names == ["exp", "add", "sum", "reshape", "getitem", "setitem", "transpose"]
    afters = {ev[2]: ev[4] for ev in events if ev[1] == "after"}
    assert afters["exp"] is y and afters["add"] is z and afters["sum"] is s
    assert afters["reshape"] is r and afters["getitem"] is e and afters["transpose"] is t
    # tokens pass from before to after
    assert all(ev[3] == ("A", ev[2]) for ev in events if ev[1] == "after")


def test_before_runs_before_the_op_and_can_refuse_it(log):
    events, listen = log
    x = tnp.zeros(3)
    seen = []

    def before(name, args, kwargs):
        if name == "setitem":
            seen.append(float(extend.backend_array(args[0])[0]))  # still the old value
            raise RuntimeError("refused")

    h = extend.add_op_listener(before=before)
    try:
        with pytest.raises(RuntimeError, match="refused"):
            x[0] = 7.0
    finally:
        h.remove()
    assert seen == [0.0] and float(x[0]) == 0.0   # nothing was written


def test_errors_are_reported_and_propagate(log):
    events, listen = log
    listen("A")
    with pytest.raises(ValueError):
        tnp.reshape(tnp.ones(3), (2, 2))
    assert ("A", "error", "reshape", "ValueError") in events


def test_many_listeners_in_registration_order_and_removal(log):
    events, listen = log
    x = tnp.ones(2)
    a = listen("A")
    listen("B")
    tnp.negative(x)
    assert [ev[:2] for ev in events] == [("A", "before"), ("B", "before"),
                                         ("A", "after"), ("B", "after")]
    events.clear()
    a.remove()
    a.remove()  # idempotent
    tnp.negative(x)
    assert [ev[0] for ev in events] == ["B", "B"]
    assert a not in extend.op_listeners()


def test_ops_inside_a_listener_or_an_op_are_not_reported(log):
    events, listen = log

    def after(tok, name, args, kwargs, result):
        events.append(("inner-work", name))
        tnp.sum(tnp.ones(3))           # a listener's own tnp work: not reported

    h = extend.add_op_listener(after=after)
    try:
        tnp.linalg.inv(tnp.eye(2))     # one op, whatever it runs inside
        with extend.reporting_suspended():
            tnp.exp(tnp.ones(1))
    finally:
        h.remove()
    assert events == [("inner-work", "eye"), ("inner-work", "linalg.inv")]


def test_with_no_listener_nothing_is_called():
    calls = []
    h = extend.add_op_listener(before=lambda *a: calls.append(1))
    h.remove()
    tnp.exp(tnp.ones(2)) + 1
    assert calls == []


def test_add_op_listener_validates():
    with pytest.raises(TypeError):
        extend.add_op_listener()
    with pytest.raises(TypeError, match="callable"):
        extend.add_op_listener(before=3)


def test_listeners_added_and_removed_from_many_threads():
    counts = []
    errors = []
    barrier = threading.Barrier(8)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def work():
        try:
            barrier.wait()
            for _ in range(50):
                mine = []
                h = extend.add_op_listener(after=lambda *a: mine.append(1))
                tnp.add(tnp.ones(2), 1.0)
                h.remove()
                counts.append(len(mine))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    try:
        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors
    # each listener saw at least its own thread's two operations (ones, add): never lost
    assert len(counts) == 400 and min(counts) >= 2
    assert extend.op_listeners() == []


def test_a_tape_and_another_listener_coexist():
    tt = pytest.importorskip("tnp_train")
    names = []
    h = extend.add_op_listener(after=lambda tok, n, a, k, r: names.append(n))
    try:
        w = tt.Variable(tnp.ones(3))
        with tt.GradientTape() as tape:
            loss = tnp.sum(w * w)
        g = tape.gradient(loss, w)
        tnp.exp(tnp.ones(1))      # still listening after the tape is gone
    finally:
        h.remove()
    np.testing.assert_allclose(np.asarray(g), 2.0)
    assert "multiply" in names and "sum" in names and names[-1] == "exp"


def test_an_output_given_positionally_is_reported_as_out(log):
    events, listen = log
    x, y = tnp.ones(3), tnp.zeros(3)
    seen = []
    h = extend.add_op_listener(before=lambda n, a, k: seen.append((n, len(a), "out" in k)))
    try:
        tnp.exp(x, y)                  # ufunc: out positionally
        tnp.clip(x, 0, 1, y)           # function whose signature has out positionally
    finally:
        h.remove()
    assert seen == [("exp", 1, True), ("clip", 3, True)]


def test_a_tape_records_a_positional_output_into_a_tracked_array():
    # the output given positionally is reported as out=, so the tape records the write (it
    # refused it before gradients through in-place writes): h's old value gets no gradient
    tt = pytest.importorskip("tnp_train")
    w = tt.Variable(tnp.ones(3))
    with tt.GradientTape() as tape:
        h = w * 2.0
        tnp.exp(w, h)
        loss = tnp.sum(h * w)
    np.testing.assert_allclose(np.asarray(h), np.e)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, w)), 2 * np.e, rtol=1e-6)
