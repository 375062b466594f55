"""The event files of tt.summary's writers: TF's names, never an existing file (many writers in
one second, in one process or several, a pid reused), what reaches the disk when."""
import io
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import tnp_train as tt
from tnp_train.summary import _writer

from summary_readback import event_files, read_file, values

summary = tt.summary
NAME = re.compile(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)(\..*)$")


def test_the_file_is_named_as_tf_names_it_and_starts_with_the_version_event(tmp_path):
    w = summary.create_file_writer(tmp_path)
    w.close()
    (path,) = event_files(tmp_path)
    m = NAME.fullmatch(os.path.basename(path))
    assert m, path
    assert m[2] == socket.gethostname() and int(m[3]) == os.getpid() and m[5] == ".v2"
    (first,) = read_file(path)          # written at creation, alone
    assert first.file_version == "brain.Event:2" and first.wall_time > 0


def test_many_writers_in_the_same_second_in_one_process_never_overwrite(tmp_path, monkeypatch):
    # the clock stands still: every name has the same second
    monkeypatch.setattr(_writer, "_name_parts",
                        lambda: (1_600_000_000, socket.gethostname(), os.getpid()))
    writers = [summary.create_file_writer(tmp_path) for _ in range(40)]
    for i, w in enumerate(writers):
        with w.as_default(step=i):
            summary.scalar("loss", float(i))
    for w in writers:
        w.close()
    files = event_files(tmp_path)
    assert len(files) == 40
    assert {NAME.fullmatch(os.path.basename(f))[1] for f in files} == {"1600000000"}
    assert sorted(values(tmp_path, "loss")) == [(i, float(i)) for i in range(40)]


def test_a_reused_pid_in_the_same_second_takes_the_next_name(tmp_path, monkeypatch):
    # another process, before, had this pid in this second and left files behind: the
    # per-process counter starts again at 0, so the first names are taken
    monkeypatch.setattr(_writer, "_name_parts", lambda: (1_600_000_000, "host", 4242))
    monkeypatch.setattr(_writer, "_uids", iter(range(10 ** 6)))
    first = [summary.create_file_writer(tmp_path) for _ in range(3)]
    for i, w in enumerate(first):
        with w.as_default(step=i):
            summary.scalar("run", 1.0)
        w.close()
    monkeypatch.setattr(_writer, "_uids", iter(range(10 ** 6)))     # "the new process"
    second = summary.create_file_writer(tmp_path)
    with second.as_default(step=10):
        summary.scalar("run", 2.0)
    second.close()
    assert second.path not in [w.path for w in first]
    assert second.path.endswith(".4242.3.v2")
    assert sorted(values(tmp_path, "run")) == [(0, 1.0), (1, 1.0), (2, 1.0), (10, 2.0)]


def _child(logdir, barrier, i):
    barrier.wait()          # all of them open their writer at once
    w = tt.summary.create_file_writer(logdir)
    with w.as_default(step=i):
        tt.summary.scalar("worker", float(i))
    w.close()


