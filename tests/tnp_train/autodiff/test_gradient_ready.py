"""GradientTape.gradient(..., gradient_ready=fn): each source's gradient is handed over the
moment it is final, once, equal to what gradient() returns, the last layer's first."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def _probe(log, tag):
    """An identity op whose backward writes ``tag`` into ``log`` when it runs."""
    @tt.custom_gradient
    def probe(x):
        def grad(dy):
            log.append(("backward", tag))
            return dy
        return x + 0.0, grad
    return probe


def _check(model, x, y, sources, log, *, loss_fn=None):
    loss_fn = loss_fn or (lambda p: tnp.mean((p - y) ** 2))
    with tt.GradientTape(persistent=True) as tape:
        loss = loss_fn(model(x))
    reported = []

    def ready(source, grad):
        reported.append((source, grad))
        log.append(("ready", source.name))

    got = tape.gradient(loss, sources, gradient_ready=ready)
    want = tape.gradient(loss, sources)
    # each distinct source exactly once, with the value gradient() returns
    assert sorted(id(s) for s, _ in reported) == sorted({id(s) for s in sources})
    by_id = {id(s): g for s, g in reported}
    for s, g_ret, g_ref in zip(sources, got, want):
        assert by_id[id(s)] is g_ret
        np.testing.assert_allclose(np.asarray(g_ret), np.asarray(g_ref), rtol=0, atol=0)
    return [name for kind, name in log if kind == "ready"]


def test_mlp_four_layers_reports_in_reverse_layer_order():
    rng = np.random.default_rng(0)
    log = []
    layers = [tt.layers.Dense(8, activation="relu", name=f"d{i}") for i in range(3)]
    layers.append(tt.layers.Dense(1, name="d3"))
    probe = _probe(log, "after-d0")

    class MLP(tt.Model):
        def __init__(self):
            super().__init__()
            self.ls = layers

        def call(self, x):
            h = probe(self.ls[0](x))       # the probe's backward runs just before d0's
            for layer in self.ls[1:]:
                h = layer(h)
            return h

    model = MLP()
    x = tnp.asarray(rng.normal(size=(16, 5)).astype("float32"))
    y = tnp.asarray(rng.normal(size=(16, 1)).astype("float32"))
    model(x)
    srcs = list(model.trainable_weights)
    order = _check(model, x, y, srcs, log)
    layer_of = [n.split("/")[0] for n in order]
    firsts = [layer_of.index(f"d{i}") for i in range(4)]
    assert firsts == sorted(firsts, reverse=True), order   # d3 first, d0 last
    # the last layer's gradient was handed over before the first layer's backward ran
    i_probe = log.index(("backward", "after-d0"))
    assert any(k == "ready" and n.startswith("d3/") for k, n in log[:i_probe])
    assert all(not (k == "ready" and n.startswith("d0/")) for k, n in log[:i_probe])


def test_cnn_reports_the_dense_head_before_the_first_conv():
    rng = np.random.default_rng(1)
    log = []
    model = tt.Sequential([
        tt.Input((8, 8, 2)),
        tt.layers.Conv2D(4, 3, activation="relu", name="c0"),
        tt.layers.MaxPooling2D(2),
        tt.layers.Conv2D(4, 2, activation="relu", name="c1"),
        tt.layers.Flatten(),
        tt.layers.Dense(3, name="head"),
    ])
    x = tnp.asarray(rng.normal(size=(4, 8, 8, 2)).astype("float32"))
    y = tnp.asarray(rng.normal(size=(4, 3)).astype("float32"))
    order = _check(model, x, y, list(model.trainable_weights), log)
    layer_of = [n.split("/")[0] for n in order]
    assert layer_of.index("head") < layer_of.index("c1") < layer_of.index("c0"), order


def test_shared_layer_is_reported_once_after_its_last_use():
    rng = np.random.default_rng(2)
    log = []
    shared = tt.layers.Dense(6, activation="tanh", name="shared")
    first = tt.layers.Dense(6, name="first")
    head = tt.layers.Dense(1, name="head")

    class M(tt.Model):
        def __init__(self):
            super().__init__()
            self.shared, self.first, self.head = shared, first, head

        def call(self, x):
            # the shared layer is used twice: its gradient is final only after the first use
            return self.head(self.shared(self.first(self.shared(x))))

    model = M()
    x = tnp.asarray(rng.normal(size=(10, 6)).astype("float32"))
    y = tnp.asarray(rng.normal(size=(10, 1)).astype("float32"))
    model(x)
    order = _check(model, x, y, list(model.trainable_weights), log)
    layer_of = [n.split("/")[0] for n in order]
    assert layer_of.count("shared") == 2          # kernel and bias, once each
    assert layer_of.index("head") < layer_of.index("first") < layer_of.index("shared"), order


def test_unconnected_and_duplicate_sources():
    a = tt.Variable(tnp.ones(3), name="a")
    b = tt.Variable(tnp.ones(2), name="b")       # not used: reported first, None
    with tt.GradientTape() as tape:
        loss = tnp.sum(a * a)
    got = []
    grads = tape.gradient(loss, [a, b, a], gradient_ready=lambda s, g: got.append((s.name, g)))
    assert [n for n, _ in got] == ["b", "a"] and got[0][1] is None
    np.testing.assert_allclose(np.asarray(grads[0]), 2.0)
    assert grads[1] is None and grads[2] is grads[0]
    with tt.GradientTape() as tape:
        loss = tnp.sum(a)
    got = []
    tape.gradient(loss, [b], unconnected_gradients="zero",
                  gradient_ready=lambda s, g: got.append(g))
    np.testing.assert_array_equal(np.asarray(got[0]), np.zeros(2))


def test_gradient_ready_must_be_callable():
    a = tt.Variable(tnp.ones(3))
    with tt.GradientTape() as tape:
        loss = tnp.sum(a)
    with pytest.raises(TypeError, match="gradient_ready"):
        tape.gradient(loss, a, gradient_ready=3)
