"""``tt.config``'s switch for compiled functions (TF 2.4's ``tf.config.run_functions_eagerly``).

One process-wide flag, as TF's: while it is on, every ``tt.function`` (and the step a compiled
``fit`` runs) calls its Python function directly, op by op, for debugging.
"""
from __future__ import annotations

__all__ = ["run_functions_eagerly", "functions_run_eagerly"]

_eagerly = [False]


def run_functions_eagerly(run_eagerly):
    """Mirrors ``tf.config.run_functions_eagerly(run_eagerly)``: True runs every
    ``tt.function`` as plain Python (nothing traced or compiled) until it is set back to False."""
    _eagerly[0] = bool(run_eagerly)


def functions_run_eagerly():
    """Mirrors ``tf.config.functions_run_eagerly()``: whether the flag above is on."""
    return _eagerly[0]
