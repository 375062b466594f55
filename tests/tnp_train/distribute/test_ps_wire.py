"""The parameter-server wire format: frames of a JSON header and aligned raw buffers
(``tnp_train.distribute.ps.wire``); the reference is the arrays and objects put in."""
import ml_dtypes
import numpy as np
import pytest

from tnp_train.distribute.ps import wire
from tnp_train.distribute.ps.pickling import dumps, loads


@pytest.mark.parametrize("a", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.float64(2.5),                                        # a NumPy scalar: stays 0-d
    np.array(7, dtype=np.int64),
    np.zeros((0, 3), np.float32),
    np.arange(6, dtype=np.float64).reshape(2, 3)[:, ::2],   # not contiguous
    np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16),
    np.array([True, False]),
])
def test_arrays_come_back_with_their_dtype_shape_and_values(a):
    f = wire.Frame({"op": "t"})
    f.header["x"] = f.add_array(a)
    header, buffers = wire.decode(f.encode())
    got = wire.array_from(header["x"], buffers)
    ref = np.asarray(a)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_buffers_are_aligned_views_into_the_frame():
    f = wire.Frame({})
    entries = [f.add_array(np.ones(n, np.float64)) for n in (1, 3, 17)]
    frame = f.encode()
    header, buffers = wire.decode(frame)
    for e in entries:
        got = wire.array_from(e, buffers)
        assert got.ctypes.data % 64 == 0
        assert got.base is not None and np.shares_memory(got, frame)


def test_pickles_carry_their_arrays_out_of_band():
    pytest.importorskip("cloudpickle")
    obj = {"w": np.arange(1000, dtype=np.float32), "name": "x", "f": (lambda v: v + 1)}
    stream, oob, _ = dumps(obj)
    assert len(stream) < 1000 and oob                        # the array is not in the stream
    f = wire.Frame({})
    f.header["p"] = f.add_pickle(stream, oob)
    header, buffers = wire.decode(f.encode())
    got = wire.pickle_from(header["p"], buffers, loads)
    np.testing.assert_array_equal(got["w"], obj["w"])
    assert got["name"] == "x" and got["f"](2) == 3


def test_a_damaged_frame_is_refused():
    with pytest.raises(ValueError, match="not a frame"):
        wire.decode(np.frombuffer(b"XXXX\0\0\0\0", np.uint8))
    good = wire.encode({"a": 1}, [b"0123456789"])
    with pytest.raises(ValueError, match="describes"):
        wire.decode(good[:70])
