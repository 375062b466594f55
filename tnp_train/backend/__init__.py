"""``tt.backend``: the Keras backend functions of TF 2.4 (``tf.keras.backend``), on tnp.

Each function takes tnp arrays (or anything ``tnp.asarray`` takes) and returns tnp arrays built
with tnp operations, so a ``GradientTape`` differentiates through them. They follow TF 2.4's
eager behaviour: ``variable``, ``zeros``/``ones``/``eye`` and the ``random_*_variable``
functions return ``tt.Variable``; ``get_value``/``eval``/``batch_get_value`` return NumPy
arrays; ``gradients`` raises as it does under eager execution (use ``tt.GradientTape``).
Differences: there are no sparse arrays (``is_sparse`` is False, ``to_dense`` returns its
input), random draws come from NumPy generators (seeded draws are reproducible, not TF's
numbers), and ``print_tensor`` prints with NumPy's formatting.

Two floors in one package. ``config`` (``floatx``, ``epsilon``, ``image_data_format``) is
pure state at the bottom of tnp_train, which every package may import. The functions sit at
the top, beside the models: they build layers when called on symbolic tensors, and
``function`` builds a model. They are grouped by theme (``session``, ``variables``,
``graph``, ``math``, ``manipulation``, ``nn``, ``conv``, ``random``, ``control_flow``,
``ctc``), and each name is imported from its module on first use (PEP 562), so that importing
``tnp_train.backend.config`` loads none of them.
"""
from ..utils.lazy import lazy_attributes as _lazy_attributes

__all__ = ["abs", "all", "any", "arange", "argmax", "argmin", "backend", "batch_dot",
           "batch_flatten", "batch_get_value", "batch_normalization", "batch_set_value",
           "bias_add", "binary_crossentropy", "cast", "cast_to_floatx",
           "categorical_crossentropy", "clear_session", "clip", "concatenate", "constant",
           "conv1d", "conv2d", "conv2d_transpose", "conv3d", "cos", "count_params",
           "ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse", "cumprod", "cumsum",
           "depthwise_conv2d", "dot", "dropout", "dtype", "elu", "epsilon", "equal", "eval",
           "exp", "expand_dims", "eye", "flatten", "floatx", "foldl", "foldr", "function",
           "gather", "get_uid", "get_value", "gradients", "greater", "greater_equal",
           "hard_sigmoid", "image_data_format", "in_test_phase", "in_top_k", "in_train_phase",
           "int_shape", "is_keras_tensor", "is_sparse", "l2_normalize", "learning_phase",
           "learning_phase_scope", "less", "less_equal", "local_conv1d", "local_conv2d", "log",
           "manual_variable_initialization", "map_fn", "max", "maximum", "mean", "min",
           "minimum", "moving_average_update", "name_scope", "ndim",
           "normalize_batch_in_training", "not_equal", "one_hot", "ones", "ones_like",
           "permute_dimensions", "placeholder", "pool2d", "pool3d", "pow", "print_tensor",
           "prod", "random_bernoulli", "random_binomial", "random_normal",
           "random_normal_variable", "random_uniform", "random_uniform_variable", "relu",
           "repeat", "repeat_elements", "reset_uids", "reshape", "resize_images",
           "resize_volumes", "reverse", "rnn", "round", "separable_conv2d", "set_epsilon",
           "set_floatx", "set_image_data_format", "set_learning_phase", "set_value", "shape",
           "sigmoid", "sign", "sin", "softmax", "softplus", "softsign",
           "sparse_categorical_crossentropy", "spatial_2d_padding", "spatial_3d_padding", "sqrt",
           "square", "squeeze", "stack", "std", "stop_gradient", "sum", "switch", "tanh",
           "temporal_padding", "tile", "to_dense", "transpose", "truncated_normal", "update",
           "update_add", "update_sub", "var", "variable", "zeros", "zeros_like"]

