"""Components that used to send a compiled ``fit`` step back to eager (found by
``benchmarks/compile_coverage.py``) now compile, with the eager step's bits: sample weights and
class weights in the losses, the confusion metrics (AUC, Precision/Recall, the counts, the
``...AtRecall``/``...AtSensitivity`` family, MeanIoU) and RootMeanSquaredError, EinsumDense and
a normalized Dot (einsum's backward), and the numeric preprocessing layers (Discretization,
CategoryEncoding, IntegerLookup, Hashing).

Each test trains the same model eagerly (``run_eagerly=True``) and compiled with
``jit_compile=True`` (a step that cannot be compiled is then an error) and compares the
weights, the history, ``evaluate`` and ``predict`` byte for byte."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers
M = tt.metrics
N = 48


def train(build, mode, epochs=3, batch_size=16):
    tt.utils.set_random_seed(0)
    model, x, y, compile_kwargs, fit_kwargs = build()
    model.compile(optimizer=tt.optimizers.Adam(1e-2), run_eagerly=mode == "eager",
                  jit_compile=True if mode == "compiled" else None, **compile_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no step falls back to eager quietly
        history = model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False,
                            verbose=0, **fit_kwargs).history
        sw = fit_kwargs.get("sample_weight")
        results = model.evaluate(x, y, sample_weight=sw, batch_size=32, verbose=0)
        predictions = model.predict(x, batch_size=32, verbose=0)
    if isinstance(predictions, (list, tuple)):
        predictions = np.concatenate([np.asarray(p).ravel() for p in predictions])
    return model, history, results, np.asarray(predictions)


def same_bits(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_bits(u, v) for u, v in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_same_training(build):
    eager = train(build, "eager")
    compiled = train(build, "compiled")
    model = compiled[0]
    assert model.step_compilation == {"train": "compiled", "test": "compiled",
                                      "predict": "compiled"}
    for a, b in zip(eager[0].weights, model.weights):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), a.name
    assert eager[1].keys() == compiled[1].keys()
    for k in eager[1]:                                   # (a metric may log an array)
        assert same_bits(eager[1][k], compiled[1][k]), k
    assert same_bits(eager[2], compiled[2])
    assert eager[3].tobytes() == compiled[3].tobytes()
    for a, b in zip(eager[0].metrics, model.metrics):    # the metrics' state too
        for va, vb in zip(a.variables, b.variables):
            assert np.asarray(va).tobytes() == np.asarray(vb).tobytes(), (a.name, va.name)
    return eager, compiled


def _features(seed=0, width=8):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal((N, width)).astype(np.float32)


# --------------------------------------------------------------------- sample and class weights
def sparse_classifier(weighting):
    def build():
        rng, x = _features()
        inp = tt.Input((8,))
        out = L.Dense(3)(L.Dense(6, activation="relu")(inp))
        y = rng.integers(0, 3, N)
        fit = {"sample_weight": rng.uniform(0.1, 2.0, N).astype(np.float32)} \
            if weighting == "sample_weight" else {"class_weight": {0: 1.0, 1: 3.0, 2: 0.5}}
        return tt.Model(inp, out), x, y, dict(
            loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"], weighted_metrics=["accuracy"]), fit
    return build


@pytest.mark.parametrize("weighting", ["sample_weight", "class_weight"])
def test_weighted_sparse_crossentropy_compiled_equals_eager(weighting):
    eager, compiled = assert_same_training(sparse_classifier(weighting))
    assert compiled[1]["accuracy"] != compiled[1]["weighted_accuracy"]   # the weights count


def test_weighted_regression_and_categorical_losses_compiled_equal_eager():
    def build():
        rng, x = _features(1)
        inp = tt.Input((8,))
        h = L.Dense(6, activation="relu")(inp)
        out = [L.Dense(3, activation="softmax", name="cls")(h), L.Dense(2, name="reg")(h)]
        y = [np.eye(3, dtype=np.float32)[rng.integers(0, 3, N)],
             rng.standard_normal((N, 2)).astype(np.float32)]
        return tt.Model(inp, out), x, y, dict(
            loss=["categorical_crossentropy", tt.losses.Huber()], loss_weights=[1.0, 0.5],
            weighted_metrics=[["accuracy"], ["mae"]]), \
            {"sample_weight": rng.uniform(0.0, 2.0, N).astype(np.float32)}
    assert_same_training(build)


# --------------------------------------------------------------------- confusion metrics
def binary_classifier(metrics, multilabel=False, weighted=False):
    def build():
        rng, x = _features(2)
        units = 3 if multilabel else 1
        inp = tt.Input((8,))
        out = L.Dense(units, activation="sigmoid")(L.Dense(6, activation="relu")(inp))
        y = rng.integers(0, 2, (N, units)).astype(np.float32)
        fit = {"sample_weight": rng.uniform(0.1, 2.0, N).astype(np.float32)} if weighted else {}
        kw = {"weighted_metrics" if weighted else "metrics": metrics()}
        return tt.Model(inp, out), x, y, dict(loss="binary_crossentropy", **kw), fit
    return build


def confusion_metrics():
    return [M.AUC(), M.AUC(curve="PR", name="pr_auc"), M.Precision(), M.Recall(),
            M.Precision(thresholds=[0.3, 0.6], name="p2"), M.TruePositives(),
            M.FalsePositives(), M.TrueNegatives(), M.FalseNegatives(),
            M.PrecisionAtRecall(0.5), M.RecallAtPrecision(0.5),
            M.SensitivityAtSpecificity(0.5), M.SpecificityAtSensitivity(0.5),
            M.MeanIoU(num_classes=2), M.RootMeanSquaredError(), "accuracy"]


def test_confusion_metrics_compiled_equal_eager():
    eager, compiled = assert_same_training(binary_classifier(confusion_metrics))
    hist = compiled[1]
    assert len(hist["auc"]) == 3 and len(set(hist["auc"])) > 1       # updated at every step
    assert np.asarray(hist["p2"]).shape == (3, 2)


def test_weighted_confusion_metrics_compiled_equal_eager():
    assert_same_training(binary_classifier(
        lambda: [M.AUC(), M.Precision(), M.Recall(), M.RootMeanSquaredError()], weighted=True))


def test_multilabel_auc_and_top_k_precision_compiled_equal_eager():
    assert_same_training(binary_classifier(
        lambda: [M.AUC(multi_label=True), M.Precision(top_k=2), M.Recall(class_id=1)],
        multilabel=True))


# --------------------------------------------------------------------- einsum's backward
def test_einsum_dense_and_normalized_dot_compiled_equal_eager():
    def build():
        rng = np.random.default_rng(3)
        x = rng.standard_normal((N, 5, 4)).astype(np.float32)
        inp = tt.Input((5, 4))
        h = L.EinsumDense("abc,cd->abd", output_shape=(5, 6), bias_axes="d",
                          activation="relu")(inp)
        a, b = L.Flatten()(h), L.Flatten()(L.Dense(6)(h))
        d = L.Dot(axes=1, normalize=True)([a, b])
        out = L.Dense(3)(L.Concatenate()([a, d]))
        return tt.Model(inp, out), x, rng.integers(0, 3, N), dict(
            loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True)), {}
    assert_same_training(build)


# --------------------------------------------------------------------- preprocessing layers
def structured_data_model():
    """keras.io's structured-data classifier, in small: integer and numeric features encoded
    inside the model."""
    rng = np.random.default_rng(4)
    cat = rng.integers(1, 12, (N, 1))
    num = rng.standard_normal((N, 1)).astype(np.float32)
    ids = rng.integers(0, 1000, (N, 1))
    lookup = L.IntegerLookup()
    lookup.adapt(np.arange(1, 9).reshape(-1, 1))        # 9..11 are out of vocabulary
    c_in, n_in, i_in = tt.Input((1,), dtype="int64"), tt.Input((1,)), tt.Input((1,),
                                                                              dtype="int64")
    c = L.CategoryEncoding(num_tokens=lookup.vocabulary_size(),
                           output_mode="binary")(lookup(c_in))
    n = L.CategoryEncoding(num_tokens=5, output_mode="count")(
        L.Discretization(bin_boundaries=[-1.0, 0.0, 0.5, 1.0])(n_in))
    h = L.Embedding(16, 3)(L.Hashing(16)(i_in))
    feats = L.concatenate([c, n, L.Flatten()(h), n_in])
    out = L.Dense(1, activation="sigmoid")(L.Dense(8, activation="relu")(feats))
    y = rng.integers(0, 2, (N, 1)).astype(np.float32)
    return tt.Model([c_in, n_in, i_in], out), [cat, num, ids], y, dict(
        loss="binary_crossentropy", metrics=["accuracy"]), {}


def test_numeric_preprocessing_layers_compiled_equal_eager():
    assert_same_training(structured_data_model)


def test_preprocessing_state_is_read_at_every_compiled_call():
    """A vocabulary set after the step was compiled is the one the next compiled call uses
    (never the trace-time one)."""
    inp = tt.Input((3,), dtype="int64")
    lookup = L.IntegerLookup(vocabulary=[1, 2, 3])
    model = tt.Model(inp, L.Lambda(lambda t: t * 1)(lookup(inp)))
    model.compile(jit_compile=True)
    x = np.asarray([[1, 2, 3], [3, 2, 1], [7, 8, 9], [1, 1, 1]])
    first = [np.asarray(model.predict(x, batch_size=2, verbose=0)) for _ in range(2)]
    assert model.step_compilation["predict"] == "compiled"
    lookup.set_vocabulary([3, 2, 1])
    after = np.asarray(model.predict(x, batch_size=2, verbose=0))
    eager = np.asarray(lookup(tnp.asarray(x)))
    assert first[1].tolist() == first[0].tolist()
    assert after.tolist() == eager.tolist() != first[0].tolist()


def test_confusion_metrics_updated_and_read_in_a_compiled_function():
    """``update_state`` and ``result`` called inside ``tt.function``: the update is made at
    every call with that call's values, the result read after it (the eager numbers)."""
    def metrics():
        return [M.AUC(), M.Precision(thresholds=[0.3, 0.6]), M.MeanIoU(num_classes=2),
                M.RecallAtPrecision(0.5), M.RootMeanSquaredError()]
    compiled, eager = metrics(), metrics()

    @tt.function(jit_compile=True)
    def step(y, p, w):
        out = []
        for m in compiled:
            m.update_state(y, p, sample_weight=w)
            out.append(m.result())
        return out

    rng = np.random.default_rng(5)
    for _ in range(4):
        y = tnp.asarray(rng.integers(0, 2, (16, 1)).astype(np.float32))
        p = tnp.asarray(rng.uniform(0, 1, (16, 1)).astype(np.float32))
        w = tnp.asarray(rng.uniform(0.1, 2.0, 16).astype(np.float32))
        got = step(y, p, w)
        want = []
        for m in eager:
            m.update_state(y, p, sample_weight=w)
            want.append(m.result())
        assert same_bits([np.asarray(g) for g in got], [np.asarray(v) for v in want])
    assert step.experimental_get_tracing_count() == 1


