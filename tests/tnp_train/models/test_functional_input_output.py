"""A functional model's ``.input`` / ``.output``: tf.keras's ``Functional.input`` /
``.output``, the tensors given to the constructor (a list of one given as its element), whether
or not the model has been called as a layer; the feature-extractor pattern of the functional-API
guide and of transfer learning builds on them."""
import numpy as np

import tnp_train as tt


def test_input_and_output_are_the_constructors_tensors():
    inp = tt.Input((4,))
    out = tt.layers.Dense(2)(inp)
    model = tt.Model(inp, out)
    assert model.input is inp and model.output is out
    listed = tt.Model([inp], [out])            # a list of one is its element, as in TF
    assert listed.input is inp and listed.output is out
    model(tt.Input((4,)))                      # called as a layer: still its own tensors
    assert model.input is inp and model.output is out


def test_several_inputs_and_outputs_keep_their_structure():
    a, b = tt.Input((3,), name="a"), tt.Input((2,), name="b")
    joined = tt.layers.Concatenate()([a, b])
    y1, y2 = tt.layers.Dense(1)(joined), tt.layers.Dense(2)(joined)
    model = tt.Model([a, b], [y1, y2])
    assert isinstance(model.input, list) and [t is u for t, u in zip(model.input, [a, b])] == [True, True]
    assert isinstance(model.output, list) and model.output[1] is y2
    named = tt.Model({"a": a, "b": b}, y1)
    assert set(named.input) == {"a", "b"} and named.input["b"] is b


def test_a_feature_extractor_cut_from_an_application():
    base = tt.applications.VGG19(weights=None, include_top=False, input_shape=(32, 32, 3))
    extractor = tt.Model(inputs=base.input, outputs=[layer.output for layer in base.layers])
    feats = extractor(np.zeros((2, 32, 32, 3), "float32"))
    assert len(feats) == len(base.layers)
    np.testing.assert_allclose(np.asarray(feats[-1]), np.asarray(base(np.zeros((2, 32, 32, 3), "float32"))))
