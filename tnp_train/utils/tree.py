"""Nested structures as ``tf.nest`` (TF 2.4) walks them: flatten, pack, map and compare.

A structure is a list, a tuple (namedtuples included) or a mapping, nested to any depth;
anything else is a leaf: tnp and NumPy arrays, Variables, ``None``, strings and bytes, sets,
dataclasses. Mapping entries are visited in sorted key order whatever their insertion order
(keys that cannot be sorted are a TypeError, as in ``tf.nest``), and are packed back into the
template's mapping type, in the template's own key order. Differences from ``tf.nest``: no
``expand_composites``, and ``attrs`` classes and dict views are leaves.

``tf.data`` takes lists for values rather than structure; :mod:`tnp_train.data` converts them
before its structures reach these functions.
"""
from __future__ import annotations

import collections
from collections import abc as _abc

__all__ = ["is_nested", "flatten", "pack_sequence_as", "map_structure", "assert_same_structure",
           "flatten_up_to"]

_LEAF, _SEQUENCE, _NAMEDTUPLE, _MAPPING = 0, 1, 2, 3
_CACHE_LIMIT = 4096   # types remembered at most: a program may make classes in a loop


class _Kinds(dict):
    """type -> kind; a missing type is classified on its first lookup, so the walks below
    cost one dict lookup per element."""

    def __missing__(self, t):
        if issubclass(t, tuple):
            fields = getattr(t, "_fields", None)
            k = _NAMEDTUPLE if isinstance(fields, tuple) and \
                all(isinstance(f, str) for f in fields) else _SEQUENCE
        elif issubclass(t, list):
            k = _SEQUENCE
        elif issubclass(t, _abc.Mapping):
            k = _MAPPING
        else:
            k = _LEAF
        if len(self) < _CACHE_LIMIT:
            self[t] = k
        return k


_kinds = _Kinds({list: _SEQUENCE, tuple: _SEQUENCE, dict: _MAPPING,
                 collections.OrderedDict: _MAPPING, collections.defaultdict: _MAPPING,
                 type(None): _LEAF, int: _LEAF, float: _LEAF, str: _LEAF, bytes: _LEAF})


def is_nested(x):
    """Whether ``x`` is a list, tuple or mapping (``tf.nest.is_nested``)."""
    return _kinds[type(x)] != _LEAF


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError as e:
        raise TypeError(f"nested structure: a dict's keys must be sortable (tf.nest visits them "
                        f"in sorted order); got keys {list(mapping)!r} ({e})") from None


def _children(x, kind):
    if kind == _MAPPING:
        return [x[k] for k in _sorted_keys(x)]
    return x


def flatten(structure):
    """The leaves of ``structure`` in ``tf.nest`` order (``tf.nest.flatten``); a leaf gives
    ``[leaf]``."""
    kind = _kinds[type(structure)]
    if not kind:
        return [structure]
    out = []
    _flatten_into(structure, kind, out)
    return out


def _flatten_into(x, kind, out):
    kinds = _kinds
    if kind == _MAPPING:
        for key in _sorted_keys(x):
            v = x[key]
            k = kinds[type(v)]
            if k:
                _flatten_into(v, k, out)
            else:
                out.append(v)
        return
    for v in x:
        k = kinds[type(v)]
        if k:
            _flatten_into(v, k, out)
        else:
            out.append(v)


def _mapping_like(instance, by_key):
    """A mapping of ``instance``'s type with ``by_key``'s values, in ``instance``'s key order."""
    t = type(instance)
    if t is dict:
        return {k: by_key[k] for k in instance}
    if isinstance(instance, collections.defaultdict):
        out = collections.defaultdict(instance.default_factory)
        for k in instance:
            out[k] = by_key[k]
        return out
    try:
        return t((k, by_key[k]) for k in instance)
    except TypeError as e:
        raise TypeError(f"pack_sequence_as: cannot make a {t.__name__} like {instance!r}: its "
                        f"constructor must take an iterable of (key, value) pairs ({e})") from None


