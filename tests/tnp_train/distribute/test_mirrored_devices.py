"""MirroredStrategy over several devices of one process: one replica per device, each in its
own thread, variables mirrored (one copy per device), gradients summed over a thread group.

tnp's fake second CPU device (``cpu:1``) refuses to be mixed with ``cpu:0`` as two GPUs would,
so ``MirroredStrategy(["cpu:0", "cpu:1"])`` checks every placement rule here. The reference is
one process on one device with the same global batch (TF's guarantee for synchronous
data-parallel training: the same update as one replica on the whole batch).
"""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.distribute.distributed_variables import MirroredVariable, SyncOnReadVariable

D = tt.distribute
DEVICES = ["cpu:0", "cpu:1"]


def mlp():
    return tt.Sequential([tt.Input((5,)), tt.layers.Dense(8, activation="relu"),
                          tt.layers.Dense(3)])


def cnn():
    return tt.Sequential([tt.Input((6, 6, 1)), tt.layers.Conv2D(4, 3, activation="relu"),
                          tt.layers.MaxPooling2D(2), tt.layers.Flatten(), tt.layers.Dense(3)])


def compiled(make=mlp, metrics=("accuracy",)):
    model = make()
    model.compile(tt.optimizers.SGD(0.1, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=list(metrics))
    return model


def data(n=48, seed=0, shape=(5,)):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n,) + shape).astype("float32"), rng.integers(0, 3, n)


def weights(model):
    return [w.numpy() for w in model.weights]


def assert_copies_equal(model):
    """Every mirrored variable's copies are equal (the replicas applied the same updates)."""
    for w in model.weights + model.optimizer.variables():
        if isinstance(w, MirroredVariable):
            vals = [np.asarray(v.to_device("cpu")) for v in w.values]
            for v in vals[1:]:
                np.testing.assert_array_equal(v, vals[0], err_msg=w.name)


def test_variables_are_mirrored_on_every_device():
    s = D.MirroredStrategy(DEVICES)
    assert s.num_replicas_in_sync == 2
    assert s.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",
                                         "/job:localhost/replica:0/task:0/device:CPU:1")
    with s.scope():
        v = tt.Variable(np.arange(3.0, dtype="float32"))
        m = tt.metrics.Mean()
    assert isinstance(v, MirroredVariable) and isinstance(tt.Variable, type)
    assert [str(c.device) for c in v.values] == ["cpu", "cpu:1"]
    assert all(isinstance(w, SyncOnReadVariable) for w in m.variables)
    # each replica reads and writes its own copy, on its own device
    seen = s.run(lambda: (tnp.asarray(v).device, v.device))
    assert [d for d, _ in s.experimental_local_results(seen)] == [tnp.device("cpu"),
                                                                  tnp.device("cpu:1")]
    s.run(lambda: v.assign_add(tnp.ones(3, dtype="float32")))
    for c in v.values:
        np.testing.assert_array_equal(np.asarray(c.to_device("cpu")), [1.0, 2.0, 3.0])
    # cross-replica assign writes every copy
    v.assign(np.full(3, 7.0, "float32"))
    for c in v.values:
        np.testing.assert_array_equal(np.asarray(c.to_device("cpu")), [7.0] * 3)


def test_run_reduce_gather_and_replica_collectives():
    s = D.MirroredStrategy(DEVICES)

    def fn():
        ctx = D.get_replica_context()
        r = ctx.replica_id_in_sync_group
        x = tnp.full((r + 1, 2), float(r + 1))
        return x, ctx.all_reduce("sum", tnp.asarray([float(r + 1)])), ctx.all_gather(x, axis=0)

    x, total, gathered = s.run(fn)
    assert isinstance(x, D.DistributedValues)
    np.testing.assert_array_equal(np.asarray(s.gather(x, axis=0)),
                                  [[1, 1], [2, 2], [2, 2]])
    np.testing.assert_array_equal(np.asarray(s.reduce("sum", x, axis=0)), [5.0, 5.0])
    np.testing.assert_array_equal(np.asarray(s.reduce("mean", x, axis=0)), [5 / 3, 5 / 3])
    for t in s.experimental_local_results(total):
        np.testing.assert_array_equal(np.asarray(t.to_device("cpu")), [3.0])
    for g in s.experimental_local_results(gathered):
        np.testing.assert_array_equal(np.asarray(g.to_device("cpu")), [[1, 1], [2, 2], [2, 2]])
    assert float(s.reduce("sum", s.run(lambda: tnp.asarray(1.0)), axis=None)) == 2.0


