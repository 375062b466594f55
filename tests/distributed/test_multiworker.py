"""MultiWorkerMirroredStrategy under real ``mpiexec`` jobs: 2 ranks with global batch B train
exactly as one process with batch B (the issue's gate).

``scripts/mw_equivalence.py`` trains the MLP and the small CNN for 20 SGD-with-momentum steps
(2 epochs of 10 batches of 32) through ``fit`` and through TF's custom loop; the reference is
the same script in one plain process (no strategy, no mpiexec) with rank 0's seed. Rank 1 is
seeded differently, so equal starting weights show the broadcast from worker 0. A third model
has dropout and Gaussian noise and every rank seeded alike: the ranks draw their rows of one
process's masks (and split a short last batch 14/13), so it too trains as one process.
"""

import numpy as np
import pytest

from conftest import assert_trains_as_one_process, one_process_reference

pytestmark = pytest.mark.timeout(120)

@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return one_process_reference(tmp_path_factory.mktemp("ref"), timeout=60)


def test_two_ranks_train_as_one_process(mpirun, tmp_path, reference):
    job = mpirun("mw_equivalence.py", 2, timeout=90, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    ref = reference
    for rank in (0, 1):
        got = np.load(tmp_path / f"{rank}.npz")
        # rank 1 was seeded 1001: it starts from worker 0's weights, which are the
        # reference's (same seed as rank 0); the reported losses are the job's (fit's running
        # mean, the loop's reduced sum); every batch's logs too
        assert_trains_as_one_process(got, ref, rank)
        # add_metric's mean over the epoch is the job's, as one process's
        np.testing.assert_allclose(got["extras_fit_mean_h"], ref["extras_fit_mean_h"],
                                   rtol=1e-5, err_msg=f"extras rank {rank}")
        for kind in ("mlp", "cnn", "noisy", "extras"):
            # the job's steps and the reference's ran compiled (fit's default; the dropout
            # and noise masks drawn at every call, each rank its rows of one process's)
            assert list(got[f"{kind}_fit_steps"]) == ["predict", "test", "train"], kind
            assert list(ref[f"{kind}_fit_steps"]) == ["predict", "test", "train"], kind
        for kind in ("mlp", "cnn", "noisy", "extras"):
            # the batches' logs are the job's though after the first step the metrics' state
            # is summed with the gradients instead of in a collective of its own (at most one
            # per epoch is left)
            assert int(got[f"{kind}_fit_log_collectives"]) <= 2, \
                (kind, int(got[f"{kind}_fit_log_collectives"]))
            # accuracy counts agree exactly (whole samples); evaluate's batches of 32, 32, 6
            np.testing.assert_array_equal(got[f"{kind}_fit_acc"], ref[f"{kind}_fit_acc"])
            np.testing.assert_allclose(got[f"{kind}_fit_eval"], ref[f"{kind}_fit_eval"],
                                       rtol=1e-5)
            # every rank gets the whole prediction, in the data's order
            np.testing.assert_allclose(got[f"{kind}_fit_pred"], ref[f"{kind}_fit_pred"],
                                       rtol=1e-5, atol=1e-6)
