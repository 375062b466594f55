"""Replica-safe building: a layer, a model, an optimizer's slots and a metric's state are made
once when 8 threads (MirroredStrategy's replicas) build them at the same moment.

Each round releases 8 threads together through a barrier, with the interpreter switching
threads every microsecond, and counts the variables made through ``tt.variable_creator_scope``
(entered in every thread: the creator stack is per thread); 20 rounds, fresh objects each time.
"""
import sys
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers
THREADS = 8
ROUNDS = 20


@pytest.fixture(autouse=True)
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def race(make, act, rounds=ROUNDS):
    """For each round: ``obj = make()``, then ``act(obj, i)`` in THREADS threads released at
    once. Returns [(obj, variables made during the race, results by thread)]."""
    out = []
    for _ in range(rounds):
        obj = make()
        made, results, errors = [], [None] * THREADS, []

        def creator(next_creator, **kwargs):
            v = next_creator(**kwargs)
            made.append(v)
            return v

        barrier = threading.Barrier(THREADS)

        def run(i):
            try:
                with tt.variable_creator_scope(creator):
                    barrier.wait()
                    results[i] = act(obj, i)
            except BaseException as e:  # noqa: BLE001  (re-raised in the main thread)
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        out.append((obj, made, results))
    return out


def _same_ids(made, expected):
    return len(made) == len(expected) and sorted(map(id, made)) == sorted(map(id, expected))


X = tnp.asarray(np.random.default_rng(0).standard_normal((2, 4, 3)).astype("float32"))


def test_a_layer_called_from_eight_threads_is_built_once():
    for layer, made, outs in race(lambda: L.Dense(5), lambda layer, i: layer(X)):
        assert len(layer.weights) == 2 and _same_ids(made, layer.weights)
        for o in outs[1:]:
            np.testing.assert_array_equal(np.asarray(o), np.asarray(outs[0]))


def test_a_sequential_model_called_from_eight_threads_is_built_once():
    def make():
        return tt.Sequential([L.Dense(4), L.BatchNormalization(), L.LSTM(3)])

    for model, made, outs in race(make, lambda m, i: m(X, training=False)):
        assert len(model.weights) == 2 + 4 + 3 and _same_ids(made, model.weights)
        for o in outs[1:]:
            np.testing.assert_array_equal(np.asarray(o), np.asarray(outs[0]))


class Subclassed(tt.Model):
    def __init__(self):
        super().__init__()
        self.attention = L.MultiHeadAttention(num_heads=2, key_dim=2)   # weights made in call
        self.norm = L.LayerNormalization()
        self.head = L.Dense(2)

    def call(self, x, training=None):
        return self.head(self.norm(self.attention(x, x)))


def test_a_subclassed_model_called_from_eight_threads_is_built_once():
    for model, made, outs in race(Subclassed, lambda m, i: m(X)):
        assert len(model.weights) == 8 + 2 + 2 and _same_ids(made, model.weights)
        for o in outs[1:]:
            np.testing.assert_array_equal(np.asarray(o), np.asarray(outs[0]))


VARS = [tt.Variable(np.zeros((3, 2))), tt.Variable(np.zeros(2)), tt.Variable(np.zeros((4,)))]


@pytest.mark.parametrize("make,per_var", [(lambda: tt.optimizers.Adam(amsgrad=True), 3),
                                          (lambda: tt.optimizers.SGD(momentum=0.9), 1)],
                         ids=["Adam-amsgrad", "SGD-momentum"])
def test_optimizer_slots_built_from_eight_threads_are_made_once(make, per_var):
    for opt, made, _ in race(make, lambda o, i: o.build(VARS)):
        slots = [s for _, _, s in opt._slot_variables()]
        assert len(slots) == per_var * len(VARS) and _same_ids(made, slots)
    # the lazy path: the slots of variables an update meets for the first time
    for opt, made, _ in race(make, lambda o, i: o._build_new(VARS[i % 2:])):
        slots = [s for _, _, s in opt._slot_variables()]
        assert len(slots) == per_var * len(VARS) and _same_ids(made, slots)
        opt.apply_gradients([(tnp.ones(v.shape), v) for v in VARS])
        assert len(opt._slot_variables()) == per_var * len(VARS)


def test_a_metric_updated_from_eight_threads_makes_its_state_once():
    y_true = np.array([[1, 0], [0, 1], [1, 1]])
    y_pred = np.array([[0.8, 0.3], [0.4, 0.9], [0.6, 0.2]])
    ref = tt.metrics.AUC(multi_label=True)
    for _ in range(THREADS):
        ref.update_state(y_true, y_pred)
    for metric, made, _ in race(lambda: tt.metrics.AUC(multi_label=True),
                                lambda m, i: m.update_state(y_true, y_pred)):
        assert len(metric.variables) == 4 and _same_ids(made, metric.variables)
        for a, b in zip(metric.variables, ref.variables):   # every update counted once
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_compiled_metrics_updated_from_eight_threads_are_built_once():
    y = tnp.asarray(np.array([0, 1]))
    p = tnp.asarray(np.array([[0.9, 0.1], [0.2, 0.8]], dtype="float32"))

    def make():
        model = tt.Sequential([tt.Input((2,)), L.Dense(2)])
        model.compile("sgd", loss="sparse_categorical_crossentropy",
                      metrics=["accuracy", tt.metrics.SparseCategoricalCrossentropy(name="xent")])
        return model

    for model, made, _ in race(make, lambda m, i: m.compiled_metrics.update_state(y, p)):
        metrics = [m for m in model.compiled_metrics.metrics]
        assert [m.name for m in metrics] == ["accuracy", "xent"]
        # "accuracy" is resolved (and its state made) on the first update; the object given
        # to compile already has its state
        assert _same_ids(made, metrics[0].variables)
        assert float(metrics[0].result()) == 1.0
