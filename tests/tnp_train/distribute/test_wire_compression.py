"""Gradients sent as float16 / bfloat16 (``CommunicationOptions(compression=...)``, Horovod's
``Compression.fp16`` shape) under MultiWorkerMirroredStrategy, with two workers as threads of
one process (``collective.ThreadGroup``; the mpiexec jobs are
tests/distributed/test_wire_compression_mpi.py). The reference is NumPy: each worker's
gradient rounded to the wire dtype, the two summed in it, the sum cast back to float32."""
import threading

import ml_dtypes
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute import collective_all_reduce_strategy as cars
from tnp_train.distribute import collective_util as cu
from tnp_train.distribute.collective import ThreadGroup, subscribe

from thread_workers import run_workers

X = tt.distribute.experimental
WIRE = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def mlp():
    return tt.Sequential([tt.Input((5,)), tt.layers.Dense(8, activation="relu"),
                          tt.layers.Dense(3)])


def data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 5)).astype("float32"), rng.integers(0, 3, n)


def options(compression):
    return X.CommunicationOptions(compression=compression)


# ============================================================================ the option
def test_the_option_takes_horovods_names_and_strings():
    assert X.CommunicationOptions().compression is X.Compression.none
    assert options(None).compression is X.Compression.none
    assert options(X.Compression.fp16).compression is X.Compression.fp16
    for name, member in [("fp16", "fp16"), ("FP16", "fp16"), ("float16", "fp16"),
                         ("bf16", "bf16"), ("bfloat16", "bf16"), ("none", "none")]:
        assert options(name).compression is X.Compression[member]
    assert X.Compression.fp16.wire_dtype == np.float16
    assert X.Compression.bf16.wire_dtype == ml_dtypes.bfloat16
    assert X.Compression.none.wire_dtype is None
    assert repr(options("bf16")).endswith("compression=Compression.bf16)")
    assert options("fp16") == options(X.Compression.fp16) != options(None)
    # TF's positional order is kept; the new field comes last
    o = X.CommunicationOptions(0, 30, "RING", "fp16")
    assert (o.timeout_seconds, o.implementation.name, o.compression.name) == (30, "RING", "fp16")


def test_merge_keeps_the_compression_unless_the_other_sets_one():
    base = options("fp16")
    assert base.merge(X.CommunicationOptions(timeout_seconds=5)).compression is X.Compression.fp16
    assert base.merge(options("bf16")).compression is X.Compression.bf16


@pytest.mark.parametrize("bad", ["int8", "fp8", 16, np.float16, object()])
def test_an_unknown_compression_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"CommunicationOptions: invalid compression .*"
                                         r"Compression\.none, \.fp16 or \.bf16"):
        X.CommunicationOptions(compression=bad)


# ============================================================================ the arithmetic
def _custom_loop_steps(compression, steps=2):
    """Two workers, SGD(1.0): each step's weights before and after and each worker's own
    gradients (so the test can sum them as the wire does)."""
    x, y = data(16)

    def fn(s, rank):
        with s.scope():
            model = mlp()
            opt = tt.optimizers.SGD(1.0)
        loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          reduction="none")
        record = []

        def step(xb, yb):
            with tt.GradientTape() as tape:
                loss = tnp.sum(loss_fn(yb, model(xb))) / 16
            grads = tape.gradient(loss, model.trainable_variables)
            before = [v.numpy().copy() for v in model.trainable_variables]
            opt.apply_gradients(zip(grads, model.trainable_variables))
            record.append((before, [np.asarray(g) for g in grads],
                           [v.numpy().copy() for v in model.trainable_variables]))
        for k in range(steps):
            rows = slice(8 * rank, 8 * rank + 8)   # each worker its half of the batch
            s.run(step, args=(x[rows] * (k + 1), y[rows]))
        return record
    return run_workers(2, fn, options=options(compression))


@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_each_step_sums_the_gradients_in_the_wire_dtype(compression):
    wire = WIRE[compression]
    per_rank = _custom_loop_steps(compression)
    for k in range(2):                        # the first step (which lays the buckets out) too
        g0, g1 = per_rank[0][k][1], per_rank[1][k][1]
        for rank in (0, 1):
            before, _, after = per_rank[rank][k]
            rounded = False
            for w, a, b, got in zip(before, g0, g1, after):
                summed = (a.astype(wire) + b.astype(wire)).astype(wire).astype(np.float32)
                np.testing.assert_array_equal(got, w - summed)
                rounded |= not np.array_equal(got, w - (a + b))
            assert rounded            # it did travel compressed: not float32's sums


