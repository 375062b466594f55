"""TFRecord files and tf.train.Example parsing (tt.data.TFRecordDataset, tt.io, tt.train.Example)
against TF 2.21: the files, records, parsed values and error messages of
tests/fixtures/tfrecord/ (made by tests/fixtures/make_tfrecord_fixtures.py); our own files are
read back here (tests/fixtures/check_tnp_tfrecords.py reads them in TF, by hand)."""
import json
import os
import shutil

import numpy as np
import pytest

pytest.importorskip("crc32c")
pytest.importorskip("google.protobuf")

import tnp_train as tt  # noqa: E402

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tfrecord")
EXPECTED = json.load(open(os.path.join(HERE, "expected.json")))
COMPRESSION = {"plain.tfrecord": None, "gzip.tfrecord": "GZIP", "zlib.tfrecord": "ZLIB"}


def path(name):
    return os.path.join(HERE, name)


def SPEC():
    io = tt.io
    return {"label": io.FixedLenFeature([], "int64"),
            "tokens": io.VarLenFeature(np.int64),
            "scores": io.VarLenFeature(np.float32),
            "tags": io.VarLenFeature("string"),
            "frames": io.FixedLenSequenceFeature([2], np.float32, allow_missing=True),
            "weights": io.FixedLenFeature([3], np.float32, default_value=[0.5, 1.5, 2.5]),
            "name": io.FixedLenFeature([], "string", default_value=b"nameless")}


def records_of(ds):
    out, error = [], None
    it = iter(ds)
    while True:
        try:
            x = next(it)
        except StopIteration:
            break
        except tt.errors.DataLossError as e:
            error = str(e)
            break
        assert x.shape == () and x.dtype.kind == "S"
        out.append(x.numpy().tobytes().hex())
    return out, error


