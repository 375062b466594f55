"""The profiler in a real 2-rank ``mpiexec`` job (``scripts/prof_mpi.py``): both workers'
traces and worker 0's merged trace are written, the merged trace removes rank 1's +1000 s clock
shift (the same collective, by ``seq``, ends at about the same time on both ranks), and rank 0's
time waiting for the other rank grows by about the 200 ms rank 1 sleeps in every step.

What is timed is asserted as structure, so that a loaded machine cannot fail it: the shift is
a thousand times the one-second bound on a matching end's gap, and the waits are compared with
each other and with the injected sleep, never bounded above by milliseconds."""
import json
import os
import statistics
import sys
import urllib.parse

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tnp_train", "profiler"))
import trace_checks as tc  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SHIFT_US = 1e9               # rank 1's clock shift in the script (1000 s)
ALIGNED_US = 1e6             # what "at the same time" means here: within 1 s
LATE_MS = 200.0              # rank 1's sleep per step in the "late" phase


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
        # the offsets estimated at start undo the shift (up to the estimate's round trip)
        assert by_rank[0]["metadata"]["clock_offset_us"] == 0.0
        offset = by_rank[1]["metadata"]["clock_offset_us"]
        assert abs(offset + SHIFT_US) < ALIGNED_US, offset
        # the merge moved every event of rank 1 by that offset, and none of rank 0's
        assert merged["metadata"]["clock_offset_us"] == {"0": 0.0, "1": offset}
        for r, moved in ((0, 0.0), (1, offset)):
            own = sorted(e["ts"] for e in by_rank[r]["traceEvents"] if "ts" in e)
            got = sorted(e["ts"] for e in merged["traceEvents"] if e["pid"] == r and "ts" in e)
            assert got == pytest.approx([t + moved for t in own], abs=0.01), r

        raw = [_collective_ends(by_rank[r], r) for r in (0, 1)]
        ends = [_collective_ends(merged, r) for r in (0, 1)]
        seqs = sorted(set(ends[0]) & set(ends[1]))
        # at least one per step: the gradients' bucket, the metrics' state riding at its end
        assert len(seqs) >= 8 and set(ends[0]) == set(ends[1])
        # each worker's own file keeps its own clock: rank 1 ends about 1000 s "later"
        assert abs(statistics.median(raw[1][s] - raw[0][s] for s in seqs) - SHIFT_US) \
            < ALIGNED_US
        # merged: the ranks leave a collective together, so the same seq ends at about the
        # same time on both; how close depends on the machine's load, which is not the merge's
        # business: a second, against the thousand seconds a missing or wrong offset leaves.
        gaps = sorted(ends[1][s] - ends[0][s] for s in seqs)
        assert abs(statistics.median(gaps)) < ALIGNED_US, gaps
        assert max(abs(g) for g in gaps) < 10 * ALIGNED_US, gaps
        waits[phase] = [_wait_per_step_ms(merged, r) for r in (0, 1)]
        assert all(len(w) == 8 for w in waits[phase])
    even0, late0 = (statistics.median(waits[p][0]) for p in ("even", "late"))
    late1 = statistics.median(waits["late"][1])
    # rank 0 waits for rank 1's sleep in every step (a lower bound: load only adds to it);
    # rank 1, the late one, waits far less than rank 0 does
    assert late0 - even0 >= 0.5 * LATE_MS, waits
    assert late1 < 0.5 * late0, waits


def test_profile_tab_shows_both_workers(mpirun, tmp_path):
    """Each worker's XSpace (``<host>_rank<r>.xplane.pb``): TensorBoard's profile plugin lists
    a host per worker, and its trace viewer over both shows each worker's steps with rank 1's
    +1000 s clock shift removed (the same collective ends at about the same time)."""
    pytest.importorskip("tensorboard")
    pytest.importorskip("xprof")
    from tnp_train.profiler.xplane import xplane_file_name
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tnp_train", "callbacks"))
    from tensorboard_server import WAIT_S, TensorBoardServer

    job = mpirun("prof_mpi.py", 2, timeout=100, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    run_dir = json.load(open(tmp_path / "runs-0.json"))["runs"]["even"]
    workers, _ = tc.run_files(run_dir)
    hosts = {t["metadata"]["rank"]: t["metadata"]["host"] for t in workers.values()}
    files = [xplane_file_name(hosts[r], r, 2) for r in (0, 1)]
    assert sorted(n for n in os.listdir(run_dir) if n.endswith(".xplane.pb")) == sorted(files)
    names = [f[:-len(".xplane.pb")] for f in files]
    coll_names = {e["name"] for t in workers.values() for e in tc.spans(t, "collective")}

    server = TensorBoardServer(tmp_path / "even", "false", tmp_path)
    try:
        assert server.ready.wait(WAIT_S) and server.port, "".join(server.output)
        runs = server.wait_for("/data/plugin/profile/runs", lambda r: len(r) > 0)
        assert runs == [os.path.basename(run_dir)]
        q = urllib.parse.urlencode({"run": runs[0], "tag": "trace_viewer@"})
        assert server.get(f"/data/plugin/profile/hosts?{q}") == [
            {"hostname": n} for n in sorted(names)]
        # the trace viewer of both hosts at once (the tab's host menu, both ticked)
        q = urllib.parse.urlencode({"run": runs[0], "tag": "trace_viewer@",
                                    "hosts": ",".join(names), "format": "json"})
        events = server.get(f"/data/plugin/profile/data?{q}")["traceEvents"]
    finally:
        server.stop()
    processes = sorted(e["args"]["name"] for e in events if e.get("name") == "process_name")
    assert processes == [f"{n} /host:CPU" for n in sorted(names)]
    # each worker's steps, and its collectives in order (every rank runs the same ones)
    ends, steps = {}, {}
    for e in sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"]):
        if e["name"] in coll_names:
            ends.setdefault(e["pid"], []).append((e["name"], e["ts"] + e["dur"]))
        elif e["name"].startswith("train "):
            steps.setdefault(e["pid"], []).append(e["name"])
    assert list(steps.values()) == [[f"train {i}" for i in range(8)]] * 2, steps
    a, b = ends.values()
    assert [n for n, _ in a] == [n for n, _ in b] and len(a) >= 8     # one or more per step
    gaps = sorted(tb - ta for (_, ta), (_, tb) in zip(a, b))
    # the viewer's times are µs: within a second, against the 1000 s a missing offset leaves
    assert abs(statistics.median(gaps)) < ALIGNED_US, gaps
