"""NumPy's own inner loops, callable from fused kernels.

A fused kernel computes exactly what eager NumPy computes only if each operation is NumPy's. For
the basic IEEE operations (``+``, ``*``, ``/``, ``sqrt``, comparisons) the kernel's own
arithmetic is exactly that; for everything else (``exp``, ``tanh``, ``log``, ``maximum``, integer
division, the reductions' summation order) the kernel calls the very loop NumPy would, on a tile
of its buffers. Each ufunc keeps its loops in a public C table (``PyUFuncObject.functions`` and
``.data``, indexed like ``ufunc.types``), which is read here.

Nothing is trusted blindly: the table is read only once the fields around it agree with what
Python says of the ufunc (``nin``, ``nout``, ``ntypes``, ``name``, every loop's type string), and
a loop is used only after it gave, on a test vector cut into odd-sized pieces, exactly the bits
the ufunc gives on the whole vector (so it does not depend on where a tile starts or ends). A
loop that fails either check is simply not fused.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

__all__ = ["loop_for", "LoopRef"]


class _UfuncStruct(ctypes.Structure):
    # the head of PyUFuncObject (numpy/ufuncobject.h), public and unchanged since NumPy 1.x
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int),
                ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)),
                ("ntypes", ctypes.c_int), ("reserved1", ctypes.c_int),
                ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_char))]


_LOOP_CALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_void_p)

_NUM_TO_CHAR = {}
for _c in np.typecodes["All"]:
    try:
        _NUM_TO_CHAR[np.dtype(_c).num] = np.dtype(_c).char
    except TypeError:
        pass

_FUSIBLE_CHARS = set("?bBhHiIlLqQfd")   # the dtypes kernels handle (no float16, complex, objects)


class LoopRef:
    """One validated loop: the addresses of its function and its data."""

    __slots__ = ("ufunc", "sig", "fn", "data")

    def __init__(self, ufunc, sig, fn, data):
        self.ufunc = ufunc
        self.sig = sig
        self.fn = fn
        self.data = data

    def __repr__(self):
        return f"<loop {self.ufunc.__name__} {self.sig}>"


_cache: dict = {}
_lock = threading.Lock()


def _table(u):
    """``{type string: (fn address, data address)}`` of ufunc ``u``, or None where the struct
    does not read back as Python describes the ufunc."""
    if not isinstance(u, np.ufunc) or type(u) is not np.ufunc:
        return None
    s = _UfuncStruct.from_address(id(u))
    if (s.nin, s.nout, s.nargs, s.ntypes) != (u.nin, u.nout, u.nargs, u.ntypes):
        return None
    try:
        if s.name is None or s.name.decode() != u.__name__:
            return None
    except UnicodeDecodeError:
        return None
    out = {}
    for i in range(s.ntypes):
        chars = []
        for k in range(s.nargs):
            c = _NUM_TO_CHAR.get(s.types[i * s.nargs + k][0])
            if c is None:
                chars = None
                break
            chars.append(c)
        if chars is None:
            continue
        sig = "".join(chars[:u.nin]) + "->" + "".join(chars[u.nin:])
        if sig != u.types[i]:
            return None     # the table is not where we think: trust none of it
        # a type string can appear twice (a SIMD loop, then a generic one): NumPy's resolution
        # takes the first
        out.setdefault(sig, (s.functions[i] or 0, s.data[i] or 0))
    return out


def _samples(dt, n, rng):
    dt = np.dtype(dt)
    if dt.kind == "f":
        x = (rng.standard_normal(n) * np.where(rng.random(n) < 0.5, 1.0, 40.0)).astype(dt)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1e-30, -1e-30,
                             1e30, 88.0, -100.0, 3.0], dt)
        k = min(n, len(specials))
        x[:k] = specials[:k]
        return x
    if dt.kind == "b":
        return rng.random(n) < 0.5
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    x = rng.integers(lo, hi, n, endpoint=True).astype(dt)
    edge = np.array([0, 1, info.max, info.min], dtype=object).astype(dt) if dt.kind == "i" \
        else np.array([0, 1, info.max, 0], dtype=np.uint64).astype(dt)
    k = min(n, 4)
    x[:k] = edge[:k]
    return x


def _call(fn, data, ptrs, n, steps):
    p = np.array(ptrs, dtype=np.intp)
    d = np.array([n], dtype=np.intp)
    st = np.array(steps, dtype=np.intp)
    _LOOP_CALL(fn)(p.ctypes.data, d.ctypes.data, st.ctypes.data, data or None)


def _validate(u, sig, fn, data):
    """Whether the loop gives, piece by piece, exactly the bits the ufunc gives (see the module
    docstring); binary loops also with a broadcast (stride 0) second operand."""
    ins, outs = sig.split("->")
    if len(outs) != 1 or not set(ins + outs) <= _FUSIBLE_CHARS:
        return False
    rng = np.random.default_rng(1234)
    n = 263
    args = [_samples(c, n, rng) for c in ins]
    out_dt = np.dtype(outs)
    cases = [args]
    if len(args) == 2:
        cases.append([args[0], args[1][5:6]])      # second operand broadcast
        cases.append([args[0][7:8], args[1]])      # first operand broadcast
    with np.errstate(all="ignore"):
        for case in cases:
            want = np.asarray(u(*[np.broadcast_to(a, (n,)) for a in case], signature=sig))
            got = np.empty(n, out_dt)
            start = 0
            for piece in (1, 2, 15, 16, 17, 64, 100, 48):
                m = min(piece, n - start)
                if m <= 0:
                    break
                ptrs, steps = [], []
                for a in case:
                    if a.shape[0] == 1:
                        ptrs.append(a.ctypes.data)
                        steps.append(0)
                    else:
                        ptrs.append(a.ctypes.data + start * a.itemsize)
                        steps.append(a.itemsize)
                ptrs.append(got.ctypes.data + start * got.itemsize)
                steps.append(got.itemsize)
                _call(fn, data, ptrs, m, steps)
                start += m
            if start < n:
                ptrs = [a.ctypes.data + (start * a.itemsize if a.shape[0] > 1 else 0)
                        for a in case] + [got.ctypes.data + start * got.itemsize]
                steps = [a.itemsize if a.shape[0] > 1 else 0 for a in case] + [got.itemsize]
                _call(fn, data, ptrs, n - start, steps)
            if got.tobytes() != want.tobytes():
                return False
    return True


def _validate_reduce(u, sig, fn, data):
    """Whether the loop, called as NumPy calls it to reduce a row (``out = initial; out op=
    row``), gives ``u.reduce``'s bits on rows of several lengths."""
    c = sig[0]
    rng = np.random.default_rng(99)
    with np.errstate(all="ignore"):
        for n in (1, 3, 8, 9, 127, 128, 129, 1000, 4099):
            row = _samples(c, n, rng)
            rng.shuffle(row)
            if c in "fd" and n > 20:
                row = row.copy()
                row[np.isinf(row) | np.isnan(row)] = 1.5    # finite rows, where the order shows
            want = u.reduce(row)
            acc = np.empty(1, row.dtype)
            if u.identity is not None and u is np.add:
                acc[0] = 0
                start = 0
            else:
                acc[0] = row[0]
                start = 1
            if n - start > 0:
                _call(fn, data, [acc.ctypes.data, row.ctypes.data + start * row.itemsize,
                                 acc.ctypes.data], n - start, [0, row.itemsize, 0])
            if acc[0].tobytes() != np.asarray(want, row.dtype).tobytes():
                return False
    return True


def loop_for(u, sig, reduce=False):
    """The validated :class:`LoopRef` of ufunc ``u`` for type string ``sig`` (``'ff->f'``),
    or None. ``reduce``: validated for reducing rows too."""
    key = (u, sig, reduce)
    with _lock:
        if key in _cache:
            return _cache[key]
    ref = None
    if getattr(u, "signature", None) is not None:
        # a generalized ufunc (matmul, vecdot): its loops take core dimensions, not elements
        return None
    try:
        table = _table(u)
        if table is not None and sig in table:
            fn, data = table[sig]
            if fn and _validate(u, sig, fn, data) and \
                    (not reduce or _validate_reduce(u, sig, fn, data)):
                ref = LoopRef(u, sig, fn, data)
    except Exception:
        ref = None
    with _lock:
        _cache[key] = ref
    return ref


def sig_of(dtypes):
    """A loop type string from ``(in..., out)`` dtypes."""
    chars = [np.dtype(d).char for d in dtypes]
    return "".join(chars[:-1]) + "->" + chars[-1]
