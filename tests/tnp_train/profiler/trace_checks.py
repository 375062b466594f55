"""Helpers of the profiler tests: find and parse the trace files of a run, and check the
structure every trace must have (the trace-event format of docs/profiler.md)."""
import glob
import gzip
import json
import os

# ts and dur are written rounded to 0.001 us each, so a child's end may pass its parent's by 0.002
EPS_US = 0.002


def run_dirs(logdir):
    return sorted(glob.glob(os.path.join(os.fspath(logdir), "plugins", "profile", "*")))


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def run_files(run_dir):
    """``(worker traces by file name, merged trace)`` of one run folder (which also holds an
    XSpace per worker, for TensorBoard's Profile tab)."""
    names = sorted(os.listdir(run_dir))
    workers = {n: load(os.path.join(run_dir, n)) for n in names
               if n.endswith(".trace.json.gz") and not n.startswith("merged.")}
    xplanes = [n for n in names if n.endswith(".xplane.pb")]
    merged = load(os.path.join(run_dir, "merged.trace.json.gz"))
    assert set(names) == set(workers) | set(xplanes) | {"merged.trace.json.gz"}, names
    assert len(xplanes) == len(workers), names
    return workers, merged


def spans(trace, cat=None, pid=None, tid=None):
    return sorted((e for e in trace["traceEvents"] if e["ph"] == "X"
                   and (cat is None or e["cat"] == cat) and (pid is None or e["pid"] == pid)
                   and (tid is None or e["tid"] == tid)),
                  key=lambda e: (e["ts"], -e["dur"]))


def thread_names(trace, pid=0):
    return {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}


def inside(child, parent):
    return (parent["ts"] - EPS_US <= child["ts"]
            and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + EPS_US)


def check_structure(trace):
    """Every event well formed; on each (pid, tid) the complete events nest (each one lies
    inside every span that is open when it starts); returns the X events."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit", "metadata"}
    assert trace["displayTimeUnit"] == "ms"
    xs = []
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M", "i"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index",
                                 "thread_sort_index"), e
            continue
        assert isinstance(e["name"], str) and isinstance(e["cat"], str), e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["args"], dict), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            xs.append(e)
    by_thread = {}
    for e in xs:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in by_thread.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + EPS_US:
                stack.pop()
            if stack:
                assert inside(e, stack[-1]), (key, e, stack[-1])
            stack.append(e)
    named = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(by_thread) <= named, set(by_thread) - named
    return xs


class NoWriter:
    """A TensorBoard summary writer that writes nothing (the profile_batch tests read only the
    profiler's files)."""

    def __init__(self, log_dir):
        pass

    def add_scalar(self, *a):
        pass

    def flush(self):
        pass

    def close(self):
        pass
