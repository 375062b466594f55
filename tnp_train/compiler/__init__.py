"""Compiled functions: ``tt.function`` (TF 2.4's ``tf.function``) and ``tt.config``'s
``run_functions_eagerly``, on tnp's compiler (``tnp.jit``); ``tt.vectorized_map`` on
``tnp.vmap``. See ``docs/compile.md``."""
from . import config
from .def_function import ConcreteFunction, Function, function, step_function
from .vectorized import vectorized_map

__all__ = ["function", "Function", "ConcreteFunction", "config", "vectorized_map",
           "step_function"]
