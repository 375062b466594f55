"""Means over replicas of bfloat16 values (``cpu:0`` and the fake ``cpu:1``) divide as floats
do: bfloat16 is floating (NumPy files it under kind 'V'), so neither the integer path (floor
division) nor a float64 result applies. Reference: the same means in float32, by hand."""
import numpy as np

import tnp
import tnp_train as tt

D = tt.distribute
BF16 = np.dtype(tnp.bfloat16)


def _replicated():
    s = D.MirroredStrategy(["cpu:0", "cpu:1"])
    # replica r holds [3, 5] * (r + 1): [3, 5] and [6, 10]
    out = s.run(lambda: tnp.asarray(np.array([3.0, 5.0], BF16))
                * (D.get_replica_context().replica_id_in_sync_group + 1))
    return s, out


def test_mean_over_replicas_of_bfloat16():
    s, out = _replicated()
    m = s.reduce("mean", out, axis=None)
    assert m.dtype == BF16
    np.testing.assert_array_equal(np.asarray(m.to_device("cpu"), np.float32), [4.5, 7.5])


def test_mean_over_replicas_and_an_axis_of_bfloat16():
    s, out = _replicated()
    m = s.reduce("mean", out, axis=0)          # (3 + 5 + 6 + 10) / 4
    assert m.dtype == BF16
    assert float(np.asarray(m.to_device("cpu"), np.float32)) == 6.0
