"""tt.Input(dtype="string") (TF's tf.string input): a functional model that starts from strings
(TextVectorization first, as keras-io's text example exports its end-to-end model) trains,
predicts what the model on the vectorized integers predicts, and saves and loads."""
import numpy as np

import tnp_train as tt

P = tt.layers.experimental.preprocessing
TEXTS = np.array([["the cat sat"], ["a dog ran far"], ["the dog sat"], ["a cat ran"]])


def _models():
    tt.utils.set_random_seed(0)
    vec = P.TextVectorization(max_tokens=20, output_sequence_length=4)
    vec.adapt(TEXTS[:, 0])
    ints = tt.Input((4,), dtype="int64")
    h = tt.layers.GlobalAveragePooling1D()(tt.layers.Embedding(20, 3)(ints))
    core = tt.Model(ints, tt.layers.Dense(1, activation="sigmoid")(h))
    strings = tt.Input(shape=(1,), dtype="string")
    end_to_end = tt.Model(strings, core(vec(strings)))
    return vec, core, end_to_end, strings


def test_string_input_model_equals_the_model_on_vectorized_integers(tmp_path):
    vec, core, model, strings = _models()
    assert strings.dtype == np.dtype(object)
    ints = np.asarray(vec(TEXTS))
    np.testing.assert_array_equal(np.asarray(model(TEXTS)), np.asarray(core(ints)))
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    loss, acc = model.evaluate(TEXTS, np.array([1, 0, 1, 0]), verbose=0)
    assert 0.0 <= acc <= 1.0 and loss > 0
    assert model.layers[0].get_config()["dtype"] == "string"
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(again(TEXTS)), np.asarray(model(TEXTS)))