# ============================================================================ fit and the bytes
class _StepBytes(tt.callbacks.Callback):
    """The bytes this worker hands the all-reduces in each training step (from the events)."""

    def __init__(self):
        super().__init__()
        self.steps, self._now = [], None
        self._lock = threading.Lock()

    def count(self, event):
        if self._now is not None and event["name"] == "allreduce" \
                and threading.current_thread() is self._thread:
            self._now += event["bytes"]

    def on_train_batch_begin(self, batch, logs=None):
        self._thread, self._now = threading.current_thread(), 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(self._now)
        self._now = None


def _start_weights(model):
    rng = np.random.default_rng(7)
    return [rng.normal(scale=0.5, size=w.shape).astype(np.float32)
            for w in model.get_weights()]


def _fit(compression, epochs=3):
    x, y = data()

    def fn(s, rank):
        with s.scope():
            model = mlp()
            model.compile(tt.optimizers.SGD(0.1, momentum=0.9),
                          loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.set_weights(_start_weights(model))   # the same start for every run
        counter = _StepBytes()
        with subscribe(counter.count):
            model.fit(x, y, batch_size=16, epochs=epochs, shuffle=False, verbose=0,
                      callbacks=[counter])
        return model.get_weights(), counter.steps, model.count_params(), \
            len(model.trainable_variables)
    return run_workers(2, fn, options=options(compression))


def test_fit_compressed_trains_as_uncompressed_and_halves_the_gradients_bytes():
    ref = _fit(None)
    params, n_vars = ref[0][2], ref[0][3]
    none_bytes = ref[0][1][1:]            # after the first step, which lays the buckets out
    assert len(set(none_bytes)) == 1
    for compression in ("fp16", "bf16"):
        got = _fit(compression)
        for rank in (0, 1):
            weights, step_bytes = got[rank][0], got[rank][1]
            # 12 steps of SGD with momentum on gradients rounded to 11 (8) significant bits
            tol = 2e-3 if compression == "fp16" else 1e-2
            for w, r in zip(weights, ref[0][0]):
                np.testing.assert_allclose(w, r, rtol=tol, atol=tol)
            assert not all(np.array_equal(w, r) for w, r in zip(weights, ref[0][0]))
            # the gradients (and their presence flags, one per variable) in 2 bytes instead
            # of 4; the rest of the step's bytes (the metrics' state) unchanged
            for b in step_bytes[1:]:
                assert none_bytes[0] - b == 2 * (params + n_vars)
            assert step_bytes[1] / none_bytes[0] < 0.6


# ============================================================================ refusals
def _each_rank_raises(fn, n=2):
    """``fn(strategy, rank)`` on two thread workers; what each raised (or None)."""
    group = ThreadGroup(n, timeout_seconds=20)
    raised = [None] * n

    def work(rank):
        try:
            fn(cars.MultiWorkerMirroredStrategy._from_communicator(
                group.member(rank), options("fp16")), rank)
        except Exception as e:  # noqa: BLE001 - the test looks at it
            raised[rank] = e
    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    return raised


def test_a_complex_variable_is_refused_by_name():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.ones(3, np.complex64), name="phase")
            opt = tt.optimizers.SGD(0.1)
        for _ in range(2):          # the next step fails alike: nothing goes uncompressed
            with pytest.raises(TypeError, match="floating gradients; variable 'phase"):
                s.run(lambda: opt.apply_gradients([(tnp.ones(3, dtype=tnp.complex64), v)]))
        s.run(lambda: opt.apply_gradients([(tnp.ones(3, dtype=tnp.complex64), v)]))
    for e in _each_rank_raises(fn):
        assert isinstance(e, TypeError), e
        assert "compression fp16 applies to floating gradients; variable 'phase" in str(e)
        assert "complex64" in str(e)


