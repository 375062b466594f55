"""tt.function and the compiled fit step: results equal the eager ones, effects happen at
every call, and what cannot be compiled runs eagerly (or, with jit_compile=True, fails)."""
import warnings

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import JitFallbackWarning, RetraceWarning, TraceError, UnsupportedTrace


def _mlp(seed=0):
    init = [tt.initializers.GlorotUniform(seed=seed + i) for i in range(3)]
    return tt.Sequential([tt.Input((8,)),
                          tt.layers.Dense(16, activation="relu", kernel_initializer=init[0]),
                          tt.layers.Dense(16, activation="relu", kernel_initializer=init[1]),
                          tt.layers.Dense(4, kernel_initializer=init[2])])


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 8)).astype(np.float32), rng.integers(0, 4, n)


def _tape_step(model, opt, loss_fn):
    def step(x, y):
        with tt.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_compiled_tape_step_trains_as_the_eager_one(opt_name):
    X, Y = _data()
    runs = []
    for compiled in (False, True):
        model = _mlp()
        opt = getattr(tt.optimizers, opt_name)(0.01)
        step = _tape_step(model, opt, tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        f = tt.function(step, jit_compile=True) if compiled else step
        losses = [float(f(tnp.asarray(X[i:i + 16]), tnp.asarray(Y[i:i + 16])))
                  for _ in range(5) for i in range(0, 64, 16)]
        runs.append((losses, [w.copy() for w in model.get_weights()], int(opt.iterations)))
        if compiled:
            assert f.experimental_get_tracing_count() == 1
    (l0, w0, it0), (l1, w1, it1) = runs
    assert it0 == it1 == 20              # the optimizer stepped at every call, not per trace
    # the compiled step computes the eager step's bits (the same formulas, in the same order)
    np.testing.assert_array_equal(l1, l0)
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(b, a)
    assert not np.allclose(l0[0], l0[-1])  # it trained


def test_variable_writes_happen_at_every_call_with_that_calls_values():
    v = tt.Variable(tnp.zeros(3))

    @tt.function(jit_compile=True)
    def add(x):
        v.assign_add(x * 2.0)
        return v * 1.0

    out = [np.asarray(add(tnp.full(3, float(k)))) for k in (1, 2, 3)]
    assert add.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(np.asarray(v), [12.0, 12.0, 12.0])
    np.testing.assert_array_equal(out[0], [2.0] * 3)
    np.testing.assert_array_equal(out[2], [12.0] * 3)


def test_a_value_python_needs_runs_eagerly_with_a_warning_or_fails_with_jit_compile():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return -x

    # autograph=False: Python's if needs the value (AutoGraph's conversion: test_control_flow)
    g = tt.function(f, autograph=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(np.asarray(g(tnp.ones(3))), [2.0] * 3)
        np.testing.assert_array_equal(np.asarray(g(-tnp.ones(3))), [1.0] * 3)
    msgs = [str(m.message) for m in w if issubclass(m.category, JitFallbackWarning)]
    assert len(msgs) == 1 and "if x.sum() > 0:" in msgs[0]
    with pytest.raises(TraceError, match="bool"):
        tt.function(f, jit_compile=True, autograph=False)(tnp.ones(3))


def test_backend_code_is_never_run_on_trace_time_values():
    # a library op computing on backend arrays: refused while tracing, so a compiled function
    # never repeats the value it had while tracing
    from tnp.extend import backend_array, wrap

    state = tnp.ones(2)

    def peek(x):
        return x + wrap(backend_array(state) * 1.0)

    f = tt.function(peek, jit_compile=True)
    with pytest.raises(UnsupportedTrace, match="backend_array"):
        f(tnp.zeros(2))
    g = tt.function(peek)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        assert np.asarray(g(tnp.zeros(2))).tolist() == [1.0, 1.0]
        state[...] = 5.0
        assert np.asarray(g(tnp.zeros(2))).tolist() == [5.0, 5.0]


def test_input_signature_and_retracing_warning():
    k = tt.function(lambda x: x * 2, input_signature=[tt.TensorSpec([None, 3], "float32")])
    assert np.asarray(k(tnp.ones((2, 3), dtype="float32"))).sum() == 12
    with pytest.raises(ValueError, match="input_signature"):
        k(tnp.ones((2, 4), dtype="float32"))
    r = tt.function(lambda x, s: x * s)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(6):
            r(tnp.ones(3), float(i))
    assert [m for m in w if issubclass(m.category, RetraceWarning)]
    assert r.experimental_get_tracing_count() == 6


def test_run_functions_eagerly():
    calls = []

    @tt.function
    def f(x):
        calls.append(1)
        return x + 1

    f(tnp.ones(2))
    f(tnp.ones(2))
    assert len(calls) == 1                 # Python ran once, while tracing
    tt.config.run_functions_eagerly(True)
    try:
        assert tt.config.functions_run_eagerly()
        f(tnp.ones(2))
        assert len(calls) == 2
    finally:
        tt.config.run_functions_eagerly(False)


def test_experimental_compile_and_jit_compile_must_agree():
    with pytest.raises(ValueError, match="jit_compile"):
        tt.function(lambda x: x, experimental_compile=True, jit_compile=False)


@pytest.mark.parametrize("metrics", [[], ["accuracy"]])
def test_compiled_fit_equals_eager_fit(metrics):
    X, Y = _data(96)
    out = {}
    for eager in (True, False):
        model = _mlp()
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                      tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=metrics, run_eagerly=eager, jit_compile=not eager or None)
        hist = model.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0).history
        out[eager] = (hist, model.get_weights(), model.evaluate(X, Y, verbose=0),
                      model.predict(X[:7], verbose=0), model.step_compilation)
    (h_e, w_e, ev_e, p_e, _), (h_c, w_c, ev_c, p_c, how) = out[True], out[False]
    assert how["train"] == "compiled"
    assert h_c == h_e                      # the eager step's bits, epoch after epoch
    for a, b in zip(w_e, w_c):
        np.testing.assert_array_equal(b, a)
    np.testing.assert_allclose(ev_c, ev_e, rtol=1e-5)
    np.testing.assert_allclose(p_c, p_e, rtol=1e-5, atol=1e-6)


