"""``tf.keras.preprocessing.{image,text,timeseries}_dataset_from_*`` of TF 2.4 as
``tt.data.Dataset`` pipelines.

Files are listed, labelled and (with ``shuffle``) put in TF's order: sorted class folders and
files, then ``np.random.RandomState(seed).shuffle`` of paths and labels, so ``file_paths``-order
and the training/validation split equal TF's for the same ``seed``. The later
``Dataset.shuffle(buffer_size=batch_size * 8, seed=seed)`` is ``tt.data``'s, whose order is not
TF's: with ``shuffle=True`` the batches hold the same elements as TF's, in another order.
"""
from __future__ import annotations

import os
from multiprocessing.pool import ThreadPool

import numpy as np

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]

_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _dataset():
    from ..data import Dataset
    return Dataset


# ------------------------------------------------------------------------------ directories
def _index_subdirectory(directory, class_indices, follow_links, formats):
    dirname = os.path.basename(directory)
    labels, filenames = [], []
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda t: t[0]):
        for fname in sorted(files):
            if fname.lower().endswith(formats):
                labels.append(class_indices[dirname])
                filenames.append(os.path.join(dirname,
                                              os.path.relpath(os.path.join(root, fname),
                                                              directory)))
    return filenames, labels


def _index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                     follow_links=False):
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Could not find directory {directory}")
    if labels is None:
        subdirs = [""]
        class_names = subdirs
    else:
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d))]
        if not class_names:
            class_names = subdirs
        elif set(class_names) != set(subdirs):
            raise ValueError(f"The `class_names` passed did not match the names of the "
                             f"subdirectories of the target directory. Expected: {subdirs}, "
                             f"but received: {class_names}")
    class_indices = dict(zip(class_names, range(len(class_names))))
    with ThreadPool() as pool:
        results = [pool.apply_async(_index_subdirectory,
                                    (os.path.join(directory, d), class_indices, follow_links,
                                     formats))
                   for d in subdirs]
        parts = [r.get() for r in results]
    filenames = [f for names, _ in parts for f in names]
    if labels not in ("inferred", None):
        if len(labels) != len(filenames):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in "
                             f"the target directory. len(labels) is {len(labels)} while we "
                             f"found {len(filenames)} files in {directory}.")
        labels = np.asarray(labels)
    else:
        labels = np.array([c for _, cls in parts for c in cls], dtype="int32")
    print(f"Found {len(filenames)} files belonging to {len(class_names)} classes.")
    file_paths = [os.path.join(directory, f) for f in filenames]
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        # the same RandomState twice keeps paths and labels aligned (TF's order)
        np.random.RandomState(seed).shuffle(file_paths)
        np.random.RandomState(seed).shuffle(labels)
    return file_paths, labels, class_names


def _split(samples, labels, validation_split, subset):
    if not validation_split:
        return samples, labels
    num_val = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - num_val} files for training.")
        return samples[:-num_val], labels[:-num_val]
    if subset == "validation":
        print(f"Using {num_val} files for validation.")
        return samples[-num_val:], labels[-num_val:]
    raise ValueError(f'`subset` must be either "training" or "validation", received: {subset}')


def _check_split_args(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", None):
        raise ValueError(f'`subset` must be either "training" or "validation", received: '
                         f'{subset}')
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _check_labels(labels, label_mode, class_names, what):
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"`labels` argument should be a list/tuple of integer labels, of "
                             f"the same size as the number of {what} files in the target "
                             f"directory. If you wish to infer the labels from the "
                             f"subdirectory names in the target directory, pass "
                             f'`labels="inferred"`. If you wish to get a dataset that only '
                             f"contains {what}s (no labels), pass `label_mode=None`.")
        if class_names:
            raise ValueError('You can only pass `class_names` if the labels are inferred from '
                             'the subdirectory names in the target directory '
                             '(`labels="inferred"`).')
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(f'`label_mode` argument must be one of "int", "categorical", "binary", '
                         f'or None. Received: {label_mode}')


def _label_array(labels, label_mode, num_classes):
    labels = np.asarray(labels)
    if label_mode == "binary":
        return labels.astype("float32").reshape(-1, 1)
    if label_mode == "categorical":
        out = np.zeros((len(labels), num_classes), dtype="float32")
        out[np.arange(len(labels)), labels.astype(np.int64)] = 1.0
        return out
    return labels


def _finish(ds, labels, label_mode, num_classes, batch_size, shuffle, seed):
    Dataset = _dataset()
    if label_mode:
        ds = Dataset.zip((ds, Dataset.from_tensor_slices(_label_array(labels, label_mode,
                                                                      num_classes))))
    if shuffle:
        ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
    return ds.batch(batch_size)


def _decode(path, num_channels, image_size, interpolation):
    from ._image_files import _pil_image
    import tnp
    from ..layers.experimental.preprocessing._resize import resize
    Image = _pil_image("image_dataset_from_directory")
    with Image.open(path) as img:
        img.seek(0)   # first frame of a GIF, as decode_image(expand_animations=False)
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[num_channels]
        a = np.asarray(img.convert(mode) if img.mode != mode else img)
    if a.ndim == 2:
        a = a[:, :, None]
    out = resize(tnp.asarray(a[None]), int(image_size[0]), int(image_size[1]), interpolation)
    out = out[0]
    return out if out.dtype == np.float32 else out.astype("float32")


