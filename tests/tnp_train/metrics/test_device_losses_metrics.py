"""Losses, metrics, gradient clipping and learning-rate schedules stay on their device: a ``fit``
step never copies predictions, labels, metric state or gradient norms to the host.

Two views, both on the fake ``cpu:1`` device (its arrays compute through a proxy array module,
as CuPy's would on a GPU):

* ``fit`` (the ``host_reads`` fixture of ``test_fit_host_and_validation``): an epoch of a small
  classifier compiled with the usual losses and metrics, with clipping or a schedule, reads
  each logged value once, at the epoch's end, and nothing else; its history and weights are
  the CPU's, to the bit.
* the kernels themselves (the ``xp`` fixture of ``test_layer_kernels_backend``, with the loss,
  metric and optimizer modules added to the files that may not turn a ``cpu:1`` array into a
  NumPy array): they compute with the proxy module, give bit-for-bit the CPU's values and
  gradients, and leave them on ``cpu:1``. The arrays they get and make there are marked, so
  reading one as a Python value (``float()``, ``bool()``, ``.item()``: a device sync on a GPU)
  from inside a loss, metric or clipping call fails the test.

On the CPU an invalid input (a label outside the classes, a probability outside [0, 1]) raises
ValueError as before; on a device it cannot be seen without a read, so the values concerned
become NaN (TF's sparse cross-entropy does the same on a GPU).
"""
import contextlib
import os
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import backend_array, wrap
# the device-check helpers live beside the layer and fit tests they were written for
import sys  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

sys.path.insert(0, str(_Path(__file__).resolve().parents[1] / "layers"))
sys.path.insert(0, str(_Path(__file__).resolve().parents[1] / "trainers"))
import test_fit_host_and_validation as fh
import test_layer_kernels_backend as kb
from tnp_train import losses as losses_mod
from tnp_train import metrics as metrics_mod
from tnp_train.losses import _values, _weights, _xent
from tnp_train.losses import functions as loss_functions_mod
from tnp_train.metrics import base as metrics_base_mod
from tnp_train.metrics import confusion as confusion_mod
from tnp_train.metrics import functions as metric_functions_mod
from tnp_train.optimizers import base_optimizer as base_optimizer_mod
from tnp_train.optimizers import schedules as schedules_mod

CPU, FAKE = kb.CPU, kb.FAKE
M, S = tt.metrics, tt.optimizers.schedules
host_reads = fh.host_reads      # the fixture: host reads of cpu:1 arrays, by caller
xp = kb.xp                      # the fixture: cpu:1 computes through a counting proxy
DEVICE_FILES = {os.path.abspath(m.__file__) for m in (
    losses_mod, loss_functions_mod, _xent, _weights, _values, metrics_mod, metrics_base_mod,
    metric_functions_mod, confusion_mod, base_optimizer_mod, schedules_mod)}


# ---------------------------------------------------------------------------- fit
EPOCHS, N, BATCH = 2, 32, 8


def _classifier(kind):
    """(model compiled under cpu:1, x, y, fit keyword arguments) of a small seeded classifier."""
    r = np.random.default_rng(0)
    x = r.standard_normal((N, 4)).astype(np.float32)
    labels = r.integers(0, 3, N)
    L = tt.layers
    tt.utils.set_random_seed(0)
    if kind == "sparse":
        model = tt.Sequential([tt.Input((4,)), L.Dense(8, activation="relu"),
                               L.Dense(3, activation="softmax")])
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9, clipnorm=0.2),
                      "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model, x, labels, {"class_weight": {0: 2.0, 1: 0.5, 2: 1.0}}
    if kind == "binary":
        model = tt.Sequential([tt.Input((4,)), L.Dense(8, activation="relu"),
                               L.Dense(1, activation="sigmoid")])
        model.compile(tt.optimizers.SGD(S.ExponentialDecay(0.5, decay_steps=3, decay_rate=0.5)),
                      "binary_crossentropy", metrics=["accuracy"], weighted_metrics=["accuracy"])
        w = np.linspace(0.5, 2.0, N).astype(np.float32)
        return model, x, (labels == 1).astype(np.float32), {"sample_weight": w}
    model = tt.Sequential([tt.Input((4,)), L.Dense(8, activation="relu"),
                           L.Dense(3, activation="softmax")])
    model.compile(tt.optimizers.Adam(0.05, global_clipnorm=0.3, clipvalue=0.05),
                  "categorical_crossentropy",
                  metrics=[M.AUC(num_thresholds=20), M.Precision(), M.Recall(top_k=2),
                           M.AUC(curve="PR", multi_label=True, num_thresholds=11, name="pr_auc"),
                           "top_k_categorical_accuracy"])
    return model, x, np.eye(3, dtype=np.float32)[labels], {}


