"""``a OP b`` and ``tnp.<ufunc>(a, b)`` are one path (issue #12): for every operator, on tnp
arrays and scalars, Python numbers, NumPy arrays and scalars, lists, foreign objects and arrays
on another device, the operator gives what NumPy's operator gives and the ufunc what NumPy's
ufunc gives (value, dtype, kind of object, exception type and message, warnings); where NumPy
has no answer (two devices) the operator and the ufunc raise the same error with the same words.
The reference is NumPy itself, run on the same values in the same test."""
import operator
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tnp
import tnp.extend
from tnp._core import ndarray as nd

if os.environ.get("TNP_PURE_PYTHON"):   # (test_pure_python_build_is_the_same_path runs it so)
    assert not nd.SPEEDUPS


class _Tagged:
    """Answers every operator with a tag, so a test sees whether Python asked it."""

    def _tag(self, *_):
        return "deferred"

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _tag
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = _tag
    __matmul__ = __rmatmul__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _tag
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __divmod__ = __rdivmod__ = _tag
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _tag
    __hash__ = None


class Deferring(_Tagged):
    """Opts out of ufuncs (NEP 13): NumPy's operators return NotImplemented, so Python asks it."""
    __array_ufunc__ = None


class Prioritised(_Tagged):
    """No ``__array_ufunc__``, a higher ``__array_priority__`` than any array: NumPy's
    operators defer to it too (the legacy rule)."""
    __array_priority__ = 10_000.0


def _read_only(values):
    a = np.asarray(values)
    a.setflags(write=False)
    return a


class Duck:
    """Another library's array that handles ufuncs itself (as a pandas Series does): NumPy's
    operators hand it the ufunc."""
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("handled", ufunc.__name__, method, "out" in kwargs)


# name -> a maker of the operand from a module (numpy or tnp); a "t" kind is a tnp value under
# tnp and the same NumPy value under NumPy, a "p" kind is the same object under both
TNP_KINDS = {
    "f64 array": lambda xp: xp.asarray([1.5, -2.0, 0.0]),
    "i64 array": lambda xp: xp.asarray([3, -2, 0]),
    "u8 array": lambda xp: xp.asarray([200, 1, 0], dtype="uint8"),
    "bool array": lambda xp: xp.asarray([True, False, True]),
    "f32 array": lambda xp: xp.asarray([0.5, 4.0, -1.0], dtype="float32"),
    "c128 array": lambda xp: xp.asarray([1 + 1j, 0j, -2j]),
    "0-d array": lambda xp: xp.asarray(2.0),
    "f64 scalar": lambda xp: xp.asarray([2.5, 1.0])[0],
    "f64 zero scalar": lambda xp: xp.asarray([0.0, 1.0])[0],
    "i64 scalar": lambda xp: xp.asarray([7, 1])[0],
    "f32 scalar": lambda xp: xp.asarray([3.0, 1.0], dtype="float32")[0],
    "bool scalar": lambda xp: xp.asarray([True, False])[0],
    "c128 scalar": lambda xp: xp.asarray([1 - 2j])[0],
    "read-only array": lambda xp: xp.asarray(_read_only([2.0, 0.5, -1.0])),
}
PLAIN_KINDS = {
    "python int": lambda: 3,
    "python zero": lambda: 0,
    "python float": lambda: 2.5,
    "python complex": lambda: 1.5j,
    "python bool": lambda: True,
    "big python int": lambda: 2 ** 70,
    "numpy array": lambda: np.asarray([2.0, 1.0, 4.0]),
    "numpy f32 scalar": lambda: np.float32(2.0),
    "numpy f64 scalar": lambda: np.float64(-1.5),
    "list": lambda: [1, 2, 3],
    "string": lambda: "a",
    "None": lambda: None,
    "deferring object": Deferring,
    "prioritised object": Prioritised,
    "duck array": Duck,
}
# tnp values on a second (fake) device: NumPy's answer where they meet NumPy or Python values
# (the result stays on cpu:1), the device error where they meet a tnp value on the CPU
DEV1_KINDS = {
    "cpu:1 array": lambda: tnp.asarray([1.0, 2.0, 3.0], device="cpu:1"),
    "cpu:1 scalar": lambda: tnp.asarray([4.0, 5.0], device="cpu:1")[0],
}
DEV1_NUMPY = {"cpu:1 array": lambda: np.asarray([1.0, 2.0, 3.0]),
              "cpu:1 scalar": lambda: np.asarray([4.0, 5.0])[0]}

