"""``fit`` reads losses and metrics back to the host only when something shows or records them,
and refuses the arguments Keras refuses.

Host reads are counted on the fake ``cpu:1`` device: its arrays compute through a proxy array
module (a module object that is not ``numpy``, as CuPy would be) and every conversion of one
of its arrays to a host value (``float()``, ``item()``, ``np.asarray``, ``print``...) is counted
where it happens; on a GPU each such read waits for the work queued before it. Keras's rule,
which ``fit`` follows: batch logs stay on the device; the progress bar reads them only when it
redraws (at most every ``_REFRESH_INTERVAL`` seconds) and the epoch's end reads each logged
value once, for ``History``; a callback reads them only if it overrides a batch-end hook.
"""
import collections
import os
import sys
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp._core.backend import Backend
from tnp_train.callbacks import progbar as progbar_mod
from tnp_train.utils import progbar as progbar_utils

CPU, FAKE = tnp.device("cpu"), tnp.device("cpu:1")
EPOCHS, STEPS = 3, 8                      # 64 samples, batches of 8
_CONVERSIONS = ("__array__", "__float__", "__int__", "__bool__", "__index__", "__complex__",
                "__round__", "__format__", "__repr__", "__str__", "__hash__", "item", "tolist",
                "get", "numpy", "to_device")


class _ProxyXP:
    """NumPy seen through another module object (what cpu:1 computes with)."""

    __name__ = "numpy"     # Backend.submodule imports numpy.linalg... by this name

    def __getattr__(self, name):
        return getattr(np, name)


_TNP_DIR = os.path.dirname(tnp.__file__) + os.sep


def _caller():
    """file:line of the first frame outside tnp itself: who asked for the read."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_TNP_DIR):
        f = f.f_back
    return "?" if f is None else f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


@pytest.fixture
def host_reads(monkeypatch):
    """A Counter of the host reads of cpu:1 arrays, by kind of conversion and caller; nested
    ones (a ``numpy()`` that calls ``__array__``) count once."""
    monkeypatch.setattr(FAKE, "_backend", Backend("numpy-proxy", _ProxyXP(), np.ndarray, False))
    reads = collections.Counter()
    inside = threading.local()

    def counting(name, original):
        def conversion(self, *args, **kwargs):
            outer = not getattr(inside, "depth", 0)
            if outer and self.device is FAKE and not (
                    name == "to_device" and tnp.device(args[0]) is FAKE):
                reads[f"{name} at {_caller()}"] += 1
            inside.depth = getattr(inside, "depth", 0) + 1
            try:
                return original(self, *args, **kwargs)
            finally:
                inside.depth -= 1
        return conversion

    for cls in (tnp.ndarray, tnp.Scalar, tt.Variable):
        for name in _CONVERSIONS:
            original = vars(cls).get(name)
            if callable(original):
                monkeypatch.setattr(cls, name, counting(name, original))
    return reads


@pytest.fixture
def clock(monkeypatch):
    """The progress bar's clock advances 0.1 s per reading (one per batch), with a 0.25 s
    refresh interval: the bar redraws the first batch of an epoch, then every third."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(progbar_utils, "clock", lambda: next(ticks) * 0.1)
    monkeypatch.setattr(progbar_mod, "_REFRESH_INTERVAL", 0.25, raising=False)


def _data():
    r = np.random.default_rng(0)
    return r.standard_normal((64, 4)).astype(np.float32), r.standard_normal((64, 3)).astype(
        np.float32)


def _model(device, outputs=1):
    with tnp.default_device(device):
        tt.utils.set_random_seed(0)
        inp = tt.Input((4,))
        h = tt.layers.Dense(8, activation="relu")(inp)
        outs = [tt.layers.Dense(3, name=f"out{k}")(h) for k in range(outputs)]
        model = tt.Model(inp, outs if outputs > 1 else outs[0])
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9), "mse")
    return model


def _fit(device, outputs=1, reads=None, **kwargs):
    """(model, History) of a seeded run with the model and data on ``device``, fitted outside
    any default_device block; ``reads`` (host_reads) counts from the start of ``fit``."""
    model = _model(device, outputs)
    x, y = _data()
    X, Y = tnp.asarray(x).to_device(device), tnp.asarray(y).to_device(device)
    tt.utils.set_random_seed(1)
    if reads is not None:
        reads.clear()                         # making the metrics' state is not fit's
    kwargs.setdefault("verbose", 0)
    hist = model.fit(X, [Y] * outputs if outputs > 1 else Y, batch_size=8, epochs=EPOCHS,
                     **kwargs)
    return model, hist


