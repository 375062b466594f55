"""The rest of TF 2.4's ``tf.data`` / ``tf.data.experimental`` names, against what tf.data
(TF 2.21) gives on the same input: tests/fixtures/data_names/ (made by
tests/fixtures/make_data_names_fixtures.py)."""
import json
import os
import shutil

import numpy as np
import pytest

import tnp
import tnp_train as tt

D = tt.data.Dataset
E = tt.data.experimental
HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "data_names")
TFRECORDS = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tfrecord")
with open(os.path.join(HERE, "expected.json")) as _f:
    TF = json.load(_f)


def value(x):
    """A component as the fixture writes TF's (dtype, shape, values or hex)."""
    if isinstance(x, tt.sparse.SparseTensor):
        return {"sparse": True, "indices": np.asarray(x.indices).tolist(),
                "values": value(x.values), "dense_shape": np.asarray(x.dense_shape).tolist()}
    if isinstance(x, tuple):
        return [value(v) for v in x]
    if isinstance(x, dict):
        return {k: value(v) for k, v in x.items()}
    a = np.asarray(x)
    if a.dtype.kind == "S":
        vals = [a.tobytes()] if a.ndim == 0 and a.base is None and a.tobytes() != b"\0" \
            else a.reshape(-1).tolist()
        return {"dtype": "string", "shape": list(a.shape), "hex": [b.hex() for b in vals]}
    return {"dtype": a.dtype.name, "shape": list(a.shape), "values": a.reshape(-1).tolist()}


def spec(s):
    if isinstance(s, tuple):
        return [spec(v) for v in s]
    if isinstance(s, dict):
        return {k: spec(v) for k, v in s.items()}
    out = {"shape": None if s.shape is None else list(s.shape),
           "dtype": "string" if s.dtype.kind in "SU" else s.dtype.name}
    if isinstance(s, tt.sparse.SparseTensorSpec):
        out["sparse"] = True
    return out


def elements(ds, limit=None):
    out = []
    for i, e in enumerate(ds):
        if limit is not None and i >= limit:
            break
        out.append(value(e))
    return out


def close(got, want):
    """Equal, floats within float32 rounding."""
    if isinstance(want, dict) and "hex" in want and len(want["shape"]):
        # NumPy's bytes arrays drop trailing NULs of their strings (a documented difference)
        assert got["shape"] == want["shape"], (got, want)
        assert got["hex"] == [bytes.fromhex(h).rstrip(b"\0").hex() for h in want["hex"]]
    elif isinstance(want, dict) and "values" in want and "dtype" in want:
        assert got["dtype"] == want["dtype"] and got["shape"] == want["shape"], (got, want)
        np.testing.assert_allclose(got["values"], want["values"], rtol=1e-6)
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), (got, want)
        for k in want:
            close(got[k], want[k])
    elif isinstance(want, list):
        assert len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            close(g, w)
    else:
        assert got == want


# ------------------------------------------------------------------ FixedLengthRecordDataset
@pytest.mark.parametrize("case,kw", [
    ("plain", dict(filenames=["fixed.bin"], record_bytes=5, header_bytes=3, footer_bytes=2)),
    ("gzip", dict(filenames=["fixed.bin.gz"], record_bytes=5, header_bytes=3, footer_bytes=2,
                  compression_type="GZIP")),
    ("zlib", dict(filenames=["fixed.bin.zz"], record_bytes=5, header_bytes=3, footer_bytes=2,
                  compression_type="ZLIB")),
    ("no_header", dict(filenames=["fixed.bin"], record_bytes=8)),
    ("two_files", dict(filenames=["fixed.bin", "fixed2.bin"], record_bytes=5, header_bytes=3,
                       footer_bytes=2)),
    ("interleaved", dict(filenames=["fixed.bin", "fixed2.bin"], record_bytes=5,
                         header_bytes=3, footer_bytes=2, num_parallel_reads=2)),
])
def test_fixed_length_records_equal_tf(case, kw):
    kw = dict(kw, filenames=[os.path.join(HERE, f) for f in kw["filenames"]])
    ds = tt.data.FixedLengthRecordDataset(**kw)
    assert [r.tobytes().hex() for r in ds] == TF["fixed_length"][case]["records"]
    assert spec(ds.element_spec) == TF["fixed_length"][case]["spec"]


