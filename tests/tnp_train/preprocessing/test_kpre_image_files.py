"""Image files: load/save/array_to_img, flow_from_directory / flow_from_dataframe and
image_dataset_from_directory against tf-keras 2.21 on the PNGs in
tests/fixtures/kpre_files/images (made by tests/fixtures/make_kpre_fixtures.py)."""
import os
import shutil
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import FILES, arrays, meta  # noqa: E402

from tnp_train.preprocessing import image as I  # noqa: E402
import tnp_train.preprocessing as P  # noqa: E402

pytest.importorskip("PIL")
ROOT = os.path.join(FILES, "images")


def _tree(tmp_path):
    # a copy, so that nothing (save_to_dir, extraction) writes into the checkout
    dst = tmp_path / "images"
    shutil.copytree(ROOT, dst)
    return str(dst)


def test_array_img_round_trip_and_save_load(tmp_path):
    rng = np.random.RandomState(0)
    a = rng.randint(0, 256, size=(4, 6, 3)).astype("float32")
    img = I.array_to_img(a, scale=False)
    assert img.size == (6, 4) and img.mode == "RGB"
    np.testing.assert_array_equal(I.img_to_array(img), a)
    np.testing.assert_array_equal(I.img_to_array(img, data_format="channels_first"),
                                  a.transpose(2, 0, 1))
    # scale=True stretches to [0, 255] as TF: (x - min) / (max - min) * 255, truncated
    s = I.img_to_array(I.array_to_img(a / 1000.0))
    ref = (a / 1000.0 - (a / 1000.0).min())
    ref = (ref / ref.max() * 255).astype("uint8")
    np.testing.assert_array_equal(s, ref)
    I.save_img(str(tmp_path / "x.png"), a, scale=False)
    np.testing.assert_array_equal(I.img_to_array(I.load_img(str(tmp_path / "x.png"))), a)
    g = I.load_img(tmp_path / "x.png", color_mode="grayscale", target_size=(2, 3))
    assert g.mode == "L" and g.size == (3, 2)
    assert I.load_img(str(tmp_path / "x.png"), color_mode="rgba").mode == "RGBA"
    with pytest.raises(ValueError, match="color_mode"):
        I.load_img(str(tmp_path / "x.png"), color_mode="cmyk")
    with pytest.raises(ValueError, match="Invalid interpolation"):
        I.load_img(str(tmp_path / "x.png"), target_size=(2, 2), interpolation="cubicish")
    with pytest.raises(ValueError, match="rank 3"):
        I.array_to_img(a[0])
    with pytest.raises(ValueError, match="Unsupported channel number"):
        I.array_to_img(np.zeros((2, 2, 2)))
    wide = np.full((2, 2, 1), 1000.0)
    assert I.array_to_img(wide, scale=False).mode == "I"


