"""SparseCategoricalCrossentropy against plain NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("labels_2d", [False, True])
def test_sparse_categorical_crossentropy_matches_numpy(from_logits, labels_2d):
    r = rng(2)
    logits = r.standard_normal((6, 4)).astype(np.float32)
    y = r.integers(0, 4, 6)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = -np.log(p[np.arange(6), y]).mean()
    pred = logits if from_logits else p
    labels = y[:, None] if labels_2d else y
    got = tt.losses.SparseCategoricalCrossentropy(from_logits=from_logits)(tnp.asarray(labels), tnp.asarray(pred))
    assert float(got) == pytest.approx(float(expected), rel=1e-5)
    with pytest.raises(ValueError, match="labels"):
        tt.losses.SparseCategoricalCrossentropy()(tnp.asarray(y[:5]), tnp.asarray(pred))
