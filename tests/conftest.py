"""Shared test settings: a small, derandomised hypothesis profile for CI (2 cores, 20 minutes)."""
import os

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the lent GPU machine may lack it; hypothesis tests are then not collected
    settings = None
else:
    settings.register_profile(
        "ci", max_examples=int(os.environ.get("TNP_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
        derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True)
    settings.load_profile("ci")


def _gpu_available():
    try:
        from tnp._core.backend import cupy_available
        return cupy_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
