"""``add_loss``/``add_metric`` and the metrics a model holds, as tf.keras 2.4 has them: callable
losses kept across calls, symbolic ones on a functional model computed by the graph, eager
ones per call (and per replica thread); metrics attributes and ``add_metric`` metrics reported
by ``fit`` and reset every epoch. Expected values are computed here with NumPy."""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt

K = tt.backend


def _data(n=24, d=5, seed=0):
    r = np.random.default_rng(seed)
    return r.standard_normal((n, d)).astype("float32"), r.standard_normal((n, 2)).astype("float32")


def _relu(a):
    return np.maximum(a, 0)


def _functional(seed=3):
    """Input(5) -> Dense(4, relu) = x1 -> Dense(2); weights set from ``seed``."""
    inp = tt.Input((5,))
    x1 = tt.layers.Dense(4, activation="relu")(inp)
    out = tt.layers.Dense(2)(x1)
    model = tt.Model(inp, out)
    r = np.random.default_rng(seed)
    model.set_weights([(r.standard_normal(w.shape) * 0.5).astype("float32")
                       for w in model.get_weights()])
    return model, x1


def _hidden(model, x):
    k, b = (np.asarray(w) for w in model.get_weights()[:2])
    return _relu(x @ k + b)


# ------------------------------------------------------------------------ add_loss
def test_callable_loss_is_kept_across_calls_and_follows_the_weights():
    layer = tt.layers.Dense(2, kernel_initializer="ones")
    layer.build((None, 3))
    layer.add_loss(lambda: 0.5 * tnp.sum(layer.kernel))
    assert [float(v) for v in layer.losses] == [3.0]
    layer(np.ones((4, 3), "float32"))
    layer(np.ones((4, 3), "float32"))
    assert [float(v) for v in layer.losses] == [3.0]       # not dropped by the calls
    layer.kernel.assign(np.full((3, 2), 2.0, "float32"))
    assert [float(v) for v in layer.losses] == [6.0]


def test_an_array_loss_outside_call_is_refused_as_in_tf():
    layer = tt.layers.Dense(2)
    with pytest.raises(ValueError, match="zero argument `lambda`"):
        layer.add_loss(tnp.asarray(1.0))


def test_callable_loss_counts_in_fit_and_evaluate():
    x, y = _data()
    model, _ = _functional()
    model.add_loss(lambda: 0.01 * tnp.sum(model.layers[1].kernel ** 2))
    model.compile(tt.optimizers.SGD(0.0), loss="mse")
    k = np.asarray(model.get_weights()[0])
    pred = _hidden(model, x) @ np.asarray(model.get_weights()[2]) + np.asarray(model.get_weights()[3])
    want = np.mean((pred - y) ** 2) + 0.01 * np.sum(k ** 2)
    assert model.evaluate(x, y, batch_size=24, verbose=0) == pytest.approx(want, rel=1e-5)


def test_symbolic_loss_on_a_functional_model_is_computed_on_every_call():
    x, y = _data()
    model, x1 = _functional()
    model.add_loss(tnp.sum(x1) * 0.1)
    assert type(model.layers[-1]).__name__ == "AddLoss"
    model(x[:10])
    np.testing.assert_allclose([float(v) for v in model.losses],
                               [0.1 * _hidden(model, x[:10]).sum()], rtol=1e-5)
    model(x[10:])                    # the next call's own value, not a sum of the two
    np.testing.assert_allclose([float(v) for v in model.losses],
                               [0.1 * _hidden(model, x[10:]).sum()], rtol=1e-5)
    model.compile(tt.optimizers.SGD(0.0), loss="mse")
    w = [np.asarray(a) for a in model.get_weights()]
    h = _hidden(model, x)
    want = np.mean((h @ w[2] + w[3] - y) ** 2) + 0.1 * h.sum()
    assert model.evaluate(x, y, batch_size=24, verbose=0) == pytest.approx(want, rel=1e-5)


