"""``tt.layers.experimental.preprocessing.PreprocessingLayer``: the base of the adaptable layers
(as in TF 2.4, ``isinstance(Normalization(), PreprocessingLayer)``), and a user subclass whose
state ``adapt`` computes through the documented hooks."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

P = tt.layers.experimental.preprocessing


def test_builtin_adaptable_layers_are_preprocessing_layers():
    for layer in (P.Normalization(), P.TextVectorization(), P.StringLookup(),
                  P.IntegerLookup(), P.Discretization(bins=[0.0])):
        assert isinstance(layer, tt.layers.experimental.preprocessing.PreprocessingLayer), \
            type(layer).__name__


class RunningMax(tt.layers.experimental.preprocessing.PreprocessingLayer):
    """Scales inputs by the largest |value| seen by ``adapt``."""

    def _reset_state(self):
        self.scale = 0.0

    def _update_state(self, batch):
        self.scale = max(self.scale, float(np.abs(np.asarray(batch)).max()))

    def _finalize_state(self):
        self.scale = self.scale or 1.0

    def call(self, inputs):
        return inputs / self.scale


def test_a_subclass_adapts_on_arrays_and_datasets():
    base = tt.layers.experimental.preprocessing.PreprocessingLayer
    assert RunningMax.__bases__ == (base,) and base.adapt is RunningMax.adapt
    data = np.array([[1.0, -4.0], [2.0, 3.0], [0.5, 0.5]], np.float32)
    layer = RunningMax()
    layer.adapt(data)
    assert layer.scale == 4.0
    np.testing.assert_allclose(np.asarray(layer(tnp.asarray(data))), data / 4.0)
    layer.adapt(tt.data.Dataset.from_tensor_slices(data * 2).batch(2))
    assert layer.scale == 8.0                       # reset_state=True: the old max is gone
    with pytest.raises(ValueError, match="reset_state=False"):
        layer.adapt(data, reset_state=False)
    with pytest.raises(ValueError, match="empty"):
        layer.adapt(tt.data.Dataset.from_tensor_slices(data).take(0))
