"""device_tracer_level=1's arithmetic, with a stand-in for CuPy's CUDA events (no GPU here): a
span's device time runs from its start event to its end event, placed on the host clock by a
reference event recorded when the GPU was idle."""
import types

import pytest

from tnp_train.profiler import device as device_mod
from tnp_train.profiler.recorder import Recorder
from tnp_train.utils import tracing


class FakeGpu:
    """CUDA events whose record() reads a GPU clock the test advances (in ms)."""

    def __init__(self):
        self.now_ms = 100.0
        self.synced = 0
        gpu = self

        class Event:
            def record(self):
                self.t = gpu.now_ms

            def synchronize(self):
                gpu.synced += 1

        class Device:
            def __init__(self, idx):
                self.idx = idx

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def synchronize(self):
                gpu.synced += 1

        self.cuda = types.SimpleNamespace(
            Event=Event, Device=Device, get_elapsed_time=lambda a, b: b.t - a.t)


@pytest.fixture
def fake(monkeypatch):
    gpu = FakeGpu()
    dev = types.SimpleNamespace(index=3)
    on_gpu = {"yes": True}
    monkeypatch.setattr(device_mod, "_ext", types.SimpleNamespace(
        get_default_device=lambda: dev,
        array_module=lambda d: gpu if on_gpu["yes"] else object()))
    return gpu, on_gpu


def test_device_spans_are_placed_and_sized_by_cuda_events(fake):
    gpu, on_gpu = fake
    host = {"us": 5_000.0}
    rec = Recorder(host_level=2)
    rec.gpu = device_mod.GpuTracer(gpu, lambda: host["us"], max_events=10)
    tracing.set_recorder(rec)
    try:
        with tracing.span("dense", "forward"):      # reference taken here: GPU 100 ms = 5 ms
            gpu.now_ms = 102.0                      # the layer's kernels ran 2 ms ... 7 ms
            with tracing.span("inner", "backward"):
                gpu.now_ms = 107.0
            gpu.now_ms = 107.5
        with tracing.span("step", "step"):           # not a GPU span category
            pass
        on_gpu["yes"] = False
        with tracing.span("cpu work", "forward"):   # the default device is not a GPU
            pass
    finally:
        tracing.set_recorder(None)
    rec.close()
    events = rec.trace_events(pid=0)
    dev = sorted((e for e in events if e.get("cat") == "device"), key=lambda e: e["ts"])
    assert [(e["name"], e["ts"], e["dur"], e["args"]) for e in dev] == [
        ("dense", 5_000.0, 7_500.0, {"gpu": 3, "host_cat": "forward"}),
        ("inner", 7_000.0, 5_000.0, {"gpu": 3, "host_cat": "backward"})]
    (row,) = {e["tid"] for e in dev}
    assert row >= 1000
    meta = [e for e in events if e["ph"] == "M" and e["tid"] == row]
    assert meta == [{"ph": "M", "name": "thread_name", "pid": 0, "tid": row,
                     "args": {"name": "GPU 3 (main)"}}]
    assert gpu.synced >= 2         # the reference waited for an idle GPU; reading waited too


def test_no_gpu_no_device_tracer(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy fails
    assert device_mod.gpu_tracer(lambda: 0.0, 10) is None
