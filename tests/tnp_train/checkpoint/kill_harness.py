"""What the kill tests share: reading a child process's output line by line with deadlines."""
import os
import select
import time

# The deadlines are for a hung child, not for a slow one. On a quiet machine the fork server is
# ready in under 3 s (it imports tnp_train and builds and saves a model once) and every other
# line comes in about 0.1 s (a save of a few MB with its fsyncs); a loaded CI machine (load 8 on 2
# cores, other jobs writing to the same disk) can make that many times longer, so each deadline
# is at least 20 times the quiet figure. A test's pytest-timeout (300 s) still bounds the whole.
READY_S = 60.0
LINE_S = 30.0


class Lines:
    """Lines from a pipe, each read with a deadline."""

    def __init__(self, fd):
        self.fd, self.buf = fd, b""

    def next(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no line from the child process in time")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    raise EOFError("the child process closed its output")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def until(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(max(0.0, deadline - time.monotonic()))
            if line.startswith(prefix):
                return line
