"""Writing a profiling run: each worker's ``<host>.<rank>.trace.json.gz`` and its XSpace
``<host>.xplane.pb`` (``<host>_rank<r>.xplane.pb`` in a job of several workers: what
TensorBoard's Profile tab reads), and worker 0's ``merged.trace.json.gz``, under
``logdir/plugins/profile/<run>/`` (TF's folder convention).

The merged trace holds every rank's events, gathered over the job's communicator, with each
rank's times moved onto worker 0's clock by the offset estimated when profiling started.
The file format and the merge are :mod:`.merge`'s (shared with the report and the capture
client).
"""
from __future__ import annotations

import os
import time

from tnp_train.checkpoint._io import atomic_write_bytes

from .merge import MERGED_NAME, PROFILE_DIR, merge_traces, new_run_dir, trace_file_name, write_trace
from .xplane import xplane_file_name, xspace_bytes

__all__ = ["worker_trace", "open_run", "discard_run", "write_run", "write_xplane"]


def worker_trace(session):
    """The trace dict of one worker's finished session (nothing written)."""
    rec, rank = session.recorder, session.rank
    events = [{"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
               "args": {"name": f"worker {rank} ({session.host})"}},
              {"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0,
               "args": {"sort_index": rank}}]
    events += rec.trace_events(rank)
    gpu_dropped = rec.gpu.dropped if rec.gpu is not None else 0
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"rank": rank, "host": session.host,
                         "clock_offset_us": session.clock_offset_us,
                         "dropped_events": rec.dropped + gpu_dropped,
                         "max_events": rec.max_events,
                         "options": dict(session.options._asdict()),
                         "steps": rec.step_count(),
                         "start_us": rec.start_us, "stop_us": rec.stop_us,
                         # added to a trace time, gives Unix-epoch microseconds
                         "epoch_offset_us": time.time() * 1e6 - rec.now_us(),
                         "clock": "time.perf_counter microseconds"}}


def write_xplane(run_dir, trace, world_size, epoch_offset_us=None):
    """Write ``trace``'s XSpace beside it, atomically; returns the path. ``epoch_offset_us``:
    worker 0's (its clock is the job's), else the trace's own."""
    meta = trace.get("metadata") or {}
    host, rank = meta.get("host") or "localhost", int(meta.get("rank") or 0)
    if epoch_offset_us is None:
        epoch_offset_us = float(meta.get("epoch_offset_us") or 0.0)
    path = os.path.join(run_dir, xplane_file_name(host, rank, world_size))
    atomic_write_bytes(path, xspace_bytes(trace, host, epoch_offset_us))
    return path


def open_run(world, logdir):
    """The run folder ``logdir/plugins/profile/<run>``: worker 0 makes it (a timestamp, with
    a suffix if taken) and every rank learns its name. Collective."""
    name = err = None
    failure = None
    if world.rank == 0:
        try:
            name = os.path.basename(new_run_dir(logdir))
        except Exception as e:  # noqa: BLE001 - every rank must hear of it, then it is raised
            failure = e
            err = f"{type(e).__name__}: {e}"
    if world.size > 1:
        name, err = world.broadcast_object((name, err), root=0)
    if failure is not None:
        raise failure
    if err is not None:
        raise OSError(f"profiler start: worker 0 could not create the run folder under "
                      f"{logdir}: {err}")
    return os.path.join(logdir, PROFILE_DIR, name)


def discard_run(world, run_dir):
    """``stop(save=False)``: worker 0 removes the run folder it made, if still empty."""
    if world.rank == 0:
        try:
            os.rmdir(run_dir)
        except OSError:
            pass


def write_run(session):
    """Write this worker's trace and XSpace and (worker 0) the merged trace; returns the run
    folder.
    Collective: every rank takes part in the gather even if its own write failed, so the
    others are not left waiting, and then raises that error."""
    world, run_dir = session.world, session.run_dir
    trace = worker_trace(session)
    failure = None
    try:
        os.makedirs(run_dir, exist_ok=True)          # another host may not share the folder
        write_trace(os.path.join(run_dir, trace_file_name(session.host, session.rank)), trace)
    except Exception as e:  # noqa: BLE001 - raised after the collectives below
        failure = e
    traces = world.allgather_object(trace) if world.size > 1 else [trace]
    if failure is None:
        try:
            write_xplane(run_dir, trace, world.size,
                         traces[0]["metadata"].get("epoch_offset_us"))
        except Exception as e:  # noqa: BLE001
            failure = e
    if world.rank == 0 and failure is None:
        try:
            write_trace(os.path.join(run_dir, MERGED_NAME), merge_traces(traces))
        except Exception as e:  # noqa: BLE001
            failure = e
    if world.size > 1:
        world.barrier()        # when stop returns on any rank, every file is there
    if failure is not None:
        raise failure
    return run_dir
