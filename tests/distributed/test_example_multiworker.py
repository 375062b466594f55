"""``examples/digits_multiworker.py`` (``make demo-distributed``) runs under a real 2-rank
``mpiexec`` job: one epoch, the chief alone prints the test accuracy, and it is well above
chance (10 classes: 0.10). One epoch of the one-process example reaches about 0.86 with seed 0.
The two runs draw the same dropout masks (each worker its rows of the global batch's) but sum
gradients in another order, and Adam carries that rounding along, so they are not compared
number for number here (the exact equivalence is tests/distributed/test_multiworker.py's, with
SGD, dropout included)."""
import re

import pytest

from conftest import ROOT

# The job takes 10 to 30 s on 2 cores, depending on what else runs on them: its bound is about
# 10 times the slow end, as far as the suite's 300 s per test allows.
pytestmark = pytest.mark.timeout(290)

EXAMPLE = ROOT / "examples" / "digits_multiworker.py"


def test_digits_example_on_two_ranks(mpirun):
    job = mpirun(EXAMPLE, 2, timeout=270, args=("--epochs", "1", "--seed", "0"))
    assert job.returncode == 0 and not job.timed_out, str(job)
    assert job.leftover == [], str(job)
    # every worker reports itself; only the chief prints results
    assert "worker worker:0 of 2 ready" in job.stdout, str(job)
    assert "worker worker:1 of 2 ready" in job.stdout, str(job)
    found = re.findall(r"^test accuracy: (\d\.\d{4})$", job.stdout, flags=re.M)
    assert len(found) == 1, str(job)
    assert "2 worker(s)" in job.stdout, str(job)
    assert float(found[0]) > 0.5, str(job)
