"""``tt.strings``: the ``tf.strings`` operations a text pipeline maps over, on NumPy and tnp
arrays of strings (see docs/strings.md).

Each mirrors the ``tf.strings`` function of its name. The differences, everywhere: strings come
back of the input's kind (``bytes`` for bytes, ``str`` for str; TF always gives bytes) and
the container is the caller's (a NumPy array for a NumPy array, else a tnp array on the CPU);
a ragged result (``split``, ``unicode_split``, ``bytes_split``, ``ngrams`` of rows) is TF's
``RaggedTensor.to_list()``: nested Python lists of the input's shape, a 1-D array for a
scalar input. Bad input raises ValueError where TF raises InvalidArgumentError.
"""
from __future__ import annotations

import codecs
import re

import numpy as _np

import tnp

from ._arrays import StringArgument, as_text, from_text, ragged_result, string_array, \
    string_result
from ._re2 import compile_re2, global_replace, rewrite_function

__all__ = ["lower", "upper", "strip", "length", "regex_replace", "regex_full_match", "split",
           "unicode_split", "bytes_split", "join", "reduce_join", "substr", "to_number",
           "as_string", "ngrams"]

_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = "abcdefghijklmnopqrstuvwxyz"
_TO_LOWER = str.maketrans(_ASCII_UPPER, _ASCII_LOWER)
_TO_UPPER = str.maketrans(_ASCII_LOWER, _ASCII_UPPER)
_WHITESPACE = " \t\n\v\f\r"
_WHITESPACE_RUN = re.compile("[ \t\n\v\f\r]+")


def _encoding(encoding, who):
    if encoding in ("", None):
        return ""
    if str(encoding).lower().replace("-", "") != "utf8":
        raise ValueError(f"{who}: encoding must be '' or 'utf-8', got {encoding!r}")
    return "utf-8"


def _full_case(s, method):
    # TF's "utf-8" case mapping is ICU's full one, as Python's (German sharp s to "SS"); bytes
    # that are not UTF-8 become U+FFFD, as there
    if isinstance(s, bytes):
        return getattr(s.decode("utf-8", "replace"), method)().encode("utf-8")
    return getattr(s, method)()


def lower(input, encoding=""):
    """Mirrors ``tf.strings.lower(input, encoding="")``: ASCII letters lowered; with
    ``encoding="utf-8"`` every letter (Unicode's full case mapping)."""
    arg = StringArgument(input, "strings.lower")
    if _encoding(encoding, "strings.lower"):
        return string_result(arg, lambda s: _full_case(s, "lower"))
    return string_result(arg, lambda s: s.lower() if isinstance(s, bytes) else
                         s.translate(_TO_LOWER))


def upper(input, encoding=""):
    """Mirrors ``tf.strings.upper(input, encoding="")``: ASCII letters raised; with
    ``encoding="utf-8"`` every letter (Unicode's full case mapping)."""
    arg = StringArgument(input, "strings.upper")
    if _encoding(encoding, "strings.upper"):
        return string_result(arg, lambda s: _full_case(s, "upper"))
    return string_result(arg, lambda s: s.upper() if isinstance(s, bytes) else
                         s.translate(_TO_UPPER))


def strip(input):
    """Mirrors ``tf.strings.strip``: leading and trailing ASCII whitespace removed."""
    arg = StringArgument(input, "strings.strip")
    return string_result(arg, lambda s: s.strip(_WHITESPACE.encode() if isinstance(s, bytes)
                                                else _WHITESPACE))


def _numbers(arg, fn, dtype):
    values = [fn(v) for v in arg.host.ravel().tolist()]
    return arg.wrap(_np.array(values, dtype=dtype).reshape(arg.host.shape))


def _utf8_length(b):
    # the bytes that start a character (not 10xxxxxx continuation bytes), as TF counts
    return sum((c & 0xC0) != 0x80 for c in b)


def length(input, unit="BYTE"):
    """Mirrors ``tf.strings.length(input, unit="BYTE")``: int32 lengths in bytes (a str counts
    its UTF-8 bytes) or, with ``unit="UTF8_CHAR"``, in characters."""
    arg = StringArgument(input, "strings.length")
    if unit == "BYTE":
        return _numbers(arg, lambda s: len(s if isinstance(s, bytes) else
                                           s.encode("utf-8", "surrogateescape")), _np.int32)
    if unit == "UTF8_CHAR":
        return _numbers(arg, lambda s: _utf8_length(s) if isinstance(s, bytes) else
                        _utf8_length(s.encode("utf-8", "surrogateescape")), _np.int32)
    raise ValueError(f"strings.length: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")


