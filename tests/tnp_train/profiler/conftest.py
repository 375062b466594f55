"""Fixtures shared by the profiler tests."""
import pytest

from tnp_train.profiler import session
from tnp_train.profiler.experimental import stop
from tnp_train.utils import tracing


@pytest.fixture
def no_profiler_left():
    """After the test, no profiler session is left running and no recorder installed (a failed
    test must not leave the next one a profiler)."""
    yield
    if session.is_running():
        stop(save=False)
    assert tracing.get_recorder() is None
