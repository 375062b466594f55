"""The identity sweep: every function of the dispatch registry, every ndarray method and the
in-place operators, called on NumPy arrays and on tnp arrays holding the same values, asking of
each result what NumPy's answers: is it one of the inputs (``r is x``), and is it a view whose
``.base`` is an input (``r.base is x``), for an input that owns its memory and for one that is a
view (NumPy then collapses ``.base`` to the owner).

Arguments are generated, not written per function: each call pattern below is tried on each
input; the calls NumPy accepts are the ones compared. ``python tests/tnp/_identity_sweep.py``
prints the counts (calls checked, calls where NumPy answers with an input, agreements)."""
from __future__ import annotations

import warnings

import numpy as np

import tnp
from tnp._core.dispatch import REGISTRY

# sections whose functions draw random numbers, read or write files, or only describe types
SKIPPED_SECTIONS = {"random", "io"}
SKIPPED = {"vectorize", "frompyfunc", "piecewise", "apply_along_axis", "apply_over_axes",
           "fromfunction", "nditer", "nested_iters", "busday_offset", "busday_count",
           "is_busday", "datetime_as_string", "einsum_path", "seterr", "seterrcall",
           "setbufsize", "set_printoptions", "printoptions"}


def _templates():
    """(name, maker): a fresh array per call, owning its memory or a view of one."""
    def owner(values):
        return lambda xp: xp.array(values)

    def view_of(values):
        return lambda xp: xp.array(values)[...]   # a view whose base owns the memory

    return [
        ("f8[2,3]", owner(np.arange(1.0, 7.0).reshape(2, 3))),
        ("f8[6]", owner(np.linspace(0.1, 0.9, 6))),
        ("c16[4]", owner(np.arange(4) + 1j)),
        ("bool[4]", owner(np.array([True, False, True, True]))),
        ("i8[3,1]", owner(np.array([[1], [2], [3]]))),
        ("view f8[2,3]", view_of(np.arange(1.0, 7.0).reshape(2, 3))),
    ]


CALL_PATTERNS = [
    ("(x)", lambda x: ((x,), {})),
    ("(x, 0)", lambda x: ((x, 0), {})),
    ("(x, -1)", lambda x: ((x, -1), {})),
    ("(x, x)", lambda x: ((x, x), {})),
    ("(x, (1, -1))", lambda x: ((x, (1, -1)), {})),
    ("(x, 0, -1)", lambda x: ((x, 0, -1), {})),
    ("(x, axes=())", lambda x: ((x,), {"axes": ()})),
    ("(x, dtype=x.dtype)", lambda x: ((x,), {"dtype": x.dtype})),
    ("(x, copy=False)", lambda x: ((x,), {"copy": False})),
    ("(x, out=x)", lambda x: ((x,), {"out": x})),
    ("(x, x, out=x)", lambda x: ((x, x), {"out": x})),
    ("(x, axis=None, keepdims=True)", lambda x: ((x,), {"axis": None, "keepdims": True})),
]


def _method_calls():
    """name -> (function of x giving the result): methods, attributes and in-place operators."""
    def iop(op):
        def f(x):
            y = x
            y = op(y)
            return y
        return f

    return {
        "x.conj()": lambda x: x.conj(), "x.conjugate()": lambda x: x.conjugate(),
        "x.real": lambda x: x.real, "x.imag": lambda x: x.imag, "x.T": lambda x: x.T,
        "x.mT": lambda x: x.mT, "x.view()": lambda x: x.view(), "x.ravel()": lambda x: x.ravel(),
        "x.squeeze()": lambda x: x.squeeze(), "x.transpose()": lambda x: x.transpose(),
        "x.reshape(-1)": lambda x: x.reshape(-1), "x[...]": lambda x: x[...],
        "x[:]": lambda x: x[:], "x[None]": lambda x: x[None], "x[0]": lambda x: x[0],
        "x.diagonal()": lambda x: x.diagonal(), "x.swapaxes(0, -1)": lambda x: x.swapaxes(0, -1),
        "x.astype(x.dtype, copy=False)": lambda x: x.astype(x.dtype, copy=False),
        "x.astype(x.dtype)": lambda x: x.astype(x.dtype), "x.copy()": lambda x: x.copy(),
        "x.flatten()": lambda x: x.flatten(), "x.byteswap(True)": lambda x: x.byteswap(True),
        "x.__array_namespace__().asarray(x)": lambda x: x.__array_namespace__().asarray(x),
        "x += 1": iop(lambda y: y.__iadd__(1)), "x *= 1": iop(lambda y: y.__imul__(1)),
        "x -= x": iop(lambda y: y.__isub__(y)), "x |= x": iop(lambda y: y.__ior__(y)),
        "x //= 1": iop(lambda y: y.__ifloordiv__(1)), "x **= 1": iop(lambda y: y.__ipow__(1)),
        "+x": lambda x: +x, "x.real.base": lambda x: x.real.base,
    }