def _files_and_labels(directory, labels, label_mode, class_names, formats, shuffle, seed,
                      validation_split, subset, follow_links):
    """What the ``*_dataset_from_directory`` functions share once their own arguments are
    checked: ``(paths, labels, label_mode, class_names, seed)`` of the files with an extension
    in ``formats`` (the ``subset`` of them), the seed drawn when not given."""
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _check_split_args(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labels, class_names = _index_directory(directory, labels, formats,
                                                  class_names=class_names, shuffle=shuffle,
                                                  seed=seed, follow_links=follow_links)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'When passing `label_mode="binary", there must exactly 2 classes. '
                         f'Found the following classes: {class_names}')
    paths, labels = _split(paths, labels, validation_split, subset)
    return paths, labels, label_mode, class_names, seed


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False):
    """Batches ``(images, labels)`` of the images under ``directory/<class>/``
    (``tf.keras.preprocessing.image_dataset_from_directory``, TF 2.4): float32 images resized
    to ``image_size`` with ``tf.image.resize``'s ``interpolation``; ``class_names`` on the
    result. Decoding needs Pillow (TF decodes with its own codecs: a grayscale image made from
    a colour file may differ from TF's by one level)."""
    from ..layers.experimental.preprocessing._resize import RESIZE_METHODS
    _check_labels(labels, label_mode, class_names, "image")
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. '
                         f'Received: {color_mode}')
    if interpolation not in RESIZE_METHODS:
        raise NotImplementedError(f"Value not recognized for `interpolation`: {interpolation}. "
                                  f"Supported values are: {RESIZE_METHODS}")
    paths, labels, label_mode, class_names, seed = _files_and_labels(
        directory, labels, label_mode, class_names, _IMAGE_FORMATS, shuffle, seed,
        validation_split, subset, follow_links)
    Dataset = _dataset()
    size = tuple(image_size)
    ds = Dataset.from_tensor_slices(np.arange(len(paths), dtype=np.int64)).map(
        lambda i: _decode(paths[int(i)], channels, size, interpolation))
    ds = _finish(ds, labels, label_mode, len(class_names), batch_size, shuffle, seed)
    ds.class_names = class_names
    ds.file_paths = list(paths)
    return ds


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None, shuffle=True,
                                seed=None, validation_split=None, subset=None,
                                follow_links=False):
    """Batches ``(texts, labels)`` of the ``.txt`` files under ``directory/<class>/``
    (``tf.keras.preprocessing.text_dataset_from_directory``, TF 2.4): each text a bytes
    scalar (its first ``max_length`` bytes); ``class_names`` on the result."""
    _check_labels(labels, label_mode, class_names, "text")
    paths, labels, label_mode, class_names, seed = _files_and_labels(
        directory, labels, label_mode, class_names, (".txt",), shuffle, seed, validation_split,
        subset, follow_links)
    Dataset = _dataset()

    def read(i):
        with open(paths[int(i)], "rb") as f:
            data = f.read() if max_length is None else f.read(max_length)
        # object dtype keeps trailing NUL bytes that a fixed-width bytes dtype would drop
        return np.array(data, dtype=object) if data.endswith(b"\0") else np.bytes_(data)

    ds = Dataset.from_tensor_slices(np.arange(len(paths), dtype=np.int64)).map(read)
    ds = _finish(ds, labels, label_mode, len(class_names), batch_size, shuffle, seed)
    ds.class_names = class_names
    return ds


# ------------------------------------------------------------------------------ time series
def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Batches of windows ``data[s : s + sequence_length * sampling_rate : sampling_rate]``
    (and ``targets[s]``) for start positions ``s`` every ``sequence_stride`` steps
    (``tf.keras.preprocessing.timeseries_dataset_from_array``, TF 2.4). The number of windows
    is TF 2.4's ``end - start - sequence_length * sampling_rate + 1`` (later TF counts
    ``(sequence_length - 1) * sampling_rate``, one more window per extra step of
    ``sampling_rate``)."""
    n = len(data)
    if start_index and (start_index < 0 or start_index >= n):
        raise ValueError(f"start_index must be higher than 0 and lower than the length of the "
                         f"data. Got: start_index={start_index} for data of length {n}.")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"end_index must be higher than start_index. Got: "
                             f"start_index={start_index}, end_index={end_index}.")
        if end_index >= n:
            raise ValueError(f"end_index must be lower than the length of the data. Got: "
                             f"end_index={end_index}")
        if end_index <= 0:
            raise ValueError(f"end_index must be higher than 0. Got: end_index={end_index}")
    if sampling_rate <= 0 or sampling_rate >= n:
        raise ValueError(f"sampling_rate must be higher than 0 and lower than the length of the "
                         f"data. Got: sampling_rate={sampling_rate} for data of length {n}.")
    if sequence_stride <= 0 or sequence_stride >= n:
        raise ValueError(f"sequence_stride must be higher than 0 and lower than the length of "
                         f"the data. Got: sequence_stride={sequence_stride} for data of length "
                         f"{n}.")
    if start_index is None:
        start_index = 0
    if end_index is None:
        end_index = n
    num_seqs = end_index - start_index - (sequence_length * sampling_rate) + 1
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    index_dtype = "int32" if num_seqs < 2147483647 else "int64"
    starts = np.arange(0, num_seqs, sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    Dataset = _dataset()
    steps = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    window_data = np.asarray(data)[start_index:end_index]
    ds = Dataset.from_tensor_slices(starts).map(lambda s: window_data[int(s) + steps])
    if targets is not None:
        target_data = np.asarray(targets)[start_index:end_index]
        ds = Dataset.zip((ds, Dataset.from_tensor_slices(starts).map(
            lambda s: target_data[int(s)])))
    if shuffle:
        ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
    return ds.batch(batch_size)
