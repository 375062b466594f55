"""Gradients written straight into the buckets under a real 2-rank ``mpiexec`` job
(``scripts/mw_destinations.py``): for an Embedding with SimpleRNN, LSTM and GRU, synchronized
BatchNormalization with LayerNormalization, and MultiHeadAttention, every trainable variable's
gradient is computed in its bucket slot at every bucketed step, the job trains bit for bit as
with the gradients copied into the buckets, and as one process on the whole batches."""
import numpy as np
import pytest

pytestmark = pytest.mark.timeout(150)

STEPS = 3


def test_two_ranks_write_every_layer_kinds_gradients_into_the_buckets(mpirun, tmp_path):
    job = mpirun("mw_destinations.py", 2, timeout=120, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    got = [np.load(tmp_path / f"{rank}.npz") for rank in (0, 1)]
    for rank in (0, 1):
        g = got[rank]
        for name in ("sequence", "normalization", "attention"):
            n = int(g[f"{name}_slots_variables"])
            # the first step reduces at once and lays the buckets out; every later one
            # writes every variable's gradient into its slot
            assert int(g[f"{name}_slots_written"]) == (STEPS - 1) * n, name
            assert int(g[f"{name}_copies_written"]) == 0, name
            np.testing.assert_array_equal(g[f"{name}_slots"], g[f"{name}_copies"],
                                          err_msg=f"{name} rank {rank}")
            np.testing.assert_array_equal(g[f"{name}_slots_loss"], g[f"{name}_copies_loss"])
            np.testing.assert_array_equal(g[f"{name}_slots"], got[0][f"{name}_slots"])
            np.testing.assert_allclose(g[f"{name}_slots"], g[f"{name}_ref"], rtol=1e-5,
                                       atol=1e-6, err_msg=f"{name} rank {rank}")
            np.testing.assert_allclose(g[f"{name}_slots_loss"], g[f"{name}_ref_loss"],
                                       rtol=1e-5)
            np.testing.assert_array_equal(g[f"{name}_slots_acc"], g[f"{name}_ref_acc"])
