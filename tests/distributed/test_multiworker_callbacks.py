"""Callbacks under MultiWorkerMirroredStrategy in real ``mpiexec`` jobs
(``scripts/mw_callbacks.py``, 2 ranks): the chief draws the progress bar and makes every write;
a job killed after a backup, relaunched, resumes at the interrupted epoch on every worker and
ends with the weights of an uninterrupted job, bit for bit."""
import json

import numpy as np
import pytest

pytestmark = pytest.mark.timeout(200)    # a test runs up to three jobs of about 5 s each


def test_only_the_chief_prints_and_writes(mpirun, tmp_path):
    job = mpirun("mw_callbacks.py", 2, timeout=90, args=(tmp_path, "writes"))
    assert job.returncode == 0 and not job.timed_out, str(job)
    chief = json.load(open(tmp_path / "0.json"))
    other = json.load(open(tmp_path / "1.json"))
    assert "Epoch 2/2" in chief["printed"] and "saving model to" in chief["printed"]
    assert other["printed"] == ""
    # ModelCheckpoint twice + model.save; BackupAndRestore twice; model.save_weights once
    assert chief["counts"] == {"save_model": 5, "save": 2, "save_weights": 1}
    assert other["counts"] == {}
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert rows[0] == "epoch,accuracy,loss" and len(rows) == 3
    assert (tmp_path / "ckpt-2").exists() and (tmp_path / "final").exists()
    assert not (tmp_path / "backup").exists()     # deleted by the chief at the end
    # save returns on every worker once the chief's write is done: loading it at once works
    assert chief["loaded_same"] and other["loaded_same"]
    # the chief's failed write: its own error there, a RuntimeError naming it elsewhere
    assert len(chief["errors"]) == 2 and all(e.startswith(("NotADirectoryError", "FileExists"))
                                             for e in chief["errors"]), chief["errors"]
    assert len(other["errors"]) == 2 and all(
        e.startswith("RuntimeError: model.save: the chief (worker 0) failed to write")
        for e in other["errors"]), other["errors"]
    assert chief["after"] == other["after"]


def test_a_relaunched_job_resumes_where_the_killed_one_stopped(mpirun, tmp_path):
    crash = mpirun("mw_callbacks.py", 2, timeout=90, args=(tmp_path, "crash"))
    assert crash.returncode != 0 and not crash.timed_out, str(crash)
    assert "simulated failure at the end of epoch 1" in crash.output
    resume = mpirun("mw_callbacks.py", 2, timeout=90, args=(tmp_path, "resume"))
    assert resume.returncode == 0 and not resume.timed_out, str(resume)
    straight = mpirun("mw_callbacks.py", 2, timeout=90, args=(tmp_path, "straight"))
    assert straight.returncode == 0 and not straight.timed_out, str(straight)
    for rank in (0, 1):
        r = np.load(tmp_path / f"resume-{rank}.npz")
        s = np.load(tmp_path / f"straight-{rank}.npz")
        assert list(r["epochs"]) == [2, 3] and list(s["epochs"]) == [0, 1, 2, 3]
        np.testing.assert_array_equal(r["weights"], s["weights"])
        np.testing.assert_array_equal(r["loss"], s["loss"][2:])


def test_a_checkpoint_holds_the_jobs_batch_norm_statistics(mpirun, tmp_path):
    # TF saves a SyncOnReadVariable's aggregated value; each worker wrote its own before
    import tnp_train as tt
    job = mpirun("mw_checkpoint_on_read.py", 2, timeout=90, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    local = [json.load(open(tmp_path / f"{r}.json")) for r in (0, 1)]
    for r in local:
        assert r["before"] == r["after"]            # the local state is put back
    assert not np.allclose(local[0]["before"], local[1]["before"])
    job_mean = np.mean([r["before"] for r in local], axis=0)

    def moving_mean(path):
        keys = [k for k, _ in tt.train.list_variables(str(path)) if "moving_mean" in k]
        return tt.train.load_variable(str(path), keys[0])

    np.testing.assert_allclose(moving_mean(tmp_path / "w"), job_mean, rtol=1e-6)
    for r in local:                                   # get_weights: TF's cross-replica read
        np.testing.assert_allclose(r["get_weights"], job_mean, rtol=1e-6)
    for r in (0, 1):
        np.testing.assert_allclose(moving_mean(tmp_path / f"ck{r}"), job_mean, rtol=1e-6)
        managed = tt.train.latest_checkpoint(str(tmp_path / f"ck-managed-{r}"))
        np.testing.assert_allclose(moving_mean(managed), job_mean, rtol=1e-6)
