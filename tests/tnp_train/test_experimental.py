"""tt.experimental (TF 2.4's tf.keras.experimental) against tf-keras 2.21
(tests/fixtures/experimental.npz, made by make_experimental_fixture.py): LinearModel and
WideDeepModel trained by fit (one optimizer; two), TF's linear_cosine_decay; PeepholeLSTMCell
against its formula in NumPy."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[1] / "fixtures" / "experimental.npz")
X1, X2, Y = FIX["x1"].astype("float32"), FIX["x2"].astype("float32"), FIX["y"]


def test_linear_model_fit_equals_tf_keras():
    model = tt.experimental.LinearModel(units=1)
    model.compile(tt.optimizers.SGD(0.05), "mse")
    model.fit([X1, X2], Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    kernels = [l.kernel.numpy() for l in model.dense_layers]
    for got, i in zip(kernels + [model.bias.numpy()], range(3)):
        np.testing.assert_allclose(got, FIX[f"linear_w{i}"], rtol=1e-5, atol=1e-6)


def test_linear_model_dict_inputs_sorted_and_checked():
    model = tt.experimental.LinearModel(units=2, use_bias=False, kernel_initializer="ones")
    out = model({"b": tnp.ones((4, 2)), "a": tnp.ones((4, 3))})
    assert [l.name for l in model.dense_layers] == ["a", "b"]
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 2), 5.0))
    with pytest.raises(ValueError, match="does not match the structure"):
        model({"a": tnp.ones((4, 3)), "c": tnp.ones((4, 2))})


def test_wide_deep_model_two_optimizers_equals_tf_keras():
    lin = tt.experimental.LinearModel(units=1)
    dnn = tt.Sequential([tt.layers.Dense(4, activation="relu"), tt.layers.Dense(1)])
    wd = tt.experimental.WideDeepModel(lin, dnn)
    wd([X1[:1], X2[:1]])
    params = [lin.dense_layers[0].kernel, lin.bias] + dnn.trainable_variables
    for v, i in zip(params, range(6)):
        v.assign(tnp.asarray(FIX[f"wd_init{i}"]))
    wd.compile([tt.optimizers.SGD(0.05), tt.optimizers.Adam(0.01)], "mse")
    assert isinstance(wd.optimizer, list) and len(wd.optimizer) == 2
    wd.fit([X1, X2], Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for v, i in zip(params, range(6)):
        np.testing.assert_allclose(v.numpy(), FIX[f"wd_w{i}"], rtol=1e-5, atol=1e-6,
                                   err_msg=str(i))


def test_wide_deep_model_one_optimizer_and_activation():
    lin = tt.experimental.LinearModel(units=1, kernel_initializer="ones")
    dnn = tt.Sequential([tt.layers.Dense(1, kernel_initializer="zeros",
                                         bias_initializer="ones")])
    wd = tt.experimental.WideDeepModel(lin, dnn, activation="sigmoid")
    x = np.ones((2, 3), "float32")
    want = 1 / (1 + np.exp(-(3.0 + 1.0)))
    np.testing.assert_allclose(np.asarray(wd(x)), np.full((2, 1), want), rtol=1e-6)
    wd.compile("sgd", "binary_crossentropy")
    wd.fit(x, np.ones((2, 1), "float32"), verbose=0)


def test_linear_cosine_decay_equals_tf():
    sched = tt.experimental.LinearCosineDecay(0.1, 100, num_periods=1.5, alpha=0.1, beta=0.01)
    got = [float(sched(s)) for s in FIX["steps"]]
    np.testing.assert_allclose(got, FIX["lcd"], rtol=1e-6)
    again = type(sched).from_config(sched.get_config())
    assert float(again(37)) == float(sched(37))


def test_noisy_linear_cosine_decay_is_seeded_and_centered():
    sched = tt.experimental.NoisyLinearCosineDecay(0.1, 100, initial_variance=0.01)
    tt.utils.set_random_seed(1)
    a = [float(sched(s)) for s in range(50)]
    tt.utils.set_random_seed(1)
    b = [float(sched(s)) for s in range(50)]
    assert a == b
    plain = tt.experimental.LinearCosineDecay(0.1, 100)
    diffs = np.array(a) - np.array([float(plain(s)) for s in range(50)])
    assert 0 < np.abs(diffs).max() < 0.1 and abs(diffs.mean()) < 0.01


def test_cosine_aliases():
    assert tt.experimental.CosineDecay is tt.optimizers.schedules.CosineDecay
    assert tt.experimental.CosineDecayRestarts is tt.optimizers.schedules.CosineDecayRestarts


def _sig(z):
    return 1 / (1 + np.exp(-z))


def test_peephole_lstm_cell_equals_its_formula():
    rng = np.random.default_rng(0)
    cell = tt.experimental.PeepholeLSTMCell(3, dtype="float64")
    layer = tt.layers.RNN(cell, return_sequences=True, dtype="float64")
    x = rng.standard_normal((2, 4, 5))
    layer(tnp.asarray(x))
    for v in cell.trainable_variables:
        v.assign(tnp.asarray(rng.standard_normal(tuple(v.shape)) * 0.5))
    k, rk, b = cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy()
    wi, wf, wo = (getattr(cell, f"{g}_gate_peephole_weights").numpy()
                  for g in ("input", "forget", "output"))
    h = c = np.zeros((2, 3))
    want = []
    for t in range(4):
        z = x[:, t] @ k + h @ rk + b
        i = _sig(z[:, :3] + wi * c)
        f = _sig(z[:, 3:6] + wf * c)
        c = f * c + i * np.tanh(z[:, 6:9])
        o = _sig(z[:, 9:] + wo * c)
        h = o * np.tanh(c)
        want.append(h)
    xt = tnp.asarray(x)
    with GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tnp.sum(out)
    np.testing.assert_allclose(np.asarray(out), np.stack(want, 1), rtol=1e-12, atol=1e-12)
    names = sorted(v.name.split("/")[-1].split(":")[0] for v in cell.trainable_variables)
    assert "input_gate_peephole_weights" in names and "output_gate_peephole_weights" in names
    g = tape.gradient(loss, xt)
    assert g.shape == xt.shape and np.all(np.isfinite(np.asarray(g)))
