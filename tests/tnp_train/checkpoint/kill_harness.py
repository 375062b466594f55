"""What the kill tests share: reading a child process's output line by line with deadlines."""
import os
import select
import time


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
