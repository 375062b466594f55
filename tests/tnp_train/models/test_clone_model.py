"""``tt.models.clone_model`` with ``clone_function`` and ``input_tensors`` (TF 2.4's), checked
against the original model's outputs and NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers


def _shared():
    inp = tt.Input((4,), name="x")
    shared = L.Dense(4, name="shared")
    h = shared(inp)
    out = shared(L.Dense(4, activation="tanh", name="mid")(h))
    model = tt.Model(inp, out)
    model.add_loss(tnp.mean(h) * 0.5)
    r = np.random.default_rng(0)
    model.set_weights([r.standard_normal(w.shape).astype("float32") for w in model.get_weights()])
    return model


def test_default_clone_keeps_shared_layers_and_add_loss():
    model = _shared()
    clone = tt.models.clone_model(model, clone_function=lambda l: l.__class__.from_config(
        l.get_config()))
    assert [type(l).__name__ for l in clone.layers] == [type(l).__name__ for l in model.layers]
    assert len(clone.weights) == len(model.weights) == 4     # the shared Dense once
    clone.set_weights(model.get_weights())
    x = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(np.asarray(clone(x)), np.asarray(model(x)), rtol=1e-6)
    np.testing.assert_allclose([float(v) for v in clone.losses],
                               [float(v) for v in model.losses], rtol=1e-6)


def test_clone_function_changes_layers():
    model = _shared()

    def relu_dense(layer):
        config = layer.get_config()
        if isinstance(layer, L.Dense):
            config["activation"] = "relu"
        return layer.__class__.from_config(config)

    clone = tt.models.clone_model(model, clone_function=relu_dense)
    clone.set_weights(model.get_weights())
    k1, b1, k2, b2 = model.get_weights()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    relu = lambda a: np.maximum(a, 0)   # noqa: E731
    h = relu(x @ k1 + b1)
    want = relu(relu(h @ k2 + b2) @ k1 + b1)
    np.testing.assert_allclose(np.asarray(clone(x)), want, rtol=1e-5, atol=1e-6)


def test_input_tensors_and_sequential():
    model = _shared()
    new_in = tt.Input((4,), name="other")
    clone = tt.models.clone_model(model, input_tensors=new_in)
    assert clone.inputs[0] is new_in
    seq = tt.Sequential([tt.Input((4,)), L.Dense(2), L.Dropout(0.5)])
    copy = tt.models.clone_model(seq, clone_function=lambda l: l.__class__.from_config(
        l.get_config()))
    assert isinstance(copy, tt.Sequential) and copy.input_shape == (None, 4)
    assert [type(l).__name__ for l in copy.layers] == ["Dense", "Dropout"]
    assert copy.layers[0] is not seq.layers[0]
    inp = tt.Input((4,))
    on_input = tt.models.clone_model(seq, input_tensors=inp)
    assert on_input.inputs[0] is inp
    with pytest.raises(ValueError, match="symbolic tensors"):
        tt.models.clone_model(model, input_tensors=[np.ones((2, 4))])
    with pytest.raises(ValueError, match="1 input"):
        tt.models.clone_model(model, input_tensors=[tt.Input((4,)), tt.Input((4,))])

    class Sub(tt.Model):
        def call(self, x):
            return x

    with pytest.raises(ValueError, match="subclassed"):
        tt.models.clone_model(Sub(), clone_function=lambda l: l)