# a comparison's ufunc with its operands swapped (``a < b`` is ``b > a``)
SWAPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater",
           "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal"}
BINARY = [  # (label, the operator, the ufunc it stands for)
    ("+", operator.add, "add"), ("-", operator.sub, "subtract"), ("*", operator.mul, "multiply"),
    ("/", operator.truediv, "divide"), ("//", operator.floordiv, "floor_divide"),
    ("%", operator.mod, "remainder"), ("**", operator.pow, "power"),
    ("@", operator.matmul, "matmul"), ("&", operator.and_, "bitwise_and"),
    ("|", operator.or_, "bitwise_or"), ("^", operator.xor, "bitwise_xor"),
    ("<<", operator.lshift, "left_shift"), (">>", operator.rshift, "right_shift"),
    ("==", operator.eq, "equal"), ("!=", operator.ne, "not_equal"), ("<", operator.lt, "less"),
    ("<=", operator.le, "less_equal"), (">", operator.gt, "greater"),
    (">=", operator.ge, "greater_equal"), ("divmod", divmod, "divmod"),
]
UNARY = [("-", operator.neg, "negative"), ("+", operator.pos, "positive"),
         ("abs", abs, "absolute"), ("~", operator.invert, "invert")]
INPLACE = [(label, getattr(operator, "i" + f.__name__.rstrip("_")), u)
           for label, f, u in BINARY[:13]]


def operands(kind, xp):
    """The operand of ``kind`` for module ``xp``, or None where there is no such value."""
    if kind in TNP_KINDS:
        return TNP_KINDS[kind](xp)
    if kind in PLAIN_KINDS:
        return PLAIN_KINDS[kind]()
    return DEV1_KINDS[kind]() if xp is tnp else DEV1_NUMPY[kind]()


