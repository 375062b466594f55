"""The two seams a distribution strategy plugs into: ``tt.variable_creator_scope`` (every variable
tnp_train makes is made through ``tt.Variable``, which asks the active creators, in TF's order)
and ``Variable.update`` (every write into a variable goes through the variable, the optimizers'
fused kernels included); and the optimizer's host copies of its step count and learning rate."""
import ast
import os
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp.extend import backend_array, set_backend_array, version
from tnp_train.autodiff import variables as variables_mod
from tnp_train.optimizers import kernels

L = tt.layers
BIG = (64, 80)      # the fused Numba kernel
SMALL = (3, 4)      # the in-place NumPy path
assert BIG[0] * BIG[1] >= kernels.FUSED_MIN_SIZE > SMALL[0] * SMALL[1]


class Recorder:
    """A creator that makes the variable as asked and records it (thread-safe: list.append)."""

    def __init__(self):
        self.made = []
        self.kwargs = []

    def __call__(self, next_creator, **kwargs):
        self.kwargs.append(kwargs)
        v = next_creator(**kwargs)
        self.made.append(v)
        return v


def _ids(vs):
    return [id(v) for v in vs]


def _assert_made_exactly(made, expected):
    assert len(made) == len(expected), (len(made), len(expected))
    assert sorted(_ids(made)) == sorted(_ids(expected))


# ---------------------------------------------------------------- every variable, counted
def _every_layer_family_model():
    img = tt.Input((6, 6, 1))
    tok = tt.Input((5,), dtype="int64")
    x = L.Flatten()(L.BatchNormalization()(L.Conv2D(2, 3)(img)))
    x = L.Dense(3)(x)
    e = L.Embedding(10, 4)(tok)
    a = L.LayerNormalization()(L.MultiHeadAttention(num_heads=2, key_dim=2)(e, e))
    h = L.LSTM(3)(a)
    out = L.Dense(1, activation="sigmoid")(L.Concatenate()([x, h]))
    return tt.Model([img, tok], out)


def _data():
    r = np.random.default_rng(0)
    x = [r.standard_normal((4, 6, 6, 1)).astype("float32"), r.integers(0, 10, (4, 5))]
    return x, r.uniform(size=(4, 1)).astype("float32")


def test_every_variable_of_a_fit_is_made_through_the_creators():
    rec = Recorder()
    x, y = _data()
    with tt.variable_creator_scope(rec):
        model = _every_layer_family_model()
        model.compile(optimizer=tt.optimizers.Adam(1e-3), loss="mse",
                      metrics=["mae", tt.metrics.AUC()])
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    # counted independently: the model's weights (BatchNorm statistics included), the
    # optimizer's iterations, learning rate and slots, and every metric's state (the loss
    # tracker included)
    metric_vars = [v for m in model.metrics for v in m.variables]
    expected = model.weights + model.optimizer.variables() + metric_vars
    assert len(model.weights) == 24 and len(metric_vars) == 8     # "loss", "mae" 2 each, AUC 4
    assert len(model.optimizer.variables()) == 2 + 2 * len(model.trainable_weights)
    _assert_made_exactly(rec.made, expected)


def test_loss_scale_optimizer_state_is_made_through_the_creators():
    rec = Recorder()
    r = np.random.default_rng(1)
    x, y = r.standard_normal((8, 3)).astype("float32"), r.standard_normal((8, 2)).astype("float32")
    old = tt.mixed_precision.global_policy()
    tt.mixed_precision.set_global_policy("mixed_float16")
    try:
        with tt.variable_creator_scope(rec):
            model = tt.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(2, dtype="float32")])
            opt = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.01, momentum=0.9))
            model.compile(optimizer=opt, loss="mse", metrics=["mae"])
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    finally:
        tt.mixed_precision.set_global_policy(old)
    expected = (model.weights + opt.inner_optimizer.variables() + [opt._loss_scale, opt._good_steps]
                + [v for m in model.metrics for v in m.variables])
    assert len(opt.inner_optimizer.variables()) == 2 + 4    # iterations, lr, 4 momentum slots
    _assert_made_exactly(rec.made, expected)


