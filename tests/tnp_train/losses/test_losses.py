"""tt.losses against NumPy references written out here; gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

L = tt.losses
EPS = 1e-7


# ---------------------------------------------------------------------- NumPy references
def np_softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_mse(t, p):
    return ((p - t) ** 2).mean(-1)


def ref_mae(t, p):
    return np.abs(p - t).mean(-1)


def ref_mape(t, p):
    return 100 * np.abs((t - p) / np.maximum(np.abs(t), EPS)).mean(-1)


def ref_msle(t, p):
    return ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1)


def ref_huber(t, p, delta=1.0):
    e = np.abs(p - t)
    return np.where(e <= delta, 0.5 * e ** 2, delta * e - 0.5 * delta ** 2).mean(-1)


def ref_logcosh(t, p):
    return np.log(np.cosh(p - t)).mean(-1)


def ref_kld(t, p):
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return (t * np.log(t / p)).sum(-1)


def ref_poisson(t, p):
    return (p - t * np.log(p + EPS)).mean(-1)


def _signed(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def ref_hinge(t, p):
    return np.maximum(1 - _signed(t) * p, 0).mean(-1)


def ref_squared_hinge(t, p):
    return (np.maximum(1 - _signed(t) * p, 0) ** 2).mean(-1)


def ref_categorical_hinge(t, p):
    return np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)


def ref_cosine(t, p):
    nt = t / np.sqrt(np.maximum((t * t).sum(-1, keepdims=True), 1e-12))
    n_p = p / np.sqrt(np.maximum((p * p).sum(-1, keepdims=True), 1e-12))
    return -(nt * n_p).sum(-1)


def ref_bce(t, p, from_logits=False, ls=0.0):
    t = t * (1 - ls) + 0.5 * ls
    if from_logits:
        p = 1 / (1 + np.exp(-p))
    p = np.clip(p, EPS, 1 - EPS)
    return -(t * np.log(p + EPS) + (1 - t) * np.log(1 - p + EPS)).mean(-1)


def ref_cce(t, p, from_logits=False, ls=0.0):
    t = t * (1 - ls) + ls / t.shape[-1]
    q = np_softmax(p) if from_logits else p / p.sum(-1, keepdims=True)
    return -(t * np.log(np.clip(q, EPS, 1 - EPS))).sum(-1)


REGRESSION = [
    (L.MeanSquaredError, L.mean_squared_error, ref_mse, "mean_squared_error"),
    (L.MeanAbsoluteError, L.mean_absolute_error, ref_mae, "mean_absolute_error"),
    (L.MeanAbsolutePercentageError, L.mean_absolute_percentage_error, ref_mape,
     "mean_absolute_percentage_error"),
    (L.MeanSquaredLogarithmicError, L.mean_squared_logarithmic_error, ref_msle,
     "mean_squared_logarithmic_error"),
    (L.Huber, L.huber, ref_huber, "huber_loss"),
    (L.LogCosh, L.log_cosh, ref_logcosh, "log_cosh"),
    (L.KLDivergence, L.kl_divergence, ref_kld, "kl_divergence"),
    (L.Poisson, L.poisson, ref_poisson, "poisson"),
    (L.Hinge, L.hinge, ref_hinge, "hinge"),
    (L.SquaredHinge, L.squared_hinge, ref_squared_hinge, "squared_hinge"),
    (L.CategoricalHinge, L.categorical_hinge, ref_categorical_hinge, "categorical_hinge"),
    (L.CosineSimilarity, L.cosine_similarity, ref_cosine, "cosine_similarity"),
    (L.BinaryCrossentropy, L.binary_crossentropy, ref_bce, "binary_crossentropy"),
    (L.CategoricalCrossentropy, L.categorical_crossentropy, ref_cce, "categorical_crossentropy"),
]
IDS = [c.__name__ for c, *_ in REGRESSION]


def probs(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


@pytest.mark.parametrize("cls,fn,ref,name", REGRESSION, ids=IDS)
@settings(max_examples=8, deadline=None)
@given(b=st.integers(1, 4), d=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_loss_matches_numpy_for_every_reduction(cls, fn, ref, name, b, d, seed):
    r = np.random.default_rng(seed)
    t, p = probs(r, (b, d)), probs(r, (b, d))
    if cls in (L.Hinge, L.SquaredHinge):
        t = r.integers(0, 2, (b, d)).astype(float)
    w = r.uniform(0, 2, b)
    per = ref(t, p)
    np.testing.assert_allclose(np.asarray(fn(tnp.asarray(t), tnp.asarray(p))), per, rtol=1e-6,
                               atol=1e-7)
    loss = cls()
    assert loss.name == name and loss.reduction == "auto"
    got = loss(tnp.asarray(t), tnp.asarray(p))
    assert got.shape == () and got.dtype == np.float64
    np.testing.assert_allclose(float(got), per.mean(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(float(loss(t, p, sample_weight=w)), (per * w).sum() / b,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(float(loss(t, p, sample_weight=w[:, None])), (per * w).sum() / b,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(float(cls(reduction="sum")(t, p, sample_weight=w)),
                               (per * w).sum(), rtol=1e-6, atol=1e-7)
    none = cls(reduction="none")(t, p, sample_weight=w)
    np.testing.assert_allclose(np.asarray(none), per * w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls,fn,ref,name", REGRESSION, ids=IDS)
def test_loss_gradients_match_finite_differences(cls, fn, ref, name):
    r = np.random.default_rng(1)
    t, p = probs(r, (3, 4)), probs(r, (3, 4))
    if cls in (L.Hinge, L.SquaredHinge):
        t = r.integers(0, 2, (3, 4)).astype(float)
    w = tnp.asarray(r.uniform(0.5, 1.5, 3))
    check_grads(lambda q: cls()(tnp.asarray(t), q, sample_weight=w))(tnp.asarray(p))
    check_grads(lambda q: cls(reduction="none")(tnp.asarray(t), q))(tnp.asarray(p))


@pytest.mark.parametrize("cls,fn,ref,name", REGRESSION, ids=IDS)
def test_mismatched_shapes_raise_value_error_naming_loss_and_shapes(cls, fn, ref, name):
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(3, 5\)"):
        cls()(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match=fn.__name__):
        fn(np.ones((3, 4)), np.ones((2, 4)))


@pytest.mark.parametrize("cls,fn,ref,name", REGRESSION, ids=IDS)
def test_low_precision_predictions_compute_in_float32(cls, fn, ref, name):
    r = np.random.default_rng(2)
    t, p = probs(r, (4, 3)), probs(r, (4, 3))
    for dt in ("float16", "bfloat16"):
        pl = tnp.asarray(p).astype(dt)
        got = cls()(tnp.asarray(t.astype(np.float32)), pl)
        assert got.dtype == np.float32
        expected = ref(t, np.asarray(pl).astype(np.float64)).mean()
        np.testing.assert_allclose(float(got), expected, rtol=2e-5, atol=1e-6)
        v = tt.Variable(pl)
        with tt.GradientTape() as tape:
            out = cls()(t, v)
        g = tape.gradient(out, v)
        assert g.dtype == v.dtype and g.shape == v.shape
    assert cls()(t.astype(np.float32), p.astype(np.float32)).dtype == np.float32


def test_rank_rule_expands_the_smaller_rank():
    t = np.arange(4.0)
    p = np.arange(4.0)[:, None] + 0.5
    got = L.MeanSquaredError(reduction="none")(t, p)
    assert got.shape == (4,)
    np.testing.assert_allclose(np.asarray(got), np.full(4, 0.25))
    assert L.mean_absolute_error(t[:, None], p[:, 0]).shape == (4,)


def test_huber_delta_and_round_trip():
    r = np.random.default_rng(3)
    t, p = r.normal(0, 3, (5, 2)), r.normal(0, 3, (5, 2))
    loss = L.Huber(delta=2.5)
    assert float(loss(t, p)) == pytest.approx(ref_huber(t, p, 2.5).mean(), rel=1e-6)
    clone = L.Huber.from_config(loss.get_config())
    assert clone.get_config() == {"reduction": "auto", "name": "huber_loss", "delta": 2.5}


def test_logcosh_and_bce_from_logits_are_stable_for_large_values():
    x = tnp.asarray(np.array([[1e4, -1e4, 0.0]]))
    assert np.isfinite(float(L.LogCosh()(np.zeros((1, 3)), x)))
    v = tt.Variable(np.array([[800.0, -800.0, 0.0]]))
    with tt.GradientTape() as tape:
        out = L.BinaryCrossentropy(from_logits=True)(np.array([[0.0, 1.0, 1.0]]), v)
    g = np.asarray(tape.gradient(out, v))
    assert np.isfinite(float(out)) and np.all(np.isfinite(g))
    np.testing.assert_allclose(g, np.array([[1.0, -1.0, -0.5]]) / 3, atol=1e-12)


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_binary_crossentropy_options(from_logits, ls):
    r = np.random.default_rng(4)
    t = r.integers(0, 2, (6, 3)).astype(float)
    p = r.normal(0, 2, (6, 3)) if from_logits else probs(r, (6, 3))
    loss = L.BinaryCrossentropy(from_logits=from_logits, label_smoothing=ls)
    assert float(loss(t, p)) == pytest.approx(ref_bce(t, p, from_logits, ls).mean(), rel=1e-6)
    check_grads(lambda q: loss(t, q))(tnp.asarray(p))


# ---------------------------------------------------------------------- cross-entropies
def onehot(y, n):
    return np.eye(n)[y]


@settings(max_examples=15, deadline=None)
@given(b=st.integers(1, 6), c=st.integers(2, 6), seed=st.integers(0, 2**16),
       from_logits=st.booleans(), weighted=st.booleans(),
       reduction=st.sampled_from(["auto", "sum_over_batch_size", "sum", "none"]))
def test_sparse_categorical_crossentropy_matches_numpy(b, c, seed, from_logits, weighted, reduction):
    r = np.random.default_rng(seed)
    z = r.normal(0, 2, (b, c))
    y = r.integers(0, c, b)
    p = z if from_logits else np_softmax(z)
    q = np_softmax(z) if from_logits else p / p.sum(-1, keepdims=True)
    per = -np.log(np.clip(q[np.arange(b), y], EPS, 1 - EPS))
    w = r.uniform(0, 2, b) if weighted else np.ones(b)
    expected = {"none": per * w, "sum": (per * w).sum()}.get(reduction, (per * w).sum() / b)
    loss = L.SparseCategoricalCrossentropy(from_logits=from_logits, reduction=reduction)
    got = loss(y, tnp.asarray(p), sample_weight=w if weighted else None)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=1e-9)
    got_cce = L.CategoricalCrossentropy(from_logits=from_logits, reduction=reduction)(
        onehot(y, c), p, sample_weight=w if weighted else None)
    np.testing.assert_allclose(np.asarray(got_cce), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        np.asarray(L.sparse_categorical_crossentropy(y[:, None], p, from_logits=from_logits)), per,
        rtol=1e-6)


@pytest.mark.parametrize("from_logits", [True, False])
def test_crossentropy_is_one_tape_node_with_the_softmax_minus_onehot_gradient(from_logits):
    r = np.random.default_rng(5)
    z = r.normal(0, 1, (8, 5)).astype(np.float32)
    y = r.integers(0, 5, 8)
    p = z if from_logits else np_softmax(z).astype(np.float32)
    for loss, target in ((L.SparseCategoricalCrossentropy(from_logits=from_logits), y),
                         (L.CategoricalCrossentropy(from_logits=from_logits),
                          onehot(y, 5).astype(np.float32))):
        v = tt.Variable(p)
        with tt.GradientTape() as tape:
            out = loss(target, v)
        assert len(tape._nodes) == 1
        g = np.asarray(tape.gradient(out, v))
        if from_logits:
            np.testing.assert_allclose(g, (np_softmax(z) - onehot(y, 5)) / 8, rtol=1e-5,
                                       atol=1e-7)
        assert g.dtype == np.float32


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("axis", [-1, 1])
def test_crossentropy_gradients_first_and_second_order(from_logits, axis):
    r = np.random.default_rng(6)
    shape = (3, 4, 2) if axis == 1 else (3, 4)
    z = r.normal(0, 1, shape)
    p = z if from_logits else np.abs(z) + 0.2
    labels = r.integers(0, 4, (3, 2) if axis == 1 else 3)
    soft = np_softmax(r.normal(0, 1, shape), axis=axis)
    w = tnp.asarray(r.uniform(0.5, 1.5, 3))
    for red in ("auto", "sum", "none"):
        sparse = L.SparseCategoricalCrossentropy(from_logits=from_logits, reduction=red)
        check_grads(lambda q: L.sparse_categorical_crossentropy(labels, q, from_logits=from_logits,
                                                                axis=axis), order=2)(tnp.asarray(p))
        if axis == -1:
            check_grads(lambda q: sparse(labels, q, sample_weight=w), order=2)(tnp.asarray(p))
        dense = L.CategoricalCrossentropy(from_logits=from_logits, label_smoothing=0.1, axis=axis,
                                          reduction=red)
        check_grads(lambda q, t: dense(t, q), order=2)(tnp.asarray(p), tnp.asarray(soft))


def test_crossentropy_axis_matches_moved_axis():
    r = np.random.default_rng(7)
    z = r.normal(0, 1, (2, 5, 3))
    t = np_softmax(r.normal(0, 1, (2, 5, 3)), axis=1)
    got = L.categorical_crossentropy(t, z, from_logits=True, axis=1)
    want = ref_cce(np.moveaxis(t, 1, -1), np.moveaxis(z, 1, -1), from_logits=True)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7)


def test_crossentropy_label_smoothing_and_large_logits():
    r = np.random.default_rng(8)
    z = r.normal(0, 1, (4, 3))
    t = onehot(r.integers(0, 3, 4), 3)
    got = L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3)(t, z)
    assert float(got) == pytest.approx(ref_cce(t, z, True, 0.3).mean(), rel=1e-7)
    big = tnp.asarray(np.array([[1e4, -1e4, 0.0]], dtype=np.float32))
    out = L.SparseCategoricalCrossentropy(from_logits=True)(np.array([1]), big)
    assert float(out) == pytest.approx(2e4, rel=1e-6)


def test_crossentropy_float16_logits_compute_in_float32():
    r = np.random.default_rng(9)
    z16 = tnp.asarray(r.normal(0, 3, (6, 4))).astype("float16")
    y = r.integers(0, 4, 6)
    v = tt.Variable(z16)
    with tt.GradientTape() as tape:
        out = L.SparseCategoricalCrossentropy(from_logits=True)(y, v)
    assert out.dtype == np.float32
    z32 = np.asarray(z16).astype(np.float64)
    per = -np.log(np_softmax(z32)[np.arange(6), y])
    assert float(out) == pytest.approx(per.mean(), rel=1e-5)
    g = tape.gradient(out, v)
    assert g.dtype == np.float16
    np.testing.assert_allclose(np.asarray(g).astype(np.float64),
                               (np_softmax(z32) - onehot(y, 4)) / 6, atol=2e-3)
    assert L.CategoricalCrossentropy()(onehot(y, 4), np.full((6, 4), 0.25, np.float32)).dtype == np.float32


def test_sparse_ignore_class_is_zero_and_not_counted():
    z = np.random.default_rng(10).normal(0, 1, (5, 3))
    y = np.array([0, -1, 2, -1, 1])
    keep = y != -1
    per = -np.log(np_softmax(z)[np.arange(5), np.where(keep, y, 0)]) * keep
    loss = L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    assert float(loss(y, z)) == pytest.approx(per.sum() / keep.sum(), rel=1e-7)
    np.testing.assert_allclose(
        np.asarray(L.sparse_categorical_crossentropy(y, z, from_logits=True, ignore_class=-1)), per,
        rtol=1e-7)
    check_grads(lambda q: loss(y, q), order=2)(tnp.asarray(z))
    assert L.SparseCategoricalCrossentropy.from_config(loss.get_config()).get_config() == \
        loss.get_config()


def test_sparse_bad_labels_raise():
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*labels.*\(4,\).*\(3, 2\)"):
        L.SparseCategoricalCrossentropy()(np.zeros(4, int), np.full((3, 2), 0.5))
    with pytest.raises(ValueError, match="out of range"):
        L.SparseCategoricalCrossentropy()(np.array([0, 2]), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="integer"):
        L.sparse_categorical_crossentropy(np.array([0.5, 1.0]), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="sample_weight"):
        L.SparseCategoricalCrossentropy()(np.array([0, 1]), np.full((2, 2), 0.5),
                                          sample_weight=np.ones(3))


def test_reduction_and_config_validation():
    with pytest.raises(ValueError, match="reduction"):
        L.MeanSquaredError(reduction="mean")
    with pytest.raises(ValueError, match="label_smoothing"):
        L.CategoricalCrossentropy(label_smoothing=1.5)
    assert L.Reduction.all() == ("auto", "none", "sum", "sum_over_batch_size")


def test_empty_batch_reduces_to_zero():
    got = L.MeanSquaredError()(np.zeros((0, 3)), np.zeros((0, 3)))
    assert float(got) == 0.0
    got = L.SparseCategoricalCrossentropy(from_logits=True)(np.zeros(0, int), np.zeros((0, 3)))
    assert float(got) == 0.0


def test_get_serialize_deserialize():
    assert L.get("mse") is L.mean_squared_error is L.MSE
    assert L.get("mae") is L.mean_absolute_error
    assert L.get("mape") is L.mean_absolute_percentage_error
    assert L.get("msle") is L.mean_squared_logarithmic_error
    assert L.get("kld") is L.kl_divergence is L.kullback_leibler_divergence
    assert L.get("logcosh") is L.log_cosh
    assert L.get("huber") is L.huber
    assert L.get("sparse_categorical_crossentropy") is L.sparse_categorical_crossentropy
    assert isinstance(L.get("CategoricalCrossentropy"), L.CategoricalCrossentropy)
    assert L.get(None) is None
    assert L.get(L.poisson) is L.poisson
    loss = L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, reduction="sum")
    s = L.serialize(loss)
    assert s["class_name"] == "CategoricalCrossentropy"
    back = L.get(s)
    assert type(back) is L.CategoricalCrossentropy and back.get_config() == loss.get_config()
    assert L.serialize(L.mse) == "mean_squared_error"
    for cls, *_ in REGRESSION:
        obj = cls()
        assert type(L.deserialize(L.serialize(obj))) is cls
    with pytest.raises(ValueError, match="Unknown loss"):
        L.get("not_a_loss")
    wrapped = L.LossFunctionWrapper(L.mean_squared_error, name="m")
    assert float(wrapped(np.zeros((2, 2)), np.ones((2, 2)))) == 1.0


def test_custom_loss_subclass():
    class Twice(L.Loss):
        def call(self, y_true, y_pred):
            return 2 * tnp.mean(tnp.asarray(y_pred) - tnp.asarray(y_true), axis=-1)

    loss = Twice(reduction="sum")
    assert loss.name == "twice"
    assert float(loss(np.zeros((2, 3)), np.ones((2, 3)))) == 4.0