def _redraws(monkeypatch):
    """A list that gets one entry per redraw of a progress bar that shows at least one step."""
    drawn = []

    class Counting(progbar_mod.Progbar):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._dynamic_display = True        # as on a terminal: redraws as it runs

        def _draw(self, current, now, finalize):
            if not finalize:
                drawn.append(current)
            return super()._draw(current, now, finalize)

    monkeypatch.setattr(progbar_mod, "Progbar", Counting)
    return drawn


# ---------------------------------------------------------------- host reads during fit
@pytest.mark.parametrize("outputs", [1, 2], ids=["one-output", "two-outputs"])
def test_without_progress_bar_each_logged_value_is_read_once_per_epoch(host_reads, outputs):
    _, hist = _fit(FAKE, outputs, reads=host_reads)
    logged = 1 if outputs == 1 else 3             # loss (+ out0_loss, out1_loss)
    assert len(hist.history) == logged
    assert sum(host_reads.values()) == EPOCHS * logged, host_reads
    # History holds Python floats, the very numbers of the same training on the CPU
    _, ref = _fit(CPU, outputs)
    assert all(type(v) is float for vs in hist.history.values() for v in vs)
    assert hist.history == ref.history


@pytest.mark.parametrize("verbose", [1, 2])
def test_progress_bar_reads_only_when_it_redraws(host_reads, clock, monkeypatch, capsys,
                                                   verbose):
    drawn = _redraws(monkeypatch)
    _, hist = _fit(FAKE, reads=host_reads, verbose=verbose)
    assert sum(host_reads.values()) <= len(drawn) + EPOCHS, host_reads
    if verbose == 1:
        # throttled: batches 1, 4 and 7 of each epoch (the clock gives 0.1 s per batch)
        assert drawn == [1, 4, 7] * EPOCHS
    else:
        assert drawn == []                    # one line per epoch, from the epoch's floats
    out = capsys.readouterr().out
    assert f"loss: {hist.history['loss'][-1]:.4f}" in out


def test_progress_bar_on_unthrottled_reads_once_per_redraw(host_reads, monkeypatch, capsys):
    # a redraw after every batch: one read per batch, and the epoch's end reuses the last
    monkeypatch.setattr(progbar_mod, "_REFRESH_INTERVAL", 0.0, raising=False)
    drawn = _redraws(monkeypatch)
    _fit(FAKE, reads=host_reads, verbose=1)
    assert len(drawn) == EPOCHS * STEPS
    assert sum(host_reads.values()) == EPOCHS * STEPS, host_reads


def test_callbacks_that_ignore_batch_logs_cost_no_read(host_reads, tmp_path):
    class EpochOnly(tt.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.last = logs

    class ReadsSoFar(tt.callbacks.Callback):
        """The count of host reads after each batch (it does not read the logs itself)."""
        _supports_tf_logs = True

        def __init__(self):
            super().__init__()
            self.counts = []

        def on_epoch_begin(self, epoch, logs=None):
            self.counts.append([])

        def on_train_batch_end(self, batch, logs=None):
            self.counts[-1].append(sum(host_reads.values()))

    probe = ReadsSoFar()
    # checkpoints written at the epoch's end read the weights then; between batches nothing
    cbs = [EpochOnly(), tt.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch}-{loss:.3f}"),
                                                     save_weights_only=True),
           tt.callbacks.BackupAndRestore(str(tmp_path / "backup")),
           tt.callbacks.EarlyStopping(monitor="loss", patience=10),
           tt.callbacks.CSVLogger(str(tmp_path / "log.csv")), probe]
    _fit(FAKE, reads=host_reads, callbacks=cbs)
    assert len(probe.counts) == EPOCHS
    for counts in probe.counts:
        assert len(counts) == STEPS and len(set(counts)) == 1, probe.counts
    assert type(cbs[0].last["loss"]) is float
    assert len(list(tmp_path.glob("w-*"))) == EPOCHS


