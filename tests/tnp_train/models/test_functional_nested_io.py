"""A functional model with dict inputs and outputs orders them as TF does (tf.nest: sorted keys).

Expected orders and names come from tf_keras 2.21 (the TF 2.4 functional/compile code) run on the
same model: ``model.inputs`` / ``input_names`` and ``outputs`` / ``output_names`` / ``layers`` by
sorted dict key, while a call returns the outputs dict in the user's own key order. Values are
checked against NumPy by hand, so inputs routed to the wrong ``Input`` would show.
"""
import numpy as np

import tnp_train as tt


def _model():
    ia, ib = tt.Input((2,), name="in_a"), tt.Input((3,), name="in_b")
    x = tt.layers.Concatenate(name="concatenate")([ia, ib])
    zeta = tt.layers.Dense(1, name="zeta")(x)
    alpha = tt.layers.Dense(2, name="alpha")(x)
    return tt.Model(inputs={"b": ib, "a": ia}, outputs={"zeta": zeta, "alpha": alpha})


def _data():
    r = np.random.default_rng(0)
    return r.standard_normal((4, 2)).astype("float32"), r.standard_normal((4, 3)).astype("float32")


def _expected(model, xa, xb):
    x = np.concatenate([xa, xb], axis=1)
    out = {}
    for name in ("zeta", "alpha"):
        w, b = (np.asarray(v) for v in model.get_layer(name).weights)
        out[name] = x @ w + b
    return out


def test_dict_inputs_and_outputs_are_ordered_by_sorted_key():
    m = _model()
    # tf_keras: ['in_a', 'in_b'] ['alpha', 'zeta'] ['in_a', 'in_b', 'concatenate', 'alpha', 'zeta']
    assert m.input_names == ["in_a", "in_b"]
    assert [t.shape for t in m.inputs] == [(None, 2), (None, 3)]
    assert m.output_names == ["alpha", "zeta"]
    assert [t.shape for t in m.outputs] == [(None, 2), (None, 1)]
    assert [layer.name for layer in m.layers] == ["in_a", "in_b", "concatenate", "alpha", "zeta"]


def test_a_call_routes_dict_inputs_by_key_and_keeps_the_outputs_key_order():
    m = _model()
    xa, xb = _data()
    want = _expected(m, xa, xb)
    for inputs in ({"a": xa, "b": xb}, {"b": xb, "a": xa}):
        out = m(inputs)
        assert list(out) == ["zeta", "alpha"]         # tf_keras: the user's order
        for k in out:
            np.testing.assert_allclose(np.asarray(out[k]), want[k], rtol=1e-5, atol=1e-6)
    pred = m.predict({"b": xb, "a": xa}, verbose=0)
    assert list(pred) == ["zeta", "alpha"]
    np.testing.assert_allclose(np.asarray(pred["alpha"]), want["alpha"], rtol=1e-5, atol=1e-6)


def test_fit_logs_follow_the_output_names_order():
    m = _model()
    xa, xb = _data()
    m.compile("sgd", loss={"zeta": "mse", "alpha": "mae"}, metrics={"zeta": "mae"})
    y = {"alpha": np.zeros((4, 2)), "zeta": np.zeros((4, 1))}
    h = m.fit({"a": xa, "b": xb}, y, verbose=0, epochs=1)
    # tf_keras: ['loss', 'alpha_loss', 'zeta_loss', 'zeta_mae']
    assert list(h.history) == ["loss", "alpha_loss", "zeta_loss", "zeta_mae"]
    logs = m.evaluate({"a": xa, "b": xb}, y, verbose=0, return_dict=True)
    assert list(logs) == ["loss", "alpha_loss", "zeta_loss", "zeta_mae"]


def test_from_config_keeps_the_dict_structure():
    m = _model()
    cfg = m.get_config()
    assert list(cfg["input_layers"]) == ["b", "a"]
    assert list(cfg["output_layers"]) == ["zeta", "alpha"]
    m2 = tt.Model.from_config(cfg)
    assert m2.input_names == ["in_a", "in_b"] and m2.output_names == ["alpha", "zeta"]
    m2.set_weights(m.get_weights())
    xa, xb = _data()
    out = m2({"b": xb, "a": xa})
    want = _expected(m, xa, xb)
    assert list(out) == ["zeta", "alpha"]
    np.testing.assert_allclose(np.asarray(out["zeta"]), want["zeta"], rtol=1e-5, atol=1e-6)
