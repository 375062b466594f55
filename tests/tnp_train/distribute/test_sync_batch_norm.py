"""SyncBatchNormalization / BatchNormalization(synchronized=True): without a strategy equal to
BatchNormalization(fused=False) bit for bit (TF 2.4's SyncBatchNormalization passes
fused=False); across two workers run as threads (collective.ThreadGroup, as
tests/tnp_train/distribute/test_strategy.py) equal to a hand-written NumPy batch norm of the
whole global batch, with the gradients checked by central finite differences of that NumPy
reference (float64). The mpiexec job is tests/distributed/test_multiworker_sync_bn.py."""

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.layers.normalization import BatchNormalization
from tnp_train.layers.sync_batch_normalization import SyncBatchNormalization

from thread_workers import run_workers

EPS = 1e-3


def ref_bn(x, gamma, beta, axes):
    """NumPy batch norm with the biased batch statistics over ``axes``."""
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * gamma + beta, mu, var


def _run(layer, x, dy):
    x = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tnp.sum(y * tnp.asarray(dy))
    g = tape.gradient(loss, [x] + layer.trainable_weights)
    return [np.asarray(y)] + [np.asarray(a) for a in g]


@pytest.mark.parametrize("shape,axis", [((6, 4), -1), ((3, 2, 2, 5), -1), ((3, 5, 2, 2), 1),
                                        ((4, 3, 5), [1, 2])])
def test_without_a_strategy_it_is_batch_normalization_bit_for_bit(shape, axis):
    rng = np.random.default_rng(0)
    kw = dict(axis=axis, momentum=0.8, gamma_initializer="random_normal",
              beta_initializer="random_normal")
    ref = BatchNormalization(fused=False, **kw)
    for sync in (SyncBatchNormalization(**kw), BatchNormalization(synchronized=True, **kw)):
        ref = BatchNormalization(fused=False, **kw)
        ref.build(shape)
        sync.build(shape)
        sync.set_weights(ref.get_weights())
        for step in range(3):
            x = rng.normal(2.0, 3.0, size=shape).astype("float32")
            dy = rng.normal(size=shape).astype("float32")
            for a, b in zip(_run(sync, x, dy), _run(ref, x, dy)):
                np.testing.assert_array_equal(a, b)
            for a, b in zip(sync.get_weights(), ref.get_weights()):
                np.testing.assert_array_equal(a, b)
        x = rng.normal(size=shape).astype("float32")
        np.testing.assert_array_equal(sync(x, training=False), ref(x, training=False))


def test_sync_never_uses_the_fused_bessel_correction():
    # TF 2.4: SyncBatchNormalization passes fused=False, so a 4-D NHWC batch updates the
    # moving variance with the biased variance (BatchNormalization's fused path: n/(n-1))
    x = np.random.default_rng(1).normal(size=(2, 2, 2, 3)).astype("float32")
    layer = SyncBatchNormalization(momentum=0.0)
    layer(x, training=True)
    np.testing.assert_allclose(layer.moving_variance.numpy(), x.var(axis=(0, 1, 2)), rtol=1e-5)
    with pytest.raises(ValueError, match="fused=True"):
        BatchNormalization(synchronized=True, fused=True)


def test_config_and_namespace():
    layer = tt.layers.experimental.SyncBatchNormalization(axis=1, momentum=0.9, epsilon=1e-4)
    cfg = layer.get_config()
    assert "fused" not in cfg and "synchronized" not in cfg
    assert cfg["axis"] == 1 and cfg["momentum"] == 0.9 and cfg["epsilon"] == 1e-4
    back = tt.layers.deserialize(tt.layers.serialize(layer))
    assert type(back) is SyncBatchNormalization and back.get_config() == cfg
    flag = BatchNormalization(synchronized=True)
    assert flag.get_config()["synchronized"] is True
    assert BatchNormalization.from_config(flag.get_config()).synchronized
    assert "synchronized" not in BatchNormalization().get_config()


def _two_workers(x, dy, gamma, beta, axis, make, collect_ops=None):
    """Each of 2 threaded workers normalizes its half of ``x`` (split on axis 0); returns per
    rank ``(y, dx, dgamma, dbeta, moving_mean, moving_variance)``."""
    half = x.shape[0] // 2
    parts = [slice(0, half), slice(half, None)]

    def fn(s, rank):
        with s.scope():
            layer = make(axis=axis, momentum=0.5, dtype=x.dtype.name)
            layer.build(x.shape)
            layer.gamma.assign(gamma)
            layer.beta.assign(beta)
        comm = s.extended._comm
        if collect_ops is not None:
            orig = comm.allreduce

            def counted(buf, op="sum"):
                collect_ops.append((rank, buf.shape, buf.dtype))
                return orig(buf, op)
            comm.allreduce = counted
        out = s.run(lambda: _run(layer, x[parts[rank]], dy[parts[rank]]))
        return out + [layer.moving_mean.numpy(), layer.moving_variance.numpy()]

    return run_workers(2, fn)


