"""What a tape records: one :class:`Node` per operation, and the small functions that read the
arrays out of an operation's arguments and result.

The three parts of the tape share this format and nothing else: :mod:`.recording` makes nodes
for the operations it sees, :mod:`.inplace` makes the nodes of in-place writes (and of the views
they change), :mod:`.backward` walks them in reverse. It sits below all three, so none of them
has to import another to know what a node is.
"""
from __future__ import annotations

import numpy as _np

from tnp import ndarray
from tnp.extend import storage as _storage, version as version_of

from ..utils.tree import flatten

__all__ = ["Node", "arrays_in", "versions_of", "is_arraylike"]


class Node:
    __slots__ = ("name", "args", "kwargs", "result", "outputs", "inputs", "versions", "rule",
                 "loose", "inplace")

    def __init__(self, name, args, kwargs, result, outputs, inputs, versions, rule, loose=(),
                 inplace=False):
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.result = result
        self.outputs = outputs      # arrays produced (their ids carry cotangents)
        self.inputs = inputs        # [(position or keyword, index in a list or None, array)]
        self.versions = versions    # [(array, version)]: values the rule reads
        self.rule = rule
        self.loose = loose          # [(array, version)]: outputs the rule does not read
        self.inplace = inplace      # outputs are new versions of objects recorded before


def is_arraylike(x):
    return isinstance(x, (ndarray, _np.ndarray))


def arrays_in(result):
    """The array outputs of an operation, in order (tuples and lists, nested: histogramdd's
    ``(counts, [edges...])``)."""
    if isinstance(result, ndarray):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(arrays_in(r))
        return out
    return []


def versions_of(args, saved, skip=None):
    """(backend array, version) of the arrays among ``args`` (positions in ``saved``, or all
    when it is None), lists and tuples included; ``skip``: ids of arrays left out."""
    versions = []
    for i, a in enumerate(args):
        if saved is not None and i not in saved:
            continue
        if isinstance(a, ndarray):
            if skip and id(a) in skip:
                continue
            b = _storage(a)
            versions.append((b, version_of(b)))
        elif type(a) is _np.ndarray:
            versions.append((a, version_of(a)))
        elif type(a) is list or type(a) is tuple:
            for e in flatten(a):
                if isinstance(e, ndarray):
                    b = _storage(e)
                    versions.append((b, version_of(b)))
                elif type(e) is _np.ndarray:
                    versions.append((e, version_of(e)))
    return versions
