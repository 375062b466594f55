"""tt.nn.compute_average_loss and scale_regularization_loss against hand-written NumPy (the
formulas of tf.nn's, TF 2.4: sum(loss * weight) / global_batch_size, sum(reg) / replicas)."""
import importlib
import sys

import numpy as np
import pytest

import tnp
import tnp_train as tt

rng = np.random.default_rng(0)
LOSS = rng.random(6).astype(np.float32)


class _Strategy:
    def __init__(self, n):
        self.num_replicas_in_sync = n


@pytest.fixture
def replicas(monkeypatch):
    """Pretend a strategy of ``n`` replicas is current (in replica context unless told)."""
    ds = importlib.import_module("tnp_train.distribute")

    def set_(n, cross_replica=False):
        monkeypatch.setattr(ds, "get_strategy", lambda: _Strategy(n), raising=False)
        monkeypatch.setattr(ds, "has_strategy", lambda: True, raising=False)
        monkeypatch.setattr(ds, "in_cross_replica_context", lambda: cross_replica,
                            raising=False)
    return set_


def test_average_over_the_batch_without_strategy():
    out = tt.nn.compute_average_loss(tnp.asarray(LOSS))
    assert out.dtype == np.float32
    assert float(out) == np.float32(LOSS.sum(dtype=np.float32) / np.float32(6))
    out = tt.nn.compute_average_loss(LOSS, global_batch_size=16)
    assert out.dtype == np.float32
    assert float(out) == np.float32(LOSS.sum(dtype=np.float32) / np.float32(16))


def test_default_global_batch_is_per_replica_batch_times_replicas(replicas):
    replicas(4)
    out = tt.nn.compute_average_loss(tnp.asarray(LOSS))
    assert float(out) == np.float32(LOSS.sum(dtype=np.float32) / np.float32(24))
    # an explicit global batch size wins over the strategy's count
    assert float(tt.nn.compute_average_loss(LOSS, global_batch_size=6)) == \
        np.float32(LOSS.sum(dtype=np.float32) / np.float32(6))


def test_cross_replica_context_is_an_error_as_tf(replicas):
    replicas(2, cross_replica=True)
    with pytest.raises(RuntimeError, match="compute_average_loss` in cross replica context"):
        tt.nn.compute_average_loss(LOSS)
    # TF checks the context only when it needs the replica count
    assert float(tt.nn.compute_average_loss(LOSS, global_batch_size=3)) == \
        np.float32(LOSS.sum(dtype=np.float32) / np.float32(3))
    with pytest.raises(RuntimeError, match="scale_regularization_loss` in cross replica"):
        tt.nn.scale_regularization_loss(1.0)


def test_without_the_distribute_package_there_is_one_replica(monkeypatch):
    monkeypatch.setitem(sys.modules, "tnp_train.distribute", None)
    assert float(tt.nn.compute_average_loss(LOSS)) == \
        np.float32(LOSS.sum(dtype=np.float32) / np.float32(6))


@pytest.mark.parametrize("weight, expected", [
    (np.array([1, 0, 2, 0, 1, 1]), np.array([1, 0, 2, 0, 1, 1], np.float32)),
    (np.array([[1], [0], [2], [0], [1], [1]]), np.array([1, 0, 2, 0, 1, 1], np.float32)),
    (0.5, np.full(6, 0.5, np.float32)),
])
def test_sample_weight_shapes(weight, expected):
    out = tt.nn.compute_average_loss(LOSS, sample_weight=weight, global_batch_size=8)
    ref = (LOSS * expected).sum(dtype=np.float32) / np.float32(8)
    assert out.dtype == np.float32 and float(out) == pytest.approx(float(ref), rel=1e-7)


def test_per_example_weights_of_per_timestep_losses():
    loss = rng.random((3, 4)).astype(np.float32)
    w = np.array([1.0, 0.0, 3.0], np.float32)
    out = tt.nn.compute_average_loss(loss, sample_weight=w)  # weights expanded to (3, 1)
    ref = (loss * w[:, None]).sum(dtype=np.float32) / np.float32(3)
    assert float(out) == pytest.approx(float(ref), rel=1e-6)