def _fit(kind, device, inside, reads=None):
    with tnp.default_device(device):
        model, x, y, kwargs = _classifier(kind)
        X, Y = tnp.asarray(x).to_device(device), tnp.asarray(y).to_device(device)
        kwargs = {k: v if k == "class_weight" else tnp.asarray(v).to_device(device)
                  for k, v in kwargs.items()}
    with tnp.default_device(device) if inside else contextlib.nullcontext():
        tt.utils.set_random_seed(1)
        if reads is not None:
            reads.clear()
        hist = model.fit(X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0, **kwargs)
    return model, hist


@pytest.mark.parametrize("inside", [True, False], ids=["in-device-block", "outside-the-block"])
@pytest.mark.parametrize("kind", ["sparse", "binary", "categorical"],
                         ids=["sparse-xent-accuracy-clipnorm", "binary-xent-accuracy-schedule",
                              "categorical-xent-auc-precision-global-clipnorm"])
def test_fit_reads_nothing_back_inside_the_steps(host_reads, kind, inside):
    model, hist = _fit(kind, FAKE, inside, reads=host_reads)
    # the epoch's end reads each logged value once (for History); the steps read nothing
    assert len(hist.history) >= 2
    assert sum(host_reads.values()) == EPOCHS * len(hist.history), host_reads
    # metrics made from names in the first step keep their state with the predictions
    assert all(v.device is FAKE for m in model.metrics for v in m.variables)
    ref_model, ref = _fit(kind, CPU, inside)
    assert hist.history == ref.history
    for w, r in zip(model.get_weights(), ref_model.get_weights()):
        np.testing.assert_array_equal(w, r)


# ---------------------------------------------------------------------------- kernels
class _DeviceValue(np.ndarray):
    """A ``cpu:1`` backend array: read as a Python value while :func:`_strict` is on, it fails
    the test (on a GPU that read waits for the device)."""

    def _refuse(self, what):
        if getattr(_STRICT, "on", False):
            raise AssertionError(f"{what} of a cpu:1 array inside a loss, metric or clipping "
                                 f"call (a host read on a GPU)")


def _refusing(name):
    base = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        self._refuse(f"{name}()")
        return base(self, *args, **kwargs)
    return method


for _name in ("__float__", "__int__", "__bool__", "__index__", "__complex__", "item", "tolist"):
    setattr(_DeviceValue, _name, _refusing(_name))
_STRICT = threading.local()


@contextlib.contextmanager
def _strict():
    _STRICT.on = True
    try:
        yield
    finally:
        _STRICT.on = False


def _mark(r):
    """Results of the proxy module as ``_DeviceValue`` arrays (NumPy scalars as 0-d ones)."""
    if type(r) is np.ndarray:
        return r.view(_DeviceValue)
    if isinstance(r, np.generic) and not isinstance(r, (np.str_, np.bytes_)):
        return np.asarray(r).view(_DeviceValue)
    if type(r) is tuple:
        return tuple(_mark(e) for e in r)
    return r


