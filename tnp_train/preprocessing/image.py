"""``tf.keras.preprocessing.image`` of TF 2.4 (Keras-Preprocessing 1.1.2): image files to and from
arrays, affine augmentation, ``ImageDataGenerator`` and its iterators.

Everything runs on the host in NumPy and returns NumPy arrays, as in TF. Two engines are
optional, as in TF:

* Pillow (``pip install pillow``) reads and writes image files (``load_img``, ``save_img``,
  ``array_to_img``, ``flow_from_directory``); without it those raise ImportError saying so.
  ``apply_brightness_shift`` does not need it: it repeats, in NumPy, what Pillow's
  ``ImageEnhance.Brightness`` computes on 8-bit images (float32 product, truncated, clipped).
* SciPy's ``ndimage.affine_transform`` is TF's engine for the affine transforms and is used
  when SciPy is installed; without it a NumPy fallback does the same sampling for
  ``order`` 0 and 1 with ``fill_mode`` "constant", "nearest", "reflect" and "wrap" (SciPy's
  definitions of those modes).

Transforms follow TF 2.4, not later tf-keras: ``apply_affine_transform`` defaults to
``row_axis=0, col_axis=1, channel_axis=2`` and applies the matrix to (row, col) coordinates
(tf-keras >= 2.9 swaps the axes first, which mirrors rotations and shears), and brightness in
``ImageDataGenerator`` rescales the image to [0, 255] first (``scale=True``) as TF 2.4 did.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..backend import config as backend_config
from ._affine import (_brightness_channels_last, apply_affine_transform,
                      apply_brightness_shift, apply_channel_shift, flip_axis, random_brightness,
                      random_channel_shift, random_rotation, random_shear, random_shift,
                      random_zoom)
from ._image_files import array_to_img, img_to_array, load_img, save_img, smart_resize
from ._iterators import DataFrameIterator, DirectoryIterator, Iterator, NumpyArrayIterator

__all__ = ["ImageDataGenerator", "Iterator", "NumpyArrayIterator", "DirectoryIterator",
           "apply_affine_transform", "random_rotation", "random_shift", "random_shear",
           "random_zoom", "apply_brightness_shift", "random_brightness", "apply_channel_shift",
           "random_channel_shift", "array_to_img", "img_to_array", "load_img", "save_img",
           "smart_resize"]


class ImageDataGenerator:
    """Real-time augmentation and standardisation of image batches
    (``tf.keras.preprocessing.image.ImageDataGenerator``, TF 2.4): ``flow(x, y)``,
    ``flow_from_directory``, ``flow_from_dataframe``; ``fit(x)`` for the featurewise
    statistics. Random draws use NumPy's global generator, as TF."""

    def __init__(self, featurewise_center=False, samplewise_center=False,
                 featurewise_std_normalization=False, samplewise_std_normalization=False,
                 zca_whitening=False, zca_epsilon=1e-6, rotation_range=0, width_shift_range=0.0,
                 height_shift_range=0.0, brightness_range=None, shear_range=0.0, zoom_range=0.0,
                 channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None,
                 data_format=None, validation_split=0.0, interpolation_order=1, dtype=None):
        data_format = data_format or backend_config.image_data_format()
        self.dtype = dtype or backend_config.floatx()
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.zoom_range = zoom_range
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.interpolation_order = interpolation_order
        if data_format not in {"channels_last", "channels_first"}:
            raise ValueError('`data_format` should be `"channels_last"` (channel after row and '
                             'column) or `"channels_first"` (channel before row and column). '
                             f'Received: {data_format}')
        self.data_format = data_format
        if data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(f"`validation_split` must be strictly between 0 and 1.  Received: "
                             f"{validation_split}")
        self._validation_split = validation_split
        self.mean = None
        self.std = None
        self.principal_components = None
        if isinstance(zoom_range, (float, int)):
            self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2:
            self.zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"`zoom_range` should be a float or a tuple or list of two floats. "
                             f"Received: {zoom_range}")
        if zca_whitening:
            if not featurewise_center:
                self.featurewise_center = True
                warnings.warn("This ImageDataGenerator specifies `zca_whitening`, which "
                              "overrides setting of `featurewise_center`.")
            if featurewise_std_normalization:
                self.featurewise_std_normalization = False
                warnings.warn("This ImageDataGenerator specifies `zca_whitening` which "
                              "overrides setting of`featurewise_std_normalization`.")
        if featurewise_std_normalization and not featurewise_center:
            self.featurewise_center = True
            warnings.warn("This ImageDataGenerator specifies `featurewise_std_normalization`, "
                          "which overrides setting of `featurewise_center`.")
        if samplewise_std_normalization and not samplewise_center:
            self.samplewise_center = True
            warnings.warn("This ImageDataGenerator specifies `samplewise_std_normalization`, "
                          "which overrides setting of `samplewise_center`.")
        if brightness_range is not None:
            if not isinstance(brightness_range, (tuple, list)) or len(brightness_range) != 2:
                raise ValueError(f"`brightness_range should be tuple or list of two floats. "
                                 f"Received: {brightness_range}")
        self.brightness_range = brightness_range

    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None,
             save_to_dir=None, save_prefix="", save_format="png", subset=None):
        """A ``NumpyArrayIterator`` over ``x`` (4-D) and ``y``."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed,
                                  data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format,
                                  subset=subset, dtype=self.dtype)

    def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb",
                            classes=None, class_mode="categorical", batch_size=32, shuffle=True,
                            seed=None, save_to_dir=None, save_prefix="", save_format="png",
                            follow_links=False, subset=None, interpolation="nearest"):
        """A ``DirectoryIterator`` over ``directory/<class>/<image>`` (needs Pillow)."""
        return DirectoryIterator(directory, self, target_size=target_size,
                                 color_mode=color_mode, classes=classes, class_mode=class_mode,
                                 data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir,
                                 save_prefix=save_prefix, save_format=save_format,
                                 follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, dtype=self.dtype)

    def flow_from_dataframe(self, dataframe, directory=None, x_col="filename", y_col="class",
                            weight_col=None, target_size=(256, 256), color_mode="rgb",
                            classes=None, class_mode="categorical", batch_size=32, shuffle=True,
                            seed=None, save_to_dir=None, save_prefix="", save_format="png",
                            subset=None, interpolation="nearest", validate_filenames=True,
                            **kwargs):
        """An iterator over the image files a pandas DataFrame names (needs pandas, Pillow)."""
        for k, msg in (("has_ext", "has_ext is deprecated, filenames in the dataframe have to "
                        "match the exact filenames in disk."),
                       ("sort", "sort is deprecated, batches will be created in the same order "
                        "than the filenames provided if shuffle is set to False."),
                       ("drop_duplicates", "drop_duplicates is deprecated, you can drop "
                        "duplicates by using the pandas.DataFrame.drop_duplicates method.")):
            if k in kwargs:
                warnings.warn(msg, DeprecationWarning)
        if class_mode == "other":
            warnings.warn('`class_mode` "other" is deprecated, please use `class_mode` "raw".',
                          DeprecationWarning)
            class_mode = "raw"
        return DataFrameIterator(dataframe, directory, self, x_col=x_col, y_col=y_col,
                                 weight_col=weight_col, target_size=target_size,
                                 color_mode=color_mode, classes=classes, class_mode=class_mode,
                                 data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir,
                                 save_prefix=save_prefix, save_format=save_format,
                                 subset=subset, interpolation=interpolation,
                                 validate_filenames=validate_filenames, dtype=self.dtype)

    def standardize(self, x):
        """``preprocessing_function``, ``rescale``, then the sample- and featurewise
        normalisations and ZCA, in TF's order; in place when ``x`` is a float array."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center:
            if self.mean is not None:
                x -= self.mean
            else:
                warnings.warn("This ImageDataGenerator specifies `featurewise_center`, but it "
                              "hasn't been fit on any training data. Fit it first by calling "
                              "`.fit(numpy_data)`.")
        if self.featurewise_std_normalization:
            if self.std is not None:
                x /= self.std + 1e-6
            else:
                warnings.warn("This ImageDataGenerator specifies "
                              "`featurewise_std_normalization`, but it hasn't been fit on any "
                              "training data. Fit it first by calling `.fit(numpy_data)`.")
        if self.zca_whitening:
            if self.principal_components is not None:
                flat = np.reshape(x, (-1, np.prod(x.shape[-3:])))
                x = np.reshape(np.dot(flat, self.principal_components), x.shape)
            else:
                warnings.warn("This ImageDataGenerator specifies `zca_whitening`, but it "
                              "hasn't been fit on any training data. Fit it first by calling "
                              "`.fit(numpy_data)`.")
        return x

    def get_random_transform(self, img_shape, seed=None):
        """The random parameters for one image (a dict ``apply_transform`` takes), drawn from
        NumPy's global generator in TF's order."""
        img_row_axis = self.row_axis - 1
        img_col_axis = self.col_axis - 1
        if seed is not None:
            np.random.seed(seed)
        theta = (np.random.uniform(-self.rotation_range, self.rotation_range)
                 if self.rotation_range else 0)

        def shift(rng, size):
            if not rng:
                return 0
            try:   # an int or a list: a choice and a sign
                t = np.random.choice(rng)
                t *= np.random.choice([-1, 1])
            except ValueError:   # a float: uniform in [-rng, rng]
                t = np.random.uniform(-rng, rng)
            if np.max(rng) < 1:
                t *= size
            return t

        tx = shift(self.height_shift_range, img_shape[img_row_axis])
        ty = shift(self.width_shift_range, img_shape[img_col_axis])
        shear = (np.random.uniform(-self.shear_range, self.shear_range)
                 if self.shear_range else 0)
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_h = (np.random.random() < 0.5) * self.horizontal_flip
        flip_v = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift = None
        if self.channel_shift_range != 0:
            channel_shift = np.random.uniform(-self.channel_shift_range,
                                              self.channel_shift_range)
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_h, "flip_vertical": flip_v,
                "channel_shift_intensity": channel_shift, "brightness": brightness}

    def apply_transform(self, x, transform_parameters):
        """One image (3-D, no batch axis) transformed by the given parameters."""
        r, c, ch = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        p = transform_parameters
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0),
                                   p.get("shear", 0), p.get("zx", 1), p.get("zy", 1),
                                   row_axis=r, col_axis=c, channel_axis=ch,
                                   fill_mode=self.fill_mode, cval=self.cval,
                                   order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], ch)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, c)
        if p.get("flip_vertical", False):
            x = flip_axis(x, r)
        if p.get("brightness") is not None:
            # the generator's own data_format (TF 2.4 used the global one here)
            if self.data_format == "channels_first":
                x = np.moveaxis(_brightness_channels_last(np.moveaxis(x, 0, -1),
                                                          p["brightness"], True), -1, 0)
            else:
                x = _brightness_channels_last(x, p["brightness"], True)
        return x

    def random_transform(self, x, seed=None):
        """``apply_transform(x, get_random_transform(x.shape, seed))``."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None):
        """The featurewise mean, std and ZCA matrix from sample images ``x`` (4-D)."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError("Input to `.fit()` should have rank 4. Got array with shape: "
                             + str(x.shape))
        if x.shape[self.channel_axis] not in {1, 3, 4}:
            warnings.warn(f'Expected input to be images (as Numpy array) following the data '
                          f'format convention "{self.data_format}" (channels on axis '
                          f'{self.channel_axis}), i.e. expected either 1, 3 or 4 channels on '
                          f'axis {self.channel_axis}. However, it was passed an array with shape '
                          f'{x.shape} ({x.shape[self.channel_axis]} channels).')
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            ax = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    ax[i + r * x.shape[0]] = self.random_transform(x[i])
            x = ax
        bshape = [1, 1, 1]
        bshape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=(0, self.row_axis, self.col_axis)), bshape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=(0, self.row_axis, self.col_axis)), bshape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = np.reshape(x, (x.shape[0], x.shape[1] * x.shape[2] * x.shape[3]))
            sigma = np.dot(flat.T, flat) / flat.shape[0]
            u, s, _ = np.linalg.svd(sigma)
            s_inv = 1.0 / np.sqrt(s[np.newaxis] + self.zca_epsilon)
            self.principal_components = (u * s_inv).dot(u.T)