def test_compiled_fit_runs_every_batch_hook_a_callback_overrides_with_eager_values():
    # the batch hooks a callback overrides (old names included) run at every batch, before
    # and after that batch's compiled step, and see what they see with the eager step
    X, Y = _data(64)

    class Watch(tt.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_batch_begin(self, batch, logs=None):
            self.seen.append(("begin", batch, int(self.model.optimizer.iterations),
                              self.model.get_weights()[0].tobytes()))

        def on_train_batch_end(self, batch, logs=None):
            self.seen.append(("end", batch, int(self.model.optimizer.iterations),
                              logs["loss"]))

    out = {}
    for eager in (True, False):
        model = _mlp()
        model.compile(tt.optimizers.SGD(0.05, momentum=0.9),
                      tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=eager)
        watch = Watch()
        model.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[watch])
        out[eager] = watch.seen
        if not eager:
            assert model.step_compilation["train"] == "compiled"
    assert [e[:3] for e in out[False]] == [
        (k, b, 4 * ep + b + (k == "end")) for ep in range(2) for b in range(4)
        for k in ("begin", "end")]
    assert out[False] == out[True]


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_compiled_fit_refuses_labels_out_of_range_as_the_eager_step(dtype):
    X = np.ones((8, 4), "float32")
    Y = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype)
    m = tt.Sequential([tt.Input((4,)), tt.layers.Dense(3)])
    m.compile("sgd", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(X, Y, batch_size=4, epochs=2, verbose=0)
    assert m.step_compilation["train"] == "compiled"
    weights = m.get_weights()
    for bad in (3, 200) + ((-1,) if dtype != "uint8" else ()):
        Yb = Y.copy()
        Yb[5] = bad
        with pytest.raises(ValueError, match=f"label {bad} is out of range for 3 classes"):
            m.fit(X, Yb, batch_size=4, epochs=1, verbose=0, shuffle=False)
        # the first batch trained; the second raised before its update
        m.set_weights(weights)
    assert m.step_compilation["train"] == "compiled"


def test_fit_with_jit_compile_true_fails_on_what_cannot_be_compiled():
    X, Y = _data(32)

    class Peek(tt.Model):
        def __init__(self):
            super().__init__()
            self.d = tt.layers.Dense(4)

        def train_step(self, data):
            x, y = data
            if float(tnp.sum(x)) > 1e9:       # Python needs a value: not compilable
                return {}
            return super().train_step(data)

        def call(self, x):
            return self.d(x)

    m = Peek()
    m.compile("sgd", tt.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    with pytest.raises(TraceError, match="float"):
        m.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="run_eagerly"):
        m.compile("sgd", "mse", run_eagerly=True, jit_compile=True)


@pytest.mark.parametrize("make_opt", [lambda: tt.optimizers.SGD(0.05, momentum=0.9),
                                      lambda: tt.optimizers.SGD(0.05, momentum=0.9,
                                                                nesterov=True),
                                      lambda: tt.optimizers.Adam(0.01),
                                      lambda: tt.optimizers.Adam(0.01, amsgrad=True)])
def test_the_optimizer_step_is_compiled_and_equals_the_eager_one(make_opt):
    X, Y = _data()
    runs = []
    for compiled in (False, True):
        model = _mlp()
        opt = make_opt()
        step = _tape_step(model, opt, tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        f = tt.function(step, jit_compile=True) if compiled else step
        x, y = tnp.asarray(X[:16]), tnp.asarray(Y[:16])
        step(x, y)                        # builds the slots, eagerly
        for i in range(0, 64, 16):
            f(tnp.asarray(X[i:i + 16]), tnp.asarray(Y[i:i + 16]))
        if compiled:
            text = f.experimental_get_compiler_ir(x, y)()
            assert "_apply_gradients_now" not in text   # no eager optimizer step inside
            assert "iadd" in text or "add" in text
        # eager steps between compiled ones: each sees the count the others left
        step(x, y)
        f(x, y)
        step(x, y)
        runs.append(([w.copy() for w in model.get_weights()], int(opt.iterations)))
    (w0, it0), (w1, it1) = runs
    assert it0 == it1 == 8
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(b, a)


def test_a_learning_rate_set_between_compiled_calls_is_used():
    X, Y = _data()
    model = _mlp()
    opt = tt.optimizers.SGD(0.05)
    step = _tape_step(model, opt, tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    f = tt.function(step, jit_compile=True)
    x, y = tnp.asarray(X[:16]), tnp.asarray(Y[:16])
    step(x, y)
    f(x, y)
    opt.learning_rate = 0.0               # what LearningRateScheduler does
    before = [w.copy() for w in model.get_weights()]
    f(x, y)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert int(opt.iterations) == 3


def test_per_example_gradients_by_vectorized_map_equal_a_loop():
    model = _mlp()
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)

    def per_example(xy):
        x, y = xy
        with tt.GradientTape() as tape:
            loss = loss_fn(y[None], model(x[None], training=True))
        return tape.gradient(loss, model.trainable_variables)

    X, Y = _data(12)
    xs, ys = tnp.asarray(X), tnp.asarray(Y)
    got = tt.vectorized_map(per_example, (xs, ys), fallback_to_while_loop=False)
    loop = [per_example((xs[i], ys[i])) for i in range(12)]
    for k, g in enumerate(got):
        want = np.stack([np.asarray(l[k]) for l in loop])
        assert g.shape == want.shape
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)


def test_vectorized_map_without_fallback_refuses_what_it_cannot_vectorize():
    with pytest.raises(ValueError, match="fallback_to_while_loop"):
        tt.vectorized_map(lambda x: tnp.sort(x), tnp.ones((3, 4)), fallback_to_while_loop=False)
    out = tt.vectorized_map(lambda x: x * 2.0, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(out), np.arange(6.0).reshape(3, 2) * 2)


@pytest.mark.parametrize("pfor", [True, False])
def test_jacobians_with_and_without_pfor_agree(pfor):
    rng = np.random.default_rng(3)
    x = tt.Variable(tnp.asarray(rng.standard_normal((4, 3)).astype(np.float32)))
    w = tt.Variable(tnp.asarray(rng.standard_normal((3, 5)).astype(np.float32)))
    layer = tt.layers.Dense(6, activation="relu")
    with tt.GradientTape(persistent=True) as tape:
        y = tnp.tanh(x @ w) * 2.0
        z = layer(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # vectorized without a per-row fallback
        jx, jw = tape.jacobian(y, [x, w], experimental_use_pfor=pfor)
        bj = tape.batch_jacobian(z, x, experimental_use_pfor=pfor)
    # numerical reference for d y / d x
    eps = 1e-3
    xa = np.asarray(x).astype(np.float64)
    wa = np.asarray(w).astype(np.float64)
    num = np.zeros((4, 5, 4, 3))
    for i in range(4):
        for j in range(3):
            d = np.zeros_like(xa)
            d[i, j] = eps
            num[:, :, i, j] = (np.tanh((xa + d) @ wa) * 2 - np.tanh((xa - d) @ wa) * 2) / (2 * eps)
    np.testing.assert_allclose(np.asarray(jx), num, rtol=1e-2, atol=1e-3)
    assert jw.shape == (4, 5, 3, 5) and bj.shape == (4, 6, 3)
    k = np.asarray(layer.kernel)
    pre = np.asarray(x) @ k + np.asarray(layer.bias)
    want = (pre > 0)[:, :, None] * k.T[None]
    np.testing.assert_allclose(np.asarray(bj), want, rtol=1e-6)


def test_steps_per_execution_calls_the_batch_callbacks_per_chunk_as_tf_keras():
    # what tf_keras 2.21 calls on 10 batches with steps_per_execution=3:
    # [('b', 0), ('e', 2), ('b', 3), ('e', 5), ('b', 6), ('e', 8), ('b', 9), ('e', 9)]
    events = []

    class Record(tt.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            events.append(("b", batch))

        def on_train_batch_end(self, batch, logs=None):
            events.append(("e", batch))

    x = np.ones((20, 2), "float32")
    y = np.ones((20, 1), "float32")
    for jit in (None, True):
        events.clear()
        m = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1)])
        m.compile("sgd", "mse", steps_per_execution=3, jit_compile=jit)
        h = m.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[Record()], shuffle=False)
        assert events == [("b", 0), ("e", 2), ("b", 3), ("e", 5), ("b", 6), ("e", 8),
                          ("b", 9), ("e", 9)]
        assert int(m.optimizer.iterations) == 10 and len(h.history["loss"]) == 1
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="steps_per_execution"):
            m.compile("sgd", "mse", steps_per_execution=bad)


