"""tnp_train: training on top of tnp (modelled on TF 2.4's tf.keras and tf.GradientTape).

Tape autodiff through any tnp code (``GradientTape``, ``Variable``, ``custom_gradient``,
``stop_gradient``); Keras-style layers, models (``Sequential``, functional ``Model(inputs,
outputs)``, subclassed ``Model``) with ``compile``/``fit``/``evaluate``/``predict``; losses,
metrics, optimizers, callbacks; an input pipeline (``tt.data``); checkpoints (``tt.train``);
mixed precision (``tt.mixed_precision``).

Every subpackage and name here is imported on first use (PEP 562), so that importing one
subpackage (``import tnp_train.initializers``) loads only what that subpackage imports, never
the layers above it (see tests/tnp_train/test_import_layers.py).
"""
from .utils.lazy import forward_attributes as _forward_attributes
from .utils.lazy import lazy_attributes as _lazy_attributes

__version__ = "0.1.0"

_SUBPACKAGES = ("activations", "applications", "autodiff", "backend", "callbacks", "checkpoint",
                "compiler", "constraints", "data", "datasets", "distribute", "errors",
                "experimental", "initializers", "io", "layers", "losses", "metrics",
                "mixed_precision", "models", "nn", "ops", "optimizers", "preprocessing",
                "profiler", "regularizers", "sparse", "strings", "train", "trainers", "summary",
                "utils", "wrappers")
# top-level names -> the subpackage that defines them
_NAMES = {"GradientTape": "autodiff", "Variable": "autodiff", "VariableAggregation": "autodiff",
          "VariableSynchronization": "autodiff", "custom_gradient": "autodiff",
          "stop_gradient": "autodiff", "variable_creator_scope": "autodiff",
          "Input": "layers", "Model": "models", "Sequential": "models",
          "function": "compiler", "config": "compiler", "TensorSpec": "data",
          "vectorized_map": "compiler", "cond": "compiler", "while_loop": "compiler",
          "switch_case": "compiler", "map_fn": "compiler", "range": "compiler",
          "autograph": "compiler"}

__all__ = sorted(_NAMES) + sorted(set(_SUBPACKAGES) - {"autodiff", "checkpoint", "ops",
                                                        "trainers", "compiler"})
__getattr__, __dir__ = _lazy_attributes(__name__, _NAMES, _SUBPACKAGES)


def _declare_providers():
    # the rooms whose objects lower rooms look up by name (TF 2.4's activations.get("LeakyReLU")
    # gives a layer; layers.deserialize of a model config gives a model): imported when first
    # looked up, never by the lower room itself
    from .utils.serialization import register_builtin_provider

    register_builtin_provider("activation", "tnp_train.layers.advanced_activations")
    register_builtin_provider("layer", "tnp_train.layers")
    register_builtin_provider("layer", "tnp_train.models")
    # TF 2.6+'s ``keras.utils`` locations of TF 2.4's ``keras.preprocessing`` functions (the
    # same objects): tt.utils is the bottom room, so it cannot import them itself
    _forward_attributes("tnp_train.utils", "tnp_train.preprocessing", (
        "image_dataset_from_directory", "text_dataset_from_directory",
        "timeseries_dataset_from_array"))
    _forward_attributes("tnp_train.utils", "tnp_train.preprocessing.image", (
        "array_to_img", "img_to_array", "load_img", "save_img"))
    _forward_attributes("tnp_train.utils", "tnp_train.preprocessing.sequence",
                        ("pad_sequences",))


_declare_providers()
