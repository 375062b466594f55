"""tnp_train on the GPU (CuPy): the same training as on the CPU, to float32 GEMM tolerance.
Skipped where CuPy finds no CUDA device (tests/conftest.py)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tnp_train"))
from device_training import compare  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.gpu
@pytest.mark.parametrize("inside", [True, False], ids=["in-device-block", "outside-the-block"])
@pytest.mark.parametrize("kind", ["cnn", "rnn"])
def test_training_on_the_gpu_matches_the_cpu(kind, inside, tmp_path):
    pytest.importorskip("cupy")
    compare("gpu:0", kind, rtol=2e-4, tmp_path=tmp_path, inside=inside)