@pytest.mark.parametrize("shape,axis", [((6, 3), -1), ((4, 2, 3, 2), 1)])
def test_two_workers_equal_numpy_on_the_global_batch_and_finite_differences(shape, axis):
    rng = np.random.default_rng(2)
    x = rng.normal(1.5, 2.0, size=shape)
    dy = rng.normal(size=shape)
    ax = axis % len(shape)
    pshape = (shape[ax],)
    bshape = tuple(s if i == ax else 1 for i, s in enumerate(shape))
    gamma, beta = rng.normal(size=pshape), rng.normal(size=pshape)
    ops = []
    res = _two_workers(x, dy, gamma, beta, axis, SyncBatchNormalization, ops)
    # one fused all-reduce forward (2C+1 numbers), one backward (2C): C channels
    c = shape[ax]
    assert sorted((r, s) for r, s, _ in ops) == [(0, (2 * c,)), (0, (2 * c + 1,)),
                                                  (1, (2 * c,)), (1, (2 * c + 1,))]
    stat = tuple(i for i in range(len(shape)) if i != ax)
    y_ref, mu, var = ref_bn(x, gamma.reshape(bshape), beta.reshape(bshape), stat)
    y = np.concatenate([res[0][0], res[1][0]])
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)

    def loss(xx, g, b):
        return float((ref_bn(xx, g.reshape(bshape), b.reshape(bshape), stat)[0] * dy).sum())

    def fd(f, v, h=1e-6):
        out = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            p, m = v.copy(), v.copy()
            p[i] += h
            m[i] -= h
            out[i] = (f(p) - f(m)) / (2 * h)
        return out

    dx = np.concatenate([res[0][1], res[1][1]])
    np.testing.assert_allclose(dx, fd(lambda v: loss(v, gamma, beta), x), rtol=1e-6, atol=1e-8)
    # per-replica dgamma/dbeta: their SUM (the optimizer's all-reduce) is the global gradient
    np.testing.assert_allclose(res[0][2] + res[1][2], fd(lambda v: loss(x, v, beta), gamma),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res[0][3] + res[1][3], fd(lambda v: loss(x, gamma, v), beta),
                               rtol=1e-6, atol=1e-8)
    assert not np.allclose(res[0][2], res[1][2])           # really per replica
    # moving statistics from the global batch, the same on both workers
    for r in range(2):
        np.testing.assert_allclose(res[r][4], 0.5 * mu.reshape(-1), rtol=1e-12)
        np.testing.assert_allclose(res[r][5], 0.5 + 0.5 * var.reshape(-1), rtol=1e-12)


def test_synchronized_flag_under_two_workers_and_float32_large_mean():
    # |mean| / std = 1000 in float32: E[x^2] - E[x]^2 in float32 (TF 2.4's formula) loses the
    # variance entirely; the float64 combination of local moments keeps it
    rng = np.random.default_rng(3)
    x = (1000.0 + rng.normal(size=(8, 4))).astype("float32")
    dy = rng.normal(size=(8, 4)).astype("float32")
    ones, zeros = np.ones(4, "float32"), np.zeros(4, "float32")
    res = _two_workers(x, dy, ones, zeros, -1,
                       lambda **kw: BatchNormalization(synchronized=True, **kw))
    x64 = x.astype(np.float64)
    y_ref, mu, var = ref_bn(x64, 1.0, 0.0, (0,))
    y = np.concatenate([res[0][0], res[1][0]])
    np.testing.assert_allclose(y, y_ref, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(res[0][5], 0.5 + 0.5 * var.reshape(-1), rtol=1e-4)


def test_cross_replica_context_and_one_worker_use_local_statistics():
    # TF: with no replica context (in a strategy's scope, outside run) the statistics are local
    x = np.random.default_rng(4).normal(size=(4, 3)).astype("float32")
    s = tt.distribute.MultiWorkerMirroredStrategy()
    with s.scope():
        layer = SyncBatchNormalization(momentum=0.0)
        y = layer(x, training=True)
        y1 = s.run(lambda: layer(x, training=True))
    ref, _, _ = ref_bn(x.astype(np.float64), 1.0, 0.0, (0,))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y1, y)
