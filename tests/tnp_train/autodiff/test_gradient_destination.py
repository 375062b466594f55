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


# ---------------------------------------------------------------------------- every layer kind
# Each model's trainable variables are all read by one recorded operation (a hand-written
# backward that offers no destination would leave an offered array unused, and the test says
# which); the recurrent kernels run the Numba loop (float32, GRU reset_after) and the NumPy
# loop (GRU reset_after=False, float64).
def _sequence_model(dtype="float32", reset_after=True, mask_zero=False):
    kw = {"dtype": dtype}
    return tt.Sequential([
        tt.Input((7,), dtype="int64"),
        tt.layers.Embedding(20, 6, mask_zero=mask_zero, name="emb", **kw),
        tt.layers.SimpleRNN(5, return_sequences=True, name="rnn", **kw),
        tt.layers.LSTM(4, return_sequences=True, name="lstm", **kw),
        tt.layers.GRU(3, reset_after=reset_after, name="gru", **kw),
        tt.layers.Dense(2, name="out", **kw)])


def _normalization_model():
    return tt.Sequential([
        tt.Input((6, 5)),
        tt.layers.BatchNormalization(axis=1, name="bn_axis1"),
        tt.layers.LayerNormalization(axis=[1, 2], name="ln_axes12"),
        tt.layers.Flatten(),
        tt.layers.Dense(8, name="d"),
        tt.layers.BatchNormalization(name="bn"),
        tt.layers.LayerNormalization(name="ln"),
        tt.layers.Dense(2, name="out")])


def _attention_model(output_shape=None):
    inp = tt.Input((4, 6))
    ctx = tt.layers.MultiHeadAttention(2, 3, output_shape=output_shape, name="mha")(inp, inp)
    return tt.Model(inp, tt.layers.Dense(2, name="out")(tt.layers.Flatten()(ctx)))


_MODELS = {
    "embedding+rnn+lstm+gru": (_sequence_model, "ids"),
    "gru-reset-before+mask": (lambda: _sequence_model(reset_after=False, mask_zero=True), "ids"),
    "recurrent-float64": (lambda: _sequence_model(dtype="float64"), "ids"),
    "batch+layer-normalization": (_normalization_model, (6, 5)),
    "multi-head-attention": (_attention_model, (4, 6)),
    "multi-head-attention-output-shape": (lambda: _attention_model((2, 3)), (4, 6)),
}


def _inputs(what, seed=2):
    rng = np.random.default_rng(seed)
    if what == "ids":
        ids = rng.integers(0, 20, (9, 7))
        ids[:, :1] = [[3], [0], [7], [0], [1], [19], [3], [3], [5]]    # repeated ids, padding
        return tnp.asarray(ids)
    return tnp.asarray((rng.normal(size=(9,) + what) * 2 + 0.5).astype("float32"))


def _layer_grads(model, x, training, offer=None):
    y = tnp.asarray(np.random.default_rng(3).normal(size=(9, 2)))
    with tt.GradientTape() as tape:
        out = model(x, training=training)
        loss = tnp.mean((out - y.astype(out.dtype)) ** 2)
    srcs = list(model.trainable_weights)
    if offer is None:
        return srcs, tape.gradient(loss, srcs)
    return srcs, tape.gradient(loss, srcs, gradient_ready=offer.ready,
                               gradient_destination=offer.destination)


@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("name", list(_MODELS))
def test_every_layer_kind_writes_its_weights_gradients_into_the_offered_arrays(name, training):
    make, what = _MODELS[name]
    tt.utils.set_random_seed(0)
    model = make()
    x = _inputs(what)
    srcs, want = _layer_grads(model, x, training)
    offer = Offer()         # arrays full of nan: a gradient written only in part shows
    _, got = _layer_grads(model, x, training, offer)
    assert sorted(offer.offered) == sorted(s.name for s in srcs)
    for s, g, w in zip(srcs, got, want):
        assert backend_array(g) is offer.offered[s.name], f"{s.name} was not written in place"
        assert offer.received[s.name] is g
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(np.asarray(g), np.asarray(w)), s.name     # the same bits
    assert all(tape_mod.gradient_destination(s) is None for s in srcs)


def test_a_float16_embedding_table_is_not_written_in_place():
    # its gradient is summed in float32 and cast: no float16 destination fits
    tt.utils.set_random_seed(0)
    emb = tt.layers.Embedding(20, 6, dtype="float16")
    x = _inputs("ids")
    emb(x)

    def run(offer=None):
        with tt.GradientTape() as tape:
            loss = tnp.sum(emb(x).astype("float32") ** 2)
        if offer is None:
            return tape.gradient(loss, emb.trainable_weights)
        return tape.gradient(loss, emb.trainable_weights, gradient_ready=offer.ready,
                             gradient_destination=offer.destination)
    offer = Offer()
    (g,), (w,) = run(offer), run()
    assert backend_array(g) is not offer.offered[emb.embeddings.name]
    assert g.dtype == w.dtype == np.float16 and np.array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("name", list(_MODELS))
def test_fit_trains_every_layer_kind_identically_with_an_offering_aggregator(name):
    make, what = _MODELS[name]
    x = np.asarray(_inputs(what, seed=6))
    y = np.random.default_rng(7).normal(size=(9, 2)).astype("float32")
    agg = OfferingAggregator()
    models = []
    for kw in ({"gradient_aggregator": agg}, {}):
        tt.utils.set_random_seed(5)
        m = make()
        m.compile(tt.optimizers.Adam(0.01, **kw), loss="mse")
        models.append(m)
    ha = models[0].fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    hb = models[1].fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    n = len(models[0].trainable_weights)
    assert agg.steps == 6 and agg.written == 6 * n
    assert ha.history["loss"] == hb.history["loss"]
    for wa, wb in zip(models[0].get_weights(), models[1].get_weights()):
        assert np.array_equal(wa, wb)
