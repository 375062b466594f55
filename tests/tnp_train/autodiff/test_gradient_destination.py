"""GradientTape.gradient(..., gradient_destination=fn): a source that one recorded operation
alone reads gets its gradient written into the array ``fn`` offers, when that operation's
backward can write in place (``dense``); the values are exactly those of a gradient without
destinations, and anything else (a shared variable, another op, float16, a misfit array)
falls back to the ordinary gradient."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import backend_array
from tnp_train.autodiff import backward as backward_mod, tape as tape_mod


def _mlp(seed=0, dtype="float32"):
    tt.utils.set_random_seed(seed)
    model = tt.Sequential([tt.Input((5,)),
                           tt.layers.Dense(7, activation="relu", name="d0", dtype=dtype),
                           tt.layers.Dense(6, activation="tanh", name="d1", dtype=dtype),
                           tt.layers.Dense(3, name="d2", dtype=dtype)])
    return model


def _batch(seed=1, dtype="float32"):
    rng = np.random.default_rng(seed)
    return (tnp.asarray(rng.normal(size=(9, 5)).astype(dtype)),
            tnp.asarray(rng.normal(size=(9, 3)).astype(dtype)))


class Offer:
    """Offers a fresh array per source (or ``make(source)``'s) and records what it offered
    and what gradient_ready received."""

    def __init__(self, make=None):
        self.make = make or (lambda s: np.full(tuple(s.shape), np.nan, np.dtype(s.dtype.name)))
        self.offered, self.received = {}, {}

    def destination(self, source):
        d = self.make(source)
        if d is not None:
            self.offered[source.name] = d
        return d

    def ready(self, source, grad):
        self.received[source.name] = grad


def _grads(model, x, y, offer=None):
    with tt.GradientTape() as tape:
        loss = tnp.mean((model(x) - y) ** 2)
    srcs = list(model.trainable_weights)
    if offer is None:
        return srcs, tape.gradient(loss, srcs)
    return srcs, tape.gradient(loss, srcs, gradient_ready=offer.ready,
                               gradient_destination=offer.destination)


def test_dense_kernels_and_biases_are_computed_into_the_offered_arrays():
    x, y = _batch()
    model = _mlp()
    srcs, want = _grads(model, x, y)
    offer = Offer()
    _, got = _grads(model, x, y, offer)
    assert sorted(offer.offered) == sorted(s.name for s in srcs)      # 6 variables, each once
    for s, g, w in zip(srcs, got, want):
        # the very array offered, holding exactly the ordinary gradient's bits
        assert backend_array(g) is offer.offered[s.name], s.name
        assert offer.received[s.name] is g
        assert np.array_equal(np.asarray(g), np.asarray(w)), s.name
    # the thread's offers are gone once the backward pass is over
    assert all(tape_mod.gradient_destination(s) is None for s in srcs)


def test_a_variable_read_by_two_operations_is_not_offered():
    rng = np.random.default_rng(3)
    shared = tt.layers.Dense(5, activation="tanh", name="shared")
    head = tt.layers.Dense(2, name="head")
    x = tnp.asarray(rng.normal(size=(4, 5)).astype("float32"))
    head(shared(shared(x)))
    srcs = shared.trainable_weights + head.trainable_weights

    def run(offer=None):
        with tt.GradientTape() as tape:
            loss = tnp.sum(head(shared(shared(x))) ** 2)
        if offer is None:
            return tape.gradient(loss, srcs)
        return tape.gradient(loss, srcs, gradient_ready=offer.ready,
                             gradient_destination=offer.destination)

    offer = Offer()
    got, want = run(offer), run()
    assert sorted(offer.offered) == sorted(v.name for v in head.trainable_weights)
    for g, w in zip(got, want):
        assert np.array_equal(np.asarray(g), np.asarray(w))


def test_an_op_without_an_in_place_backward_leaves_the_offer_unused():
    w = tt.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) / 7, name="w")
    x = tnp.asarray(np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2))
    offer = Offer()
    with tt.GradientTape() as tape:
        loss = tnp.sum(tnp.sin(tnp.matmul(x, w)))
    (g,) = tape.gradient(loss, [w], gradient_ready=offer.ready,
                         gradient_destination=offer.destination)
    assert "w" in offer.offered and backend_array(g) is not offer.offered["w"]
    want = np.asarray(x).T @ np.cos(np.asarray(x) @ np.asarray(w))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda s: np.zeros(tuple(s.shape) + (1,), np.float32),          # another shape
    lambda s: np.zeros(tuple(s.shape), np.float64),                  # another dtype
    lambda s: None,                                                  # nothing offered
], ids=["shape", "dtype", "none"])
def test_a_misfit_offer_is_ignored(make):
    x, y = _batch()
    model = _mlp()
    srcs, want = _grads(model, x, y)
    offer = Offer(make)
    _, got = _grads(model, x, y, offer)
    for s, g, w in zip(srcs, got, want):
        assert not any(backend_array(g) is d for d in offer.offered.values())
        assert np.array_equal(np.asarray(g), np.asarray(w))


def test_float16_dense_computes_in_float32_and_is_not_written_in_place():
    x, y = _batch(dtype="float16")
    model = _mlp(dtype="float16")
    srcs, want = _grads(model, x, y)
    offer = Offer()
    _, got = _grads(model, x, y, offer)
    for s, g, w in zip(srcs, got, want):
        assert backend_array(g) is not offer.offered[s.name]
        assert np.array_equal(np.asarray(g), np.asarray(w))


def test_a_failing_offer_propagates_and_leaves_no_offer_behind():
    x, y = _batch()
    model = _mlp()
    calls = []

    def destination(source):
        calls.append(source.name)
        if len(calls) == 3:
            raise RuntimeError("no room")
        return None

    with tt.GradientTape() as tape:
        loss = tnp.mean((model(x) - y) ** 2)
    with pytest.raises(RuntimeError, match="no room"):
        tape.gradient(loss, model.trainable_weights, gradient_ready=lambda s, g: None,
                      gradient_destination=destination)
    assert getattr(backward_mod._local, "destinations", None) is None   # the offer is withdrawn


def test_gradient_destination_must_be_callable():
    a = tt.Variable(tnp.ones(3))
    with tt.GradientTape() as tape:
        loss = tnp.sum(a)
    with pytest.raises(TypeError, match="gradient_destination must be callable, got int"):
        tape.gradient(loss, [a], gradient_ready=lambda s, g: None, gradient_destination=3)


class OfferingAggregator:
    """A gradient aggregator that offers arrays of its own (as a strategy offers its buckets)
    and checks, when the pairs come, that each dense gradient is the array it offered."""

    def __init__(self):
        self.offered, self.written, self.steps = {}, 0, 0

    def gradient_destination(self, variable):
        d = np.empty(tuple(variable.shape), np.dtype(variable.dtype.name))
        self.offered[variable.name] = d
        return d

    def gradient_ready(self, variable, gradient):
        if backend_array(gradient) is self.offered.get(variable.name):
            self.written += 1

    def __call__(self, pairs):
        self.steps += 1
        return list(pairs)


def test_fit_trains_identically_with_gradients_written_into_an_aggregators_arrays():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(48, 5)).astype("float32")
    y = rng.normal(size=(48, 3)).astype("float32")
    agg = OfferingAggregator()
    a, b = _mlp(5), _mlp(5)
    a.compile(tt.optimizers.SGD(0.05, momentum=0.9, gradient_aggregator=agg), loss="mse")
    b.compile(tt.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    ha = a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    hb = b.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert agg.steps == 6 and agg.written == 6 * 6      # every step, every kernel and bias
    assert ha.history["loss"] == hb.history["loss"]
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)
