"""Tests that make a strategy under a simulated ``mpiexec`` environment (``OMPI_*`` variables)
and expect a launch error arm the hook that would abort the MPI job if that error went
uncaught (``collective.mpi.abort_job_if_uncaught``); each test gets the excepthook it found."""
import sys

import pytest


@pytest.fixture(autouse=True)
def _restore_excepthook():
    hook = sys.excepthook
    yield
    sys.excepthook = hook
