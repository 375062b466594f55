"""``tt.cond``, ``tt.while_loop``, ``tt.switch_case``, ``tt.map_fn``, ``tt.range``: TF 2.4's
control flow, eagerly and inside compiled functions.

Eagerly (and wherever the decision is a Python value) they are plain Python control flow on
concrete values, as in TF's eager mode, so a ``GradientTape`` records the operations of the
branch taken and of each iteration like any others. While a compiled function is traced and
the predicate, index or loop condition is a tnp array, they become one node of the compiled
program (``tnp.extend.control_switch`` / ``control_while``): every branch, the loop condition
and the body are traced once, and each run executes only the branch taken, or the body as many
times as the condition says. Structures of values (lists, tuples, dicts, namedtuples) are
``tf.nest``'s (:mod:`tnp_train.utils.tree`); TF's errors for branches that disagree and for
loop variables that change dtype or shape.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp import extend as _ext

from ..autodiff import traced_control as _taped
from ..errors import InvalidArgumentError
from ..utils import tree as _tree

__all__ = ["cond", "while_loop", "switch_case", "map_fn", "range"]

_builtin_range = range


def _is_array(x):
    return _ext.is_tnp_array(x)


def _describe(x):
    if x is None:
        return "None"
    if _is_array(x) or isinstance(x, _np.ndarray):
        return f"Tensor(shape={tuple(x.shape)}, dtype={_np.dtype(x.dtype).name})"
    return repr(x)


def _as_leaf(x):
    return x if _is_array(x) else tnp.asarray(x)


def _scalar_truth(value, what):
    """A condition's Python truth: a tnp array must be a scalar (TF: a scalar boolean)."""
    if _is_array(value):
        if value.ndim != 0:
            raise ValueError(f"{what} must be a scalar, got shape {tuple(value.shape)}")
        return bool(value)
    return bool(value)


# ----------------------------------------------------------------------------- branches
def _traced_branches(op, index, fns, labels, default=None):
    """One switch node over ``fns``; their outputs must agree in structure and dtypes."""
    structures = [None] * len(fns)
    nones = [None] * len(fns)

    def wrap(i, fn):
        def run():
            out = fn()
            structures[i] = out
            flat = _tree.flatten(out)
            nones[i] = tuple(k for k, x in enumerate(flat) if x is None)
            return [_as_leaf(x) for x in flat if x is not None]
        return run

    def check(outputs):
        for i in _builtin_range(1, len(fns)):
            try:
                _tree.assert_same_structure(structures[0], structures[i])
                ok = nones[0] == nones[i]
                detail = "" if ok else "None in one and not the other"
            except (ValueError, TypeError) as e:
                ok, detail = False, str(e)
            if ok:
                bad = [(a, b) for a, b in zip(outputs[0], outputs[i]) if a.dtype != b.dtype]
                if bad:
                    a, b = bad[0]
                    raise TypeError(_disagree(op, labels, i, structures,
                                              f"{_describe(a)} and {_describe(b)} have "
                                              f"different types"))
            else:
                raise ValueError(_disagree(op, labels, i, structures, detail))

    outs = _taped.switch(index, [wrap(i, f) for i, f in enumerate(fns)],
                          default=default, check=check, name=op.replace("tf.", ""))
    flat, it = [], iter(outs)
    n = len(_tree.flatten(structures[0]))
    for k in _builtin_range(n):
        flat.append(None if k in nones[0] else next(it))
    return _tree.pack_sequence_as(structures[0], flat)


