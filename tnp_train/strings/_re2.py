"""RE2 patterns and rewrites (TF's ``tf.strings.regex_*``) run by Python's ``re``.

The two syntaxes share most of their text, not all of its meaning. What RE2 means and Python
reads otherwise is rewritten here (``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII in RE2; ``$``
is the end of the text, not also the place before a final newline; ``[[:alpha:]]`` is a POSIX
class; ``\\Q...\\E`` quotes; ``\\z`` ends the text; ``x{,3}`` is literal text). What Python
cannot do as RE2 does (Unicode classes ``\\p``, the ungreedy flag ``U``, ``\\C``) and what RE2
rejects (look-around, back references) raise a ValueError naming the construct, never a match
of something else.
"""
from __future__ import annotations

import re

__all__ = ["compile_re2", "rewrite_function", "global_replace"]

_WORD = "0-9A-Za-z_"
_CLASS = {"d": "0-9", "w": _WORD, "s": "\\t\\n\\f\\r "}
_POSIX = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
          "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
          "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ",
          "upper": "A-Z", "word": _WORD, "xdigit": "0-9A-Fa-f"}
_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_CACHE: dict = {}
# bytes that are not UTF-8 reach the pattern as these (surrogateescape); RE2 matches no
# character class, negated or not, and no "." on such a byte
_RAW = "\udc80-\udcff"


def _unsupported(pattern, what):
    return ValueError(f"regex pattern {pattern!r}: {what}")


def _class_body(pattern, i, who):
    """The translated body of the character class starting after ``[`` at ``i``, and the
    index after its ``]``."""
    out = []
    if pattern.startswith("^", i):
        out.append("^" + _RAW)
        i += 1
    first = True
    while i < len(pattern):
        c = pattern[i]
        if c == "]" and not first:
            return "".join(out), i + 1
        if c == "]" or c in "&~|":
            # a "]" first in the class is literal in both; RE2 reads "&&", "~~" and "||" as
            # text where Python's sets may one day read operators
            out.append("\\" + c)
            i += 1
            first = False
            continue
        first = False
        if c == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end >= 0 else ""
            if name.startswith("^") or name not in _POSIX:
                raise _unsupported(pattern, f"the POSIX class [:{name}:] is not supported")
            out.append(_POSIX[name])
            i = end + 2
        elif c == "\\":
            e = pattern[i + 1:i + 2]
            if e in _CLASS:
                out.append(_CLASS[e])
            elif e in ("D", "W", "S"):
                raise _unsupported(pattern, f"\\{e} inside a character class is not supported")
            elif e in ("p", "P", "C"):
                raise _unsupported(pattern, f"RE2's \\{e} (Unicode classes) is not supported")
            elif e == "x" and pattern.startswith("{", i + 2):
                end = pattern.index("}", i)
                out.append(re.escape(chr(int(pattern[i + 3:end], 16))))
                i = end + 1
                continue
            else:
                out.append(pattern[i:i + 2])
            i += 2
        elif c == "[":
            out.append("\\[")     # literal in RE2; Python warns of nested sets
            i += 1
        else:
            out.append(c)
            i += 1
    raise _unsupported(pattern, "missing ]")


