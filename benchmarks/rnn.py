#!/usr/bin/env python3
"""Recurrent training speed: tnp_train ``fit`` beside Keras ``fit`` and PyTorch ``nn.LSTM`` /
``nn.GRU``, in one run, one thread.

Every model is a binary text classifier on the same synthetic token data (vocabulary 20,000,
batch 32, sequences of 200 tokens, post-padded with zeros to lengths 20-200), Embedding(128),
64 recurrent units, Dense(1, sigmoid), Adam(1e-3), binary cross-entropy:

  lstm      Embedding -> LSTM(64)
  gru       Embedding -> GRU(64)                 (reset_after=True, TF 2's default)
  bilstm    Embedding -> Bidirectional(LSTM(64))
  seq       Embedding -> LSTM(64, return_sequences=True) -> LSTM(64)
  mask      Embedding(mask_zero=True) -> LSTM(64)      (PyTorch: pack_padded_sequence)
  imdb      keras.io's bidirectional LSTM on IMDB: Embedding -> Bidirectional(LSTM(64,
            return_sequences=True)) -> Bidirectional(LSTM(64))

Implementations (the ones that cannot be imported are reported as unavailable):

  tnp       tnp_train ``Model.fit`` (the default: a compiled step)
  tnp-eager tnp_train ``Model.fit`` with ``compile(run_eagerly=True)`` (not in the default set)
  tnp-numpy-loop  tnp_train ``fit`` with the recurrent kernel's NumPy time loop instead of its
            Numba one (the code before it; not in the default set)
  keras     tf_keras (``TF_USE_LEGACY_KERAS=1``) or ``tf.keras`` ``Model.fit``
  torch     PyTorch eager: ``nn.Embedding``/``nn.LSTM``/``nn.GRU``/``nn.Linear``, ``optim.Adam``,
            ``BCEWithLogitsLoss``

Timing: round-robin (each round runs ``--steps`` training steps of every implementation on every
model in turn), a cell is the median over ``--rounds`` rounds of milliseconds per step. For the
``fit`` implementations, a callback times from the first batch's start to the last batch's end
(so ``fit``'s own setup is not counted). Run:

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHON benchmarks/rnn.py --threads 1

with a Python that has tnp_train and, for the anchors, TensorFlow (+ tf_keras) and PyTorch.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

MODELS = ("lstm", "gru", "bilstm", "seq", "mask", "imdb")
IMPLS = ("tnp", "keras", "torch")
VOCAB, EMBED, UNITS, BATCH, SEQ = 20000, 128, 64, 32, 200


def pin(threads):
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
              "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[k] = str(threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, set(cpus))


def make_data(steps, seed=0):
    """(x int32 (steps * BATCH, SEQ), lengths, y float32): tokens 1..VOCAB-1, zeros after."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = steps * BATCH
    x = rng.integers(1, VOCAB, size=(n, SEQ)).astype(np.int32)
    lengths = rng.integers(20, SEQ + 1, size=n)
    x[np.arange(SEQ)[None, :] >= lengths[:, None]] = 0
    y = rng.integers(0, 2, size=n).astype(np.float32)
    return x, lengths, y


# ----------------------------------------------------------------------------- Keras-shaped
def build_keras_like(k, name, **compile_kw):
    """The model ``name`` with a Keras-shaped API ``k`` (tnp_train or keras)."""
    L = k.layers
    inp = k.Input((SEQ,), dtype="int32")
    h = L.Embedding(VOCAB, EMBED, mask_zero=(name == "mask"))(inp)
    if name in ("lstm", "mask"):
        h = L.LSTM(UNITS)(h)
    elif name == "gru":
        h = L.GRU(UNITS)(h)
    elif name == "bilstm":
        h = L.Bidirectional(L.LSTM(UNITS))(h)
    elif name == "seq":
        h = L.LSTM(UNITS, return_sequences=True)(h)
        h = L.LSTM(UNITS)(h)
    elif name == "imdb":
        h = L.Bidirectional(L.LSTM(UNITS, return_sequences=True))(h)
        h = L.Bidirectional(L.LSTM(UNITS))(h)
    out = L.Dense(1, activation="sigmoid")(h)
    model = k.Model(inp, out)
    model.compile(optimizer=k.optimizers.Adam(1e-3), loss="binary_crossentropy", **compile_kw)
    return model


class FitTrainer:
    """``fit`` of a Keras-shaped model; ``run(x, y)`` returns ms per step (callback-timed)."""

    def __init__(self, k, name, callback_base, **compile_kw):
        self.model = build_keras_like(k, name, **compile_kw)
        marks = self.marks = {}

        class Timer(callback_base):
            def on_train_batch_begin(self, batch, logs=None):
                if batch == 0:
                    marks["t0"] = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                marks["t1"] = time.perf_counter()
                marks["n"] = batch + 1

        self.timer = Timer()

    def run(self, x, y):
        with self.context():
            self.model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False,
                           callbacks=[self.timer])
        m = self.marks
        return (m["t1"] - m["t0"]) / m["n"] * 1e3

    context = staticmethod(contextlib.nullcontext)


def make_tnp(name, eager=False, numpy_loop=False):
    import tnp_train as tt

    kw = {"run_eagerly": True} if eager else {}
    trainer = FitTrainer(tt, name, tt.callbacks.Callback, **kw)
    if numpy_loop:
        trainer.context = _numpy_loop
    return trainer


