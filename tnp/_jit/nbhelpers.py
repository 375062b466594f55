"""What generated kernels import: the call of a NumPy inner loop from compiled code.

Kept in its own small module: every kernel inlines these, and the hash of this file is part of
every kernel's file name (kernel.py), so a change here never meets a kernel Numba cached
with the old code.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba import njit
from numba.extending import intrinsic

__all__ = ["loop_call2", "loop_call3", "pairwise_leaf"]


def _emit_loop_call(context, builder, signature, llargs, nops):
    """The body of loop_call2/3: the pointer and stride arrays a NumPy loop takes, built on
    the stack, then the call (one statement per loop call keeps big kernels quick to
    compile)."""
    i8p = ir.IntType(8).as_pointer()
    intp = ir.IntType(64)
    tys = signature.args
    # in the entry block: an alloca at the call site, inside the kernel's loops, would take
    # new stack at every iteration until the kernel returns
    ptrs = cgutils.alloca_once(builder, i8p, size=nops)
    steps = cgutils.alloca_once(builder, intp, size=nops)
    dims = cgutils.alloca_once(builder, intp)
    for k in range(nops):
        a = context.cast(builder, llargs[3 + 2 * k], tys[3 + 2 * k], types.intp)
        s = context.cast(builder, llargs[4 + 2 * k], tys[4 + 2 * k], types.intp)
        builder.store(builder.inttoptr(a, i8p), builder.gep(ptrs, [ir.Constant(intp, k)]))
        builder.store(s, builder.gep(steps, [ir.Constant(intp, k)]))
    builder.store(context.cast(builder, llargs[2], tys[2], types.intp), dims)
    fnty = ir.FunctionType(ir.VoidType(), [i8p, i8p, i8p, i8p])
    f = context.cast(builder, llargs[0], tys[0], types.intp)
    d = context.cast(builder, llargs[1], tys[1], types.intp)
    target = builder.inttoptr(f, fnty.as_pointer())
    builder.call(target, [builder.bitcast(ptrs, i8p), builder.bitcast(dims, i8p),
                          builder.bitcast(steps, i8p), builder.inttoptr(d, i8p)])
    return context.get_dummy_value()


def _all_int(*ts):
    return all(isinstance(t, types.Integer) for t in ts)


@intrinsic
def loop_call2(typingctx, fn, data, n, a0, s0, a1, s1):
    """Call the NumPy loop ``fn`` (with ``data``) on ``n`` elements of two operands (one in,
    one out): ``a*`` addresses, ``s*`` strides in bytes."""
    if not _all_int(fn, data, n, a0, s0, a1, s1):
        return None

    def codegen(context, builder, signature, llargs):
        return _emit_loop_call(context, builder, signature, llargs, 2)

    return types.void(fn, data, n, a0, s0, a1, s1), codegen


@intrinsic
def loop_call3(typingctx, fn, data, n, a0, s0, a1, s1, a2, s2):
    """As :func:`loop_call2`, for three operands (two in, one out; or a reduction)."""
    if not _all_int(fn, data, n, a0, s0, a1, s1, a2, s2):
        return None

    def codegen(context, builder, signature, llargs):
        return _emit_loop_call(context, builder, signature, llargs, 3)

    return types.void(fn, data, n, a0, s0, a1, s1, a2, s2), codegen


@njit(inline="always", error_model="numpy")
def pairwise_leaf(a, s, n):
    """The sum of ``a[s:s + n]`` (8 <= n <= 128) in the order of NumPy's pairwise summation
    at its leaves: eight running sums over every eighth element, added as a balanced tree,
    then the last ``n % 8`` elements one by one (kernel.py builds the tree above the leaves,
    and checks the order against NumPy's before using it). The eight sums are independent,
    so LLVM keeps them in one vector register."""
    r0 = a[s]
    r1 = a[s + 1]
    r2 = a[s + 2]
    r3 = a[s + 3]
    r4 = a[s + 4]
    r5 = a[s + 5]
    r6 = a[s + 6]
    r7 = a[s + 7]
    m = n - n % 8
    for i in range(s + 8, s + m, 8):
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(s + m, s + n):
        res += a[i]
    return res
