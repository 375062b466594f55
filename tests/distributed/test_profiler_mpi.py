"""The profiler in a real 2-rank ``mpiexec`` job (``scripts/prof_mpi.py``): both workers'
traces and worker 0's merged trace are written, the merged trace removes rank 1's +50 ms clock
shift (the same collective, by ``seq``, ends at about the same time on both ranks), and rank 0's
time waiting for the other rank grows by about the 30 ms rank 1 sleeps in every step."""
import json
import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tnp_train", "profiler"))
import trace_checks as tc  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SHIFT_US = 50_000.0          # rank 1's clock shift in the script
LATE_MS = 30.0               # rank 1's sleep per step in the "late" phase


def _collective_ends(trace, pid):
    return {e["args"]["seq"]: e["ts"] + e["dur"] for e in tc.spans(trace, "collective", pid=pid)}


def _wait_per_step_ms(trace, pid):
    steps = [s for s in tc.spans(trace, "step", pid=pid) if s["name"] == "train"]
    waits = tc.spans(trace, "wait", pid=pid)
    return [sum(w["dur"] for w in waits if tc.inside(w, s)) / 1e3 for s in steps]


def test_merged_trace_of_two_ranks(mpirun, tmp_path):
    job = mpirun("prof_mpi.py", 2, timeout=100, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    info = [json.load(open(tmp_path / f"runs-{rank}.json")) for rank in (0, 1)]
    waits = {}
    for phase in ("even", "late"):
        run_dir = info[0]["runs"][phase]
        assert info[1]["runs"][phase] == run_dir      # worker 0 named the run for both
        assert os.path.dirname(run_dir) == str(tmp_path / phase / "plugins" / "profile")
        workers, merged = tc.run_files(run_dir)
        by_rank = {t["metadata"]["rank"]: t for t in workers.values()}
        assert sorted(by_rank) == [0, 1]
        for name, trace in workers.items():
            rank = trace["metadata"]["rank"]
            assert name == f"{trace['metadata']['host']}.{rank}.trace.json.gz"
            tc.check_structure(trace)
            assert {e["pid"] for e in trace["traceEvents"]} == {rank}
            assert trace["metadata"]["steps"] == info[rank]["steps"] == 8
            assert trace["metadata"]["dropped_events"] == 0
        tc.check_structure(merged)
        # the offsets estimated at start undo the shift (to well under a millisecond)
        assert by_rank[0]["metadata"]["clock_offset_us"] == 0.0
        assert abs(by_rank[1]["metadata"]["clock_offset_us"] + SHIFT_US) < 1000.0

        raw = [_collective_ends(by_rank[r], r) for r in (0, 1)]
        ends = [_collective_ends(merged, r) for r in (0, 1)]
        seqs = sorted(set(ends[0]) & set(ends[1]))
        assert len(seqs) >= 16 and set(ends[0]) == set(ends[1])  # gradients + metrics per step
        # each worker's own file keeps its own clock: rank 1 ends about 50 ms "later"
        assert abs(statistics.median(raw[1][s] - raw[0][s] for s in seqs) - SHIFT_US) < 5000.0
        # merged: the ranks leave a collective together, so the same seq ends at the same
        # time on both up to which rank notices first (the MPI layer sleeps up to 1 ms between
        # polls while it waits, and the ranks share two busy cores): no bias left, and most
        # ends within 1 ms. (An alignment off by d would put every gap near d.)
        gaps = sorted(ends[1][s] - ends[0][s] for s in seqs)
        assert abs(statistics.median(gaps)) < 1000.0, gaps
        assert sorted(abs(g) for g in gaps)[len(gaps) // 4] < 1000.0, gaps
        assert max(abs(g) for g in gaps) < SHIFT_US / 2, gaps
        waits[phase] = [_wait_per_step_ms(merged, r) for r in (0, 1)]
        assert all(len(w) == 8 for w in waits[phase])
    even0, late0 = (statistics.median(waits[p][0]) for p in ("even", "late"))
    late1 = statistics.median(waits["late"][1])
    # rank 0 waits for rank 1's 30 ms in every step; rank 1 (the late one) hardly waits
    assert late0 - even0 >= 0.66 * LATE_MS, waits
    assert late1 < 0.33 * LATE_MS, waits