def test_float16_weighted_product_is_rounded_once_as_tf():
    loss = (rng.random(5) * 3).astype(np.float16)
    w = np.array([0.1, 0.3, 0.7, 1.9, 2.3])
    out = tt.nn.compute_average_loss(loss, sample_weight=w, global_batch_size=5)
    prod = (loss.astype(np.float32) * w.astype(np.float32)).astype(np.float16)
    ref = np.sum(prod) / np.float16(5)
    assert out.dtype == np.float16 and float(out) == float(ref)


def test_float64_stays_float64_and_numpy_batch_sizes_do_not_promote():
    loss64 = rng.random(4)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    out = tt.nn.compute_average_loss(loss64, sample_weight=w, global_batch_size=np.int64(4))
    assert out.dtype == np.float64 and float(out) == (loss64 * w).sum() / 4
    out = tt.nn.compute_average_loss(LOSS, global_batch_size=np.int64(4))
    assert out.dtype == np.float32
    out = tt.nn.compute_average_loss(LOSS, global_batch_size=tnp.asarray(np.int64(4)))
    assert out.dtype == np.float32 and float(out) == np.float32(LOSS.sum(dtype=np.float32) / 4)


def test_gradient_through_the_average():
    v = tt.Variable(np.array([1.0, -2.0, 3.0], np.float32))
    w = np.array([1.0, 0.5, 2.0], np.float32)
    with tt.GradientTape() as tape:
        loss = tt.nn.compute_average_loss(v * v, sample_weight=w, global_batch_size=6)
    g = tape.gradient(loss, v)
    # d/dv sum(w * v**2) / 6 = 2 * w * v / 6
    np.testing.assert_allclose(np.asarray(g), 2 * w * np.array([1.0, -2.0, 3.0]) / 6, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="rank >= 1"):
        tt.nn.compute_average_loss(np.float32(1.0))
    with pytest.raises(TypeError, match="must be floating point, got dtype int64"):
        tt.nn.compute_average_loss(np.arange(3))
    with pytest.raises(ValueError, match=r"sample_weight of shape \(6, 2\) does not fit"):
        tt.nn.compute_average_loss(LOSS, sample_weight=np.ones((6, 2)))
    with pytest.raises(ValueError, match=r"sample_weight of shape \(4,\) does not broadcast"):
        tt.nn.compute_average_loss(LOSS, sample_weight=np.ones(4))
    with pytest.raises(ValueError, match=r"\(1, 3\) does not broadcast .* \(4, 1\)"):
        # TF would multiply to (4, 3) and average 12 products: refused
        tt.nn.compute_average_loss(np.ones((4, 1), np.float32), sample_weight=np.ones((1, 3)))
    with pytest.raises(ValueError, match="global_batch_size must be > 0"):
        tt.nn.compute_average_loss(LOSS, global_batch_size=0)
    with pytest.raises(TypeError, match="global_batch_size must be a number"):
        tt.nn.compute_average_loss(LOSS, global_batch_size="8")
    with pytest.raises(TypeError, match="sample_weight must be numeric"):
        tt.nn.compute_average_loss(LOSS, sample_weight=np.array(["a"] * 6))


def test_scale_regularization_loss(replicas):
    parts = [tnp.asarray(np.float32(0.25)), tnp.asarray(np.float32(1.5))]
    out = tt.nn.scale_regularization_loss(parts)
    assert out.dtype == np.float32 and float(out) == 1.75
    assert float(tt.nn.scale_regularization_loss(tnp.asarray([1.0, 2.0, 3.0]))) == 6.0
    empty = tt.nn.scale_regularization_loss([])
    assert empty.dtype == np.float32 and float(empty) == 0.0
    replicas(4)
    assert float(tt.nn.scale_regularization_loss(parts)) == np.float32(1.75) / np.float32(4)
    v = tt.Variable(np.float32(3.0))
    with tt.GradientTape() as tape:
        reg = tt.nn.scale_regularization_loss([v * v, 2 * v])
    assert float(tape.gradient(reg, v)) == (2 * 3.0 + 2) / 4