def test_symbolic_loss_and_metric_survive_get_config_and_save(tmp_path):
    x, _ = _data()
    model, x1 = _functional()
    model.add_loss(tnp.mean(x1) * 0.5)
    model.add_metric(K.std(x1), name="std_x1")
    clone = tt.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    assert [type(l).__name__ for l in clone.layers] == [type(l).__name__ for l in model.layers]
    clone(x)
    np.testing.assert_allclose([float(v) for v in clone.losses],
                               [0.5 * _hidden(model, x).mean()], rtol=1e-5)
    model.save(tmp_path / "m")
    loaded = tt.models.load_model(tmp_path / "m")
    loaded(x)
    np.testing.assert_allclose([float(v) for v in loaded.losses],
                               [0.5 * _hidden(model, x).mean()], rtol=1e-5)
    assert [m.name for m in loaded.metrics] == ["std_x1"]


def test_symbolic_loss_must_come_from_the_model_inputs():
    model, _ = _functional()
    other = tt.Input((5,))
    with pytest.raises(ValueError, match="graph disconnected"):
        model.add_loss(tnp.sum(tt.layers.Dense(1)(other)))
    with pytest.raises(ValueError, match="functional model"):
        tt.layers.Dense(1).add_loss(tnp.sum(other))


class _Barrier(tt.layers.Layer):
    """Adds its input's sum as a loss, then waits for the other thread's call."""

    barrier = None

    def call(self, x):
        self.add_loss(tnp.sum(x))
        if self.barrier is not None:
            self.barrier.wait(timeout=10)
        return x


def test_call_losses_are_per_thread_as_replica_threads_need():
    layer = _Barrier()
    layer(np.zeros((1, 1), "float32"))      # build
    layer.barrier = barrier = threading.Barrier(2)
    seen = {}

    def run(v):
        layer(np.full((2, 1), v, "float32"))
        barrier.wait(timeout=10)            # both calls done before either reads
        seen[v] = [float(l) for l in layer.losses]

    threads = [threading.Thread(target=run, args=(v,)) for v in (1.0, 5.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {1.0: [2.0], 5.0: [10.0]}


# ------------------------------------------------------------------------ add_metric
def test_symbolic_metric_reports_the_mean_over_batches():
    x, y = _data()
    model, x1 = _functional()
    model.add_metric(K.std(x1), name="std_of_activation", aggregation="mean")
    model.compile(tt.optimizers.SGD(0.0), loss="mse")
    h = _hidden(model, x)
    want = np.mean([h[i:i + 8].std() for i in range(0, 24, 8)])
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False).history
    np.testing.assert_allclose(hist["std_of_activation"], [want, want], rtol=1e-5)
    logs = model.evaluate(x, y, batch_size=6, verbose=0, return_dict=True)
    assert logs["std_of_activation"] == pytest.approx(
        np.mean([h[i:i + 6].std() for i in range(0, 24, 6)]), rel=1e-5)
    assert model.metrics_names == ["loss", "std_of_activation"]


class _Logging(tt.layers.Layer):
    def call(self, x):
        self.add_metric(tnp.mean(x), name="mean_act")
        return x


def test_layer_metric_in_call_and_its_errors():
    x, y = _data()
    inp = tt.Input((5,))
    out = tt.layers.Dense(2)(_Logging()(inp))
    model = tt.Model(inp, out)
    model.compile(tt.optimizers.SGD(0.0), loss="mse")
    hist = model.fit(x, y, batch_size=12, epochs=2, verbose=0, shuffle=False).history
    want = np.mean([x[:12].mean(), x[12:].mean()])
    np.testing.assert_allclose(hist["mean_act"], [want, want], rtol=1e-5)   # reset each epoch
    layer = _Logging()
    with pytest.raises(ValueError, match="give your metric a name"):
        layer.add_metric(tnp.asarray(1.0))
    with pytest.raises(ValueError, match="'mean' aggregation"):
        layer.add_metric(tnp.asarray(1.0), name="a", aggregation="sum")
    with pytest.raises(ValueError, match="inside `call`"):
        layer.add_metric(tnp.asarray(1.0), name="a")


class _Endpoint(tt.layers.Layer):
    """The guides' LogisticEndpoint: a held metric's result handed to add_metric."""

    def __init__(self):
        super().__init__()
        self.accuracy_fn = tt.metrics.BinaryAccuracy()

    def call(self, targets, logits):
        self.add_loss(tnp.mean((targets - logits) ** 2))
        self.add_metric(self.accuracy_fn(targets, logits), name="accuracy")
        return logits


def test_a_held_metrics_result_reports_that_metric_once():
    r = np.random.default_rng(1)
    x = r.standard_normal((20, 3)).astype("float32")
    t = (r.random((20, 2)) > 0.5).astype("float32")
    inp, tgt = tt.Input((3,)), tt.Input((2,))
    model = tt.Model([inp, tgt], _Endpoint()(tgt, tt.layers.Dense(2)(inp)))
    model.compile(tt.optimizers.SGD(0.0))
    hist = model.fit([x, t], batch_size=10, epochs=1, verbose=0, shuffle=False).history
    assert sorted(hist) == ["binary_accuracy", "loss"]
    k, b = (np.asarray(w) for w in model.get_weights())
    assert hist["binary_accuracy"][0] == pytest.approx(np.mean((x @ k + b > 0.5) == t), rel=1e-6)


# ------------------------------------------------------------------------ held metrics
class _Counting(tt.Model):
    """A custom train_step reporting a metric attribute it updates with the step number."""

    def __init__(self):
        super().__init__()
        self.dense = tt.layers.Dense(1)
        self.tracker = tt.metrics.Mean(name="loss")
        self.steps = 0

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        self.tracker.update_state(float(self.steps))
        self.steps += 1
        return {"loss": self.tracker.result()}


def test_metric_attributes_are_the_models_metrics_and_reset_every_epoch():
    x, y = _data(n=8)
    model = _Counting()
    model.compile(tt.optimizers.SGD(0.1))
    hist = model.fit(x, y, batch_size=4, epochs=3, verbose=0).history
    # steps 0,1 | 2,3 | 4,5: each epoch's own mean (without the reset: 0.5, 1.5, 2.5)
    assert hist["loss"] == pytest.approx([0.5, 2.5, 4.5])
    assert [m.name for m in model.metrics] == ["loss"]      # the unused compiled loss is not


def test_compiled_metrics_are_listed_once_used():
    x, y = _data(n=8)
    model, _ = _functional()
    model.compile("sgd", loss="mse", metrics=["mae"])
    assert model.metrics_names == []        # as TF: nothing before the first step
    model.evaluate(x, y, verbose=0)
    assert model.metrics_names == ["loss", "mae"]


# ------------------------------------------------------------------------ under a strategy
def test_add_loss_and_add_metric_on_two_devices_equal_one():
    x, y = _data(n=32)
    results = []
    for devices in (["cpu:0"], ["cpu:0", "cpu:1"]):
        strategy = tt.distribute.MirroredStrategy(devices)
        with strategy.scope():
            model, x1 = _functional()
            # a mean over each replica's rows, scaled by 1/2 per replica: the global mean
            model.add_loss(tnp.mean(x1) * 0.3)
            model.add_metric(tnp.mean(x1), name="mean_x1")
            model.compile(tt.optimizers.SGD(0.1), loss="mse")
        hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False).history
        results.append((hist, model.get_weights()))
    (h1, w1), (h2, w2) = results
    for k in ("loss", "mean_x1"):
        np.testing.assert_allclose(h2[k], h1[k], rtol=1e-5)
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)


