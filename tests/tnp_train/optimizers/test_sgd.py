"""SGD (momentum, Nesterov, clipping), apply_gradients and minimize against Keras's formulas in NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


def test_sgd_momentum_follows_keras_formula():
    w0 = rng(3).standard_normal(4)
    grads = [rng(10 + i).standard_normal(4) for i in range(3)]
    v = tt.Variable(w0)
    opt = tt.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    w, m = w0.copy(), np.zeros(4)
    for g in grads:
        opt.apply_gradients([(tnp.asarray(g), v)])
        m = 0.9 * m - 0.1 * g
        w = w + m
    np.testing.assert_allclose(v.numpy(), w, rtol=1e-12)
    assert int(opt.iterations) == 3


def test_sgd_plain_nesterov_and_clipping():
    v = tt.Variable([1.0, 2.0])
    tt.optimizers.SGD(0.5).apply_gradients([(tnp.asarray([1.0, -1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 2.5])
    v = tt.Variable([0.0])
    opt = tt.optimizers.SGD(0.1, momentum=0.5, nesterov=True)
    opt.apply_gradients([(tnp.asarray([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5 * -0.1 - 0.1])    # m = -0.1; w += 0.5 m - 0.1 g
    v = tt.Variable([0.0, 0.0])
    tt.optimizers.SGD(1.0, clipnorm=1.0).apply_gradients([(tnp.asarray([3.0, 4.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.6, -0.8])
    v = tt.Variable([0.0, 0.0])
    tt.optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(tnp.asarray([3.0, -0.2]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.5, 0.2])


def test_apply_gradients_skips_none_and_rejects_all_none():
    a, b = tt.Variable([1.0]), tt.Variable([1.0])
    opt = tt.optimizers.SGD(1.0)
    opt.apply_gradients([(None, a), (tnp.asarray([1.0]), b)])
    assert a.numpy()[0] == 1.0 and b.numpy()[0] == 0.0
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients([(None, a)])


def test_minimize_with_a_callable_and_with_a_tape():
    v = tt.Variable([3.0])
    opt = tt.optimizers.SGD(0.25)
    opt.minimize(lambda: tnp.sum(v * v), [v])
    np.testing.assert_allclose(v.numpy(), [1.5])           # 3 - 0.25 * 6
    with tt.GradientTape() as tape:
        loss = tnp.sum(v * v)
    opt.minimize(loss, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [0.75])
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(tnp.sum(v), [v])