def test_a_gradient_beyond_float16_fails_on_every_worker_alike():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.zeros(4, np.float32), name="big")
            opt = tt.optimizers.SGD(0.1)
        for step in range(2):       # the first step, then the bucketed one
            # only worker 1's gradient overflows (at the second step)
            g = np.full(4, 1e5 if rank == 1 and step == 1 else 1.0, np.float32)
            s.run(lambda: opt.apply_gradients([(tnp.asarray(g), v)]))
    raised = _each_rank_raises(fn)
    for e in raised:
        assert isinstance(e, FloatingPointError), raised
        assert "gradients of 'big" in str(e) and "do not fit in fp16" in str(e)
        assert "Compression.bf16" in str(e)


def test_a_sum_beyond_float16_fails_too():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.zeros(3, np.float32), name="sum")
            opt = tt.optimizers.SGD(0.1)
        g = np.array([1.0, 40000.0, -1.0], np.float32)   # fits; twice it does not
        s.run(lambda: opt.apply_gradients([(tnp.asarray(g), v)]))
    for e in _each_rank_raises(fn):
        assert isinstance(e, FloatingPointError) and "gradients of 'sum" in str(e), e


def test_a_gradient_already_inf_or_nan_travels_as_it_is():
    # as without compression: a LossScaleOptimizer sees it and skips the step
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.zeros(3, np.float32), name="v")
            opt = tt.optimizers.SGD(1.0)
        g = np.array([np.inf if rank == 0 else 1.0, 2.0, 3.0], np.float32)
        s.run(lambda: opt.apply_gradients([(tnp.asarray(g), v)]))
        return v.numpy()
    for w in run_workers(2, fn, options=options("fp16")):
        np.testing.assert_array_equal(w, [-np.inf, -4.0, -6.0])


def test_a_loss_scale_optimizer_skips_a_step_with_an_inf_gradient_under_compression():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.ones(2, np.float32), name="v")
            opt = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(1.0))
        scale = float(opt.loss_scale)
        g = np.array([np.nan if rank == 1 else 1.0, 1.0], np.float32)
        s.run(lambda: opt.apply_gradients([(tnp.asarray(g), v)]))
        return v.numpy(), scale, float(opt.loss_scale)
    for w, before, after in run_workers(2, fn, options=options("fp16")):
        np.testing.assert_array_equal(w, [1.0, 1.0])       # skipped
        assert after == before / 2


def test_bfloat16_carries_what_float16_cannot():
    def fn(s, rank):
        with s.scope():
            v = tt.Variable(np.zeros(2, np.float32), name="big")
            opt = tt.optimizers.SGD(1.0)
        s.run(lambda: opt.apply_gradients([(tnp.asarray(np.full(2, 1e5, np.float32)), v)]))
        return v.numpy()
    group_options = options("bf16")
    for w in run_workers(2, fn, options=group_options):
        np.testing.assert_array_equal(w, -np.float32(ml_dtypes.bfloat16(2e5)))


def test_an_explicit_reduction_refuses_a_compression_it_would_ignore():
    opts = options("fp16")

    def fn(s, rank):
        with pytest.raises(ValueError, match="ReplicaContext.all_reduce: options asks for "
                                             "compression=Compression.fp16"):
            s.run(lambda: tt.distribute.get_replica_context().all_reduce(
                "sum", tnp.ones(2), options=opts))
        with pytest.raises(ValueError, match="StrategyExtended.reduce_to"):
            s.extended.reduce_to("sum", tnp.ones(2), None, options=opts)
        with pytest.raises(ValueError, match="StrategyExtended.batch_reduce_to"):
            s.extended.batch_reduce_to("sum", [(tnp.ones(2), None)], options=opts)
        # the same options without compression are accepted
        out = s.run(lambda: tt.distribute.get_replica_context().all_reduce(
            "sum", tnp.ones(2), options=X.CommunicationOptions(timeout_seconds=5)))
        return np.asarray(out)
    for out in run_workers(2, fn):
        np.testing.assert_array_equal(out, [2.0, 2.0])


def test_cross_device_ops_refuse_it_too():
    with pytest.raises(ValueError, match="ReductionToOneDevice.batch_reduce: options asks"):
        tt.distribute.ReductionToOneDevice().reduce("sum", tnp.ones(2), None,
                                                     options=options("bf16"))


def test_the_names_are_exported():
    assert X.Compression is cu.Compression
    assert "Compression" in X.__all__
