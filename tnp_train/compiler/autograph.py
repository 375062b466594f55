"""AutoGraph: Python ``if``/``while``/``for`` on traced values become ``tt.cond``/``tt.while_loop``.

``tt.function(autograph=True)`` (the default) compiles a converted copy of the Python function:
its syntax tree is rewritten so that each ``if``, ``while`` and ``for`` calls a helper of
:mod:`.autograph_runtime` with its condition (or iterable) and its branches or body as nested
functions of the variables they assign. The helper decides at run time, as TF's ``ag__.if_stmt``
does: a Python value runs the Python statement; a tnp array while a compiled function is traced
becomes one control-flow node (``tt.cond``, ``tt.while_loop``). Only the decorated function is
converted (not the functions it calls). An ``if`` whose branches both end in ``return`` (an
``if`` ending in ``return`` followed by more statements counts) becomes a ``tt.cond`` of the two
returns. ``break``, ``continue`` and ``return`` inside loops are first rewritten as flags the
loop carries (:mod:`.autograph_jumps`); one inside a ``with``/``try`` leaves its loop a Python
loop: with a traced condition that is a ``TraceError`` naming the line. A function whose source cannot be
read, or that uses ``global``/``nonlocal``, ``yield``, ``await`` or ``super()``, runs
unconverted.
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
import weakref

from . import autograph_jumps as _jumps
from . import autograph_runtime as _rt

__all__ = ["convert", "to_code", "do_not_convert", "experimental"]

_PREFIX = "ag__"


def do_not_convert(func=None):
    """Mirrors ``tf.autograph.experimental.do_not_convert``: ``func`` is never converted."""
    if func is None:
        return do_not_convert
    try:
        func.__ag_do_not_convert__ = True
    except AttributeError:
        pass
    return func


experimental = types.SimpleNamespace(do_not_convert=do_not_convert)


# ----------------------------------------------------------------------------- analysis
class _Names(ast.NodeVisitor):
    """Names a statement list stores and loads, not looking into nested scopes (functions,
    lambdas, classes, comprehensions), whose names are their own."""

    def __init__(self):
        self.stored, self.loaded = [], set()
        self.jumps = set()          # 'break'/'continue' of this loop level, 'return', 'yield'
        self.scoped = False         # global/nonlocal/super(): not converted

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) or isinstance(node.ctx, ast.Del):
            if node.id not in self.stored and not node.id.startswith(_PREFIX):
                self.stored.append(node.id)
        else:
            self.loaded.add(node.id)

    def visit_FunctionDef(self, node):
        if not node.name.startswith(_PREFIX) and node.name not in self.stored:
            self.stored.append(node.name)
        for d in node.decorator_list + node.args.defaults + node.args.kw_defaults:
            if d is not None:
                self.visit(d)
        # what a nested function reads from here still counts as read
        inner = _Names()
        for s in node.body:
            inner.visit(s)
        self.loaded |= inner.loaded

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.stored.append(node.name)

    def visit_Lambda(self, node):
        inner = _Names()
        inner.visit(node.body)
        self.loaded |= inner.loaded

    def _comprehension(self, node):
        inner = _Names()
        inner.generic_visit(node)
        self.loaded |= inner.loaded

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Global(self, node):
        self.scoped = True

    visit_Nonlocal = visit_Global

    def visit_Return(self, node):
        self.jumps.add("return")
        self.generic_visit(node)

    def visit_Yield(self, node):
        self.jumps.add("yield")
        self.generic_visit(node)

    visit_YieldFrom = visit_Await = visit_Yield

    def visit_Break(self, node):
        self.jumps.add("break")

    def visit_Continue(self, node):
        self.jumps.add("continue")

    def visit_While(self, node):     # break/continue inside belong to the inner loop
        inner = _Names()
        for s in node.body + node.orelse:
            inner.visit(s)
        self.visit(node.test)
        self.stored.extend(n for n in inner.stored if n not in self.stored)
        self.loaded |= inner.loaded
        self.jumps |= inner.jumps & {"return", "yield"}
        self.scoped |= inner.scoped

    def visit_For(self, node):
        inner = _Names()
        inner.visit(node.target)
        for s in node.body + node.orelse:
            inner.visit(s)
        self.visit(node.iter)
        self.stored.extend(n for n in inner.stored if n not in self.stored)
        self.loaded |= inner.loaded
        self.jumps |= inner.jumps & {"return", "yield"}
        self.scoped |= inner.scoped

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args:
            self.scoped = True
        self.generic_visit(node)


def _names(stmts):
    v = _Names()
    for s in stmts if isinstance(stmts, list) else [stmts]:
        v.visit(s)
    return v


def _ends_in_return(stmts):
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


# ----------------------------------------------------------------------------- rewriting
class _Converter:
    def __init__(self, fn_loads):
        self.count = 0
        self.fn_loads = fn_loads      # every name the function reads anywhere
        # per enclosing loop, the names its body reads before assigning them: their values
        # come from the previous iteration, so an if inside that assigns one must give it
        self.carried = []

    def fresh(self, what):
        self.count += 1
        return f"{_PREFIX}{what}_{self.count}"

    # a statement list of a function body (returns may be folded into conds)
    def block(self, stmts, in_function=True):
        out = []
        stmts = list(stmts)
        i = 0
        while i < len(stmts):
            s = stmts[i]
            if in_function and isinstance(s, ast.If) and _ends_in_return(s.body) and \
                    not s.orelse and i + 1 < len(stmts):
                rest = stmts[i + 1:]
                if not _ends_in_return(rest):
                    rest = rest + [ast.Return(value=None)]
                s = ast.If(test=s.test, body=s.body, orelse=rest)
                ast.copy_location(s, stmts[i])
                out.extend(self.stmt(s, in_function))
                break
            out.extend(self.stmt(s, in_function))
            i += 1
        return out

    def stmt(self, s, in_function):
        if isinstance(s, ast.If):
            return self.if_(s, in_function)
        if isinstance(s, ast.While):
            return self.while_(s)
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, (ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if hasattr(s, field):
                    setattr(s, field, self.block(getattr(s, field), False) or
                            ([ast.Pass()] if field == "body" else []))
            if isinstance(s, ast.Try):
                for h in s.handlers:
                    h.body = self.block(h.body, False) or [ast.Pass()]
        return [s]

    def _state_call(self, names):
        return _call("state", [_call_raw("locals", []), _strs(names)])

    def _fn(self, name, params, body, returns):
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                             defaults=[])
        if returns is not None:
            body = body + [ast.Return(value=_tuple(returns))]
        return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()],
                               decorator_list=[], returns=None, type_comment=None)

    def if_(self, s, in_function):
        line = s.lineno
        s.test = _BoolOps().visit(s.test)
        both_return = in_function and _ends_in_return(s.body) and _ends_in_return(s.orelse)
        body_names, else_names = _names(s.body), _names(s.orelse)
        jumps = body_names.jumps | else_names.jumps
        if body_names.scoped or else_names.scoped or "yield" in jumps:
            return [s]
        if both_return:
            modified = _merge(body_names.stored, else_names.stored)
            t, f = self.fresh("if_true"), self.fresh("if_false")
            tdef = self._fn(t, modified, self.block(s.body), None)
            fdef = self._fn(f, modified, self.block(s.orelse), None)
            ret = ast.Return(value=_call("if_return", [
                s.test, ast.Name(id=t, ctx=ast.Load()), ast.Name(id=f, ctx=ast.Load()),
                self._state_call(modified), ast.Constant(line)]))
            return [_located(n, s) for n in (tdef, fdef, ret)]
        if jumps:     # return/break/continue in one branch: Python's if, refused if traced
            s.test = _call("py_test", [s.test, ast.Constant(line), ast.Constant(
                "if", kind=None), _strs(sorted(jumps))])
            s.body = self.block(s.body, False)
            s.orelse = self.block(s.orelse, False)
            return [s]
        modified = _merge(body_names.stored, else_names.stored)
        outside = self._loads_outside(s)
        live = [n for n in modified if n in outside or any(n in c for c in self.carried)]
        t, f = self.fresh("if_true"), self.fresh("if_false")
        tdef = self._fn(t, modified, self.block(s.body, False), live)
        fdef = self._fn(f, modified, self.block(s.orelse, False), live)
        call = _call("if_stmt", [s.test, ast.Name(id=t, ctx=ast.Load()),
                                 ast.Name(id=f, ctx=ast.Load()), self._state_call(modified),
                                 _strs(modified), _strs(live), ast.Constant(line)])
        return [_located(n, s) for n in (tdef, fdef, _assign(live, call))]

    def loop_body(self, s):
        """Loop ``s``'s body, converted knowing which names it carries between iterations."""
        self.carried.append(_exposed(s.body) | _exposed([s.test]) if isinstance(s, ast.While)
                            else _exposed(s.body))
        try:
            return self.block(s.body, False)
        finally:
            self.carried.pop()

    def _loads_outside(self, node):
        """The names read somewhere in the function outside statement ``node`` (read before
        ``node`` is converted)."""
        inside = self._counts(node)
        return {n for n, k in self.fn_loads.items() if k - inside.get(n, 0) > 0}

    def _counts(self, node):
        counts = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                counts[sub.id] = counts.get(sub.id, 0) + 1
        return counts

    def _loop_names(self, s, extra_targets=()):
        names = _names(s.body)
        if isinstance(s, ast.For):
            t = _names(s.target)
            names.stored = _merge(t.stored, names.stored)
        return names

    def _jumps(self, s, names):
        """Rewrite loop ``s``'s break/continue as flags where it can: ``(statements before
        the loop, the flags that end it, its names)``."""
        jumps = names.jumps
        exits = [getattr(s, "ag_exit")] if hasattr(s, "ag_exit") else []
        before = []
        if jumps and not names.scoped and not s.orelse and jumps <= {"break", "continue"} \
                and _jumps.loop_jumps(s) == jumps:
            self.count += 1
            before, brk = _jumps.rewrite_loop(s, jumps, self.count)
            exits += [brk] if brk else []
            names = self._loop_names(s)
            # the flags are read where the jumps were: live after the ifs that set them
            for name, k in self._counts(s).items():
                if name.startswith(_jumps.FLAG_PREFIX):
                    self.fn_loads[name] = self.fn_loads.get(name, 0) + k
        for name in exits:      # and by a for loop's exit test, made apart from the loop
            self.fn_loads[name] = self.fn_loads.get(name, 0) + 1
        return before, exits, names

    def while_(self, s):
        line = s.lineno
        before, _, names = self._jumps(s, self._loop_names(s))
        s.test = _BoolOps().visit(s.test)
        if names.scoped or names.jumps or s.orelse:
            s.test = _call("py_test", [s.test, ast.Constant(line), ast.Constant("while"),
                                       _strs(sorted(names.jumps) or ["else"])])
            s.body = self.block(s.body, False)
            return [s]
        modified = names.stored
        live = [n for n in modified if n in self._loads_outside(s)]
        c, b = self.fresh("while_cond"), self.fresh("while_body")
        cdef = self._fn(c, modified, [ast.Return(value=s.test)], None)
        bdef = self._fn(b, modified, self.loop_body(s), modified)
        call = _call("while_stmt", [ast.Name(id=c, ctx=ast.Load()),
                                    ast.Name(id=b, ctx=ast.Load()), self._state_call(modified),
                                    _strs(modified), _strs(live), ast.Constant(line)])
        return before + [_located(n, s) for n in (cdef, bdef, _assign(modified, call))]

    def for_(self, s):
        line = s.lineno
        before, exits, names = self._jumps(s, self._loop_names(s))
        it = s.iter
        if isinstance(it, ast.Call) and (
                isinstance(it.func, ast.Name) and it.func.id == "range" or
                isinstance(it.func, ast.Attribute) and it.func.attr == "range"):
            it = _call("range_", [it.func] + list(it.args), it.keywords)
            ast.copy_location(it, s.iter)
        if names.scoped or names.jumps or s.orelse:
            s.iter = _call("py_iter", [it, ast.Constant(line), _strs(sorted(names.jumps) or
                                                                     ["else"])])
            s.body = self.block(s.body, False)
            return [s]
        modified = names.stored
        live = [n for n in modified if n in self._loads_outside(s)]
        b = self.fresh("for_body")
        item = self.fresh("item")
        body = [ast.Assign(targets=[s.target], value=ast.Name(id=item, ctx=ast.Load()),
                           lineno=line)] + self.loop_body(s)
        bdef = self._fn(b, [item] + modified, body, modified)
        args = [it, ast.Name(id=b, ctx=ast.Load()), self._state_call(modified), _strs(modified),
                _strs(live), ast.Constant(line)]
        defs = [bdef]
        if exits:       # break (or a return inside): an extra test before each iteration
            e = self.fresh("for_exit")
            test = _BoolOps().visit(_jumps_not_any(exits))
            defs.append(self._fn(e, modified, [ast.Return(value=test)], None))
            args.append(ast.Name(id=e, ctx=ast.Load()))
        call = _call("for_stmt", args)
        return before + [_located(n, s) for n in defs + [_assign(modified, call)]]