def test_fixed_length_body_not_a_multiple_is_tfs_error():
    path = os.path.join(HERE, "fixed_ragged.bin")
    with pytest.raises(tt.errors.InvalidArgumentError) as e:
        list(tt.data.FixedLengthRecordDataset([path], 5, header_bytes=3, footer_bytes=2))
    want = TF["fixed_length"]["ragged_error"]
    assert want[0] == "InvalidArgumentError"
    tf_path = want[1].split('"')[1]
    assert str(e.value) == want[1].replace(tf_path, os.fsdecode(path))
    with pytest.raises(ValueError, match="record_bytes"):
        tt.data.FixedLengthRecordDataset([path], 0)


# ------------------------------------------------------------------ Counter, RandomDataset
def test_counter_equals_tf():
    want = TF["counter"]
    assert elements(E.Counter().take(4)) == want["default"]
    assert elements(E.Counter(start=10, step=-3).take(5)) == want["start_step"]
    assert elements(E.Counter(2, 2, dtype="int32").take(3)) == want["int32"]
    assert spec(E.Counter().element_spec) == want["spec"]
    assert int(E.Counter().cardinality()) == want["cardinality"]


def test_random_dataset_is_infinite_int64_and_seeded():
    want = TF["random"]
    r = E.RandomDataset(seed=4)
    assert spec(r.element_spec) == want["spec"]
    assert int(r.cardinality()) == want["cardinality"]
    first = [int(x) for x in r.take(2000)]
    assert ([int(x) for x in E.RandomDataset(seed=4).take(3)] == first[:3]) is \
        want["same_seed_same_values"]
    assert first == [int(x) for x in r.take(2000)]          # every pass the same
    assert first[:10] != [int(x) for x in E.RandomDataset(seed=5).take(10)]
    # uniform over the whole int64 range, as TF's: about half negative, high bits used
    assert 0.45 < np.mean(np.array(first) < 0) < 0.55
    assert max(abs(x) for x in first) > 2**62


# ------------------------------------------------------------------ Optional
def test_optional_and_get_next_as_optional_equal_tf():
    want = TF["optional"]
    o = E.Optional.from_value((tnp.asarray(np.int32(1)), tnp.asarray(np.float32([2.5, 3.5]))))
    assert bool(o.has_value()) is want["from_value"]["has_value"]
    assert value(o.get_value()) == want["from_value"]["value"]
    assert spec(o.element_spec) == want["from_value"]["spec"]
    empty = E.Optional.empty(tt.data.TensorSpec((), "int64"))
    assert bool(empty.has_value()) is want["empty"]["has_value"]
    assert spec(empty.element_spec) == want["empty"]["spec"]
    with pytest.raises(tt.errors.InvalidArgumentError) as e:
        empty.get_value()
    assert [type(e.value).__name__, str(e.value)] == want["empty"]["get_value"]
    it = iter(D.range(2))
    got = []
    for _ in range(3):
        x = it.get_next_as_optional()
        got.append([bool(x.has_value())] + ([value(x.get_value())] if x.has_value() else []))
    assert got == want["get_next_as_optional"]
    it = iter(D.range(3))
    assert [bool(E.get_next_as_optional(it).has_value()) for _ in range(4)] == \
        want["function_form"]


def test_iterator_spec_equals_the_iterators():
    want = TF["iterator_spec"]
    batched = D.range(3).batch(2)
    of_iterator = iter(batched)._type_spec
    assert (tt.data.IteratorSpec(batched.element_spec) == of_iterator) is \
        want["equal_to_the_iterators"]
    assert (tt.data.IteratorSpec(tt.data.TensorSpec((None,), "int32")) == of_iterator) is \
        want["other_spec_differs"]