def test_merge_call_meets_every_replica_once_in_cross_replica_context():
    s = D.MirroredStrategy(DEVICES)
    calls = []

    def merge_fn(strategy, value):
        calls.append((threading.current_thread().name, D.in_cross_replica_context()))
        assert isinstance(value, D.DistributedValues)
        return strategy.reduce("sum", value, axis=None)

    def fn():
        ctx = D.get_replica_context()
        return ctx.merge_call(merge_fn, args=(tnp.asarray(float(ctx.replica_id_in_sync_group
                                                                + 1)),))

    out = s.run(fn)
    assert float(out) == 3.0 and len(calls) == 1 and calls[0][1]


def test_a_replica_error_ends_the_run_and_the_next_run_works():
    s = D.MirroredStrategy(DEVICES)

    def fn():
        ctx = D.get_replica_context()
        if ctx.replica_id_in_sync_group == 1:
            raise KeyError("replica 1 failed")
        # replica 0 waits in a collective replica 1 never joins: it must not hang
        return ctx.all_reduce("sum", tnp.ones(2))

    with pytest.raises(KeyError, match="replica 1 failed"):
        s.run(fn)
    out = s.run(lambda: D.get_replica_context().all_reduce("sum", tnp.ones(2)))
    for o in s.experimental_local_results(out):
        np.testing.assert_array_equal(np.asarray(o.to_device("cpu")), [2.0, 2.0])


def test_distributed_dataset_splits_each_batch_over_the_devices():
    s = D.MirroredStrategy(DEVICES)
    ds = tt.data.Dataset.from_tensor_slices(np.arange(10.0)).batch(4)
    batches = list(s.experimental_distribute_dataset(ds))
    parts = [[np.asarray(p.to_device("cpu")).tolist() for p in s.experimental_local_results(b)]
             for b in batches]
    assert parts == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8], [9]]]
    assert [str(p.device) for p in s.experimental_local_results(batches[0])] == ["cpu", "cpu:1"]

    def dataset_fn(ctx):
        assert ctx.num_replicas_in_sync == 2
        return tt.data.Dataset.from_tensor_slices(np.arange(8.0)).batch(2)
    per = list(s.distribute_datasets_from_function(dataset_fn))
    assert [[np.asarray(p.to_device("cpu")).tolist() for p in s.experimental_local_results(b)]
            for b in per] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def _loop(strategy, make, x, y, init, batch=12, epochs=2):
    with strategy.scope():
        model = compiled(make)
    model.set_weights(init)
    loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(batch)

    def step(b):
        with tt.GradientTape() as tape:
            per = loss_obj(b[1], model(b[0], training=True))
            loss = tt.nn.compute_average_loss(per, global_batch_size=batch)
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    losses = [float(strategy.reduce("SUM", strategy.run(step, args=(b,)), axis=None))
              for _ in range(epochs) for b in strategy.experimental_distribute_dataset(ds)]
    return losses, model


