"""``tnp_train.io.tfrecord``: TFRecord files: the framing TF writes and reads (``tf.io.TFRecordWriter``, the reader
under ``tf.data.TFRecordDataset``).

A record is ``uint64 length``, ``uint32 masked_crc32c(length)``, ``data``,
``uint32 masked_crc32c(data)``, all little-endian; a file may be GZIP- or ZLIB-compressed as a
whole (offsets then count the uncompressed stream, as TF's). Checksums come from the
``crc32c`` package (the CRC-32C of TF's files, in C).
"""
from __future__ import annotations

import os
import struct
import zlib

from ..errors import DataLossError

__all__ = ["TFRecordOptions", "TFRecordWriter", "read_records", "compression_of"]

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_READ_SIZE = 256 * 1024


def _crc32c():
    try:
        import crc32c
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("TFRecord files need the 'crc32c' package: pip install "
                          "tnp[tfrecord] (or pip install crc32c)") from None
    return crc32c.crc32c


def masked_crc(data, crc32c):
    """TF's masked CRC-32C: the checksum rotated right by 15 bits plus a constant, so that a
    CRC of data holding CRCs is not itself weak."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def compression_of(value, op):
    """``""``, ``"ZLIB"`` or ``"GZIP"`` from a compression type (None is ``""``) or a
    ``TFRecordOptions``; ValueError otherwise."""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if value is None:
        return ""
    if value not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"{op}: unsupported compression_type {value!r}; expected '', 'ZLIB' "
                         "or 'GZIP'")
    return value


class TFRecordOptions:
    """Mirrors ``tf.io.TFRecordOptions``: the compression of a TFRecord file (``"GZIP"``,
    ``"ZLIB"`` or ``""``) and zlib's settings when writing one. ``flush_mode`` is not
    supported (NotImplementedError when given); the buffer sizes change no byte of the file."""

    compression_type_map = {"ZLIB": "ZLIB", "GZIP": "GZIP", "": ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        self.compression_type = compression_of(compression_type, "TFRecordOptions")
        if flush_mode is not None:
            raise NotImplementedError("TFRecordOptions: flush_mode is not supported (zlib's "
                                      "Z_NO_FLUSH is used, TF's default)")
        if compression_method not in (None, zlib.DEFLATED):
            raise ValueError(f"TFRecordOptions: compression_method must be {zlib.DEFLATED} "
                             f"(deflate), got {compression_method!r}")
        if compression_level is not None and not -1 <= compression_level <= 9:
            raise ValueError("TFRecordOptions: compression_level must be in [-1, 9], got "
                             f"{compression_level}")
        if window_bits is not None and not 8 <= window_bits <= 15:
            raise ValueError(f"TFRecordOptions: window_bits must be in [8, 15], got "
                             f"{window_bits}")
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """``""``, ``"ZLIB"`` or ``"GZIP"`` for options, a compression type or None."""
        return compression_of(options, "TFRecordOptions.get_compression_type_string")

    def _compressor(self):
        bits = 15 if self.window_bits is None else self.window_bits
        wbits = bits + 16 if self.compression_type == "GZIP" else bits
        level = -1 if self.compression_level is None else self.compression_level
        mem = 9 if self.mem_level is None else self.mem_level   # TF's default memLevel
        strategy = zlib.Z_DEFAULT_STRATEGY if self.compression_strategy is None \
            else self.compression_strategy
        return zlib.compressobj(level, zlib.DEFLATED, wbits, mem, strategy)


def _as_record(record):
    if isinstance(record, str):
        return record.encode("utf-8")
    if isinstance(record, (bytes, bytearray, memoryview)):
        return bytes(record)
    raise TypeError(f"TFRecordWriter.write: a record must be bytes (or str), got "
                    f"{type(record).__name__}")


class TFRecordWriter:
    """Mirrors ``tf.io.TFRecordWriter(path, options=None)``: writes records (``bytes``, such as
    ``example.SerializeToString()``) to a TFRecord file, compressed as ``options`` says (a
    ``TFRecordOptions`` or a compression type). A context manager; ``flush`` and ``close``."""

    def __init__(self, path, options=None):
        self._crc = _crc32c()
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(compression_of(options, "TFRecordWriter"))
        self._options = options
        self._file = open(os.fspath(path), "wb")
        self._zip = options._compressor() if options.compression_type else None

    def write(self, record):
        """Appends one record."""
        if self._file is None:
            raise ValueError("TFRecordWriter.write: the writer is closed")
        data = _as_record(record)
        crc = self._crc
        length = struct.pack("<Q", len(data))
        chunk = b"".join((length, struct.pack("<I", masked_crc(length, crc)), data,
                          _FOOTER.pack(masked_crc(data, crc))))
        self._file.write(self._zip.compress(chunk) if self._zip is not None else chunk)

    def flush(self):
        """Writes what is buffered to the file (a compressed stream stays readable: zlib's
        sync flush, as TF's)."""
        if self._file is None:
            raise ValueError("TFRecordWriter.flush: the writer is closed")
        if self._zip is not None:
            self._file.write(self._zip.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self):
        """Finishes the file (the compressed stream's end) and closes it; closing twice does
        nothing."""
        if self._file is None:
            return
        try:
            if self._zip is not None:
                self._file.write(self._zip.flush())
        finally:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------- reading
def _chunks(path, compression, buffer_size):
    """The file's bytes, decompressed as they are read (what was written before a writer's
    ``flush`` reads even while the stream is unfinished); EOFError at the end of a stream that
    stops short, after what it held."""
    with open(path, "rb") as f:
        if not compression:
            while chunk := f.read(buffer_size):
                yield chunk
            return
        wbits = 31 if compression == "GZIP" else 15
        d = zlib.decompressobj(wbits)
        while raw := f.read(buffer_size):
            while raw:
                if chunk := d.decompress(raw):
                    yield chunk
                raw = d.unused_data if d.eof else b""
                if raw and compression == "GZIP":   # the next member of a multi-member file
                    d = zlib.decompressobj(wbits)
        if tail := d.flush():
            yield tail
        if not d.eof:
            raise EOFError("the compressed stream ends before its end marker")


class _Stream:
    """Reads exact byte counts from a chunk generator; a broken compressed stream is a
    DataLossError (as TF's)."""

    def __init__(self, chunks, name, compression):
        self._chunks = chunks
        self._buf = bytearray()
        self._name = name
        self._compression = compression

    def read(self, n):
        while len(self._buf) < n:
            try:
                chunk = next(self._chunks, None)
            except (zlib.error, EOFError) as e:
                raise DataLossError(f"{self._compression} stream of {self._name} is corrupt or "
                                    f"cut short: {e}") from None
            if chunk is None:
                break
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out


def read_records(path, compression="", buffer_size=None):
    """The records of one TFRecord file, in order, as ``bytes``; DataLossError naming the file
    and the offset (in the uncompressed stream) of a record whose checksum fails or that is
    cut short, with TF's words. A file ending inside a record's length is at its end, as in
    TF."""
    crc = _crc32c()
    name = os.fsdecode(path)
    stream = _Stream(_chunks(path, compression, buffer_size or _READ_SIZE), name, compression)
    offset = 0
    while True:
        header = stream.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return   # TF: a partial length is the end of the file
        length, length_crc = _HEADER.unpack(header)
        if masked_crc(header[:8], crc) != length_crc:
            hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
            raise DataLossError(f"corrupted record at {offset}{hint}: {name}")
        body = stream.read(length + _FOOTER.size)
        if len(body) < length + _FOOTER.size:
            raise DataLossError(f"truncated record at {offset}' failed with Read less bytes "
                                f"than requested: {name}")
        data = body[:length]
        if masked_crc(data, crc) != _FOOTER.unpack_from(body, length)[0]:
            raise DataLossError(f"corrupted record at {offset + _HEADER.size}: {name}")
        yield data
        offset += _HEADER.size + length + _FOOTER.size