def test_batch_logs_are_read_once_for_all_callbacks_that_look_at_them(host_reads):
    seen = []

    class Looks(tt.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs["loss"])

    class OldName(tt.callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append(logs["loss"])

    lam = tt.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(logs["loss"]))
    _, hist = _fit(FAKE, reads=host_reads, callbacks=[Looks(), OldName(), lam])
    assert len(seen) == 3 * EPOCHS * STEPS and all(type(v) is float for v in seen)
    # one read per batch, shared; the epoch's end finds the last batch's value read already
    assert sum(host_reads.values()) == EPOCHS * STEPS, host_reads
    assert seen[-1] == hist.history["loss"][-1]


def test_a_callback_that_supports_device_logs_gets_them_unread(host_reads):
    class DeviceLogs(tt.callbacks.Callback):
        _supports_tf_logs = True

        def __init__(self):
            super().__init__()
            self.values = []

        def on_train_batch_end(self, batch, logs=None):
            self.values.append(logs["loss"])

    cb = DeviceLogs()
    _, hist = _fit(FAKE, reads=host_reads, callbacks=[cb])
    assert sum(host_reads.values()) == EPOCHS
    assert all(isinstance(v, tnp.ndarray) and v.device is FAKE for v in cb.values)
    # each is that batch's running loss, not the metric's later state
    last_of_epoch = [float(cb.values[(e + 1) * STEPS - 1]) for e in range(EPOCHS)]
    assert last_of_epoch == hist.history["loss"]
    assert len({float(v) for v in cb.values}) == len(cb.values)


def test_a_variable_returned_by_train_step_is_kept_per_batch():
    class Counting(tt.Model):
        def __init__(self):
            super().__init__()
            self.dense = tt.layers.Dense(1)
            self.count = tt.Variable(0.0, trainable=False)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            self.count.assign_add(1.0)
            return {"count": self.count}

    class Keep(tt.callbacks.Callback):
        _supports_tf_logs = True            # reads the values after fit, not at the batch

        def __init__(self):
            super().__init__()
            self.values = []

        def on_train_batch_end(self, batch, logs=None):
            self.values.append(logs["count"])

    model, keep = Counting(), Keep()
    model.compile("sgd", "mse")
    x, y = _data()
    hist = model.fit(x, y, batch_size=16, epochs=2, callbacks=[keep], verbose=0)
    assert [float(v) for v in keep.values] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert hist.history["count"] == [4.0, 8.0]


def test_evaluate_and_single_batch_methods_return_python_floats(host_reads):
    model, _ = _fit(FAKE, reads=host_reads)
    x, y = _data()
    X, Y = tnp.asarray(x).to_device(FAKE), tnp.asarray(y).to_device(FAKE)
    host_reads.clear()
    loss = model.evaluate(X, Y, batch_size=8, verbose=0)
    assert type(loss) is float and sum(host_reads.values()) == 1
    assert type(model.evaluate(X, Y, verbose=0, return_dict=True)["loss"]) is float
    assert type(model.train_on_batch(X, Y)) is float
    assert type(model.test_on_batch(X, Y)) is float
    assert type(model.train_on_batch(X, Y, return_dict=True)["loss"]) is float