def regex_replace(input, pattern, rewrite, replace_global=True):
    """Mirrors ``tf.strings.regex_replace(input, pattern, rewrite, replace_global=True)``:
    ``pattern`` in RE2 syntax, ``rewrite`` with RE2's ``\\1`` (``\\0`` the match, ``\\\\`` a
    backslash). RE2 syntax Python's ``re`` cannot honour (``\\p{...}``, the ``U`` flag) is a
    ValueError."""
    arg = StringArgument(input, "strings.regex_replace")
    rx = compile_re2(pattern)
    fn = rewrite_function(rewrite, rx.groups, pattern)
    return string_result(arg, lambda s: from_text(
        global_replace(rx, as_text(s), fn, replace_global), s))


def regex_full_match(input, pattern):
    """Mirrors ``tf.strings.regex_full_match(input, pattern)``: whether all of each string
    matches the RE2 ``pattern`` (bool)."""
    arg = StringArgument(input, "strings.regex_full_match")
    rx = compile_re2(pattern)
    return _numbers(arg, lambda s: rx.fullmatch(as_text(s)) is not None, bool)


def _split_one(s, sep, maxsplit):
    # TF's SplitV2: Python's str.split, but a maxsplit reached on whitespace keeps the rest as
    # the last piece even when it is empty, and maxsplit=0 gives the string itself
    t = as_text(s)
    if maxsplit == 0:
        parts = [t]
    elif sep is not None:
        parts = t.split(sep, maxsplit)
    else:
        parts = []
        rest = t.lstrip(_WHITESPACE)
        while rest:
            m = _WHITESPACE_RUN.search(rest)
            parts.append(rest if m is None else rest[:m.start()])
            rest = "" if m is None else rest[m.end():]
            if len(parts) == maxsplit:
                parts.append(rest)
                break
    return [from_text(p, s) for p in parts]


def split(input, sep=None, maxsplit=-1):
    """Mirrors ``tf.strings.split(input, sep=None, maxsplit=-1)``: ``sep=None`` (or "") splits
    on runs of ASCII whitespace, dropping empty pieces; a ``sep`` splits on each occurrence.
    The ragged result as TF's ``.to_list()`` (a 1-D array for a scalar input)."""
    arg = StringArgument(input, "strings.split")
    if sep is not None and not isinstance(sep, (str, bytes)):
        raise TypeError(f"strings.split: sep must be a string, got {type(sep).__name__}")
    sep = as_text(sep) if sep else None
    return ragged_result(arg, [_split_one(s, sep, int(maxsplit))
                               for s in arg.host.ravel().tolist()])


_ERRORS = ("strict", "replace", "ignore")


def _decoder_errors(errors, replacement_char):
    if errors not in _ERRORS:
        raise ValueError(f"strings.unicode_split: errors must be one of {_ERRORS}, got "
                         f"{errors!r}")
    if errors != "replace" or replacement_char == 0xFFFD:
        return errors
    name = f"tnp_train.strings.replace_{int(replacement_char)}"
    try:
        codecs.lookup_error(name)
    except LookupError:
        char = chr(int(replacement_char))
        codecs.register_error(name, lambda e: (char, e.end))
    return name


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533):
    """Mirrors ``tf.strings.unicode_split(input, input_encoding, errors="replace",
    replacement_char=65533)``: each string's characters, encoded as the input (bytes) or as
    str; invalid input with ``errors="strict"`` is a ValueError."""
    arg = StringArgument(input, "strings.unicode_split")
    handler = _decoder_errors(errors, replacement_char)
    try:
        codecs.lookup(input_encoding)
    except LookupError:
        raise ValueError(f"strings.unicode_split: unknown input_encoding "
                         f"{input_encoding!r}") from None

    def one(s):
        if isinstance(s, str):
            return list(s)
        try:
            text = s.decode(input_encoding, handler)
        except UnicodeDecodeError as e:
            raise ValueError(f"strings.unicode_split: invalid {input_encoding} input {s!r}: "
                             f"{e.reason} at byte {e.start}") from None
        return [c.encode(input_encoding) for c in text]
    return ragged_result(arg, [one(s) for s in arg.host.ravel().tolist()])


