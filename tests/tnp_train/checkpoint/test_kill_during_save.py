"""Crash safety of CheckpointManager.save, and training resumed from a checkpoint.

The kill test: a child process saves checkpoints of a ~3 MB model over and over (new values
each time) and is SIGKILLed at least 20 times at random moments, mostly in the middle of a save.
After every kill, the latest checkpoint must load bit-identical to the last save that completed.

To keep it fast (the whole test < 20 s on 2 shared cores) the child is a small fork server: one
``python -c`` process imports tnp_train and loads what a save uses once, then forks a worker per
round; the worker is what gets killed. Every wait has a timeout (kill_harness: many times what
it takes on a quiet machine), and ``finally`` kills whatever is still running. How many kills
land inside a save depends on the machine's load: after 20 rounds, more (up to 200) until 3
have.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from kill_harness import LINE_S, READY_S, Lines

import tnp
import tnp_train as tt
import tnp_train.train  # noqa: F401

# The model, the values of save n, and the digest of what a save contains: run by the child
# and by this test, so both sides compute the same thing.
MODEL_SRC = r'''
import hashlib
import numpy as np
import tnp
import tnp_train as tt

def build():
    model = tt.Sequential([tt.Input((256,)), tt.layers.Dense(1024), tt.layers.Dense(512)])
    step = tt.Variable(np.int64(0), trainable=False)
    extra = tt.Variable(np.zeros((64, 64), dtype=tnp.bfloat16), trainable=False)
    return model, step, extra

def fill(model, step, extra, n):
    rng = np.random.default_rng(n)
    for v in model.weights:
        v.assign(rng.standard_normal(v.shape, dtype=np.float32))
    extra.assign(rng.standard_normal(extra.shape, dtype=np.float32).astype(tnp.bfloat16))
    step.assign(np.int64(n))

def digest(model, step, extra):
    h = hashlib.sha256()
    for v in list(model.weights) + [step, extra]:
        a = v.numpy()
        h.update(str((a.dtype.name, a.shape)).encode())
        h.update(np.ascontiguousarray(a).view(np.uint8).tobytes())
    return h.hexdigest()
'''

CHILD = MODEL_SRC + r'''
import json, os, sys
import tnp_train.train
from tnp_train.checkpoint._io import atomic_write_bytes


directory, side = sys.argv[1], sys.argv[2]
zygote = os.getpid()

def worker():
    model, step, extra = build()
    ckpt = tt.train.Checkpoint(model=model, step=step, extra=extra)
    mgr = tt.train.CheckpointManager(ckpt, directory, max_to_keep=3)
    mgr.restore_or_initialize()
    done = None
    if os.path.exists(side):
        with open(side) as f:
            rec = json.load(f)
        done = rec["done"]
        if rec["intent"] is not None and rec["intent"][0] == int(step.numpy()):
            done = rec["intent"]   # that save completed; the kill came before its record
    for _ in range(200):                       # bounded, whatever happens to the parent
        if os.getppid() != zygote:
            os._exit(3)
        n = int(step.numpy()) + 1
        fill(model, step, extra, n)
        h = digest(model, step, extra)
        atomic_write_bytes(side, json.dumps({"intent": [n, h], "done": done}).encode())
        print(f"saving {n}", flush=True)
        mgr.save(checkpoint_number=n)
        print(f"saved {n}", flush=True)
        done = [n, h]
        atomic_write_bytes(side, json.dumps({"intent": None, "done": done}).encode())


def warm_up():
    # tnp_train loads its layers and checkpoint code on first use (about 2 s, Numba included):
    # here once, not again in every forked worker
    import shutil, tempfile
    scratch = tempfile.mkdtemp()
    try:
        model, step, extra = build()
        fill(model, step, extra, 0)
        digest(model, step, extra)
        ckpt = tt.train.Checkpoint(model=model, step=step, extra=extra)
        mgr = tt.train.CheckpointManager(ckpt, scratch, max_to_keep=3)
        mgr.restore_or_initialize()
        mgr.save(checkpoint_number=0)
    finally:
        shutil.rmtree(scratch)


warm_up()
print("ready", flush=True)
while True:
    line = sys.stdin.readline()
    if line.strip() != "go":
        break
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            worker()
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    print(f"pid {pid}", flush=True)
    _, status = os.waitpid(pid, 0)
    print(f"dead {pid} {status}", flush=True)
'''


def _load_latest(directory, ns):
    model, step, extra = ns["build"]()
    path = tt.train.latest_checkpoint(directory)
    assert path is not None, "no latest checkpoint after a completed save"
    st = tt.train.Checkpoint(model=model, step=step, extra=extra).restore(path)
    st.assert_existing_objects_matched()
    return path, int(step.numpy()), ns["digest"](model, step, extra)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32",
                    reason="needs fork and SIGKILL")
def test_sigkill_during_save_leaves_last_completed_checkpoint(tmp_path):
    ns = {}
    exec(MODEL_SRC, ns)  # noqa: S102 - the same code the child runs
    directory, side = str(tmp_path / "ckpts"), str(tmp_path / "side.json")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    rng = np.random.default_rng(1234)
    zyg = subprocess.Popen([sys.executable, "-c", CHILD, directory, side], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, env=env)
    worker = None
    lines = Lines(zyg.stdout.fileno())
    in_save = 0
    try:
        assert lines.next(READY_S) == "ready"

        def start():
            zyg.stdin.write(b"go\n")
            zyg.stdin.flush()
            return int(lines.until("pid ", LINE_S).split()[1])

        def kill_and_reap(pid):
            os.kill(pid, signal.SIGKILL)
            line = lines.until(f"dead {pid}", LINE_S)
            return int(line.split()[2])

        # an undisturbed first round: learn how long a save takes here
        worker = start()
        durations = []
        for _ in range(4):
            lines.until("saving", LINE_S)
            t0 = time.monotonic()
            lines.until("saved", LINE_S)
            durations.append(time.monotonic() - t0)
        kill_and_reap(worker)
        worker = None
        typical = float(np.median(durations))

        rounds = 0
        while rounds < 20 or (in_save < 3 and rounds < 200):
            rounds += 1
            worker = start()
            for _ in range(int(rng.integers(0, 2))):     # sometimes let a save through
                lines.until("saved", LINE_S)
            lines.until("saving", LINE_S)
            time.sleep(float(rng.uniform(0.0, typical)))   # then kill inside the next
            status = kill_and_reap(worker)
            worker = None
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
            with open(side) as f:
                rec = json.load(f)
            path, n, h = _load_latest(directory, ns)
            assert os.path.basename(path) == f"ckpt-{n}"
            done, intent = rec["done"], rec["intent"]
            if intent is not None and n != intent[0]:
                in_save += 1       # the kill interrupted the save: the latest is the one before
            if done is not None and n == done[0]:
                assert h == done[1], f"ckpt-{n} differs from what save {n} wrote"
            else:
                # the save in flight finished before the kill, the side file was not updated yet
                assert intent is not None and n == intent[0] and h == intent[1], (n, rec)
                assert done is None or n == done[0] + 1
            # on disk: the checkpoints the state file lists (a kill between deleting the oldest
            # and recording that may leave the list longer than max_to_keep, as in TF), plus
            # possibly the interrupted save's complete but unrecorded file (overwritten next)
            listed = {os.path.basename(p) for p in
                      tt.train.get_checkpoint_state(directory)["all_model_checkpoint_paths"]}
            on_disk = {f for f in os.listdir(directory) if f.startswith("ckpt-")}
            assert on_disk - listed <= {f"ckpt-{n + 1}"}, (on_disk, listed)
        print(f"kills that interrupted a save: {in_save}/{rounds}, typical save "
              f"{typical * 1e3:.1f} ms")
        assert in_save >= 3, f"only {in_save} of {rounds} kills interrupted a save"
    finally:
        if worker is not None:
            try:
                os.kill(worker, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            zyg.stdin.close()
        except OSError:
            pass
        zyg.kill()
        zyg.wait(timeout=10)
        zyg.stdout.close()
    # bounded by the per-wait timeouts above and pytest-timeout; no timing is asserted


# ------------------------------------------------------------------ training resumes exactly
def _tape_step(model, opt, x, y):
    with tt.GradientTape() as tape:
        loss = tnp.mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


@pytest.mark.parametrize("make_opt", [lambda: tt.optimizers.Adam(0.01),
                                      lambda: tt.optimizers.SGD(0.05, momentum=0.9)],
                         ids=["adam", "sgd_momentum"])
def test_resumed_training_is_bit_identical(tmp_path, make_opt):
    def make():
        model = tt.Sequential([tt.Input((5,)), tt.layers.Dense(7, activation="tanh"),
                               tt.layers.Dense(3)])
        return model, make_opt(), tt.Variable(np.int64(0), trainable=False)

    data = np.random.default_rng(0)
    x = tnp.asarray(data.standard_normal((16, 5)).astype(np.float32))
    y = tnp.asarray(data.standard_normal((16, 3)).astype(np.float32))

    model, opt, step = make()
    ckpt = tt.train.Checkpoint(model=model, optimizer=opt, step=step)
    for _ in range(3):
        _tape_step(model, opt, x, y)
        step.assign_add(1)
    path = tt.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2).save()
    for _ in range(4):                  # the uninterrupted run
        _tape_step(model, opt, x, y)
        step.assign_add(1)

    model2, opt2, step2 = make()        # a new process, in effect: fresh objects, other inits
    status = tt.train.Checkpoint(model=model2, optimizer=opt2, step=step2).restore(
        tt.train.latest_checkpoint(str(tmp_path)))
    assert tt.train.latest_checkpoint(str(tmp_path)) == path
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="OPTIMIZER_SLOT"):
        status.assert_consumed()        # the slots wait for the optimizer to create them
    assert int(step2.numpy()) == 3 and int(opt2.iterations.numpy()) == 3
    for _ in range(4):
        _tape_step(model2, opt2, x, y)
        step2.assign_add(1)
    status.assert_consumed()
    for a, b in zip(model.weights + opt.variables() + [step],
                    model2.weights + opt2.variables() + [step2]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.numpy().tobytes() == b.numpy().tobytes()