def outcome(f):
    """What a call gives: ("value", kind, dtype, host values, device) or ("error", type,
    message), and the warnings' messages."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
        except Exception as e:           # noqa: BLE001 - the type and words are compared
            res = ("error", type(e), str(e))
        else:
            res = ("value",) + describe(r)
    return res, sorted({str(x.message) for x in w})


def describe(r):
    if isinstance(r, tuple):
        return ("tuple",) + tuple(describe(x) for x in r)
    if isinstance(r, tnp.Scalar) or isinstance(r, np.generic):
        host = r.item() if isinstance(r, np.generic) else r.to_device("cpu").item()
        return ("scalar", r.dtype, host if host == host else "nan", getattr(r, "device", None))
    if isinstance(r, (tnp.ndarray, np.ndarray)):
        h = np.asarray(r.to_device("cpu") if isinstance(r, tnp.ndarray) else r)
        return ("array", h.dtype, h.shape, tuple(np.where(h != h, np.inf, h).ravel().tolist()),
                getattr(r, "device", None))
    return ("object", type(r), r)


def same_as_numpy(ref, got, dev=None):
    """tnp's outcome ``got`` is NumPy's ``ref``: NumPy arrays -> tnp arrays, NumPy scalars ->
    tnp scalars, and anything else (Python objects, errors, warnings) alike."""
    (r, rw), (g, gw) = ref, got
    assert rw == gw, (rw, gw)
    if r[0] == "error":
        assert g[0] == "error" and g[1] is r[1] and g[2] == r[2], (r, g)
        return
    assert g[0] == "value", (r, g)
    _same_value(r[1:], g[1:], dev)


def _same_value(r, g, dev):
    if r[0] == "object" and r[1] in (complex, bool) and g[0] == "scalar":
        # NumPy ran Python's own operator (``1j * np.float64(2)`` is complex's multiplication,
        # float64 being a float): tnp gives a tnp scalar of that value and of the dtype NumPy
        # gives it, which a tape can follow (docs/differences.md, Scalars)
        assert g[1:3] == (np.asarray(r[2]).dtype, r[2]) and g[3] == dev, (r, g)
        return
    assert r[0] == g[0], (r, g)
    if r[0] == "tuple":
        for a, b in zip(r[1:], g[1:], strict=True):
            _same_value(a, b, dev)
    elif r[0] == "object":
        assert g[1] is r[1] and g[2] == r[2], (r, g)
    else:
        assert g[1:-1] == r[1:-1], (r, g)
        assert g[-1] == dev, (g, dev)      # on the device of the tnp operands


def device_of(*xs):
    devs = {x.device for x in xs if isinstance(x, tnp.ndarray)}
    return devs.pop() if len(devs) == 1 else None


ALL_KINDS = [*TNP_KINDS, *PLAIN_KINDS, *DEV1_KINDS]


def pairs():
    """(left kind, right kind) where at least one operand is a tnp value."""
    tnp_side = [*TNP_KINDS, *DEV1_KINDS]
    return [(x, y) for x in ALL_KINDS for y in ALL_KINDS if x in tnp_side or y in tnp_side]


def mixes_devices(x, y):
    return isinstance(x, tnp.ndarray) and isinstance(y, tnp.ndarray) and x.device != y.device


class Failures(list):
    """The cases that disagree, all of them (a sweep reports every case, not the first)."""

    def check(self, where, ref, got, dev):
        try:
            same_as_numpy(ref, got, dev)
        except AssertionError as e:
            self.append(f"{where}: {e}")

    def expect(self, where, ok, detail):
        if not ok:
            self.append(f"{where}: {detail}")

    def done(self):
        assert not self, f"{len(self)} cases differ:\n" + "\n".join(self[:25])


@pytest.mark.parametrize("label,op,uname", BINARY, ids=[b[0] for b in BINARY])
def test_binary_operator_is_the_ufunc(label, op, uname):
    ufunc_t, ufunc_n = getattr(tnp, uname), getattr(np, uname)
    bad = Failures()
    for kx, ky in pairs():
        xt, yt = operands(kx, tnp), operands(ky, tnp)
        xn, yn = operands(kx, np), operands(ky, np)
        where = f"{kx} {label} {ky}"
        got_op, got_uf = outcome(lambda: op(xt, yt)), outcome(lambda: ufunc_t(xt, yt))
        if mixes_devices(xt, yt):
            # no NumPy answer: one error, one message, from either spelling
            bad.expect(where, got_op[0][0] == "error" and got_op[0][1] is ValueError and
                       "cpu:1" in got_op[0][2], got_op)
            if uname in SWAPPED and isinstance(xt, tnp.Scalar) and not isinstance(yt, tnp.Scalar):
                # Python asks the right operand first where its class is a subclass of the
                # left's (tnp.Scalar of tnp.ndarray): s < x is x's own x > s
                got_uf = outcome(lambda: getattr(tnp, SWAPPED[uname])(yt, xt))
            bad.expect(where, got_op == got_uf, (got_op, got_uf))
            continue
        dev = device_of(xt, yt)
        bad.check(where, outcome(lambda: op(xn, yn)), got_op, dev)
        bad.check(f"tnp.{uname}({kx}, {ky})", outcome(lambda: ufunc_n(xn, yn)), got_uf, dev)
    bad.done()


@pytest.mark.parametrize("label,op,uname", UNARY, ids=[u[0] for u in UNARY])
def test_unary_operator_is_the_ufunc(label, op, uname):
    bad = Failures()
    for kx in [*TNP_KINDS, *DEV1_KINDS]:
        xt, xn = operands(kx, tnp), operands(kx, np)
        dev = xt.device
        bad.check(f"{label}({kx})", outcome(lambda: op(xn)), outcome(lambda: op(xt)), dev)
        bad.check(f"tnp.{uname}({kx})", outcome(lambda: getattr(np, uname)(xn)),
                  outcome(lambda: getattr(tnp, uname)(xt)), dev)
    bad.done()


def _returned(op, x, y):
    """``x op= y``: whether ``x`` itself came back, and x's values after it."""
    def run():
        z = op(x, y)
        return ("x itself" if z is x else z, x)
    return outcome(run)