def test_pillow_missing_raises_importerror(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pil(name, *a, **k):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("No module named 'PIL'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_pil)
    with pytest.raises(ImportError, match="load_img requires Pillow"):
        I.load_img("whatever.png")
    with pytest.raises(ImportError, match="array_to_img requires Pillow.*pip install pillow"):
        I.array_to_img(np.zeros((2, 2, 3)))
    # brightness does not need Pillow
    assert I.apply_brightness_shift(np.ones((2, 2, 3)), 0.5).shape == (2, 2, 3)


def test_flow_from_directory_matches_tf(tmp_path, capsys):
    root = _tree(tmp_path)
    it = I.ImageDataGenerator(rescale=1 / 255.0).flow_from_directory(
        root, target_size=(4, 4), batch_size=8, shuffle=False, class_mode="sparse")
    assert "Found 8 images belonging to 2 classes." in capsys.readouterr().out
    assert it.filenames == meta()["ffd"]["filenames"]
    assert it.class_indices == meta()["ffd"]["class_indices"]
    bx, by = next(it)
    np.testing.assert_allclose(bx, arrays()["ffd/x"], rtol=1e-6)
    np.testing.assert_array_equal(by, arrays()["ffd/y"])
    it = I.ImageDataGenerator(validation_split=0.5).flow_from_directory(
        root, target_size=(4, 4), shuffle=False, subset="validation", color_mode="grayscale")
    assert it.filenames == meta()["ffd"]["validation_filenames"]
    bx, by = next(it)
    np.testing.assert_allclose(bx, arrays()["ffd/val_x"], rtol=1e-6)
    np.testing.assert_array_equal(by, arrays()["ffd/val_y"])
    save = tmp_path / "aug"
    save.mkdir()
    it = I.ImageDataGenerator().flow_from_directory(root, target_size=(3, 3), batch_size=2,
                                                    class_mode="binary", save_to_dir=str(save))
    bx, by = it[0]
    assert bx.shape == (2, 3, 3, 3) and by.dtype == np.float32 and len(os.listdir(save)) == 2
    with pytest.raises(ValueError, match="Invalid class_mode"):
        I.ImageDataGenerator().flow_from_directory(root, class_mode="onehot")
    with pytest.raises(ValueError, match="Invalid color mode"):
        I.ImageDataGenerator().flow_from_directory(root, color_mode="bgr")


def test_flow_from_dataframe(tmp_path):
    pd = pytest.importorskip("pandas")
    root = _tree(tmp_path)
    files = ["cats/img0.png", "dogs/img1.png", "cats/img2.png", "dogs/missing.png",
             "cats/notes.txt"]
    df = pd.DataFrame({"filename": files, "class": ["c", "d", "c", "d", "c"],
                       "w": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.warns(UserWarning, match="2 invalid image filename"):
        it = I.ImageDataGenerator().flow_from_dataframe(
            df, directory=root, target_size=(4, 4), shuffle=False, weight_col="w",
            class_mode="categorical", batch_size=3)
    bx, by, bw = it[0]
    ref = np.stack([I.img_to_array(I.load_img(os.path.join(root, f), target_size=(4, 4)))
                    for f in files[:3]])
    np.testing.assert_array_equal(bx, ref)
    np.testing.assert_array_equal(by, [[1, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(bw, [1.0, 2.0, 3.0])
    df2 = pd.DataFrame({"filename": files[:3], "t": [0.5, 1.5, 2.5]})
    bx, by = I.ImageDataGenerator().flow_from_dataframe(
        df2, directory=root, y_col="t", class_mode="raw", target_size=(2, 2),
        shuffle=False)[0]
    np.testing.assert_array_equal(by, [0.5, 1.5, 2.5])
    with pytest.raises(TypeError, match="must be strings"):
        I.ImageDataGenerator().flow_from_dataframe(df2, directory=root, y_col="t",
                                                   class_mode="sparse")


def test_image_dataset_from_directory_matches_tf(tmp_path):
    root = _tree(tmp_path)
    ref = meta()["idfd"]
    ds = P.image_dataset_from_directory(root, image_size=(4, 5), batch_size=3, shuffle=False)
    assert ds.class_names == ref["class_names"]
    assert [os.path.relpath(p, root) for p in ds.file_paths] == ref["file_paths"]
    batches = list(ds)
    assert len(batches) == 3
    for i, (bx, by) in enumerate(batches):
        assert bx.dtype == np.float32 and by.dtype == np.int32
        np.testing.assert_allclose(np.asarray(bx), arrays()[f"idfd/noshuffle/{i}/x"],
                                   rtol=1e-5, atol=1e-3)
        np.testing.assert_array_equal(np.asarray(by), arrays()[f"idfd/noshuffle/{i}/y"])
    for mode in ("categorical", "binary"):
        ds = P.image_dataset_from_directory(root, image_size=(4, 5), batch_size=8,
                                            shuffle=False, label_mode=mode,
                                            color_mode="grayscale" if mode == "binary"
                                            else "rgb")
        bx, by = next(iter(ds))
        if mode == "categorical":
            np.testing.assert_allclose(np.asarray(bx), arrays()[f"idfd/{mode}/x"],
                                       rtol=1e-5, atol=1e-3)
        else:
            # grayscale from colour: Pillow's ITU-R 601 luma vs TF's libpng weights, at most
            # one level apart (see docs/keras-preprocessing.md)
            np.testing.assert_allclose(np.asarray(bx), arrays()[f"idfd/{mode}/x"], atol=1.0)
        np.testing.assert_array_equal(np.asarray(by), arrays()[f"idfd/{mode}/y"])


def test_image_dataset_shuffle_and_split_order_equal_tfs(tmp_path, capsys):
    root = _tree(tmp_path)
    ref = meta()["idfd"]
    for subset in ("training", "validation"):
        ds = P.image_dataset_from_directory(root, image_size=(4, 5), batch_size=8, seed=17,
                                            validation_split=0.3, subset=subset)
        assert [os.path.relpath(p, root) for p in ds.file_paths] == ref[f"split_{subset}"]
        # the batches hold those files (tt.data's own shuffle order within the buffer)
        n = sum(int(b[0].shape[0]) for b in ds)
        assert n == len(ref[f"split_{subset}"])
    assert "Using 6 files for training." in capsys.readouterr().out
    ds = P.image_dataset_from_directory(root, image_size=(4, 5), seed=99)
    assert [os.path.relpath(p, root) for p in ds.file_paths] == ref["shuffled_99"]
    ds = P.image_dataset_from_directory(root, labels=None, image_size=(2, 2), shuffle=False)
    (bx,) = list(ds)
    assert bx.shape == (8, 2, 2, 3)


def test_image_dataset_errors(tmp_path):
    root = _tree(tmp_path)
    cases = [(dict(label_mode="sparse"), ValueError, "label_mode"),
             (dict(color_mode="bgr"), ValueError, "color_mode"),
             (dict(labels="folders"), ValueError, "list/tuple of integer labels"),
             (dict(validation_split=0.2), ValueError, "If `subset` is set"),
             (dict(validation_split=0.2, subset="training"), ValueError, "must provide a `seed`"),
             (dict(validation_split=1.2, subset="training", seed=1), ValueError, "between 0"),
             (dict(class_names=["a", "b"]), ValueError, "did not match"),
             (dict(labels=[0, 1]), ValueError, "match the number of files"),
             (dict(interpolation="cubic"), NotImplementedError, "interpolation")]
    for kw, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            P.image_dataset_from_directory(root, **kw)
    with pytest.raises(FileNotFoundError):
        P.image_dataset_from_directory(str(tmp_path / "nope"))


def test_directory_iterator_directly(tmp_path):
    root = _tree(tmp_path)
    it = I.DirectoryIterator(root, I.ImageDataGenerator(rescale=1 / 255.0), target_size=(4, 4),
                             batch_size=8, shuffle=False, class_mode="sparse")
    assert isinstance(it, I.Iterator)
    assert it.filenames == meta()["ffd"]["filenames"]
    bx, by = it[0]
    np.testing.assert_allclose(bx, arrays()["ffd/x"], rtol=1e-6)
    np.testing.assert_array_equal(by, arrays()["ffd/y"])
    it = I.DirectoryIterator(root, None, target_size=(2, 2), classes=["dogs"],
                             class_mode="categorical", shuffle=False)
    bx, by = it[0]
    assert bx.shape == (4, 2, 2, 3) and by.tolist() == [[1.0]] * 4