@pytest.fixture
def dxp(xp, monkeypatch):
    """``xp`` (cpu:1 computes through the counting proxy), with the loss, metric and optimizer
    modules among the files that may not convert a cpu:1 array to NumPy, and the proxy's
    functions returning ``_DeviceValue`` arrays."""
    monkeypatch.setattr(kb, "KERNEL_FILES", kb.KERNEL_FILES | DEVICE_FILES)
    counting = kb._ProxyXP.__getattr__

    def marking(self, name):
        attr = counting(self, name)
        if callable(attr) and not isinstance(attr, (type, np.ufunc)):
            def call(*args, **kwargs):
                return _mark(attr(*args, **kwargs))
            return call
        return attr
    monkeypatch.setattr(kb._ProxyXP, "__getattr__", marking)
    yield xp
    _STRICT.on = False


def _dev(a, dtype=None):
    """NumPy data as a marked cpu:1 array."""
    a = np.array(a, dtype=dtype)
    return wrap(a.view(_DeviceValue), FAKE)


def _on(a, device):
    return _dev(a) if device is FAKE else tnp.asarray(a).to_device(device)


def test_the_guards_are_live(dxp):
    x = _dev(np.ones(3, np.float32))
    # what the old cross-entropy did (NumPy of the predictions) fails from these files
    with pytest.raises(AssertionError, match="converted to NumPy"):
        exec(compile("np.asarray(x)", _xent.__file__, "eval"), {"np": np, "x": x})
    # and so does reading a device value as a Python number (a sync), even from the backend
    with _strict(), pytest.raises(AssertionError, match="host read"):
        float(dxp.sum(backend_array(x)))
    with _strict(), pytest.raises(AssertionError, match="host read"):
        bool((backend_array(x) > 2).any())


def _run(fn, arrays, dev, watch, strict_backward, seed=1):
    """``fn(*arrays)`` on ``dev`` with the gradients of ``sum(y * dy)`` for the arrays at the
    positions in ``watch`` (the others: labels, weights)."""
    args = [_on(a, dev) for a in arrays]
    with tt.GradientTape() as tape:
        for i in watch:
            tape.watch(args[i])
        with _strict():
            outs, loss = kb._outputs_and_loss(fn(*args), dev, seed)
    with _strict() if strict_backward else contextlib.nullcontext():
        grads = tape.gradient(loss, [args[i] for i in watch])
    return outs, grads


def _same_on_device(fn, arrays, proxy, watch=(0,), used=(), strict_backward=True):
    """``fn`` on the CPU and through the proxy on cpu:1: the same values and gradients, bit
    for bit, and on cpu:1. ``strict_backward=False`` for a backward made of tnp's own VJP rules
    (not this task's code)."""
    ref_outs, ref_grads = _run(fn, arrays, CPU, watch, strict_backward)
    before = sum(proxy.used.values())
    outs, grads = _run(fn, arrays, FAKE, watch, strict_backward)
    assert sum(proxy.used.values()) > before
    for name in used:
        assert proxy.used[name] > 0, f"xp.{name} was not used ({dict(proxy.used)})"
    for o, r in zip(outs + grads, ref_outs + ref_grads):
        assert o.device is FAKE and o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_array_equal(kb._host(o), kb._host(r))
    return outs