def _packed(s, kind, flat, i):
    """(``s`` rebuilt with leaves from ``flat[i:]``, the index after the last one used)."""
    kinds = _kinds
    if kind == _MAPPING:
        by_key = {}
        for key in _sorted_keys(s):
            v = s[key]
            k = kinds[type(v)]
            if k:
                by_key[key], i = _packed(v, k, flat, i)
            else:
                by_key[key] = flat[i]
                i += 1
        return _mapping_like(s, by_key), i
    items = []
    for v in s:
        k = kinds[type(v)]
        if k:
            v, i = _packed(v, k, flat, i)
            items.append(v)
        else:
            items.append(flat[i])
            i += 1
    t = type(s)
    if t is list:
        return items, i
    if t is tuple:
        return tuple(items), i
    return (t(*items) if kind == _NAMEDTUPLE else t(items)), i


def _flat_sequence(s):
    """Whether ``s`` is a plain list or tuple of leaves (the common case, packed in one step)."""
    t = type(s)
    if t is not tuple and t is not list:
        return False
    kinds = _kinds
    for v in s:
        if kinds[type(v)]:
            return False
    return True


def _pack(structure, kind, flat):
    """``structure`` rebuilt from ``flat``, whose length the caller has checked."""
    if _flat_sequence(structure):
        return tuple(flat) if type(structure) is tuple else list(flat)
    return _packed(structure, kind, flat, 0)[0]


def pack_sequence_as(structure, flat_sequence):
    """``structure`` rebuilt with the leaves of ``flat_sequence`` in :func:`flatten` order
    (``tf.nest.pack_sequence_as``)."""
    if not isinstance(flat_sequence, (list, tuple)):
        raise TypeError(f"pack_sequence_as: flat_sequence must be a list or tuple, got "
                        f"{type(flat_sequence).__name__}: {_short(repr(flat_sequence))}")
    n = len(flat_sequence)
    kind = _kinds[type(structure)]
    if not kind:
        if n != 1:
            raise ValueError(f"pack_sequence_as: the structure is a single leaf "
                             f"({type(structure).__name__}) but flat_sequence has {n} items")
        return flat_sequence[0]
    if _flat_sequence(structure):
        used = len(structure)
        packed = tuple(flat_sequence) if type(structure) is tuple else list(flat_sequence)
    else:
        try:
            packed, used = _packed(structure, kind, flat_sequence, 0)
        except IndexError:
            used = None
    if used != n:
        raise ValueError(f"pack_sequence_as: the structure {_shape_repr(structure)} has "
                         f"{len(flatten(structure))} leaves but flat_sequence has {n} items")
    return packed


def map_structure(func, *structures, check_types=True):
    """``func`` applied to the leaves at each position of ``structures``, which must be nested
    alike, packed as the first (``tf.nest.map_structure``); ``func`` sees them in
    :func:`flatten` order."""
    if not callable(func):
        raise TypeError(f"map_structure: func must be callable, got {func!r}")
    if not structures:
        raise ValueError("map_structure: must provide at least one structure")
    first = structures[0]
    kind = _kinds[type(first)]
    if len(structures) == 1:
        return _pack(first, kind, [func(x) for x in flatten(first)]) if kind else func(first)
    for other in structures[1:]:
        _check_same(first, other, check_types, "map_structure")
    if not kind:
        return func(*structures)
    return _pack(first, kind, [func(*xs) for xs in zip(*[flatten(s) for s in structures])])


def assert_same_structure(nest1, nest2, check_types=True):
    """Raise unless ``nest1`` and ``nest2`` are nested alike (``tf.nest.assert_same_structure``):
    ValueError for a different number of entries, other keys, or a leaf against a structure;
    TypeError (with ``check_types``) for different sequence types. Two mappings, two lists, or
    two namedtuples of the same name and fields count as the same type, as in TF."""
    _check_same(nest1, nest2, check_types, "assert_same_structure")


def _same_type(a, ka, b, kb):
    if type(a) is type(b) or ka == kb == _MAPPING or (isinstance(a, list) and isinstance(b, list)):
        return True
    return ka == kb == _NAMEDTUPLE and type(a).__name__ == type(b).__name__ and \
        a._fields == b._fields


def _check_same(a, b, check_types, op):
    problem = _difference(a, b, check_types)
    if problem is not None:
        exc, detail, path = problem
        raise exc(f"{op}: the two structures don't have the same nested structure: "
                  f"{_shape_repr(a)} and {_shape_repr(b)}; at {_path(path)} {detail}")