def _disagree(op, labels, i, structures, detail):
    return (f"{labels[0]} and {labels[i]} arguments to {op} must have the same number, type, "
            f"and overall structure of return values.\n\n{labels[0]} output: "
            f"{_tree.map_structure(_describe, structures[0])}\n{labels[i]} output: "
            f"{_tree.map_structure(_describe, structures[i])}\n\nError details:\n{detail}")


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Mirrors ``tf.cond(pred, true_fn=None, false_fn=None, name=None)`` (TF 2's, strict: a
    one-element list is returned as a list): ``true_fn()`` if ``pred`` else ``false_fn()``.
    In a compiled function with a traced ``pred``, both branches are traced, their outputs
    must have the same structure and dtypes (TF's TypeError/ValueError otherwise), and each
    run executes only the branch ``pred`` selects."""
    if true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if _ext.is_traced(pred):
        if pred.ndim != 0:
            raise ValueError(f"cond: pred must be a scalar, got shape {tuple(pred.shape)}")
        return _cond_traced(pred, true_fn, false_fn)
    return true_fn() if _scalar_truth(pred, "cond: pred") else false_fn()


def _cond_traced(pred, true_fn, false_fn):
    # the switch's branch 0 is taken on False; TF names true_fn first in its messages
    return _traced_branches("tf.cond", _bool_index(pred), [true_fn, false_fn],
                            ["true_fn", "false_fn"])


def _bool_index(pred):
    """0 for True, 1 for False (true_fn is branch 0), as an integer index."""
    if pred.dtype == _np.bool_:
        return tnp.where(pred, 0, 1)
    return tnp.where(pred != 0, 0, 1)


def _branch_list(branch_fns, default):
    if isinstance(branch_fns, dict):
        pairs = list(branch_fns.items())
    else:
        pairs = list(branch_fns)
    if not pairs:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if all(callable(p) for p in pairs):
        fns = pairs
    else:
        for p in pairs:
            if not (isinstance(p, tuple) and len(p) == 2):
                raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple (or a callable, "
                                f"in a list of callables). Received {p!r}.")
        keys = sorted(k for k, _ in pairs)
        if keys != list(_builtin_range(len(pairs))):
            raise ValueError(f"branch indices (keys) must form contiguous range of [0 to "
                             f"{len(pairs)}) but found {{{','.join(str(k) for k in keys)}}}")
        fns = [f for _, f in sorted(pairs, key=lambda p: p[0])]
    for i, f in enumerate(fns):
        if not callable(f):
            raise TypeError(f"switch_case: branch_fns[{i}] must be callable, got "
                            f"{type(f).__name__}")
    if default is not None:
        if not callable(default):
            raise TypeError("switch_case: default must be callable")
        fns = fns + [default]
    return fns


def switch_case(branch_index, branch_fns, default=None, name=None):
    """Mirrors ``tf.switch_case(branch_index, branch_fns, default=None, name=None)``: the
    result of ``branch_fns[branch_index]()``; an index out of range runs ``default`` (the last
    branch when None). ``branch_fns``: a list of callables, of ``(int, callable)`` pairs, or a
    dict ``{int: callable}`` (keys ``0..n-1``). ``branch_index``: an integer scalar (a Python
    int too, where TF wants a tensor). In a compiled function with a traced index, every
    branch is traced and each run executes only the one selected."""
    fns = _branch_list(branch_fns, default)
    if _is_array(branch_index) or isinstance(branch_index, _np.generic):
        kind = _np.dtype(branch_index.dtype).kind
        if kind not in "iu":
            raise TypeError(f"'branch_index' must be an integer Tensor, got "
                            f"{_np.dtype(branch_index.dtype).name}")
        if _np.ndim(branch_index) != 0:
            raise ValueError(f"switch_case: branch_index must be a scalar, got shape "
                             f"{tuple(_np.shape(branch_index))}")
    elif not isinstance(branch_index, int) or isinstance(branch_index, bool):
        raise TypeError(f"'branch_index' must be an integer Tensor, got "
                        f"{type(branch_index).__name__}")
    if _ext.is_traced(branch_index):
        labels = [f"branches[{i}]" for i in _builtin_range(len(fns))]
        return _traced_branches("tf.switch_case", branch_index, fns, labels,
                                default=len(fns) - 1)
    i = int(branch_index)
    if i < 0 or i >= len(fns):
        i = len(fns) - 1
    return fns[i]()


# ----------------------------------------------------------------------------- loops
def _leaf_names(loop_vars):
    n = len(_tree.flatten(loop_vars))
    return [f"loop_vars[{i}]" if n > 1 else "loop_vars" for i in _builtin_range(n)]


def _body_result(out, loop_vars, single):
    if single and not (isinstance(out, (list, tuple))):
        out = (out,)
    _tree.assert_same_structure(loop_vars, out, check_types=False)
    return _tree.pack_sequence_as(loop_vars, _tree.flatten(out))


def _fits(invariant, shape):
    if invariant is None:
        return False
    dims = getattr(invariant, "dims", invariant)
    if dims is None:
        return True
    dims = [getattr(d, "value", d) for d in dims]
    return len(dims) == len(shape) and all(d is None or d == s for d, s in zip(dims, shape))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Mirrors ``tf.while_loop`` (TF 2.4's v2 signature): repeats ``loop_vars =
    body(*loop_vars)`` while ``cond(*loop_vars)`` is true, at most ``maximum_iterations``
    times; returns the loop variables in ``loop_vars``'s structure. A body of one loop
    variable may return it bare (as in TF's graph mode). In a compiled function whose loop
    variables or condition are traced, the loop is one node of the program: each iteration
    keeps every loop variable's dtype (TypeError) and shape (ValueError, unless
    ``shape_invariants`` allow it: that loop then runs eagerly). ``parallel_iterations``,
    ``back_prop`` and ``swap_memory`` are accepted and change nothing here."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations <= 0:
        raise ValueError("'parallel_iterations' must be a positive integer.")
    if loop_vars is None or (isinstance(loop_vars, (list, tuple, dict)) and not loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    bare = not _tree.is_nested(loop_vars)
    if bare:
        loop_vars = (loop_vars,)
    single = len(loop_vars) == 1 and isinstance(loop_vars, (list, tuple))
    if maximum_iterations is not None and not _is_array(maximum_iterations) and \
            maximum_iterations < 0:
        maximum_iterations = 0
    flat = _tree.flatten(loop_vars)
    if _ext.tracing():      # a node of the compiled program, whatever the loop variables

        result = _traced_while(cond, body, loop_vars, flat, single, shape_invariants,
                               maximum_iterations)
    else:
        result = loop_vars
        limit = None if maximum_iterations is None else int(maximum_iterations)
        it = 0
        while (limit is None or it < limit) and \
                _scalar_truth(cond(*result), "while_loop: the condition"):
            result = _body_result(body(*result), loop_vars, single)
            it += 1
    return result[0] if bare else result


def _traced_while(cond, body, loop_vars, flat, single, shape_invariants, maximum_iterations):
    names = _leaf_names(loop_vars)
    invariants = None if shape_invariants is None else \
        _tree.flatten_up_to(loop_vars, shape_invariants, check_types=False)

    def cond_flat(*leaves):
        c = cond(*_tree.pack_sequence_as(loop_vars, list(leaves)))
        if _is_array(c) and c.ndim != 0:
            raise ValueError(f"while_loop: the condition must be a scalar, got shape "
                             f"{tuple(c.shape)}")
        return c

    def body_flat(*leaves):
        out = _body_result(body(*_tree.pack_sequence_as(loop_vars, list(leaves))),
                           loop_vars, single)
        return [_as_leaf(x) for x in _tree.flatten(out)]

    def check(params, outs):
        for k, (p, o) in enumerate(zip(params, outs)):
            if p.dtype != o.dtype:
                raise TypeError(f"Loop var {names[k]} enters the loop with type "
                                f"{_np.dtype(p.dtype).name} but has type "
                                f"{_np.dtype(o.dtype).name} after 1 iteration. {names[k]} "
                                f"type should remain constant.")
            if tuple(p.shape) != tuple(o.shape):
                if invariants is not None and _fits(invariants[k], tuple(o.shape)):
                    raise _ext.UnsupportedTrace(
                        f"while_loop: {names[k]} changes shape from {tuple(p.shape)} to "
                        f"{tuple(o.shape)} (its shape_invariants allow it): a compiled loop "
                        f"needs fixed shapes")
                raise ValueError(
                    f"Input tensor `{names[k]}` enters the loop with shape {tuple(p.shape)}, "
                    f"but has shape {tuple(o.shape)} after one iteration. To allow the shape "
                    f"to vary across iterations, use the `shape_invariants` argument of "
                    f"tf.while_loop to specify a less-specific shape.")

    leaves = [_as_leaf(x) for x in flat]
    outs = _taped.while_loop(cond_flat, body_flat, leaves,
                             maximum_iterations=maximum_iterations, check=check)
    return _tree.pack_sequence_as(loop_vars, outs)


# ----------------------------------------------------------------------------- map_fn
def _dtype_of(sig):
    dt = sig if isinstance(sig, type) else getattr(sig, "dtype", sig)
    return None if dt is None else _np.dtype(getattr(dt, "as_numpy_dtype", dt))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """Mirrors ``tf.map_fn`` (TF 2.4): ``fn`` applied to each element of ``elems`` along axis 0
    (a nested structure of arrays with one length; ``fn`` receives the same structure), the
    results stacked. Their structure and dtypes are ``elems``'s unless ``fn_output_signature``
    (or the deprecated ``dtype``) says otherwise (a dtype, a ``TensorSpec`` or a structure of
    them); a result of another dtype is an ``InvalidArgumentError`` and of another shape than
    the first element's a ``ValueError``, as in TF. In a compiled function each element's call
    is traced (the length is known from the shapes), so effects happen once per element."""
    if not callable(fn):
        raise TypeError(f"map_fn: fn must be callable, got {type(fn).__name__}")
    if fn_output_signature is None:
        fn_output_signature = dtype
    flat_in = [_as_leaf(x) for x in _tree.flatten(elems)]
    if not flat_in:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. "
                         "Got {}".format(elems))
    for x in flat_in:
        if x.ndim == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n = flat_in[0].shape[0]
    for x in flat_in[1:]:
        if x.shape[0] != n:
            raise ValueError(f"Dimensions {n} and {x.shape[0]} are not compatible")
    if fn_output_signature is None:
        out_struct = elems
        out_dtypes = [x.dtype for x in flat_in]
    else:
        out_struct = fn_output_signature
        out_dtypes = [_dtype_of(s) for s in _tree.flatten(fn_output_signature)]
    results = []
    first_shapes = None
    for i in _builtin_range(n):
        item = _tree.pack_sequence_as(elems, [x[i] for x in flat_in])
        out = fn(item)
        _tree.assert_same_structure(out_struct, out, check_types=False)
        leaves = [_as_leaf(y) for y in _tree.flatten(out)]
        for y, want in zip(leaves, out_dtypes):
            if want is not None and _np.dtype(y.dtype) != want:
                raise InvalidArgumentError(f"TensorArray dtype is {want.name} but "
                                           f"Op is trying to write dtype "
                                           f"{_np.dtype(y.dtype).name}")
        shapes = [tuple(y.shape) for y in leaves]
        if first_shapes is None:
            first_shapes = shapes
        elif infer_shape:
            for s0, s in zip(first_shapes, shapes):
                if s0 != s:
                    raise ValueError(f"Incompatible shape for value ({s}), expected ({s0})")
        results.append(leaves)
    if n == 0:
        stacked = [tnp.zeros((0,), dtype=dt or "float32") for dt in out_dtypes]
    else:
        stacked = [tnp.stack([r[k] for r in results]) for k in _builtin_range(len(results[0]))]
    return _tree.pack_sequence_as(out_struct, stacked)


def range(start, limit=None, delta=1, dtype=None, name="range"):   # noqa: A001 (TF's name)
    """Mirrors ``tf.range(start, limit=None, delta=1, dtype=None, name='range')``: the numbers
    ``start, start + delta, ...`` below ``limit`` (``tnp.arange``). In a function AutoGraph
    converts, ``for i in tt.range(n)`` with a traced ``n`` becomes a compiled loop."""
    if limit is None:
        start, limit = 0, start
    return tnp.arange(start, limit, delta, dtype=dtype)
