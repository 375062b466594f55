"""The sharded update (``TNP_SHARDED_UPDATE=1``, tnp_train.distribute.sharded_update) gives
the bits of the ordinary one: ``scripts/mw_sharded.py`` trains four cases on 3 ranks (so the
ranks' parts of each bucket cut through variables) with it on and off, and every weight and
optimizer slot of every rank must be equal, bit for bit, and so must every batch's logs (the
metrics' state rides at the end of the last bucket, summed from the ranks' buffers in rank
order under the sharded update). The variables' class shows where the
weights live: shared (``SharedVariable``) while the sharded update runs, private again after
a write from outside it (``set_weights``) or under an optimizer that cannot shard
(``clipnorm``), shared again with one that can."""
import numpy as np
import pytest

pytestmark = pytest.mark.timeout(150)


def _load(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def test_sharded_update_matches_the_ordinary_one(mpirun, tmp_path):
    runs = {}
    for mode in ("1", "0"):
        out = tmp_path / mode
        out.mkdir()
        job = mpirun("mw_sharded.py", 3, timeout=60, env={"TNP_SHARDED_UPDATE": mode},
                     args=(out,))
        assert job.returncode == 0 and not job.timed_out, str(job)
        assert job.leftover == []          # no rank outlived its job
        runs[mode] = [_load(out / f"{r}.npz") for r in range(3)]
    ref = runs["0"][0]
    weights = [k for k in ref if not k.endswith(("_classes", "_copyto"))]
    assert len(weights) > 20 and "sgd_logs_0" in weights and len(ref["sgd_logs_0"]) == 6
    for mode, ranks in runs.items():
        for rank, got in enumerate(ranks):
            assert sorted(got) == sorted(ref)
            for key in weights:
                np.testing.assert_array_equal(got[key], ref[key],
                                              err_msg=f"{key}, sharded={mode}, rank {rank}")
    for rank in range(3):
        shared, plain = runs["1"][rank], runs["0"][rank]
        assert list(shared["sgd_classes"]) == ["SharedVariable"]
        assert list(shared["plain_classes"]) == ["SharedVariable"]
        assert list(shared["adamw_classes"]) == ["SharedVariable"]
        # fit; set_weights; fit; clipnorm's fit; kernel += 1 (after another fit); a plain
        # SGD's fit
        assert list(shared["writes_classes"]) == ["SharedVariable", "Variable",
                                                  "SharedVariable", "Variable", "Variable",
                                                  "SharedVariable"]
        assert list(shared["writes_copyto"]) == ["read-only"]
        assert list(plain["writes_copyto"]) == ["wrote"]
        for case in ("sgd_classes", "plain_classes", "adamw_classes", "writes_classes"):
            assert set(plain[case]) == {"Variable"}
