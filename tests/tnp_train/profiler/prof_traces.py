"""Hand-made traces in the profiler's format (docs/profiler.md), times given in milliseconds."""
from __future__ import annotations

import os

from tnp_train.profiler.merge import write_trace


def X(name, cat, ts_ms, dur_ms, tid=0, args=None):
    """A complete event; ``ts``/``dur`` in µs as the format stores them."""
    return {"ph": "X", "name": name, "cat": cat, "ts": ts_ms * 1000.0, "dur": dur_ms * 1000.0,
            "pid": 0, "tid": tid, "args": dict(args or {})}


def worker_trace(events, rank=0, host="node0", threads=None, offset_us=0.0, dropped=0):
    """One worker's trace: its events get ``pid = rank``; ``threads`` maps tid -> name
    (default: tid 0 is "main")."""
    threads = {0: "main"} if threads is None else threads
    meta = [{"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
             "args": {"name": f"worker {rank} ({host})"}}]
    meta += [{"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}}
             for tid, name in threads.items()]
    evs = [dict(e, pid=rank) for e in events]
    steps = sum(e["cat"] == "step" for e in evs)
    return {"traceEvents": meta + evs, "displayTimeUnit": "ms",
            "metadata": {"rank": rank, "host": host, "clock_offset_us": offset_us,
                         "dropped_events": dropped, "options": {}, "steps": steps}}


def fit_step(t0, n, input_ms=1.0, forward_ms=3.0, backward_ms=4.0, optimizer_ms=1.0,
             allreduce_ms=0.0, wait_ms=0.0, gap_ms=0.5, tid=0, seq=None):
    """One training step laid out as fit records it: input wait, the forward pass (one layer),
    backward (with wait + allreduce inside), optimizer, ``gap_ms`` of untraced time between
    each (so other = 4 * gap_ms). Returns ``(events, end_ms)``."""
    evs, t = [], t0
    t += gap_ms
    evs.append(X("next", "input", t, input_ms, tid))
    t += input_ms + gap_ms
    evs.append(X("dense", "forward", t, forward_ms, tid, {"class": "Dense"}))
    t += forward_ms + gap_ms
    b0 = t
    bwd = backward_ms + wait_ms + allreduce_ms
    evs.append(X("backward", "backward", b0, bwd, tid))
    if wait_ms or allreduce_ms:
        c0 = b0 + backward_ms
        s = n if seq is None else seq
        evs.append(X("wait", "wait", c0, wait_ms, tid, {"seq": s}))
        evs.append(X("allreduce", "collective", c0 + wait_ms, allreduce_ms, tid,
                     {"seq": s, "bytes": 4096, "op": "sum", "name": "allreduce"}))
    t += bwd + gap_ms
    evs.append(X("apply_gradients", "optimizer", t, optimizer_ms, tid))
    t += optimizer_ms
    step_ms = t - t0
    evs.append(X("train_step", "step", t0, step_ms, tid, {"step_num": n}))
    return evs, t


def fit_steps(nsteps, t0=0.0, **kw):
    evs, t = [], t0
    for n in range(nsteps):
        e, t = fit_step(t, n, **kw)
        evs += e
        t += 0.25          # between steps: outside any step
    return evs


def write_run(logdir, traces, run="2026_01_01_00_00_00", merged=None):
    """Write ``traces`` as one run's per-worker files (and ``merged`` when given)."""
    folder = os.path.join(logdir, "plugins", "profile", run)
    os.makedirs(folder, exist_ok=True)
    for tr in traces:
        meta = tr["metadata"]
        write_trace(os.path.join(folder, f"{meta['host']}.{meta['rank']}.trace.json.gz"), tr)
    if merged is not None:
        write_trace(os.path.join(folder, "merged.trace.json.gz"), merged)
    return folder
