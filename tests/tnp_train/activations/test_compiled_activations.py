"""The one-node activations written on backend arrays (sigmoid, softplus, softmax,
log_softmax; gelu as a primitive of the program) inside compiled steps: they trace as the same
operations in tnp, so a classifier
with a sigmoid or softmax output compiles (it ran eagerly before) and its compiled ``fit``,
``evaluate`` and ``predict`` give the eager ones' bits, float16 activations included."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers


def run(mode, head, loss, y, policy):
    tt.mixed_precision.set_global_policy(policy)
    try:
        tt.utils.set_random_seed(1)
        hidden_dtype = None if policy == "float32" else policy
        model = tt.Sequential([
            tt.Input((10,)), L.Dense(8, activation="softplus"),
            L.Dense(6, activation="sigmoid"),
            # the head in the policy's compute dtype (float16 under mixed_float16)
            L.Dense(4 if head != "sigmoid" else 1, activation=head, dtype=hidden_dtype),
            L.Activation("linear", dtype="float32")])
        model.compile(tt.optimizers.Adam(1e-2), loss=loss, metrics=["accuracy"],
                      run_eagerly=mode == "eager", jit_compile=True if mode == "jit" else None)
        x = np.random.default_rng(0).normal(size=(48, 10)).astype(np.float32)
        hist = model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False).history
        results = model.evaluate(x, y, batch_size=16, verbose=0)
        pred = np.asarray(model.predict(x, batch_size=16, verbose=0))
        return hist, results, pred, model.get_weights(), model.step_compilation
    finally:
        tt.mixed_precision.set_global_policy("float32")


LABELS = np.random.default_rng(1).integers(0, 4, 48)
CASES = {
    "softmax": (tt.losses.SparseCategoricalCrossentropy(), LABELS),
    "log_softmax": (tt.losses.SparseCategoricalCrossentropy(from_logits=True), LABELS),
    "sigmoid": (tt.losses.BinaryCrossentropy(), (LABELS % 2).astype(np.float32)),
}


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
@pytest.mark.parametrize("head", sorted(CASES))
def test_compiled_classifier_heads_equal_eager(head, policy):
    loss, y = CASES[head]
    eager = run("eager", head, loss, y, policy)
    compiled = run("jit", head, loss, y, policy)    # jit_compile=True: compiled or an error
    assert compiled[4] == {"train": "compiled", "test": "compiled", "predict": "compiled"}
    assert compiled[0] == eager[0]
    assert compiled[1] == eager[1]
    assert compiled[2].tobytes() == eager[2].tobytes()
    for a, b in zip(compiled[3], eager[3]):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("fn", ["sigmoid", "softplus", "softmax", "log_softmax", "gelu"])
def test_traced_activation_and_gradient_equal_eager(fn):
    f = getattr(tt.activations, fn)
    x = tnp.asarray(np.random.default_rng(2).normal(size=(5, 7)).astype(np.float32) * 4)
    w = tnp.asarray(np.random.default_rng(3).normal(size=(5, 7)).astype(np.float32))

    def value_and_grad(x):
        with tt.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
            loss = tnp.sum(y * w)
        return y, tape.gradient(loss, x)

    y0, g0 = value_and_grad(x)
    compiled = tt.function(value_and_grad, jit_compile=True)
    for _ in range(2):
        y1, g1 = compiled(x)
        assert np.asarray(y1).tobytes() == np.asarray(y0).tobytes()
        assert np.asarray(g1).tobytes() == np.asarray(g0).tobytes()