# ---------------------------------------------------------------- argument validation
def _small():
    tt.utils.set_random_seed(0)
    m = tt.Sequential([tt.Input((4,)), tt.layers.Dense(3)])
    m.compile("sgd", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def _xy(n=16):
    r = np.random.default_rng(2)
    return r.standard_normal((n, 4)).astype(np.float32), r.integers(0, 3, n)


def test_fit_evaluate_predict_refuse_missing_x():
    m = _small()
    _, y = _xy()
    with pytest.raises(ValueError, match=r"`x` is None"):
        m.fit(None, y, verbose=0)
    with pytest.raises(ValueError, match=r"`x` is None"):
        m.evaluate(None, y, verbose=0)
    with pytest.raises(ValueError, match=r"`x` is None"):
        m.predict(None)


@pytest.mark.parametrize("epochs", [-1, 2.5, 2.0, True, "3", None])
def test_fit_refuses_bad_epochs(epochs):
    x, y = _xy()
    with pytest.raises(ValueError, match=r"`epochs` must be an integer >= 0"):
        _small().fit(x, y, epochs=epochs, verbose=0)


def test_fit_accepts_numpy_integer_epochs_and_zero_epochs():
    x, y = _xy()
    m = _small()
    assert m.fit(x, y, epochs=np.int64(2), verbose=0).epoch == [0, 1]
    w = [a.copy() for a in m.get_weights()]
    assert m.fit(x, y, epochs=0, verbose=0).history == {}      # as Keras: nothing to run
    for a, b in zip(w, m.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs,name", [
    ({"batch_size": 0}, "batch_size"), ({"batch_size": -4}, "batch_size"),
    ({"batch_size": 2.5}, "batch_size"), ({"initial_epoch": -1}, "initial_epoch"),
    ({"steps_per_epoch": 0}, "steps_per_epoch"), ({"steps_per_epoch": 1.5}, "steps_per_epoch"),
    ({"validation_steps": 0, "validation_split": 0.25}, "validation_steps"),
    ({"validation_batch_size": 0, "validation_split": 0.25}, "validation_batch_size"),
    ({"validation_freq": 0, "validation_split": 0.25}, "validation_freq"),
    ({"validation_freq": "2", "validation_split": 0.25}, "validation_freq"),
    ({"validation_freq": [1, 0], "validation_split": 0.25}, "validation_freq"),
])
def test_fit_refuses_bad_counts(kwargs, name):
    x, y = _xy()
    with pytest.raises(ValueError, match=rf"`{name}` must be an integer >= [01]"):
        _small().fit(x, y, epochs=1, verbose=0, **kwargs)


@pytest.mark.parametrize("split", [1.0, 1.5, -0.1, "0.2", True])
def test_fit_refuses_validation_split_outside_0_1(split):
    x, y = _xy()
    with pytest.raises(ValueError, match=r"`validation_split` must be a float in \[0, 1\)"):
        _small().fit(x, y, validation_split=split, verbose=0)


def test_evaluate_and_predict_refuse_bad_steps_and_batch_size():
    x, y = _xy()
    m = _small()
    with pytest.raises(ValueError, match=r"`steps` must be an integer >= 1, got 0"):
        m.evaluate(x, y, steps=0, verbose=0)
    with pytest.raises(ValueError, match=r"`steps` must be an integer >= 1, got 0"):
        m.predict(x, steps=0)
    with pytest.raises(ValueError, match=r"`batch_size` must be an integer >= 1, got 0"):
        m.evaluate(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match=r"`batch_size` must be an integer >= 1, got -1"):
        m.predict(x, batch_size=-1)


def test_fit_refuses_x_and_y_of_different_lengths():
    x, y = _xy()
    with pytest.raises(ValueError, match=r"Data cardinality is ambiguous.*\[12, 16\]"):
        _small().fit(x, y[:12], verbose=0)
    with pytest.raises(ValueError, match=r"Data cardinality is ambiguous"):
        _small().fit(x, y, sample_weight=np.ones(5), verbose=0)
    with pytest.raises(ValueError, match=r"Data cardinality is ambiguous"):
        _small().fit(x, y, validation_data=(x, y[:3]), verbose=0)


def test_validation_split_none_or_zero_means_no_split():
    x, y = _xy()
    h = _small().fit(x, y, epochs=1, validation_split=None, verbose=0)
    assert list(h.history) == ["loss"]
    h = _small().fit(x, y, epochs=1, validation_split=0, verbose=0)
    assert list(h.history) == ["loss"]


def test_validation_data_as_a_list_is_x_y():
    x, y = _xy()
    ha = _small().fit(x, y, epochs=2, validation_data=(x, y), verbose=0)
    hb = _small().fit(x, y, epochs=2, validation_data=[x, y], verbose=0)
    assert ha.history == hb.history and "val_loss" in hb.history


# ---------------------------------------------------------------- class_weight
_KERAS_CW = r"Expected `class_weight` to be a dict with keys from 0 to one less than the number of classes"


@pytest.mark.parametrize("cw", [{0: 1.0, 1: 1.0, 2: 1.0, 3: 5.0}, {0: 1.0, 1: 2.0, 7: 3.0},
                                {1: 2.0, 2: 1.0}, {0: 1.0, 2: 3.0}])
def test_class_weight_naming_a_class_the_model_has_not_is_refused(cw):
    x, y = _xy()
    with pytest.raises(ValueError, match=_KERAS_CW):
        _small().fit(x, y, class_weight=cw, verbose=0)
    with pytest.raises(ValueError, match=_KERAS_CW):
        _small().train_on_batch(x, y, class_weight=cw)