def test_callback_and_checkpoint_state_is_made_through_the_creators(tmp_path):
    rec = Recorder()
    with tt.variable_creator_scope(rec):
        v = tt.Variable([1.0])
        ckpt = tt.train.Checkpoint(v=v)
        ckpt.save(str(tmp_path / "ckpt"))
        cb = tt.callbacks.BackupAndRestore(str(tmp_path / "backup"))
        model = tt.Sequential([L.Dense(1, input_shape=(2,))])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((2, 2), "float32"), np.ones((2, 1), "float32"), epochs=1, verbose=0,
                  callbacks=[cb])
    names = [m.name for m in rec.made]
    assert "save_counter" in names and ckpt.save_counter is rec.made[1]
    assert {"backup/epoch", "backup/step"} <= set(names)


def test_without_a_scope_no_creator_is_called():
    rec = Recorder()
    with tt.variable_creator_scope(rec):
        pass
    x, y = _data()
    model = _every_layer_family_model()
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    tt.Variable(1.0)
    assert rec.made == [] and rec.kwargs == []
    assert type(model.weights[0]) is tt.Variable


# ---------------------------------------------------------------- the creator protocol
def test_creator_gets_every_keyword_argument_with_defaults():
    rec = Recorder()
    init = lambda: np.arange(3.0)     # noqa: E731  (a callable initial value reaches the creator)
    with tt.variable_creator_scope(rec):
        v = tt.Variable(init, False, "v", "float32", aggregation="sum")
    (kw,) = rec.kwargs
    assert set(kw) == {"initial_value", "trainable", "name", "dtype", "aggregation",
                       "synchronization", "constraint", "shape", "device"}
    assert kw["initial_value"] is init and kw["trainable"] is False and kw["name"] == "v"
    assert kw["dtype"] == "float32" and kw["aggregation"] == "sum"
    assert kw["synchronization"] is tt.VariableSynchronization.AUTO and kw["constraint"] is None
    assert type(v) is tt.Variable and v.dtype == np.float32 and not v.trainable
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


def test_nested_scopes_compose_in_tf_order():
    calls = []

    def make(tag):
        def creator(next_creator, **kwargs):
            calls.append(f"{tag}>")
            v = next_creator(**kwargs)
            calls.append(f"<{tag}")
            return v
        return creator

    with tt.variable_creator_scope(make("outer")):
        with tt.variable_creator_scope(make("inner")):
            tt.Variable(1.0)
        assert calls == ["inner>", "outer>", "<outer", "<inner"]   # innermost first
        calls.clear()
        tt.Variable(1.0)
        assert calls == ["outer>", "<outer"]
    calls.clear()
    tt.Variable(1.0)
    assert calls == []


def test_a_creator_that_changes_trainable_and_name_is_honoured():
    def freeze(next_creator, **kwargs):
        kwargs["trainable"] = False
        kwargs["name"] = "frozen/" + kwargs["name"]
        return next_creator(**kwargs)

    with tt.variable_creator_scope(freeze):
        layer = L.Dense(2)
        layer(tnp.ones((1, 3)))
    assert [w.name for w in layer.weights] == [f"frozen/{layer.name}/kernel",
                                              f"frozen/{layer.name}/bias"]
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2


class Tagged(tt.Variable):
    __slots__ = ("tag",)


def test_a_creator_may_return_a_subclass_which_it_constructs_directly():
    seen = []

    def tagged(next_creator, **kwargs):
        seen.append(kwargs["name"])
        v = Tagged(**kwargs)          # a subclass is constructed as asked: no creator recursion
        v.tag = "mine"
        return v

    with tt.variable_creator_scope(tagged):
        v = tt.Variable([1.0, 2.0], name="w")
        layer = L.Dense(1)
        layer(tnp.ones((1, 2)))
    assert type(v) is Tagged and isinstance(v, tt.Variable) and v.tag == "mine"
    assert seen == ["w", f"{layer.name}/kernel", f"{layer.name}/bias"]
    assert all(type(w) is Tagged for w in layer.weights)
    assert layer._weight_attrs["kernel"] is layer.kernel      # tracked for autocast
    assert type(Tagged([1.0])) is Tagged                       # outside a scope, too