@pytest.mark.parametrize("make,shape", [(mlp, (5,)), (cnn, (6, 6, 1))], ids=["mlp", "cnn"])
def test_two_devices_train_as_one_device_custom_loop_and_fit(make, shape):
    x, y = data(shape=shape)
    tt.utils.set_random_seed(0)
    init = weights(make())
    one = D.OneDeviceStrategy("cpu:0")
    two = D.MirroredStrategy(DEVICES)
    ref_losses, ref = _loop(one, make, x, y, init)
    got_losses, got = _loop(two, make, x, y, init)
    np.testing.assert_allclose(got_losses, ref_losses, rtol=1e-5)
    for a, b in zip(weights(got), weights(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert_copies_equal(got)

    def fit(strategy):
        with strategy.scope():
            model = compiled(make)
        model.set_weights(init)
        hist = model.fit(x, y, batch_size=12, epochs=2, shuffle=False, verbose=0,
                         validation_split=0.25)
        return (hist.history, model, model.evaluate(x, y, batch_size=10, verbose=0),
                np.asarray(model.predict(x, batch_size=10).to_device("cpu")))

    ref_h, ref_m, ref_e, ref_p = fit(one)
    got_h, got_m, got_e, got_p = fit(two)
    assert got_h.keys() == ref_h.keys()
    for k in ref_h:
        np.testing.assert_allclose(got_h[k], ref_h[k], rtol=1e-5, err_msg=k)
    np.testing.assert_allclose(got_e, ref_e, rtol=1e-5)
    np.testing.assert_allclose(got_p, ref_p, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights(got_m), weights(ref_m)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert_copies_equal(got_m)


def test_metrics_read_in_cross_replica_context_combine_the_replicas():
    s = D.MirroredStrategy(DEVICES)
    with s.scope():
        m = tt.metrics.Mean()
        acc = tt.metrics.SparseCategoricalAccuracy()

    def fn(values, labels, logits):
        m.update_state(values)
        acc.update_state(labels, logits)

    parts = [([1.0, 2.0], [0, 1], [[2.0, 1.0], [2.0, 1.0]]), ([6.0], [1], [[0.0, 1.0]])]

    def per_replica(k):
        return s.experimental_distribute_values_from_function(
            lambda ctx: np.asarray(parts[ctx.replica_id_in_sync_group][k]))
    values, labels, logits = (per_replica(k) for k in range(3))
    s.run(fn, args=(values, labels, logits))
    assert float(m.result()) == 3.0                   # (1 + 2 + 6) / 3, NumPy's mean
    np.testing.assert_allclose(float(acc.result()), 2 / 3)
    m.reset_state()
    assert float(m.result()) == 0.0
    # inside a replica, a metric's variables are that replica's own
    local = s.run(lambda: float(m.total.numpy()))
    assert s.experimental_local_results(local) == (0.0, 0.0)


def test_batch_norm_moving_statistics_are_averaged_over_the_replicas():
    s = D.MirroredStrategy(DEVICES)
    with s.scope():
        bn = tt.layers.BatchNormalization(momentum=0.0)
        bn.build((None, 2))
    xa = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
    xb = np.array([[5.0, 8.0], [7.0, 10.0]], "float32")
    x = s.experimental_distribute_values_from_function(
        lambda ctx: (xa, xb)[ctx.replica_id_in_sync_group])
    s.run(lambda x: bn(x, training=True), args=(x,))
    # momentum 0: each replica's moving mean is its batch mean; read across, their mean
    np.testing.assert_allclose(np.asarray(bn.moving_mean.numpy()),
                               (xa.mean(0) + xb.mean(0)) / 2)


def test_checkpoint_saved_under_two_devices_restores_in_one_and_back(tmp_path):
    x, y = data()
    s = D.MirroredStrategy(DEVICES)
    with s.scope():
        model = compiled()
    model.fit(x, y, batch_size=12, epochs=1, verbose=0)
    ckpt = tt.train.Checkpoint(model=model, optimizer=model.optimizer)
    path = ckpt.save(str(tmp_path / "c"))
    plain = compiled()
    plain(x[:1])
    tt.train.Checkpoint(model=plain, optimizer=plain.optimizer).restore(path)
    for a, b in zip(weights(plain), weights(model)):
        np.testing.assert_array_equal(a, b)
    with D.MirroredStrategy(DEVICES).scope():
        back = compiled()
    back(x[:1])
    tt.train.Checkpoint(model=back, optimizer=back.optimizer).restore(path)
    for a, b in zip(weights(back), weights(model)):
        np.testing.assert_array_equal(a, b)
    assert_copies_equal(back)


def test_workers_of_several_devices_train_as_one_device():
    """MultiWorkerMirroredStrategy whose workers drive two devices each (a rank with several
    GPUs): 2 workers x 2 replicas, hierarchical collectives (threads, then workers), the same
    weights and losses as one device on the global batch."""
    from tnp_train.distribute import collective_all_reduce_strategy as cars
    from tnp_train.distribute.collective import ThreadGroup

    x, y = data(48)
    tt.utils.set_random_seed(0)
    init = weights(mlp())
    ref_losses, ref = _loop(D.OneDeviceStrategy("cpu:0"), mlp, x, y, init)
    group = ThreadGroup(2, timeout_seconds=20)
    out, errors = [None, None], []

    def work(rank):
        try:
            tt.utils.set_random_seed(10 + rank)          # worker 0's initial values win
            s = cars.MultiWorkerMirroredStrategy._from_communicator(group.member(rank),
                                                                  devices=DEVICES)
            assert s.num_replicas_in_sync == 4
            with s.scope():
                v = tt.Variable(np.full(2, float(rank), "float32"))
            losses, model = _loop(s, mlp, x, y, init)
            hist = model.fit(x, y, batch_size=12, epochs=1, shuffle=False, verbose=0)
            out[rank] = (losses, model, v.numpy(), hist.history)
        except BaseException as e:  # noqa: BLE001 - reported below, the other must not wait
            errors.append(e)
            try:
                group.member(rank).abort()
            except Exception:  # noqa: BLE001 - abort raises by design; the other stops
                pass

    threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    # the reference goes on from the loop too (its optimizer's momentum included)
    one = ref
    ref_hist = one.fit(x, y, batch_size=12, epochs=1, shuffle=False, verbose=0).history
    for losses, model, v, hist in out:
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
        np.testing.assert_array_equal(v, [0.0, 0.0])
        for a, b in zip(weights(model), weights(one)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        for k in ref_hist:
            np.testing.assert_allclose(hist[k], ref_hist[k], rtol=1e-5, err_msg=k)
        assert_copies_equal(model)


def noisy(seed=None):
    """An MLP with every kind of per-sample draw: dropout (the thread's generator or its own
    seed), Gaussian noise, alpha dropout."""
    return tt.Sequential([tt.Input((5,)), tt.layers.Dense(8, activation="relu"),
                          tt.layers.Dropout(0.3, seed=seed), tt.layers.Dense(8),
                          tt.layers.GaussianNoise(0.2), tt.layers.AlphaDropout(0.2),
                          tt.layers.Dense(3)])


def built(strategy, make, init):
    """``make()`` compiled in ``strategy``'s scope, from the weights ``init``, with the
    generators seeded as for every run compared."""
    tt.utils.set_random_seed(3)
    with strategy.scope():
        model = compiled(make)
    model.set_weights(init)
    return model


def fit_on_one_and_two(make, x, y, batch_size, epochs):
    """``fit`` from the same initial weights and seed on one device and on two devices:
    ``(one, two)``, each ``(losses, model)``."""
    tt.utils.set_random_seed(0)
    init = weights(make())

    def fit(strategy):
        model = built(strategy, make, init)
        hist = model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0)
        return hist.history["loss"], model
    return fit(D.OneDeviceStrategy("cpu:0")), fit(D.MirroredStrategy(DEVICES))


def assert_trained_alike(one, two):
    """The same losses and final weights (float32 rounding apart)."""
    (ref_loss, ref), (got_loss, got) = one, two
    np.testing.assert_allclose(got_loss, ref_loss, rtol=1e-5)
    for a, b in zip(weights(got), weights(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [48, 47, 45], ids=["odd-batches", "short-last", "empty-part"])
@pytest.mark.parametrize("seed", [None, 7], ids=["thread-rng", "layer-seed"])
def test_two_devices_with_dropout_and_noise_train_as_one_device(n, seed):
    # Batches of 11 split 6/5; 47 rows end on a batch of 3 split 2/1, 45 rows on a batch of 1
    # split 1/0. Each replica draws its rows of one process's masks, and a replica's loss
    # counts for its share of the global batch, so every step is one process's.
    x, y = data(n)
    one, two = fit_on_one_and_two(lambda: noisy(seed), x, y, batch_size=11, epochs=3)
    assert_trained_alike(one, two)
    assert_copies_equal(two[1])
    # a seeded layer's own generator ends where one device's does (later draws, a backup)
    states = [[layer._rng.bit_generator.state for layer in model.layers
               if getattr(layer, "_rng", None) is not None] for _, model in (one, two)]
    assert states[0] == states[1] and len(states[0]) == (seed is not None)


def test_custom_loop_average_loss_of_an_uneven_batch_is_one_process_mean():
    # compute_average_loss without global_batch_size: the split batch's size (TF would take
    # per-replica rows x replicas: 2 x 2 = 4 on one replica and 1 x 2 on the other for 3 rows)
    x, y = data(15)
    tt.utils.set_random_seed(0)
    init = weights(noisy())

    def loop(strategy):
        model = built(strategy, noisy, init)
        loss_obj = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

        def step(b):
            with tt.GradientTape() as tape:
                loss = tt.nn.compute_average_loss(loss_obj(b[1], model(b[0], training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        ds = tt.data.Dataset.from_tensor_slices((x, y)).batch(6)      # 6, 6, 3
        losses = [float(strategy.reduce("SUM", strategy.run(step, args=(b,)), axis=None))
                  for _ in range(2) for b in strategy.experimental_distribute_dataset(ds)]
        return losses, model

    assert_trained_alike(loop(D.OneDeviceStrategy("cpu:0")), loop(D.MirroredStrategy(DEVICES)))


def test_two_devices_augment_as_one_device():
    # per-image draws (flips, translations, rotations) are each replica's rows of one draw for
    # the global batch, and a draw for the whole batch (a crop) is the same on every replica
    P = tt.layers.experimental.preprocessing

    def make():
        return tt.Sequential([tt.Input((8, 8, 1)), P.RandomFlip(), P.RandomTranslation(0.2, 0.2),
                              P.RandomRotation(0.1), P.RandomCrop(6, 6),
                              tt.layers.Conv2D(4, 3, activation="relu"), tt.layers.Flatten(),
                              tt.layers.Dense(3)])
    x, y = data(23, shape=(8, 8, 1))
    assert_trained_alike(*fit_on_one_and_two(make, x, y, batch_size=8, epochs=2))


def test_two_devices_with_recurrent_and_attention_dropout_train_as_one_device():
    # the masks of LSTM's dropout and recurrent_dropout, GRU's, and attention's are per sample
    # too: each replica draws its rows
    def make():
        inp = tt.Input((4, 5))
        h = tt.layers.LSTM(6, dropout=0.2, recurrent_dropout=0.3, return_sequences=True)(inp)
        h = tt.layers.MultiHeadAttention(2, 3, dropout=0.25)(h, h)
        h = tt.layers.GRU(5, dropout=0.1, recurrent_dropout=0.2)(h)
        return tt.Model(inp, tt.layers.Dense(3)(h))
    x, y = data(21, shape=(4, 5))
    assert_trained_alike(*fit_on_one_and_two(make, x, y, batch_size=8, epochs=2))
