"""``tt.activations`` run on their input's device with its array module (``x._dev.backend.xp``).

The one-node activations (sigmoid, softplus, exact gelu and its erf, softmax, log_softmax) are
hand-written kernels; the others are tnp operations. Through the proxy array module of the fake
``cpu:1`` device (the fixtures of ``test_layer_kernels_backend``, with the activations module
added to the files that may not turn a ``cpu:1`` array into a NumPy array), every activation
must give bit-for-bit the CPU's outputs and gradients (second-order ones too for the smooth
activations), all on ``cpu:1`` although no ``tnp.default_device`` block is open.
"""
import os

import numpy as np
import pytest

import tnp
import tnp_train as tt
# the device-check helpers live beside the layer and fit tests they were written for
import sys  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

sys.path.insert(0, str(_Path(__file__).resolve().parents[1] / "layers"))
import test_layer_kernels_backend as kb

A = tt.activations
CPU, FAKE = kb.CPU, kb.FAKE
_on, _host = kb._on, kb._host
xp = kb.xp   # the fixture: cpu:1 computes through a proxy module
NAMES = sorted(A._BY_NAME)
# the hand-written kernels and the array-module functions each must read
KERNELS = {"sigmoid": ("exp", "where"), "softplus": ("logaddexp",), "gelu": ("exp",),
           "softmax": ("exp", "max", "sum"), "log_softmax": ("exp", "log", "max", "sum")}
SMOOTH = ["gelu", "silu", "swish", "sigmoid", "softplus", "tanh", "softmax", "log_softmax",
          "exponential", "mish"]


@pytest.fixture
def axp(xp, monkeypatch):
    """The proxy of ``xp``; a host conversion made by the activations module fails too."""
    monkeypatch.setattr(kb, "KERNEL_FILES", kb.KERNEL_FILES | {os.path.abspath(A.__file__)})
    return xp


def _x(dtype, shape=(2, 5)):
    # values away from the kinks of the piecewise-linear activations, with large ones
    x = np.random.default_rng(0).standard_normal(shape) * 3
    x[..., 0] = 40.0
    return x.astype(dtype)


def test_host_conversions_in_the_activations_module_are_refused(axp):
    # the guard is live: what the old kernels did (np.asarray of the input) fails
    with pytest.raises(AssertionError, match="converted to NumPy"):
        exec(compile("np.asarray(x)", A.__file__, "eval"),
             {"np": np, "x": _on(_x("float32"), FAKE)})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_activation_on_device(axp, name, dtype):
    fn = A.get(name)
    kb._check_same(fn, [_x(dtype)], axp, used=KERNELS.get(name, ()))


def test_hard_sigmoid_output_on_device(axp):
    x = _x("float32")
    got, ref = A.hard_sigmoid(_on(x, FAKE)), A.hard_sigmoid(_on(x, CPU))
    assert got.device is FAKE and got.dtype == ref.dtype
    np.testing.assert_array_equal(_host(got), _host(ref))


@pytest.mark.parametrize("fn,used", [
    (lambda t: A.gelu(t, approximate=True), ()),
    (lambda t: A.softmax(t, axis=0), ("exp", "max")),
    (lambda t: A.log_softmax(t, axis=1), ("log", "max")),
    (lambda t: A.relu(t, alpha=0.5, max_value=2.0, threshold=1.0), ()),
    (lambda t: A.elu(t, alpha=2.0), ()),
], ids=["gelu-approximate", "softmax-axis", "log_softmax-axis", "relu-arguments", "elu-alpha"])
def test_arguments_on_device(axp, fn, used):
    kb._check_same(fn, [_x("float32", (3, 2, 4))], axp, used=used)


def _second_order(fn, x, dev):
    """``fn(x)`` on ``dev`` with the gradients of ``sum(y * dy)`` and of ``sum(grad * dg)``."""
    v = _on(x, dev)
    rng = np.random.default_rng(1)
    dy, dg = (_on(rng.standard_normal(x.shape).astype(x.dtype), dev) for _ in range(2))
    with tt.GradientTape() as outer:
        outer.watch(v)
        with tt.GradientTape() as inner:
            inner.watch(v)
            y = fn(v)
        g = inner.gradient(tnp.sum(y * dy), v)
    return y, g, outer.gradient(tnp.sum(g * dg), v)


@pytest.mark.parametrize("name", SMOOTH)
def test_second_order_on_device(axp, name):
    x = _x("float64", (2, 4))
    fn = A.get(name)
    for got, ref in zip(_second_order(fn, x, FAKE), _second_order(fn, x, CPU)):
        assert got.device is FAKE and got.dtype == ref.dtype
        np.testing.assert_array_equal(_host(got), _host(ref))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_low_precision_and_integer_inputs(axp, name, dtype):
    # softmax/log_softmax compute in float32 and cast back; integers become float32
    x = np.array([[10.0, 10.5, -3.0], [0.1, 0.2, 40.0]])
    a = tnp.asarray(x).astype(dtype)
    fn = A.get(name)
    got, ref = fn(a.to_device(FAKE)), fn(a)
    assert got.device is FAKE and got.dtype == ref.dtype
    np.testing.assert_array_equal(_host(got), _host(ref))
    if dtype != "int32":
        kb._check_same(fn, [np.asarray(a)], axp, used=())


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"softmax", "log_softmax"}))
def test_zero_dimensional_input(axp, name):
    fn = A.get(name)
    x = tnp.asarray(np.float32(-0.75))
    got, ref = fn(x.to_device(FAKE)), fn(x)
    assert type(got) is type(ref) and got.device is FAKE and got.dtype == ref.dtype
    np.testing.assert_array_equal(_host(got), _host(ref))


@pytest.mark.parametrize("act", ["gelu", "softmax", "sigmoid", "softplus"])
def test_layers_with_activations(axp, act):
    x = _x("float32", (3, 4))
    kb._check_layer(lambda: tt.Sequential([tt.layers.Dense(3, activation=act),
                                           tt.layers.Activation("log_softmax")]),
                    [x], axp, used=KERNELS[act])
