"""Distributed input under real ``mpiexec`` jobs (``scripts/mw_data.py``, 2 ranks seeded
differently, unseeded shuffles): across the workers every sample is seen exactly once per
epoch, the epochs are reshuffled, every worker takes the same number of steps, and an uneven
last batch is split on every worker (3/2 of 5; 1/0 of 1), through the custom loop
(``experimental_distribute_dataset``) and through ``fit`` on shuffled arrays and on a shuffled
dataset; a pipeline reading files is sharded by FILE under AUTO (a worker whose files ran out
takes empty batches until all are done); ``AutoShardPolicy.OFF`` gives every worker every
sample, as in TF."""
import json

import numpy as np
import pytest

pytestmark = pytest.mark.timeout(120)

CASES = {"loop_37": 37, "loop_33": 33, "fit_arrays": 37, "fit_dataset": 33}


def test_every_sample_once_per_epoch_equal_steps_and_equal_weights(mpirun, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    first = 0
    for i, lines in enumerate([7, 3, 5, 9, 1]):      # 25 ids in files of unequal lengths
        (files / f"part-{i}.txt").write_text("".join(f"{first + j}\n" for j in range(lines)))
        first += lines
    job = mpirun("mw_data.py", 2, timeout=90, args=(tmp_path, files))
    assert job.returncode == 0 and not job.timed_out, str(job)
    l0, l1 = [json.load(open(tmp_path / f"{r}.json")) for r in (0, 1)]
    for case, n in CASES.items():
        orders = []
        for epoch in range(3):
            s0, s1 = l0[case][epoch], l1[case][epoch]
            assert len(s0) == len(s1) == 5, (case, epoch, len(s0), len(s1))
            seen = sorted(sum(s0, []) + sum(s1, []))
            assert seen == list(range(n)), (case, epoch)
            # each global batch of 8 is split 4/4; the last one 3/2 (37) or 1/0 (33)
            assert [len(b) for b in s0[:4]] == [4] * 4 and [len(b) for b in s1[:4]] == [4] * 4
            assert (len(s0[4]), len(s1[4])) == ((3, 2) if n == 37 else (1, 0)), (case, epoch)
            orders.append(sum(s0, []) + sum(s1, []))
        # reshuffled each epoch (one order three times would mean no reshuffling)
        assert orders[0] != orders[1] or orders[1] != orders[2], case
    for epoch in range(3):
        # FILE: rank 0 reads files 0, 2, 4 (13 lines), rank 1 files 1, 3 (12); batches of 4
        # in per-replica parts of 2; both take 8 steps, rank 1 its last two empty
        f0, f1 = l0["file_auto"][epoch], l1["file_auto"][epoch]
        assert len(f0) == len(f1) == 8, (epoch, f0, f1)
        assert sorted(sum(f0, []) + sum(f1, [])) == list(range(25))
        assert set(sum(f0, [])) == set(range(7)) | set(range(10, 15)) | {24}
        assert f1[-2:] == [[], []]
    # OFF: each worker iterates every part of every batch: all 10 samples, 6 steps
    expected = [[0, 1], [2, 3], [4, 5], [6, 7], [8], [9]]
    assert l0["data_off"] == [expected] and l1["data_off"] == [expected]
    w0, w1 = [np.load(tmp_path / f"{r}.npz") for r in (0, 1)]
    for key in w0.files:
        np.testing.assert_array_equal(w0[key], w1[key])
    assert l0["fit_arrays_history"] == l1["fit_arrays_history"]
    assert l0["fit_dataset_history"] == l1["fit_dataset_history"]