def test_class_weight_checks_also_on_datasets_and_unbuilt_models():
    x, y = _xy()
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(8)
    with pytest.raises(ValueError, match=_KERAS_CW):
        _small().fit(ds, class_weight={0: 1.0, 2: 1.0}, verbose=0)
    lazy = tt.Sequential([tt.layers.Dense(3)])                 # no Input: output size unknown
    lazy.compile("sgd", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match=_KERAS_CW):
        lazy.fit(x, y, class_weight={5: 1.0}, verbose=0)
    with pytest.raises(TypeError, match=r"`class_weight` must be a dict"):
        _small().fit(x, y, class_weight=[1.0, 2.0, 3.0], verbose=0)


def test_class_weight_is_refused_for_several_outputs_and_3d_targets():
    x, y = _xy()
    inp = tt.Input((4,))
    two = tt.Model(inp, [tt.layers.Dense(3)(inp), tt.layers.Dense(3)(inp)])
    two.compile("sgd", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match=r"only supported for Models with a single output"):
        two.fit(x, [y, y], class_weight={0: 1.0, 1: 1.0, 2: 1.0}, verbose=0)
    seq = tt.Sequential([tt.Input((2, 4)), tt.layers.Dense(3)])
    seq.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"not supported for 3\+ dimensional targets"):
        seq.fit(np.ones((4, 2, 4), np.float32), np.ones((4, 2, 3), np.float32),
                class_weight={0: 1.0, 1: 1.0, 2: 1.0}, verbose=0)


@pytest.mark.parametrize("sw_shape", [(8,), (8, 1)], ids=["sw-1d", "sw-column"])
def test_class_weight_on_one_hot_targets_times_sample_weight_matches_numpy(sw_shape):
    # Keras: the class of a one-hot row is its argmax; class and sample weights multiply,
    # sample by sample; the loss is sum(w * l) / batch size
    x, y = _xy(8)
    onehot = np.eye(3, dtype=np.float32)[y]
    sw = np.linspace(0.5, 2.0, 8).astype(np.float32).reshape(sw_shape)
    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    m = tt.Sequential([tt.Input((4,)), tt.layers.Dense(3)])
    m.compile("sgd", tt.losses.CategoricalCrossentropy(from_logits=True))
    logits = np.asarray(m.predict(x), dtype=np.float64)
    per = np.log(np.exp(logits).sum(1)) - logits[np.arange(8), y]
    loss = m.test_on_batch(x, onehot, sample_weight=sw)
    np.testing.assert_allclose(loss, np.mean(per * sw.ravel()), rtol=1e-5)
    hist = m.fit(x, onehot, batch_size=8, epochs=1, shuffle=False, class_weight=cw,
                 sample_weight=sw, verbose=0)
    w = np.array([cw[c] for c in y]) * sw.ravel()
    np.testing.assert_allclose(hist.history["loss"][0], np.mean(per * w), rtol=1e-5)


def test_class_weight_on_the_fake_device_matches_the_cpu(host_reads):
    def run(device):
        with tnp.default_device(device):
            m = _small()
        x, y = _xy()
        X, Y = tnp.asarray(x).to_device(device), tnp.asarray(y).to_device(device)
        tt.utils.set_random_seed(1)
        return m.fit(X, Y, batch_size=4, epochs=2, class_weight={0: 2.0, 1: 0.5, 2: 1.0},
                     verbose=0).history
    assert run(FAKE) == run(CPU)


# ---------------------------------------------------------------- Input
@pytest.mark.parametrize("shape", [(-1,), (None, -3), (4, -2, 2)])
def test_input_refuses_negative_dimensions(shape):
    with pytest.raises(ValueError, match=r"negative dimensions are not allowed"):
        tt.Input(shape)


def test_input_refuses_non_integer_dimensions_and_negative_batch_size():
    with pytest.raises(TypeError, match=r"dimension 2\.5 \(float\)"):
        tt.Input((2.5,))
    with pytest.raises(ValueError, match=r"batch_size=-2"):
        tt.Input((3,), batch_size=-2)
    assert tt.Input((np.int64(3), None), batch_size=np.int64(2)).shape == (2, 3, None)
