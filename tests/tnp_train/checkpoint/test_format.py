"""The checkpoint file format: exact round trips, and clear errors for damaged files."""
from __future__ import annotations

import hashlib
import json
import os
import struct

import hypothesis.extra.numpy as hnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tnp_train.checkpoint import _format
from tnp_train.checkpoint._format import (CheckpointFormatError, CheckpointReader,
                                          write_checkpoint_file)

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from(DTYPES + ML_DTYPES),
       shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
       seed=st.integers(0, 2**31 - 1), fortran=st.booleans(), swap=st.booleans())
def test_round_trip_is_bit_exact(tmp_path_factory, dtype, shape, seed, fortran, swap):
    dt = np.dtype(getattr(ml_dtypes, dtype)) if dtype in ML_DTYPES else np.dtype(dtype)
    raw = np.random.default_rng(seed).integers(0, 256, size=int(np.prod(shape)) * dt.itemsize,
                                               dtype=np.uint8)
    if dt.kind == "b":
        raw = raw % 2
    a = raw.view(dt).reshape(shape)
    if fortran:
        a = np.asfortranarray(a)
    if swap and dt.kind in "iufc" and dt.itemsize > 1:
        a = a.astype(dt.newbyteorder(">"))        # big-endian input is stored little-endian
    path = str(tmp_path_factory.mktemp("fmt") / "f")
    write_checkpoint_file(path, [("x", a), ("scalar", np.float32(1.5))])
    r = CheckpointReader(path)
    b = r.read("x")
    assert b.shape == a.shape and b.dtype == dt and r.dtype("x") == dt
    assert _bits(b) == _bits(a.astype(dt))
    assert r.read("scalar").shape == () and r.read("scalar") == 1.5
    assert b.flags.writeable


def test_bfloat16_is_stored_as_uint16_bits(tmp_path):
    a = np.array([1.0, -2.5, np.inf, np.nan], dtype=ml_dtypes.bfloat16)
    p = str(tmp_path / "f")
    write_checkpoint_file(p, [("w", a)])
    e = _manifest(p)["entries"][0]
    assert e["dtype"] == "bfloat16" and e["storage"] == "<u2"
    assert _bits(CheckpointReader(p).read("w")) == _bits(a)


