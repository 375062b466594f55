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


def _sgd_steps(compiled, dtype, momentum, nesterov, shapes, steps=4):
    """Weights and slots after ``steps`` GradientTape steps, eagerly or in one compiled step."""
    variables = [tt.Variable(rng(i).standard_normal(s).astype(dtype)) for i, s in
                 enumerate(shapes)]
    opt = tt.optimizers.SGD(0.05, momentum=momentum, nesterov=nesterov)
    data = [tnp.asarray(rng(50 + k).standard_normal(shapes[0][-1:]).astype(dtype))
            for k in range(steps)]

    def step(x):
        with tt.GradientTape() as tape:
            loss = tnp.sum(tnp.tanh(variables[0] * x)) + sum(
                tnp.sum(v * v) * 0.25 for v in variables[1:])
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    run = tt.function(step, jit_compile=True) if compiled else step
    step(data[0])                    # the first step builds the slots, eagerly
    for x in data[1:]:
        run(x)
    if compiled:
        nodes = run._jit.lower(data[1]).unfused_nodes
        assert sum(n.startswith("effect:sgd_many") for n in nodes) == 1, nodes
    slots = [opt.slots_for(v)["momentum"].numpy() for v in variables] if momentum else []
    return [v.numpy() for v in variables] + slots + [int(opt.iterations)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_a_compiled_update_of_all_variables_is_the_eager_update_bit_for_bit(dtype, momentum,
                                                                             nesterov):
    # one node updates every variable, large (the eager fused kernel) and small (the eager
    # NumPy path) alike, and gives the eager step's bits
    shapes = [(80, 64), (64,), (3, 5), (1,)]
    eager = _sgd_steps(False, dtype, momentum, nesterov, shapes)
    compiled = _sgd_steps(True, dtype, momentum, nesterov, shapes)
    assert len(eager) == len(compiled)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(b, a)


def test_the_update_kernel_refuses_what_the_eager_kernels_refuse():
    from tnp_train.optimizers import kernels

    shapes = [(70, 64), (5,)]
    ws = [rng(i).standard_normal(s).astype("float32") for i, s in enumerate(shapes)]
    gs = [np.ones(s, "float32") for s in shapes]
    ms = [np.zeros(s, "float32") for s in shapes]
    lr = np.float64(0.1)
    ro = [w.copy() for w in ws]
    ro[1].flags.writeable = False
    before = ro[0].copy()
    with pytest.raises(ValueError, match="read-only"):
        kernels.sgd_many(ro, gs, [m.copy() for m in ms], lr, 0.9, False, checked=True)
    # the variable before the read-only one was updated as eagerly (per variable)
    want = before.copy()
    kernels.sgd(want, gs[0], np.zeros(shapes[0], "float32"), 0.1, 0.9, False, 0.0)
    np.testing.assert_array_equal(ro[0], want)
    # Fortran-ordered variables and transposed gradients: per variable, the same numbers
    wf = [np.asfortranarray(w.copy()) for w in ws]
    gt = [np.ascontiguousarray(g.T).T for g in gs]
    mf = [m.copy() for m in ms]
    kernels.sgd_many(wf, gt, mf, lr, 0.9, True, checked=True)
    for w, g, m, got, gotm in zip(ws, gs, ms, wf, mf):
        w, m = w.copy(), m.copy()
        kernels.sgd(w, g, m, 0.1, 0.9, True, 0.0)
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(gotm, m)


def test_a_compiled_update_of_more_variables_than_one_kernel_call_takes():
    shapes = [(70, 64), (3,), (2, 2, 2)] * 4      # 12 variables: two calls of the kernel
    eager = _sgd_steps(False, "float32", 0.9, False, shapes, steps=3)
    compiled = _sgd_steps(True, "float32", 0.9, False, shapes, steps=3)
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(b, a)


def test_a_variable_with_its_own_update_is_not_written_by_the_one_node():
    class Own(tt.Variable):
        def update(self, fn, *args, constrain=True):
            return super().update(fn, *args, constrain=constrain)

    v, w = Own(np.ones(3, "float32")), tt.Variable(np.ones(3, "float32"))
    opt = tt.optimizers.SGD(0.1, momentum=0.9)

    def step(x):
        with tt.GradientTape() as tape:
            loss = tnp.sum(v * x) + tnp.sum(w * w)
        opt.apply_gradients(zip(tape.gradient(loss, [v, w]), [v, w]))

    x = tnp.asarray(np.arange(3.0, dtype="float32"))
    step(x)
    f = tt.function(step, jit_compile=True)
    f(x)
    assert not any(n.startswith("effect:sgd_many") for n in f._jit.lower(x).unfused_nodes)
