"""tt.datasets loaders against tf-keras 2.21's on small files in Keras's cache formats
(tests/fixtures/kpre_files/datasets, made by tests/fixtures/make_kpre_fixtures.py)."""
import os
import pickle
import shutil
import sys
import tarfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import FILES, arrays, meta  # noqa: E402

import tnp_train as tt  # noqa: E402

SRC = os.path.join(FILES, "datasets")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME whose ~/.keras/datasets holds the small files (and nothing else)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".keras" / "datasets"
    shutil.copytree(SRC, cache)
    return cache


def check(prefix, result):
    (a, b), (c, d) = result
    for k, v in zip(("x_train", "y_train", "x_test", "y_test"), (a, b, c, d)):
        key = f"{prefix}/{k}"
        if key in meta():
            assert v.dtype == object
            assert [list(s) for s in v] == meta()[key], key
        else:
            ref = arrays()[key]
            assert v.dtype == ref.dtype and v.shape == ref.shape, key
            np.testing.assert_array_equal(v, ref)


def test_mnist_fashion_boston_from_the_cache(home):
    check("ds/mnist", tt.datasets.mnist.load_data())
    check("ds/fashion_mnist", tt.datasets.fashion_mnist.load_data())
    check("ds/boston", tt.datasets.boston_housing.load_data())
    check("ds/boston_split", tt.datasets.boston_housing.load_data(test_split=0.4, seed=3))


def test_imdb_reuters_match_tf(home):
    check("ds/imdb", tt.datasets.imdb.load_data())
    check("ds/imdb_opts", tt.datasets.imdb.load_data(num_words=20, skip_top=2, maxlen=10,
                                                     seed=5))
    check("ds/imdb_nostart", tt.datasets.imdb.load_data(start_char=None, oov_char=None,
                                                        num_words=25, index_from=1))
    check("ds/reuters", tt.datasets.reuters.load_data())
    check("ds/reuters_opts", tt.datasets.reuters.load_data(num_words=15, test_split=0.25,
                                                           maxlen=8))
    assert tt.datasets.imdb.get_word_index() == {"the": 1, "and": 2, "film": 17}
    with pytest.raises(ValueError, match="no sequence was kept"):
        tt.datasets.imdb.load_data(maxlen=1)
    with pytest.raises(TypeError, match="unrecognized keyword"):
        tt.datasets.imdb.load_data(num_word=3)


def test_cifar_match_tf(home):
    check("ds/cifar10", tt.datasets.cifar10.load_data())
    check("ds/cifar100_fine", tt.datasets.cifar100.load_data())
    check("ds/cifar100_coarse", tt.datasets.cifar100.load_data(label_mode="coarse"))
    with pytest.raises(ValueError, match="label_mode"):
        tt.datasets.cifar100.load_data(label_mode="medium")


def test_cifar_channels_first_and_tar_gz(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".keras" / "datasets"
    cache.mkdir(parents=True)
    with tarfile.open(cache / "cifar-10-batches-py.tar.gz", "w:gz") as t:
        t.add(os.path.join(SRC, "cifar-10-batches-py"), arcname="cifar-10-batches-py")
    tt.backend.set_image_data_format("channels_first")
    try:
        (x, y), _ = tt.datasets.cifar10.load_data()
    finally:
        tt.backend.set_image_data_format("channels_last")
    np.testing.assert_array_equal(x, arrays()["ds/cifar10/x_train"].transpose(0, 3, 1, 2))
    assert (cache / "cifar-10-batches-py" / "test_batch").exists()


def test_explicit_local_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))   # an empty cache
    check("ds/mnist", tt.datasets.mnist.load_data(path=os.path.join(SRC, "mnist.npz")))
    check("ds/imdb", tt.datasets.imdb.load_data(path=os.path.join(SRC, "imdb.npz")))
    check("ds/fashion_mnist",
          tt.datasets.fashion_mnist.load_data(path=os.path.join(SRC, "fashion-mnist")))
    check("ds/cifar100_fine",
          tt.datasets.cifar100.load_data(path=os.path.join(SRC, "cifar-100-python")))


def test_missing_files_say_where_and_what(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cases = [(tt.datasets.mnist.load_data, "mnist.npz"),
             (tt.datasets.imdb.load_data, "imdb.npz"),
             (tt.datasets.reuters.load_data, "reuters.npz"),
             (tt.datasets.boston_housing.load_data, "boston_housing.npz"),
             (tt.datasets.fashion_mnist.load_data, "fashion-mnist"),
             (tt.datasets.cifar10.load_data, "cifar-10-python.tar.gz"),
             (tt.datasets.cifar100.load_data, "cifar-100-python.tar.gz"),
             (tt.datasets.imdb.get_word_index, "imdb_word_index.json")]
    for fn, name in cases:
        with pytest.raises(FileNotFoundError) as e:
            fn()
        msg = str(e.value)
        assert name in msg and "does not download" in msg and "https://" in msg, msg
        assert os.path.join(str(tmp_path), ".keras", "datasets") in msg


def test_pickled_files_cannot_run_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    for name in ("train", "test"):
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": Evil(), b"fine_labels": []}, f)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load posix.system"):
        tt.datasets.cifar100.load_data(path=str(folder))
    x = np.empty(1, dtype=object)
    x[0] = Evil()
    np.savez(tmp_path / "bad.npz", x=x, y=np.zeros(1))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        tt.datasets.reuters.load_data(path=str(tmp_path / "bad.npz"))


def test_reuters_word_index(home):
    import json
    with open(home / "reuters_word_index.json", "w") as f:
        json.dump({"oil": 5, "said": 1}, f)
    assert tt.datasets.reuters.get_word_index() == {"oil": 5, "said": 1}
    assert tt.datasets.reuters.get_word_index(path=str(home / "reuters_word_index.json")) == \
        {"oil": 5, "said": 1}