def test_object_arrays_refused(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        write_checkpoint_file(str(tmp_path / "f"), [("o", np.array([{}], dtype=object))])
    assert not os.path.exists(tmp_path / "f")


def test_no_pickle_in_the_file(tmp_path):
    p = str(tmp_path / "f")
    write_checkpoint_file(p, [("a", np.arange(5.0))])
    data = open(p, "rb").read()
    assert b"\x80\x04" not in data[:200] and b"pickle" not in data


# ------------------------------------------------------------------ damaged files
def _manifest(path):
    data = open(path, "rb").read()
    mlen = struct.unpack_from("<Q", data, 16)[0]
    return json.loads(data[80:80 + mlen])


def _rewrite_manifest(path, edit):
    """Change the manifest and fix its checksum (a deliberate forgery)."""
    data = bytearray(open(path, "rb").read())
    magic, ver, res, mlen, doff, total, _ = struct.unpack_from("<8sIIQQQ32s", data, 0)
    m = json.loads(data[80:80 + mlen])
    edit(m)
    new = json.dumps(m, separators=(",", ":")).encode()
    assert 80 + len(new) <= doff       # fits before the data, whose offsets stay
    data = data[:80] + new + b"\0" * (doff - 80 - len(new)) + data[doff:]
    struct.pack_into("<8sIIQQQ32s", data, 0, magic, ver, res, len(new), doff, total,
                     hashlib.sha256(new).digest())
    open(path, "wb").write(bytes(data))


@pytest.fixture
def good(tmp_path):
    p = str(tmp_path / "ckpt-1")
    write_checkpoint_file(p, [("layer/kernel", np.arange(600, dtype=np.float32).reshape(20, 30)),
                              ("layer/bias", np.ones(30, np.float64))])
    return p


def test_every_truncation_is_detected(good):
    data = open(good, "rb").read()
    cuts = sorted(set([0, 1, 7, 8, 40, 79, 80, 81, 100] + list(range(0, len(data), 97)) +
                      [len(data) - 1]))
    for n in cuts:
        with open(good, "wb") as f:
            f.write(data[:n])
        with pytest.raises(CheckpointFormatError, match=os.path.basename(good)):
            r = CheckpointReader(good)
            r.read_many(r.keys())


def test_flipped_data_byte_names_the_key(good):
    data = bytearray(open(good, "rb").read())
    m = _manifest(good)
    doff = struct.unpack_from("<Q", data, 24)[0]
    e = [e for e in m["entries"] if e["key"] == "layer/bias"][0]
    data[doff + e["offset"] + 3] ^= 0x10
    open(good, "wb").write(bytes(data))
    r = CheckpointReader(good)
    r.read("layer/kernel")          # the other entry is fine
    with pytest.raises(CheckpointFormatError, match=r"ckpt-1.*'layer/bias'.*SHA-256"):
        r.read("layer/bias")


def test_flipped_manifest_byte(good):
    data = bytearray(open(good, "rb").read())
    data[90] ^= 0x01
    open(good, "wb").write(bytes(data))
    with pytest.raises(CheckpointFormatError, match="manifest fails its SHA-256"):
        CheckpointReader(good)


def test_wrong_versions(good):
    data = bytearray(open(good, "rb").read())
    struct.pack_into("<I", data, 8, 99)
    open(good + "v", "wb").write(bytes(data))
    with pytest.raises(CheckpointFormatError, match="version 99 is not supported"):
        CheckpointReader(good + "v")
    _rewrite_manifest(good, lambda m: m.update(format_version=2))
    with pytest.raises(CheckpointFormatError, match="version 2 is not supported"):
        CheckpointReader(good)


@pytest.mark.parametrize("edit,match", [
    (lambda e: e.update(storage="|O"), "not a plain"),
    (lambda e: e.update(storage="<V8"), "not a plain"),
    (lambda e: e.update(dtype="object"), "unknown dtype"),
    (lambda e: e.update(dtype="finfo"), "unknown dtype"),
    (lambda e: e.update(shape=[20, 31]), "bytes recorded for shape"),
    (lambda e: e.update(shape=[-1]), "invalid shape"),
    (lambda e: e.update(offset=10**9), "past the end"),
    (lambda e: e.pop("sha256"), "no checksum"),
])
def test_forged_manifest_entries_refused(good, edit, match):
    _rewrite_manifest(good, lambda m: edit(m["entries"][0]))
    with pytest.raises(CheckpointFormatError, match=match) as info:
        CheckpointReader(good)
    assert "layer/kernel" in str(info.value) and "ckpt-1" in str(info.value)


def test_not_a_checkpoint(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(CheckpointFormatError, match="not a tnp_train checkpoint"):
        CheckpointReader(str(p))
    p.write_bytes(b"")
    with pytest.raises(CheckpointFormatError):
        CheckpointReader(str(p))
    assert issubclass(CheckpointFormatError, ValueError)


def test_failed_write_keeps_the_old_file(good, monkeypatch):
    before = open(good, "rb").read()

    def boom(fd):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        write_checkpoint_file(good, [("a", np.zeros(3))])
    monkeypatch.undo()
    assert open(good, "rb").read() == before
    assert [f for f in os.listdir(os.path.dirname(good)) if ".tmp-" in f] == []


def test_alignment_and_header(good):
    m = _manifest(good)
    assert m["format_version"] == _format.FORMAT_VERSION and m["checksum"] == "sha256"
    assert all(e["offset"] % 64 == 0 for e in m["entries"])
