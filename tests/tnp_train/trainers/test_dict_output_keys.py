"""A model whose outputs are a dict: losses, metrics, loss weights and targets keyed by the
dict's keys (as TF 2.4 takes them) or by the output layers' names; the numbers against NumPy,
the names against tf-keras 2.21 (``output_names`` ['dense_b', 'dense_a'] for outputs
{"y": dense_a, "x": dense_b}; history keys dense_a_loss, dense_b_loss, loss)."""
import numpy as np
import pytest

import tnp_train as tt

RNG = np.random.default_rng(3)
X = RNG.standard_normal((8, 3)).astype("float32")
TY = RNG.standard_normal((8, 2)).astype("float32")
TX = RNG.standard_normal((8, 1)).astype("float32")


def model():
    tt.utils.set_random_seed(0)
    inp = tt.Input((3,), name="inp")
    a = tt.layers.Dense(2, name="dense_a")(inp)
    b = tt.layers.Dense(1, name="dense_b")(inp)
    return tt.Model(inp, {"y": a, "x": b})


@pytest.mark.parametrize("by", ["keys", "layer names"])
def test_losses_metrics_and_targets_keyed_by_the_outputs_keys(by):
    m = model()
    k = {"x": "x", "y": "y"} if by == "keys" else {"x": "dense_b", "y": "dense_a"}
    m.compile(tt.optimizers.SGD(0.0), loss={k["x"]: "mse", k["y"]: "mae"},
              loss_weights={k["x"]: 2.0, k["y"]: 0.5}, metrics={k["x"]: ["mae"]})
    assert list(m.output_names) == ["dense_b", "dense_a"]
    h = m.fit(X, {k["x"]: TX, k["y"]: TY}, batch_size=8, epochs=1, verbose=0)
    assert sorted(h.history) == ["dense_a_loss", "dense_b_loss", "dense_b_mae", "loss"]
    out = m.predict(X, verbose=0)
    px, py = np.asarray(out["x"]), np.asarray(out["y"])
    mse = np.mean((px - TX) ** 2)
    mae_y = np.mean(np.abs(py - TY))
    np.testing.assert_allclose(h.history["dense_b_loss"][0], mse, rtol=1e-5)
    np.testing.assert_allclose(h.history["dense_a_loss"][0], mae_y, rtol=1e-5)
    np.testing.assert_allclose(h.history["loss"][0], 2.0 * mse + 0.5 * mae_y, rtol=1e-5)
    np.testing.assert_allclose(h.history["dense_b_mae"][0], np.mean(np.abs(px - TX)), rtol=1e-5)


def test_an_unknown_key_is_still_refused():
    m = model()
    with pytest.raises(ValueError, match="Unknown entries in loss dictionary: \\['z'\\]"):
        m.compile("sgd", loss={"x": "mse", "z": "mse"})
