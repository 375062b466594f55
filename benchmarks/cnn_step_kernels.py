#!/usr/bin/env python3
"""Where the reference small CNN's training step spends its time, kernel by kernel, and how far
that is from this core's FLOP bound.

The model is ``../shared/bench/train_cnn.py``'s (32x32x3, batch 64, conv3x3(32, same, relu) ->
maxpool2 -> conv3x3(64, same, relu) -> maxpool2 -> dense 10, softmax cross-entropy, SGD with
momentum). Each row times one kernel of the step through tnp_train's own ops, eagerly:

  conv1 forward            im2col (K = 27) + GEMM, bias and ReLU fused
  conv1 backward-filter    ReLU mask + bias sum, cols.T @ dz (the input's gradient is never built)
  conv2 forward            Winograd F(2x2, 3x3): input transform, 16 GEMMs, output transform
  conv2 backward-filter    ReLU mask + bias sum, the cotangent's transform, 16 GEMMs, kernel adjoint
  conv2 backward-input     16 GEMMs into a reused buffer, the input transform's adjoint
  pool1/pool2 fwd, bwd     one Numba pass each (the argmax kept by the forward)
  dense fwd+bwd, xent fwd+bwd, SGD(momentum) update of the six variables

A backward row is (forward + the gradients asked) minus the rows it contains, so the rows add up
to a step without the framework around it. Beside them: this core's sgemm GFLOP/s (NumPy) on a
large square product and on the step's GEMM shapes, the step's FLOPs, and the time a step would
take at that rate (direct convolution FLOPs, and the multiplications Winograd leaves).

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/cnn_step_kernels.py

One thread; a cell is the minimum over --repeats of the mean CPU time (``time.process_time``)
of --inner calls: on a shared machine, time spent descheduled is not counted, and the minimum
is the least disturbed. Prints a markdown table and one ``JSON`` line.
"""
from __future__ import annotations

import argparse
import json
import os
import time


