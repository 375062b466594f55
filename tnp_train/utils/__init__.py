"""Utilities (``tt.utils``): reproducible randomness, the custom-object registry, and the
helpers ``tf.keras.utils`` has.

``tnp_train.utils`` is the bottom of tnp_train (every other package may import it), so each
name here is imported on first use (PEP 562): importing ``tnp_train.utils.tree`` costs only
that module, and nothing here imports the layers or models above.
"""
from .lazy import lazy_attributes as _lazy_attributes

# public name -> the module of this package that defines it
_NAMES = {
    "set_random_seed": "random", "get_rng": "random", "make_rng": "random",
    "to_categorical": "np_utils", "normalize": "np_utils",
    "Progbar": "progbar",
    "register_keras_serializable": "serialization", "get_registered_object": "serialization",
    "get_registered_name": "serialization", "custom_object_scope": "serialization",
    "CustomObjectScope": "serialization", "get_custom_objects": "serialization",
    "serialize_keras_object": "serialization", "deserialize_keras_object": "serialization",
    "Sequence": "data_utils", "SequenceEnqueuer": "data_utils", "OrderedEnqueuer": "data_utils",
    "GeneratorEnqueuer": "data_utils", "get_file": "data_utils",
    "pack_x_y_sample_weight": "data_utils", "unpack_x_y_sample_weight": "data_utils",
    "get_source_inputs": "layer_utils",
    "model_to_dot": "vis_utils", "plot_model": "vis_utils",
}
_SUBMODULES = ("data_utils", "layer_utils", "lazy", "naming", "np_utils", "progbar", "random",
               "serialization", "tracing", "tree", "vis_utils")

__all__ = list(_NAMES)
__getattr__, __dir__ = _lazy_attributes(__name__, _NAMES, _SUBMODULES)
