"""The step-time breakdown of a profiling run (TF's Overview page and Pod viewer, as data).

For every worker and training step: the time in input, forward, backward, optimizer,
all-reduce transfer, waiting for other ranks, checkpoint writes and other host time. Only the
worker's main thread is attributed, and each of its microseconds inside a step goes to the
innermost span covering it; ``op`` and ``python`` spans count for the category of their nearest
enclosing span of another kind, so an op run by a layer is forward time. What no span inside
the step covers is ``other``. The parts of a step therefore sum to the step's time. Spans of
other threads (the input pipeline's workers, replica threads) appear in the per-op table and
as busy time, never in the breakdown.

``report(path)`` reads a logdir (its newest run under ``plugins/profile/``), a run folder or a
single trace file and returns the dict that ``python -m tnp_train.profiler report --json``
prints; ``format_text`` renders it as tables, ``tnp_train.profiler.html`` as a page.
"""
from __future__ import annotations

import heapq
import os
import re
import statistics

from .merge import PROFILE_DIR, read_trace

__all__ = ["CATEGORIES", "find_trace_files", "load_traces", "analyze", "report", "bottleneck",
           "format_text"]

# the breakdown's parts, in the order of the JSON keys, the tables and the bars
CATEGORIES = ("input", "forward", "backward", "optimizer", "allreduce", "wait", "checkpoint",
              "other")
_OTHER = CATEGORIES.index("other")
# trace category -> breakdown part; "step", "trace", "copy" and unknown categories are other
_PART_OF = {"input": 0, "forward": 1, "backward": 2, "optimizer": 3, "collective": 4, "wait": 5,
            "checkpoint": 6}
_INHERITS = frozenset(("op", "python"))
# between spans with the same start and end, the outer one: a step, then a user trace, then the
# instrumented spans, then ops and Python functions (always the innermost)
_NESTING = {"step": 0, "trace": 1, "op": 3, "python": 3}
_EVAL_STEPS = frozenset(("test", "predict"))
_WORKER_NAME = re.compile(r"^worker (\d+) \((.*)\)$")


# --- finding and loading traces --------------------------------------------------------------

