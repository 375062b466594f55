"""Distribution on GPUs: NCCL between the GPUs of one process (``collective.nccl``) and
MirroredStrategy over several GPUs. Run only where CuPy finds CUDA devices (tests/conftest.py
skips ``gpu`` tests elsewhere); the two-GPU checks also need a second GPU. The reference is the
same collective on the host (NumPy) and one-device training."""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    cupy = pytest.importorskip("cupy")
    from tnp_train.distribute.collective.nccl import nccl_available
    if not nccl_available():
        pytest.skip("CuPy has no NCCL")
    return cupy


def n_gpus(cp):
    return cp.cuda.runtime.getDeviceCount()


def run_members(group, fn):
    out, errors = [None] * group.size, []

    def work(i):
        try:
            with __import__("cupy").cuda.Device(group.device_ids[i]):
                out[i] = fn(group.member(i), i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(group.size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return out


def test_nccl_group_reduces_and_broadcasts_like_numpy(cp):
    from tnp_train.distribute.collective.nccl import NcclGroup
    ids = list(range(min(2, n_gpus(cp))))
    group = NcclGroup(ids, timeout_seconds=20)
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(3, 5)).astype("float32") for _ in ids]

    def fn(comm, i):
        x = cp.asarray(xs[i])
        return (cp.asnumpy(comm.allreduce(x, "sum")), cp.asnumpy(comm.allreduce(x, "mean")),
                cp.asnumpy(comm.allreduce(x, "max")), cp.asnumpy(comm.broadcast(x, root=0)),
                cp.asnumpy(comm.allreduce(cp.asarray([i + 1, 2], dtype="int64"), "sum")))
    for s, m, mx, b, ints in run_members(group, fn):
        np.testing.assert_allclose(s, sum(xs), rtol=1e-6)
        np.testing.assert_allclose(m, sum(xs) / len(xs), rtol=1e-6)
        np.testing.assert_array_equal(mx, np.maximum.reduce(xs))
        np.testing.assert_array_equal(b, xs[0])
        assert ints.tolist() == [sum(i + 1 for i in ids), 2 * len(ids)]


def test_two_gpus_train_as_one(cp):
    if n_gpus(cp) < 2:
        pytest.skip("needs two GPUs")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 5)).astype("float32")
    y = rng.integers(0, 3, 48)

    def make():
        return tt.Sequential([tt.Input((5,)), tt.layers.Dense(8, activation="relu"),
                              tt.layers.Dense(3)])
    tt.utils.set_random_seed(0)
    init = [w.numpy() for w in make().weights]

    def fit(strategy):
        with strategy.scope():
            m = make()
            m.compile(tt.optimizers.SGD(0.1, momentum=0.9),
                      loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        m.set_weights(init)
        h = m.fit(x, y, batch_size=12, epochs=2, shuffle=False, verbose=0)
        return h.history, [w.numpy() for w in m.weights]
    ref_h, ref_w = fit(tt.distribute.OneDeviceStrategy("gpu:0"))
    got_h, got_w = fit(tt.distribute.MirroredStrategy(["gpu:0", "gpu:1"]))
    for k in ref_h:
        np.testing.assert_allclose(got_h[k], ref_h[k], rtol=1e-5)
    for a, b in zip(got_w, ref_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert tnp.device("gpu:1") in tnp.__array_namespace_info__().devices()
