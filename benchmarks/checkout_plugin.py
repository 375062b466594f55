"""Another checkout's trainer as a plugin of the reference harness, in a child process: a change
and the code before it are timed round-robin in ONE run (the machine is shared, so two runs
are not comparable).

    git archive BASE | tar -x -C /tmp/base && cp tnp/_core/_speedups*.so /tmp/base/tnp/_core/
    TNP_CHECKOUT=/tmp/base PYTHONPATH=benchmarks:. python ../shared/bench/train_cnn.py \\
        --threads 1 --impls keras-fit,plugin:tnp_compiled_plugins:cnn_fit_jit,\\
    plugin:checkout_plugin:tnp_compiled_plugins.cnn_fit_jit

``plugin:checkout_plugin:MODULE.FACTORY`` builds ``MODULE.FACTORY(ctx)`` in a child Python whose
path starts with ``$TNP_CHECKOUT`` and its ``benchmarks/``; the child inherits the harness's
thread settings and CPU affinity, and answers ``run(n)`` and ``eval_loss()`` over a pipe (one
round trip per chunk of steps: microseconds against a chunk's second); the trainer's
``chunk_multiple`` is passed on.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys


class _Child:
    def __init__(self, ctx, target):
        checkout = os.environ["TNP_CHECKOUT"]
        env = dict(os.environ)
        bench = os.path.dirname(os.path.abspath(sys.modules["_trainbench"].__file__)) \
            if "_trainbench" in sys.modules else ""
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (checkout, os.path.join(checkout, "benchmarks"), bench) if p)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.info = f"{target} from {checkout} (child process)"
        multiple = self._ask(("build", target, ctx))
        if multiple is not None:     # fit runs whole epochs: the harness sizes chunks by it
            self.chunk_multiple = multiple

    def _ask(self, msg):
        pickle.dump(msg, self.proc.stdin)
        self.proc.stdin.flush()
        ok, value = pickle.load(self.proc.stdout)
        if not ok:
            raise RuntimeError(f"checkout_plugin child: {value}")
        return value

    def run(self, n):
        self._ask(("run", n))

    def sync(self):
        pass

    def eval_loss(self):
        return self._ask(("eval",))

    def __del__(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass


def __getattr__(name):
    if "." not in name:
        raise AttributeError(name)
    return lambda ctx: _Child(ctx, name)


def _serve():
    import importlib
    import traceback

    tr = None
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    sys.stdout = sys.stderr        # the trainers' prints must not reach the pipe
    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:
            return
        try:
            if msg[0] == "build":
                mod, fac = msg[1].rsplit(".", 1)
                tr = getattr(importlib.import_module(mod), fac)(msg[2])
                value = getattr(tr, "chunk_multiple", None)
            elif msg[0] == "run":
                tr.run(msg[1])
                tr.sync()
                value = None
            else:
                value = float(tr.eval_loss())
            pickle.dump((True, value), out)
        except Exception:  # noqa: BLE001
            pickle.dump((False, traceback.format_exc()), out)
        out.flush()


if __name__ == "__main__":
    _serve()
