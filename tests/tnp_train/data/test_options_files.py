"""tt.data.Options / with_options, Dataset.list_files, TextLineDataset and the file sharding a
strategy uses, against TF 2.4's documented behaviour (its dataset tests, the MatchingFiles and
BufferedInputStream::ReadLine sources) and hand-written expected lists."""
import gzip
import os
import zlib

import numpy as np
import pytest

import tnp
from tnp_train import data as ttd
from tnp_train.data import Dataset, Options, TextLineDataset, UNKNOWN_CARDINALITY
from tnp_train.data.experimental import AutoShardPolicy, DistributeOptions


def policy(ds):
    return ds.options().experimental_distribute.auto_shard_policy


def opts(p=None, deterministic=None):
    o = Options()
    if p is not None:
        o.experimental_distribute.auto_shard_policy = p
    if deterministic is not None:
        o.experimental_deterministic = deterministic
    return o


# ============================================================================ Options
def test_auto_shard_policy_values_of_tf24():
    assert {p.name: p.value for p in AutoShardPolicy} == {"OFF": -1, "AUTO": 0, "FILE": 1,
                                                          "DATA": 2}
    o = Options()
    assert o.experimental_distribute.auto_shard_policy is AutoShardPolicy.AUTO
    assert o.experimental_distribute.num_devices is None
    assert o.experimental_deterministic is None and o.experimental_slack is False
    assert isinstance(o.experimental_distribute, DistributeOptions)
    assert o == Options() and opts(AutoShardPolicy.FILE) != o


def test_options_are_typed_and_closed():
    o = Options()
    with pytest.raises(TypeError, match='"auto_shard_policy" must be of type AutoShardPolicy'):
        o.experimental_distribute.auto_shard_policy = 1
    with pytest.raises(TypeError, match="experimental_deterministic"):
        o.experimental_deterministic = "yes"
    with pytest.raises(TypeError, match="num_devices"):
        o.experimental_distribute.num_devices = True
    with pytest.raises(AttributeError, match="Cannot set the property experimental_foo on "
                                             "Options"):
        o.experimental_foo = 1
    with pytest.raises(AttributeError):
        o.experimental_stats.latency_all_edges = True  # TF's statistics: not in tt.data
    with pytest.raises(AttributeError):
        o.experimental_optimization.map_fuse = True    # no such optimization
    o.experimental_threading.private_threadpool_size = 4
    assert o.experimental_threading.private_threadpool_size == 4


def test_with_options_travels_through_transformations():
    x = np.arange(10.0)
    ds = Dataset.from_tensor_slices(x).with_options(opts(AutoShardPolicy.DATA))
    assert policy(ds) is AutoShardPolicy.DATA
    chain = ds.shuffle(4, seed=1).map(lambda v: v * 2).repeat(2).batch(3).prefetch(1).take(5)
    assert policy(chain) is AutoShardPolicy.DATA
    assert policy(Dataset.from_tensor_slices(x)) is AutoShardPolicy.AUTO
    # the elements are untouched, and the indexed batch path still slices the same rows
    got = [np.asarray(b).tolist() for b in ds.batch(4)]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert ds.cardinality() == 10


def test_options_merge_as_tf24():
    base = Dataset.range(3)
    # TF's testOptionsTwiceSame / testOptionsTwiceDifferentError
    same = base.with_options(opts(AutoShardPolicy.FILE)).with_options(opts(AutoShardPolicy.FILE))
    assert policy(same) is AutoShardPolicy.FILE
    with pytest.raises(ValueError, match="Cannot merge incompatible values"):
        base.with_options(opts(AutoShardPolicy.FILE)).with_options(opts(AutoShardPolicy.DATA))
    # different options merge; a default value never overrides a set one
    two = base.with_options(opts(AutoShardPolicy.OFF)).with_options(opts(deterministic=False))
    o = two.options()
    assert o.experimental_distribute.auto_shard_policy is AutoShardPolicy.OFF
    assert o.experimental_deterministic is False
    assert policy(two.with_options(opts(AutoShardPolicy.AUTO))) is AutoShardPolicy.OFF
    # TF's testOptionsMergeOptionsFromMultipleInputs: zip and concatenate merge both inputs
    z = Dataset.zip((base.with_options(opts(AutoShardPolicy.DATA)),
                     base.with_options(opts(deterministic=True))))
    assert policy(z) is AutoShardPolicy.DATA and z.options().experimental_deterministic is True
    c = base.concatenate(base.with_options(opts(AutoShardPolicy.FILE)))
    assert policy(c) is AutoShardPolicy.FILE
    with pytest.raises(TypeError, match="expected a tt.data.Options"):
        base.with_options({"auto_shard_policy": "OFF"})