def test_a_creator_that_returns_no_variable_is_a_type_error():
    with tt.variable_creator_scope(lambda next_creator, **kwargs: None):
        with pytest.raises(TypeError, match="returned NoneType, not a tt.Variable.*'v'"):
            tt.Variable(1.0, name="v")
    with pytest.raises(TypeError, match="must be callable"):
        with tt.variable_creator_scope(3):
            pass
    with tt.variable_creator_scope(Recorder()):
        with pytest.raises(TypeError, match="Variable: .*bogus"):
            tt.Variable(1.0, bogus=2)


def test_scopes_are_per_thread_and_a_stack_can_be_handed_to_a_thread():
    rec = Recorder()
    out = {}

    def plain():
        out["plain"] = tt.Variable(1.0)

    def handed(stack):
        with variables_mod.creator_stack(stack):
            out["handed"] = tt.Variable(2.0)

    with tt.variable_creator_scope(rec):
        t = threading.Thread(target=plain)
        t.start()
        t.join()
        t = threading.Thread(target=handed, args=(variables_mod.current_creators(),))
        t.start()
        t.join()
    assert rec.made == [out["handed"]]


def test_scopes_must_nest():
    a, b = tt.variable_creator_scope(Recorder()), tt.variable_creator_scope(Recorder())
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="out of order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert variables_mod.current_creators() == ()


# ---------------------------------------------------------------- Variable.update
def test_update_runs_fn_once_bumps_written_variables_and_applies_the_constraint_once():
    calls = []
    v = tt.Variable([1.0, -2.0], constraint=lambda x: (calls.append(1), tnp.abs(x))[1])
    slot = tt.Variable([0.0, 0.0])
    g = tnp.asarray([0.5, 0.5])
    before = (version(v), version(slot), version(g))
    seen = []

    def fn(w, s, grad, k):
        seen.append((type(w), type(s), type(grad), k))
        s += grad
        w -= k * grad

    assert v.update(fn, slot, g, 4.0) is v
    assert seen == [(np.ndarray, np.ndarray, np.ndarray, 4.0)]   # backend arrays, others as given
    np.testing.assert_array_equal(v.numpy(), [1.0, 4.0])        # |[-1, -4]|
    np.testing.assert_array_equal(slot.numpy(), [0.5, 0.5])
    assert calls == [1]
    assert (version(v), version(slot), version(g)) == (before[0] + 1, before[1] + 1, before[2])
    v.update(lambda w: w.__setitem__(..., -7.0), constrain=False)
    np.testing.assert_array_equal(v.numpy(), [-7.0, -7.0])
    assert calls == [1]


def test_assign_goes_through_update_and_a_variable_value_is_only_read():
    log = []

    class Logged(tt.Variable):
        def update(self, fn, *args, constrain=True):
            log.append(fn.__name__)
            return super().update(fn, *args, constrain=constrain)

    v = Logged([1.0, 2.0])
    src = tt.Variable([5.0, 6.0])
    vsrc = version(src)
    v.assign(src)
    v.assign_add([1.0, 1.0])
    v.assign_sub(tnp.asarray([0.5, 0.5]))
    assert log == ["_assign_into", "_add_into", "_sub_into"]
    np.testing.assert_array_equal(v.numpy(), [5.5, 6.5])
    assert version(src) == vsrc
    with pytest.raises(ValueError, match="assign.*shape \\(3,\\).*shape \\(2,\\)"):
        v.assign([1.0, 2.0, 3.0])
    assert log == ["_assign_into", "_add_into", "_sub_into"]   # refused before any write