def find_trace_files(path, run=None):
    """``(run_folder, files)``: the per-worker ``*.trace.json.gz`` files of a run.

    ``path`` is a logdir (the newest run under ``plugins/profile/``, or the one named ``run``),
    a run folder, or a single trace file. A run folder with no per-worker file but a merged
    trace gives the merged trace.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return os.path.dirname(path), [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"profiler report: no such file or folder: {path}")
    profile = os.path.join(path, PROFILE_DIR)
    if os.path.isdir(profile):
        runs = sorted(d for d in os.listdir(profile) if os.path.isdir(os.path.join(profile, d)))
        if run is not None:
            if run not in runs:
                raise FileNotFoundError(
                    f"profiler report: no run {run!r} under {profile} (runs: "
                    f"{', '.join(runs) or 'none'})")
            runs = [run]
        # run names are timestamps (YYYY_MM_DD_HH_MM_SS[_n]): the newest sorts last; a run of
        # the same second with a suffix is newer than the one without
        runs.sort(key=lambda d: (d.split("_")[:6], len(d), d))
        for name in reversed(runs):
            folder = os.path.join(profile, name)
            files = _run_files(folder)
            if files:
                return folder, files
        raise FileNotFoundError(f"profiler report: no trace files in any run under {profile}")
    if run is not None:
        raise FileNotFoundError(f"profiler report: {path} has no {PROFILE_DIR} folder to hold "
                                f"a run {run!r}")
    files = _run_files(path)
    if not files:
        raise FileNotFoundError(
            f"profiler report: {path} holds no *.trace.json.gz file and no {PROFILE_DIR} folder")
    return path, files


def _run_files(folder):
    names = sorted(n for n in os.listdir(folder)
                   if n.endswith((".trace.json.gz", ".trace.json")))
    workers = [n for n in names if not n.startswith("merged.")]
    chosen = workers or [n for n in names if n.startswith("merged.")][:1]
    return [os.path.join(folder, n) for n in chosen]


def load_traces(path, run=None):
    """``(run_folder, traces)``: the trace dicts of :func:`find_trace_files`."""
    folder, files = find_trace_files(path, run)
    return folder, [read_trace(f) for f in files]


# --- the sweep --------------------------------------------------------------------------------

def _sweep(events, with_steps):
    """Exclusive time of each span of one thread, and (``with_steps``) each step's parts.

    At every instant the innermost live span (the latest started; on equal starts the one
    that ends first) owns the time. Returns ``(self_us, steps)``, ``steps`` a list of
    ``(event_index, parts_us)`` in time order.
    """
    n = len(events)
    starts = [e[_TS] for e in events]
    ends = [e[_TS] + e[_DUR] for e in events]
    cats = [e[_CAT] for e in events]
    order = sorted(range(n), key=lambda i: (starts[i], -ends[i], _NESTING.get(cats[i], 2), -i))
    part = [_OTHER] * n
    step_of = [-1] * n
    self_us = [0.0] * n
    parts = {}
    times = sorted(set(starts).union(ends))
    heap, p = [], 0                      # live spans keyed by (-start, -push order)
    for k, t in enumerate(times):
        while heap and ends[heap[0][2]] <= t:
            heapq.heappop(heap)
        while p < n and starts[order[p]] == t:
            i = order[p]
            while heap and ends[heap[0][2]] <= t:     # a zero-length span pushed at t
                heapq.heappop(heap)
            parent = heap[0][2] if heap else -1
            cat = cats[i]
            if cat in _INHERITS:
                part[i] = part[parent] if parent >= 0 else _OTHER
            else:
                part[i] = _PART_OF.get(cat, _OTHER)
            if with_steps:
                outer = step_of[parent] if parent >= 0 else -1
                if outer >= 0 and ends[outer] <= t:   # under a span that overran its step
                    outer = -1
                if cat == "step" and outer < 0:
                    step_of[i] = i
                    parts[i] = [0.0] * len(CATEGORIES)
                else:                                 # a step inside a step is a plain span
                    step_of[i] = outer
            heapq.heappush(heap, (-t, -p, i))
            p += 1
        while heap and ends[heap[0][2]] <= t:
            heapq.heappop(heap)
        if heap and k + 1 < len(times):
            w = heap[0][2]
            t1 = times[k + 1]
            self_us[w] += t1 - t
            if with_steps:
                s = step_of[w]
                # a span overrunning its step's end owns no time of that step after it
                if s >= 0 and starts[s] <= t and t1 <= ends[s]:
                    parts[s][part[w]] += t1 - t
    steps = sorted(parts.items(), key=lambda kv: starts[kv[0]])
    return self_us, steps


# --- workers ----------------------------------------------------------------------------------

_INF = float("inf")
# a span as the sweep reads it: (ts, dur, name, cat, args)
_TS, _DUR, _NAME, _CAT, _ARGS = range(5)


def _number(x):
    # type(), not isinstance: a bool is not a time
    return (type(x) is float or type(x) is int) and -_INF < x < _INF


def _split_workers(traces):
    """rank -> {"host", "dropped_events", "threads": {tid: name}, "events": {tid: [span]}}."""
    workers = {}
    for trace in traces:
        meta = trace.get("metadata") or {}
        by_pid = {}
        for ev in trace["traceEvents"]:
            if isinstance(ev, dict):
                by_pid.setdefault(ev.get("pid", 0), []).append(ev)
        merged = bool(meta.get("merged")) or len(by_pid) > 1
        added = []
        for pid, evs in by_pid.items():
            rank = pid if merged or not isinstance(meta.get("rank"), int) else meta["rank"]
            if not isinstance(rank, int):
                rank = len(workers)
            while rank in workers:                    # the same rank in two files
                rank = max(workers) + 1
            host = meta.get("hosts", {}).get(str(pid), "") if merged else meta.get("host", "")
            w = {"host": host if isinstance(host, str) else "",
                 "dropped_events": 0 if merged else int(meta.get("dropped_events") or 0),
                 "threads": {}, "events": {}}
            for ev in evs:
                ph, tid = ev.get("ph"), ev.get("tid", 0)
                if ph == "M":
                    args = ev.get("args") or {}
                    if ev.get("name") == "thread_name":
                        w["threads"][tid] = str(args.get("name", tid))
                    elif ev.get("name") == "process_name" and not w["host"]:
                        m = _WORKER_NAME.match(str(args.get("name", "")))
                        if m:
                            w["host"] = m.group(2)
                elif ph == "X":
                    ts, dur = ev.get("ts"), ev.get("dur")
                    if _number(ts) and _number(dur):
                        args = ev.get("args")
                        w["events"].setdefault(tid, []).append(
                            (ts, dur if dur > 0 else 0, str(ev.get("name", "")),
                             str(ev.get("cat", "")), args if type(args) is dict else {}))
            workers[rank] = w
            added.append(rank)
        if merged and added and meta.get("dropped_events"):
            # a merged trace keeps only the total; the report shows it on its lowest rank
            workers[min(added)]["dropped_events"] += int(meta["dropped_events"])
    return workers


def _main_tid(w):
    for tid, name in w["threads"].items():
        if name == "main":
            return tid
    counts = {tid: sum(e[_CAT] == "step" for e in evs) for tid, evs in w["events"].items()}
    if counts and max(counts.values()) > 0:
        return max(counts, key=lambda tid: counts[tid])
    return None


def _step_number(ev, index):
    n = ev[_ARGS].get("step_num")
    if _number(n) and float(n).is_integer():
        return int(n)
    if isinstance(n, str) and n.strip().lstrip("-").isdigit():
        return int(n)
    return index


def _ms(us):
    return round(us / 1000.0, 3)


def _replica_zero_tid(w, main):
    """The thread of local replica 0 (MirroredStrategy over several devices runs each replica
    in a thread named "replica <i>" while the main thread waits in ``strategy.run``)."""
    for tid, name in w["threads"].items():
        if tid != main and name == "replica 0":
            return tid
    return None


def _analyze_worker(w):
    main = _main_tid(w)
    ops, steps, threads = {}, [], []
    rep0 = _replica_zero_tid(w, main) if main is not None else None
    if rep0 is not None and rep0 in w["events"]:
        # the main thread only waits for the replicas: replica 0's spans are the step's work,
        # so they join the main thread's for the breakdown (the other replicas stay apart)
        w = dict(w)
        w["events"] = dict(w["events"])
        w["events"][main] = sorted(w["events"].get(main, []) + w["events"].pop(rep0),
                                   key=lambda e: e[_TS])
    for tid in sorted(w["events"], key=str):
        evs = w["events"][tid]
        self_us, step_parts = _sweep(evs, with_steps=(tid == main))
        for i, ev in enumerate(evs):
            if ev[_CAT] == "step" and tid == main:
                continue
            row = ops.get((ev[_NAME], ev[_CAT]))
            if row is None:
                row = ops[(ev[_NAME], ev[_CAT])] = [0, 0.0, 0.0]
            row[0] += 1
            row[1] += self_us[i]
            row[2] += ev[_DUR]
        for index, (i, parts_us) in enumerate(step_parts):
            ev = evs[i]
            rec = {"step": _step_number(ev, index), "step_ms": _ms(ev[_DUR])}
            for name, us in zip(CATEGORIES, parts_us):
                rec[name + "_ms"] = _ms(us)
            rec["name"] = ev[_NAME]           # fit's "train", evaluate's "test", a Trace's name
            steps.append(rec)
        if tid != main:
            threads.append({"tid": tid, "name": w["threads"].get(tid, f"thread {tid}"),
                            "busy_ms": _ms(sum(self_us)), "spans": len(evs)})
    # evaluate's steps ("test", fit's validation included) are not training steps: listed
    # apart, so the breakdown and the bottleneck describe training (TF's Overview does too)
    eval_steps = [s for s in steps if s["name"] in _EVAL_STEPS]
    if len(eval_steps) < len(steps):
        steps = [s for s in steps if s["name"] not in _EVAL_STEPS]
    else:
        eval_steps = []
    table = [{"name": name, "cat": cat, "calls": calls, "self_ms": _ms(self_us),
              "mean_self_ms": _ms(self_us / calls), "total_ms": _ms(total_us)}
             for (name, cat), (calls, self_us, total_us) in ops.items()]
    table.sort(key=lambda r: (-r["self_ms"], r["name"], r["cat"]))
    keys = ["step_ms"] + [c + "_ms" for c in CATEGORIES]
    median = {k: round(statistics.median(s[k] for s in steps), 3) if steps else 0.0
              for k in keys}
    total = sum(s["step_ms"] for s in steps)
    fraction = {c: round(sum(s[c + "_ms"] for s in steps) / total, 4) if total > 0 else 0.0
                for c in CATEGORIES}
    return {"host": w["host"], "steps": steps, "eval_steps": eval_steps, "median": median,
            "fraction": fraction,
            "main_thread": w["threads"].get(main, "main") if main is not None else None,
            "threads": threads, "ops": table, "dropped_events": w["dropped_events"]}


def analyze(traces, source=None):
    """The report dict of a list of trace dicts (see the module docstring)."""
    workers = _split_workers(traces)
    out = {str(rank): _analyze_worker(workers[rank]) for rank in sorted(workers)}
    rep = {"workers": out, "bottleneck": bottleneck(out),
           "dropped_events": sum(w["dropped_events"] for w in out.values())}
    if source is not None:
        rep["source"] = os.fspath(source)
    return rep


def report(path, run=None):
    """The report dict of a logdir, a run folder or one trace file."""
    folder, traces = load_traces(path, run)
    return analyze(traces, source=folder)


# --- the bottleneck sentence ------------------------------------------------------------------

# (what the rank is, what that share of its step does)
_BOUND = {
    "input": ("input-bound", "waits for data"),
    "forward": ("compute-bound", "is in the forward pass"),
    "backward": ("compute-bound", "is in the backward pass"),
    "optimizer": ("compute-bound", "is in optimizer updates"),
    "allreduce": ("communication-bound", "is in all-reduce transfers"),
    "checkpoint": ("checkpoint-bound", "writes checkpoints"),
    "other": ("slowed by untraced host work", "is outside the traced spans (other)"),
}
# a rank waits for a slower one when it waits this much longer per step than the rank that waits
# least: a share of its own step, and an absolute floor (scheduling jitter)
_WAIT_SHARE, _WAIT_FLOOR_MS = 0.05, 0.1
_INPUT_BOUND = 0.20       # TF's "highly input-bound" threshold


def _fmt_ms(ms):
    if ms >= 10:
        return f"{ms:.0f}"
    if ms >= 1:
        return f"{ms:.1f}".rstrip("0").rstrip(".")
    return f"{ms:.2g}"


def _pct(x):
    return f"{100 * x:.0f}%"


def _ranks(ranks):
    ranks = list(ranks)
    word = "rank" if len(ranks) == 1 else "ranks"
    return f"{word} {', '.join(str(r) for r in ranks)}"


def _means(w):
    n = len(w["steps"])
    return {c: sum(s[c + "_ms"] for s in w["steps"]) / n for c in ("step",) + CATEGORIES}


def bottleneck(workers):
    """One sentence naming what limits the step time, and who waits for whom.

    Per rank the mean per step of each part is compared. When some ranks wait for the others
    markedly longer than the rank that waits least, that rank is the slow one: the sentence names
    the part where it spends more than the ranks waiting for it, and how long they wait.
    Otherwise the largest share over all ranks names the bound: input when at least 20% of the
    step waits for data (TF's threshold), else the largest of computation (forward, backward,
    optimizer), communication (transfer and waiting), checkpoints, and other host time.
    """
    ranks = [int(r) for r, w in workers.items() if w["steps"]]
    if not ranks:
        return ("no training steps in the trace: steps are recorded by fit and by "
                "Trace(name, step_num=n, _r=1) at host_tracer_level >= 1")
    ranks.sort()
    means = {r: _means(workers[str(r)]) for r in ranks}
    if len(ranks) > 1:
        slow = min(ranks, key=lambda r: (means[r]["wait"], r))
        waiters = [r for r in ranks if r != slow
                   and means[r]["wait"] - means[slow]["wait"]
                   >= max(_WAIT_SHARE * means[r]["step"], _WAIT_FLOOR_MS)]
        if waiters:
            m = means[slow]
            cats = [c for c in CATEGORIES if c != "wait"]
            excess = {c: m[c] - statistics.median(means[r][c] for r in waiters) for c in cats}
            cat = max(cats, key=lambda c: excess[c])
            if excess[cat] <= 0:
                cat = max(cats, key=lambda c: m[c])
            bound, does = _BOUND[cat]
            share = m[cat] / m["step"] if m["step"] > 0 else 0.0
            waited = statistics.median(means[r]["wait"] for r in waiters)
            verb = "waits" if len(waiters) == 1 else "wait"
            return (f"rank {slow} is {bound}: {_pct(share)} of its step {does}; "
                    f"{_ranks(waiters)} {verb} {_fmt_ms(waited)} ms for it")
    frac = {c: statistics.fmean(means[r][c] / means[r]["step"] if means[r]["step"] > 0 else 0.0
                                for r in ranks) for c in CATEGORIES}
    if len(ranks) == 1:
        subject, step = f"rank {ranks[0]} is", "its step"
    else:
        subject, step = f"all {len(ranks)} ranks are", "each step"
    groups = {"compute": frac["forward"] + frac["backward"] + frac["optimizer"],
              "communication": frac["allreduce"] + frac["wait"],
              "checkpoint": frac["checkpoint"], "other": frac["other"]}
    if frac["input"] >= _INPUT_BOUND or frac["input"] >= max(groups.values()):
        return f"{subject} input-bound: {_pct(frac['input'])} of {step} waits for data"
    group = max(groups, key=lambda g: groups[g])
    share = _pct(groups[group])
    if group == "compute":
        return (f"{subject} compute-bound: {share} of {step} is computation (forward "
                f"{_pct(frac['forward'])}, backward {_pct(frac['backward'])}, optimizer "
                f"{_pct(frac['optimizer'])})")
    if group == "communication":
        return (f"{subject} communication-bound: {share} of {step} is in collectives "
                f"(all-reduce transfer {_pct(frac['allreduce'])}, waiting for other ranks "
                f"{_pct(frac['wait'])})")
    if group == "checkpoint":
        return f"{subject} checkpoint-bound: {share} of {step} writes checkpoints"
    return (f"{subject} slowed by untraced host work: {share} of {step} is outside the traced "
            "spans (other); capture with host_tracer_level=3 to see its operations")


# --- text -------------------------------------------------------------------------------------

def _table(header, rows, right):
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        lines.append("  ".join(c.rjust(wd) if i in right else c.ljust(wd)
                               for i, (c, wd) in enumerate(zip(row, widths))).rstrip())
    lines.insert(1, "  ".join("-" * wd for wd in widths))
    return "\n".join(lines)


def format_text(rep, top=20):
    """``rep`` as the text ``python -m tnp_train.profiler report`` prints: the bottleneck, a
    table of each worker's median per part, and each worker's operations by self time (the
    layout of PyTorch's ``key_averages().table()``)."""
    out = []
    if rep.get("source"):
        out.append(f"run: {rep['source']}")
    out.append(f"bottleneck: {rep['bottleneck']}")
    if rep.get("dropped_events"):
        out.append(f"warning: {rep['dropped_events']} events were dropped (the trace buffer was "
                   "full): the breakdown undercounts; capture a shorter window")
    out.append("")
    out.append("step-time breakdown per worker: median ms per step")
    header = ["rank", "host", "steps", "step"] + list(CATEGORIES)
    rows = []
    for rank, w in rep["workers"].items():
        med = w["median"]
        rows.append([rank, w["host"] or "-", len(w["steps"]), f"{med['step_ms']:.3f}"]
                    + [f"{med[c + '_ms']:.3f}" for c in CATEGORIES])
    out.append(_table(header, rows, right=set(range(2, len(header)))))
    for rank, w in rep["workers"].items():
        out.append("")
        ops = w["ops"][:top]
        more = len(w["ops"]) - len(ops)
        where = f" ({w['host']})" if w["host"] else ""
        shown = f" (top {top} of {len(w['ops'])})" if more > 0 else ""
        out.append(f"worker {rank}{where}: spans by self time{shown}")
        if ops:
            out.append(_table(["name", "cat", "calls", "self ms", "mean self ms", "total ms"],
                              [[r["name"], r["cat"], r["calls"], f"{r['self_ms']:.3f}",
                                f"{r['mean_self_ms']:.3f}", f"{r['total_ms']:.3f}"]
                               for r in ops], right={2, 3, 4, 5}))
        else:
            out.append("(no spans)")
        if w["threads"]:
            out.append("other threads (not in the breakdown): " + ", ".join(
                f"{t['name']} {t['busy_ms']:.3f} ms busy" for t in w["threads"]))
    return "\n".join(out) + "\n"
