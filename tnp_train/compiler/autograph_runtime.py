"""What AutoGraph-converted code calls (``ag__.if_stmt``...): decided at run time, as TF's.

Each helper receives the statement's condition (or iterable) and its branches or body as
functions of the variables they assign (``state``: their values now, :class:`Undefined` for a
name not yet assigned), and returns the new values. A Python value runs the Python statement;
a tnp array while a compiled function is traced becomes ``tt.cond`` / ``tt.while_loop``.
"""
from __future__ import annotations

import tnp
from tnp import extend as _ext
from tnp.extend import TraceError

from . import control_flow as _cf

__all__ = ["Undefined", "state", "if_stmt", "if_return", "while_stmt", "for_stmt", "range_",
           "py_test", "py_iter", "and_", "or_", "not_", "return_value"]

_RETVAL = "_ag_retval"       # autograph_jumps.RETVAL: a return inside a loop sets it


class Undefined:
    """A variable not assigned yet when a converted statement starts (TF's ``ag__.Undefined``)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined variable {self.name!r}>"


def state(local_vars, names):
    """The values of ``names`` in ``local_vars`` (``locals()``), Undefined where unassigned."""
    return tuple(local_vars[n] if n in local_vars else Undefined(n) for n in names)


def _traced(x):
    return _ext.is_traced(x)


def _fresh(x):
    """A traced boolean scalar as a 0-d array of its own: tnp answers every boolean scalar
    result with one of two shared objects, which a trace cannot tell apart once two
    operations gave the same one. The scalar is then forgotten by the trace (using it again
    makes the function run eagerly, never use a wrong value)."""
    if _traced(x) and x.ndim == 0 and type(x) is not tnp.ndarray:
        a = tnp.asarray(x)
        _ext.forget_traced(x)
        return a
    return x


def _final(exc):
    exc.tnp_trace_final = True     # the user's error: raised, not taken for a tracing failure
    return exc


# ----------------------------------------------------------------------------- if
def if_stmt(test, true_fn, false_fn, values, names, live, line):
    """``if test:`` assigning ``names`` (of which ``live`` are read after): the new values of
    ``live``."""
    if not _traced(test):
        return (true_fn if test else false_fn)(*values)
    test = _fresh(test)
    undefined = {}

    def branch(fn, which):
        def run():
            out = fn(*values)
            missing = [n for n, v in zip(live, out) if isinstance(v, Undefined)]
            undefined[which] = missing
            return tuple(None if isinstance(v, Undefined) else v for v in out)
        return run

    try:
        out = _cf.cond(test, branch(true_fn, "if"), branch(false_fn, "else"))
    except (ValueError, TypeError) as e:
        _one_sided(undefined, line)
        raise _final(e)
    _one_sided(undefined, line)
    return tuple(Undefined(n) if v is None and n in undefined.get("if", ()) else v
                 for n, v in zip(live, out))


def _one_sided(undefined, line):
    a, b = set(undefined.get("if", ())), set(undefined.get("else", ()))
    for name in sorted(a ^ b):
        where = "if" if name in a else "else"
        raise _final(ValueError(
            f"'{name}' must also be initialized in the {where} branch: the condition of the if "
            f"statement at line {line} is a traced value, so both branches run as tt.cond, "
            f"whose branches must give the same variables (assign '{name}' before the if)"))


def if_return(test, true_fn, false_fn, values, line):
    """``if test: ... return a`` / ``else: ... return b`` (both branches return)."""
    if not _traced(test):
        return (true_fn if test else false_fn)(*values)
    return _cf.cond(_fresh(test), lambda: true_fn(*values), lambda: false_fn(*values))


# ----------------------------------------------------------------------------- loops
def return_value(value):
    """What a function whose returns were rewritten as flags returns: None where no return
    ran (Python's)."""
    return None if isinstance(value, Undefined) else value


def _loop_vars(values, names, live, line, kind):
    for n, v in zip(names, values):
        if isinstance(v, Undefined) and n == _RETVAL:
            # TF 2.21's error: the value a return inside a traced loop gives has no value (nor
            # type, nor shape) on entry
            raise _final(NotImplementedError(
                f"a return statement cannot be placed inside this TensorFlow loop; this may "
                f"happen if a return statement depends on a static Python condition such as a "
                f"hyperparameter (the {kind} loop at line {line} is a traced loop; assign the "
                f"result to a variable defined before the loop and return after it)"))
        if isinstance(v, Undefined) and n in live:
            raise _final(ValueError(
                f"'{n}' must be defined before the loop: the {kind} loop at line {line} runs "
                f"as tt.while_loop (its condition is a traced value), whose loop variables "
                f"need a value on entry"))
    return [i for i, v in enumerate(values) if not isinstance(v, Undefined)]


def _full(values, picked, carried):
    full = list(values)
    for i, v in zip(picked, carried):
        full[i] = v
    return full


def while_stmt(cond, body, values, names, live, line):
    """``while cond:`` assigning ``names``: their values after the loop."""
    values = tuple(values)
    test = cond(*values)
    while not _traced(test):
        if not test:
            return values
        values = tuple(body(*values))
        test = cond(*values)
    _ext.forget_traced(test)     # evaluated to learn it is traced; the loop traces cond again
    picked = _loop_vars(values, names, live, line, "while")
    counter = not picked        # a loop of effects only: a counter is its loop variable
    init = tuple(values[i] for i in picked) or (tnp.asarray(0),)

    def c(*carried):
        return cond(*_full(values, picked, carried))

    def b(*carried):
        out = body(*_full(values, picked, carried))
        return (carried[0] + 1,) if counter else tuple(out[i] for i in picked)

    out = _cf.while_loop(c, b, init)
    return tuple(values) if counter else tuple(_full(values, picked, out))


class TracedRange:
    """``range(start, limit, delta)`` with a traced bound, as a ``for`` loop's iterable."""

    def __init__(self, start, limit, delta):
        self.start, self.limit, self.delta = start, limit, delta


def range_(func, *args, **kwargs):
    """``range(...)``/``tt.range(...)`` as a ``for`` loop's iterable: a loop node when a bound
    is traced, else the call itself."""
    if not any(_traced(a) for a in list(args) + list(kwargs.values())):
        return func(*args, **kwargs)
    if kwargs:
        names = ("start", "limit", "delta")
        args = list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
    if len(args) == 1:
        return TracedRange(0, args[0], 1)
    if len(args) == 2:
        return TracedRange(args[0], args[1], 1)
    return TracedRange(*args[:3])


def for_stmt(iterable, body, values, names, live, line, extra=None):
    """``for item in iterable:`` assigning ``names``: their values after the loop. ``extra``
    (a ``break``, or a ``return`` inside): a function of the values, false once the loop
    must end, tested before each iteration."""
    values = tuple(values)
    if isinstance(iterable, TracedRange):
        r = iterable
        start = tnp.asarray(r.start)

        def more(i):
            if _traced(r.delta):
                return tnp.where(r.delta > 0, i < r.limit, i > r.limit)
            return i < r.limit if r.delta > 0 else i > r.limit

        def item(i):
            return i

        def step(i):
            return i + r.delta
        first = start
    elif _traced(iterable):
        n = iterable.shape[0] if iterable.ndim else None
        if n is None:
            raise TraceError(f"tt.function: iterating over a 0-d traced array (for loop at line "
                             f"{line})")
        first = tnp.asarray(0)

        def more(i):
            return i < n

        def item(i):
            return iterable[i]

        def step(i):
            return i + 1
    else:
        for x in iterable:
            if extra is not None:
                go = extra(*values)
                if _traced(go):
                    raise _final(NotImplementedError(
                        f"break and return statements which depend on a TF condition are not "
                        f"supported in Python for loops. Did you intend to make it a TF loop? "
                        f"(the for loop at line {line} iterates over a Python value: iterate "
                        f"over tt.range(n) to make it a compiled loop)"))
                if not go:
                    break
            values = tuple(body(x, *values))
        return values
    picked = _loop_vars(values, names, live, line, "for")

    def c(i, *carried):
        if extra is not None:
            full = _full(values, picked, carried)
            return and_(lambda: more(i), lambda: extra(*full))
        return more(i)

    def b(i, *carried):
        out = body(item(i), *_full(values, picked, carried))
        return (step(i),) + tuple(out[k] for k in picked)

    out = _cf.while_loop(c, b, (first,) + tuple(values[k] for k in picked))
    return tuple(_full(values, picked, out[1:]))


# ----------------------------------------------------------------------------- the rest
def py_test(test, line, kind, jumps):
    """The condition of an ``if``/``while`` left to Python (its body returns, breaks or
    continues): a traced value is refused, naming the line and the way out."""
    if _traced(test):
        raise TraceError(
            f"tt.function: the condition of the {kind} statement at line {line} is a traced "
            f"value, and AutoGraph does not convert a {kind} whose body uses "
            f"{'/'.join(jumps)}. Rewrite it without (fold the exit into the loop's condition, "
            f"or assign the result and return once after the {kind}), use tt.cond / "
            f"tt.while_loop or tnp.where, or pass the value as a Python argument")
    return test


def py_iter(iterable, line, jumps):
    """The iterable of a ``for`` left to Python (see :func:`py_test`)."""
    if isinstance(iterable, TracedRange) or _traced(iterable):
        raise TraceError(
            f"tt.function: the for loop at line {line} iterates over a traced value, and "
            f"AutoGraph does not convert a loop whose body uses {'/'.join(jumps)}. Rewrite it "
            f"without, use tt.while_loop / tt.map_fn, or pass the bound as a Python argument")
    return iterable


def and_(a, b):
    x = _fresh(a())
    if _traced(x):
        return _fresh(tnp.logical_and(x, _fresh(b())))
    return b() if x else x


def or_(a, b):
    x = _fresh(a())
    if _traced(x):
        return _fresh(tnp.logical_or(x, _fresh(b())))
    return x if x else b()


def not_(x):
    x = _fresh(x)
    return _fresh(tnp.logical_not(x)) if _traced(x) else not x
