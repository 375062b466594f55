"""A backward pass that fails while it hands gradients over to a strategy's bucketed all-reduce
leaves nothing behind: the next step hands every gradient over again (it used to keep the
failed step's gradients in the bucket and reduce them: a stale update), or, where a bucket's
reduction had already started, the next step fails loudly. Two replicas on threads, each with
its own copy of the model and an ``AllReduceGradients`` over a thread group, against one
process trained on the same global batches."""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute import collective as coll
from tnp_train.distribute.cross_device_ops import AllReduceGradients

GLOBAL = 8


def _model():
    tt.utils.set_random_seed(3)
    return tt.Sequential([tt.Input((4,)), tt.layers.Dense(5, activation="tanh", name="d0"),
                          tt.layers.Dense(2, name="d1")])


def _batches(n):
    rng = np.random.default_rng(7)
    return [(rng.normal(size=(GLOBAL, 4)).astype("float32"),
             rng.normal(size=(GLOBAL, 2)).astype("float32")) for _ in range(n)]


def _step(model, opt, x, y, fail=False):
    d0, d1 = model.layers

    @tt.custom_gradient
    def probe(h):
        def grad(dh):
            if fail:
                raise FloatingPointError("backward failed")
            return dh
        return h + 0.0, grad

    def loss():
        return tnp.sum((d1(probe(d0(tnp.asarray(x)))) - tnp.asarray(y)) ** 2) / GLOBAL
    opt.minimize(loss, model.trainable_variables)


def _sgd(aggregator=None, loss_scale=False):
    opt = tt.optimizers.SGD(0.1, momentum=0.9, gradient_aggregator=aggregator)
    return tt.mixed_precision.LossScaleOptimizer(opt, initial_scale=2 ** 8) if loss_scale \
        else opt


def _replicas(batches, fail_at, bucket_bytes=None, loss_scale=False):
    """Train two replicas on halves of each batch; step ``fail_at`` fails in the backward pass
    (after the last layer's gradients were handed over) on both. Returns each replica's
    weights, or the exception that ended it."""
    group = coll.ThreadGroup(2)
    models = [_model(), _model()]
    results = {}

    def body(i):
        comm = group.member(i)
        agg = AllReduceGradients(comm, 2, bucket_bytes=bucket_bytes)
        opt = _sgd(agg, loss_scale)
        try:
            for s, (x, y) in enumerate(batches):
                lo, hi = i * GLOBAL // 2, (i + 1) * GLOBAL // 2
                try:
                    _step(models[i], opt, x[lo:hi], y[lo:hi], fail=s == fail_at)
                except FloatingPointError:
                    assert s == fail_at
            results[i] = models[i].get_weights()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.parametrize("loss_scale", [False, True], ids=["sgd", "loss-scale"])
def test_after_a_failed_backward_the_next_steps_reduce_their_own_gradients(loss_scale):
    batches = _batches(4)
    got = _replicas(batches, fail_at=1, loss_scale=loss_scale)
    ref = _model()
    opt = _sgd(loss_scale=loss_scale)
    for s, (x, y) in enumerate(batches):
        if s != 1:                     # the failed step applies nothing
            _step(ref, opt, x, y)
    for i in range(2):
        assert not isinstance(got[i], BaseException), got[i]
        for a, b in zip(got[i], ref.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_reduction_left_in_flight_makes_the_next_step_fail_loudly():
    # buckets of one gradient each: the last layer's start reducing before the failure
    got = _replicas(_batches(3), fail_at=1, bucket_bytes=8)
    for i in range(2):
        assert isinstance(got[i], RuntimeError), got[i]
        assert "the previous step was not finish()ed" in str(got[i])
