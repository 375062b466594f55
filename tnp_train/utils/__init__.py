"""Utilities (``tt.utils``): reproducible randomness, and the helpers ``tf.keras.utils`` has."""
from .random import set_random_seed, get_rng, make_rng
from .np_utils import to_categorical, normalize
from .progbar import Progbar

__all__ = ["set_random_seed", "get_rng", "make_rng", "to_categorical", "normalize", "Progbar"]

from ..layers.serialization import (  # noqa: E402
    CustomObjectScope, custom_object_scope, get_registered_name, get_registered_object,
    register_keras_serializable)

__all__ += ["register_keras_serializable", "get_registered_object", "get_registered_name",
            "custom_object_scope", "CustomObjectScope"]

from .generic_utils import (  # noqa: E402
    deserialize_keras_object, get_custom_objects, serialize_keras_object)

__all__ += ["get_custom_objects", "serialize_keras_object", "deserialize_keras_object"]

from .data_utils import (  # noqa: E402
    GeneratorEnqueuer, OrderedEnqueuer, Sequence, SequenceEnqueuer, get_file,
    pack_x_y_sample_weight, unpack_x_y_sample_weight)
from .layer_utils import get_source_inputs  # noqa: E402
from .vis_utils import model_to_dot, plot_model  # noqa: E402

__all__ += ["Sequence", "SequenceEnqueuer", "OrderedEnqueuer", "GeneratorEnqueuer", "get_file",
            "get_source_inputs", "model_to_dot", "plot_model", "pack_x_y_sample_weight",
            "unpack_x_y_sample_weight"]