TEXTS = np.asarray(["the cat sat", "a dog ran far", "cats and dogs", "the end", "far far away"])


def text_classifier():
    rng = np.random.default_rng(6)
    vec = L.TextVectorization(max_tokens=16, output_sequence_length=5)
    vec.adapt(TEXTS[:3])
    inp = tt.Input((1,), dtype="string")
    h = L.GlobalAveragePooling1D()(L.Embedding(16, 4, mask_zero=True)(vec(inp)))
    out = L.Dense(2)(h)
    return tt.Model(inp, out), TEXTS[rng.integers(0, 5, (N, 1))], rng.integers(0, 2, N), dict(
        loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"]), {}


def test_text_vectorization_compiled_equals_eager():
    assert_same_training(text_classifier)


def test_text_vectorization_of_data_dependent_length_runs_eagerly():
    vec = L.TextVectorization(max_tokens=16)              # as long as the longest text
    vec.adapt(TEXTS)
    inp = tt.Input((1,), dtype="string")
    model = tt.Model(inp, L.GlobalAveragePooling1D()(L.Embedding(16, 2)(vec(inp))))
    model.compile(jit_compile=True)
    with pytest.raises(Exception, match="depends on the data"):
        for _ in range(2):
            model.predict(TEXTS[:, None], batch_size=5, verbose=0)
    model.compile()                                       # by default: eagerly, silently
    for _ in range(2):
        got = model.predict(TEXTS[:, None], batch_size=5, verbose=0)
    assert model.step_compilation["predict"] == "eager"
    assert got.shape == (5, 2)


def test_a_width_changed_after_tracing_is_an_error_not_a_silent_value():
    vec = L.TextVectorization(output_mode="binary")       # width: the vocabulary's size
    vec.adapt(TEXTS[:2])
    inp = tt.Input((1,), dtype="string")
    model = tt.Model(inp, vec(inp))
    model.compile(jit_compile=True)
    for _ in range(2):
        model.predict(TEXTS[:, None], batch_size=5, verbose=0)
    assert model.step_compilation["predict"] == "compiled"
    vec.adapt(TEXTS)                                      # a larger vocabulary
    with pytest.raises(ValueError, match="text_vectorization.*call compile"):
        model.predict(TEXTS[:, None], batch_size=5, verbose=0)
