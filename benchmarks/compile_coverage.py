#!/usr/bin/env python3
"""Which Keras components a compiled ``fit`` compiles: a survey.

For every component (a layer of ``tt.layers``, a loss of ``tt.losses`` as a class and as a
string, a metric of ``tt.metrics``, a regularizer or constraint, ``sample_weight`` and
``class_weight``, multi-output models, ``add_loss``/``add_metric``) a tiny model is built around
it and trained for 2 epochs with ``fit``, then ``evaluate`` and ``predict``, with the default
``compile(jit_compile=None)``: each step is compiled where the tracer can follow it and runs
eagerly otherwise, silently. ``model.step_compilation`` says which. For a component whose steps
are not all compiled, the same model is trained again with ``jit_compile=True``, which fails
naming the reason: the first line of that error is reported.

    PYTHONPATH=. .venv/bin/python benchmarks/compile_coverage.py [--only SUBSTRING] [--json F]

prints one row per component (category, name, train/test/predict state, reason) and the counts
per category (components whose three steps compile / those with an eager step). ``--bits`` also
trains each compiled model eagerly and says whether the compiled run gave the eager run's bits
(weights, history, ``evaluate``, ``predict``): a compiled step must compute what the eager
step computes.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
import warnings

import numpy as np

import tnp_train as tt

L = tt.layers
N = 16          # rows: two steps of 8 per epoch


# ----------------------------------------------------------------------------- inputs
def inputs(kind, rng):
    """(Input, x) for an input kind."""
    shapes = {"vec": (8,), "seq": (5, 4), "img": (6, 6, 2), "vol": (4, 4, 4, 2),
              "img4": (4, 4, 3), "tseq": (3, 6, 6, 2)}
    if kind == "int":
        x = rng.integers(1, 20, (N, 6))
        x[: N // 2, 4:] = 0
        return tt.Input((6,), dtype="int64"), x
    if kind == "str":
        words = np.asarray(["red", "green", "blue", "cyan", "plum"])
        return tt.Input((1,), dtype="string"), words[rng.integers(0, 5, (N, 1))]
    if kind == "text":
        words = np.asarray(["the cat sat", "a dog ran far", "cats and dogs", "the end"])
        return tt.Input((1,), dtype="string"), words[rng.integers(0, 4, (N, 1))]
    if kind == "pos":
        return tt.Input((8,)), rng.uniform(0.0, 4.0, (N, 8)).astype(np.float32)
    shape = shapes[kind]
    return tt.Input(shape), rng.standard_normal((N,) + shape).astype(np.float32)


def head(h, units=3, activation=None):
    if len(h.shape) > 2:
        h = L.Flatten()(h)
    return L.Dense(units, activation=activation)(h)


def layer_case(kind, make):
    """A classifier: input -> make(inputs) -> Flatten -> Dense(3), sparse cross-entropy."""
    def build(rng):
        inp, x = inputs(kind, rng)
        out = make(inp)
        model = tt.Model(inp, head(out))
        y = rng.integers(0, 3, N)
        return model, x, y, dict(loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                                 metrics=["accuracy"]), {}
    return build


def targets(kind, rng):
    """(output units, output activation, y, the loss that fits) for a target kind."""
    if kind == "sparse":
        return 3, "softmax", rng.integers(0, 3, N), "sparse_categorical_crossentropy"
    if kind == "onehot":
        return 3, "softmax", np.eye(3, dtype=np.float32)[rng.integers(0, 3, N)], \
            "categorical_crossentropy"
    if kind == "binary":
        return 1, "sigmoid", rng.integers(0, 2, (N, 1)).astype(np.float32), "binary_crossentropy"
    if kind == "multilabel":
        return 3, "sigmoid", rng.integers(0, 2, (N, 3)).astype(np.float32), "binary_crossentropy"
    if kind == "pm1":
        return 1, "tanh", (2 * rng.integers(0, 2, (N, 1)) - 1).astype(np.float32), "hinge"
    if kind == "prob":
        p = rng.uniform(0.05, 1.0, (N, 3)).astype(np.float32)
        return 3, "softmax", p / p.sum(-1, keepdims=True), "kl_divergence"
    if kind == "count":
        return 1, "softplus", rng.poisson(2.0, (N, 1)).astype(np.float32), "poisson"
    if kind == "reg":
        return 2, None, rng.standard_normal((N, 2)).astype(np.float32), "mse"
    if kind == "posreg":
        return 2, "softplus", rng.uniform(0.5, 3.0, (N, 2)).astype(np.float32), "mse"
    raise ValueError(kind)


def loss_case(kind, loss):
    def build(rng):
        inp, x = inputs("vec", rng)
        units, act, y, _ = targets(kind, rng)
        model = tt.Model(inp, L.Dense(units, activation=act)(L.Dense(6, "relu")(inp)))
        return model, x, y, dict(loss=loss() if callable(loss) else loss), {}
    return build


def metric_case(kind, metric):
    def build(rng):
        inp, x = inputs("vec", rng)
        units, act, y, loss = targets(kind, rng)
        model = tt.Model(inp, L.Dense(units, activation=act)(L.Dense(6, "relu")(inp)))
        return model, x, y, dict(loss=loss, metrics=[metric() if callable(metric) else metric]), {}
    return build


def dense_case(**layer_kwargs):
    return layer_case("vec", lambda i: L.Dense(6, activation="relu", **layer_kwargs)(i))


# ----------------------------------------------------------------------------- other cases
def sample_weight_case(rng):
    inp, x = inputs("vec", rng)
    model = tt.Model(inp, head(L.Dense(6, "relu")(inp)))
    y = rng.integers(0, 3, N)
    sw = rng.uniform(0.1, 2.0, N).astype(np.float32)
    return model, x, y, dict(loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                             metrics=["accuracy"], weighted_metrics=["accuracy"]), \
        dict(sample_weight=sw)


def weighted_case(kind):
    """A sample-weighted loss of another kind (its own targets and loss)."""
    def build(rng):
        inp, x = inputs("vec", rng)
        units, act, y, loss = targets(kind, rng)
        model = tt.Model(inp, L.Dense(units, activation=act)(L.Dense(6, "relu")(inp)))
        sw = rng.uniform(0.1, 2.0, N).astype(np.float32)
        return model, x, y, dict(loss=loss, weighted_metrics=["mae"]), dict(sample_weight=sw)
    return build


def class_weight_case(rng):
    model, x, y, ck, _ = sample_weight_case(rng)
    return model, x, y, ck, dict(class_weight={0: 1.0, 1: 2.0, 2: 0.5})


def multi_output_case(rng):
    inp, x = inputs("vec", rng)
    h = L.Dense(6, "relu")(inp)
    a = L.Dense(3, name="cls")(h)
    b = L.Dense(1, name="reg")(h)
    model = tt.Model(inp, [a, b])
    y = [rng.integers(0, 3, N), rng.standard_normal((N, 1)).astype(np.float32)]
    return model, x, y, dict(loss=[tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                                   "mse"], loss_weights=[1.0, 0.5],
                             metrics=[["accuracy"], ["mae"]]), {}


def multi_output_dict_case(rng):
    inp, x = inputs("vec", rng)
    h = L.Dense(6, "relu")(inp)
    model = tt.Model(inp, {"cls": L.Dense(3, name="cls")(h), "reg": L.Dense(1, name="reg")(h)})
    y = {"cls": rng.integers(0, 3, N), "reg": rng.standard_normal((N, 1)).astype(np.float32)}
    return model, x, y, dict(loss={"cls": tt.losses.SparseCategoricalCrossentropy(
        from_logits=True), "reg": "mse"}, metrics={"cls": "accuracy", "reg": "mae"}), {}


def multi_input_case(rng):
    a, xa = inputs("vec", rng)
    b, xb = inputs("seq", rng)
    h = L.concatenate([L.Dense(4)(a), L.Flatten()(b)])
    model = tt.Model([a, b], L.Dense(3)(h))
    return model, [xa, xb], rng.integers(0, 3, N), dict(
        loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True)), {}


class _AddLoss(tt.layers.Layer):
    def call(self, x):
        self.add_loss(0.01 * tt.backend.mean(tt.backend.square(x)))
        return x


class _AddMetric(tt.layers.Layer):
    def call(self, x):
        self.add_metric(tt.backend.mean(x), name="mean_act")
        return x


def add_loss_case(rng):
    return layer_case("vec", lambda i: _AddLoss()(L.Dense(6, "relu")(i)))(rng)


def add_metric_case(rng):
    return layer_case("vec", lambda i: _AddMetric()(L.Dense(6, "relu")(i)))(rng)


def functional_add_loss_case(rng):
    inp, x = inputs("vec", rng)
    h = L.Dense(6, "relu")(inp)
    model = tt.Model(inp, head(h))
    model.add_loss(lambda: 1e-3 * tt.backend.sum(tt.backend.square(model.layers[1].kernel)))
    return model, x, rng.integers(0, 3, N), dict(
        loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True)), {}


# ----------------------------------------------------------------------------- the table
def cases():
    c = []

    def lay(group, name, kind, make):
        c.append((f"layers/{group}", name, layer_case(kind, make)))

    # core
    lay("core", "Dense", "vec", lambda i: L.Dense(6, "relu")(i))
    lay("core", "Dense(no bias, tanh)", "vec", lambda i: L.Dense(6, "tanh", use_bias=False)(i))
    lay("core", "Dense(3-D input)", "seq", lambda i: L.Dense(6, "relu")(i))
    lay("core", "Activation(relu)", "vec", lambda i: L.Activation("relu")(L.Dense(6)(i)))
    for act in ("sigmoid", "softmax", "softplus", "softsign", "tanh", "elu", "selu", "swish",
                "gelu", "exponential", "hard_sigmoid", "linear", "relu6"):
        lay("activations", f"Activation({act})", "vec",
            lambda i, a=act: L.Activation(a)(L.Dense(6)(i)))
    lay("core", "EinsumDense", "seq",
        lambda i: L.EinsumDense("abc,cd->abd", output_shape=(5, 6), bias_axes="d")(i))
    lay("core", "Lambda", "vec", lambda i: L.Lambda(lambda t: t * 2.0)(L.Dense(6)(i)))
    lay("core", "Masking", "seq", lambda i: L.LSTM(4)(L.Masking(0.0)(i)))
    lay("core", "ActivityRegularization", "vec",
        lambda i: L.ActivityRegularization(l1=0.01, l2=0.01)(L.Dense(6)(i)))
    # advanced activations
    for name, mk in [("LeakyReLU", lambda: L.LeakyReLU(0.2)), ("PReLU", lambda: L.PReLU()),
                     ("ELU", lambda: L.ELU()), ("ReLU(max)", lambda: L.ReLU(max_value=3.0)),
                     ("ThresholdedReLU", lambda: L.ThresholdedReLU(0.1)),
                     ("Softmax", lambda: L.Softmax())]:
        lay("activations", name, "vec", lambda i, mk=mk: mk()(L.Dense(6)(i)))
    # conv
    lay("conv", "Conv1D", "seq", lambda i: L.Conv1D(4, 3, padding="causal", activation="relu")(i))
    lay("conv", "Conv2D", "img", lambda i: L.Conv2D(4, 3, padding="same", activation="relu")(i))
    lay("conv", "Conv2D(strides, dilation)", "img",
        lambda i: L.Conv2D(4, 3, dilation_rate=2)(i))
    lay("conv", "Conv3D", "vol", lambda i: L.Conv3D(3, 2)(i))
    lay("conv", "Conv1DTranspose", "seq", lambda i: L.Conv1DTranspose(3, 2, strides=2)(i))
    lay("conv", "Conv2DTranspose", "img", lambda i: L.Conv2DTranspose(3, 3, strides=2)(i))
    lay("conv", "Conv3DTranspose", "vol", lambda i: L.Conv3DTranspose(2, 2)(i))
    lay("conv", "DepthwiseConv2D", "img", lambda i: L.DepthwiseConv2D(3, depth_multiplier=2)(i))
    lay("conv", "SeparableConv1D", "seq", lambda i: L.SeparableConv1D(4, 3)(i))
    lay("conv", "SeparableConv2D", "img", lambda i: L.SeparableConv2D(4, 3)(i))
    # pooling
    for name in ("MaxPooling1D", "AveragePooling1D"):
        lay("pooling", name, "seq", lambda i, n=name: getattr(L, n)()(i))
    for name in ("MaxPooling2D", "AveragePooling2D"):
        lay("pooling", name, "img", lambda i, n=name: getattr(L, n)()(i))
    for name in ("MaxPooling3D", "AveragePooling3D"):
        lay("pooling", name, "vol", lambda i, n=name: getattr(L, n)()(i))
    for d, kind in ((1, "seq"), (2, "img"), (3, "vol")):
        for op in ("Max", "Average"):
            name = f"Global{op}Pooling{d}D"
            lay("pooling", name, kind, lambda i, n=name: getattr(L, n)()(i))
    # normalization
    lay("normalization", "BatchNormalization", "img", lambda i: L.BatchNormalization()(i))
    lay("normalization", "BatchNormalization(vec)", "vec",
        lambda i: L.BatchNormalization()(L.Dense(6)(i)))
    lay("normalization", "LayerNormalization", "seq", lambda i: L.LayerNormalization()(i))
    lay("normalization", "SyncBatchNormalization", "vec",
        lambda i: L.experimental.SyncBatchNormalization()(L.Dense(6)(i)))
    # recurrent
    for rnn in ("SimpleRNN", "LSTM", "GRU"):
        lay("recurrent", rnn, "seq", lambda i, r=rnn: getattr(L, r)(4)(i))
        lay("recurrent", f"{rnn}(return_sequences, dropout)", "seq",
            lambda i, r=rnn: getattr(L, r)(4, return_sequences=True, dropout=0.2,
                                           recurrent_dropout=0.2)(i))
    lay("recurrent", "RNN(LSTMCell)", "seq", lambda i: L.RNN(L.LSTMCell(4))(i))
    lay("recurrent", "RNN(StackedRNNCells)", "seq",
        lambda i: L.RNN(L.StackedRNNCells([L.GRUCell(4), L.SimpleRNNCell(3)]))(i))
    lay("recurrent", "GRU(reset_after=False)", "seq", lambda i: L.GRU(4, reset_after=False)(i))
    lay("recurrent", "ConvLSTM2D", "tseq", lambda i: L.ConvLSTM2D(2, 3)(i))
    # attention
    lay("attention", "MultiHeadAttention", "seq",
        lambda i: L.MultiHeadAttention(2, 4, dropout=0.1)(i, i))
    lay("attention", "Attention", "seq", lambda i: L.Attention()([i, i]))
    lay("attention", "AdditiveAttention", "seq", lambda i: L.AdditiveAttention()([i, i]))
    # merge
    def two(i):
        return L.Dense(4)(i), L.Dense(4)(i)
    for name in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"):
        lay("merge", name, "vec", lambda i, n=name: getattr(L, n)()(list(two(i))))
    lay("merge", "Dot", "vec", lambda i: L.Dot(axes=1, normalize=True)(list(two(i))))
    # reshaping
    lay("reshaping", "Reshape", "vec", lambda i: L.Reshape((2, 4))(i))
    lay("reshaping", "Flatten", "img", lambda i: L.Flatten()(i))
    lay("reshaping", "Permute", "seq", lambda i: L.Permute((2, 1))(i))
    lay("reshaping", "RepeatVector", "vec", lambda i: L.RepeatVector(3)(i))
    lay("reshaping", "Cropping1D", "seq", lambda i: L.Cropping1D(1)(i))
    lay("reshaping", "Cropping2D", "img", lambda i: L.Cropping2D(1)(i))
    lay("reshaping", "Cropping3D", "vol", lambda i: L.Cropping3D(1)(i))
    lay("reshaping", "ZeroPadding1D", "seq", lambda i: L.ZeroPadding1D(1)(i))
    lay("reshaping", "ZeroPadding2D", "img", lambda i: L.ZeroPadding2D(1)(i))
    lay("reshaping", "ZeroPadding3D", "vol", lambda i: L.ZeroPadding3D(1)(i))
    lay("reshaping", "UpSampling1D", "seq", lambda i: L.UpSampling1D()(i))
    lay("reshaping", "UpSampling2D", "img", lambda i: L.UpSampling2D()(i))
    lay("reshaping", "UpSampling2D(bilinear)", "img",
        lambda i: L.UpSampling2D(interpolation="bilinear")(i))
    lay("reshaping", "UpSampling3D", "vol", lambda i: L.UpSampling3D()(i))
    # embedding
    lay("embedding", "Embedding", "int", lambda i: L.GlobalAveragePooling1D()(L.Embedding(20, 4)(i)))
    lay("embedding", "Embedding(mask_zero)+GlobalAveragePooling1D", "int",
        lambda i: L.GlobalAveragePooling1D()(L.Embedding(20, 4, mask_zero=True)(i)))
    lay("embedding", "Embedding(mask_zero)+LSTM", "int",
        lambda i: L.LSTM(4)(L.Embedding(20, 4, mask_zero=True)(i)))
    # noise / dropout
    lay("noise", "Dropout", "vec", lambda i: L.Dropout(0.3)(L.Dense(6)(i)))
    lay("noise", "SpatialDropout1D", "seq", lambda i: L.SpatialDropout1D(0.3)(i))
    lay("noise", "SpatialDropout2D", "img", lambda i: L.SpatialDropout2D(0.3)(i))
    lay("noise", "SpatialDropout3D", "vol", lambda i: L.SpatialDropout3D(0.3)(i))
    lay("noise", "GaussianNoise", "vec", lambda i: L.GaussianNoise(0.1)(L.Dense(6)(i)))
    lay("noise", "GaussianDropout", "vec", lambda i: L.GaussianDropout(0.2)(L.Dense(6)(i)))
    lay("noise", "AlphaDropout", "vec", lambda i: L.AlphaDropout(0.2)(L.Dense(6)(i)))
    # preprocessing (numeric ones; string layers take strings, which fit cannot compile)
    lay("preprocessing", "Rescaling", "img", lambda i: L.Rescaling(1 / 255.0)(i))
    lay("preprocessing", "Normalization(adapted)", "vec",
        lambda i: _adapted(L.Normalization(), np.random.default_rng(1).standard_normal(
            (32, 8)).astype(np.float32))(i))
    lay("preprocessing", "Resizing", "img", lambda i: L.Resizing(4, 4)(i))
    lay("preprocessing", "CenterCrop", "img", lambda i: L.CenterCrop(4, 4)(i))
    lay("preprocessing", "Discretization", "vec",
        lambda i: L.Dense(4)(L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5])(i)))
    lay("preprocessing", "CategoryEncoding", "int",
        lambda i: L.CategoryEncoding(num_tokens=20, output_mode="multi_hot")(i))
    lay("preprocessing", "IntegerLookup", "int",
        lambda i: L.Embedding(30, 4)(_adapted(L.IntegerLookup(),
                                              np.arange(1, 20).reshape(-1, 1))(i)))
    lay("preprocessing", "Hashing", "int", lambda i: L.Embedding(8, 3)(L.Hashing(8)(i)))
    lay("preprocessing", "StringLookup (strings)", "str",
        lambda i: L.Embedding(8, 3)(_adapted(L.StringLookup(), np.asarray(
            [["red"], ["green"], ["blue"]]))(i)))
    lay("preprocessing", "TextVectorization (strings)", "text",
        lambda i: L.GlobalAveragePooling1D()(L.Embedding(12, 3)(_adapted(
            L.TextVectorization(max_tokens=12, output_sequence_length=4),
            np.asarray(["the cat sat", "a dog ran far"]))(i))))
    lay("preprocessing", "TextVectorization (multi_hot)", "text",
        lambda i: _adapted(L.TextVectorization(max_tokens=12, output_mode="binary",
                                               pad_to_max_tokens=True),
                           np.asarray(["the cat sat", "a dog ran far"]))(i))
    lay("preprocessing", "TextVectorization (no output_sequence_length)", "text",
        lambda i: L.GlobalAveragePooling1D()(L.Embedding(12, 3)(_adapted(
            L.TextVectorization(max_tokens=12), np.asarray(["the cat sat", "a dog ran far"]))(i))))
    for name, mk in [("RandomFlip", lambda: L.RandomFlip()),
                     ("RandomRotation", lambda: L.RandomRotation(0.1)),
                     ("RandomZoom", lambda: L.RandomZoom(0.1)),
                     ("RandomTranslation", lambda: L.RandomTranslation(0.1, 0.1)),
                     ("RandomContrast", lambda: L.RandomContrast(0.2)),
                     ("RandomCrop", lambda: L.RandomCrop(4, 4))]:
        lay("preprocessing", name, "img", lambda i, mk=mk: mk()(i))
    # locally connected
    lay("local", "LocallyConnected1D", "seq", lambda i: L.LocallyConnected1D(3, 2)(i))
    lay("local", "LocallyConnected2D", "img", lambda i: L.LocallyConnected2D(2, 3)(i))
    lay("local", "LocallyConnected1D(impl=2)", "seq",
        lambda i: L.LocallyConnected1D(3, 2, implementation=2)(i))
    # wrappers
    lay("wrappers", "TimeDistributed(Dense)", "seq", lambda i: L.TimeDistributed(L.Dense(3))(i))
    lay("wrappers", "TimeDistributed(Conv2D)", "tseq",
        lambda i: L.TimeDistributed(L.Conv2D(2, 3))(i))
    lay("wrappers", "Bidirectional(LSTM)", "seq", lambda i: L.Bidirectional(L.LSTM(3))(i))
    lay("wrappers", "Bidirectional(GRU, seq)", "seq",
        lambda i: L.Bidirectional(L.GRU(3, return_sequences=True), merge_mode="sum")(i))
    lay("experimental", "RandomFourierFeatures", "vec",
        lambda i: L.experimental.RandomFourierFeatures(6)(i))

    # losses: classes and string names
    loss_kinds = [
        ("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy", "sparse"),
        ("CategoricalCrossentropy", "categorical_crossentropy", "onehot"),
        ("BinaryCrossentropy", "binary_crossentropy", "binary"),
        ("MeanSquaredError", "mse", "reg"), ("MeanAbsoluteError", "mae", "reg"),
        ("MeanAbsolutePercentageError", "mape", "posreg"),
        ("MeanSquaredLogarithmicError", "msle", "posreg"),
        ("Huber", "huber_loss", "reg"), ("LogCosh", "logcosh", "reg"),
        ("Hinge", "hinge", "pm1"), ("SquaredHinge", "squared_hinge", "pm1"),
        ("CategoricalHinge", "categorical_hinge", "onehot"),
        ("KLDivergence", "kl_divergence", "prob"), ("Poisson", "poisson", "count"),
        ("CosineSimilarity", "cosine_similarity", "reg"),
    ]
    for cls, string, kind in loss_kinds:
        c.append(("losses/class", cls, loss_case(kind, getattr(tt.losses, cls))))
        c.append(("losses/string", string, loss_case(kind, string)))
    c.append(("losses/class", "BinaryCrossentropy(from_logits, smoothing)",
              loss_case("binary", lambda: tt.losses.BinaryCrossentropy(from_logits=True,
                                                                        label_smoothing=0.1))))
    c.append(("losses/class", "CategoricalCrossentropy(smoothing)",
              loss_case("onehot", lambda: tt.losses.CategoricalCrossentropy(label_smoothing=0.1))))

    # metrics
    M = tt.metrics
    metric_kinds = [
        ("accuracy (sparse)", "accuracy", "sparse"), ("accuracy (onehot)", "accuracy", "onehot"),
        ("accuracy (binary)", "accuracy", "binary"),
        ("Accuracy", M.Accuracy, "binary"), ("BinaryAccuracy", M.BinaryAccuracy, "binary"),
        ("CategoricalAccuracy", M.CategoricalAccuracy, "onehot"),
        ("SparseCategoricalAccuracy", M.SparseCategoricalAccuracy, "sparse"),
        ("TopKCategoricalAccuracy", lambda: M.TopKCategoricalAccuracy(k=2), "onehot"),
        ("SparseTopKCategoricalAccuracy", lambda: M.SparseTopKCategoricalAccuracy(k=2), "sparse"),
        ("AUC", M.AUC, "binary"), ("AUC(PR)", lambda: M.AUC(curve="PR"), "binary"),
        ("AUC(multi_label)", lambda: M.AUC(multi_label=True), "multilabel"),
        ("Precision", M.Precision, "binary"), ("Recall", M.Recall, "binary"),
        ("Precision(top_k)", lambda: M.Precision(top_k=2), "multilabel"),
        ("TruePositives", M.TruePositives, "binary"),
        ("FalsePositives", M.FalsePositives, "binary"),
        ("TrueNegatives", M.TrueNegatives, "binary"),
        ("FalseNegatives", M.FalseNegatives, "binary"),
        ("PrecisionAtRecall", lambda: M.PrecisionAtRecall(0.5), "binary"),
        ("RecallAtPrecision", lambda: M.RecallAtPrecision(0.5), "binary"),
        ("SensitivityAtSpecificity", lambda: M.SensitivityAtSpecificity(0.5), "binary"),
        ("SpecificityAtSensitivity", lambda: M.SpecificityAtSensitivity(0.5), "binary"),
        ("MeanIoU", lambda: M.MeanIoU(num_classes=2), "binary"),
        ("BinaryCrossentropy", M.BinaryCrossentropy, "binary"),
        ("CategoricalCrossentropy", M.CategoricalCrossentropy, "onehot"),
        ("SparseCategoricalCrossentropy", M.SparseCategoricalCrossentropy, "sparse"),
        ("KLDivergence", M.KLDivergence, "prob"), ("Poisson", M.Poisson, "count"),
        ("Hinge", M.Hinge, "pm1"), ("SquaredHinge", M.SquaredHinge, "pm1"),
        ("CategoricalHinge", M.CategoricalHinge, "onehot"),
        ("MeanSquaredError", M.MeanSquaredError, "reg"),
        ("MeanAbsoluteError", M.MeanAbsoluteError, "reg"),
        ("MeanAbsolutePercentageError", M.MeanAbsolutePercentageError, "posreg"),
        ("MeanSquaredLogarithmicError", M.MeanSquaredLogarithmicError, "posreg"),
        ("RootMeanSquaredError", M.RootMeanSquaredError, "reg"),
        ("LogCoshError", M.LogCoshError, "reg"),
        ("CosineSimilarity", M.CosineSimilarity, "reg"),
        ("MeanRelativeError", lambda: M.MeanRelativeError(normalizer=[1.0, 2.0]), "reg"),
        ("mae (string)", "mae", "reg"), ("mse (string)", "mse", "reg"),
        ("'AUC' (string)", "AUC", "binary"), ("'Precision' (string)", "Precision", "binary"),
        ("'Recall' (string)", "Recall", "binary"),
        ("top_k_categorical_accuracy (string)", "top_k_categorical_accuracy", "onehot"),
        ("sparse_top_k_categorical_accuracy (string)", "sparse_top_k_categorical_accuracy",
         "sparse"),
    ]
    for name, metric, kind in metric_kinds:
        c.append(("metrics", name, metric_case(kind, metric)))

    # regularizers / constraints
    R, C = tt.regularizers, tt.constraints
    for name, kw in [("L1", dict(kernel_regularizer=R.L1(0.01))),
                     ("L2", dict(kernel_regularizer=R.L2(0.01))),
                     ("L1L2 (bias, activity)", dict(bias_regularizer=R.L1L2(0.01, 0.01),
                                                    activity_regularizer=R.L2(0.01))),
                     ("'l2' (string)", dict(kernel_regularizer="l2")),
                     ("OrthogonalRegularizer", dict(kernel_regularizer=R.OrthogonalRegularizer(0.01)))]:
        c.append(("regularizers", name, dense_case(**kw)))
    for name, kw in [("MaxNorm", dict(kernel_constraint=C.MaxNorm(1.0))),
                     ("MinMaxNorm", dict(kernel_constraint=C.MinMaxNorm(0.1, 1.0))),
                     ("NonNeg", dict(kernel_constraint=C.NonNeg())),
                     ("UnitNorm", dict(kernel_constraint=C.UnitNorm())),
                     ("'non_neg' (string)", dict(bias_constraint="non_neg"))]:
        c.append(("constraints", name, dense_case(**kw)))
    c.append(("constraints", "RadialConstraint",
              layer_case("img", lambda i: L.Conv2D(2, 3, kernel_constraint=C.RadialConstraint())(i))))

    # training arguments, model shapes, add_loss/add_metric
    c += [("training", "sample_weight", sample_weight_case),
          ("training", "class_weight", class_weight_case),
          ("training", "sample_weight (categorical_crossentropy)", weighted_case("onehot")),
          ("training", "sample_weight (binary_crossentropy)", weighted_case("binary")),
          ("training", "sample_weight (mse)", weighted_case("reg")),
          ("training", "multi-output (list)", multi_output_case),
          ("training", "multi-output (dict)", multi_output_dict_case),
          ("training", "multi-input", multi_input_case),
          ("training", "add_loss (layer)", add_loss_case),
          ("training", "add_loss (model, callable)", functional_add_loss_case),
          ("training", "add_metric (layer)", add_metric_case)]
    return c


def _adapted(layer, data):
    layer.adapt(data)
    return layer


# ----------------------------------------------------------------------------- running
# --strategy: the distribution strategy every model is built and compiled in (None: none)
STRATEGY = None


def make_strategy(name):
    """``--strategy``'s strategy: "multiworker" (MultiWorkerMirroredStrategy; under
    ``mpiexec -n N`` the N ranks train every component together), "one-device"
    (OneDeviceStrategy), or None for "none"."""
    if name == "none":
        return None
    if name == "multiworker":
        return tt.distribute.MultiWorkerMirroredStrategy()
    if name == "one-device":
        return tt.distribute.OneDeviceStrategy("cpu:0")
    raise SystemExit(f"--strategy: expected none, one-device or multiworker, got {name!r}")


def run(build, jit, eager=False):
    """(step_compilation, what the run produced: weights, history, evaluate, predict)."""
    tt.utils.set_random_seed(0)
    with STRATEGY.scope() if STRATEGY is not None else contextlib.nullcontext():
        model, x, y, compile_kwargs, fit_kwargs = build(np.random.default_rng(0))
        model.compile(optimizer=tt.optimizers.Adam(1e-2), jit_compile=jit, run_eagerly=eager,
                      **compile_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
                            **fit_kwargs).history
        results = model.evaluate(x, y, batch_size=8, verbose=0)
        predictions = model.predict(x, batch_size=8, verbose=0)
    produced = [np.asarray(w) for w in model.weights] + \
        [np.asarray(history[k]) for k in sorted(history)] + [np.asarray(results)] + \
        [np.asarray(p) for p in (
            [predictions[k] for k in sorted(predictions)] if isinstance(predictions, dict)
            else predictions if isinstance(predictions, (list, tuple)) else [predictions])]
    return model.step_compilation, produced


def _same_bits(a, b):
    return len(a) == len(b) and all(u.shape == v.shape and u.dtype == v.dtype and
                                    u.tobytes() == v.tobytes() for u, v in zip(a, b))


def survey(only=None, bits=False):
    rows = []
    for category, name, build in cases():
        if only and only.lower() not in f"{category}/{name}".lower():
            continue
        reason, same = "", "-"
        try:
            states, produced = run(build, None)
        except Exception as e:                       # the component fails even eagerly
            states, produced = {}, None
            reason = "ERROR " + _first_line(e)
        ok = bool(states) and all(states.get(k) == "compiled" for k in ("train", "test",
                                                                       "predict"))
        if states and not ok:
            try:
                run(build, True)
                reason = "(jit_compile=True ran)"
            except Exception as e:
                reason = _first_line(e)
        if bits and ok:
            same = "same" if _same_bits(produced, run(build, None, eager=True)[1]) else "DIFF"
            if same == "DIFF":
                reason = "compiled, but not the eager step's bits"
        rows.append(dict(category=category, name=name, ok=ok, bits=same, reason=reason,
                         **{k: states.get(k, "-") for k in ("train", "test", "predict")}))
        r = rows[-1]
        print(f"{category:24s} {name:42s} {r['train']:9s} {r['test']:9s} {r['predict']:9s} "
              f"{same:5s} {reason[:160]}", flush=True)
    return rows


def _first_line(e):
    text = f"{type(e).__name__}: {e}"
    return " ".join(text.split("\n")[:3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="only the components whose 'category/name' contains this")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--bits", action="store_true",
                    help="also train each compiled model eagerly (run_eagerly=True) and say "
                         "whether the compiled run gave the same bits (weights, history, "
                         "evaluate, predict)")
    ap.add_argument("--strategy", default="none",
                    help="build and compile every model in this strategy: none, one-device, "
                         "or multiworker (run under mpiexec -n 2: the ranks train each "
                         "component together; rank 0 prints)")
    args = ap.parse_args(argv)
    global STRATEGY
    STRATEGY = make_strategy(args.strategy)
    if STRATEGY is not None and STRATEGY.extended.worker_index != 0:
        sys.stdout = open(os.devnull, "w")       # the other ranks train in silence
    print(f"{'category':24s} {'component':42s} {'train':9s} {'test':9s} {'predict':9s} "
          f"{'bits':5s} reason")
    rows = survey(args.only, args.bits)
    print("\ncounts (components whose train/test/predict steps all compile / not all):")
    cats = sorted({r["category"] for r in rows})
    for cat in cats:
        sel = [r for r in rows if r["category"] == cat]
        good = sum(r["ok"] for r in sel)
        diff = sum(r["bits"] == "DIFF" for r in sel)
        print(f"  {cat:24s} {good:3d} compiled / {len(sel) - good:3d} eager"
              + (f"   ({diff} compiled with other bits than eager)" if args.bits else ""))
    good = sum(r["ok"] for r in rows)
    diff = sum(r["bits"] == "DIFF" for r in rows)
    print(f"  {'total':24s} {good:3d} compiled / {len(rows) - good:3d} eager"
          + (f"   ({diff} compiled with other bits than eager)" if args.bits else ""))
    if args.json and (STRATEGY is None or STRATEGY.extended.worker_index == 0):
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