# public name -> the module that defines it
_NAMES = {
    "backend": "config", "epsilon": "config", "floatx": "config",
    "image_data_format": "config", "set_epsilon": "config", "set_floatx": "config",
    "set_image_data_format": "config",
    "clear_session": "session", "get_uid": "session", "in_test_phase": "session",
    "in_train_phase": "session", "learning_phase": "session",
    "learning_phase_scope": "session", "manual_variable_initialization": "session",
    "name_scope": "session", "reset_uids": "session", "set_learning_phase": "session",
    "batch_get_value": "variables", "batch_set_value": "variables", "constant": "variables",
    "count_params": "variables", "dtype": "variables", "eval": "variables", "eye": "variables",
    "get_value": "variables", "int_shape": "variables", "is_sparse": "variables",
    "moving_average_update": "variables", "ndim": "variables", "ones": "variables",
    "ones_like": "variables", "print_tensor": "variables", "set_value": "variables",
    "shape": "variables", "to_dense": "variables", "update": "variables",
    "update_add": "variables", "update_sub": "variables", "variable": "variables",
    "zeros": "variables", "zeros_like": "variables",
    "function": "graph", "gradients": "graph", "is_keras_tensor": "graph",
    "placeholder": "graph", "stop_gradient": "graph",
    "abs": "math", "all": "math", "any": "math", "argmax": "math", "argmin": "math",
    "batch_dot": "math", "cast": "math", "cast_to_floatx": "math", "clip": "math",
    "cos": "math", "cumprod": "math", "cumsum": "math", "dot": "math", "equal": "math",
    "exp": "math", "greater": "math", "greater_equal": "math", "less": "math",
    "less_equal": "math", "log": "math", "max": "math", "maximum": "math", "mean": "math",
    "min": "math", "minimum": "math", "not_equal": "math", "pow": "math", "prod": "math",
    "round": "math", "sign": "math", "sin": "math", "sqrt": "math", "square": "math",
    "std": "math", "sum": "math", "tanh": "math", "var": "math",
    "arange": "manipulation", "batch_flatten": "manipulation", "concatenate": "manipulation",
    "expand_dims": "manipulation", "flatten": "manipulation", "gather": "manipulation",
    "one_hot": "manipulation", "permute_dimensions": "manipulation", "repeat": "manipulation",
    "repeat_elements": "manipulation", "reshape": "manipulation",
    "resize_images": "manipulation", "resize_volumes": "manipulation",
    "reverse": "manipulation", "spatial_2d_padding": "manipulation",
    "spatial_3d_padding": "manipulation", "squeeze": "manipulation", "stack": "manipulation",
    "switch": "manipulation", "temporal_padding": "manipulation", "tile": "manipulation",
    "transpose": "manipulation",
    "batch_normalization": "nn", "bias_add": "nn", "binary_crossentropy": "nn",
    "categorical_crossentropy": "nn", "dropout": "nn", "elu": "nn", "hard_sigmoid": "nn",
    "in_top_k": "nn", "l2_normalize": "nn", "normalize_batch_in_training": "nn", "relu": "nn",
    "sigmoid": "nn", "softmax": "nn", "softplus": "nn", "softsign": "nn",
    "sparse_categorical_crossentropy": "nn",
    "conv1d": "conv", "conv2d": "conv", "conv2d_transpose": "conv", "conv3d": "conv",
    "depthwise_conv2d": "conv", "local_conv1d": "conv", "local_conv2d": "conv",
    "pool2d": "conv", "pool3d": "conv", "separable_conv2d": "conv",
    "random_bernoulli": "random", "random_binomial": "random", "random_normal": "random",
    "random_normal_variable": "random", "random_uniform": "random",
    "random_uniform_variable": "random", "truncated_normal": "random",
    "foldl": "control_flow", "foldr": "control_flow", "map_fn": "control_flow",
    "rnn": "control_flow",
    "ctc_batch_cost": "ctc", "ctc_decode": "ctc", "ctc_label_dense_to_sparse": "ctc",
}
_SUBMODULES = ("config", "session", "variables", "graph", "math", "manipulation", "nn", "conv",
               "random", "control_flow", "ctc")

__getattr__, __dir__ = _lazy_attributes(__name__, _NAMES, _SUBMODULES)
