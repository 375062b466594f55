"""``collective.shm.shared_mapping`` on a one-rank stand-in communicator: a segment that fits is
mapped and zeroed; one the shared-memory filesystem cannot hold gives None (the callers then
fall back to MPI or to the ordinary update) and leaves no file behind, instead of mapping it
and dying of SIGBUS at the first write past what the filesystem has."""
import os

import numpy as np
import pytest

from tnp_train.distribute.collective import shm

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")


class OneRank:
    rank, size = 0, 1

    def broadcast_object(self, obj, root=0):
        return obj

    def allgather_object(self, obj):
        return [obj]


def _ours():
    return {f for f in os.listdir("/dev/shm") if f.startswith(f"tnp-test-{os.getpid()}-")}


def test_a_segment_that_fits_is_mapped_zeroed():
    mapping = shm.shared_mapping(OneRank(), 10_000, "test")
    try:
        raw = np.frombuffer(mapping, np.uint8)
        assert raw.size >= 10_000 and not raw.any()
        raw[:4] = 7                                  # writable
    finally:
        del raw
        mapping.close()
    assert not _ours()                               # its name is gone once mapped


def test_a_segment_too_large_for_the_filesystem_gives_none(monkeypatch):
    if not hasattr(os, "posix_fallocate"):
        pytest.skip("no posix_fallocate")
    seen = []

    def full(fd, offset, length):
        seen.append(length)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", full)
    assert shm.shared_mapping(OneRank(), 1 << 20, "test") is None
    assert seen == [1 << 20]
    assert not _ours()