def translate(pattern):
    """``pattern`` (RE2 syntax, a str) as a Python ``re`` pattern with the same meaning."""
    out = []
    i = 0
    multiline = dotall = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            e = pattern[i + 1:i + 2]
            if e == "":
                raise _unsupported(pattern, "trailing \\")
            if e in _CLASS:
                out.append(f"[{_CLASS[e]}]")
            elif e in ("D", "W", "S"):
                out.append(f"[^{_CLASS[e.lower()]}{_RAW}]")
            elif e == "b":
                out.append(_BOUNDARY)
            elif e == "B":
                out.append(_NOT_BOUNDARY)
            elif e == "z":
                out.append("\\Z")
            elif e == "Z":
                raise _unsupported(pattern, "\\Z is not RE2 syntax (use \\z or $)")
            elif e in ("p", "P", "C"):
                raise _unsupported(pattern, f"RE2's \\{e} (Unicode classes, single bytes) is "
                                            f"not supported")
            elif e.isdigit() and e != "0":
                raise _unsupported(pattern, f"back references (\\{e}) are not RE2 syntax")
            elif e == "Q":
                end = pattern.find("\\E", i + 2)
                end = len(pattern) if end < 0 else end
                out.append(re.escape(pattern[i + 2:end]))
                i = end + 2
                continue
            elif e == "x" and pattern.startswith("{", i + 2):
                end = pattern.index("}", i)
                out.append(re.escape(chr(int(pattern[i + 3:end], 16))))
                i = end + 1
                continue
            else:
                out.append(pattern[i:i + 2])
            i += 2
        elif c == "[":
            body, i = _class_body(pattern, i + 1, pattern)
            out.append(f"[{body}]")
        elif c == "$":
            out.append("$" if multiline else "\\Z")
            i += 1
        elif c == ".":
            out.append(f"[^{_RAW}]" if dotall else f"[^\\n{_RAW}]")
            i += 1
        elif c == "{" and pattern.startswith("{,", i):
            out.append("\\{")     # RE2 reads x{,n} as text; Python as x{0,n}
            i += 1
        elif c == "(" and pattern.startswith("(?", i):
            m = re.match(r"\(\?([imsU]*)(?:-([imsU]*))?([:)])", pattern[i:])
            if m is None:
                if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
                    raise _unsupported(pattern, "look-around assertions are not RE2 syntax")
                if pattern.startswith(("(?P<", "(?<"), i):
                    out.append("(?P<")
                    i += 4 if pattern.startswith("(?P<", i) else 3
                    continue
                raise _unsupported(pattern, f"the group {pattern[i:i + 4]!r}... is not supported")
            if "U" in m.group(0):
                raise _unsupported(pattern, "RE2's ungreedy flag U is not supported")
            if m.group(3) == ")":     # flags for the rest of the pattern
                multiline = (multiline or "m" in (m.group(1) or "")) and \
                    "m" not in (m.group(2) or "")
                dotall = (dotall or "s" in (m.group(1) or "")) and "s" not in (m.group(2) or "")
            out.append(m.group(0))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def compile_re2(pattern):
    """The compiled Python pattern for the RE2 ``pattern`` (str or bytes, read as UTF-8)."""
    if isinstance(pattern, bytes):
        pattern = pattern.decode("utf-8")
    if not isinstance(pattern, str):
        raise TypeError(f"regex pattern: expected a string, got {type(pattern).__name__}")
    rx = _CACHE.get(pattern)
    if rx is None:
        try:
            rx = re.compile(translate(pattern))
        except re.error as e:
            raise ValueError(f"Invalid pattern: {pattern!r}, error: {e}") from None
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[pattern] = rx
    return rx


def rewrite_function(rewrite, groups, pattern):
    """``match -> str``: RE2's rewrite string (``\\0``-``\\9`` the groups, ``\\\\`` a backslash,
    everything else literal) for a pattern of ``groups`` groups."""
    if isinstance(rewrite, bytes):
        rewrite = rewrite.decode("utf-8")
    parts = []        # str pieces and group numbers
    i = 0
    text = []
    while i < len(rewrite):
        c = rewrite[i]
        if c == "\\":
            e = rewrite[i + 1:i + 2]
            if e.isdigit():
                n = int(e)
                if n > groups:
                    raise ValueError(f"Rewrite schema error: '\\{n}' in {rewrite!r} asks for "
                                     f"group {n}, the pattern {pattern!r} has {groups}")
                parts.append("".join(text))
                text = []
                parts.append(n)
            elif e == "\\":
                text.append("\\")
            else:
                raise ValueError(f"invalid rewrite pattern: {rewrite!r} (a backslash must be "
                                 f"followed by a digit or a backslash)")
            i += 2
        else:
            text.append(c)
            i += 1
    parts.append("".join(text))

    def apply(m):
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)
    return apply


def global_replace(rx, s, rewrite, replace_global):
    """RE2's ``GlobalReplace`` (or ``Replace``, the first match): an empty match right where
    the previous match ended is skipped, unlike Python's ``re.sub``."""
    out = []
    p, last_end, count = 0, -1, 0
    while p <= len(s):
        m = rx.search(s, p)
        if m is None:
            break
        start, end = m.span()
        out.append(s[p:start])
        if start == end and start == last_end:
            # an empty match where the last one ended: keep one character, search on from there
            out.append(s[p:p + 1])
            p += 1
            continue
        out.append(rewrite(m))
        p = last_end = end
        count += 1
        if not replace_global:
            break
    out.append(s[p:])
    return "".join(out) if count else s