@contextlib.contextmanager
def _numpy_loop():
    """tnp_train's recurrent kernel with its NumPy time loop (before the Numba one)."""
    from tnp_train.ops import _rnn_cpu

    applies = _rnn_cpu.applies
    _rnn_cpu.applies = lambda *args: False
    try:
        yield
    finally:
        _rnn_cpu.applies = applies


def make_keras(name):
    try:
        import tf_keras as keras
    except ImportError:
        from tensorflow import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(int(os.environ["OMP_NUM_THREADS"]))
    tf.config.threading.set_inter_op_parallelism_threads(int(os.environ["OMP_NUM_THREADS"]))
    return FitTrainer(keras, name, keras.callbacks.Callback)


# ----------------------------------------------------------------------------- PyTorch
class TorchTrainer:
    def __init__(self, name):
        import torch
        from torch import nn

        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        self.torch, self.name = torch, name
        torch.manual_seed(0)
        bi = name in ("bilstm", "imdb")
        cell = nn.GRU if name == "gru" else nn.LSTM
        self.emb = nn.Embedding(VOCAB, EMBED)
        self.rnn1 = cell(EMBED, UNITS, batch_first=True, bidirectional=bi)
        width = UNITS * (2 if bi else 1)
        self.rnn2 = (nn.LSTM(width, UNITS, batch_first=True, bidirectional=bi)
                     if name in ("seq", "imdb") else None)
        self.head = nn.Linear(UNITS * (2 if bi else 1), 1)
        mods = [self.emb, self.rnn1, self.head] + ([self.rnn2] if self.rnn2 else [])
        self.params = [p for m in mods for p in m.parameters()]
        self.opt = torch.optim.Adam(self.params, lr=1e-3)
        self.loss = nn.BCEWithLogitsLoss()

    def _last(self, rnn, h):
        out, state = rnn(h)
        hn = state[0] if isinstance(state, tuple) else state      # (layers * dirs, B, U)
        return out, (self.torch.cat([hn[-2], hn[-1]], 1) if rnn.bidirectional else hn[-1])

    def forward(self, xb, lb):
        torch = self.torch
        h = self.emb(xb)
        if self.name == "mask":
            packed = torch.nn.utils.rnn.pack_padded_sequence(h, lb, batch_first=True,
                                                             enforce_sorted=False)
            _, last = self._last(self.rnn1, packed)
        else:
            out, last = self._last(self.rnn1, h)
            if self.rnn2 is not None:
                _, last = self._last(self.rnn2, out)
        return self.head(last)[:, 0]

    def run(self, x, y, lengths):
        torch = self.torch
        t0 = time.perf_counter()
        n = len(x) // BATCH
        for i in range(n):
            s = slice(i * BATCH, (i + 1) * BATCH)
            xb, yb = torch.from_numpy(x[s]).long(), torch.from_numpy(y[s])
            self.opt.zero_grad()
            loss = self.loss(self.forward(xb, torch.from_numpy(lengths[s])), yb)
            loss.backward()
            self.opt.step()
        return (time.perf_counter() - t0) / n * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4, help="training steps per round")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    pin(args.threads)
    impls = [s for s in args.impls.split(",") if s]
    models = [s for s in args.models.split(",") if s]
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    x, lengths, y = make_data(args.steps)
    makers = {"tnp": make_tnp, "tnp-eager": lambda m: make_tnp(m, eager=True),
              "tnp-numpy-loop": lambda m: make_tnp(m, numpy_loop=True),
              "keras": make_keras, "torch": TorchTrainer}
    trainers, unavailable = {}, {}
    for impl in impls:
        for m in models:
            try:
                if impl not in makers:
                    raise ValueError(f"unknown implementation; choose from {', '.join(makers)}")
                tr = makers[impl](m)
                warm = (lengths[:2 * BATCH],) if impl == "torch" else ()
                tr.run(x[:2 * BATCH], y[:2 * BATCH], *warm)
                trainers[impl, m] = tr                      # built and warmed up (traced)
            except Exception as e:  # noqa: BLE001 - an anchor that cannot run is reported
                unavailable[impl] = f"{type(e).__name__}: {str(e)[:200]}"
                print(f"! {impl} unavailable: {unavailable[impl]}", file=sys.stderr)
                break
    times = {k: [] for k in trainers}
    for _ in range(args.rounds):
        for m in models:
            for impl in impls:
                tr = trainers.get((impl, m))
                if tr is None:
                    continue
                extra = (lengths,) if impl == "torch" else ()
                times[impl, m].append(tr.run(x, y, *extra))
    med = {k: statistics.median(v) for k, v in times.items()}
    live = [i for i in impls if i not in unavailable]
    print(f"# rnn.py: batch {BATCH}, sequence {SEQ}, embedding {EMBED}, units {UNITS}, "
          f"threads {args.threads}, {args.rounds} rounds x {args.steps} steps (median ms/step)")
    head = "| model | " + " | ".join(f"{i} ms" for i in live)
    ratios = [i for i in live if i != "tnp"] if "tnp" in live else []
    head += "".join(f" | {i} / tnp" for i in ratios) + " |"
    print(head)
    print("|" + "---|" * (1 + len(live) + len(ratios)))
    for m in models:
        row = [f"{med[i, m]:.1f}" for i in live]
        row += [f"{med[i, m] / med['tnp', m]:.2f}x" for i in ratios]
        print(f"| {m} | " + " | ".join(row) + " |")
    out = {"ms_per_step": {f"{i}/{m}": v for (i, m), v in med.items()},
           "rounds": {f"{i}/{m}": v for (i, m), v in times.items()},
           "unavailable": unavailable, "threads": args.threads, "steps": args.steps}
    print("JSON " + json.dumps(out))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