class _Exposed(ast.NodeVisitor):
    """The names a statement list may read before assigning them (upward-exposed reads), in
    execution order: an assignment's value before its targets, a name assigned in only one
    branch of an ``if`` (or in a loop) not counted as assigned after it."""

    def __init__(self):
        self.assigned, self.exposed = set(), set()

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.assigned:
                self.exposed.add(node.id)
        else:
            self.assigned.add(node.id)

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name) and node.target.id not in self.assigned:
            self.exposed.add(node.target.id)
        self.visit(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def _branches(self, test, *bodies):
        if test is not None:
            self.visit(test)
        before = set(self.assigned)
        outs = []
        for body in bodies:
            self.assigned = set(before)
            for st in body:
                self.visit(st)
            outs.append(self.assigned)
        self.assigned = before | set.intersection(*outs) if outs else before

    def visit_If(self, node):
        self._branches(node.test, node.body, node.orelse)

    def visit_While(self, node):
        self._branches(node.test, node.body, [])
        self._branches(None, node.orelse)

    def visit_For(self, node):
        self.visit(node.iter)
        self._branches(None, [ast.Assign(targets=[node.target], value=ast.Constant(0))]
                       + node.body, [])
        self._branches(None, node.orelse)


def _exposed(stmts):
    v = _Exposed()
    for st in stmts:
        v.visit(st)
    return v.exposed


class _BoolOps(ast.NodeTransformer):
    """``a and b``, ``a or b``, ``not a`` of a condition: Python's, or logical operations on
    traced values (``ag__.and_(lambda: a, lambda: b)`` keeps Python's short circuit)."""

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):
            expr = _call(fn, [_thunk(v), _thunk(expr)])
        return ast.copy_location(expr, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", [node.operand]), node)
        return node

    def visit_Lambda(self, node):
        return node


def _jumps_not_any(flags):
    return ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flags[0], ctx=ast.Load())
                       if len(flags) == 1 else
                       ast.BoolOp(op=ast.Or(), values=[ast.Name(id=f, ctx=ast.Load())
                                                       for f in flags]))


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), body=expr)