def bytes_split(input):
    """Mirrors ``tf.strings.bytes_split``: each string's bytes, as 1-byte ``bytes`` (a str is
    split into its UTF-8 bytes)."""
    arg = StringArgument(input, "strings.bytes_split")

    def one(s):
        b = s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")
        return [b[i:i + 1] for i in range(len(b))]
    return ragged_result(arg, [one(s) for s in arg.host.ravel().tolist()])


def _unify(values):
    """str pieces as bytes when any piece is bytes (TF's strings are bytes)."""
    if any(isinstance(v, bytes) for v in values):
        return [v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
                for v in values]
    return values


def _kind(args):
    kinds = {a.dtype_kind for a in args}
    if any(a.is_bytes for a in args):
        return "S" if kinds <= {"S", "U"} else "O"
    return "U" if kinds == {"U"} else "O"


def join(inputs, separator=""):
    """Mirrors ``tf.strings.join(inputs, separator="")``: the strings of ``inputs`` (a list of
    arrays of one shape, or scalars, which broadcast) concatenated elementwise."""
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (list, tuple)):
        raise TypeError(f"strings.join: inputs must be a list of string arrays, got "
                        f"{type(inputs).__name__}")
    args = [StringArgument(x, "strings.join") for x in inputs]
    if not args:
        raise ValueError("strings.join: inputs must not be empty")
    shapes = {a.host.shape for a in args if a.host.ndim}
    if len(shapes) > 1:
        raise ValueError(f"strings.join: the inputs must have one shape (or be scalars), got "
                         f"{sorted(shapes)}")
    shape = shapes.pop() if shapes else ()
    cols = [_np.broadcast_to(a.host, shape).ravel().tolist() for a in args]
    values = []
    for row in zip(*cols) if cols else ():
        parts = _unify(list(row) + [separator])
        values.append(parts[-1].join(parts[:-1]))
    owner = next((a for a in args if not a._tnp), args[0])
    return owner.wrap(string_array(values, shape, _kind(args)))


def reduce_join(inputs, axis=None, keepdims=False, separator=""):
    """Mirrors ``tf.strings.reduce_join(inputs, axis=None, keepdims=False, separator="")``:
    the strings along ``axis`` (all of them, in C order, for None) joined; with several axes,
    as TF, along the first listed, then the next."""
    arg = StringArgument(inputs, "strings.reduce_join")
    a = arg.host
    nd = a.ndim
    axes = tuple(range(nd)) if axis is None else tuple(
        int(x) for x in (axis if isinstance(axis, (list, tuple)) else [axis]))
    for x in axes:
        if not -nd <= x < max(nd, 1) or (nd == 0 and x != 0 and x != -1):
            raise ValueError(f"strings.reduce_join: axis {x} out of range for an input of rank "
                             f"{nd}")
    order = []
    for x in axes if nd else ():
        if x % nd not in order:
            order.append(x % nd)
    axes = sorted(order)
    kept = [d for d in range(nd) if d not in axes]
    # TF reduces the listed axes one after the other: the first listed varies fastest; None
    # joins in C order
    reduced = axes if axis is None else order[::-1]
    moved = _np.transpose(a.astype(object), kept + reduced) if nd else a.astype(object)
    out_shape = tuple(a.shape[d] for d in kept)
    rows = moved.reshape(out_shape + (-1,)) if nd else moved.reshape(1, 1)
    flat = rows.reshape(-1, rows.shape[-1])
    values = []
    for r in flat.tolist():
        parts = _unify(list(r) + [separator])
        values.append(parts[-1].join(parts[:-1]))
    if keepdims:
        out_shape = tuple(1 if d in axes else a.shape[d] for d in range(nd))
    return arg.strings(values, out_shape)