def test_options_returned_are_copies():
    given = opts(AutoShardPolicy.DATA)
    ds = Dataset.range(2).with_options(given)
    given.experimental_distribute.auto_shard_policy = AutoShardPolicy.OFF
    got = ds.options()
    got.experimental_distribute.auto_shard_policy = AutoShardPolicy.FILE
    assert policy(ds) is AutoShardPolicy.DATA


# ============================================================================ list_files
@pytest.fixture
def files(tmp_path):
    """Five small text files, a.txt to e.txt with 1 to 5 lines "a-0", "b-0", "b-1", ...
    (created out of order), and a CSV file."""
    for n, k in [("b", 2), ("a", 1), ("c", 3), ("e", 5), ("d", 4)]:
        (tmp_path / f"{n}.txt").write_bytes(b"".join(b"%s-%d\n" % (n.encode(), j)
                                                     for j in range(k)))
    (tmp_path / "other.csv").write_bytes(b"x\n")
    return tmp_path


def paths(ds):
    return [os.path.basename(p).decode() for p in ds.as_numpy_iterator()]


def test_list_files_sorted_without_shuffle(files):
    ds = Dataset.list_files(str(files / "*.txt"), shuffle=False)
    assert paths(ds) == ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]
    e = next(iter(ds))
    assert isinstance(e, tnp.ndarray) and e.shape == () and e.dtype.kind == "S"
    assert e.item() == os.fsencode(files / "a.txt")
    assert ds.cardinality() == 5 and ds.element_spec.dtype == np.dtype("S")
    # several patterns: all matches sorted together (TF's MatchingFiles)
    both = Dataset.list_files([str(files / "*.csv"), files / "[cd].txt"], shuffle=False)
    assert paths(both) == ["c.txt", "d.txt", "other.csv"]


def test_list_files_shuffles_by_default_and_each_epoch(files):
    ds = Dataset.list_files(str(files / "*.txt"), seed=7)
    epochs = [paths(ds) for _ in range(4)]
    assert all(sorted(e) == ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] for e in epochs)
    assert len({tuple(e) for e in epochs}) > 1  # reshuffled every epoch
    again = Dataset.list_files(str(files / "*.txt"), seed=7)
    assert [paths(again) for _ in range(4)] == epochs  # the seed fixes the sequence


def test_list_files_errors(files):
    with pytest.raises(ValueError, match="No files matched pattern: .*nothing-\\*"):
        Dataset.list_files(str(files / "nothing-*"))
    with pytest.raises(TypeError, match="file_pattern must be"):
        Dataset.list_files(3)


def test_list_files_star_matches_dot_files_as_tf(files):
    # TF matches with fnmatch(FNM_PATHNAME) and no FNM_PERIOD: '*' matches a leading dot
    (files / ".hidden.txt").write_bytes(b"h\n")
    assert ".hidden.txt" in paths(Dataset.list_files(str(files / "*.txt"), shuffle=False))


# ============================================================================ TextLineDataset
def lines(ds):
    return [bytes(x) for x in ds.as_numpy_iterator()]


