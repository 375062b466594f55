"""AutoGraph's ``break``, ``continue`` and ``return`` inside loops, rewritten as flags.

Before a loop is converted (:mod:`.autograph`), its jumps become assignments to boolean
variables that the loop carries, as TF's AutoGraph does (its ``break_statements``,
``continue_statements`` and ``return_statements`` passes):

* ``continue`` sets ``_ag_continue_<n>`` (False at the top of each iteration) and ``break``
  sets ``_ag_break_<n>`` (False before the loop); the statements after one that may have set a
  flag run under ``if not flag:``; a ``while`` loop's condition becomes ``not break and
  (condition)``, a ``for`` loop gets the same as an extra test;
* in a function with a ``return`` inside a loop, every ``return x`` sets ``_ag_do_return`` and
  ``_ag_retval``; the statements after it run under ``if not _ag_do_return:``, loops holding one
  stop when it is set, and the function ends with ``return _ag_retval``.

An ``if`` whose body then assigns a flag is converted like any other: on a traced condition a
``tt.cond`` whose outputs include the flag, so the loop's condition (or the guard of the rest of
its body) becomes traced, and the loop a ``tt.while_loop``. Jumps inside a ``with`` or ``try``
are left alone (the loop stays Python).
"""
from __future__ import annotations

import ast

__all__ = ["FLAG_PREFIX", "BREAK", "CONTINUE", "DO_RETURN", "RETVAL", "loop_jumps", "rewrite_loop",
           "returns_in_loops", "rewrite_returns"]

FLAG_PREFIX = "_ag_"
BREAK = "_ag_break"
CONTINUE = "_ag_continue"
DO_RETURN = "_ag_do_return"
RETVAL = "_ag_retval"

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.While, ast.For, ast.AsyncFor)


def _level_jumps(stmts, kinds, through_loops=False):
    """Where the jumps of ``kinds`` are in ``stmts``: 'if' (only under ``if`` statements, and
    loops where ``through_loops``), 'other' (one under a ``with``/``try``/``match``) or None
    (none). Without ``through_loops`` an inner loop's jumps are its own (not counted)."""
    found = None
    names = {ast.Break: "break", ast.Continue: "continue", ast.Return: "return"}

    def walk(node, under_other):
        nonlocal found
        if isinstance(node, _NESTED):
            return
        if names.get(type(node)) in kinds:
            found = "other" if under_other or found == "other" else "if"
            return
        if isinstance(node, _LOOPS) and not through_loops:
            return
        other = under_other or not isinstance(node, (ast.If,) + _LOOPS)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                walk(child, other)

    for s in stmts:
        if isinstance(s, ast.stmt):
            walk(s, False)
    return found


def loop_jumps(loop):
    """The jumps of ``loop``'s own level it can rewrite: a set of 'break'/'continue', or None
    where one sits under a ``with``/``try`` (the loop then stays Python)."""
    out = set()
    for kind in ("break", "continue"):
        where = _level_jumps(loop.body, {kind})
        if where == "other":
            return None
        if where == "if":
            out.add(kind)
    return out


def _name(n, store=False):
    return ast.Name(id=n, ctx=ast.Store() if store else ast.Load())


def _set(n, value):
    return ast.Assign(targets=[_name(n, True)], value=value, lineno=0)


def _ag_call(fn, *args):
    return ast.Call(func=ast.Attribute(value=_name("ag__"), attr=fn, ctx=ast.Load()),
                    args=list(args), keywords=[])


def _not_any(flags):
    test = _name(flags[0]) if len(flags) == 1 else \
        ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
    return ast.UnaryOp(op=ast.Not(), operand=test)


def _guarded(stmts, flags, replace):
    """``stmts`` with the jumps ``replace`` maps (a node type -> the statements it becomes, or
    a function of the node giving them) replaced, and what follows a statement that may have
    set one of ``flags`` put under ``if not (flags):``."""
    out = []
    for k, s in enumerate(stmts):
        rule = replace.get(type(s))
        if rule is not None:
            out.extend(rule(s))
            return out          # the rest is unreachable
        jumped = _sets_flag(s, replace)
        if jumped:
            if isinstance(s, ast.If):
                rest = stmts[k + 1:]
                if rest and not s.orelse and _ends_in_jump(s.body, replace):
                    # ``if c: return a`` then the rest: the rest is the else branch, so a
                    # traced condition gives a tt.cond whose branches both set the flags
                    s.body = _guarded(s.body, flags, replace)
                    s.orelse = _guarded(rest, flags, replace)
                    out.append(s)
                    return out
                s.body = _guarded(s.body, flags, replace) or [ast.Pass()]
                s.orelse = _guarded(s.orelse, flags, replace)
            out.append(s)
            rest = stmts[k + 1:]
            if rest:
                guard = ast.If(test=_not_any(flags), body=_guarded(rest, flags, replace),
                               orelse=[])
                ast.copy_location(guard, rest[0])
                out.append(guard)
            return out
        out.append(s)
    return out