@pytest.mark.parametrize("label,iop,uname", INPLACE, ids=[i[0] + "=" for i in INPLACE])
def test_inplace_operator_is_the_ufunc_with_out(label, iop, uname):
    ufunc_t, ufunc_n = getattr(tnp, uname), getattr(np, uname)
    targets = [k for k in [*TNP_KINDS, *DEV1_KINDS] if "array" in k and "0-d" not in k]
    bad = Failures()
    for kx in targets:
        for ky in ALL_KINDS:
            where = f"{kx} {label}= {ky}"
            got = {}
            for spelling in ("op", "ufunc"):
                xt, yt, xn, yn = (operands(kx, tnp), operands(ky, tnp), operands(kx, np),
                                  operands(ky, np))
                v0 = tnp.extend.version(xt)
                if spelling == "op":
                    g, ref = _returned(iop, xt, yt), _returned(iop, xn, yn)
                else:
                    g = outcome(lambda: (ufunc_t(xt, yt, out=xt), xt))
                    ref = outcome(lambda: (ufunc_n(xn, yn, out=xn), xn))
                got[spelling] = g
                # a call that went through is one new version of x (a failed one, or an
                # operator that NumPy's rules leave to the other operand, none)
                wrote = g[0][0] == "value" and g[0][2] != ("object", str, "deferred")
                bad.expect(f"{where} ({spelling})", tnp.extend.version(xt) == v0 + wrote,
                           (v0, tnp.extend.version(xt), g))
                if not mixes_devices(xt, yt):
                    bad.check(f"{where} ({spelling})", ref, g, xt.device)
            if mixes_devices(operands(kx, tnp), operands(ky, tnp)):
                g = got["op"]
                bad.expect(where, g[0][0] == "error" and g[0][1] is ValueError, g)
                bad.expect(where, got["op"] == got["ufunc"], (got["op"], got["ufunc"]))
    bad.done()


def test_scalar_inplace_operators_give_new_values_as_numpys():
    bad = Failures()
    for label, iop, _ in INPLACE:
        for kx in [k for k in TNP_KINDS if "scalar" in k]:
            for ky in ALL_KINDS:
                xt, yt, xn, yn = operands(kx, tnp), operands(ky, tnp), operands(kx, np), operands(ky, np)
                if not mixes_devices(xt, yt):
                    bad.check(f"{kx} {label}= {ky}", outcome(lambda: iop(xn, yn)),
                              outcome(lambda: iop(xt, yt)), device_of(xt, yt))
    bad.done()


def test_pure_python_build_is_the_same_path():
    """The module's sweeps again without the C base (the Python methods alone)."""
    env = dict(os.environ, TNP_PURE_PYTHON="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "-p", "no:xdist", __file__, "-k", "not pure_python"],
                       env=env, capture_output=True, text=True, timeout=150, cwd=root)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_python_complex_times_a_tnp_scalar_is_a_tnp_value():
    """NumPy's ``1j * np.float64(2)`` is a Python complex (complex's own multiplication, float64
    being a float); tnp gives a tnp scalar of NumPy's value and dtype, so a tape can follow it."""
    s = tnp.asarray([2.0, 1.0])[0]
    n = np.float64(2.0)
    for op in (operator.mul, operator.add, operator.sub, operator.truediv, operator.pow):
        ref, got = op(1.5j, n), op(1.5j, s)
        assert type(ref) is complex                      # NumPy's (the reason for the rule)
        assert type(got) is tnp.Scalar and got.dtype == np.complex128 and got.item() == ref
    assert type(1.5j * tnp.asarray([2.0], dtype="float32")[0]) is tnp.Scalar    # NumPy's too
    assert (1.5j * tnp.asarray([2.0], dtype="float32")[0]).dtype == (1.5j * np.float32(2)).dtype


