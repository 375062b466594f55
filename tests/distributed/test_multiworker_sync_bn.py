"""SyncBatchNormalization under a real 2-rank ``mpiexec`` job: each rank holds half of every
global batch; the forward outputs, and the weights and moving statistics after 3 SGD steps
(custom loop, then ``fit``), equal one process running BatchNormalization(fused=False) on the
whole batch (``scripts/mw_sync_bn.py`` computes that reference in the same process, from
worker 0's seed, after the distributed run)."""
import numpy as np
import pytest

pytestmark = pytest.mark.timeout(100)


def test_two_ranks_equal_one_process_batch_norm(mpirun, tmp_path):
    job = mpirun("mw_sync_bn.py", 2, timeout=70, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    got = [np.load(tmp_path / f"{rank}.npz") for rank in (0, 1)]
    ref = got[0]
    # the first step's logits: each rank's half of the reference's global batch
    np.testing.assert_allclose(np.concatenate([got[0]["dist_loop_out"], got[1]["dist_loop_out"]]),
                               ref["ref_loop_out"], rtol=1e-5, atol=1e-6)
    for rank in (0, 1):
        for tag in ("loop", "fit"):
            np.testing.assert_allclose(got[rank][f"dist_{tag}"], ref[f"ref_{tag}"],
                                       rtol=1e-5, atol=1e-6, err_msg=f"rank {rank} {tag}")
        np.testing.assert_array_equal(got[rank]["ref_loop"], ref["ref_loop"])
