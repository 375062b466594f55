"""``tnp.vectorize``: NumPy's ``vectorize``, whose Python loop becomes one call where it can.

NumPy's ``vectorize`` calls ``pyfunc`` once per element, on Python numbers (a float32 array
hands it Python floats), then converts the results to the output type (``otypes``, or the type of
the first element's result). Where ``pyfunc`` is made of operations that act on whole arrays the
same way (arithmetic, comparisons, tnp's and NumPy's ufuncs, ``where``), the same results come
from running it once on the arrays: the inputs as the element type Python computes in (float64
for floats, int64 for integers), the result converted as NumPy would. That is what happens here
when a trace of ``pyfunc`` on scalar placeholders shows only such operations, and shows that
Python numbers and NumPy's promotion rules agree on every one of them. Otherwise (a branch on a
value, ``math.exp``, a lookup, integer arithmetic, where Python's integers do not overflow) the
element loop runs, exactly as NumPy's.
"""
from __future__ import annotations

import warnings

import numpy as _np

__all__ = ["vectorize"]


def _on_host(backend):
    return None  # the Python function runs on the host


class vectorize(_np.vectorize):
    """Mirrors ``numpy.vectorize``: same arguments, same results and dtypes; tnp arrays in, tnp
    arrays out (arrays on a GPU are computed on the host and copied back). Where ``pyfunc``
    traces into whole-array operations (see ``docs/compile.md``), one vectorized, fused call
    replaces the per-element Python loop; ``.vectorized_calls`` counts those calls."""

    def __init__(self, pyfunc=_np._NoValue, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        super().__init__(pyfunc, otypes=otypes, doc=doc, excluded=excluded, cache=cache,
                         signature=signature)
        self._programs = {}
        self.vectorized_calls = 0
        self.loop_calls = 0
        self.last_loop_reason = None

    def __call__(self, *args, **kwargs):
        from .._core.dispatch import _call

        if self.pyfunc is _np._NoValue:  # decorator with arguments: @vectorize(otypes=...)
            return super().__call__(*args, **kwargs)
        return _call("vectorize", super().__call__, _on_host, args, kwargs, host_ok=True)

    def _vectorize_call(self, func, args):
        if self.signature is None and args:
            try:
                res = _vectorized(self, func, args)
            except _Untraceable as e:
                self.last_loop_reason = str(e)
                res = None
            if res is not None:
                self.vectorized_calls += 1
                return res
        self.loop_calls += 1
        return super()._vectorize_call(func, args)


vectorize.__module__ = "tnp"


class _Untraceable(Exception):
    pass


# the Python number each element becomes (``asanyarray(a, dtype=object)``), as the dtype that
# computes the same way on arrays
def _element_dtype(dt):
    k = dt.kind
    if k == "f" and dt.itemsize <= 8:
        return _np.dtype(_np.float64)
    if k == "i" or (k == "u" and dt.itemsize < 8):
        return _np.dtype(_np.int64)
    if k == "b":
        return _np.dtype(_np.bool_)
    return None


_ARITH = {"add", "subtract", "multiply", "divide"}
_COMPARE = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
_UNARY_OK = {"negative", "positive", "absolute"}


class _ElementRules:
    """Checks, node by node of a trace on scalar placeholders, that arrays would compute what
    Python numbers compute (see the module docstring). ``weak``: values that are Python
    numbers in the element loop (the arguments, and what Python arithmetic makes of them)."""

    def __init__(self):
        self.weak = {}          # value id -> 'f' | 'i' | 'b'
        self.ok = True
        self.why = None
        self.guards = []        # (node index, 'div' | 'pow')

    def refuse(self, why):
        if self.ok:
            self.ok = False
            self.why = why

    def __call__(self, ctx, node, args, kwargs, result):
        if not self.ok:
            return
        from .fusion import _OPERATOR_UFUNC
        from .graph import Cap, Ref

        for v in node.outputs:
            if v.shape != ():
                return self.refuse(f"{node.name} makes an array per element")
        operands = []
        for t in node.args:
            if type(t) is Ref:
                v = t.value
                operands.append(("w", self.weak[v.id], v) if v.id in self.weak
                                else ("s", v.dtype, v))
            elif type(t) is Cap:
                if t.value.shape != ():
                    return self.refuse("an array from outside is used per element")
                operands.append(("s", t.value.dtype, t.value))
            elif type(t) in (bool, int, float):
                operands.append(("p", type(t), t))
            elif isinstance(t, _np.generic):
                operands.append(("s", t.dtype, t))
            elif node.name == "astype" and len(operands) == 1:
                operands.append(("dtype", t, t))
            else:
                return self.refuse(f"{node.name} has an argument of type {type(t).__name__}")
        if node.kwargs:
            return self.refuse(f"{node.name} is given keyword arguments")
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if out is None:
            return self.refuse(f"{node.name} gives {len(node.outputs)} results")
        op = node.operator
        if op is not None:
            base = op.replace("__i", "__", 1) if op.startswith("__i") and op != "__invert__" \
                else op
            uname = _OPERATOR_UFUNC.get(base)
            if uname is None:
                return self.refuse(f"operator {op}")
            return self._operator(node, uname, operands, out)
        call = node.call
        if isinstance(call, _np.ufunc) and call.__name__ == node.name and call.nout == 1:
            return self._function(call, operands, out)
        if call is _np.where and len(operands) == 3:
            expect = _np.result_type(*[_weak_standin(o) for o in operands[1:]])
            if expect != out.dtype:
                return self.refuse("where's result type differs for Python numbers")
            return
        if node.name == "astype":
            return
        return self.refuse(f"{node.name} is not an elementwise operation")

    def _operator(self, node, uname, operands, out):
        strong = [o for o in operands if o[0] == "s"]
        if strong:
            self._function(getattr(_np, uname), operands, out)
            return
        # only Python numbers: Python's arithmetic, which agrees with float64 arrays for the
        # IEEE operations when a float takes part
        floats = any(o[1] == "f" if o[0] == "w" else o[1] is float for o in operands)
        if uname in _COMPARE:
            self.weak[out.id] = "b"
            return
        if uname == "power":
            if len(operands) == 2 and operands[1][0] == "p" and operands[1][2] == 2 and floats:
                self.guards.append((node.id, "pow"))
                self.weak[out.id] = "f"
                return
            return self.refuse("** on Python numbers")
        if not floats:
            return self.refuse(f"{uname} of Python ints or bools (Python's integers do not "
                               f"overflow, True + True is 2)")
        if uname in _ARITH or uname in _UNARY_OK:
            if uname == "divide":
                if operands[1][0] == "p":
                    if operands[1][2] == 0:
                        return self.refuse("division by zero raises in Python")
                elif operands[1][0] == "w":
                    self.guards.append((node.id, "div"))
            self.weak[out.id] = "f"
            return
        return self.refuse(f"{uname} of Python numbers")

    def _function(self, u, operands, out):
        types = []
        for o in operands:
            if o[0] == "w":
                types.append({"f": float, "i": int, "b": bool}[o[1]])
            elif o[0] == "p":
                types.append(o[1])
            elif o[0] == "s":
                types.append(o[1])
            else:
                return self.refuse(f"{u.__name__} given a {o[0]}")
        try:
            expect = u.resolve_dtypes(tuple(types) + (None,) * u.nout)[u.nin]
        except Exception:
            return self.refuse(f"{u.__name__} has no loop for Python numbers here")
        if expect != out.dtype:
            return self.refuse(f"{u.__name__}: a Python number and an array promote "
                               f"differently ({expect} and {out.dtype})")


def _weak_standin(o):
    if o[0] == "w":
        return {"f": 0.0, "i": 0, "b": False}[o[1]]
    if o[0] == "p":
        return o[2]
    return o[1]


def _structure(graph):
    return [(n.name, n.operator, tuple(v.dtype for v in n.outputs)) for n in graph.nodes]


def _vectorized(vec, func, args):
    """The vectorized result of ``vec`` on ``args``, or None to let NumPy's loop run."""
    from .._core import listeners as _listeners

    if _listeners._entries or _listeners._local.inside:
        return None         # someone observes operations: each must run as written
    arrays = []
    strong = []     # NumPy scalars stay what they are in the element loop (object arrays
    for a in args:  # keep them), where array elements become Python numbers
        x = _np.asanyarray(a)
        if type(x) is not _np.ndarray:
            return None
        arrays.append(x)
        strong.append(isinstance(a, _np.generic))
    el = [a.dtype if s and a.dtype.char in "?bBhHiIlLqQfd" else
          (None if s else _element_dtype(a.dtype)) for a, s in zip(arrays, strong)]
    if any(d is None for d in el):
        return None
    try:
        shape = _np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        return None
    if int(_np.prod(shape)) == 0:
        return None
    key = (func is vec.pyfunc, tuple(a.dtype for a in arrays), tuple(a.shape for a in arrays),
           tuple(strong))
    entry = vec._programs.get(key) if func is vec.pyfunc else None
    if entry is None:
        entry = _compile(func, arrays, el, strong)
        if func is vec.pyfunc:
            vec._programs[key] = entry
    if isinstance(entry, str):
        raise _Untraceable(entry)
    program, n_outputs, guard_kinds = entry
    inputs = [a.astype(d, copy=False) for a, d in zip(arrays, el)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = program.run(inputs)
    results, guards = outs[:n_outputs], outs[n_outputs:]
    for kind, g in zip(guard_kinds, guards):
        # (NumPy's loop will raise Python's error there; the warnings of this run are moot)
        if kind == "div" and _np.any(_np.asarray(g) == 0):
            return None    # ZeroDivisionError
        if kind == "pow":
            base, res = g
            if _np.any(_np.isinf(res) & _np.isfinite(base)):
                return None    # OverflowError
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    # the output types: NumPy's first-element call, when otypes is not given
    first = None
    if vec.otypes is not None:
        otypes = vec.otypes
    else:
        inputs0 = [a.flat[0] for a in arrays]
        first = func(*inputs0)
        outs0 = first if isinstance(first, tuple) else (first,)
        otypes = "".join(_np.asarray(o).dtype.char for o in outs0)
    template = program.out_template_for_vectorize
    nout = len(template) if isinstance(template, tuple) else 1
    if len(otypes) != nout:
        return None
    values = _fill(template, results)
    values = values if isinstance(values, tuple) else (values,)
    final = []
    for val, t in zip(values, otypes):
        val = _np.asarray(val)
        target = _np.dtype(t)
        if not _exact_conversion(val.dtype, target):
            return None
        r = _np.broadcast_to(val, shape).astype(target)
        final.append(r)
    if vec.cache and first is not None:
        outs0 = first if isinstance(first, tuple) else (first,)
        for r, o in zip(final, outs0):
            if r.size:
                r.flat[0] = _np.asarray(o).astype(r.dtype)
    return final[0] if nout == 1 else tuple(final)


def _exact_conversion(src, dst):
    """Whether ``astype`` converts as NumPy converts the Python numbers of the loop."""
    s, d = src.kind, dst.kind
    if s == "f":
        return d in "fcb"
    if s == "b":
        return d in "biufc"
    if s == "i":
        return d in "fc" or (d == "i" and dst.itemsize == 8) or d == "b"
    return False


def _fill(template, results):
    from .graph import Cap, Ref

    it = iter(results)

    def build(t):
        if type(t) is Ref or type(t) is Cap:
            return next(it)
        if type(t) is tuple:
            return tuple(build(e) for e in t)
        return t
    return build(template)


def _compile(func, arrays, el, strong):
    """Trace ``func`` on scalar placeholders (checking the element rules), then on arrays;
    returns ``(program, n_outputs, guard kinds)``, or the reason it is not vectorized."""
    from .graph import Ref, walk_template
    from .program import build_program
    from .tracer import make_placeholder, trace

    rules = _ElementRules()

    def scalar_inputs(ctx):
        phs = []
        for i, (d, s) in enumerate(zip(el, strong)):
            t = make_placeholder(d.type(0))
            v = ctx.add_input(t, i)
            if not s:
                rules.weak[v.id] = d.kind if d.kind != "u" else "i"
            phs.append(t)
        return phs, {}

    try:
        g1 = trace(func, (), {}, scalar_inputs, getattr(func, "__name__", "f"),
                   vectorize_rules=rules)
    except Exception as e:
        return f"not traceable: {type(e).__name__}: {e}"
    if not rules.ok:
        return rules.why
    out = g1.output
    items = out if type(out) is tuple else (out,)
    for it in items:
        if type(it) is Ref:
            if it.value.shape != ():
                return "the function returns an array per element"
        elif not isinstance(it, (bool, int, float)):
            return f"the function returns a {type(it).__name__}"

    def array_inputs(ctx):
        phs = []
        for i, (a, d) in enumerate(zip(arrays, el)):
            t = make_placeholder(_np.empty(a.shape, d))
            ctx.add_input(t, i)
            phs.append(t)
        return phs, {}

    try:
        g2 = trace(func, (), {}, array_inputs, getattr(func, "__name__", "f"))
    except Exception as e:
        return f"not traceable on arrays: {type(e).__name__}: {e}"
    if _structure(g1) != _structure(g2):
        return "the function does something else on arrays than on numbers"
    # the values the guards need to see: divisors, and base and result of ``** 2``
    by_id = {n.id: n for n in g2.nodes}
    guard_refs, kinds = [], []
    for nid, kind in rules.guards:
        n = by_id[nid]
        if kind == "div":
            guard_refs.append(n.args[1])
        else:
            guard_refs.append((n.args[0], n.result))
        kinds.append(kind)
    user_out = g2.output
    flat_user = []
    walk_template(user_out, lambda leaf: flat_user.append(leaf))
    g2.output = tuple(flat_user) + tuple(guard_refs)
    try:
        program = build_program(g2)
    except Exception as e:
        return f"could not compile: {type(e).__name__}: {e}"
    program.out_template_for_vectorize = user_out
    n_user = len(flat_user)
    # guards are returned after the user's values; a 'pow' guard is a pair
    return _GuardedProgram(program, n_user, kinds), n_user, kinds


class _GuardedProgram:
    """A program whose outputs are the user's values, then the guards' values (a pair for
    each ``** 2``), regrouped."""

    def __init__(self, program, n_user, kinds):
        self.program = program
        self.n_user = n_user
        self.kinds = kinds
        self.out_template_for_vectorize = program.out_template_for_vectorize

    def run(self, inputs):
        outs = self.program.run(inputs)
        user = list(outs[:self.n_user])
        rest = list(outs[self.n_user:])
        guards = []
        for kind in self.kinds:
            if kind == "pow":
                guards.append((rest.pop(0), rest.pop(0)))
            else:
                guards.append(rest.pop(0))
        return user + guards
