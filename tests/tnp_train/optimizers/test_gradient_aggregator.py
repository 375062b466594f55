"""The GradientAggregator protocol between an optimizer and what combines its gradients, and the
optimizer's public state API (``slots_for``, ``is_built``/``ensure_built``, ``is_elementwise``,
``VariablePart``) and ``Variable.key`` that strategies use instead of private fields."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.optimizers import GradientAggregator
from tnp_train.optimizers.base_optimizer import VariablePart


def _model(seed=1):
    tt.utils.set_random_seed(seed)
    return tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", name="first"),
                          tt.layers.Dense(2, name="last")])


def _data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 6)).astype("float32"), rng.normal(size=(n, 2)).astype("float32")


class Recording(GradientAggregator):
    """Records every call of the protocol; offers arrays of its own as destinations."""

    def __init__(self):
        self.calls = []
        self.offered = {}

    def gradient_destination(self, variable):
        self.calls.append(("destination", variable.name))
        d = np.empty(tuple(variable.shape), np.dtype(variable.dtype.name))
        self.offered[variable.name] = d
        return d

    def gradient_ready(self, variable, gradient):
        written = tnp.extend.backend_array(gradient) is self.offered.get(variable.name)
        self.calls.append(("ready", variable.name, written))

    def reduce(self, pairs):
        self.calls.append(("reduce", len(pairs)))
        return list(pairs)

    def abandon(self):
        self.calls.append(("abandon",))


def test_minimize_calls_the_protocol_during_the_backward_pass_and_trains_identically():
    x, y = _data()
    agg = Recording()
    a, b = _model(), _model()
    a.compile(tt.optimizers.SGD(0.05, momentum=0.9, gradient_aggregator=agg), loss="mse")
    b.compile(tt.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    ha = a.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    hb = b.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    assert ha.history["loss"] == hb.history["loss"]
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)
    step = agg.calls[:agg.calls.index(("reduce", 4)) + 1]
    # the last layer's gradients are final first; each dense gradient is written where offered
    assert [c[1] for c in step if c[0] == "ready"] == ["last/kernel", "last/bias",
                                                        "first/kernel", "first/bias"]
    assert all(c[2] for c in step if c[0] == "ready")
    assert step[-1] == ("reduce", 4) and agg.calls.count(("reduce", 4)) == 2


def test_the_class_says_what_the_optimizer_asks():
    class ReduceOnly(GradientAggregator):
        def reduce(self, pairs):
            return list(pairs)
    assert (ReduceOnly.streams, ReduceOnly.offers_destination, ReduceOnly.updates_sharded) == \
        (False, False, False)
    assert (Recording.streams, Recording.offers_destination) == (True, True)
    # a subclass is still a gradient_aggregator callable on the pairs (TF 2.4's contract)
    pairs = [(tnp.ones(2), tt.Variable(np.zeros(2)))]
    assert ReduceOnly()(pairs) == pairs


def test_a_failed_backward_pass_abandons_the_step():
    agg = Recording()
    v = tt.Variable(np.ones(3, "float32"))
    opt = tt.optimizers.SGD(0.1, gradient_aggregator=agg)

    @tt.custom_gradient
    def fails(x):
        def grad(dy):
            raise FloatingPointError("backward failed")
        return x * 1.0, grad

    with pytest.raises(FloatingPointError):
        opt.minimize(lambda: tnp.sum(fails(v) * v), [v])
    assert agg.calls[-1] == ("abandon",)
    assert int(opt.iterations) == 0


def test_an_aggregator_set_later_is_the_one_called():
    v = tt.Variable(np.ones(2, "float32"))
    opt = tt.optimizers.SGD(1.0)
    seen = []
    opt.gradient_aggregator = lambda pairs: seen.append(len(pairs)) or list(pairs)
    opt.minimize(lambda: tnp.sum(v * v), [v])
    assert seen == [1] and np.array_equal(v.numpy(), [-1.0, -1.0])
    opt.gradient_aggregator = agg = Recording()
    opt.minimize(lambda: tnp.sum(v * v), [v])
    assert ("reduce", 1) in agg.calls and seen == [1]


def test_an_object_with_the_methods_by_name_still_streams():
    class Duck:                          # an aggregator written before the protocol
        def __init__(self):
            self.ready, self.abandoned = [], 0

        def gradient_ready(self, variable, gradient):
            self.ready.append(variable.name)

        def abandon_step(self):
            self.abandoned += 1

        def __call__(self, pairs):
            return list(pairs)

    duck = Duck()
    v = tt.Variable(np.ones(2, "float32"), name="v")
    opt = tt.optimizers.SGD(0.1, gradient_aggregator=duck)
    opt.minimize(lambda: tnp.sum(v * v), [v])
    assert duck.ready == ["v"]
    assert opt.aggregator.streams and not opt.aggregator.offers_destination


# ---------------------------------------------------------------- the optimizer's state API
def test_variable_key_is_unique_fixed_and_what_ref_hashes():
    a, b = tt.Variable(np.zeros(2)), tt.Variable(np.zeros(2))
    assert isinstance(a.key, int) and a.key != b.key and a.key == a.key
    assert hash(a.ref()) == hash(a.key)
    a.assign(np.ones(2))
    assert a.key == a.ref().deref().key


def test_slots_for_is_built_and_ensure_built():
    v = tt.Variable(np.ones(3, "float32"))
    opt = tt.optimizers.Adam(0.1)
    assert not opt.is_built(v) and opt.slots_for(v) == {}
    opt.ensure_built([v, v])
    assert opt.is_built(v)
    slots = opt.slots_for(v)
    assert sorted(slots) == ["m", "v"] and slots["m"] is opt.get_slot(v, "m")
    sgd = tt.optimizers.SGD(0.1)           # no slots, but built
    sgd.ensure_built([v])
    assert sgd.is_built(v) and sgd.slots_for(v) == {}


@pytest.mark.parametrize("make, elementwise", [
    (lambda: tt.optimizers.Adam(0.1), True),
    (lambda: tt.optimizers.AdamW(0.1, weight_decay=0.01), True),
    (lambda: tt.optimizers.SGD(0.1, momentum=0.9, clipnorm=1.0), False),
    (lambda: tt.optimizers.RMSprop(0.1, global_clipnorm=1.0), False),
])
def test_is_elementwise(make, elementwise):
    assert make().is_elementwise is elementwise


def _part(whole, view, slots):
    # as the sharded update makes them: a VariablePart over a view of the whole's buffer
    p = VariablePart(view, name=whole.name, dtype=view.dtype)
    tnp.extend.set_backend_array(p, view)
    p.whole, p.part_slots = whole, slots
    return p


@pytest.mark.parametrize("excluded", [False, True], ids=["decayed", "excluded-from-decay"])
def test_updating_the_parts_of_a_variable_gives_the_whole_update(excluded):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=10).astype("float32")
    grads = [rng.normal(size=10).astype("float32") for _ in range(3)]
    whole, split = tt.Variable(w0, name="dense/kernel"), tt.Variable(w0, name="dense/kernel")
    ref = tt.optimizers.AdamW(0.1, weight_decay=0.05)
    opt = tt.optimizers.AdamW(0.1, weight_decay=0.05)
    if excluded:          # a part is decided by its whole variable's key
        ref.exclude_from_weight_decay([whole])
        opt.exclude_from_weight_decay([split])
    for o, v in ((ref, whole), (opt, split)):
        o.apply_gradients([(tnp.asarray(grads[0]), v)])        # builds the slots
    assert opt.is_elementwise
    weights = tnp.extend.backend_array(split)
    slots = opt.slots_for(split)
    parts = [_part(split, weights[lo:hi],
                   {n: _part(s, tnp.extend.backend_array(s)[lo:hi], {}) for n, s in slots.items()})
             for lo, hi in ((0, 4), (4, 10))]
    assert opt.slots_for(parts[0]) is parts[0].part_slots
    for g in grads[1:]:
        ref.apply_gradients([(tnp.asarray(g), whole)])
        opt._t = opt._steps_taken() + 1
        lr = opt._current_learning_rate()
        for part, (lo, hi) in zip(parts, ((0, 4), (4, 10))):
            opt.update_step(tnp.asarray(g[lo:hi]), part, lr)
        opt.iterations.assign_add(1)
    assert np.array_equal(whole.numpy(), split.numpy())
    for name in ("m", "v"):
        assert np.array_equal(ref.get_slot(whole, name).numpy(), opt.get_slot(split, name).numpy())