def _merge(a, b):
    return list(a) + [n for n in b if n not in a]


def _strs(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _tuple(names):
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())


def _call(fn, args, keywords=()):
    return ast.Call(func=ast.Attribute(value=ast.Name(id=_PREFIX, ctx=ast.Load()), attr=fn,
                                       ctx=ast.Load()), args=list(args),
                    keywords=list(keywords))


def _call_raw(fn, args):
    return ast.Call(func=ast.Name(id=fn, ctx=ast.Load()), args=list(args), keywords=[])


def _assign(names, value):
    if not names:
        return ast.Expr(value=value)
    target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
    return ast.Assign(targets=[target], value=value)


def _located(node, like):
    ast.copy_location(node, like)
    for sub in ast.walk(node):
        if not hasattr(sub, "lineno") or getattr(sub, "lineno", None) is None:
            if isinstance(sub, (ast.stmt, ast.expr)):
                ast.copy_location(sub, like)
    return node


# ----------------------------------------------------------------------------- the function
def _tree_of(fn):
    """The converted ``FunctionDef`` of ``fn``, or None where it is not converted."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>" or \
            code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                             inspect.CO_ASYNC_GENERATOR):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != code.co_name:
        return None
    ast.increment_lineno(tree, first - 1)
    names = _names(fdef.body)
    if names.scoped or "yield" in names.jumps:
        return None
    if _jumps.returns_in_loops(fdef):
        _jumps.rewrite_returns(fdef)
        ast.fix_missing_locations(fdef)
    loads = {}
    for sub in ast.walk(fdef):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            loads[sub.id] = loads.get(sub.id, 0) + 1
    conv = _Converter(loads)
    fdef.body = conv.block(fdef.body)
    fdef.decorator_list = []
    if conv.count == 0 and not _has_converted(fdef):
        return None
    ast.fix_missing_locations(fdef)
    return fdef


def _has_converted(fdef):
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and
               n.value.id == _PREFIX for n in ast.walk(fdef))


def _build(fn, fdef):
    code = fn.__code__
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name=f"{_PREFIX}factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in [_PREFIX] + freevars],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec")
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType)
                    and c.co_name == fdef.name)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in new_code.co_freevars:
        if name == _PREFIX:
            closure.append(types.CellType(_rt))
        elif name in cells:
            closure.append(cells[name])
        else:
            return None
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(closure))
    new.__kwdefaults__ = fn.__kwdefaults__
    functools.update_wrapper(new, fn)
    new.__wrapped__ = fn
    new.__ag_converted__ = True
    return new


def convert(fn):
    """The AutoGraph-converted ``fn`` (a function, bound method or ``functools.partial`` of
    one); ``fn`` itself where there is nothing to convert or it cannot be."""
    if getattr(fn, "__ag_do_not_convert__", False) or getattr(fn, "__ag_converted__", False):
        return fn
    if isinstance(fn, functools.partial):
        inner = convert(fn.func)
        return fn if inner is fn.func else functools.partial(inner, *fn.args, **fn.keywords)
    if isinstance(fn, types.MethodType):
        inner = convert(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    if not isinstance(fn, types.FunctionType):
        return fn
    done = _converted.get(fn)
    if done is not None:
        return done
    fdef = _tree_of(fn)
    new = fn
    if fdef is not None:
        try:
            new = _build(fn, fdef) or fn
        except (SyntaxError, ValueError, TypeError):
            new = fn
    _converted[fn] = new
    return new


_converted = weakref.WeakKeyDictionary()     # function -> its converted copy (or itself)


def to_code(entity, recursive=True, experimental_optional_features=None):
    """Mirrors ``tf.autograph.to_code``: the source of ``entity`` as AutoGraph converts it."""
    fn = getattr(entity, "python_function", entity)
    fn = getattr(fn, "__func__", fn)
    fdef = _tree_of(fn) if isinstance(fn, types.FunctionType) else None
    if fdef is None:
        return textwrap.dedent(inspect.getsource(fn))
    return ast.unparse(fdef) + "\n"