def pin():
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = "1"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def timer(repeats, inner):
    def t(fn):
        fn()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(inner):
                fn()
            best = min(best, (time.process_time() - t0) / inner)
        return best * 1e3
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--inner", type=int, default=3)
    args = ap.parse_args(argv)
    pin()
    import numpy as np
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass
    import tnp
    import tnp_train as tt
    from tnp_train.ops import conv as conv_ops
    from tnp_train.ops import dense as dense_ops
    from tnp_train.ops import pooling as pool_ops

    t = timer(args.repeats, args.inner)
    rng = np.random.default_rng(0)
    B, HW = 64, 32

    def glorot(shape, fi, fo):
        s = np.sqrt(6.0 / (fi + fo))
        return tt.Variable(rng.uniform(-s, s, shape).astype(np.float32))

    K1, b1 = glorot((3, 3, 3, 32), 27, 288), tt.Variable(np.zeros(32, np.float32))
    K2, b2 = glorot((3, 3, 32, 64), 288, 576), tt.Variable(np.zeros(64, np.float32))
    Wd, bd = glorot((4096, 10), 4096, 10), tt.Variable(np.zeros(10, np.float32))
    x = tnp.asarray(rng.random((B, HW, HW, 3), dtype=np.float32))
    labels = tnp.asarray(rng.integers(0, 10, B).astype(np.int64))
    h1 = conv_ops.conv2d(x, K1, b1, padding="same", activation="relu")
    p1 = pool_ops.max_pool2d(h1)
    h2 = conv_ops.conv2d(p1, K2, b2, padding="same", activation="relu")
    p2 = pool_ops.max_pool2d(h2)
    f = tnp.reshape(p2, (B, -1))
    cot = {name: tnp.asarray(rng.standard_normal(tuple(a.shape)).astype(np.float32))
           for name, a in (("h1", h1), ("p1", p1), ("h2", h2), ("p2", p2))}
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)

    def grads(fn, sources, out_grad):
        with tt.GradientTape() as tape:
            tape.watch([s for s in sources if not isinstance(s, tt.Variable)])
            y = fn()
        return tape.gradient(y, sources, output_gradients=out_grad)

    def conv1():
        return conv_ops.conv2d(x, K1, b1, padding="same", activation="relu")

    def conv2():
        return conv_ops.conv2d(p1, K2, b2, padding="same", activation="relu")

    rows = {}
    rows["conv1 forward"] = t(conv1)
    rows["conv1 backward-filter"] = t(lambda: grads(conv1, [K1, b1], cot["h1"])) - rows["conv1 forward"]
    rows["pool1 forward"] = t(lambda: pool_ops.max_pool2d(h1))
    rows["pool1 backward"] = t(lambda: grads(lambda: pool_ops.max_pool2d(h1), [h1], cot["p1"])) \
        - rows["pool1 forward"]
    rows["conv2 forward"] = t(conv2)
    fwd_dk = t(lambda: grads(conv2, [K2, b2], cot["h2"]))
    rows["conv2 backward-filter"] = fwd_dk - rows["conv2 forward"]
    rows["conv2 backward-input"] = t(lambda: grads(conv2, [K2, b2, p1], cot["h2"])) - fwd_dk
    rows["pool2 forward"] = t(lambda: pool_ops.max_pool2d(h2))
    rows["pool2 backward"] = t(lambda: grads(lambda: pool_ops.max_pool2d(h2), [h2], cot["p2"])) \
        - rows["pool2 forward"]

    def head():
        return loss_fn(labels, dense_ops.dense(f, Wd, bd))

    rows["dense + xent forward"] = t(head)
    rows["dense + xent backward"] = t(lambda: grads(head, [Wd, bd, f], None)) - rows["dense + xent forward"]
    opt = tt.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    vs = [K1, b1, K2, b2, Wd, bd]
    gs = [tnp.zeros(tuple(v.shape), dtype=np.float32) for v in vs]
    opt.apply_gradients(zip(gs, vs))
    rows["SGD(momentum) update"] = t(lambda: opt.apply_gradients(zip(gs, vs)))
    total = sum(rows.values())

    # this core's sgemm, and the step's FLOPs
    def gemm(m, k, n, ta=False):
        a = rng.random((k, m) if ta else (m, k), dtype=np.float32)
        b = rng.random((k, n), dtype=np.float32)
        o = np.empty((m, n), np.float32)
        ms = t(lambda: np.matmul(a.T if ta else a, b, out=o))
        return 2 * m * k * n / ms / 1e6
    rates = {"2048x2048x2048": gemm(2048, 2048, 2048),
             "conv1 fwd 65536x27x32": gemm(65536, 27, 32),
             "conv1 dk 27x65536x32 (A.T)": gemm(27, 65536, 32, ta=True),
             "conv2 im2col 16384x288x64": gemm(16384, 288, 64),
             "Winograd 4096x32x64": gemm(4096, 32, 64)}
    peak = rates["2048x2048x2048"]
    c1 = 2 * B * HW * HW * 27 * 32
    c2 = 2 * B * 16 * 16 * 288 * 64
    dense = 3 * 2 * B * 4096 * 10
    direct = 2 * c1 + 3 * c2 + dense
    wino = 2 * c1 + 3 * c2 / 2.25 + dense
    print(f"# cnn_step_kernels: tnp_train {tt.__version__ if hasattr(tt, '__version__') else ''}, "
          f"numpy {np.__version__}, one thread, min of {args.repeats} x {args.inner}")
    print("\n| kernel | ms |\n|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {v:.2f} |")
    print(f"| **sum** | **{total:.2f}** |")
    print("\n| sgemm (NumPy, one thread) | GFLOP/s |\n|---|---|")
    for k, v in rates.items():
        print(f"| {k} | {v:.1f} |")
    print(f"\nstep FLOPs: {direct / 1e9:.3f} G direct ({wino / 1e9:.3f} G with conv2 by Winograd); "
          f"at {peak:.0f} GFLOP/s: {direct / peak / 1e6:.1f} ms direct, {wino / peak / 1e6:.1f} ms "
          f"Winograd; kernels measured: {total:.1f} ms")
    print("JSON " + json.dumps({"bench": "cnn_step_kernels", "ms": rows, "sum_ms": total,
                                "sgemm_gflops": rates, "flops_direct": direct,
                                "flops_winograd": wino}))


if __name__ == "__main__":
    main()