def _reports(f):
    """The (name, args) the operation listeners see while ``f`` runs."""
    seen = []
    with tnp.extend.add_op_listener(before=lambda name, args, kwargs: seen.append(
            (name, tuple(type(a).__name__ for a in args), sorted(kwargs)))):
        f()
    return seen


def test_listeners_see_each_operator_once_as_its_ufunc():
    a, b = tnp.arange(3.0), tnp.ones(3)
    assert _reports(lambda: a + b) == _reports(lambda: tnp.add(a, b)) == \
        [("add", ("ndarray", "ndarray"), [])]
    assert _reports(lambda: 2.0 - a) == [("subtract", ("float", "ndarray"), [])]
    assert _reports(lambda: a ** 2) == [("power", ("ndarray", "int"), [])]
    assert _reports(lambda: a[0] * 3) == [("getitem", ("ndarray", "int"), []),
                                          ("multiply", ("Scalar", "int"), [])]
    assert _reports(lambda: -a) == [("negative", ("ndarray",), [])]
    assert _reports(lambda: a > 1) == [("greater", ("ndarray", "int"), [])]
    # a comparison with a scalar on the right is the array's own (Python asks the scalar first)
    assert _reports(lambda: a > a[0])[-1] == ("greater", ("ndarray", "Scalar"), [])
    assert _reports(lambda: a + Deferring()) == []          # NotImplemented is no operation


def test_inplace_operators_write_bump_the_version_and_are_reported_as_writes():
    a, b = tnp.arange(3.0), tnp.ones(3)
    view = a[1:]
    v0 = tnp.extend.version(a)

    def iadd():
        nonlocal a
        a += b
    assert _reports(iadd) == [("inplace_add", ("ndarray", "ndarray"), [])]
    assert tnp.extend.version(a) == tnp.extend.version(view) == v0 + 1
    assert view.tolist() == [2.0, 3.0]                      # written in place, as NumPy's
    assert _reports(lambda: tnp.add(a, b, out=a)) == [("add", ("ndarray", "ndarray"), ["out"])]
    assert tnp.extend.version(a) == v0 + 2 and a.tolist() == [2.0, 3.0, 4.0]
    i = tnp.arange(3)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        i += 0.5                                            # as NumPy: same_kind casting
    assert tnp.extend.version(i) == 0 and i.tolist() == [0, 1, 2]


def test_a_tape_records_operators_in_place_operators_and_complex_scalars():
    tt = pytest.importorskip("tnp_train")
    x = tnp.asarray([1.0, 2.0, 3.0])
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        y += x                                              # recorded as a write: y = x*x + x
        s = tnp.sum(y)
        z = 1j * s                                          # a tnp value (NumPy: Python complex)
        r = tnp.real(z * z)                                 # -s**2
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 2 * np.asarray(x) + 1)
    s_h = float(np.sum(np.asarray(x) ** 2 + np.asarray(x)))
    np.testing.assert_allclose(np.asarray(tape.gradient(r, x)),
                               -2 * s_h * (2 * np.asarray(x) + 1))


class Tagged(tnp.ndarray):
    """A subclass whose results are of its class (``_subclass_results``), as NumPy's."""
    __slots__ = ()


class Container(tnp.ndarray):
    """A subclass that is a container, not a kind of array: its results are plain tnp arrays."""
    __slots__ = ()
    _subclass_results = False


class Overriding(tnp.ndarray):
    """A subclass with its own ``__array_ufunc__``: operators hand it the ufunc, as NumPy's do."""
    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("overridden", ufunc.__name__, method, sorted(kwargs))


@pytest.mark.parametrize("cls,result", [(Tagged, Tagged), (Container, tnp.ndarray)])
def test_subclasses_give_the_same_class_from_operator_and_ufunc(cls, result):
    a = tnp.arange(3.0).view(cls)
    for left, right in ((a, 2.0), (2.0, a), (a, tnp.ones(3)), (tnp.ones(3), a), (a, np.ones(3))):
        for got in (left + right, tnp.add(left, right)):
            assert type(got) is result
            np.testing.assert_array_equal(np.asarray(got), np.asarray(left) + np.asarray(right))
    assert type(-a) is type(tnp.negative(a)) is result


