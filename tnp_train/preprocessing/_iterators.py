"""The iterators of ``tt.preprocessing.image``: ``Iterator``, ``NumpyArrayIterator``,
``DirectoryIterator`` and the ``DataFrameIterator`` that ``flow_from_dataframe`` returns."""
from __future__ import annotations

import collections
import os
import threading
import warnings
from multiprocessing.pool import ThreadPool

import numpy as np

from ..backend import config as backend_config
from ..utils.data_utils import Sequence
from ._image_files import array_to_img, img_to_array, load_img

__all__ = ["Iterator", "NumpyArrayIterator", "DirectoryIterator", "DataFrameIterator"]


class Iterator(Sequence):
    """Base of the iterators ``ImageDataGenerator.flow*`` return
    (``tf.keras.preprocessing.image.Iterator``): a ``Sequence`` of ``ceil(n / batch_size)``
    batches, also an endless Python iterator; ``seed`` reseeds NumPy's global generator per
    batch, as TF."""

    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n, batch_size, shuffle, seed):
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self):
        self.index_array = np.arange(self.n)
        if self.shuffle:
            self.index_array = np.random.permutation(self.n)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length "
                             f"{len(self)}")
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        index_array = self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)]
        return self._get_batches_of_transformed_samples(index_array)

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self):
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current = 0 if self.n == 0 else (self.batch_index * self.batch_size) % self.n
            if self.n > current + self.batch_size:
                self.batch_index += 1
            else:
                self.batch_index = 0
            self.total_batches_seen += 1
            yield self.index_array[current:current + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        """The next batch (endless; reshuffled at each pass when ``shuffle``)."""
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array):  # pragma: no cover - abstract
        raise NotImplementedError