# ------------------------------------------------------------------ dense_to_sparse_batch
def test_dense_to_sparse_batch_equals_tf():
    want = TF["dense_to_sparse_batch"]
    ragged = D.range(1, 5).map(lambda n: tnp.arange(int(n), dtype="int64") * 10 + n)
    assert elements(ragged.apply(E.dense_to_sparse_batch(3, [6]))) == want["vectors"]
    assert elements(ragged.apply(E.dense_to_sparse_batch(2, [None]))) == want["unknown_dim"]
    mats = D.range(1, 4).map(
        lambda n: tnp.arange(2 * int(n), dtype="float32").reshape(int(n), 2))
    close(elements(mats.apply(E.dense_to_sparse_batch(2, [4, 3]))), want["matrices"])
    with pytest.raises(tt.errors.DataLossError) as e:
        list(ragged.apply(E.dense_to_sparse_batch(4, [2])))
    assert [type(e.value).__name__, str(e.value)] == want["too_long"]
    assert spec(ragged.apply(E.dense_to_sparse_batch(3, [6])).element_spec) == want["spec"]


# ------------------------------------------------------------------ Example records
FEATURES = {"label": tt.io.FixedLenFeature([], "int64"),
            "tokens": tt.io.VarLenFeature("int64"),
            "weights": tt.io.FixedLenFeature([3], "float32", default_value=[0.5, 1.5, 2.5]),
            "name": tt.io.FixedLenFeature([], "string", default_value=b"nameless")}


def test_parse_example_dataset_equals_tf():
    want = TF["parse_example_dataset"]
    files = [os.path.join(TFRECORDS, "plain.tfrecord")]
    ds = tt.data.TFRecordDataset(files).take(5).batch(2).apply(
        E.parse_example_dataset(FEATURES))
    close(elements(ds, 2), want["batches"])
    with pytest.raises(TypeError, match="vectors of strings"):
        D.range(3).apply(E.parse_example_dataset(FEATURES))


def test_make_batched_features_dataset_equals_tf():
    want = TF["make_batched_features_dataset"]
    files = [os.path.join(TFRECORDS, "plain.tfrecord")]
    mb = E.make_batched_features_dataset(files, 2, FEATURES, label_key="label", num_epochs=1,
                                         shuffle=False)
    close(elements(mb, 2), want["batches"])
    label = {"label": tt.io.FixedLenFeature([], "int64")}
    assert len(list(E.make_batched_features_dataset(
        files, 4, label, num_epochs=1, shuffle=False, drop_final_batch=True))) == \
        want["dropped"]
    assert [value(b) for b in E.make_batched_features_dataset(
        files, 4, label, num_epochs=2, shuffle=False)] == want["epochs"]
    with pytest.raises(ValueError, match="label_key"):
        E.make_batched_features_dataset(files, 2, label, label_key="nope")


# ------------------------------------------------------------------ TFRecordWriter
def test_tfrecord_writer_writes_tfs_bytes(tmp_path):
    want = TF["tfrecord_writer"]
    records = np.array([bytes.fromhex(h) for h in want["records"]], dtype=object)
    ds = D.from_generator(lambda: (np.array(r, dtype=np.bytes_) for r in records),
                          output_signature=tt.data.TensorSpec((), "S"))
    path = tmp_path / "w.tfrecord"
    E.TFRecordWriter(str(path)).write(ds)
    assert path.read_bytes().hex() == want["file"]
    E.TFRecordWriter(str(path) + ".gz", compression_type="GZIP").write(ds)
    import gzip
    assert gzip.decompress((tmp_path / "w.tfrecord.gz").read_bytes()).hex() == \
        want["gzip_content"]
    assert [value(r)["hex"][0] for r in tt.data.TFRecordDataset(str(path))] == \
        want["records"]
    with pytest.raises(TypeError) as e:
        E.TFRecordWriter(str(path)).write(D.range(3))
    assert want["non_string"][0] == "TypeError"
    assert str(e.value).startswith(want["non_string"][1].split(" with ")[0])