def _logits(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 2


def _probs(shape, seed=0):
    e = np.exp(_logits(shape, seed))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


L_ = tt.losses
SPARSE = np.array([0, 2, 1, 2, 0, 1])


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("loss,extra", [
    (lambda fl: L_.SparseCategoricalCrossentropy(from_logits=fl), None),
    (lambda fl: L_.SparseCategoricalCrossentropy(from_logits=fl, reduction="sum"), "weights"),
    (lambda fl: L_.SparseCategoricalCrossentropy(from_logits=fl, reduction="none"), "weights"),
    (lambda fl: L_.SparseCategoricalCrossentropy(from_logits=fl, ignore_class=2), "weights"),
    (lambda fl: (lambda t, p: L_.sparse_categorical_crossentropy(t, p, from_logits=fl)), None),
], ids=["auto", "sum-weighted", "none-weighted", "ignore-class", "function"])
def test_sparse_crossentropy_on_device(dxp, loss, extra, from_logits):
    fn = loss(from_logits)
    x = _logits((6, 3)) if from_logits else _probs((6, 3))
    w = np.linspace(0.5, 1.5, 6).astype(np.float32)
    if extra == "weights":
        _same_on_device(lambda p, t, sw: fn(t, p, sample_weight=sw), [x, SPARSE, w], dxp,
                        used=("log", "arange"))
    else:
        _same_on_device(lambda p, t: fn(t, p), [x, SPARSE], dxp, used=("log", "arange"))


@pytest.mark.parametrize("from_logits", [True, False])
def test_categorical_crossentropy_on_device(dxp, from_logits):
    x = _logits((2, 3, 4)) if from_logits else _probs((2, 3, 4))
    t = _probs((2, 3, 4), seed=5)
    fn = L_.CategoricalCrossentropy(from_logits=from_logits, label_smoothing=0.1, axis=1)
    w = np.array([[1.0, 0.5, 2.0, 0.0], [1.0, 1.0, 3.0, 0.5]], np.float32)
    _same_on_device(lambda p, t, sw: fn(t, p, sample_weight=sw), [x, t, w], dxp, watch=(0, 1),
                    used=("log", "moveaxis"))
    # the function form, the labels NumPy (copied to the predictions' device)
    _same_on_device(lambda p: L_.categorical_crossentropy(t, p, from_logits=from_logits), [x],
                    dxp, used=("log",))


def test_crossentropy_second_order_gradients_on_device(dxp):
    x = _logits((4, 3))

    def grad_of_loss(p, t):
        with tt.GradientTape() as inner:
            inner.watch(p)
            y = L_.SparseCategoricalCrossentropy(from_logits=True)(t, p)
        return inner.gradient(y, p)
    _same_on_device(grad_of_loss, [x, SPARSE[:4]], dxp, used=("exp",))


@pytest.mark.parametrize("loss", [L_.BinaryCrossentropy(label_smoothing=0.2), L_.Hinge(),
                                  L_.MeanSquaredError()], ids=["bce", "hinge", "mse"])
def test_elementwise_losses_with_weights_on_device(dxp, loss):
    p = _probs((5, 2))
    t = (np.arange(10).reshape(5, 2) % 3 == 0).astype(np.float32)   # 0/1: hinge reads -1/1
    w = np.array([1.0, 0.0, 2.0, 0.5, 1.0], np.float32)
    # their backward is tnp's VJP rules; maximum's reads its ties back (not checked here)
    _same_on_device(lambda p, t, sw: loss(t, p, sample_weight=sw), [p, t, w], dxp,
                    used=("broadcast_to",), strict_backward=False)


def test_hinge_keeps_labels_that_are_not_0_or_1():
    # Keras's rule, decided on the device now: labels already in {-1, 1} are kept
    t, p = np.array([[-1.0, 1.0]]), np.array([[0.3, -0.2]])
    np.testing.assert_allclose(np.asarray(L_.hinge(t, p)), [np.mean(np.maximum(1 - t * p, 0))])
    t01 = np.array([[0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(L_.hinge(t01, p)),
                               [np.mean(np.maximum(1 - (2 * t01 - 1) * p, 0))])


@pytest.mark.parametrize("labels", [[0, 3, 1], [0, -1, 1], [0, 1.5, 1]],
                         ids=["above", "negative", "fractional"])
def test_invalid_labels_raise_on_the_cpu_and_are_nan_on_a_device(dxp, labels):
    x = _logits((3, 3))
    t = np.array(labels)
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy: label"):
        L_.sparse_categorical_crossentropy(t, tnp.asarray(x), from_logits=True)
    p = _dev(x)
    with tt.GradientTape() as tape:
        tape.watch(p)
        with _strict():
            per = L_.sparse_categorical_crossentropy(_dev(t), p, from_logits=True)
    g = kb._host(tape.gradient(tnp.sum(per), p))
    per = kb._host(per)
    # the bad row (and only it) is NaN, loss and gradient; the others are the CPU's
    assert np.isnan(per[1]) and np.isnan(g[1]).all()
    ok = [0, 2]
    ref = tnp.asarray(x[ok])
    with tt.GradientTape() as tape:
        tape.watch(ref)
        ref_per = L_.sparse_categorical_crossentropy(t[ok].astype(int), ref, from_logits=True)
    np.testing.assert_array_equal(per[ok], np.asarray(ref_per))
    np.testing.assert_array_equal(g[ok], np.asarray(tape.gradient(tnp.sum(ref_per), ref)))
    # a mean over the batch is NaN too, as on TF's GPU
    with _strict():
        mean = L_.SparseCategoricalCrossentropy(from_logits=True)(_dev(t), _dev(x))
    assert mean.device is FAKE and np.isnan(kb._host(mean))


# ---------------------------------------------------------------------------- metrics
def _rng_inputs(seed=0):
    r = np.random.default_rng(seed)
    probs = _probs((8, 3), seed)
    labels = r.integers(0, 3, 8)
    return {"probs": probs, "labels": labels, "onehot": np.eye(3, dtype=np.float32)[labels],
            "binary_p": r.random((8, 1)).astype(np.float32),
            "binary_t": (r.random((8, 1)) > 0.5).astype(np.float32),
            "w": r.random(8).astype(np.float32), "reg_p": r.standard_normal((8, 2)),
            "reg_t": r.standard_normal((8, 2)), "logits": _logits((8, 3), seed)}


def _user_fn(y_true, y_pred):
    # written for NumPy; it gets tnp arrays on the predictions' device
    return np.mean(np.abs(y_true - y_pred), axis=-1)


METRICS = [
    # (id, factory, (y_true key, y_pred key), weighted, array-module functions it must use)
    ("mean", lambda: M.Mean(), ("reg_p", None), True, ("sum",)),
    ("sum", lambda: M.Sum(), ("reg_p", None), True, ("sum",)),
    ("user-function", lambda: M.MeanMetricWrapper(_user_fn), ("reg_t", "reg_p"), True, ()),
    ("accuracy", lambda: M.Accuracy(), ("labels", "labels"), False, ()),
    ("binary-accuracy", lambda: M.BinaryAccuracy(threshold=0.4), ("binary_t", "binary_p"), True,
     ("mean",)),
    ("categorical-accuracy", lambda: M.CategoricalAccuracy(), ("onehot", "probs"), True,
     ("argmax",)),
    ("sparse-categorical-accuracy", lambda: M.SparseCategoricalAccuracy(), ("labels", "probs"),
     True, ("argmax",)),
    ("top-k", lambda: M.TopKCategoricalAccuracy(k=2), ("onehot", "probs"), False,
     ("take_along_axis",)),
    ("sparse-top-k", lambda: M.SparseTopKCategoricalAccuracy(k=2), ("labels", "probs"), True,
     ("take_along_axis",)),
    ("mse", lambda: M.MeanSquaredError(), ("reg_t", "reg_p"), True, ()),
    ("rmse", lambda: M.RootMeanSquaredError(), ("reg_t", "reg_p"), True, ("square", "sqrt")),
    ("cosine", lambda: M.CosineSimilarity(), ("reg_t", "reg_p"), False, ()),
    ("sparse-xent", lambda: M.SparseCategoricalCrossentropy(), ("labels", "probs"), True,
     ("log",)),
    ("binary-xent", lambda: M.BinaryCrossentropy(), ("binary_t", "binary_p"), False, ()),
    ("true-positives", lambda: M.TruePositives(thresholds=[0.7, 0.2, 0.5]),
     ("binary_t", "binary_p"), True, ("searchsorted", "bincount", "cumsum")),
    ("false-negatives", lambda: M.FalseNegatives(), ("onehot", "probs"), False, ("bincount",)),
    ("precision-top-k", lambda: M.Precision(top_k=2), ("onehot", "probs"), True,
     ("argsort", "bincount")),
    ("recall-class-id", lambda: M.Recall(thresholds=[0.3, 0.6], class_id=1), ("onehot", "probs"),
     True, ("bincount",)),
    ("auc-roc", lambda: M.AUC(num_thresholds=17), ("onehot", "probs"), True, ("bincount",)),
    ("auc-pr", lambda: M.AUC(curve="PR", num_thresholds=13), ("onehot", "probs"), False,
     ("log",)),
    ("auc-minoring", lambda: M.AUC(summation_method="minoring", num_thresholds=9,
                                   label_weights=[1.0, 2.0, 0.5]), ("onehot", "probs"), True,
     ("minimum",)),
    ("auc-multi-label-logits", lambda: M.AUC(multi_label=True, from_logits=True,
                                             label_weights=[1.0, 2.0, 0.5], num_thresholds=7),
     ("onehot", "logits"), True, ("exp",)),
    ("mean-iou", lambda: M.MeanIoU(3, ignore_class=0), ("labels", "labels2"), True,
     ("bincount", "diag")),
]


def _update_twice(factory, keys, weighted, device, inputs):
    """A metric made under ``device``, updated with two batches there; (metric, results)."""
    with tnp.default_device(device):
        m = factory()
    results = []
    for k in range(2):
        got = dict(inputs[k])
        got["labels2"] = np.roll(got["labels"], 1)
        t, p = keys
        args = [_on(got[t], device)] + ([] if p is None else [_on(got[p], device)])
        sw = got["w"] if weighted else None      # NumPy weights: copied to the device
        with _strict() if device is FAKE else contextlib.nullcontext():
            m.update_state(*args, sample_weight=sw)
            results.append(m.result())
    return m, results


@pytest.mark.parametrize("name,factory,keys,weighted,used", METRICS,
                         ids=[m[0] for m in METRICS])
def test_metric_on_device(dxp, name, factory, keys, weighted, used):
    inputs = [_rng_inputs(0), _rng_inputs(1)]
    ref, ref_results = _update_twice(factory, keys, weighted, CPU, inputs)
    before = sum(dxp.used.values())
    m, results = _update_twice(factory, keys, weighted, FAKE, inputs)
    assert sum(dxp.used.values()) > before
    for fn in used:
        assert dxp.used[fn] > 0, f"xp.{fn} was not used ({dict(dxp.used)})"
    for r, e in zip(results, ref_results):
        assert r.device is FAKE and r.dtype == e.dtype and r.shape == e.shape
        np.testing.assert_array_equal(kb._host(r), kb._host(e))
    assert len(m.variables) == len(ref.variables)
    for v, e in zip(m.variables, ref.variables):
        assert v.device is FAKE
        np.testing.assert_array_equal(kb._host(v), kb._host(e))
    m.reset_state()
    assert all(v.device is FAKE and not kb._host(v).any() for v in m.variables)


def test_pooled_auc_weighs_each_label_by_label_weights():
    # Keras broadcasts label_weights along the last axis; the reference: scikit-learn's ROC AUC
    # of the flattened entries, each weighted by its label's weight
    from sklearn.metrics import roc_auc_score

    r = np.random.default_rng(6)
    y = r.integers(0, 2, (40, 3))
    p = r.random((40, 3)) * 0.6 + 0.4 * y
    lw = np.array([1.0, 0.5, 3.0])
    m = M.AUC(num_thresholds=2000, label_weights=lw)
    m.update_state(y, p)
    want = roc_auc_score(y.ravel(), p.ravel(), sample_weight=np.broadcast_to(lw, y.shape).ravel())
    assert float(m.result()) == pytest.approx(want, abs=2e-3)
    with pytest.raises(ValueError, match=r"label_weights of shape \(3,\).*\(40, 2\)"):
        m.update_state(y[:, :2], p[:, :2])


def test_metric_results_are_snapshots_not_views_of_the_state(dxp):
    with tnp.default_device(FAKE):
        m = M.Sum()
    m.update_state(_dev([1.0, 2.0]))
    first = m.result()
    m.update_state(_dev([4.0]))
    assert float(kb._host(first)) == 3.0 and float(kb._host(m.result())) == 7.0


def test_set_weights_of_a_metric_on_a_device():
    with tnp.default_device(FAKE):
        m = M.Mean()
    m.set_weights([np.float32(3.0), np.float32(2.0)])      # was a ValueError (cpu vs cpu:1)
    assert m.result().device is FAKE and float(kb._host(m.result())) == 1.5


def test_metric_state_on_another_device_gets_the_batch_result():
    # a metric made on the CPU, fed cpu:1 predictions: computed there, added on the CPU
    m = M.SparseCategoricalAccuracy()
    p = _probs((4, 3))
    m.update_state(tnp.asarray([0, 1, 2, 0]).to_device(FAKE), tnp.asarray(p).to_device(FAKE))
    assert m.result().device is CPU
    assert float(m.result()) == np.mean(p.argmax(-1) == [0, 1, 2, 0])


@pytest.mark.parametrize("make,bad_p", [
    (lambda: M.AUC(num_thresholds=5), np.array([[0.2], [1.5]], np.float32)),
    (lambda: M.Precision(), np.array([[-0.1], [0.5]], np.float32)),
], ids=["auc", "precision"])
def test_predictions_outside_0_1_raise_on_the_cpu_and_are_nan_on_a_device(dxp, make, bad_p):
    t = np.array([[1.0], [0.0]], np.float32)
    with pytest.raises(ValueError, match=r"predictions must be in \[0, 1\]"):
        make().update_state(t, bad_p)
    with tnp.default_device(FAKE):
        m = make()
    with _strict():
        m.update_state(_dev(t), _dev(bad_p))
        r = m.result()
    assert r.device is FAKE and np.isnan(kb._host(r))


def test_bad_class_ids_raise_on_the_cpu_and_are_nan_on_a_device(dxp):
    with pytest.raises(ValueError, match=r"class ids must be in \[0, 3\)"):
        M.MeanIoU(3).update_state(np.array([0, 3]), np.array([0, 1]))
    with pytest.raises(ValueError, match="out of range"):
        M.sparse_top_k_categorical_accuracy(np.array([4]), _probs((1, 3)))
    with tnp.default_device(FAKE):
        iou = M.MeanIoU(3)
    with _strict():
        iou.update_state(_dev([0, 3]), _dev([0, 1]))
        top = M.sparse_top_k_categorical_accuracy(_dev([4, 0]), _dev(_probs((2, 3))), k=3)
    assert np.isnan(kb._host(iou.result()))
    np.testing.assert_array_equal(np.isnan(kb._host(top)), [True, False])


# ---------------------------------------------------------------------------- clipping
GRADS = [np.array([[3.0, -4.0], [0.5, 12.0]]), np.array([1.0, 2.0, -2.0]), np.array([0.1, 0.2])]


def _clipped(opt_kwargs, dtype, device, grads=GRADS):
    with tnp.default_device(device):
        opt = tt.optimizers.SGD(1.0, **opt_kwargs)
        vs = [tt.Variable(np.zeros(g.shape, dtype)) for g in grads]
    pairs = [(_on(g.astype(dtype), device), v) for g, v in zip(grads, vs)]
    with _strict() if device is FAKE else contextlib.nullcontext():
        return [g for g, _ in opt._transform_gradients(pairs)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kwargs", [{"clipnorm": 5.0}, {"global_clipnorm": 6.0},
                                    {"global_clipnorm": 100.0},
                                    {"clipvalue": 3.0, "clipnorm": 1.0}],
                         ids=["clipnorm", "global-clipnorm", "global-clipnorm-under",
                              "clipvalue-then-clipnorm"])
def test_gradient_clipping_on_device(dxp, kwargs, dtype):
    got = _clipped(kwargs, dtype, FAKE)
    ref = _clipped(kwargs, dtype, CPU)
    assert dxp.used["vdot"] > 0 and dxp.used["sqrt"] > 0
    for g, r in zip(got, ref):
        assert g.device is FAKE and g.dtype == r.dtype
        np.testing.assert_array_equal(kb._host(g), kb._host(r))
    # the reference: tf.clip_by_norm / tf.clip_by_global_norm written out in float64
    gs = [g.astype(np.float64) for g in GRADS]
    if "clipvalue" in kwargs:
        gs = [np.clip(g, -3.0, 3.0) for g in gs]
    if "clipnorm" in kwargs:
        c = kwargs["clipnorm"]
        want = [g * min(1.0, c / np.linalg.norm(g)) for g in gs]
    else:
        c = kwargs["global_clipnorm"]
        gn = np.sqrt(sum(np.sum(g * g) for g in gs))
        want = [g * min(1.0, c / gn) for g in gs]
    for g, w in zip(got, want):
        np.testing.assert_allclose(kb._host(g).astype(np.float64), w,
                                   rtol=1e-3 if dtype == "float16" else 1e-6)


def test_global_clipnorm_of_a_non_finite_norm_makes_every_gradient_nan(dxp):
    grads = [np.array([1.0, np.inf]), np.array([0.0, 2.0])]
    for device in (FAKE, CPU):
        got = _clipped({"global_clipnorm": 1.0}, "float32", device, grads)
        assert all(np.isnan(kb._host(g)).all() for g in got)
    # clipnorm alone leaves a non-finite gradient's other gradients as they are (inf * 0 is
    # NaN in the clipped one, as in TF's clip_by_norm)
    with np.errstate(invalid="ignore"):
        got = _clipped({"clipnorm": 1.0}, "float32", FAKE, grads)
    np.testing.assert_array_equal(kb._host(got[0]), [0.0, np.nan])
    np.testing.assert_array_equal(kb._host(got[1]), [0.0, 1.0])


def test_apply_gradients_with_clipping_on_device_matches_the_cpu(dxp):
    def run(device):
        with tnp.default_device(device):
            opt = tt.optimizers.Adam(0.1, global_clipnorm=2.0)
            v = tt.Variable(np.ones((2, 2), np.float32))
        for k in range(3):
            opt.apply_gradients([(_on(GRADS[0].astype(np.float32) * (k + 1), device), v)])
        return kb._host(v)
    np.testing.assert_array_equal(run(FAKE), run(CPU))


# ---------------------------------------------------------------------------- schedules
@pytest.mark.parametrize("schedule,formula", [
    (S.ExponentialDecay(0.5, decay_steps=3, decay_rate=0.5), lambda s: 0.5 * 0.5 ** (s / 3)),
    (S.PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 2 else 0.5 if s <= 4 else 0.1),
    (S.CosineDecay(0.2, decay_steps=5, alpha=0.1),
     lambda s: 0.2 * (0.9 * 0.5 * (1 + np.cos(np.pi * min(s, 5) / 5)) + 0.1)),
], ids=["exponential", "piecewise", "cosine"])
def test_a_schedule_is_evaluated_on_the_host_from_the_step_count(dxp, schedule, formula):
    with tnp.default_device(FAKE):
        opt = tt.optimizers.SGD(schedule)
        v = tt.Variable(np.zeros(2, np.float32))
        for step in range(1, 6):
            opt.apply_gradients([(_dev(np.ones(2, np.float32)), v)])
            before = sum(dxp.used.values())
            with _strict():
                rate = opt._current_learning_rate()
            # no cpu:1 array was made (or read) to evaluate the schedule
            assert sum(dxp.used.values()) == before, dict(dxp.used)
            assert type(rate) is float and rate == float(np.float32(formula(step)))
            assert rate == float(schedule(step))       # what calling the schedule gives


def test_a_users_schedule_is_still_called():
    class Halving(S.LearningRateSchedule):
        def __call__(self, step):
            return tnp.asarray(np.float32(1.0 / 2 ** int(step)))

        def get_config(self):
            return {}

    class Doubled(S.ExponentialDecay):
        def __call__(self, step):
            return 2 * super().__call__(step)

    opt = tt.optimizers.SGD(Halving())
    v = tt.Variable(np.zeros(1, np.float32))
    for _ in range(3):
        opt.apply_gradients([(tnp.ones(1, dtype="float32"), v)])
    np.testing.assert_array_equal(np.asarray(v), [-(1 + 0.5 + 0.25)])
    assert tt.optimizers.SGD(Doubled(0.1, 10, 0.5))._current_learning_rate() == \
        float(np.float32(2 * np.float32(0.1)))
