"""``tt.Model``: a layer with the training API, created three ways, as in ``tf.keras``:

* functional — ``tt.Model(inputs, outputs)`` (returns a :class:`Functional`);
* subclassed — ``class MyModel(tt.Model)`` with layers as attributes and a ``call``;
* ``tt.Sequential`` (a :class:`Functional` once its input shape is known).
"""
from __future__ import annotations

import os
import zipfile

from ..callbacks import CallbackList
from ..layers.base import Layer
from ..trainers.trainer import Trainer
from ..utils.serialization import get_registered_name

__all__ = ["Model"]


class Model(Trainer, Layer):
    """Mirrors ``tf.keras.Model``."""

    _callback_list_class = CallbackList     # what fit/evaluate/predict drive (see Trainer)

    def __new__(cls, *args, **kwargs):
        if cls is Model and _is_functional_init(args, kwargs):
            from .functional import Functional
            return Functional.__new__(Functional)
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        from .functional import Functional
        if _is_functional_init(args, kwargs) or args:
            if not isinstance(self, Functional):
                if not _is_functional_init(args, kwargs):
                    raise TypeError(f"{type(self).__name__}: Model() takes inputs and outputs "
                                    f"(a functional model) or keyword arguments only, got "
                                    f"{len(args)} positional argument(s)")
                # a subclass of Model called with inputs/outputs (directly, or from its own
                # __init__) becomes a functional model that keeps its own methods: as TF 2.4,
                # Functional goes into the class's bases in place of Model
                _inject_functional(type(self))
            Functional.__init__(self, *args, **kwargs)
            return
        allowed = {"name", "trainable", "dtype", "autocast", "dynamic"}
        unknown = set(kwargs) - allowed
        if unknown:
            raise TypeError(f"Model: unexpected keyword arguments {sorted(unknown)}")
        Layer.__init__(self, **kwargs)
        self._init_trainer()

    def call(self, inputs, training=None, mask=None):
        raise NotImplementedError(f"Model {self.name}: a subclassed model must implement call() "
                                  f"(or be created as tt.Model(inputs, outputs))")

    @property
    def layers(self):
        return list(self._sublayers)

    def get_layer(self, name=None, index=None):
        """A layer by ``name`` or by ``index`` in ``layers``."""
        if index is not None and name is not None:
            raise ValueError("Provide only a layer name or a layer index, not both")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(self.layers)} layers.")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[l.name for l in self.layers]}.")

    def build(self, input_shape):
        """Build a subclassed model by calling it on zeros of ``input_shape``."""
        if self.built:
            return
        import tnp
        from ..layers.base import _ctx
        shapes = input_shape
        if isinstance(shapes, tuple) and (not shapes or not isinstance(shapes[0], (tuple, list))):
            shapes = [shapes]
            single = True
        else:
            single = False
        if any(d is None for s in shapes for d in s[1:]):
            raise ValueError(f"{self.name}.build: cannot build with unknown non-batch dimensions "
                             f"{input_shape}; call the model on data instead")
        xs = [tnp.zeros(tuple(1 if d is None else d for d in s), dtype=self.compute_dtype)
              for s in shapes]
        self.built = True     # call() runs the sub-layers' own builds
        outer, outer_symbolic = getattr(_ctx, "depth", 0), getattr(_ctx, "symbolic", False)
        # zeros, not data: metrics and carried states are left alone (as for symbolic calls)
        _ctx.depth, _ctx.symbolic = outer + 1, True
        try:
            self.call(xs[0] if single else xs)
        finally:
            _ctx.depth, _ctx.symbolic = outer, outer_symbolic

    # ------------------------------------------------------------------ saving
    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None,
             signatures=None, options=None, save_traces=True):
        """Save the model: an ``.h5``/``.hdf5`` name or ``save_format="h5"`` writes tf_keras's
        HDF5 file, a ``.keras`` name a Keras 3 archive (both readable by tf_keras / Keras 3),
        any other name tnp's directory (config JSON + weights + optimizer state). No pickle;
        every format is written atomically. Under a multi-worker strategy every worker calls
        it (as TF requires), only the chief (worker 0) writes, and every worker returns once
        the chief's write has ended."""
        from ..trainers.distributed import chief_writes
        from . import keras_files
        kind = keras_files.model_file_kind(filepath, save_format)
        if kind == "h5":
            def write():
                return keras_files.save_h5_model(self, filepath, overwrite=overwrite,
                                                 include_optimizer=include_optimizer)
        elif kind == "keras":
            def write():
                return keras_files.save_keras_archive(self, filepath, overwrite=overwrite,
                                                      include_optimizer=include_optimizer)
        else:
            from ..checkpoint.saving import save_model

            def write():
                return save_model(self, filepath, overwrite=overwrite,
                                  include_optimizer=include_optimizer)
        return chief_writes(self, "model.save", write)

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Save the weights: an ``.h5``/``.hdf5``/``.keras`` name or ``save_format="h5"``
        writes tf_keras's HDF5 weights file, a ``.weights.h5`` name Keras 3's; any other name a
        tnp checkpoint (with the optimizer's state, as TF's checkpoint format)."""
        from ..trainers.distributed import chief_writes
        from . import keras_files
        kind = keras_files.weights_file_kind(filepath, save_format)
        if kind == "h5":
            def write():
                return keras_files.save_h5_weights(self, filepath, overwrite=overwrite)
        elif kind == "keras3":
            def write():
                return keras_files.save_keras3_weights(self, filepath, overwrite=overwrite)
        else:
            from ..checkpoint.saving import save_weights

            def write():
                return save_weights(self, filepath, overwrite=overwrite)
        # under a multi-worker strategy: the chief writes, every worker returns once it has
        return chief_writes(self, "model.save_weights", write)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        """Load weights: an HDF5 file (tf_keras's layout, by topology or ``by_name``, with
        ``skip_mismatch``; or Keras 3's ``.weights.h5``), a ``.keras`` archive's weights, or a
        tnp checkpoint (``skip_mismatch`` skips weights whose shape differs, with a warning)."""
        from ..checkpoint import keras_h5
        from ..checkpoint.saving import load_weights
        from . import keras_files
        path = None if filepath is None else os.fspath(filepath)
        if path is not None and os.path.isfile(path):
            if keras_h5.is_hdf5(path):
                with keras_h5.open_h5(path, "load_weights") as f:
                    k3 = keras_files.is_keras3_weights(f)
                if k3:
                    if by_name:
                        raise ValueError(f"load_weights({path!r}): by_name=True is for "
                                         f"tf_keras's HDF5 layout; this file has Keras 3's")
                    return keras_files.load_keras3_weights(self, path)
                return keras_files.load_h5_weights(self, path, by_name=by_name,
                                                   skip_mismatch=skip_mismatch)
            if zipfile.is_zipfile(path):
                return keras_files.load_keras_archive_weights(self, path)
        if path is not None and os.path.isdir(path):
            keras_files.check_not_saved_model(path, "load_weights")
        if by_name:
            raise ValueError(f"load_weights({path!r}): by_name=True is for HDF5 files (.h5); "
                             f"this is a tnp checkpoint, which is matched by object path")
        return load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def _trackable_children(self):
        out = Layer._trackable_children(self)
        return out

    # ------------------------------------------------------------------ summary
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False):
        """Print the layers, their output shapes and parameter counts (``Model.summary``)."""
        from .summary import print_summary
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)

    def to_json(self, **kwargs):
        """The model's architecture as a JSON string (``Model.to_json(**kwargs)``, the kwargs
        passed to ``json.dumps``); :func:`tt.models.model_from_json` rebuilds it."""
        import json
        return json.dumps(_model_metadata(self), default=_json_default, **kwargs)

    def to_yaml(self, **kwargs):
        """The architecture as YAML (TF 2.4's ``Model.to_yaml``; needs PyYAML, as TF does)."""
        yaml = _yaml("to_yaml")
        import json
        plain = json.loads(json.dumps(_model_metadata(self), default=_json_default))
        return yaml.dump(plain, **kwargs)

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} is a subclassed model: implement "
                                  f"get_config() (and from_config) to save it with model.save; "
                                  f"save_weights works without")

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .functional import Functional
        if "layers" in config and "input_layers" in config:
            # rebuilt as `cls(inputs=..., outputs=...)`, so a subclass of a functional model
            # comes back as that subclass (TF 2.4's Model.from_config)
            return Functional.from_config.__func__(cls, config, custom_objects=custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _is_functional_init(args, kwargs):
    """TF's ``is_functional_model_init_params``: (inputs, outputs) given, by position or name."""
    return (len(args) == 2 or len(args) == 1 and "outputs" in kwargs or
            "inputs" in kwargs and "outputs" in kwargs)


def _inject_functional(cls):
    """TF's ``inject_functional_model_class``: replace ``Model`` by ``Functional`` among the
    bases of ``cls`` (and of its bases that derive from Model), once."""
    from .functional import Functional
    if cls is Model:
        return Functional
    if cls is object or not issubclass(cls, Model) or issubclass(cls, Functional):
        return cls
    bases = tuple(_inject_functional(b) for b in cls.__bases__)
    if bases != cls.__bases__:
        cls.__bases__ = bases
    return cls


def _model_metadata(model):
    from ..layers.serialization import serialize
    from .. import __version__
    cfg = dict(serialize(model))
    cfg["keras_version"] = "2.4.0"
    cfg["backend"] = f"tnp_train {__version__}"
    return cfg


def _json_default(obj):
    """What ``json`` cannot write itself: NumPy and tnp scalars and arrays, dtypes, tuples in
    configs (as Keras's ``get_json_type``)."""
    import numpy as np
    if hasattr(obj, "get_config"):
        return {"class_name": get_registered_name(type(obj)), "config": obj.get_config()}
    if isinstance(obj, np.dtype) or (isinstance(obj, type) and issubclass(obj, np.generic)):
        return np.dtype(obj).name
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__index__"):
        return int(obj)
    if hasattr(obj, "__float__"):
        return float(obj)
    raise TypeError(f"Not JSON Serializable: {obj!r}")


def _yaml(what):
    try:
        import yaml
    except ImportError:
        raise ImportError(f"{what} requires the yaml module (`pip install pyyaml`)") from None
    return yaml
