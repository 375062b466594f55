#!/usr/bin/env python3
"""Conv2D(3x3, same, relu) + MaxPooling2D(2) forward and backward, on the two blocks of the
benchmark CNN (bench/train_cnn.py): batch 64, 32x32x3 -> 32 filters, and 16x16x32 -> 64.

One measurement = forward, then the gradients of ``sum(pool(out) * dy)`` for a fixed cotangent
``dy``: kernel and bias always, the input's only for the second block (the first block's input
is the data, as in the CNN). Implementations:

  numpy-im2col  hand-written NHWC im2col (9 shifted slices + concatenate) + matmul, ReLU mask,
                2x2 max-pool by reshape, backward by hand (the reference: ratio 1.00; the same
                code as the CNN benchmark's numpy-im2col)
  tnp_train     tnp_train.layers Conv2D(activation="relu") + MaxPooling2D under a GradientTape
  torch         PyTorch eager, NCHW (if importable)
  torch-cl      PyTorch eager, channels_last memory format (if importable)

Implementations are timed round-robin, one thread; a cell is the median over repeats of the
milliseconds of one forward+backward. The gradients of every implementation are checked
against the reference first. Usage:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/conv_layers.py --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

BLOCKS = {"block1": (64, 32, 3, 32), "block2": (64, 16, 32, 64)}   # batch, hw, cin, filters


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(threads)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, set(cpus))


def make_data(block, seed=0):
    import numpy as np

    B, hw, cin, f = BLOCKS[block]
    rng = np.random.default_rng(seed)
    s = np.sqrt(6.0 / (9 * cin + 9 * f))
    return {"x": rng.random((B, hw, hw, cin), dtype=np.float32),
            "K": rng.uniform(-s, s, (3, 3, cin, f)).astype(np.float32),
            "b": (0.1 * rng.standard_normal(f)).astype(np.float32),
            "dy": rng.standard_normal((B, hw // 2, hw // 2, f)).astype(np.float32),
            "need_dx": block != "block1"}


# ----------------------------------------------------------------------------- implementations
class NumpyIm2col:
    def __init__(self, d):
        import numpy as np

        self.np, self.d = np, d

    def run(self):
        np, d = self.np, self.d
        x, K, b, dy = d["x"], d["K"], d["b"], d["dy"]
        B, H, W, C = x.shape
        F = K.shape[-1]
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = np.concatenate([xp[:, i:i + H, j:j + W, :] for i in range(3) for j in range(3)], axis=-1)
        cols = cols.reshape(B * H * W, 9 * C)
        z = (cols @ K.reshape(9 * C, F) + b).reshape(B, H, W, F)
        h = np.maximum(z, 0)
        hr = h.reshape(B, H // 2, 2, W // 2, 2, F)
        p = hr.max(axis=(2, 4))
        # backward
        mask = hr == p[:, :, None, :, None, :]
        dh = (mask * dy[:, :, None, :, None, :]).reshape(B, H, W, F)
        dz = (dh * (z > 0)).reshape(-1, F)
        dK = (cols.T @ dz).reshape(K.shape)
        db = dz.sum(axis=0)
        dx = None
        if d["need_dx"]:
            dcols = (dz @ K.reshape(9 * C, F).T).reshape(B, H, W, 9, C)
            dxp = np.zeros((B, H + 2, W + 2, C), dtype=np.float32)
            for k in range(9):
                i, j = divmod(k, 3)
                dxp[:, i:i + H, j:j + W, :] += dcols[:, :, :, k, :]
            dx = dxp[:, 1:H + 1, 1:W + 1, :]
        return p, dK, db, dx


class TnpTrain:
    def __init__(self, d):
        import tnp
        import tnp_train as tt
        from tnp_train.layers.convolutional import Conv2D
        from tnp_train.layers.pooling import MaxPooling2D

        self.tt, self.d = tt, d
        self.conv = Conv2D(d["K"].shape[-1], 3, padding="same", activation="relu")
        self.pool = MaxPooling2D(2)
        self.conv.build(d["x"].shape)
        self.conv.set_weights([d["K"], d["b"]])
        self.x = tnp.asarray(d["x"])
        self.dy = tnp.asarray(d["dy"])

    def run(self):
        tt = self.tt
        with tt.GradientTape() as tape:
            if self.d["need_dx"]:
                tape.watch(self.x)
            p = self.pool(self.conv(self.x))
        srcs = [self.conv.kernel, self.conv.bias] + ([self.x] if self.d["need_dx"] else [])
        g = tape.gradient(p, srcs, output_gradients=self.dy)
        return p, g[0], g[1], g[2] if self.d["need_dx"] else None


class Torch:
    def __init__(self, d, channels_last=False):
        import torch

        torch.set_num_threads(1)
        self.torch, self.d = torch, d
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        self.x = torch.from_numpy(d["x"].transpose(0, 3, 1, 2).copy()).contiguous(memory_format=fmt)
        self.x.requires_grad_(d["need_dx"])
        self.w = torch.from_numpy(d["K"].transpose(3, 2, 0, 1).copy()).contiguous(memory_format=fmt)
        self.w.requires_grad_(True)
        self.b = torch.from_numpy(d["b"].copy()).requires_grad_(True)
        self.dy = torch.from_numpy(d["dy"].transpose(0, 3, 1, 2).copy()).contiguous(memory_format=fmt)

    def run(self):
        F = self.torch.nn.functional
        for t in (self.x, self.w, self.b):
            t.grad = None
        p = F.max_pool2d(F.relu(F.conv2d(self.x, self.w, self.b, padding=1)), 2)
        p.backward(self.dy)
        dx = self.x.grad.permute(0, 2, 3, 1).numpy() if self.d["need_dx"] else None
        return (p.detach().permute(0, 2, 3, 1).numpy(), self.w.grad.permute(2, 3, 1, 0).numpy(),
                self.b.grad.numpy(), dx)


def build(name, d):
    if name == "numpy-im2col":
        return NumpyIm2col(d)
    if name == "tnp_train":
        return TnpTrain(d)
    if name in ("torch", "torch-cl"):
        return Torch(d, channels_last=name == "torch-cl")
    raise ValueError(f"unknown implementation {name!r}")


def check(ref, got, name):
    """Norm-wise relative errors: in float32 a few max-pool near-ties or ReLU inputs near 0 can
    route a gradient element differently between two correct implementations."""
    import numpy as np

    for what, a, b in zip(("pool output", "dK", "db", "dx"), ref, got):
        if a is None:
            continue
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        err = float(np.linalg.norm(a - b) / (np.linalg.norm(a) + 1e-30))
        if err > (1e-5 if what == "pool output" else 1e-2):
            raise AssertionError(f"{name}: {what} differs from numpy-im2col (relative {err:.2e})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--iters", type=int, default=5, help="forward+backward runs per timed batch")
    ap.add_argument("--impls", default="numpy-im2col,tnp_train,torch,torch-cl")
    ap.add_argument("--blocks", default="block1,block2")
    args = ap.parse_args(argv)
    pin(args.threads)
    impls = args.impls.split(",")
    results, unavailable = {}, {}
    for block in args.blocks.split(","):
        d = make_data(block)
        runners = {}
        for name in impls:
            try:
                runners[name] = build(name, d)
            except ImportError as e:
                unavailable[name] = str(e)
        ref = runners["numpy-im2col"].run() if "numpy-im2col" in runners else None
        for name, r in runners.items():
            out = r.run()        # warm-up (Numba caches, allocator)
            if ref is not None:
                check(ref, out, name)
        samples = {name: [] for name in runners}
        for _ in range(args.repeats):
            for name, r in runners.items():
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    r.run()
                samples[name].append((time.perf_counter() - t0) / args.iters * 1e3)
        results[block] = {name: statistics.median(v) for name, v in samples.items()}
    B, hw, cin, f = BLOCKS["block1"]
    print(f"# conv_layers: Conv2D(3x3, same, relu) + MaxPooling2D(2), forward+backward, float32, "
          f"threads={args.threads}, median of {args.repeats} x {args.iters}")
    names = [n for n in impls if all(n in r for r in results.values())]
    print("| block | " + " | ".join(f"{n} ms" for n in names) + " | " +
          " | ".join(f"{n} speed vs numpy-im2col" for n in names if n != "numpy-im2col") + " |")
    print("|---" * (1 + len(names) + len([n for n in names if n != "numpy-im2col"])) + "|")
    for block, res in results.items():
        base = res.get("numpy-im2col")
        cells = [f"{res[n]:.2f}" for n in names]
        ratios = [f"{base / res[n]:.2f}" if base else "-" for n in names if n != "numpy-im2col"]
        B, hw, cin, f = BLOCKS[block]
        print(f"| {block} {hw}x{hw}x{cin}->{f} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    if unavailable:
        print(f"# unavailable: {unavailable}")
    print("JSON " + json.dumps({"bench": "conv_layers", "threads": args.threads, "ms": results,
                                "unavailable": unavailable}))


if __name__ == "__main__":
    sys.exit(main())