def test_an_override_gets_the_ufunc_from_operators_too():
    o = tnp.arange(3.0).view(Overriding)
    x = tnp.arange(3.0)
    assert o + x == x + o == tnp.add(o, x) == ("overridden", "add", "__call__", [])
    assert o ** 3 == ("overridden", "power", "__call__", [])
    assert -o == ("overridden", "negative", "__call__", [])
    y = tnp.arange(3.0)
    y += o
    assert y == ("overridden", "add", "__call__", ["out"])


FAKE_GPUS = r"""
import runpy, sys
runpy.run_path(sys.argv[1])                 # the fake CuPy, two "GPUs"
import operator, warnings
import numpy as np, tnp, tnp.extend

def host(x):
    return np.asarray(x.to_device("cpu")) if isinstance(x, tnp.ndarray) else np.asarray(x)

g = tnp.asarray([1.0, 2.0, 3.0], device="gpu:1")
h = tnp.asarray([4.0, 5.0, 0.5], device="gpu:1")
gpu1 = tnp.device("gpu:1")
pairs = [(g, h), (g, 2.0), (2.0, g), (g[0], h), (g, g[1]), (g[0], 2.5), (1j, g[0]),
         (g, np.ones(3)), (np.ones(3), g), (g, [1.0, 2.0, 3.0]), ([1.0, 2.0, 3.0], g)]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")            # (3 ** 0.5 and the like: NumPy's warnings)
    for op, uf in [(operator.add, "add"), (operator.sub, "subtract"), (operator.mul, "multiply"),
                   (operator.truediv, "divide"), (operator.pow, "power"), (operator.lt, "less"),
                   (operator.eq, "equal")]:
        for x, y in pairs:
            # the operator runs in gpu:1's device context, as the ufunc does
            r, u = op(x, y), getattr(tnp, uf)(x, y)
            ref = getattr(np, uf)(host(x), host(y))
            assert r.device is u.device is gpu1, (op, x, y)
            assert np.allclose(host(r), host(u)) and np.allclose(host(r), ref), (op, x, y)
    for f, uf in [(operator.neg, "negative"), (abs, "absolute")]:
        assert f(g).device is gpu1 and np.array_equal(host(f(g)), host(getattr(tnp, uf)(g)))
c = g.copy()
v = tnp.extend.version(c)
c += h                                          # in place, in gpu:1's context
assert host(c).tolist() == [5.0, 7.0, 3.5] and tnp.extend.version(c) == v + 1
# two devices: the one error, the same words from the operator and the ufunc
for x, y in ((g, tnp.ones(3, device="gpu:0")), (g, tnp.ones(3)), (tnp.ones(3), g)):
    msgs = []
    for f in (lambda: x + y, lambda: tnp.add(x, y), lambda: x.__iadd__(y),
              lambda: tnp.add(x, y, out=x)):
        try:
            f()
        except ValueError as e:
            msgs.append(str(e))
    assert len(set(msgs)) == 1 and len(msgs) == 4 and "different devices" in msgs[0], msgs
print("fake gpus ok")
"""


def test_operators_run_in_the_device_context_of_their_gpu():
    """On a GPU an operator is the ufunc's call too: CuPy runs a kernel only in the device context
    of its arrays (``with cupy.cuda.Device(i)``) and takes no lists. Checked with a stand-in
    for CuPy on NumPy with two devices (tests/tnp/_fake_cupy.py), in a subprocess; a GPU
    machine runs tests/gpu with the real one."""
    fake = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fake_cupy.py")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TNP_BACKEND="numpy")
    r = subprocess.run([sys.executable, "-c", FAKE_GPUS, fake], env=env, capture_output=True,
                       text=True, timeout=120, cwd=root)
    assert r.returncode == 0 and r.stdout.strip() == "fake gpus ok", r.stdout + r.stderr[-3000:]
