"""Compiled functions: ``tt.function`` (TF 2.4's ``tf.function``) and ``tt.config``'s
``run_functions_eagerly``, on tnp's compiler (``tnp.jit``), with AutoGraph and control flow
(``tt.cond``, ``tt.while_loop``, ``tt.switch_case``, ``tt.map_fn``); ``tt.vectorized_map`` on
``tnp.vmap``. See ``docs/compile.md``."""
from . import autograph, config
from .control_flow import cond, map_fn, range, switch_case, while_loop   # noqa: A004
from .def_function import ConcreteFunction, Function, function, step_function
from .vectorized import vectorized_map

__all__ = ["function", "Function", "ConcreteFunction", "config", "vectorized_map",
           "step_function", "autograph", "cond", "while_loop", "switch_case", "map_fn",
           "range"]
