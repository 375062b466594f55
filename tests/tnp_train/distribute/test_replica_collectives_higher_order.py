"""Gradients of gradients through ``ReplicaContext.all_reduce`` and ``all_gather`` (two replicas
on ``cpu:0`` and the fake ``cpu:1``): the backward of each is itself a collective, recorded
when it is differentiated, so a second derivative has every term. Expected values are the
derivatives of the job's loss (the sum over replicas, TF's rule for collectives), worked out
by hand in NumPy below."""
import numpy as np

import tnp
import tnp_train as tt

D = tt.distribute
X = [np.array([1.0, 2.0]), np.array([2.0, 2.0])]


def _per_replica(fn):
    s = D.MirroredStrategy(["cpu:0", "cpu:1"])
    out = s.run(fn)
    return [np.asarray(t.to_device("cpu")) for t in s.experimental_local_results(out)]


def _second_order(loss_of):
    """Per replica: d/dx of sum(g ** 2), g the replica's gradient of ``loss_of(ctx, x)``."""
    def fn():
        ctx = D.get_replica_context()
        x = tnp.asarray(X[ctx.replica_id_in_sync_group])
        with tt.GradientTape() as outer:
            outer.watch(x)
            with tt.GradientTape() as inner:
                inner.watch(x)
                y = loss_of(ctx, x)
            g = inner.gradient(y, x)
            p = tnp.sum(g * g)
        return outer.gradient(p, x)
    return _per_replica(fn)


def test_second_order_through_all_reduce():
    # y_r = sum(S * x_r), S = x_0^2 + x_1^2 (all-reduced): g_r = S + 2 x_r X with X = x_0 + x_1;
    # P = sum_r |g_r|^2 gives dP/dx_k = 4 g_k X + 2 x_k G + H, G = 2 sum_r g_r,
    # H = 4 sum_r g_r x_r (the last term comes from the all-reduce inside the backward pass)
    got = _second_order(lambda ctx, x: tnp.sum(ctx.all_reduce("sum", x * x) * x))
    S, Xs = X[0] ** 2 + X[1] ** 2, X[0] + X[1]
    g = [S + 2 * x * Xs for x in X]
    G, H = 2 * (g[0] + g[1]), 4 * (g[0] * X[0] + g[1] * X[1])
    for k in range(2):
        np.testing.assert_allclose(got[k], 4 * g[k] * Xs + 2 * X[k] * G + H, rtol=1e-12)


def test_second_order_through_all_gather():
    # y_r = sum(G^2 * d_r), G the gathered rows: g_r = 2 x_r Dsum[r] with Dsum = d_0 + d_1, so
    # dP/dx_r = 8 x_r Dsum[r]^2 (the backward's all-reduce carries the other replica's d)
    d = [np.arange(4.0).reshape(2, 2), np.arange(4.0, 8.0).reshape(2, 2)]

    def loss(ctx, x):
        gathered = ctx.all_gather(tnp.reshape(x, (1, 2)), axis=0)
        return tnp.sum(gathered * gathered * tnp.asarray(d[ctx.replica_id_in_sync_group]))
    got = _second_order(loss)
    dsum = d[0] + d[1]
    for k in range(2):
        np.testing.assert_allclose(got[k], 8 * X[k] * dsum[k] ** 2, rtol=1e-12)