def test_writers_of_several_processes_at_once_never_overwrite(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_child, args=(str(tmp_path), barrier, i)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 6
    assert len(event_files(tmp_path)) == 6
    assert sorted(values(tmp_path, "worker")) == [(i, float(i)) for i in range(6)]


def test_events_wait_for_max_queue_then_are_written(tmp_path):
    w = summary.create_file_writer(tmp_path, max_queue=3, flush_millis=10 ** 9)
    with summary.record_if(True):
        w.set_as_default(step=0)
        try:
            for i in range(3):
                summary.scalar("q", float(i), step=i)
                assert len(read_file(w.path)) == 1          # queued: only the version event
            summary.scalar("q", 3.0, step=3)                  # more than max_queue: written
            assert len(read_file(w.path)) == 5
            summary.scalar("q", 4.0, step=4)
            assert len(read_file(w.path)) == 5
            summary.flush()                                   # the default writer
            assert len(read_file(w.path)) == 6
        finally:
            _writer._state.writer = None
    w.close()


def test_flush_millis_and_max_queue_zero(tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(_writer, "_monotonic", lambda: now[0])
    w = summary.create_file_writer(tmp_path / "a", flush_millis=500)
    with w.as_default(step=0):
        summary.scalar("t", 1.0)
        assert len(read_file(w.path)) == 1
        now[0] += 0.6                                   # past flush_millis: the next write
        summary.scalar("t", 2.0)
        assert len(read_file(w.path)) == 3
        now[0] += 0.1
        summary.scalar("t", 3.0)
        assert len(read_file(w.path)) == 3
    assert len(read_file(w.path)) == 4                 # the end of as_default flushes
    w.close()
    z = summary.create_file_writer(tmp_path / "b", max_queue=0)
    with z.as_default(step=0):
        summary.scalar("z", 1.0)
        assert len(read_file(z.path)) == 2
    z.close()


def test_a_program_that_never_closes_its_writer_still_writes_its_events(tmp_path):
    # TF flushes a writer when it is destroyed: at the latest at exit
    code = textwrap.dedent(f"""
        import tnp_train as tt
        w = tt.summary.create_file_writer({str(tmp_path)!r})
        w.set_as_default(step=5)
        tt.summary.scalar("exit", 1.5)
        keep = [w]
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert values(tmp_path, "exit") == [(5, 1.5)]


def test_a_dropped_writer_is_flushed(tmp_path):
    w = summary.create_file_writer(tmp_path)
    w.write_summary("dropped", _scalar_proto(2.0), None, 1)
    path = w.path
    del w
    assert [e.step for e in read_file(path)] == [0, 1]


def _scalar_proto(x):
    from tnp_train.summary._ops import tensor_proto
    return tensor_proto(np.float32(x))


def test_a_forked_child_does_not_write_into_its_parents_file(tmp_path):
    w = summary.create_file_writer(tmp_path, max_queue=100)
    with summary.record_if(True):
        w.set_as_default(step=0)
        try:
            summary.scalar("parent", 1.0)          # queued in the parent
            pid = os.fork()
            if pid == 0:                           # the child: its writes fail, exit flushes nothing
                try:
                    summary.scalar("child", 2.0)
                    code = 1
                except RuntimeError as e:
                    code = 0 if "belongs to process" in str(e) else 2
                w.flush()
                w.close()
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        finally:
            _writer._state.writer = None
    w.close()
    assert values(tmp_path, "parent") == [(0, 1.0)]
    assert "child" not in {v.tag for e in read_file(w.path) for v in e.summary.value}


def test_a_url_logdir_goes_through_tensorboards_file_api(tmp_path, monkeypatch):
    """With a fake file system for the URL: a name that exists is never reused."""
    class FakeGfile:
        files = {}

        @staticmethod
        def makedirs(path):
            FakeGfile.made = path

        @staticmethod
        def exists(path):
            return path in FakeGfile.files

        class GFile(io.BytesIO):
            def __init__(self, path, mode):
                assert mode == "wb"
                super().__init__()
                self.path = path
                FakeGfile.files[path] = b""

            def flush(self):
                FakeGfile.files[self.path] = self.getvalue()

    monkeypatch.setattr(_writer, "_remote_gfile", lambda: FakeGfile)
    monkeypatch.setattr(_writer, "_name_parts",
                        lambda: (1_600_000_000, socket.gethostname(), os.getpid()))
    monkeypatch.setattr(_writer, "_uids", iter([7, 7, 8]))
    w1 = summary.create_file_writer("gs://bucket/logs/")
    w2 = summary.create_file_writer("gs://bucket/logs/")
    assert FakeGfile.made == "gs://bucket/logs/"
    assert w1.path == f"gs://bucket/logs/events.out.tfevents.1600000000." \
                      f"{socket.gethostname()}.{os.getpid()}.7.v2"
    assert w2.path.endswith(".8.v2")
    with w2.as_default(step=3):
        summary.scalar("remote", 1.0)
    w1.close()
    w2.close()
    assert len(FakeGfile.files[w2.path]) > len(FakeGfile.files[w1.path]) > 0
