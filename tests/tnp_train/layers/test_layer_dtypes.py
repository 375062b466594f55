"""``Layer.add_weight``'s default initializer by dtype, as TF 2.4's: ``glorot_uniform`` for
floating dtypes (bfloat16 included, which NumPy files under kind 'V'), zeros for integers and
booleans."""
import math

import numpy as np
import pytest

import tnp
import tnp_train as tt


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_floating_weights_default_to_glorot_uniform(dtype):
    layer = tt.layers.Layer()
    w = layer.add_weight("w", shape=(20, 30), dtype=dtype)
    assert w.dtype == (np.dtype(tnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype))
    a = np.asarray(w.numpy(), dtype=np.float64)
    limit = math.sqrt(6.0 / (20 + 30))              # Glorot & Bengio's uniform limit
    assert np.all(np.abs(a) <= limit * 1.01) and np.abs(a).max() > limit / 2
    assert np.unique(a).size > 100                 # drawn, not a constant fill


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_integer_and_boolean_weights_default_to_zeros(dtype):
    w = tt.layers.Layer().add_weight("w", shape=(2, 3), dtype=dtype, trainable=False)
    assert w.dtype == np.dtype(dtype) and not np.asarray(w.numpy()).any()