def _difference(a, b, check_types):
    """None, or (exception type, what differs, the path to it from the inside out)."""
    kinds = _kinds
    ka, kb = kinds[type(a)], kinds[type(b)]
    if not ka or not kb:
        if ka or kb:
            return ValueError, f"the first has {_what(a, ka)} and the second {_what(b, kb)}", []
        return None
    if check_types and not _same_type(a, ka, b, kb):
        return TypeError, (f"the first has a {type(a).__name__} and the second a "
                           f"{type(b).__name__}"), []
    if len(a) != len(b):
        return ValueError, f"the first has {len(a)} entries and the second {len(b)}", []
    if ka == kb == _MAPPING:
        if set(a) != set(b):
            return ValueError, (f"the first has the keys {_sorted_keys(a)} and the second "
                                f"{_sorted_keys(b)}"), []
        pairs = ((k, a[k], b[k]) for k in _sorted_keys(a))
    else:   # without check_types a mapping pairs with a sequence by position, as in TF
        pairs = zip(range(len(a)), _children(a, ka), _children(b, kb))
    for k, x, y in pairs:
        if kinds[type(x)] or kinds[type(y)]:
            problem = _difference(x, y, check_types)
            if problem is not None:
                problem[2].append(k)
                return problem
    return None


def flatten_up_to(shallow_tree, input_tree, check_types=True):
    """The parts of ``input_tree`` at the leaves of ``shallow_tree``, in :func:`flatten` order
    (``nest.flatten_up_to`` of TF 2.4): ``input_tree`` must have ``shallow_tree``'s structure
    down to its leaves, and anything below them. TypeError for a leaf or another sequence type
    (with ``check_types``) where ``shallow_tree`` has a structure, ValueError for another length
    or other keys."""
    out = []
    problem = _up_to(shallow_tree, input_tree, check_types, out)
    if problem is not None:
        exc, detail, path = problem
        raise exc(f"flatten_up_to: the input {_short(repr(input_tree))} does not have the "
                  f"structure {_shape_repr(shallow_tree)}; at {_path(path)} {detail}")
    return out


def _up_to(s, x, check_types, out):
    kinds = _kinds
    ks = kinds[type(s)]
    if not ks:
        out.append(x)
        return None
    kx = kinds[type(x)]
    if not kx or (ks == _MAPPING) != (kx == _MAPPING) or \
            (check_types and not isinstance(x, type(s)) and not _same_type(s, ks, x, kx)):
        return TypeError, (f"the input has {_what(x, kx)} where the structure has "
                           f"{_what(s, ks)}"), []
    if len(x) != len(s):
        return ValueError, (f"the input has {len(x)} entries where the structure has "
                            f"{len(s)}"), []
    if ks == _MAPPING:
        missing = [k for k in s if k not in x]
        if missing:
            return ValueError, (f"the input has the keys {sorted(map(repr, x))} where the "
                                f"structure has {sorted(map(repr, s))}"), []
        pairs = ((k, s[k], x[k]) for k in _sorted_keys(s))
    else:
        pairs = zip(range(len(s)), s, x)
    for k, a, b in pairs:
        problem = _up_to(a, b, check_types, out)
        if problem is not None:
            problem[2].append(k)
            return problem
    return None


# ---------------------------------------------------------------------------- messages
def _what(x, kind):
    if not kind:
        return f"a leaf ({type(x).__name__})"
    return f"a {type(x).__name__} of {len(x)}"


def _path(parts):
    return "".join(f"[{p!r}]" for p in reversed(parts)) or "the top"


def _short(text, limit=200):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _shape_repr(x):
    """``x`` with its leaves written ``.`` (as TF's messages show a structure)."""
    return _short(_shape_text(x))


def _shape_text(x):
    kind = _kinds[type(x)]
    if not kind:
        return "."
    if kind == _MAPPING:
        return "{" + ", ".join(f"{k!r}: {_shape_text(v)}" for k, v in x.items()) + "}"
    inner = [_shape_text(v) for v in x]
    if kind == _NAMEDTUPLE:
        fields = ", ".join(f"{f}={v}" for f, v in zip(x._fields, inner))
        return f"{type(x).__name__}({fields})"
    if isinstance(x, list):
        return "[" + ", ".join(inner) + "]"
    return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
