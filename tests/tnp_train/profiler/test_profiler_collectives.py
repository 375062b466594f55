"""Collective spans under MultiWorkerMirroredStrategy, with the workers as threads of one
process (tests/tnp_train/distribute/thread_workers.py): the all-reduce spans of a step carry the
model's gradient bytes, the same ``seq`` on every rank, and the time spent waiting for a late
rank as ``wait`` spans."""
import os
import statistics
import sys
import time

import numpy as np
import pytest

import tnp_train as tt
from tnp_train.profiler.experimental import Profile

import trace_checks as tc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "distribute"))
from thread_workers import run_workers  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 6)).astype("float32")
Y = RNG.integers(0, 3, 64)
STEPS = 4                    # 64 samples, global batch 16


pytestmark = pytest.mark.usefixtures("no_profiler_left")   # conftest.py


class _LateRank(tt.callbacks.Callback):
    def __init__(self, rank, seconds):
        super().__init__()
        self.rank, self.seconds = rank, seconds

    def on_train_batch_begin(self, batch, logs=None):
        if self.rank == 1:
            time.sleep(self.seconds)


def _fit_on_two_threads(logdir, late_s=0.0):
    def work(strategy, rank):
        with strategy.scope():
            model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu"),
                                   tt.layers.Dense(3)])
            model.compile(optimizer=tt.optimizers.SGD(0.1),
                          loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0, shuffle=False,
                  callbacks=[_LateRank(rank, late_s)] if late_s else None)
        return [v.numpy() for v in model.trainable_variables]

    with Profile(logdir):
        variables = run_workers(2, work)
    (run,) = tc.run_dirs(logdir)
    workers, merged = tc.run_files(run)
    (trace,) = workers.values()
    tc.check_structure(trace)
    tc.check_structure(merged)
    steps = tc.spans(trace, "step")
    by_tid = {}
    for s in steps:
        by_tid.setdefault(s["tid"], []).append(s)
    assert len(by_tid) == 2 and all(len(v) == STEPS for v in by_tid.values())
    return trace, by_tid, variables[0]


def _within(trace, outer, cat):
    return [e for e in tc.spans(trace, cat, tid=outer["tid"]) if tc.inside(e, outer)]


def test_allreduce_bytes_of_a_step_are_the_gradient_bytes(tmp_path):
    trace, by_tid, variables = _fit_on_two_threads(tmp_path)
    grad_bytes = sum(v.nbytes for v in variables)
    assert grad_bytes == 4 * (6 * 8 + 8 + 8 * 3 + 3)
    seqs = {}
    for tid, steps in by_tid.items():
        for s in steps:
            # the gradients are reduced during the tape's pass and the optimizer's update;
            # in the first step the metrics' own small all-reduce comes after them, from the
            # second on the metrics' state (the loss's total and count: 2 float32) is summed
            # with them (AllReduceGradients.carry_on_read)
            grads = [c for part in _within(trace, s, "backward") + _within(trace, s, "optimizer")
                     for c in _within(trace, part, "collective")]
            grads = list({c["args"]["seq"]: c for c in grads}.values())
            assert grads and all(c["args"]["name"] == "allreduce" for c in grads)
            sent = sum(c["args"]["bytes"] for c in grads)
            # the first step reduces the gradients at once; later steps in buckets, which
            # carry one presence flag (float32) per variable after the gradients
            # (tnp_train/distribute/collective/buckets.py)
            first = s is steps[0]
            extra = 0 if first else 4 * len(variables) + 8
            assert grad_bytes + extra == sent, (s, sent)
        seqs[tid] = {c["args"]["seq"]: (c["name"], c["args"]["bytes"])
                     for c in tc.spans(trace, "collective", tid=tid)}
    a, b = seqs.values()
    assert a == b      # the same collectives, numbered alike, on both ranks


LATE_MS = 200.0     # rank 1's sleep per step: more than a loaded machine holds a thread up


def test_a_late_rank_shows_as_wait_on_the_other(tmp_path):
    trace, by_tid, _ = _fit_on_two_threads(tmp_path, late_s=LATE_MS / 1e3)
    waits = {}
    for tid, steps in by_tid.items():
        colls = tc.spans(trace, "collective", tid=tid)
        (rank,) = {c["args"]["rank"] for c in colls}
        for w in tc.spans(trace, "wait", tid=tid):
            # a wait is the first part of its collective
            (c,) = [c for c in colls if c["args"]["seq"] == w["args"]["seq"]]
            assert tc.inside(w, c) and abs(w["ts"] - c["ts"]) < 0.01
        waits[rank] = [sum(w["dur"] for w in _within(trace, s, "wait")) / 1e3 for s in steps]
    # rank 1 sleeps at the start of every step: rank 0 waits for it (a lower bound: load only
    # adds to it), rank 1 far less than rank 0 (medians: a thread of a busy machine may be held
    # up in a step of its own; no millisecond bound above, a loaded machine would break it)
    assert statistics.median(waits[0]) >= 0.5 * LATE_MS, waits
    assert statistics.median(waits[1]) < 0.5 * statistics.median(waits[0]), waits
