#!/usr/bin/env python3
"""Training-step time under the float32, mixed_float16 and mixed_bfloat16 policies
(tnp_train.mixed_precision), on the CPU or on a GPU.

One training step = forward under a GradientTape, the loss (sparse categorical cross-entropy on
logits), the gradients and an SGD(momentum=0.9) update; under mixed_float16 the optimizer is a
LossScaleOptimizer (as ``Model.compile`` does), so its scaling and inf/NaN check are timed too.

  CPU (default, one thread):
    mlp   Dense 784-512-512-10 (relu), batch 128
    cnn   the bench CNN: 32x32x3 -> Conv2D(32, 3x3, same, relu) -> MaxPool 2 -> Conv2D(64) ->
          MaxPool 2 -> Flatten -> Dense 10, batch 64
  --device gpu (CuPy; skipped with a message when there is no usable GPU):
    resnet a ResNet-style CNN on 64x64x3 images, batch 256: a 3x3 stem, then three stages of
          (3x3 conv, residual block of two 3x3 convs + identity) with 32/64/128 filters and 2x2
          max-pooling between stages, global average pooling, Dense 10

Policies are timed round-robin (each repeat visits every policy), a cell is the median over
repeats of the milliseconds per step, and the ratio is float32's time divided by the policy's
(above 1: faster than float32). Usage:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py
  .venv/bin/python benchmarks/mixed_precision.py --device gpu
  .venv/bin/python benchmarks/mixed_precision.py --device cpu:1 --quick   # the GPU path, dry run

On a CPU NumPy has no 16-bit arithmetic units: float16/bfloat16 elementwise work is converted
element by element and the GEMMs run in float32 after a cast, so mixed policies are expected to
be slower than float32 there; they exist for GPUs (tensor cores) and for memory.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(threads)
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, set(cpus))


def conv_layers():
    """(Conv2D, MaxPooling2D, GlobalAveragePooling2D) or None when they do not exist yet."""
    import tnp_train as tt

    L = tt.layers
    try:
        return L.Conv2D, L.MaxPooling2D, L.GlobalAveragePooling2D
    except AttributeError:
        pass
    try:
        from tnp_train.layers.convolutional import Conv2D
        from tnp_train.layers.pooling import GlobalAveragePooling2D, MaxPooling2D
        return Conv2D, MaxPooling2D, GlobalAveragePooling2D
    except ImportError:
        return None


# ----------------------------------------------------------------------------- models
def mlp(tt):
    L = tt.layers
    return tt.Sequential([L.Dense(512, activation="relu"), L.Dense(512, activation="relu"),
                          L.Dense(10)]), (128, 784)


def cnn(tt):
    Conv2D, MaxPooling2D, _ = conv_layers()
    L = tt.layers
    return tt.Sequential([Conv2D(32, 3, padding="same", activation="relu"), MaxPooling2D(2),
                          Conv2D(64, 3, padding="same", activation="relu"), MaxPooling2D(2),
                          L.Flatten(), L.Dense(10)]), (64, 32, 32, 3)


def resnet(tt, batch=256, size=64):
    Conv2D, MaxPooling2D, GlobalAveragePooling2D = conv_layers()
    L = tt.layers
    inp = tt.Input((size, size, 3))
    h = Conv2D(32, 3, padding="same", activation="relu")(inp)
    for i, f in enumerate((32, 64, 128)):
        if i:
            h = MaxPooling2D(2)(h)
            h = Conv2D(f, 3, padding="same", activation="relu")(h)
        r = Conv2D(f, 3, padding="same", activation="relu")(h)
        r = Conv2D(f, 3, padding="same")(r)
        h = L.Activation("relu")(L.Add()([h, r]))
    out = L.Dense(10)(GlobalAveragePooling2D()(h))
    return tt.Model(inp, out), (batch, size, size, 3)


MODELS = {"mlp": mlp, "cnn": cnn, "resnet": resnet}


class Runner:
    """One model under one policy, with its optimizer and a fixed batch."""

    def __init__(self, tt, tnp, model_name, policy, device, seed=0, **model_kwargs):
        import numpy as np

        tt.mixed_precision.set_global_policy(policy)
        try:
            tt.utils.set_random_seed(seed)
            self.model, shape = MODELS[model_name](tt, **model_kwargs)
            rng = np.random.default_rng(seed)
            self.x = tnp.asarray(rng.standard_normal(shape).astype(np.float32), device=device)
            self.y = tnp.asarray(rng.integers(0, 10, shape[0]), device=device)
            opt = tt.optimizers.SGD(0.01, momentum=0.9)
            if policy == "mixed_float16":
                opt = tt.mixed_precision.LossScaleOptimizer(opt)
            self.opt = opt
            self.loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
        finally:
            tt.mixed_precision.set_global_policy(None)
        self.tt, self.tnp, self.gpu = tt, tnp, tnp.device(device).is_gpu
        self.last_loss = None

    def step(self):
        tt = self.tt
        with tt.GradientTape() as tape:
            logits = self.model(self.x, training=True)
            loss = self.loss_fn(self.y, logits)
        self.opt.minimize(loss, self.model.trainable_variables, tape=tape)
        if self.gpu:
            self.tnp.synchronize()
        self.last_loss = loss


def run_model(tt, tnp, model_name, policies, device, repeats, iters, warmup, **model_kwargs):
    runners, errors = {}, {}
    for p in policies:
        try:
            runners[p] = Runner(tt, tnp, model_name, p, device, **model_kwargs)
            for _ in range(warmup):
                runners[p].step()
        except Exception as e:  # noqa: BLE001 - a policy the backend cannot run is reported
            runners.pop(p, None)
            errors[p] = f"{type(e).__name__}: {e}"
    samples = {p: [] for p in runners}
    for _ in range(repeats):
        for p, r in runners.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                r.step()
            samples[p].append((time.perf_counter() - t0) / iters * 1e3)
    ms = {p: statistics.median(v) for p, v in samples.items()}
    losses = {p: float(r.last_loss) for p, r in runners.items()}
    extra = {p: float(r.opt.loss_scale) for p, r in runners.items()
             if hasattr(r.opt, "loss_scale")}
    return ms, losses, errors, extra


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu",
                    help="cpu (default), gpu (= gpu:0), or any tnp device name (cpu:1 runs the "
                         "GPU models on the CPU, to check the script)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default=None,
                    help="comma list of mlp,cnn,resnet (default: mlp,cnn on the CPU, resnet on a "
                         "GPU)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--iters", type=int, default=3, help="steps per timed batch")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=None, help="resnet batch (default 256)")
    ap.add_argument("--image-size", type=int, default=None, help="resnet image size (default 64)")
    ap.add_argument("--quick", action="store_true",
                    help="3 repeats of 1 step, resnet at batch 8 on 16x16 unless given")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    dev_name = {"gpu": "gpu:0", "cuda": "gpu:0"}.get(args.device, args.device)
    gpu_run = args.device != "cpu"
    pin(args.threads)
    if args.quick:
        args.repeats, args.iters, args.warmup = 3, 1, 1

    import tnp
    import tnp_train as tt

    try:
        device = tnp.device(dev_name)
    except Exception as e:  # noqa: BLE001 - no CuPy / no GPU: a skip, not a failure
        print(f"# mixed_precision: device {dev_name} is not usable here ({type(e).__name__}: "
              f"{e}); skipped")
        return 0
    if device.is_gpu:
        from tnp._core.backend import cupy_available
        if not cupy_available():
            print(f"# mixed_precision: no usable GPU for {dev_name}; skipped")
            return 0
    tnp.set_default_device(device)
    models = (args.models.split(",") if args.models else
              (["resnet"] if gpu_run else ["mlp", "cnn"]))
    policies = args.policies.split(",")
    model_kwargs = {}
    if args.batch or args.quick:
        model_kwargs["batch"] = args.batch or 8
    if args.image_size or args.quick:
        model_kwargs["size"] = args.image_size or 16

    results, skipped = {}, {}
    for m in models:
        if m in ("cnn", "resnet") and conv_layers() is None:
            skipped[m] = "tnp_train.layers.Conv2D does not exist yet"
            print(f"# {m}: skipped ({skipped[m]})")
            continue
        kw = model_kwargs if m == "resnet" else {}
        ms, losses, errors, scales = run_model(tt, tnp, m, policies, str(device), args.repeats,
                                               args.iters, args.warmup, **kw)
        results[m] = {"ms": ms, "loss": losses, "errors": errors, "loss_scale": scales}

    print(f"# mixed_precision: training step (forward, loss, backward, SGD momentum), device "
          f"{device}, threads={args.threads}, median of {args.repeats} x {args.iters} steps; "
          f"TF32 {'on' if gpu_run else 'n/a'} for mixed policies")
    print("| model | policy | ms / step | speed vs float32 | last loss |")
    print("|---|---|---|---|---|")
    for m, r in results.items():
        base = r["ms"].get("float32")
        for p in policies:
            if p in r["ms"]:
                ratio = f"{base / r['ms'][p]:.2f}" if base else "-"
                print(f"| {m} | {p} | {r['ms'][p]:.2f} | {ratio} | {r['loss'][p]:.4f} |")
            else:
                print(f"| {m} | {p} | error | - | {r['errors'].get(p, '?')} |")
    bad = [(m, p) for m, r in results.items() for p, v in r["loss"].items()
           if not v == v or v in (float("inf"), float("-inf"))]
    record = {"bench": "mixed_precision", "device": str(device), "threads": args.threads,
              "repeats": args.repeats, "iters": args.iters, "results": results,
              "skipped": skipped}
    print("JSON " + json.dumps(record))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(record, f)
    if bad:
        print(f"# FAILED: non-finite loss for {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