# ------------------------------------------------------------------ save / load / snapshot
def _saved_pipeline():
    return D.range(6).map(lambda x: {
        "i": x, "f": tnp.asarray(x, dtype="float32") * np.float32(0.5),
        "s": tnp.asarray(np.array(str(int(x) * 11).encode(), dtype=np.bytes_)),
        "v": tnp.full((2,), x, dtype="int32")})


@pytest.mark.parametrize("name", ["saved_plain", "saved_gzip"])
def test_load_reads_what_tf_saved(name):
    want = TF["save"]
    ds = E.load(os.path.join(HERE, name))
    assert spec(ds.element_spec) == want["spec"]
    assert elements(ds) == want["elements"] == want["loaded"]
    assert len(ds) == len(want["elements"])
    given = E.load(os.path.join(HERE, name), element_spec=ds.element_spec)
    assert elements(given) == want["elements"]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_save_then_load_gives_tfs_elements(tmp_path, compression):
    want = TF["save"]
    ds = _saved_pipeline()
    E.save(ds, str(tmp_path / "d"), compression=compression)
    # TF's layout: metadata, element spec, one run folder of shard folders
    names = sorted(os.listdir(tmp_path / "d"))
    assert names[:0] == [] and {"snapshot.metadata", "dataset_spec.pb"} <= set(names)
    loaded = E.load(str(tmp_path / "d"))
    assert spec(loaded.element_spec) == want["spec"]
    assert elements(loaded) == want["elements"]
    # the files TF wrote and ours hold the same records
    from tnp_train.io.tfrecord import read_records

    def records(root):
        out = []
        for dirpath, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if f.endswith(".snapshot"):
                    out += list(read_records(os.path.join(dirpath, f), compression or ""))
        return out
    assert records(tmp_path / "d") == records(os.path.join(
        HERE, "saved_gzip" if compression else "saved_plain"))


def test_save_with_shard_func_and_load_with_reader_func(tmp_path):
    want = TF["save"]
    path = str(tmp_path / "s")
    E.save(D.range(10), path, shard_func=lambda x: x % 3)
    assert sorted(int(x) for x in E.load(path)) == want["sharded_sorted"]
    assert [int(x) for x in E.load(path, reader_func=lambda dss: dss.flat_map(lambda d: d))] \
        == want["sharded_one_by_one"]
    with pytest.raises(tt.errors.NotFoundError):
        E.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="compression"):
        E.save(D.range(2), path, compression="LZ4")


def test_snapshot_writes_once_and_reads_back(tmp_path):
    want = TF["snapshot"]
    calls = []

    def square(x):
        calls.append(int(x))
        return x * x
    s = D.range(5).map(square).apply(E.snapshot(str(tmp_path / "snap")))
    assert elements(s) == want["first"]
    ran = len(calls)                                # 5, and element_spec's look at one
    assert elements(s) == want["second"]
    assert len(calls) == ran                        # the second pass read the files
    again = D.range(5).map(square).apply(E.snapshot(str(tmp_path / "snap")))
    assert elements(again) == want["second"]
    assert len(calls) - ran <= 1        # at most a new dataset's element_spec look at one
    other = D.range(5).map(lambda x: x + 1).apply(E.snapshot(str(tmp_path / "snap")))
    assert [int(x) for x in other] == [1, 2, 3, 4, 5]   # another pipeline, another snapshot
    partial = D.range(5).map(square).apply(E.snapshot(str(tmp_path / "p")))
    next(iter(partial))          # an unfinished pass leaves nothing to read
    assert not any(f.endswith("snapshot.metadata") for _, _, fs in os.walk(tmp_path / "p")
                   for f in fs)
    shutil.rmtree(tmp_path / "p", ignore_errors=True)