def _answers(r, x):
    """(result is an input, result's base is the input or the input's base) of one call."""
    rs = r if isinstance(r, (tuple, list)) else (r,)
    is_input = tuple(e is x for e in rs)
    owner = x.base if x.base is not None else x
    base_input = tuple(getattr(e, "base", None) is owner if hasattr(e, "shape") else False
                       for e in rs)
    return is_input, base_input


def _call(fn, xp, maker, pattern):
    x = maker(xp)
    args, kwargs = pattern(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            r = fn(*args, **kwargs)
    return r, x


def sweep():
    """Compare every call NumPy accepts; returns (rows, counts)."""
    rows = []   # (call, numpy's answer, tnp's answer)
    templates = _templates()
    for name, info in sorted(REGISTRY.items()):
        if info.numpy_function is None or info.section in SKIPPED_SECTIONS or \
                name.rsplit(".", 1)[-1] in SKIPPED or info.kind == "meta":
            continue
        for tname, maker in templates:
            for pname, pattern in CALL_PATTERNS:
                try:
                    rn, xn = _call(info.numpy_function, np, maker, pattern)
                except Exception:
                    continue
                want = _answers(rn, xn)
                try:
                    rt, xt = _call(info.function, tnp, maker, pattern)
                    got = _answers(rt, xt)
                except Exception as e:   # NumPy answered and tnp did not: a disagreement
                    got = ("raised", type(e).__name__)
                rows.append((f"{name}{pname} on {tname}", want, got))
    for mname, f in _method_calls().items():
        for tname, maker in templates:
            try:
                rn, xn = _call(f, np, maker, lambda x: ((x,), {}))
            except Exception:
                continue
            want = _answers(rn, xn)
            try:
                rt, xt = _call(f, tnp, maker, lambda x: ((x,), {}))
                got = _answers(rt, xt)
            except Exception as e:
                got = ("raised", type(e).__name__)
            rows.append((f"{mname} on {tname}", want, got))
    counts = {
        "calls checked": len(rows),
        "NumPy returns an input": sum(any(w[0]) for _, w, _ in rows),
        "NumPy returns a view of an input": sum(any(w[1]) for _, w, _ in rows),
        "agreements": sum(w == g for _, w, g in rows),
        "agreements where NumPy returns an input or a view of one":
            sum(w == g for _, w, g in rows if any(w[0]) or any(w[1])),
    }
    return rows, counts


# ---------------------------------------------------------------------------- subclasses
class _NumpySub(np.ndarray):
    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", "made")


class _TnpSub(tnp.ndarray):
    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", "made")


def _subclass_answers(r, cls):
    """For each array of a result: is it an instance of the subclass, and did
    ``__array_finalize__`` run on it (with the attribute of the instance it came from)."""
    rs = r if isinstance(r, (tuple, list)) else (r,)
    return tuple((type(e) is cls, getattr(e, "tag", None) if type(e) is cls else None)
                 for e in rs)


def subclass_sweep():
    """Every registry function on a subclass instance (the call patterns above): which results
    are instances of the subclass, with ``__array_finalize__`` called, as NumPy's are."""
    rows = []
    for name, info in sorted(REGISTRY.items()):
        if info.numpy_function is None or info.section in SKIPPED_SECTIONS or \
                name.rsplit(".", 1)[-1] in SKIPPED or info.kind == "meta":
            continue
        for pname, pattern in CALL_PATTERNS:
            def run(xp, cls, fn):
                x = xp.arange(1.0, 7.0).reshape(2, 3).view(cls)
                x.tag = "source"
                args, kwargs = pattern(x)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with np.errstate(all="ignore"):
                        return _subclass_answers(fn(*args, **kwargs), cls)
            try:
                want = run(np, _NumpySub, info.numpy_function)
            except Exception:
                continue
            try:
                got = run(tnp, _TnpSub, info.function)
            except Exception as e:
                got = ("raised", type(e).__name__)
            rows.append((f"{name}{pname} on a subclass", want, got))
    counts = {
        "subclass calls checked": len(rows),
        "NumPy gives the subclass": sum(any(k for k, _ in w) for _, w, _ in rows),
        "subclass agreements": sum(w == g for _, w, g in rows),
    }
    return rows, counts


if __name__ == "__main__":
    import sys

    rows, counts = sweep()
    srows, scounts = subclass_sweep()
    rows += srows
    for k, v in {**counts, **scounts}.items():
        print(f"{k}: {v}")
    if "-v" in sys.argv:
        for call, w, g in rows:
            if w != g:
                print(f"  {call}: numpy {w}, tnp {g}")
