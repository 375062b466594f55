"""The one registry of vector-Jacobian products (VJPs), grouped by the sections of tnp's functions.

A rule is curried, as in HIPS autograd: the outer call gets the forward output and inputs and
returns the function that maps the output cotangent ``g`` to the input's cotangent::

    defvjp("sin", lambda ans, x: lambda g: g * tnp.cos(x))

One rule per positional argument (``None``: no gradient for that argument); keyword rules by
name; ``defvjp_argnum`` for functions with any number of array arguments (``einsum``). A rule for
an argument that is a list of arrays (``concatenate``) returns a list of cotangents.

``nondifferentiable(name, reason=...)`` declares a function whose output is integer/boolean or
whose derivative is zero almost everywhere (``floor``, ``sign``); ``no_array_output`` is for
functions that return no array at all. Every function in ``tnp.REGISTRY`` must be in one of
these tables: ``missing()`` lists those that are not, and a test fails on any.
"""
from __future__ import annotations

import sys

import numpy as _np

import tnp
from tnp.extend import is_inexact as _is_inexact

__all__ = ["defvjp", "defvjp_argnum", "nondifferentiable", "no_array_output", "unbroadcast",
           "get_rule", "is_nondifferentiable", "missing", "VJPS", "NONDIFF", "NO_ARRAY_OUTPUT"]


class Rule:
    __slots__ = ("positional", "keyword", "argnum", "section")

    def __init__(self, positional, keyword, argnum, section):
        self.positional = positional   # tuple of curried rules (or None) by position
        self.keyword = keyword         # dict name -> curried rule
        self.argnum = argnum           # rule(argnum, ans, *args, **kwargs) for any position
        self.section = section

    def for_position(self, i):
        if self.argnum is not None:
            return lambda ans, *a, **k: self.argnum(i, ans, *a, **k)
        if i < len(self.positional):
            return self.positional[i]
        return None

    def for_keyword(self, name):
        return self.keyword.get(name)


VJPS: dict = {}              # name -> Rule
NONDIFF: dict = {}           # name -> reason (integer/boolean output or zero derivative a.e.)
NO_ARRAY_OUTPUT: dict = {}   # name -> reason (returns shapes, dtypes, strings, None...)

_section_of_module: dict = {}


def section(name):
    """Set the section the calling module's following rules belong to (one per tnp section).

    Kept per module, so a rules module that imports another one keeps its own section."""
    _section_of_module[sys._getframe(1).f_globals.get("__name__")] = name


def _current_section():
    return _section_of_module.get(sys._getframe(2).f_globals.get("__name__"), "misc")


def _names(name):
    return name if isinstance(name, (list, tuple)) else (name,)


def defvjp(name, *rules, **keyword_rules):
    """Define the VJP rules of ``name`` (a tnp registry name such as ``'sin'`` or ``'linalg.inv'``)."""
    sec = _current_section()
    for n in _names(name):
        VJPS[n] = Rule(tuple(rules), dict(keyword_rules), None, sec)


def defvjp_argnum(name, rule):
    """``rule(argnum, ans, *args, **kwargs) -> (g -> cotangent)`` for every argument position."""
    sec = _current_section()
    for n in _names(name):
        VJPS[n] = Rule((), {}, rule, sec)


def nondifferentiable(name, reason):
    """Declare ``name`` non-differentiable: integer/boolean output, or zero derivative a.e."""
    for n in _names(name):
        NONDIFF[n] = reason


def no_array_output(name, reason="returns no array"):
    for n in _names(name):
        NO_ARRAY_OUTPUT[n] = reason


def get_rule(name):
    return VJPS.get(name)


def is_nondifferentiable(name):
    return name in NONDIFF or name in NO_ARRAY_OUTPUT


def missing():
    """Names in tnp's registry with neither a VJP nor a declaration."""
    from . import vjps  # noqa: F401  (fills the tables)

    return sorted(n for n in tnp.REGISTRY
                  if n not in VJPS and n not in NONDIFF and n not in NO_ARRAY_OUTPUT)


# ----------------------------------------------------------------------------- helpers for rules
def unbroadcast(g, target):
    """Sum ``g`` down to the shape of ``target`` (an array or a shape), undoing broadcasting."""
    shape = _np.shape(target) if not isinstance(target, tuple) else target
    if isinstance(target, tnp.ndarray):
        shape = target.shape
    gs = g.shape
    if gs == shape:
        return g
    nd = len(gs) - len(shape)
    if nd > 0:
        g = tnp.sum(g, axis=tuple(range(nd)))
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if b == 1 and a != 1)
    if axes:
        g = tnp.sum(g, axis=axes, keepdims=True)
    return tnp.reshape(g, shape) if g.shape != shape else g


def dtype_of(x):
    d = getattr(x, "dtype", None)
    if d is None:
        return _np.result_type(x)
    return d


def is_float(x):
    """Whether ``x``'s dtype carries gradients: floating (bfloat16 included) or complex."""
    return _is_inexact(dtype_of(x))
