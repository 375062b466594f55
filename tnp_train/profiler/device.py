"""``device_tracer_level=1``: GPU time of the spans that run CuPy work, through CUDA events.

Around each ``forward``/``backward``/``optimizer``/``op`` span entered while the default tnp
device is a GPU, a CUDA event is recorded on that device's current stream at the start and at
the end. Nothing waits for the GPU while recording; when profiling stops, the events are read
back and become ``device`` spans on one row per (GPU, host thread): their start is the time
since a reference event (recorded right after a synchronize, when the host time of the GPU is
known) and their length the time between the two events, which is the GPU time of the work the
span queued (plus any idle gap on that stream in between).
"""
from __future__ import annotations

import tnp
from tnp import extend as _ext

__all__ = ["GpuTracer", "gpu_tracer"]

# device rows' trace tids start here, well above the host threads' small ints
_TID_BASE = 1000


def gpu_tracer(recorder_now_us, max_events):
    """A :class:`GpuTracer` when tnp sees a GPU (CuPy installed, a CUDA device), else None."""
    # listing the devices starts tnp's GPU backend when there is one (no CuPy, no driver, no
    # device: only the CPU, and no device tracing)
    if not any(d.is_gpu for d in tnp.__array_namespace_info__().devices()):
        return None
    return GpuTracer(_ext.cupy(), recorder_now_us, max_events)


class GpuTracer:
    def __init__(self, cupy, now_us, max_events):
        self._cp = cupy
        self._now_us = now_us
        self._max = max_events
        self._refs = {}          # GPU index -> (reference event, host microseconds)
        self._pending = []       # (GPU index, host tid, name, cat, start event, end event)
        self.dropped = 0

    def begin(self):
        """Start bracketing a span: a token, or None when the default device is not a GPU."""
        dev = _ext.get_default_device()
        if _ext.array_module(dev) is not self._cp or len(self._pending) >= self._max:
            return None
        cp = self._cp
        idx = dev.index
        with cp.cuda.Device(idx):
            if idx not in self._refs:
                cp.cuda.Device(idx).synchronize()
                ref = cp.cuda.Event()
                ref.record()
                ref.synchronize()
                self._refs[idx] = (ref, self._now_us())
            start = cp.cuda.Event()
            start.record()
        return idx, start

    def end(self, token, name, cat, tid):
        idx, start = token
        cp = self._cp
        with cp.cuda.Device(idx):
            stop = cp.cuda.Event()
            stop.record()
        if len(self._pending) < self._max:
            self._pending.append((idx, tid, name, cat, start, stop))
        else:
            self.dropped += 1

    def trace_events(self, pid, thread_names):
        """The ``device`` spans (waits for the GPU to finish what was recorded)."""
        cp = self._cp
        out, rows = [], {}
        for idx, tid, name, cat, start, stop in self._pending:
            ref, ref_us = self._refs[idx]
            stop.synchronize()
            ts = ref_us + cp.cuda.get_elapsed_time(ref, start) * 1e3
            dur = cp.cuda.get_elapsed_time(start, stop) * 1e3
            row = rows.setdefault((idx, tid), _TID_BASE + len(rows))
            out.append({"ph": "X", "name": name, "cat": "device", "ts": round(ts, 3),
                        "dur": round(max(dur, 0.0), 3), "pid": pid, "tid": row,
                        "args": {"gpu": idx, "host_cat": cat}})
        meta = [{"ph": "M", "name": "thread_name", "pid": pid, "tid": row,
                 "args": {"name": f"GPU {idx} ({thread_names.get(tid, tid)})"}}
                for (idx, tid), row in rows.items()]
        return meta + out
