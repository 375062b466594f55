import pytest

from cb_fakes import FakeModel


@pytest.fixture
def model():
    return FakeModel()
