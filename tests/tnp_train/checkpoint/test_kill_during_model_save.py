"""Crash safety of ``model.save`` over an existing model: a process killed at any moment leaves
the old or the new model at the path (``load_model`` works and gives one of the two), and the
next save removes the temporaries the killed one left.

Two tests share one child process, a small fork server that imports tnp_train and loads what a
save uses once and forks a worker per round (as test_kill_during_save.py does); the worker is
what gets killed.

* every crash point: the worker SIGKILLs itself just before its k-th filesystem step (rename,
  replace, fsync, unlink...) of one save, for every k until a save completes. This finds a
  window however short it is (the old two-rename save had one between its renames).
* random kills: the worker saves over and over, alternating two architectures, and is
  SIGKILLed at random moments, mostly inside a save (20 rounds, more on a loaded machine until
  3 kills have interrupted a save).

Every wait has a timeout (kill_harness: many times what it takes on a quiet machine), and
``finally`` kills whatever is still running.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from kill_harness import LINE_S, READY_S, Lines

import tnp_train as tt
from tnp_train.checkpoint import saving
from tnp_train.checkpoint._io import atomic_write_bytes

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32",
                                reason="needs fork and SIGKILL")

# Run by the child and by this test, so both sides compute the same thing. Saves alternate
# between two widths, so a model made of one save's config and another's weights cannot load.
MODEL_SRC = r'''
import hashlib
import numpy as np
import tnp_train as tt

def build(n):
    model = tt.Sequential([tt.Input((16,)), tt.layers.Dense(96 if n % 2 else 64),
                           tt.layers.Dense(8)])
    rng = np.random.default_rng(n)
    for v in model.weights:
        v.assign(rng.standard_normal(v.shape, dtype=np.float32))
    return model

def digest(model):
    h = hashlib.sha256()
    for v in model.weights:
        a = v.numpy()
        h.update(str((a.dtype.name, a.shape)).encode())
        h.update(np.ascontiguousarray(a).view(np.uint8).tobytes())
    return h.hexdigest()
'''

CHILD = MODEL_SRC + r'''
import os as _os


def _say(line):
    # one write(2) per line: the fork's children share this pipe, and print() makes two
    # writes when stdout is unbuffered (PYTHONUNBUFFERED), which interleave with theirs
    _os.write(1, (line + "\n").encode())

import json, os, shutil, signal, sys
from tnp_train.checkpoint._io import atomic_write_bytes


zygote = os.getpid()
STEPS = [(os, "replace"), (os, "rename"), (os, "fsync"), (os, "unlink"), (os, "rmdir"),
         (os, "fchmod"), (os, "chmod"), (shutil, "rmtree")]

def die_before_step(k):
    """SIGKILL this process just before its k-th filesystem step."""
    count = [0]
    def wrap(fn):
        def step(*a, **kw):
            count[0] += 1
            if count[0] == k:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*a, **kw)
        return step
    for mod, name in STEPS:
        setattr(mod, name, wrap(getattr(mod, name)))
    return count

def crash(path, n, k):
    model = build(n)
    count = die_before_step(k)
    model.save(path)
    _say(f"completed {count[0]}")

def loop(path, side, n0):
    with open(side) as f:
        done = json.load(f)["done"]
    models = {}
    for n in range(n0, n0 + 200):              # bounded, whatever happens to the parent
        if os.getppid() != zygote:
            os._exit(3)
        model = build(n)
        h = digest(model)
        atomic_write_bytes(side, json.dumps({"intent": [n, h], "done": done}).encode())
        _say(f"saving {n}")
        model.save(path)
        _say(f"saved {n}")
        done = [n, h]
        atomic_write_bytes(side, json.dumps({"intent": None, "done": done}).encode())


def warm_up():
    # tnp_train loads its layers, models and saving code on first use (about 2 s, Numba
    # included): here once, not again in every forked worker, so that a round takes what a
    # save takes
    import tempfile
    scratch = tempfile.mkdtemp()
    try:
        model = build(0)
        digest(model)
        model.save(os.path.join(scratch, "m"))
    finally:
        shutil.rmtree(scratch)


warm_up()
_say("ready")
while True:
    cmd = sys.stdin.readline().split()
    if not cmd or cmd[0] not in ("crash", "loop"):
        break
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if cmd[0] == "crash":
                crash(cmd[1], int(cmd[2]), int(cmd[3]))
            else:
                loop(cmd[1], cmd[2], int(cmd[3]))
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    _say(f"pid {pid}")
    _, status = os.waitpid(pid, 0)
    _say(f"dead {pid} {status}")
'''


class _Server:
    def __init__(self):
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.lines = Lines(self.proc.stdout.fileno())
        self.worker = None
        assert self.lines.next(READY_S) == "ready"

    def start(self, *cmd):
        self.proc.stdin.write((" ".join(map(str, cmd)) + "\n").encode())
        self.proc.stdin.flush()
        self.worker = int(self.lines.until("pid ", LINE_S).split()[1])
        return self.worker

    def reap(self, kill=False):
        """The worker's wait status (after SIGKILLing it if ``kill``)."""
        if kill:
            os.kill(self.worker, signal.SIGKILL)
        status = int(self.lines.until(f"dead {self.worker}", LINE_S).split()[2])
        self.worker = None
        return status

    def close(self):
        if self.worker is not None:
            try:
                os.kill(self.worker, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def server():
    s = _Server()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def ns():
    out = {}
    exec(MODEL_SRC, out)  # noqa: S102 - the same code the child runs
    return out


def _temporaries(root):
    return sorted(os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
                  if ".tmp-" in n)


def _write_legacy_model(model, path):
    """A model directory as versions before the config was embedded in the weights wrote it."""
    os.makedirs(path)
    saving.save_model(model, path + ".new")
    os.replace(os.path.join(path + ".new", saving.CONFIG_NAME),
               os.path.join(path, saving.CONFIG_NAME))
    saving.write_graph(saving._ModelRoot(model), os.path.join(path, saving.WEIGHTS_NAME),
                       {"kind": "model", "class_name": type(model).__name__})
    shutil.rmtree(path + ".new")


@pytest.mark.parametrize("before", ["model", "legacy_model", "nothing"])
def test_kill_at_every_step_of_a_save_leaves_old_or_new_model(tmp_path, server, ns, before):
    path = str(tmp_path / "models" / "m")
    old, new = ns["build"](2), ns["build"](3)          # 64 and 96 units: configs differ
    old_h, new_h = ns["digest"](old), ns["digest"](new)

    def reset():
        if before == "model":
            old.save(path)
            return
        shutil.rmtree(path, ignore_errors=True)
        if before == "legacy_model":
            _write_legacy_model(old, path)

    reset()
    for k in range(1, 40):
        server.start("crash", path, 3, k)
        status = server.reap()
        if os.WIFEXITED(status):                    # the save finished before step k
            assert os.WEXITSTATUS(status) == 0, status
            assert ns["digest"](tt.models.load_model(path)) == new_h
            assert k > 3, f"only {k - 1} steps in a save: the injection missed them"
            break
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
        if before == "nothing" and not os.path.exists(path):
            pass                                    # killed before the model appeared
        else:
            got = ns["digest"](tt.models.load_model(path))
            assert got in (old_h, new_h), f"killed before step {k}: neither model"
            assert got == new_h or before != "nothing"
        # the next save to the path clears what the killed one left
        ns["build"](5).save(path)
        assert _temporaries(tmp_path) == [], f"after a kill before step {k}"
        reset()
    else:
        pytest.fail("the save never completed")


def test_random_kills_during_repeated_saves(tmp_path, server, ns):
    path = str(tmp_path / "models" / "m")
    side_dir = tmp_path / "side"
    side_dir.mkdir()
    side = str(side_dir / "side.json")
    first = ns["build"](0)
    first.save(path)
    atomic_write_bytes(side, json.dumps({"intent": None,
                                         "done": [0, ns["digest"](first)]}).encode())
    rng = np.random.default_rng(4321)
    in_save = 0

    # an undisturbed round: learn how long a save takes here
    server.start("loop", path, side, 1)
    durations = []
    for _ in range(4):
        server.lines.until("saving", LINE_S)
        t0 = time.monotonic()
        server.lines.until("saved", LINE_S)
        durations.append(time.monotonic() - t0)
    server.reap(kill=True)
    typical = float(np.median(durations))

    # How many kills land inside a save depends on how late this process reacts, which is the
    # machine's load, not the saving code's: 20 rounds at least, then more until 3 kills have
    # interrupted a save, up to 10 times as many rounds.
    r = 0
    while r < 20 or (in_save < 3 and r < 200):
        server.start("loop", path, side, 1000 * (r + 1))
        for _ in range(int(rng.integers(0, 2))):     # sometimes let a save through
            server.lines.until("saved", LINE_S)
        server.lines.until("saving", LINE_S)
        time.sleep(float(rng.uniform(0.0, typical)))   # then kill inside the next
        status = server.reap(kill=True)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
        with open(side) as f:
            rec = json.load(f)
        model = tt.models.load_model(path)              # never an error
        h = ns["digest"](model)
        done, intent = rec["done"], rec["intent"]
        assert h == done[1] or (intent is not None and h == intent[1]), \
            f"round {r}: the model at the path is neither the last saved nor the one in flight"
        if intent is not None and h == done[1]:
            in_save += 1
        model.save(path)                                # the next successful save
        assert _temporaries(tmp_path / "models") == [], f"round {r}"
        atomic_write_bytes(side, json.dumps({"intent": None, "done": [-1, h]}).encode())
        r += 1
    print(f"kills that interrupted a save: {in_save}/{r}, typical save {typical * 1e3:.1f} ms")
    assert in_save >= 3, f"only {in_save} of {r} kills interrupted a save"