def dense(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def check_value(ours, theirs, key):
    if "indices" in theirs:
        assert isinstance(ours, tt.sparse.SparseTensor), key
        np.testing.assert_array_equal(dense(ours.indices).reshape(-1, len(theirs["dense_shape"])),
                                      np.asarray(theirs["indices"]).reshape(
                                          -1, len(theirs["dense_shape"])), err_msg=key)
        np.testing.assert_array_equal(dense(ours.dense_shape), theirs["dense_shape"],
                                      err_msg=key)
        assert dense(ours.indices).dtype == np.int64
        check_value(ours.values, theirs["values"], key + "/values")
        return
    a = dense(ours)
    assert list(a.shape) == theirs["shape"], key
    if theirs["dtype"] == "string":
        assert a.dtype.kind == "S", key
        got = [v.hex() for v in a.reshape(-1).tolist()]
        # NumPy's S drops trailing NULs of an element read from an array of several strings
        want = [bytes.fromhex(h) for h in theirs["hex"]]
        if a.ndim == 0:
            assert a.tobytes().hex() == theirs["hex"][0], key
        else:
            assert got == [w.rstrip(b"\x00").hex() for w in want], key
    else:
        assert a.dtype == np.dtype(theirs["dtype"]), key
        np.testing.assert_array_equal(a.reshape(-1), np.asarray(theirs["values"],
                                                                 dtype=theirs["dtype"]),
                                      err_msg=key)


# ----------------------------------------------------------------------------- reading
@pytest.mark.parametrize("name", sorted(EXPECTED["files"]))
def test_records_and_errors_equal_tf(name):
    want = EXPECTED["files"][name]
    got, error = records_of(tt.data.TFRecordDataset(path(name), COMPRESSION.get(name)))
    assert got == want["records"]
    if want["error"] is None:
        assert error is None
    else:
        assert error is not None and error.startswith(want["error"][1]), (error, want["error"])
        assert path(name) in error   # the message names the file


def test_ignore_errors_skips_the_rest_of_a_damaged_file_as_tf():
    for key, files in (("corrupt+plain", ["corrupt.tfrecord", "plain.tfrecord"]),
                       ("truncated+plain", ["truncated.tfrecord", "plain.tfrecord"])):
        ds = tt.data.TFRecordDataset([path(f) for f in files])
        assert records_of(ds.ignore_errors())[0] == EXPECTED["ignore_errors"][key]["records"]
        assert records_of(ds.apply(tt.data.experimental.ignore_errors()))[0] == \
            EXPECTED["ignore_errors"][key]["records"]
    with pytest.warns(RuntimeWarning, match="corrupted record at 548"):
        list(tt.data.TFRecordDataset(path("corrupt.tfrecord")).ignore_errors(log_warning=True))


def test_num_parallel_reads_interleaves_in_tf_order():
    ds = tt.data.TFRecordDataset([path("plain.tfrecord"), path("truncated.tfrecord")],
                                 num_parallel_reads=2).ignore_errors()
    assert records_of(ds)[0] == EXPECTED["interleave"]


def test_a_dataset_of_file_names_and_the_pipeline_around_it():
    names = tt.data.Dataset.list_files(os.path.join(HERE, "[gz]*.tfrecord"), shuffle=False)
    ds = tt.data.TFRecordDataset(names, "GZIP")
    assert tt.data.experimental.cardinality(ds) == tt.data.UNKNOWN_CARDINALITY
    got, error = records_of(ds)   # zlib.tfrecord is not GZIP
    assert got == EXPECTED["files"]["gzip.tfrecord"]["records"]
    assert "zlib.tfrecord" in error
    plain = EXPECTED["files"]["plain.tfrecord"]["records"]
    ds = tt.data.TFRecordDataset([path("plain.tfrecord")] * 2)
    spec = {"label": tt.io.FixedLenFeature([], np.int64)}
    labels = ds.map(lambda r: tt.io.parse_single_example(r, spec)["label"]).shuffle(
        12, seed=1).batch(5).prefetch(2)
    got = sorted(int(v) for b in labels.as_numpy_iterator() for v in b)
    assert got == sorted(2 * [int(e["label"]["values"][0]) for e in
                              EXPECTED["parse_single_example"]] + [0, 0])
    assert len(plain) == 6


def test_tfrecorddataset_argument_errors():
    with pytest.raises(ValueError, match="compression_type"):
        tt.data.TFRecordDataset(path("plain.tfrecord"), "LZ4")
    with pytest.raises(TypeError, match="filenames"):
        tt.data.TFRecordDataset(3)
    with pytest.raises(FileNotFoundError):
        list(tt.data.TFRecordDataset(path("nothere.tfrecord")))


# ----------------------------------------------------------------------------- parsing
@pytest.mark.filterwarnings("ignore:.*ends in NUL bytes:RuntimeWarning")
def test_parse_single_example_equals_tf():
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    for i, (record, want) in enumerate(zip(records, EXPECTED["parse_single_example"])):
        got = tt.io.parse_single_example(record, SPEC())
        assert sorted(got) == sorted(want)
        for key in want:
            check_value(got[key], want[key], f"{i}/{key}")


@pytest.mark.filterwarnings("ignore:.*ends in NUL bytes:RuntimeWarning")
def test_parse_single_example_of_dataset_records_restores_trailing_nuls():
    ds = tt.data.TFRecordDataset(path("zlib.tfrecord"), "ZLIB")
    for record, want in zip(ds, EXPECTED["parse_single_example"]):
        got = tt.io.parse_single_example(record, SPEC())
        for key in want:
            check_value(got[key], want[key], key)
    # the sixth record's last byte is 0: an element of dtype S reads without it
    last = list(ds)[5]
    assert last.numpy().tobytes().endswith(b"\x00") and not last.item().endswith(b"\x00")
    assert int(tt.io.parse_single_example(last, {"label": tt.io.FixedLenFeature(
        [], np.int64)})["label"]) == 0


def test_parse_example_equals_tf():
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    with pytest.warns(RuntimeWarning, match="NUL"):
        got = tt.io.parse_example(records[:5], SPEC())
    for key, want in EXPECTED["parse_example"].items():
        check_value(got[key], want, key)
    # a batch from the dataset (dtype S, padded): the same values
    batch = next(iter(tt.data.TFRecordDataset(path("gzip.tfrecord"), "GZIP").batch(6)))
    with pytest.warns(RuntimeWarning):
        got = tt.io.parse_example(batch, SPEC())
    for key, want in EXPECTED["parse_example_all"].items():
        check_value(got[key], want, key)


def test_parse_errors_have_tfs_words():
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    io = tt.io
    cases = {
        "missing": {"nothere": io.FixedLenFeature([], np.int64)},
        "dtype": {"label": io.FixedLenFeature([], np.float32)},
        "size": {"weights": io.FixedLenFeature([2], np.float32)},
        "varlen_dtype": {"tokens": io.VarLenFeature("string")},
        "seq_size": {"weights": io.FixedLenSequenceFeature([2], np.float32,
                                                           allow_missing=True)},
    }
    for case, spec in cases.items():
        for fn, arg in (("single", records[0]), ("batch", records[:2])):
            want = EXPECTED["errors"][f"{case}/{fn}"]
            parse = io.parse_single_example if fn == "single" else io.parse_example
            with pytest.raises(tt.errors.InvalidArgumentError) as info:
                parse(arg, spec)
            assert str(info.value).startswith(want[1]), (case, fn, str(info.value))
            assert isinstance(info.value, ValueError)
    want = EXPECTED["errors"]["seq_allow_missing"]
    with pytest.raises(ValueError, match=want[1].replace(".", r"\.")):
        io.parse_example(records[:1], {"frames": io.FixedLenSequenceFeature([2], np.float32)})
    with pytest.raises(tt.errors.InvalidArgumentError, match="float, int64, string"):
        io.parse_single_example(records[0], {"label": io.FixedLenFeature([], np.int32)})
    with pytest.raises(tt.errors.InvalidArgumentError, match="Could not parse example input"):
        io.parse_single_example(b"\xffgarbage", {"label": io.FixedLenFeature([], np.int64)})
    with pytest.raises(ValueError, match="default_value"):
        io.parse_single_example(records[0], {
            "x": io.FixedLenFeature([3], np.float32, default_value=[1.0, 2.0])})


# ----------------------------------------------------------------------------- writing
def test_example_protos_serialize_as_tf():
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    for r in records:
        ex = tt.train.Example.FromString(r)
        # map entries may come out in another order than TF's: compare the parsed messages
        assert tt.train.Example.FromString(ex.SerializeToString()) == ex
    ex = tt.train.Example.FromString(records[0])
    assert list(ex.features.feature["label"].int64_list.value) == \
        EXPECTED["parse_single_example"][0]["label"]["values"]
    assert tt.train.Example.DESCRIPTOR.full_name == "tensorflow.Example"
    one = tt.train.Example(features=tt.train.Features(feature={
        "a": tt.train.Feature(int64_list=tt.train.Int64List(value=[1, 2, 0]))}))
    # TF's bytes for this message (one map entry, so one order)
    assert one.SerializeToString().hex() == "0a0e0a0c0a016112071a050a03010200"


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_written_here_reads_back_here(tmp_path, compression):
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    f = str(tmp_path / "ours.tfrecord")
    with tt.io.TFRecordWriter(f, tt.io.TFRecordOptions(compression_type=compression)) as w:
        for r in records:
            w.write(r)
    got, error = records_of(tt.data.TFRecordDataset(f, compression))
    assert error is None and got == [r.hex() for r in records]
    if compression is None:   # the same framing bytes as TF's file
        assert open(f, "rb").read() == open(path("plain.tfrecord"), "rb").read()


def test_writer_flush_close_and_bad_records(tmp_path):
    f = str(tmp_path / "w.tfrecord")
    w = tt.io.TFRecordWriter(f, "GZIP")
    w.write(b"one")
    w.flush()
    assert records_of(tt.data.TFRecordDataset(f, "GZIP"))[0][:1] == [b"one".hex()]
    with pytest.raises(TypeError, match="bytes"):
        w.write(3)
    w.write("two")
    w.close()
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write(b"x")
    assert records_of(tt.data.TFRecordDataset(f, "GZIP"))[0] == [b"one".hex(), b"two".hex()]
    with pytest.raises(NotImplementedError, match="flush_mode"):
        tt.io.TFRecordOptions(flush_mode=2)


def test_file_sharding_by_file(tmp_path):
    for i in range(4):
        shutil.copy(path("plain.tfrecord"), tmp_path / f"part{i}.tfrecord")
    files = sorted(str(p) for p in tmp_path.iterdir())
    ds = tt.data.TFRecordDataset(files).map(lambda r: r)
    assert ds._source_files() == files
    shard = ds._shard_files(2, 1)
    assert shard._source_files() == files[1::2]
    assert len(list(shard)) == 12


def test_sparse_tensor_to_dense():
    records = [bytes.fromhex(h) for h in EXPECTED["files"]["plain.tfrecord"]["records"]]
    sp = tt.io.parse_example(records[:5], {"tokens": tt.io.VarLenFeature(np.int64)})["tokens"]
    d = dense(tt.sparse.to_dense(sp))
    want = EXPECTED["parse_example"]["tokens"]
    ref = np.zeros(want["dense_shape"], np.int64)
    for (i, j), v in zip(want["indices"], want["values"]["values"]):
        ref[i, j] = v
    np.testing.assert_array_equal(d, ref)
    with pytest.raises(TypeError, match="to_dense"):
        np.asarray(sp)


def test_sparse_components_in_a_pipeline():
    ds = tt.data.TFRecordDataset(path("plain.tfrecord")).take(5)
    spec = {"tokens": tt.io.VarLenFeature(np.int64)}
    parsed = ds.batch(5).map(lambda r: tt.io.parse_example(r, spec))
    assert parsed.element_spec["tokens"] == tt.sparse.SparseTensorSpec((5, 3), np.int64)
    sp = next(parsed.as_numpy_iterator())["tokens"]
    np.testing.assert_array_equal(dense(sp.values),
                                  EXPECTED["parse_example"]["tokens"]["values"]["values"])
    with pytest.raises(TypeError, match="SparseTensor components cannot be batched"):
        list(ds.map(lambda r: tt.io.parse_single_example(r, spec)).batch(2))


def test_ignore_errors_after_a_failing_map_goes_on():
    def f(x):
        if int(x) % 3 == 1:
            raise ValueError("bad element")
        return x

    got = [int(v) for v in tt.data.Dataset.range(7).map(f).ignore_errors()]
    assert got == [0, 2, 3, 5, 6]


def test_missing_packages_name_the_extra(monkeypatch, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, "crc32c", None)
    with pytest.raises(ImportError, match=r"tnp\[tfrecord\]"):
        tt.io.TFRecordWriter(str(tmp_path / "x.tfrecord"))