# ---------------------------------------------------------------- writes through the variable
class TwoCopy(tt.Variable):
    """A variable with a second copy that every write also updates (a two-replica mirror)."""
    __slots__ = ("twin",)

    def update(self, fn, *args, constrain=True):
        super().update(fn, *args, constrain=constrain)
        self.twin.update(fn, *[a.twin if isinstance(a, TwoCopy) else a for a in args],
                         constrain=constrain)
        return self


def two_copies(next_creator, **kwargs):
    v = TwoCopy(**kwargs)
    v.twin = next_creator(**{**kwargs, "initial_value": v.value(), "name": f"{v.name}/twin"})
    return v


OPTIMIZERS = [
    ("SGD", dict(learning_rate=0.1, momentum=0.9)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(learning_rate=0.1)),
    ("Adam", dict(learning_rate=0.01, amsgrad=True)),
    ("Adam", dict(learning_rate=0.01)),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1)),
    ("RMSprop", dict(learning_rate=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(learning_rate=0.1)),
    ("Adadelta", dict(learning_rate=1.0)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Nadam", dict(learning_rate=0.01)),
    ("Lion", dict(learning_rate=0.01, weight_decay=0.05)),
]


def _three_steps(name, hyper, w0s, grads, creator=None):
    scope = tt.variable_creator_scope(creator) if creator else None
    if scope:
        scope.__enter__()
    try:
        vs = [tt.Variable(w0, name=f"w{i}",
                          constraint=(lambda x: tnp.clip(x, -1.0, 1.0)) if i == 2 else None)
              for i, w0 in enumerate(w0s)]
        opt = getattr(tt.optimizers, name)(**hyper)
        for step in grads:
            opt.apply_gradients(zip([tnp.asarray(g) for g in step], vs))
    finally:
        if scope:
            scope.__exit__(None, None, None)
    return vs, opt


@pytest.mark.parametrize("name,hyper", OPTIMIZERS,
                         ids=[f"{n}-{'-'.join(map(str, h.values()))}" for n, h in OPTIMIZERS])
def test_every_optimizer_writes_through_the_variable(name, hyper):
    r = np.random.default_rng(7)
    shapes = [BIG, SMALL, SMALL, ()]     # fused kernel, NumPy path, constrained, scalar
    w0s = [r.standard_normal(s) for s in shapes]
    w0s[1] = w0s[1].astype(np.float32)
    grads = [[r.standard_normal(s).astype(w.dtype) for s, w in zip(shapes, w0s)]
             for _ in range(3)]
    plain, popt = _three_steps(name, hyper, w0s, grads)
    mirrored, mopt = _three_steps(name, hyper, w0s, grads, creator=two_copies)
    mine = mopt.variables() + mirrored
    assert all(type(v) is TwoCopy for v in mine)       # iterations, lr, state and slots too
    for v in mine:
        np.testing.assert_array_equal(v.numpy(), v.twin.numpy(), err_msg=v.name)
    for p, m in zip(popt.variables() + plain, mine):
        assert p.name == m.name and p.dtype == m.dtype
        np.testing.assert_array_equal(p.numpy(), m.numpy(), err_msg=m.name)
    assert int(mopt.iterations.twin) == 3
    assert np.abs(mirrored[2].numpy()).max() <= 1.0   # the constraint ran on both copies
    for w0, v in zip(w0s, mirrored):
        assert not np.array_equal(w0, v.numpy())


def test_a_subclass_optimizer_and_the_loss_scale_state_write_through_the_variable():
    class Plain(tt.optimizers.Optimizer):      # non-fused weight decay, then assign_sub
        def __init__(self, **kw):
            super().__init__("Plain", **kw)

        def update_step(self, gradient, variable, learning_rate):
            variable.assign_sub(learning_rate * gradient)

    g = np.array([0.5, -0.25])
    with tt.variable_creator_scope(two_copies):
        v = tt.Variable([1.0, 2.0], constraint=lambda x: x * 0.5)
        Plain(learning_rate=0.1, weight_decay=0.3).apply_gradients([(tnp.asarray(g), v)])
        lso = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.1), initial_scale=8.0,
                                                    dynamic_growth_steps=2)
        w = tt.Variable([1.0])
        for gw in ([1.0], [np.inf], [1.0], [1.0]):
            lso.apply_gradients([(tnp.asarray(gw), w)])
    # TF 2.4: the decay, the update, then the constraint once
    np.testing.assert_allclose(v.numpy(), 0.5 * ((np.array([1.0, 2.0]) * (1 - 0.03)) - 0.1 * g))
    np.testing.assert_array_equal(v.numpy(), v.twin.numpy())
    assert float(lso.loss_scale) == 8.0     # 8 -> 4 (inf step) -> 8 after two finite steps
    for s in (lso._loss_scale, lso._good_steps, w, lso.iterations):
        assert type(s) is TwoCopy
        np.testing.assert_array_equal(s.numpy(), s.twin.numpy())
    assert int(lso.iterations) == 3