# ------------------------------------------------------------------ SqlDataset
def test_sql_dataset_equals_tf():
    want = TF["sql"]
    path = os.path.join(HERE, "table.sqlite")
    ds = E.SqlDataset("sqlite", path, "SELECT name, age, height, ok FROM people ORDER BY age",
                      ("S", "int32", "float64", "bool"))
    assert elements(ds) == want["rows"]
    assert spec(ds.element_spec) == want["spec"]
    one = E.SqlDataset("sqlite", path, "SELECT age FROM people", "int64")
    assert elements(one) == want["one_column"] and spec(one.element_spec) == want["one_spec"]
    with pytest.raises(tt.errors.InvalidArgumentError) as e:
        E.SqlDataset("mysql", path, "SELECT 1", "int64")
    assert [type(e.value).__name__, str(e.value)] == want["bad_driver"]


# ------------------------------------------------------------------ devices
def test_copy_and_prefetch_to_device_keep_the_elements():
    want = TF["devices"]
    ds = D.range(4).map(lambda x: (x, tnp.asarray(x, dtype="float32") / np.float32(4)))
    assert elements(ds.apply(E.prefetch_to_device("/cpu:0", 2))) == want["prefetch_to_device"]
    assert elements(ds.apply(E.copy_to_device("/cpu:0"))) == want["copy_to_device"]
    with pytest.raises(ValueError, match="cannot parse device"):
        E.copy_to_device("/tpu:0")


# ------------------------------------------------------------------ rejection_resample
def test_rejection_resample_reaches_the_target_as_tf():
    want = TF["rejection_resample"]
    n = 6000
    rng = np.random.default_rng(3)
    labels = (rng.random(n) < 0.8).astype(np.int32)
    ds = D.from_tensor_slices((labels, np.arange(n)))
    res = ds.apply(E.rejection_resample(lambda c, i: c, [0.5, 0.5], [0.2, 0.8], seed=1))
    assert spec(res.element_spec) == want["spec"]
    got = [(int(c), int(e[0])) for c, e in res]
    assert all(c == e for c, e in got) is want["classes_match_elements"]
    frac = np.mean([c == 0 for c, _ in got])
    # TF's run gave 0.507 of class 0 from 3142 elements; both estimate the target 0.5
    assert abs(frac - 0.5) < 0.04 and abs(want["fraction_0"] - 0.5) < 0.04
    assert abs(len(got) - want["count"]) < 0.1 * want["count"]
    # without initial_dist the distribution is estimated as the data comes
    est = [int(c) for c, _ in ds.apply(E.rejection_resample(lambda c, i: c, [0.5, 0.5],
                                                             seed=2))]
    assert abs(np.mean(np.array(est) == 0) - 0.5) < 0.05


# ------------------------------------------------------------------ options
def test_optimization_options_defaults_merge_and_types_as_tf():
    o = tt.data.Options()
    for name, default in TF["optimization_options"].items():
        assert getattr(o.experimental_optimization, name) == default
    assert o.experimental_optimization.map_vectorization.enabled is None
    a, b = tt.data.Options(), tt.data.Options()
    a.experimental_optimization.map_fusion = True
    b.experimental_optimization.noop_elimination = False
    m = a.merge(b)
    assert {"map_fusion": m.experimental_optimization.map_fusion,
            "noop_elimination": m.experimental_optimization.noop_elimination} == \
        TF["optimization_merge"]
    with pytest.raises(TypeError, match="map_fusion"):
        o.experimental_optimization.map_fusion = 3
    assert TF["optimization_type_error"][0] == "TypeError"
    ds = D.range(3).with_options(a)
    assert ds.options().experimental_optimization.map_fusion is True
    assert isinstance(E.OptimizationOptions().map_vectorization, E.MapVectorizationOptions)