@pytest.mark.parametrize("seed", [None, 5])
def test_dropout_and_noise_draw_anew_at_every_compiled_call(seed):
    # the masks come from tnp_train's generators on the host: a compiled step draws them at
    # every call (tnp.extend.host_call), from the same stream as the eager step
    X, Y = _data(48)
    Yr = (X @ np.ones((8, 1), np.float32)).astype(np.float32)
    out = {}
    for jit in (None, True):
        tt.utils.set_random_seed(7)
        init = [tt.initializers.GlorotUniform(seed=i) for i in range(2)]
        m = tt.Sequential([tt.Input((8,)),
                           tt.layers.Dense(16, activation="tanh", kernel_initializer=init[0]),
                           tt.layers.Dropout(0.3, seed=seed), tt.layers.GaussianNoise(0.2),
                           tt.layers.Dense(1, kernel_initializer=init[1])])
        m.compile(tt.optimizers.SGD(0.05, momentum=0.9), "mse", jit_compile=jit)
        h = m.fit(X, Yr, batch_size=8, epochs=3, shuffle=True, verbose=0).history
        out[jit] = (h["loss"], m.get_weights(), m.step_compilation)
    assert out[True][2] == {"train": "compiled"}
    assert out[True][0] == out[None][0]
    for a, b in zip(out[None][1], out[True][1]):
        np.testing.assert_array_equal(a, b)

    tt.utils.set_random_seed(3)
    drop = tt.layers.Dropout(0.5, seed=seed)
    f = tt.function(lambda x: drop(x, training=True), jit_compile=True)
    a, b = np.asarray(f(tnp.ones((4, 6)))), np.asarray(f(tnp.ones((4, 6))))
    assert not np.array_equal(a, b)          # a new mask at every call, not one per trace


def test_host_call_runs_at_every_call_and_never_while_tracing():
    from tnp.extend import host_call

    calls = []

    def draw(n):
        calls.append(n)
        return np.full(n, float(len(calls)))

    f = tnp.jit(lambda x: x + host_call(draw, 3, shape=(3,), dtype=np.float64))
    first = np.asarray(f(tnp.zeros(3)))
    second = np.asarray(f(tnp.zeros(3)))
    assert calls == [3, 3]                   # none while tracing
    assert first.tolist() == [1.0] * 3 and second.tolist() == [2.0] * 3