class NumpyArrayIterator(Iterator):
    """Batches of augmented images from a 4-D array and its labels
    (``tf.keras.preprocessing.image.NumpyArrayIterator``)."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False,
                 sample_weight=None, seed=None, data_format=None, save_to_dir=None,
                 save_prefix="", save_format="png", subset=None, dtype=None):
        data_format = data_format or backend_config.image_data_format()
        self.dtype = dtype or backend_config.floatx()
        if isinstance(x, (tuple, list)):
            x_misc = ([np.asarray(x[1])] if not isinstance(x[1], list)
                      else [np.asarray(xx) for xx in x[1]])
            x = x[0]
            for xx in x_misc:
                if len(x) != len(xx):
                    raise ValueError(f"All of the arrays in `x` should have the same length. "
                                     f"Found a pair with: len(x[0]) = {len(x)}, "
                                     f"len(x[?]) = {len(xx)}")
        else:
            x_misc = []
        if y is not None:
            y = np.asarray(y)
        if y is not None and len(x) != len(y):
            raise ValueError(f"`x` (images tensor) and `y` (labels) should have the same length. "
                             f"Found: x.shape = {np.asarray(x).shape}, y.shape = {y.shape}")
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError(f"`x` (images tensor) and `sample_weight` should have the same "
                             f"length. Found: x.shape = {np.asarray(x).shape}, "
                             f"sample_weight.shape = {np.asarray(sample_weight).shape}")
        if subset is not None:
            if subset not in {"training", "validation"}:
                raise ValueError(f"Invalid subset name: {subset}; expected \"training\" or "
                                 f"\"validation\".")
            split_idx = int(len(x) * image_data_generator._validation_split)
            if y is not None and not np.array_equal(np.unique(y[:split_idx]),
                                                    np.unique(y[split_idx:])):
                raise ValueError("Training and validation subsets have different number of "
                                 "classes after the split. If your numpy arrays are sorted by "
                                 "the label, you might want to shuffle them.")
            sl = slice(None, split_idx) if subset == "validation" else slice(split_idx, None)
            x = x[sl]
            x_misc = [np.asarray(xx[sl]) for xx in x_misc]
            if y is not None:
                y = y[sl]
            if sample_weight is not None:
                sample_weight = np.asarray(sample_weight)[sl]
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError(f"Input data in `NumpyArrayIterator` should have rank 4. You passed "
                             f"an array with shape {self.x.shape}")
        channels_axis = 3 if data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in {1, 3, 4}:
            warnings.warn(f'NumpyArrayIterator is set to use the data format convention '
                          f'"{data_format}" (channels on axis {channels_axis}), i.e. expected '
                          f'either 1, 3, or 4 channels on axis {channels_axis}. However, it was '
                          f'passed an array with shape {self.x.shape} '
                          f'({self.x.shape[channels_axis]} channels).')
        self.y = y
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        gen = self.image_data_generator
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = gen.get_random_transform(x.shape)
            x = gen.apply_transform(x.astype(self.dtype), params)
            batch_x[i] = gen.standardize(x)
        if self.save_to_dir:
            for i, j in enumerate(index_array):
                img = array_to_img(batch_x[i], self.data_format, scale=True)
                fname = f"{self.save_prefix}_{j}_{np.random.randint(1e4)}.{self.save_format}"
                img.save(os.path.join(self.save_to_dir, fname))
        miscs = [xx[index_array] for xx in self.x_misc]
        out = batch_x if not miscs else [batch_x] + miscs
        if self.y is None:
            return out
        if self.sample_weight is not None:
            return out, self.y[index_array], self.sample_weight[index_array]
        return out, self.y[index_array]


def _iter_valid_files(directory, white_list_formats, follow_links):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda t: t[0]):
        for fname in sorted(files):
            if fname.lower().endswith(".tiff"):
                warnings.warn('Using ".tiff" files with multiple bands will cause distortion. '
                              'Please verify your output.')
            if fname.lower().endswith(white_list_formats):
                yield root, fname


def _list_valid_filenames_in_directory(directory, white_list_formats, split, class_indices,
                                       follow_links):
    dirname = os.path.basename(directory)
    files = list(_iter_valid_files(directory, white_list_formats, follow_links))
    if split:
        n = len(files)
        files = files[int(split[0] * n):int(split[1] * n)]
    classes, filenames = [], []
    for root, fname in files:
        classes.append(class_indices[dirname])
        filenames.append(os.path.join(dirname,
                                      os.path.relpath(os.path.join(root, fname), directory)))
    return classes, filenames


class _BatchFromFiles:
    """What the directory and dataframe iterators share: read, augment and label files."""

    def _set_processing_attrs(self, image_data_generator, target_size, color_mode,
                              data_format, save_to_dir, save_prefix, save_format, subset,
                              interpolation):
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        if color_mode not in {"rgb", "rgba", "grayscale"}:
            raise ValueError(f"Invalid color mode: {color_mode}; expected \"rgb\", \"rgba\", or "
                             f"\"grayscale\".")
        self.color_mode = color_mode
        self.data_format = data_format
        channels = {"rgba": 4, "rgb": 3, "grayscale": 1}[color_mode]
        self.image_shape = (self.target_size + (channels,) if data_format == "channels_last"
                            else (channels,) + self.target_size)
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        self.interpolation = interpolation
        if subset is not None:
            vs = self.image_data_generator._validation_split
            if subset == "validation":
                split = (0, vs)
            elif subset == "training":
                split = (vs, 1)
            else:
                raise ValueError(f"Invalid subset name: {subset};expected \"training\" or "
                                 f"\"validation\"")
        else:
            split = None
        self.split = split
        self.subset = subset

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        gen = self.image_data_generator
        for i, j in enumerate(index_array):
            img = load_img(self.filepaths[j], color_mode=self.color_mode,
                           target_size=self.target_size, interpolation=self.interpolation)
            x = img_to_array(img, data_format=self.data_format)
            if hasattr(img, "close"):
                img.close()
            if gen:
                params = gen.get_random_transform(x.shape)
                x = gen.apply_transform(x, params)
                x = gen.standardize(x)
            batch_x[i] = x
        if self.save_to_dir:
            for i, j in enumerate(index_array):
                img = array_to_img(batch_x[i], self.data_format, scale=True)
                fname = f"{self.save_prefix}_{j}_{np.random.randint(1e7)}.{self.save_format}"
                img.save(os.path.join(self.save_to_dir, fname))
        mode = self.class_mode
        if mode == "input":
            batch_y = batch_x.copy()
        elif mode in {"binary", "sparse"}:
            batch_y = np.empty(len(batch_x), dtype=self.dtype)
            for i, k in enumerate(index_array):
                batch_y[i] = self.classes[k]
        elif mode == "categorical":
            batch_y = np.zeros((len(batch_x), len(self.class_indices)), dtype=self.dtype)
            for i, k in enumerate(index_array):
                batch_y[i, self.classes[k]] = 1.0
        elif mode == "multi_output":
            batch_y = [output[index_array] for output in self.labels]
        elif mode == "raw":
            batch_y = self.labels[index_array]
        else:
            return batch_x
        if self.sample_weight is None:
            return batch_x, batch_y
        return batch_x, batch_y, self.sample_weight[index_array]


class DirectoryIterator(_BatchFromFiles, Iterator):
    """Batches of images read from ``directory/<class>/...`` files
    (``tf.keras.preprocessing.image.DirectoryIterator``). Needs Pillow."""

    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(self, directory, image_data_generator, target_size=(256, 256),
                 color_mode="rgb", classes=None, class_mode="categorical", batch_size=32,
                 shuffle=True, seed=None, data_format=None, save_to_dir=None, save_prefix="",
                 save_format="png", follow_links=False, subset=None, interpolation="nearest",
                 dtype=None):
        data_format = data_format or backend_config.image_data_format()
        self.dtype = dtype or backend_config.floatx()
        self._set_processing_attrs(image_data_generator, target_size, color_mode, data_format,
                                   save_to_dir, save_prefix, save_format, subset, interpolation)
        self.directory = directory
        if class_mode not in self.allowed_class_modes:
            raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: "
                             f"{self.allowed_class_modes}")
        self.class_mode = class_mode
        if not classes:
            classes = [d for d in sorted(os.listdir(directory))
                       if os.path.isdir(os.path.join(directory, d))]
        self.num_classes = len(classes)
        self.class_indices = dict(zip(classes, range(len(classes))))
        with ThreadPool() as pool:
            results = [pool.apply_async(_list_valid_filenames_in_directory,
                                        (os.path.join(directory, d), self.white_list_formats,
                                         self.split, self.class_indices, follow_links))
                       for d in classes]
            parts = [r.get() for r in results]
        self.filenames = [f for _, names in parts for f in names]
        self.samples = len(self.filenames)
        self.classes = np.array([c for cls, _ in parts for c in cls], dtype="int32")
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        self._filepaths = [os.path.join(directory, f) for f in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def filepaths(self):
        return self._filepaths

    @property
    def labels(self):
        return self.classes

    @property
    def sample_weight(self):
        return None


class DataFrameIterator(_BatchFromFiles, Iterator):
    """Batches of images named in a pandas DataFrame (what ``flow_from_dataframe`` returns)."""

    allowed_class_modes = {"binary", "categorical", "input", "multi_output", "raw", "sparse",
                           None}

    def __init__(self, dataframe, directory=None, image_data_generator=None, x_col="filename",
                 y_col="class", weight_col=None, target_size=(256, 256), color_mode="rgb",
                 classes=None, class_mode="categorical", batch_size=32, shuffle=True, seed=None,
                 data_format="channels_last", save_to_dir=None, save_prefix="",
                 save_format="png", subset=None, interpolation="nearest", dtype="float32",
                 validate_filenames=True):
        self._set_processing_attrs(image_data_generator, target_size, color_mode, data_format,
                                   save_to_dir, save_prefix, save_format, subset, interpolation)
        df = dataframe.copy()
        self.directory = directory or ""
        self.class_mode = class_mode
        self.dtype = dtype
        self._check_params(df, x_col, y_col, weight_col, classes)
        if validate_filenames:
            df = self._filter_valid_filepaths(df, x_col)
        if class_mode not in ["input", "multi_output", "raw", None]:
            df, classes = self._filter_classes(df, y_col, classes)
            num_classes = len(classes)
            self.class_indices = dict(zip(classes, range(len(classes))))
        if self.split:
            n = len(df)
            df = df.iloc[int(self.split[0] * n):int(self.split[1] * n), :]
        if class_mode not in ["input", "multi_output", "raw", None]:
            self.classes = self._get_classes(df, y_col)
        self.filenames = df[x_col].tolist()
        self._sample_weight = df[weight_col].values if weight_col else None
        if class_mode == "multi_output":
            self._targets = [np.array(df[col].tolist()) for col in y_col]
        if class_mode == "raw":
            self._targets = df[y_col].values
        self.samples = len(self.filenames)
        validated = "validated" if validate_filenames else "non-validated"
        if class_mode in ["input", "multi_output", "raw", None]:
            print(f"Found {self.samples} {validated} image filenames.")
        else:
            print(f"Found {self.samples} {validated} image filenames belonging to "
                  f"{num_classes} classes.")
        self._filepaths = [os.path.join(self.directory, f) for f in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    def _check_params(self, df, x_col, y_col, weight_col, classes):
        if self.class_mode not in self.allowed_class_modes:
            raise ValueError(f"Invalid class_mode: {self.class_mode}; expected one of: "
                             f"{self.allowed_class_modes}")
        if self.class_mode == "multi_output" and not isinstance(y_col, list):
            raise TypeError(f'If class_mode="{self.class_mode}", y_col must be a list. '
                            f'Received {type(y_col).__name__}.')
        if not all(df[x_col].apply(lambda v: isinstance(v, str))):
            raise TypeError(f"All values in column x_col={x_col} must be strings.")
        if self.class_mode in {"binary", "sparse"}:
            if not all(df[y_col].apply(lambda v: isinstance(v, str))):
                raise TypeError(f'If class_mode="{self.class_mode}", y_col="{y_col}" column '
                                f'values must be strings.')
        if self.class_mode == "binary":
            if classes:
                if len(set(classes)) != 2:
                    raise ValueError(f'If class_mode="binary" there must be 2 classes. '
                                     f'{len(set(classes))} class/es were given.')
            elif df[y_col].nunique() != 2:
                raise ValueError(f'If class_mode="binary" there must be 2 classes. Found '
                                 f'{df[y_col].nunique()} classes.')
        if self.class_mode == "categorical":
            if not all(df[y_col].apply(lambda v: isinstance(v, (str, list, tuple)))):
                raise TypeError(f'If class_mode="{self.class_mode}", y_col="{y_col}" column '
                                f'values must be type string, list or tuple.')
        if classes and self.class_mode in {"input", "multi_output", "raw", None}:
            warnings.warn(f'`classes` will be ignored given the class_mode="{self.class_mode}"')
        if weight_col and not issubclass(df[weight_col].dtype.type, np.number):
            raise TypeError(f"Column weight_col={weight_col} must be numeric.")

    def _get_classes(self, df, y_col):
        return [[self.class_indices[c] for c in v] if isinstance(v, (list, tuple))
                else self.class_indices[v] for v in df[y_col]]

    @staticmethod
    def _filter_classes(df, y_col, classes):
        df = df.copy()

        def keep(labels, classes):
            if isinstance(labels, (list, tuple)):
                return [c for c in labels if c in classes] or None
            if isinstance(labels, str):
                return labels if labels in classes else None
            raise TypeError(f"Expect string, list or tuple but found {type(labels)} in {y_col} "
                            f"column ")
        if classes:
            classes = list(collections.OrderedDict.fromkeys(classes).keys())
            df[y_col] = df[y_col].apply(lambda v: keep(v, classes))
        else:
            found = set()
            for v in df[y_col]:
                if isinstance(v, (list, tuple)):
                    found.update(v)
                else:
                    found.add(v)
            classes = sorted(found)
        return df.dropna(subset=[y_col]), classes

    def _filter_valid_filepaths(self, df, x_col):
        paths = df[x_col].map(lambda f: os.path.join(self.directory, f))
        mask = paths.apply(lambda p: p.lower().endswith(self.white_list_formats)
                           and os.path.isfile(p))
        n_invalid = int((~mask).sum())
        if n_invalid:
            warnings.warn(f'Found {n_invalid} invalid image filename(s) in x_col="{x_col}". '
                          f'These filename(s) will be ignored.')
        return df[mask]

    @property
    def filepaths(self):
        return self._filepaths

    @property
    def labels(self):
        if self.class_mode in {"multi_output", "raw"}:
            return self._targets
        return self.classes

    @property
    def sample_weight(self):
        return self._sample_weight