def _ends_in_jump(stmts, replace):
    return bool(stmts) and type(stmts[-1]) in replace


def _sets_flag(s, replace):
    """Whether statement ``s`` holds a jump ``replace`` rewrites (at this loop level)."""
    kinds = {ast.Break: "break", ast.Continue: "continue", ast.Return: "return"}
    wanted = {kinds[t] for t in replace}
    if isinstance(s, _LOOPS):
        # an inner loop: only a return reaches out of it (it sets the flag there)
        return "return" in wanted and _level_jumps(s.body, {"return"}, True) is not None
    return _level_jumps([s], wanted, "return" in wanted) is not None


def rewrite_loop(loop, jumps, n):
    """Rewrite ``loop``'s ``break``/``continue`` (``jumps``) as flags numbered ``n``. Returns
    ``(statements to run before the loop, break flag or None)``; the loop's body is rewritten
    in place (and a ``while``'s condition)."""
    brk, cnt = f"{BREAK}_{n}", f"{CONTINUE}_{n}"
    flags, replace = [], {}
    if "break" in jumps:
        flags.append(brk)
        replace[ast.Break] = lambda s: [ast.copy_location(_set(brk, ast.Constant(True)), s)]
    if "continue" in jumps:
        flags.append(cnt)
        replace[ast.Continue] = lambda s: [ast.copy_location(_set(cnt, ast.Constant(True)), s)]
    body = _guarded(loop.body, flags, replace)
    if "continue" in jumps:
        body = [ast.copy_location(_set(cnt, ast.Constant(False)), loop)] + body
    loop.body = body or [ast.Pass()]
    before = []
    if "break" in jumps:
        before.append(ast.copy_location(_set(brk, ast.Constant(False)), loop))
        if isinstance(loop, ast.While):
            loop.test = ast.copy_location(
                ast.BoolOp(op=ast.And(), values=[_not_any([brk]), loop.test]), loop.test)
    return before, (brk if "break" in jumps else None)


def returns_in_loops(fdef):
    """Whether function ``fdef`` has a ``return`` inside a loop (not in a nested function),
    and none under a ``with``/``try`` (whose returns are left alone: the loops stay Python)."""
    if _level_jumps(fdef.body, {"return"}, True) != "if":
        return False

    def walk(node, in_loop):
        if isinstance(node, _NESTED) and node is not fdef:
            return False
        if isinstance(node, ast.Return) and in_loop:
            return True
        inner = in_loop or isinstance(node, _LOOPS)
        return any(walk(c, inner) for c in ast.iter_child_nodes(node))
    return walk(fdef, False)


def rewrite_returns(fdef):
    """Every ``return`` of ``fdef`` as the flag ``_ag_do_return`` and the value ``_ag_retval``
    (see the module docstring); loops holding one get ``not _ag_do_return`` as an exit."""
    def ret(s):
        value = s.value if s.value is not None else ast.Constant(None)
        return [ast.copy_location(_set(DO_RETURN, ast.Constant(True)), s),
                ast.copy_location(_set(RETVAL, value), s)]

    replace = {ast.Return: ret}

    def in_loops(stmts):
        for s in stmts:
            if isinstance(s, _NESTED):
                continue
            if isinstance(s, _LOOPS) and _sets_flag(s, replace):
                s.body = _guarded(s.body, [DO_RETURN], replace)
                in_loops(s.body)
                if isinstance(s, ast.While):
                    s.test = ast.copy_location(ast.BoolOp(
                        op=ast.And(), values=[_not_any([DO_RETURN]), s.test]), s.test)
                else:
                    s.ag_exit = DO_RETURN       # for_: an extra test
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and not isinstance(s, _LOOPS):
                    in_loops(sub)

    body = _guarded(fdef.body, [DO_RETURN], replace)
    in_loops(body)
    start = [ast.copy_location(_set(DO_RETURN, ast.Constant(False)), fdef),
             ast.copy_location(_set(RETVAL, _ag_call("Undefined", ast.Constant(RETVAL))),
                               fdef)]
    end = ast.Return(value=_ag_call("return_value", _name(RETVAL)))
    ast.copy_location(end, fdef.body[-1] if fdef.body else fdef)
    fdef.body = start + body + [end]
