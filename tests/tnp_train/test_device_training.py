"""Training runs entirely on the array's device: on the fake ``cpu:1`` device (NumPy data that
obeys the device rules) it gives exactly the CPU's numbers, so every kernel, optimizer update,
metric and checkpoint stays on the device it was given. tests/gpu/test_gpu_train.py runs the
same on a GPU."""
import pytest

from device_training import compare


@pytest.mark.parametrize("inside", [True, False], ids=["in-device-block", "outside-the-block"])
@pytest.mark.parametrize("kind", ["cnn", "rnn"])
def test_training_on_the_fake_device_matches_the_cpu(kind, inside, tmp_path):
    compare("cpu:1", kind, rtol=0, tmp_path=tmp_path, inside=inside)
