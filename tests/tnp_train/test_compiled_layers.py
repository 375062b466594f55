"""Compiled steps of models whose layers compute on backend arrays (convolutions, pooling,
BatchNormalization, Embedding, the fused recurrent kernel, attention, ConvLSTM2D): each op is one primitive node of
the program, forward and backward, and the compiled ``fit``/``evaluate``/``predict`` give the
eager ones' bits (the same kernels run in the same order), Dropout and the moving statistics
included."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers


def digits_like_cnn():
    return [tt.Input((8, 8, 1)),
            L.Conv2D(16, 3, padding="same", activation="relu"),
            L.Conv2D(16, 3, padding="same", activation="relu"),
            L.MaxPooling2D(),
            L.Conv2D(24, 3, padding="same", activation="relu"),
            L.BatchNormalization(),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dropout(0.3),
            L.Dense(32, activation="relu"),
            L.Dense(10)]


def conv_sweep():
    return [tt.Input((9, 9, 3)),
            L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
            L.SeparableConv2D(8, 3, strides=2, activation="relu"),
            L.Conv2DTranspose(6, 3, strides=2, padding="same"),
            L.AveragePooling2D(padding="same"),
            L.BatchNormalization(axis=-1, momentum=0.9),
            L.Reshape((4 * 4, 6)),
            L.Conv1D(8, 3, padding="causal", activation="relu"),
            L.Conv1DTranspose(4, 2, strides=2),
            L.MaxPooling1D(),
            L.LayerNormalization(),
            L.GlobalMaxPooling1D(),
            L.Dense(10)]


def conv3d():
    return [tt.Input((4, 6, 6, 2)),
            L.Conv3D(4, 3, padding="same", activation="relu"),
            L.MaxPooling3D(),
            L.Conv3DTranspose(3, 2, strides=2),
            L.GlobalAveragePooling3D(),
            L.Dense(10)]


def text_classifier(rnn):
    def layers():
        return [tt.Input((12,), dtype="int64"),
                L.Embedding(50, 16, mask_zero=True),
                rnn(16, dropout=0.1, recurrent_dropout=0.1, return_sequences=True),
                rnn(12, go_backwards=True),
                L.Dropout(0.2),
                L.Dense(10)]
    return layers


def attention_model():
    inp = tt.Input((6, 8))
    h = L.MultiHeadAttention(2, 4, dropout=0.2)(inp, inp)
    h = L.LayerNormalization()(h + inp)
    h = L.Attention(causal=True, dropout=0.1)([h, inp])
    return tt.Model(inp, L.Dense(10)(L.GlobalAveragePooling1D()(h)))


def conv_lstm():
    return [tt.Input((3, 5, 5, 2)),
            L.ConvLSTM2D(4, 3, padding="same", dropout=0.1, recurrent_dropout=0.2,
                         return_sequences=True),
            L.ConvLSTM2D(3, 3),
            L.Flatten(),
            L.Dense(10)]


def data(shape, ints=False, n=80, seed=0):
    rng = np.random.default_rng(seed)
    if ints:
        x = rng.integers(1, 50, (n,) + shape)
        x[: n // 2, 8:] = 0                       # padding the mask hides
    else:
        x = rng.standard_normal((n,) + shape).astype(np.float32)
    return x, rng.integers(0, 10, n)


def train(layers, x, y, mode, epochs=4, batch_size=16):
    tt.utils.set_random_seed(0)
    made = layers()
    model = made if isinstance(made, tt.Model) else tt.Sequential(made)
    model.compile(optimizer=tt.optimizers.Adam(1e-2),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], run_eagerly=mode == "eager",
                  jit_compile=True if mode == "compiled" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no step falls back to eager quietly
        history = model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False,
                            verbose=0).history
        results = model.evaluate(x, y, batch_size=32, verbose=0)
        predictions = np.asarray(model.predict(x, batch_size=32, verbose=0))
    return model, history, results, predictions


def assert_same_training(layers, x, y):
    eager = train(layers, x, y, "eager")
    compiled = train(layers, x, y, "compiled")
    model = compiled[0]
    assert model.step_compilation == {"train": "compiled", "test": "compiled",
                                      "predict": "compiled"}
    for a, b in zip(eager[0].weights, model.weights):       # moving statistics included
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), a.name
    assert eager[1] == compiled[1]
    assert eager[2] == compiled[2]
    assert eager[3].tobytes() == compiled[3].tobytes()
    return model


def test_cnn_with_batchnorm_and_dropout_20_steps_compiled_equals_eager():
    x, y = data((8, 8, 1))
    model = assert_same_training(digits_like_cnn, x, y)   # 4 epochs of 5 steps
    bn = model.layers[4]
    assert np.asarray(bn.moving_mean).any()               # the moving update ran


def test_conv_pool_norm_sweep_compiled_equals_eager():
    x, y = data((9, 9, 3))
    assert_same_training(conv_sweep, x, y)


def test_conv3d_compiled_equals_eager():
    x, y = data((4, 6, 6, 2), n=48)
    assert_same_training(conv3d, x, y)


@pytest.mark.parametrize("rnn", [L.LSTM, L.GRU, L.SimpleRNN], ids=["LSTM", "GRU", "SimpleRNN"])
def test_text_classifier_compiled_equals_eager(rnn):
    x, y = data((12,), ints=True)
    assert_same_training(text_classifier(rnn), x, y)


def test_attention_layers_with_dropout_compiled_equal_eager():
    x, y = data((6, 8))
    assert_same_training(attention_model, x, y)         # 4 epochs of 5 steps


def test_conv_lstm_2d_with_dropouts_compiled_equals_eager():
    x, y = data((3, 5, 5, 2))
    assert_same_training(conv_lstm, x, y)


def test_multi_head_attention_is_one_forward_and_one_backward_node():
    mha = L.MultiHeadAttention(2, 4)
    q = tnp.asarray(data((5, 8), n=3)[0])
    mask = tnp.asarray(np.tril(np.ones((5, 5), bool)))
    mha(q, q, attention_mask=mask)

    def step(q):
        with tt.GradientTape() as tape:
            loss = tnp.sum(mha(q, q, attention_mask=mask, training=True) ** 2)
        return tape.gradient(loss, mha.trainable_variables)

    text = tnp.jit(step).lower(q).as_text()
    assert text.count("= primitive:multi_head_attention(") == 1
    assert text.count("= primitive:multi_head_attention_grad(") == 1
    got = tt.function(step, jit_compile=True)(q)
    for a, b in zip(got, step(q)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_each_op_is_one_forward_and_one_backward_node():
    tt.utils.set_random_seed(0)
    model = tt.Sequential(digits_like_cnn())
    x = tnp.asarray(data((8, 8, 1), n=4)[0])

    def step(x):
        with tt.GradientTape() as tape:
            loss = tnp.sum(model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)

    text = tnp.jit(step).lower(x).as_text()
    assert text.count("= primitive:conv2d(") == 3
    assert text.count("= primitive:conv2d_grad(") == 3
    assert text.count("= primitive:max_pool2d(") == 2
    assert text.count("= primitive:normalization(") == 1
    # the first convolution's input gradient is never asked for: its LazyGrads compute the
    # kernel's and the bias's only, as eagerly
    assert text.count("primitive:conv2d_grad[0]") == 2
    assert text.count("primitive:conv2d_grad[1]") == 3


def test_batchnorm_moving_statistics_update_once_per_call():
    tt.utils.set_random_seed(0)
    bn_eager, bn_compiled = L.BatchNormalization(momentum=0.5), L.BatchNormalization(momentum=0.5)
    bn_eager.build((6, 3))
    bn_compiled.build((6, 3))
    step = tt.function(lambda x: bn_compiled(x, training=True), jit_compile=True)
    rng = np.random.default_rng(1)
    for k in range(4):
        x = tnp.asarray(rng.standard_normal((6, 3)).astype(np.float32) + k)
        a, b = bn_eager(x, training=True), step(x)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert step.experimental_get_tracing_count() == 1
    for u, v in zip(bn_eager.weights, bn_compiled.weights):
        assert np.asarray(u).tobytes() == np.asarray(v).tobytes()
    infer = tt.function(lambda x: bn_compiled(x, training=False), jit_compile=True)
    assert np.asarray(infer(x)).tobytes() == np.asarray(bn_eager(x, training=False)).tobytes()


def test_a_gradient_of_a_gradient_through_a_primitive_runs_eagerly():
    conv = L.Conv2D(2, 3)
    x = tnp.asarray(data((5, 5, 1), n=2)[0])
    conv(x)

    def penalty(x):
        with tt.GradientTape() as outer:
            outer.watch(x)
            with tt.GradientTape() as inner:
                inner.watch(x)
                y = tnp.sum(conv(x) ** 2)
            g = inner.gradient(y, x)
            s = tnp.sum(g * g)
        return outer.gradient(s, conv.kernel)

    with pytest.warns(tnp.extend.JitFallbackWarning, match="gradient of the gradient"):
        got = tt.function(penalty)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(penalty(x)), rtol=1e-5)


def stateful_models():
    return tt.Sequential([tt.Input((3, 4, 4, 2), batch_size=16),
                          L.ConvLSTM2D(3, 3, padding="same", stateful=True,
                                       return_sequences=True),
                          L.TimeDistributed(L.Flatten()),
                          L.LSTM(6, stateful=True, return_sequences=True),
                          L.GRU(4, stateful=True, dropout=0.1),
                          L.Dense(10)])


def test_stateful_rnns_compiled_carry_their_states_as_eagerly():
    x, y = data((3, 4, 4, 2))
    runs = {}
    for mode in ("eager", "compiled"):
        tt.utils.set_random_seed(0)
        model = stateful_models()
        model.compile(optimizer=tt.optimizers.Adam(1e-2),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=mode == "eager",
                      jit_compile=True if mode == "compiled" else None)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
            carried = [np.asarray(st).copy() for layer in model.layers
                       if getattr(layer, "stateful", False) for st in layer.states]
            model.reset_states()            # zeros, written into the arrays the step reads
            hist2 = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
            pred = np.asarray(model.predict(x, batch_size=16, verbose=0))
        runs[mode] = (model, hist, carried, hist2, pred)
    (me, he, ce, he2, pe), (mc, hc, cc, hc2, pc) = runs["eager"], runs["compiled"]
    assert mc.step_compilation["train"] == "compiled"
    assert he == hc and he2 == hc2            # 20 steps, 4 epochs
    assert len(ce) == 5 and all(np.any(a) for a in ce)      # [h, c], [h, c], [h]
    for a, b in zip(ce, cc):
        assert a.tobytes() == b.tobytes()
    for a, b in zip(me.weights, mc.weights):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), a.name
    assert pe.tobytes() == pc.tobytes()


def augmenting_cnn():
    P = L.experimental.preprocessing
    return [tt.Input((8, 8, 1)), P.RandomFlip(), P.RandomTranslation(0.2, 0.2),
            P.RandomRotation(0.1), P.RandomZoom(0.2), P.RandomContrast(0.3),
            P.RandomCrop(6, 6), L.Conv2D(4, 3, activation="relu"), L.Flatten(), L.Dense(10)]


def augmenting_after_a_layer():
    # the augmentation follows a trainable layer: the gradient must flow through it
    P = L.experimental.preprocessing
    return [tt.Input((8, 8, 1)), L.Conv2D(2, 1), P.RandomFlip(), P.RandomRotation(0.1),
            L.Flatten(), L.Dense(10)]


def augmenting_to_a_drawn_size():
    P = L.experimental.preprocessing
    return [tt.Input((8, 8, 1)), P.RandomHeight(0.2), L.GlobalAveragePooling2D(),
            L.Dense(10)]


def fit_from_same_start(layers, x, y, mode):
    tt.utils.set_random_seed(0)
    init = tt.Sequential(layers()).get_weights()
    tt.utils.set_random_seed(3)
    model = tt.Sequential(layers())
    model.set_weights(init)
    model.compile(optimizer=tt.optimizers.SGD(0.05),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=mode == "eager")
    hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    return hist["loss"], [w.copy() for w in model.get_weights()], model.step_compilation


@pytest.mark.parametrize("layers, compiles", [(augmenting_cnn, "compiled"),
                                              (augmenting_after_a_layer, "eager"),
                                              (augmenting_to_a_drawn_size, "eager")],
                         ids=["augment-inputs", "augment-after-a-layer", "drawn-size"])
def test_host_drawn_augmentation_in_compiled_fit_equals_eager(layers, compiles):
    # the image layers draw their parameters on the host in Python: compiled naively, the draw
    # would be made once, while tracing, and every batch augmented alike (a silently different
    # training). On the inputs, a training call is a host call of the program, made at every
    # step with the eager draws; where the images need a gradient or the output's size is
    # drawn, the step runs eagerly. Either way: the eager step's bits
    x, y = data((8, 8, 1), n=48)
    eager = fit_from_same_start(layers, x, y, "eager")
    default = fit_from_same_start(layers, x, y, "default")
    assert default[0] == eager[0]
    for a, b in zip(default[1], eager[1]):
        assert a.tobytes() == b.tobytes()
    assert default[2] == {"train": compiles}


def test_drawn_size_under_jit_compile_names_the_layer():
    x, y = data((8, 8, 1), n=32)
    model = tt.Sequential(augmenting_to_a_drawn_size())
    model.compile(optimizer="sgd", loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    with pytest.raises(Exception, match="RandomHeight .* draws random numbers on the host"):
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)


def test_backend_random_in_a_compiled_function_is_drawn_at_every_call():
    # tt.keras.backend's random functions in a tt.function: eager at every call (one
    # JitFallbackWarning), never one draw reused
    f = tt.function(lambda x: x + tt.backend.random_uniform((3,)))
    x = tnp.zeros(3, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = np.asarray(f(x)), np.asarray(f(x))
    assert not np.array_equal(a, b)


def test_a_host_called_augmentation_owns_its_result():
    # RandomCrop's training result is a view of its input; as a host call of a compiled
    # program it must be a copy (the program may reuse a dead input's buffer while the view
    # is still read)
    from tnp_train.layers.experimental.preprocessing import image
    P = L.experimental.preprocessing
    x = tnp.asarray(np.arange(2 * 8 * 8 * 1, dtype=np.float32).reshape(2, 8, 8, 1))
    for layer, hw in ((P.RandomCrop(6, 6), 6), (P.RandomCrop(8, 8), 8), (P.RandomFlip(), 8)):
        eager = type(layer).call(layer, x, training=True)
        tt.utils.set_random_seed(0)
        out = image._call_now(type(layer).call.eager_call, layer, x, True)
        assert not np.may_share_memory(out, np.asarray(x)), layer.name
        assert out.shape == (2, hw, hw, 1) and np.asarray(eager).shape == out.shape
