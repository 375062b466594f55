"""Merge layers (tnp_train.layers.merge) where TF 2.4's rules differ from NumPy's: inputs of
different ranks (new axes after the batch axis, not before), batch sizes that must agree,
output shapes, Concatenate's mask, Dot's axes, and the functional forms."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

L = tt.layers


def _np(a):
    return np.asarray(a)


def _r(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("cls,ref", [
    (L.Add, lambda a, b: a + b), (L.Subtract, lambda a, b: a - b),
    (L.Multiply, lambda a, b: a * b), (L.Average, lambda a, b: (a + b) / 2),
    (L.Maximum, np.maximum), (L.Minimum, np.minimum),
])
def test_lower_rank_inputs_get_axes_after_the_batch_axis(cls, ref):
    # batch 3 == the middle axis: NumPy broadcasting would pair sample i of `b` with row i of
    # every sample of `a`; TF expands `b` to (3, 1, 4)
    a, b = _r((3, 3, 4), 1), _r((3, 4), 2)
    layer = cls(dtype="float64")
    y = layer([tnp.asarray(a), tnp.asarray(b)])
    np.testing.assert_allclose(_np(y), ref(a, b[:, None, :]), rtol=1e-12)
    assert layer.compute_output_shape([(3, 3, 4), (3, 4)]) == (3, 3, 4)
    check_grads(lambda u, v: layer([u, v]), argnums=[0, 1])(tnp.asarray(a), tnp.asarray(b))


def test_elementwise_output_shapes_follow_tf():
    add = L.Add()
    assert add.compute_output_shape([(None, 4, 1), (None, 1, 5)]) == (None, 4, 5)
    assert add.compute_output_shape([(None, 4, 5), (2, 5)]) == (2, 4, 5)
    assert add.compute_output_shape([(None, None, 5), (None, 3, 5)]) == (None, None, 5)
    assert add.compute_output_shape([(None, 5), (None, 3, 1), (None, 1)]) == (None, 3, 5)
    a, b = tt.Input((4, 1)), tt.Input((5,))
    assert L.Multiply()([a, b]).shape == (None, 4, 5)


def test_bad_merges_raise_value_errors_naming_the_shapes():
    with pytest.raises(ValueError, match=r"different batch sizes.*\(2, 3\).*\(4, 3\)"):
        L.Add()([tnp.ones((2, 3)), tnp.ones((4, 3))])
    with pytest.raises(ValueError, match=r"broadcast.*\(2, 3\).*\(2, 4\)"):
        L.Add()([tnp.ones((2, 3)), tnp.ones((2, 4))])
    with pytest.raises(ValueError, match="broadcast"):
        L.Maximum()([tt.Input((3, 4)), tt.Input((3,))])
    with pytest.raises(ValueError, match="exactly 2"):
        L.Subtract()([tnp.ones((2, 3))] * 3)
    with pytest.raises(ValueError, match="matching shapes"):
        L.Concatenate()([tt.Input((3, 4)), tt.Input((2, 4))])


def test_concatenate_mask_along_time_and_features():
    a, b = tnp.asarray(_r((2, 3, 4))), tnp.asarray(_r((2, 2, 4)))
    ma = tnp.asarray(np.array([[1, 1, 0], [1, 0, 0]], bool))
    mb = tnp.asarray(np.array([[1, 0], [0, 0]], bool))
    time = L.Concatenate(axis=1)
    assert tuple(time([a, b]).shape) == (2, 5, 4)
    np.testing.assert_array_equal(_np(time.compute_mask([a, b], [ma, mb])),
                                  np.concatenate([_np(ma), _np(mb)], axis=1))
    # an unmasked input counts as all True
    np.testing.assert_array_equal(_np(time.compute_mask([a, b], [None, mb])),
                                  np.concatenate([np.ones((2, 3), bool), _np(mb)], axis=1))
    c = tnp.asarray(_r((2, 3, 2)))
    feat = L.Concatenate()
    np.testing.assert_array_equal(_np(feat.compute_mask([a, c], [ma, None])), _np(ma))
    assert feat.compute_mask([a, c], [None, None]) is None


def test_concatenate_passes_a_time_mask_through_a_model():
    ids = tt.Input((3,), dtype="int64")
    e1 = L.Embedding(5, 2, mask_zero=True)(ids)
    e2 = L.Embedding(5, 2, mask_zero=True)(ids)
    joined = L.Concatenate(axis=1)([e1, e2])                    # (batch, 6, 2), mask (batch, 6)
    pooled = L.GlobalAveragePooling1D()(joined)
    model = tt.Model(ids, pooled)
    x = np.array([[1, 2, 0], [3, 0, 0]])
    w1, w2 = (_np(l.get_weights()[0]) for l in model.layers[1:3])
    seq = np.concatenate([w1[x], w2[x]], axis=1)
    keep = np.concatenate([x > 0, x > 0], axis=1)[..., None]
    np.testing.assert_allclose(_np(model(x)), (seq * keep).sum(1) / keep.sum(1), rtol=1e-6)


def test_dot_axes_shapes_and_normalize():
    a, b = _r((2, 3, 4), 3), _r((2, 5, 4), 4)
    dot = L.Dot(axes=2, dtype="float64")
    np.testing.assert_allclose(_np(dot([tnp.asarray(a), tnp.asarray(b)])),
                               np.einsum("bik,bjk->bij", a, b), rtol=1e-12)
    assert dot.compute_output_shape([(None, 3, 4), (None, 5, 4)]) == (None, 3, 5)
    pair = L.Dot(axes=(1, 2), dtype="float64")
    c = _r((2, 4, 3), 5)
    np.testing.assert_allclose(_np(pair([tnp.asarray(c), tnp.asarray(b)])),
                               np.einsum("bki,bjk->bij", c, b), rtol=1e-12)
    assert pair.compute_output_shape([(None, 4, 3), (None, 5, 4)]) == (None, 3, 5)
    u, v = _r((3, 4), 6), _r((3, 4), 7)
    cos = L.Dot(axes=-1, normalize=True, dtype="float64")([tnp.asarray(u), tnp.asarray(v)])
    ref = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(_np(cos), ref[:, None], rtol=1e-12)
    assert L.Dot(1).compute_output_shape([(None, 4), (None, 4)]) == (None, 1)
    check_grads(lambda p, q: pair([p, q]), argnums=[0, 1])(tnp.asarray(c), tnp.asarray(b))


def test_dot_config_keeps_axes_as_given():
    assert L.Dot(1).get_config()["axes"] == 1
    assert L.Dot((1, 2)).get_config()["axes"] == [1, 2]
    again = tt.layers.deserialize(tt.layers.serialize(L.Dot([2, 1], normalize=True)))
    assert again.axes == (2, 1) and again.normalize


def test_dot_bad_axes():
    with pytest.raises(TypeError, match="axes"):
        L.Dot("1")
    with pytest.raises(ValueError, match="two elements"):
        L.Dot((1, 2, 3))
    with pytest.raises(ValueError, match="int"):
        L.Dot((1.0, 2))
    with pytest.raises(ValueError, match="incompatibility"):
        L.Dot(1)([tnp.ones((2, 3)), tnp.ones((2, 4))])
    with pytest.raises(ValueError, match="non-batch axis"):
        L.Dot(0)([tnp.ones((2, 3)), tnp.ones((2, 3))])
    with pytest.raises(ValueError, match="batch sizes"):
        L.Dot(1)([tnp.ones((2, 3)), tnp.ones((3, 3))])


def test_functional_forms():
    a, b = tnp.asarray(_r((2, 3), 8)), tnp.asarray(_r((2, 3), 9))
    for fn, cls in [(L.add, L.Add), (L.subtract, L.Subtract), (L.multiply, L.Multiply),
                    (L.average, L.Average), (L.maximum, L.Maximum), (L.minimum, L.Minimum)]:
        np.testing.assert_array_equal(_np(fn([a, b])), _np(cls()([a, b])))
    np.testing.assert_array_equal(_np(L.concatenate([a, b], axis=0)),
                                  np.concatenate([_np(a), _np(b)]).astype(np.float32))
    np.testing.assert_allclose(_np(L.dot([a, b], axes=1, normalize=False)),
                               _np(L.Dot(1)([a, b])))
