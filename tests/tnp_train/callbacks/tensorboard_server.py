"""TensorBoard's own server for the tests: ``python -m tensorboard.main`` on 127.0.0.1, a port
the OS picks, in its own process group; the tests query its HTTP API."""
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

WAIT_S = 180          # the bound of every wait for the server (it starts in seconds)


class TensorBoardServer:
    """``python -m tensorboard.main`` in its own process group, its port read from its output."""

    def __init__(self, logdir, load_fast, tmp):
        env = dict(os.environ, TMPDIR=str(tmp))      # its info files stay in this test's folder
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
             "--host", "127.0.0.1", "--port", "0", f"--load_fast={load_fast}",
             "--reload_interval", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            start_new_session=True)
        self.output = []
        self.port = None
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        # straight to 127.0.0.1, whatever proxy the environment names
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if m and self.port is None:
                self.port = int(m[1])
                self.ready.set()
        self.ready.set()            # the process ended: the waiter looks at why

    def get(self, path, raw=False):
        with self.opener.open(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            body = r.read()
            if r.headers.get("Content-Encoding") == "gzip":    # the profile plugin's answers
                body = gzip.decompress(body)
        return body if raw else json.loads(body)

    def wait_for(self, path, predicate):
        """Poll ``path`` until ``predicate(answer)`` (TensorBoard loads the logdir after it
        starts serving), within WAIT_S; the last answer is returned either way."""
        deadline = time.monotonic() + WAIT_S
        answer = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "".join(self.output)
            try:
                answer = self.get(path)
                if predicate(answer):
                    return answer
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
                pass
            time.sleep(0.2)
        return answer

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
            except ProcessLookupError:
                pass
        self.reader.join(timeout=30)        # it ends at the output's end, the process gone
        self.proc.stdout.close()
