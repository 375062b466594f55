"""Image preprocessing and augmentation layers (TF 2.4 signatures), on ``(batch, height, width,
channels)`` tnp arrays (a single ``(height, width, channels)`` image too).

The ``Random*`` layers augment in training and are the identity otherwise. As in TF 2.4,
``training`` left unset (a direct call outside ``fit``) means training: only an explicit or
inherited ``training=False`` (``predict``, ``evaluate``, ``model(x, training=False)``) turns
them off. Random draws come from the layer's own generator when it has a ``seed``, else from
:func:`tnp_train.utils.random.get_rng` (so ``tt.utils.set_random_seed`` reproduces them); the
streams differ from TF's. Under a strategy each replica takes its images' rows of the global
batch's draw (``tt.utils.random.per_sample``), so the workers of a job augment as one
process. Geometric augmentation samples through TF's projective transform
(:func:`._resize.transform`), so for the same drawn parameters the output is TF's; gradients
flow to the images.
"""
from __future__ import annotations

import math

import numpy as _np

import tnp

from tnp.extend import backend_array as _backend, host_call as _host_call, tracing as _tracing

from ....autodiff.tape import needs_gradient as _needs_gradient
from ....utils.random import make_rng, per_sample, refuse_while_tracing, replica_generator
from ._base import PreprocessingLayer
from ._resize import RESIZE_METHODS, resize, transform

