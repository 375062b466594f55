"""Crafted checkpoint files whose checksums pass: every one is refused with a
CheckpointFormatError naming the file (never another exception, never a silent result), and
every byte of the file is covered by some check (the reserved header bytes and the padding)."""
from __future__ import annotations

import hashlib
import json
import os
import struct

import numpy as np
import pytest

from tnp_train.checkpoint import _format
from tnp_train.checkpoint._format import (CheckpointFormatError, CheckpointReader,
                                          write_checkpoint_file)
from tnp_train.checkpoint.checkpoint import read_values

_HEAD = "<8sIIQQQ32s"
_EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def _read_all(path):
    r = CheckpointReader(path)
    return r.read_many(r.keys())


@pytest.fixture
def ckpt(tmp_path):
    """A checkpoint whose first array (10 float32 = 40 bytes) is followed by 24 padding bytes."""
    p = str(tmp_path / "ckpt-1")
    write_checkpoint_file(p, [("a", np.arange(10, dtype=np.float32)),
                              ("b", np.ones((2, 3), np.float64))])
    return p


def _forge(path, manifest_bytes=None, edit=None):
    """Replace the manifest (raw bytes, or the parsed one changed by ``edit``), moving the data
    to the new aligned data offset and fixing every size and the manifest's SHA-256 (a
    deliberate forgery that passes the checksums)."""
    data = open(path, "rb").read()
    magic, ver, res, mlen, doff, total, _ = struct.unpack_from(_HEAD, data, 0)
    if manifest_bytes is None:
        m = json.loads(data[80:80 + mlen])
        edit(m)
        manifest_bytes = json.dumps(m, separators=(",", ":")).encode()
    body = data[doff:]
    new_doff = -(-(80 + len(manifest_bytes)) // 64) * 64
    out = bytearray(80) + manifest_bytes + bytes(new_doff - 80 - len(manifest_bytes)) + body
    struct.pack_into(_HEAD, out, 0, magic, ver, res, len(manifest_bytes), new_doff,
                     new_doff + len(body), hashlib.sha256(manifest_bytes).digest())
    with open(path, "wb") as f:
        f.write(bytes(out))


def _refused(path, match):
    with pytest.raises(CheckpointFormatError, match=match) as info:
        _read_all(path)
    assert os.path.basename(path) in str(info.value)


def _set_a(**kw):
    return lambda m: m["entries"][0].update(kw)


# ------------------------------------------------------------------ shapes
@pytest.mark.parametrize("shape", [
    [2**40, 2**40],          # 2**80 elements: an int64 product wraps to 0 (= the 0 bytes given)
    [2**32, 2**32, 3],       # wraps to 0 as well
    [2**40, 2**40, 0],       # no elements, but NumPy cannot make the array (too big)
    [2**64],                 # a dimension past int64
], ids=["2e40x2e40", "2e32x2e32x3", "zero_size_too_big", "past_int64"])
def test_shape_whose_size_overflows(ckpt, shape):
    _forge(ckpt, edit=_set_a(shape=shape, nbytes=0, sha256=_EMPTY_SHA))
    _refused(ckpt, r"entry 'a': shape .* larger than any array")


def test_shape_with_more_dimensions_than_numpy_allows(ckpt):
    _forge(ckpt, edit=_set_a(shape=[1] * 64 + [10]))
    _refused(ckpt, r"entry 'a': invalid shape of 65 dimensions \(NumPy allows at most 64\)")


def test_shape_of_booleans(ckpt):
    _forge(ckpt, edit=_set_a(shape=[True, 10]))        # JSON true is no dimension
    _refused(ckpt, r"entry 'a': invalid shape \[True, 10\]")


@pytest.mark.parametrize("field", ["offset", "nbytes"])
def test_offset_or_size_of_booleans(ckpt, field):
    _forge(ckpt, edit=_set_a(**{field: False}))
    _refused(ckpt, "entry 'a': invalid offset/size")


# ------------------------------------------------------------------ manifest structure
@pytest.mark.parametrize("entries", [{}, {"a": 1}, "", "abc", 5, 1.5, None, True],
                         ids=["empty_dict", "dict", "empty_str", "str", "int", "float", "null",
                              "bool"])
def test_entries_that_are_not_a_list(ckpt, entries):
    _forge(ckpt, edit=lambda m: m.update(entries=entries))
    _refused(ckpt, "'entries' must be a list")


def test_missing_entries(ckpt):
    _forge(ckpt, edit=lambda m: m.pop("entries"))
    _refused(ckpt, "'entries' must be a list")


@pytest.mark.parametrize("metadata", [[1], "x", 3])
def test_metadata_that_is_not_an_object(ckpt, metadata):
    _forge(ckpt, edit=lambda m: m.update(metadata=metadata))
    _refused(ckpt, "'metadata' must be an object")


def test_json_nested_200000_levels(ckpt):
    _forge(ckpt, manifest_bytes=b"[" * 200_000 + b"]" * 200_000)
    _refused(ckpt, "unreadable manifest: RecursionError")
    _forge(ckpt, manifest_bytes=b'{"format":"tnp_train.checkpoint","x":' + b'{"y":' * 200_000 +
           b"1" + b"}" * 200_001)
    _refused(ckpt, "unreadable manifest: RecursionError")


def test_integer_too_long_to_convert(ckpt):
    # Python refuses to parse integers of more than 4300 digits with a plain ValueError
    _forge(ckpt, edit=_set_a(offset=0))
    raw = open(ckpt, "rb").read()
    mlen = struct.unpack_from("<Q", raw, 16)[0]
    manifest = raw[80:80 + mlen].replace(b'"offset":0', b'"offset":' + b"1" * 5000)
    _forge(ckpt, manifest_bytes=manifest)
    _refused(ckpt, "unreadable manifest: ValueError")


# ------------------------------------------------------------------ reserved bytes, padding
def _flip(path, pos):
    data = bytearray(open(path, "rb").read())
    data[pos] ^= 0x01
    with open(path, "wb") as f:
        f.write(bytes(data))


@pytest.mark.parametrize("pos", [12, 15, 72, 79])
def test_reserved_header_bytes_must_be_zero(ckpt, pos):
    _flip(ckpt, pos)
    with pytest.raises(CheckpointFormatError, match=r"ckpt-1: corrupt header: its reserved "
                                                    r"bytes .* must be zero"):
        CheckpointReader(ckpt)


def test_padding_after_the_manifest_must_be_zero(ckpt):
    raw = open(ckpt, "rb").read()
    mlen, doff = struct.unpack_from("<QQ", raw, 16)
    assert 80 + mlen < doff, "the fixture must have padding after its manifest"
    for pos in (80 + mlen, doff - 1):
        with open(ckpt, "wb") as f:
            f.write(raw)
        _flip(ckpt, pos)
        with pytest.raises(CheckpointFormatError,
                           match=r"ckpt-1: the padding after the manifest .* not all zero"):
            CheckpointReader(ckpt)


def test_padding_between_arrays_must_be_zero(ckpt):
    raw = open(ckpt, "rb").read()
    doff = struct.unpack_from("<Q", raw, 24)[0]
    for pos in (doff + 40, doff + 63):                 # after the 40 bytes of "a", before "b"
        with open(ckpt, "wb") as f:
            f.write(raw)
        _flip(ckpt, pos)
        r = CheckpointReader(ckpt)
        np.testing.assert_array_equal(r.read("b"), np.ones((2, 3)))   # "b" is intact
        with pytest.raises(CheckpointFormatError,
                           match=r"ckpt-1: the padding after entry 'a' .* not all zero"):
            r.read("a")
        _refused(ckpt, "padding after entry 'a'")


def test_data_placed_anywhere_but_the_layout(ckpt):
    """With the padding zero-checked, the arrays' places are fixed too: aligned, in manifest
    order, not overlapping, and nothing after the last one."""
    # "b" made to read "a"'s 40 bytes as 5 float64: every checksum passes
    _forge(ckpt, edit=lambda m: m["entries"][1].update(
        offset=0, nbytes=40, shape=[5], sha256=m["entries"][0]["sha256"]))
    _refused(ckpt, r"entry 'b': its data offset 0 is not the 64-byte boundary at or after")
    _forge(ckpt, edit=lambda m: m["entries"].reverse())
    _refused(ckpt, "entry 'a': its data offset 0 is not the 64-byte boundary")


def test_bytes_after_the_last_array(ckpt):
    data = bytearray(open(ckpt, "rb").read()) + bytes(64)
    struct.pack_into("<Q", data, 32, len(data))       # the header's file size agrees
    with open(ckpt, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(CheckpointFormatError, match="64 bytes of data after the last array"):
        CheckpointReader(ckpt)


def test_zero_length_arrays_and_no_arrays_still_read(tmp_path):
    p = str(tmp_path / "f")
    write_checkpoint_file(p, [("a", np.zeros(0, np.float32)), ("b", np.arange(3)),
                              ("c", np.zeros((0, 4))), ("d", np.zeros((2, 0), np.int8))])
    got = _read_all(p)
    assert [got[k].shape for k in "abcd"] == [(0,), (3,), (0, 4), (2, 0)]
    write_checkpoint_file(p, [], metadata={"x": 1})
    r = CheckpointReader(p)
    assert r.keys() == [] and r.metadata == {"x": 1}


# ------------------------------------------------------------------ a save landing mid-read
def test_a_file_replaced_while_it_is_read_gives_the_old_contents(tmp_path, monkeypatch):
    """A restore that reads the manifest, then the arrays, must not mix two files when a save
    replaces the path in between (os.replace: the open file keeps the old contents)."""
    p = str(tmp_path / "ckpt-1")
    old, new = np.arange(6.0), -np.arange(6.0)
    write_checkpoint_file(p, [("v", old)])
    real_init = CheckpointReader.__init__

    def init_then_replace(self, *a, **kw):
        real_init(self, *a, **kw)
        write_checkpoint_file(p, [("v", new)])        # a concurrent save lands now
    monkeypatch.setattr(_format.CheckpointReader, "__init__", init_then_replace)
    np.testing.assert_array_equal(read_values(p)["v"], old)
    monkeypatch.undo()
    np.testing.assert_array_equal(_read_all(p)["v"], new)