def test_backend_functions_on_symbolic_tensors_are_layers():
    x, _ = _data()
    inp = tt.Input((5,))
    out = K.sum(K.square(inp), axis=-1, keepdims=True)
    model = tt.Model(inp, out)
    np.testing.assert_allclose(np.asarray(model(x)), (x ** 2).sum(-1, keepdims=True), rtol=1e-5)
    clone = tt.Model.from_config(model.get_config())
    np.testing.assert_allclose(np.asarray(clone(x)), (x ** 2).sum(-1, keepdims=True), rtol=1e-5)


def test_model_metrics_follow_metrics_and_layers_added_later():
    model = _Counting()
    assert [m.name for m in model.metrics] == ["loss"]
    model.dense.extra = tt.metrics.Mean(name="extra")       # a metric on a sub-layer
    assert [m.name for m in model.metrics] == ["loss", "extra"]
    inner = tt.layers.Dense(1)
    inner.other = tt.metrics.Sum(name="other")
    model.more = inner                                        # a sub-layer holding one
    assert [m.name for m in model.metrics] == ["loss", "extra", "other"]
    seq = tt.Sequential([tt.Input((3,)), _Logging(), tt.layers.Dense(1)])
    seq(np.ones((2, 3), "float32"))
    assert [m.name for m in seq.metrics] == ["mean_act"]      # made by add_metric in call
    seq.pop()
    seq.pop()
    assert seq.metrics == []