def substr(input, pos, len, unit="BYTE"):
    """Mirrors ``tf.strings.substr(input, pos, len, unit="BYTE")``: ``len`` bytes (or
    characters, ``unit="UTF8_CHAR"``) from ``pos`` (negative: from the end); a ``pos`` past
    either end is a ValueError, a ``len`` past the end (or negative) takes what is there. A
    str cut inside a character in "BYTE" units is a ValueError."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"strings.substr: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    arg = StringArgument(input, "strings.substr")
    pos_a, len_a = _np.asarray(pos), _np.asarray(len)
    for name, v in (("pos", pos_a), ("len", len_a)):
        if v.dtype.kind not in "iu":
            raise TypeError(f"strings.substr: {name} must be integers, got dtype {v.dtype}")
    try:
        shape = _np.broadcast_shapes(arg.host.shape, pos_a.shape, len_a.shape)
    except ValueError:
        raise ValueError(f"strings.substr: pos {pos_a.shape} and len {len_a.shape} do not "
                         f"match the input's shape {arg.host.shape}") from None
    strings = _np.broadcast_to(arg.host, shape).ravel().tolist()
    poss = _np.broadcast_to(pos_a, shape).ravel().tolist()
    lens = _np.broadcast_to(len_a, shape).ravel().tolist()
    values = []
    for i, (s, p, n) in enumerate(zip(strings, poss, lens)):
        units = (s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")) \
            if unit == "BYTE" else as_text(s)
        size = len_of(units)
        if p > size or p < -size:
            raise ValueError(f"strings.substr: pos {p} out of range for string {s!r} at index "
                             f"{i}")
        start = p if p >= 0 else size + p
        piece = units[start:] if n < 0 else units[start:start + n]
        if isinstance(s, str) and unit == "BYTE":
            try:
                piece = piece.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"strings.substr: bytes {start}..{start + _np.abs(n)} of the "
                                 f"str {s!r} cut a character; use bytes input or "
                                 f"unit='UTF8_CHAR'") from None
        elif isinstance(s, bytes) and unit == "UTF8_CHAR":
            piece = from_text(piece, s)
        values.append(piece)
    return arg.strings(values, shape)


len_of = len      # ``substr`` takes an argument named ``len``, as TF's does

_INT_TEXT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+[ \t\n\v\f\r]*\Z")
_FLOAT_TEXT = re.compile(r"[ \t\n\v\f\r]*[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|"
                         r"\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)[ \t\n\v\f\r]*\Z",
                         re.IGNORECASE)
_HEX_TEXT = re.compile(r"[ \t\n\v\f\r]*([+-]?0x[0-9a-f]*\.?[0-9a-f]*(?:p[+-]?[0-9]+)?)"
                       r"[ \t\n\v\f\r]*\Z", re.IGNORECASE)
_OUT_TYPES = {"float32": _np.float32, "float64": _np.float64, "int32": _np.int32,
              "int64": _np.int64}


def to_number(string_tensor, out_type="float32"):
    """Mirrors ``tf.strings.to_number(string_tensor, out_type=tf.float32)``: ``out_type`` one of
    float32, float64, int32, int64; a string that is not a number of that type (or overflows
    an integer type) is a ValueError, as TF's ``StringToNumberOp`` error."""
    try:
        name = _np.dtype(out_type).name
    except TypeError:
        name = str(getattr(out_type, "name", out_type))
    if name not in _OUT_TYPES:
        raise TypeError(f"strings.to_number: out_type must be float32, float64, int32 or "
                        f"int64, got {out_type!r}")
    dtype = _OUT_TYPES[name]
    arg = StringArgument(string_tensor, "strings.to_number")
    is_int = name.startswith("int")
    info = _np.iinfo(dtype) if is_int else None

    def one(s):
        t = as_text(s)
        if is_int:
            ok = _INT_TEXT.match(t) is not None
            v = int(t) if ok else None
            ok = ok and info.min <= v <= info.max
        else:
            ok = _FLOAT_TEXT.match(t) is not None
            v = float(t) if ok else None
            hexa = None if ok else _HEX_TEXT.match(t)     # strtod's hexadecimal floats
            if hexa is not None:
                try:
                    v, ok = float.fromhex(hexa.group(1)), True
                except (ValueError, OverflowError):
                    pass
        if not ok:
            raise ValueError(f"StringToNumberOp could not correctly convert string: {t}")
        return v
    return _numbers(arg, one, dtype)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill=""):
    """Mirrors ``tf.strings.as_string(input, precision=-1, scientific=False, shortest=False,
    width=-1, fill="")``: numbers and booleans as text, with TF's printf formats (floats
    ``%f``, ``%e`` with ``scientific``, ``%g`` with ``shortest``; booleans "true"/"false").
    The text is str (a number has no string kind; str is NumPy's)."""
    own_numpy = isinstance(input, _np.ndarray)
    a = _np.asarray(input.to_device(tnp.device("cpu")) if isinstance(input, tnp.ndarray)
                    else input)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"strings.as_string: expected a numeric or boolean input, got dtype "
                        f"{a.dtype}")
    if len_of(fill) > 1:
        raise ValueError(f"strings.as_string: fill must be at most one character, got {fill!r}")
    if scientific and shortest:
        raise ValueError("strings.as_string: cannot select both scientific and shortest "
                         "notation")
    if precision > -1 and a.dtype.kind not in "fc":
        raise ValueError(f"strings.as_string: precision not supported for dtype {a.dtype}")
    if (scientific or shortest) and a.dtype.kind not in "fc":
        raise ValueError(f"strings.as_string: scientific and shortest format not supported "
                         f"for dtype {a.dtype}")
    spec = "%" + fill + (str(width) if width > -1 else "")
    if a.dtype.kind in "fc":
        spec += (f".{precision}" if precision > -1 else "") + \
            ("e" if scientific else "g" if shortest else "f")
    elif a.dtype.kind in "iu":
        spec += "d"
    else:
        spec += "s"
    if a.dtype.kind == "b":
        values = [spec % ("true" if v else "false") for v in a.ravel().tolist()]
    elif a.dtype.kind == "c":
        values = [f"({spec % v.real},{spec % v.imag})" for v in a.ravel().tolist()]
    else:
        values = [spec % v for v in a.ravel().tolist()]
    out = string_array(values, a.shape, "U")
    if own_numpy:
        return out
    return tnp.asarray(out, device=tnp.device("cpu"))


