"""Compiled steps under MultiWorkerMirroredStrategy (a real 2-rank ``mpiexec`` job): ``fit``,
``evaluate`` and ``predict`` run their compiled step and give the eager step's bits, and the
compiled backward still hands each gradient to its bucket as it becomes final, so a bucket's
all-reduce starts before the backward pass ends (``scripts/mw_compiled.py``). The compiled job
against one process: ``test_multiworker.py`` (``fit`` compiles by default)."""

import numpy as np
import pytest

pytestmark = pytest.mark.timeout(240)

KINDS = ("mlp", "cnn", "extras", "bn", "noisy", "uneven", "buckets")


def check_compiled_equals_eager(got, rank, kind):
    # the strategy's steps really ran compiled (jit_compile=True: compiled or an error;
    # "buckets" with the default jit_compile)
    assert list(got[f"{kind}_compiled_compiled"]) == ["predict", "test", "train"], (rank, kind)
    assert list(got[f"{kind}_eager_compiled"]) == [], (rank, kind)
    for part in ("final", "batches", "eval", "pred"):
        a, b = got[f"{kind}_compiled_{part}"], got[f"{kind}_eager_{part}"]
        assert a.tobytes() == b.tobytes(), (rank, kind, part, np.abs(a - b).max())


def check_buckets_start_in_backward(got, rank):
    compiled = str(got["buckets_compiled_events"]).split("|")[1:]
    eager = str(got["buckets_eager_events"]).split("|")[1:]
    # the same hand-overs and bucket starts, in the same order, step by step
    assert compiled == eager, rank
    assert len(compiled) == 20, compiled
    # the first step learns the variables (no buckets yet); after it, each step's 6 gradients
    # go into 3 buckets, the first started while gradients are still to come
    for step in compiled[1:]:
        assert step.count("g") == 6 and step.count("s") == 3, (rank, step)
        assert step.index("s") < step.rindex("g"), (rank, step)


def test_compiled_steps_under_multiworker_equal_eager_steps(mpirun, tmp_path):
    job = mpirun("mw_compiled.py", 2, timeout=200, args=(tmp_path,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    got = [np.load(tmp_path / f"{rank}.npz") for rank in (0, 1)]
    for rank in (0, 1):
        for kind in KINDS:
            check_compiled_equals_eager(got[rank], rank, kind)
        check_buckets_start_in_backward(got[rank], rank)
    # the two workers hold one model (but BatchNormalization's moving statistics: ON_READ,
    # each worker's own until read in cross-replica context, as TF's)
    for kind in ("mlp", "cnn", "extras", "noisy", "uneven", "buckets"):
        assert got[0][f"{kind}_compiled_final"].tobytes() == \
            got[1][f"{kind}_compiled_final"].tobytes(), kind