__all__ = ["Rescaling", "Resizing", "CenterCrop", "RandomCrop", "RandomFlip",
           "RandomTranslation", "RandomRotation", "RandomZoom", "RandomContrast",
           "RandomHeight", "RandomWidth"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


class _ImageLayer(PreprocessingLayer):
    _adaptable = False

    def _batched(self, inputs):
        """``inputs`` as a 4-D array, and whether it was one 3-D image."""
        if not isinstance(inputs, tnp.ndarray):
            inputs = tnp.asarray(inputs)
        if inputs.ndim == 3:
            return tnp.expand_dims(inputs, 0), True
        if inputs.ndim != 4:
            raise ValueError(f"{self.name}: expected images of shape (batch, height, width, "
                             f"channels) or (height, width, channels), got {tuple(inputs.shape)}")
        return inputs, False

    @staticmethod
    def _unbatched(x, single):
        return x[0] if single else x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


def _drawn_on_host(call):
    """A ``Random*`` layer's ``call``, which draws on the host in Python, made safe in a compiled
    function: while one is traced, a training call is one host call of the program, the
    layer's eager ``call`` made at every run with that run's images (its draws too, as an eager
    step makes them, so the compiled step gives the eager step's bits). Where that cannot be
    (a tape tracks the images: the host call has no gradient; an output whose size is drawn)
    the function runs that signature eagerly (``refuse_while_tracing``)."""
    def traced_or_now(self, inputs, training=None):
        if not (_tracing() and self._training(training)):
            return call(self, inputs, training)
        shape = self._drawn_shape(tuple(inputs.shape))
        if shape is None or _needs_gradient([inputs])[0]:
            refuse_while_tracing(f"{type(self).__name__} {self.name!r}")
        return _host_call(_call_now, call, self, inputs, training, shape=shape,
                          dtype=inputs.dtype)
    traced_or_now.__name__ = call.__name__
    traced_or_now.__qualname__ = call.__qualname__
    traced_or_now.__doc__ = call.__doc__
    traced_or_now.eager_call = call          # the layer's own call, which the host call makes
    return traced_or_now


def _call_now(call, layer, inputs, training):
    x = tnp.asarray(inputs)
    out = _backend(call(layer, x, training))
    # a host call's result must own its memory: the compiled program may reuse the buffer of
    # an input it holds as dead (RandomCrop's training result is a view of its input)
    return out.copy() if _np.may_share_memory(out, _backend(x)) else out


class _RandomLayer(_ImageLayer):
    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self._rng = make_rng(seed) if seed is not None else None

    def _drawn_shape(self, input_shape):
        """The shape of a training call's output for ``input_shape`` (None: drawn)."""
        return input_shape

    def _gen(self):
        """The generator of a draw for the whole batch (every replica of a strategy makes it
        alike, as one process does)."""
        return replica_generator(self._rng)

    def _per_image(self, draw, n):
        """``draw(generator, m)`` for each of the ``n`` images (under a strategy, this
        replica's rows of the global batch's draw)."""
        return per_sample(draw, n, self._rng)

    @staticmethod
    def _training(training):
        return True if training is None else bool(training)


def _factor_pair(factor, name, who):
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(f"{who}: {name} must be a float or a tuple of 2 floats, got "
                             f"{factor!r}")
        lo, hi = float(factor[0]), float(factor[1])
    else:
        lo, hi = -float(factor), float(factor)
    if hi < lo:
        raise ValueError(f"{who}: {name} cannot have upper bound less than lower bound, got "
                         f"{factor!r}")
    return lo, hi


def _check_modes(fill_mode, interpolation, who):
    if fill_mode not in _FILL_MODES:
        raise NotImplementedError(f"{who}: unknown fill_mode {fill_mode!r}; expected one of "
                                  f"{_FILL_MODES}")
    if interpolation not in ("nearest", "bilinear"):
        raise NotImplementedError(f"{who}: unknown interpolation {interpolation!r}; expected "
                                  f"'nearest' or 'bilinear'")


class Rescaling(_ImageLayer):
    """Mirrors ``Rescaling(scale, offset=0.0)``: ``inputs * scale + offset`` in the compute
    dtype."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        dt = self.compute_dtype
        x = inputs if inputs.dtype.name == dt else inputs.astype(dt)
        scale = tnp.asarray(_np.asarray(self.scale, dtype=dt), device=x.device)
        offset = tnp.asarray(_np.asarray(self.offset, dtype=dt), device=x.device)
        return x * scale + offset

    def get_config(self):
        def plain(v):
            return _np.asarray(v).tolist()
        return {**super().get_config(), "scale": plain(self.scale), "offset": plain(self.offset)}


class Resizing(_ImageLayer):
    """Mirrors ``Resizing(height, width, interpolation="bilinear")``: ``tf.image.resize``
    (float32 results; "nearest" keeps the dtype). See :mod:`._resize` for each method."""

    def __init__(self, height, width, interpolation="bilinear", **kwargs):
        super().__init__(**kwargs)
        if interpolation not in RESIZE_METHODS:
            raise NotImplementedError(f"Resizing: unknown interpolation {interpolation!r}; "
                                      f"expected one of {RESIZE_METHODS}")
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation

    def call(self, inputs):
        x, single = self._batched(inputs)
        return self._unbatched(resize(x, self.height, self.width, self.interpolation), single)

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        return s[:-3] + (self.height, self.width, s[-1])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation}


class CenterCrop(_ImageLayer):
    """Mirrors TF 2.4's ``CenterCrop(height, width)``: the central ``height x width`` window
    (offsets ``(H - height) // 2``); an image smaller than that is an error, as in TF 2.4."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs):
        x, single = self._batched(inputs)
        h, w = x.shape[1], x.shape[2]
        dh, dw = h - self.height, w - self.width
        if dh < 0 or dw < 0:
            raise ValueError(f"{self.name}: the crop {self.height}x{self.width} is larger than "
                             f"the images, of shape {tuple(inputs.shape)}")
        top, left = dh // 2, dw // 2
        return self._unbatched(x[:, top:top + self.height, left:left + self.width, :], single)

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        return s[:-3] + (self.height, self.width, s[-1])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class RandomCrop(_RandomLayer):
    """Mirrors TF 2.4's ``RandomCrop(height, width, seed=None)``: in training one random
    ``height x width`` window for the batch; otherwise the images resized (bilinear) to cover
    ``height x width`` keeping their aspect ratio, then center-cropped."""

    def __init__(self, height, width, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.height, self.width = int(height), int(width)

    def _drawn_shape(self, input_shape):
        return input_shape[:-3] + (self.height, self.width, input_shape[-1])

    @_drawn_on_host
    def call(self, inputs, training=None):
        x, single = self._batched(inputs)
        h, w = x.shape[1], x.shape[2]
        if self._training(training):
            dh, dw = h - self.height, w - self.width
            if dh < 0 or dw < 0:
                raise ValueError(f"{self.name}: the crop {self.height}x{self.width} is larger "
                                 f"than the images, of shape {tuple(inputs.shape)}")
            rng = self._gen()
            top, left = int(rng.integers(0, dh + 1)), int(rng.integers(0, dw + 1))
            out = x[:, top:top + self.height, left:left + self.width, :]
        else:
            if h / w > self.height / self.width:
                rh, rw = int(self.width * h / w), self.width
            else:
                rh, rw = self.height, int(self.height * w / h)
            r = resize(x, rh, rw, "bilinear")
            top, left = int((rh - self.height) / 2), int((rw - self.width) / 2)
            out = r[:, top:top + self.height, left:left + self.width, :]
        return self._unbatched(out, single)

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        return s[:-3] + (self.height, self.width, s[-1])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "seed": self.seed}


def _coin(generator, n):
    """``n`` fair coin flips."""
    return generator.random(n) < 0.5


class RandomFlip(_RandomLayer):
    """Mirrors ``RandomFlip(mode="horizontal_and_vertical", seed=None)``: each image flipped
    left-right and/or up-down with probability 1/2."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip: mode must be 'horizontal', 'vertical' or "
                             f"'horizontal_and_vertical', got {mode!r}")
        self.mode = mode

    @_drawn_on_host
    def call(self, inputs, training=None):
        if not self._training(training):
            return inputs
        x, single = self._batched(inputs)
        n = x.shape[0]
        dev = x.device
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            flip = tnp.asarray(self._per_image(_coin, n).reshape(n, 1, 1, 1), device=dev)
            x = tnp.where(flip, x[:, :, ::-1, :], x)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            flip = tnp.asarray(self._per_image(_coin, n).reshape(n, 1, 1, 1), device=dev)
            x = tnp.where(flip, x[:, ::-1, :, :], x)
        return self._unbatched(x, single)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "seed": self.seed}


class _TransformLayer(_RandomLayer):
    def __init__(self, fill_mode, interpolation, seed, fill_value, **kwargs):
        super().__init__(seed=seed, **kwargs)
        _check_modes(fill_mode, interpolation, type(self).__name__)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _transforms(self, n, h, w, rng):  # pragma: no cover - overridden
        raise NotImplementedError

    @_drawn_on_host
    def call(self, inputs, training=None):
        if not self._training(training):
            return inputs
        x, single = self._batched(inputs)
        n, h, w = x.shape[0], x.shape[1], x.shape[2]
        t = self._per_image(lambda g, m: self._transforms(m, h, w, g), n)
        out = transform(x, t, self.interpolation, self.fill_mode, self.fill_value)
        return self._unbatched(out, single)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "seed": self.seed,
                "fill_value": self.fill_value}


def rotation_matrix(angles, h, w):
    """TF's ``get_rotation_matrix``: rotations by ``angles`` (radians) about the centre."""
    a = _np.asarray(angles, dtype=_np.float64)
    cos, sin = _np.cos(a), _np.sin(a)
    x_off = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
    y_off = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
    z = _np.zeros_like(a)
    return _np.stack([cos, -sin, x_off, sin, cos, y_off, z, z], axis=1).astype(_np.float32)


def translation_matrix(dx, dy):
    """TF's ``get_translation_matrix``: shifts by ``(dx, dy)`` pixels."""
    dx, dy = _np.asarray(dx, _np.float64), _np.asarray(dy, _np.float64)
    o, z = _np.ones_like(dx), _np.zeros_like(dx)
    return _np.stack([o, z, -dx, z, o, -dy, z, z], axis=1).astype(_np.float32)


def zoom_matrix(zx, zy, h, w):
    """TF's ``get_zoom_matrix``: zooms by ``(zx, zy)`` about the centre (>1 zooms out)."""
    zx, zy = _np.asarray(zx, _np.float64), _np.asarray(zy, _np.float64)
    x_off = (w - 1.0) / 2.0 * (1.0 - zx)
    y_off = (h - 1.0) / 2.0 * (1.0 - zy)
    z = _np.zeros_like(zx)
    return _np.stack([zx, z, x_off, z, zy, y_off, z, z], axis=1).astype(_np.float32)


class RandomTranslation(_TransformLayer):
    """Mirrors TF 2.4's ``RandomTranslation(height_factor, width_factor, fill_mode="reflect",
    interpolation="bilinear", seed=None, fill_value=0.0)``: each image shifted by a fraction of
    its size drawn from the factors' ranges."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = _factor_pair(height_factor, "height_factor", "RandomTranslation")
        self._w = _factor_pair(width_factor, "width_factor", "RandomTranslation")
        for name, given, (lo, hi) in (("height_factor", height_factor, self._h),
                                      ("width_factor", width_factor, self._w)):
            if abs(lo) > 1 or abs(hi) > 1:
                raise ValueError(f"RandomTranslation: {name} must have values between "
                                 f"[-1, 1], got {given}")

    def _transforms(self, n, h, w, rng):
        dy = rng.uniform(self._h[0], self._h[1], n) * h
        dx = rng.uniform(self._w[0], self._w[1], n) * w
        return translation_matrix(dx, dy)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomRotation(_TransformLayer):
    """Mirrors TF 2.4's ``RandomRotation(factor, fill_mode="reflect", interpolation="bilinear",
    seed=None, fill_value=0.0)``: each image rotated by an angle drawn from ``factor * 2 pi``
    (a float ``f`` means ``(-f, f)``)."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self._f = _factor_pair(factor, "factor", "RandomRotation")

    def _transforms(self, n, h, w, rng):
        angles = rng.uniform(self._f[0] * 2 * math.pi, self._f[1] * 2 * math.pi, n)
        return rotation_matrix(angles, h, w)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_TransformLayer):
    """Mirrors TF 2.4's ``RandomZoom(height_factor, width_factor=None, fill_mode="reflect",
    interpolation="bilinear", seed=None, fill_value=0.0)``: each image zoomed by ``1 + f``, f
    drawn from the factor's range (positive: zoom out); with ``width_factor=None`` the aspect
    ratio is kept."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = _factor_pair(height_factor, "height_factor", "RandomZoom")
        self._w = None if width_factor is None else \
            _factor_pair(width_factor, "width_factor", "RandomZoom")
        for name, pair in (("height_factor", self._h), ("width_factor", self._w)):
            if pair is not None and (pair[0] < -1 or pair[1] < -1):
                raise ValueError(f"RandomZoom: {name} cannot have a bound less than -1, got "
                                 f"{pair}")

    def _transforms(self, n, h, w, rng):
        zy = 1.0 + rng.uniform(self._h[0], self._h[1], n)
        zx = zy if self._w is None else 1.0 + rng.uniform(self._w[0], self._w[1], n)
        return zoom_matrix(zx, zy, h, w)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomContrast(_RandomLayer):
    """Mirrors TF 2.4's ``RandomContrast(factor, seed=None)``: one contrast factor ``c`` per
    call drawn from ``[1 - lower, 1 + upper]``; each image and channel becomes ``(x - mean) *
    c + mean`` (no clipping, as TF 2.4)."""

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        if isinstance(factor, (tuple, list)):
            self.lower, self.upper = float(factor[0]), float(factor[1])
        else:
            self.lower = self.upper = float(factor)
        if self.lower < 0 or self.upper < 0 or self.lower > 1:
            raise ValueError(f"RandomContrast: factor cannot have negative values or a lower "
                             f"bound greater than 1, got {factor!r}")

    @_drawn_on_host
    def call(self, inputs, training=None):
        if not self._training(training):
            return inputs
        x, single = self._batched(inputs)
        c = self._gen().uniform(1.0 - self.lower, 1.0 + self.upper)
        xf = x if x.dtype.kind == "f" else x.astype("float32")
        mean = tnp.mean(xf, axis=(1, 2), keepdims=True)
        out = (xf - mean) * xf.dtype.type(c) + mean
        return self._unbatched(out if out.dtype == x.dtype else out.astype(x.dtype), single)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "seed": self.seed}


class _RandomSize(_RandomLayer):
    _axis = 1

    def __init__(self, factor, interpolation="bilinear", seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        who = type(self).__name__
        self.factor = factor
        self._f = _factor_pair(factor, "factor", who)
        if self._f[0] < -1 or self._f[1] < -1:
            raise ValueError(f"{who}: factor cannot have a bound less than -1, got {factor!r}")
        if interpolation not in RESIZE_METHODS:
            raise NotImplementedError(f"{who}: unknown interpolation {interpolation!r}; "
                                      f"expected one of {RESIZE_METHODS}")
        self.interpolation = interpolation

    def _drawn_shape(self, input_shape):
        return None                # the size is drawn: not in a compiled function

    @_drawn_on_host
    def call(self, inputs, training=None):
        if not self._training(training):
            return inputs
        x, single = self._batched(inputs)
        h, w = x.shape[1], x.shape[2]
        f = 1.0 + self._gen().uniform(self._f[0], self._f[1])
        size = [h, w]
        size[self._axis - 1] = int(_np.float32(f) * _np.float32(size[self._axis - 1]))
        return self._unbatched(resize(x, size[0], size[1], self.interpolation), single)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        s[len(s) - 4 + self._axis] = None
        return tuple(s)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "interpolation": self.interpolation, "seed": self.seed}


class RandomHeight(_RandomSize):
    """Mirrors TF 2.4's ``RandomHeight(factor, interpolation="bilinear", seed=None)``: the
    batch resized to ``int((1 + f) * height)`` rows, f drawn once per call from the factor's
    range."""

    _axis = 1


class RandomWidth(_RandomSize):
    """Mirrors TF 2.4's ``RandomWidth(factor, interpolation="bilinear", seed=None)``: the
    batch resized to ``int((1 + f) * width)`` columns, f drawn once per call."""

    _axis = 2