def _ngram_rows(row, widths, separator, left, right, padding_width, preserve_short):
    # padding_width None: each width pads with width - 1 values (TF's default); 0: no padding
    out = []
    for w in widths:
        pad = w - 1 if padding_width is None else min(padding_width, w - 1)
        seq = [left] * pad + list(row) + [right] * pad
        out += [separator.join(seq[i:i + w]) for i in range(len(seq) - w + 1)]
    if preserve_short and not out and row:
        pad = padding_width or 0
        out.append(separator.join([left] * pad + list(row) + [right] * pad))
    return out


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False):
    """Mirrors ``tf.strings.ngrams(data, ngram_width, separator=" ", pad_values=None,
    padding_width=None, preserve_short_sequences=False)``: the n-grams of each row (the last
    axis of an array, or each innermost list of a ragged ``split`` result), all the n-grams of
    the first width, then the next."""
    widths = (ngram_width,) if isinstance(ngram_width, int) else tuple(ngram_width)
    if not widths or any(int(w) < 1 for w in widths):
        raise ValueError(f"strings.ngrams: ngram_width must be positive, got {ngram_width!r}")
    if padding_width is not None and pad_values is None:
        raise ValueError("strings.ngrams: pad_values must be provided if padding_width is set")
    if padding_width is not None and padding_width < 1:
        raise ValueError(f"strings.ngrams: padding_width must be greater than 0, got "
                         f"{padding_width}")
    if pad_values is None:
        left = right = ""
    elif isinstance(pad_values, (tuple, list)):
        if len_of(pad_values) != 2:
            raise ValueError("strings.ngrams: pad_values must be a string or a pair of strings")
        left, right = pad_values
    else:
        left = right = pad_values
    pw = 0 if pad_values is None else padding_width

    def rows_of(tokens):
        n = len_of(tokens)
        pieces = _unify(list(tokens) + [separator, left, right])
        return _ngram_rows(pieces[:n], widths, pieces[n], pieces[n + 1], pieces[n + 2], pw,
                           preserve_short_sequences)

    if isinstance(data, list):
        def walk(x):
            if not x or not isinstance(x[0], list):
                return rows_of(x)
            return [walk(y) for y in x]
        return walk(data)
    arg = StringArgument(data, "strings.ngrams")
    a = arg.host
    if a.ndim == 0:
        raise ValueError("strings.ngrams: data must have rank 1 or more, got a scalar")
    rows = [rows_of(r) for r in a.reshape(-1, a.shape[-1]).tolist()]
    n = len_of(rows[0]) if rows else 0
    flat = [v for r in rows for v in r]
    return arg.strings(flat, a.shape[:-1] + (n,))