# (file content, the lines TF's ReadLine gives: split at \n, every \r dropped, a last line
# without \n kept unless empty)
READLINE_CASES = [
    (b"a\nb\nc\n", [b"a", b"b", b"c"]),
    (b"a\nb\nc", [b"a", b"b", b"c"]),
    (b"a\r\nb\r\n", [b"a", b"b"]),
    (b"x\ry\n\n\nz", [b"xy", b"", b"", b"z"]),
    (b"\n", [b""]),
    (b"", []),
    (b"last\n\r", [b"last"]),
    (b"\r", []),
]


@pytest.mark.parametrize("content, expected", READLINE_CASES)
@pytest.mark.parametrize("buffer_size", [None, 1, 2, 5])
def test_text_line_reads_lines_as_tf(tmp_path, content, expected, buffer_size):
    f = tmp_path / "f.txt"
    f.write_bytes(content)
    assert lines(TextLineDataset(str(f), buffer_size=buffer_size)) == expected


def test_text_line_elements_and_files_in_order(files):
    names = [str(files / n) for n in ("b.txt", "a.txt")]
    ds = TextLineDataset(names)
    assert lines(ds) == [b"b-0", b"b-1", b"a-0"]
    e = next(iter(ds))
    assert isinstance(e, tnp.ndarray) and e.shape == () and e.item() == b"b-0"
    assert e.device == tnp.device("cpu")
    assert ds.cardinality() == UNKNOWN_CARDINALITY and ds.element_spec.shape == ()
    assert [np.asarray(b).tolist() for b in ds.batch(2)] == [[b"b-0", b"b-1"], [b"a-0"]]
    assert lines(TextLineDataset(np.array(names))) == lines(ds)
    assert lines(TextLineDataset(files / "a.txt")) == [b"a-0"]


def test_text_line_parallel_reads_interleave_one_line_per_file(files):
    names = [str(files / n) for n in ("c.txt", "a.txt", "b.txt")]  # 3, 1 and 2 lines
    ds = TextLineDataset(names, num_parallel_reads=2)
    # TF: interleave(cycle_length=2, block_length=1); a finished file's slot is refilled with
    # the next file when the cycle comes back to it
    assert lines(ds) == [b"c-0", b"a-0", b"c-1", b"c-2", b"b-0", b"b-1"]


def test_text_line_from_a_dataset_of_names(files):
    ds = TextLineDataset(Dataset.list_files(str(files / "[ab].txt"), shuffle=False))
    assert lines(ds) == [b"a-0", b"b-0", b"b-1"]
    flat = Dataset.list_files(str(files / "[ab].txt"), shuffle=False).interleave(
        lambda f: TextLineDataset(f), cycle_length=2)
    assert lines(flat) == [b"a-0", b"b-0", b"b-1"]


def test_text_line_compression(tmp_path):
    content = b"one\ntwo\r\nthree"
    (tmp_path / "g.gz").write_bytes(gzip.compress(content))
    (tmp_path / "z.zz").write_bytes(zlib.compress(content))
    expected = [b"one", b"two", b"three"]
    assert lines(TextLineDataset(str(tmp_path / "g.gz"), compression_type="GZIP",
                                 buffer_size=4)) == expected
    assert lines(TextLineDataset(str(tmp_path / "z.zz"), compression_type="ZLIB",
                                 buffer_size=3)) == expected


def test_text_line_errors(tmp_path):
    ds = TextLineDataset(str(tmp_path / "missing.txt"))  # found missing when read, as TF
    with pytest.raises(FileNotFoundError):
        list(ds)
    with pytest.raises(ValueError, match="unsupported compression_type 'BZ2'"):
        TextLineDataset("f", compression_type="BZ2")
    with pytest.raises(TypeError, match="filenames must be"):
        TextLineDataset(5)
    with pytest.raises(TypeError, match="filenames must be"):
        TextLineDataset(np.zeros(2))
    with pytest.raises(ValueError, match="num_parallel_reads must be >= 1"):
        TextLineDataset("f", num_parallel_reads=0)