# ---------------------------------------------------------------- no write around the variable
_SRC = os.path.join(os.path.dirname(tt.__file__))
_CHECKED = sorted(
    [os.path.join(_SRC, "optimizers", f) for f in os.listdir(os.path.join(_SRC, "optimizers"))
     if f.endswith(".py") and f != "kernels.py"] +
    [os.path.join(_SRC, "mixed_precision", "loss_scale_optimizer.py")])
_KERNELS = set(kernels.__all__) - {"FUSED_MIN_SIZE", "fused_available", "uses_fused"}


def _writes_around_the_variable(source):
    """What in ``source`` writes a variable's backend array other than through
    ``Variable.update``: private fields, version bumps, rebinding, a kernel called directly,
    in-place writes into an array taken with ``backend_array`` (names tracked per function)."""
    tree = ast.parse(source)
    found = []
    # the doors of a write: Variable.update eagerly, and in a compiled program
    # tnp.extend.backend_update (the writes declared to the compiler, versions bumped)
    as_update_fn = {id(n.args[0]) for n in ast.walk(tree)
                    if isinstance(n, ast.Call) and n.args and (
                        isinstance(n.func, ast.Attribute) and n.func.attr == "update" or
                        isinstance(n.func, ast.Name) and
                        n.func.id in ("backend_update", "_backend_update"))}

    def is_backend_call(node):
        return isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id in ("backend_array", "_backend")) or
            (isinstance(node.func, ast.Attribute) and node.func.attr == "backend_array"))

    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Attribute) and node.attr in ("_a", "_dev"):
            found.append(f"{line}: .{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mod = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names]
            if (mod or "").startswith("tnp._core") or any(n.startswith("tnp._core") for n in names) \
                    or {"bump_version", "set_backend_array"} & set(names):
                found.append(f"{line}: import {mod or names}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "kernels" and node.attr in _KERNELS and id(node) not in as_update_fn:
            found.append(f"{line}: kernels.{node.attr} not handed to Variable.update")

    scopes = [tree] + [n for n in ast.walk(tree)
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    for scope in scopes:
        body = [n for n in ast.walk(scope) if n is not scope]
        if scope is tree:   # module level: what no function holds
            inner = {id(m) for f in scopes[1:] for m in ast.walk(f)}
            body = [n for n in body if id(n) not in inner]
        names = {t.id for n in body if isinstance(n, ast.Assign) and is_backend_call(n.value)
                 for t in n.targets if isinstance(t, ast.Name)}

        def backend_rooted(node):
            while isinstance(node, ast.Subscript):
                node = node.value
            return is_backend_call(node) or (isinstance(node, ast.Name) and node.id in names)

        for node in body:
            line = getattr(node, "lineno", "?")
            if isinstance(node, ast.AugAssign) and backend_rooted(node.target):
                found.append(f"{line}: in-place {ast.unparse(node.target)}")
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Subscript) and backend_rooted(t) for t in node.targets):
                found.append(f"{line}: item assignment into a backend array")
            elif isinstance(node, ast.keyword) and node.arg == "out" and \
                    backend_rooted(node.value):
                found.append(f"{line}: out= a backend array")
    return found


def test_the_write_checker_finds_each_kind_of_write():
    bad = """
from tnp._core.ndarray import bump_version
from tnp.extend import backend_array, set_backend_array
v._a -= 1
kernels.adam(w, g, m, v, None, 1, 2, 3, 4, 0)
a = backend_array(v)
a[...] = 0
a += 1
backend_array(v)[0] = 1
np.add(a, 1, out=a)
"""
    found = _writes_around_the_variable(bad)
    assert len(found) == 8, found
    assert len(_writes_around_the_variable("def f(v):\n" + bad.replace("\n", "\n    "))) == 8
    ok = ("variable.update(kernels.adam, g, m, v, None, 1, 2, 3, 4, 0)\n"
          "def f(g):\n    a = backend_array(g) * 2\n\ndef g(a):\n    a += 1\n")
    assert _writes_around_the_variable(ok) == []


@pytest.mark.parametrize("path", _CHECKED, ids=os.path.basename)
def test_optimizers_write_variables_only_through_update(path):
    with open(path) as f:
        assert _writes_around_the_variable(f.read()) == []


# ---------------------------------------------------------------- host copies of the step state
class CountingReads(np.ndarray):
    """A backend array that counts its conversions to a Python number (host reads)."""
    reads = 0

    def __int__(self):
        CountingReads.reads += 1
        return int(np.asarray(self))

    def __float__(self):
        CountingReads.reads += 1
        return float(np.asarray(self))


def _counting(var):
    set_backend_array(var, np.array(backend_array(var)).view(CountingReads))


def test_no_host_read_of_the_step_count_or_the_rate_per_step():
    opt = tt.optimizers.Adam(learning_rate=0.1, decay=0.5)
    v = tt.Variable([1.0, 2.0])
    g = tnp.asarray([0.5, 0.5])
    opt.apply_gradients([(g, v)])
    _counting(opt.iterations)     # a new buffer: read once, then trusted while unwritten
    _counting(opt.learning_rate)
    CountingReads.reads = 0
    for _ in range(4):
        opt.apply_gradients([(g, v)])
    assert CountingReads.reads == 2 and int(np.asarray(opt.iterations)) == 5
    CountingReads.reads = 0
    opt.apply_gradients([(g, v)])
    assert CountingReads.reads == 0


def test_a_step_count_or_rate_written_by_someone_else_is_read_again():
    # the rate of each step, as Keras computes it: lr / (1 + decay * iterations)
    opt = tt.optimizers.SGD(learning_rate=0.5, decay=0.25)
    v = tt.Variable([0.0])
    one = tnp.asarray([1.0])
    expected = [0.0]

    def step(lr_base, it):
        opt.apply_gradients([(one, v)])
        expected[0] -= lr_base / (1.0 + 0.25 * it)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-12)

    step(0.5, 0)
    step(0.5, 1)
    opt.iterations.assign(10)                     # e.g. a checkpoint restore
    step(0.5, 10)
    assert int(opt.iterations) == 11
    opt.learning_rate.assign(np.float32(0.125))   # a callback assigning the rate
    step(0.125, 11)
    opt.learning_rate = 0.25                      # the setter
    step(0.25, 12)
    set_backend_array(opt.iterations, np.array(3, np.int64))   # a rebound buffer
    step(0.25, 3)
    sched = tt.optimizers.SGD(tt.optimizers.schedules.ExponentialDecay(1.0, 1, 0.5))
    w = tt.Variable([0.0])
    sched.apply_gradients([(one, w)])
    sched.iterations.assign(3)
    sched.apply_gradients([(one, w)])
    np.testing.assert_allclose(w.numpy(), [-(1.0 + 0.5 ** 3)])