def test_string_slices_are_tnp_arrays_and_numpy_bytes():
    ds = Dataset.from_tensor_slices(np.array([b"ab", b"c"]))
    assert all(isinstance(e, tnp.ndarray) and e.shape == () for e in ds)
    assert list(ds.as_numpy_iterator()) == [b"ab", b"c"]
    assert [e.item() for e in ds.batch(2).unbatch()] == [b"ab", b"c"]
    assert list(ttd.Dataset.from_tensor_slices(np.array(["x", "yz"])).as_numpy_iterator()) == \
        ["x", "yz"]


# ============================================================================ file sharding
def test_source_files_walk_back_to_the_file_source(files):
    pattern = str(files / "*.txt")
    ds = (Dataset.list_files(pattern).interleave(lambda f: TextLineDataset(f), cycle_length=2)
          .map(lambda s: s).shuffle(4).batch(2).prefetch(1))
    expected = [str(files / n) for n in ("a.txt", "b.txt", "c.txt", "d.txt", "e.txt")]
    assert ds._source_files() == expected
    assert TextLineDataset(expected[:2]).batch(2)._source_files() == expected[:2]
    assert TextLineDataset(Dataset.list_files(pattern))._source_files() == expected
    assert Dataset.from_tensor_slices(np.arange(3)).batch(2)._source_files() is None
    zipped = Dataset.zip((TextLineDataset(expected), Dataset.range(3)))
    assert zipped._source_files() is None and zipped._shard_files(2, 0) is None


def all_lines(files):
    return sorted(b"%s-%d" % (n.encode(), j) for n, k in zip("abcde", range(1, 6))
                  for j in range(k))


def test_shard_files_gives_every_line_once_whatever_the_seeds(files):
    pattern = str(files / "*.txt")

    def pipeline(seed):  # each "worker" builds it with its own seed
        return (Dataset.list_files(pattern, seed=seed)
                .interleave(lambda f: TextLineDataset(f), cycle_length=2)
                .with_options(opts(AutoShardPolicy.FILE)).batch(3))

    shards = [pipeline(seed=11 * (i + 1))._shard_files(2, i) for i in range(2)]
    got = [sorted(x for b in s.as_numpy_iterator() for x in b.tolist()) for s in shards]
    assert sorted(got[0] + got[1]) == all_lines(files)
    # worker i reads the sorted files i::2: a, c, e and b, d
    assert {x[:1] for x in got[0]} == {b"a", b"c", b"e"}
    assert {x[:1] for x in got[1]} == {b"b", b"d"}
    assert policy(shards[0]) is AutoShardPolicy.FILE
    # the transformations above the source are kept (batches of 3), and each epoch
    # reshuffles the worker's own files
    assert [len(b) for b in shards[1].as_numpy_iterator()] == [3, 3]
    original = pipeline(seed=1)
    assert sorted(x for b in original.as_numpy_iterator() for x in b.tolist()) == \
        all_lines(files)


def test_shard_files_of_text_line_sources(files):
    names = [str(files / n) for n in ("a.txt", "b.txt", "c.txt")]
    s = TextLineDataset(names).map(lambda x: x)._shard_files(2, 1)
    assert lines(s) == [b"b-0", b"b-1"]
    # a dataset of names that is not list_files: its elements are sharded (TF's rule)
    by_elements = TextLineDataset(Dataset.from_tensor_slices(np.array(names)))
    assert lines(by_elements._shard_files(2, 0)) == [b"a-0", b"c-0", b"c-1", b"c-2"]
    with pytest.raises(ValueError, match=r"reads 3 file\(s\), fewer than the 4 workers"):
        TextLineDataset(names)._shard_files(4, 0)
    with pytest.raises(ValueError, match="index must be < num_shards"):
        TextLineDataset(names)._shard_files(2, 2)


def test_shard_files_does_not_replay_a_filled_cache(files):
    names = [str(files / n) for n in ("a.txt", "b.txt")]
    ds = TextLineDataset(names).cache()
    assert lines(ds) == [b"a-0", b"b-0", b"b-1"]  # fills the cache
    assert lines(ds._shard_files(2, 1)) == [b"b-0", b"b-1"]
    assert lines(ds) == [b"a-0", b"b-0", b"b-1"]  # the original is unchanged
