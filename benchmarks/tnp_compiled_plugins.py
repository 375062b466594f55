"""tnp_train's compiled training steps as plugins of the reference harness
(``/work/shared/bench/train_mlp.py`` / ``train_cnn.py``), beside its own ``tnp_plugins``.

    cd /work/shared/bench && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        PYTHONPATH=/work/main/benchmarks MLP_SIZES=64,64,64,10 MLP_BATCH=32 \\
        /work/main/.venv/bin/python train_mlp.py --threads 1 --impls numpy-manual,\\
    plugin:tnp_plugins:mlp_tape,plugin:tnp_plugins:mlp_fit,\\
    plugin:tnp_compiled_plugins:mlp_tape_function,plugin:tnp_compiled_plugins:mlp_fit_jit

The small CNN of ``train_cnn.py`` the same way (its convolutions and poolings are primitives
of the compiled program: ``tnp.extend.primitive``):

    cd /work/shared/bench && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        PYTHONPATH=/work/main/benchmarks /work/main/.venv/bin/python train_cnn.py --threads 1 \\
        --impls numpy-im2col,torch,plugin:tnp_compiled_plugins:cnn_fit_jit,\\
    plugin:tnp_compiled_plugins:cnn_fit_eager,plugin:tnp_compiled_plugins:cnn_tape_function

The same model, weights, batches, SGD(momentum) and loss as ``tnp_plugins``; the step is
``tt.function(jit_compile=True)`` around the same tape code, or ``fit`` after
``compile(..., jit_compile=True)`` (``mlp_fit_eager``: ``run_eagerly=True``, the eager steps).
"""
from __future__ import annotations


class _Compiled:
    def __init__(self, ctx, build, use_fit, jit_compile=True):
        import numpy as np
        import tnp
        import tnp_train as tt

        self.np, self.tnp, self.tt = np, tnp, tt
        self.model = build(tt, ctx)
        self.model.set_weights([p.copy() for p in ctx["params"]])
        self.opt = tt.optimizers.SGD(learning_rate=ctx["cfg"]["lr"],
                                     momentum=ctx["cfg"]["momentum"])
        self.loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.batches = [(tnp.asarray(x), tnp.asarray(y.astype(np.int64)))
                        for x, y, _ in ctx["batches"]]
        self.B = ctx["cfg"]["batch"]
        self.use_fit = use_fit
        self.i = 0
        if use_fit:
            self.model.compile(optimizer=self.opt, loss=self.loss_fn, jit_compile=jit_compile,
                               run_eagerly=jit_compile is False)
            self.X = np.concatenate([x for x, _, _ in ctx["batches"]])
            self.Y = np.concatenate([y for _, y, _ in ctx["batches"]]).astype(np.int64)
            self.chunk_multiple = len(ctx["batches"])
            self.info = ("model.fit after compile(jit_compile=%s) (one epoch per %d steps, "
                         "shuffle=False, verbose=0)" % (jit_compile, len(ctx["batches"])))
        else:
            model, opt, loss_fn = self.model, self.opt, self.loss_fn

            @tt.function(jit_compile=True)
            def step(x, y):
                with tt.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                variables = model.trainable_variables
                opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

            self.step = step
            self.info = "tt.function(jit_compile=True) of the GradientTape step"

    def run(self, n):
        if self.use_fit:
            epochs = max(1, n // self.chunk_multiple)
            self.model.fit(self.X, self.Y, batch_size=self.B, epochs=epochs, shuffle=False,
                           verbose=0)
            return
        if not self.i:     # the first step builds the optimizer's slots, eagerly, then traces
            x, y = self.batches[0]
            with self.tt.GradientTape() as tape:
                loss = self.loss_fn(y, self.model(x, training=True))
            v = self.model.trainable_variables
            self.opt.apply_gradients(zip(tape.gradient(loss, v), v))
            self.step(*self.batches[1 % len(self.batches)])
            self.i = 2
            n -= 1
        for _ in range(n):
            x, y = self.batches[self.i % len(self.batches)]
            self.i += 1
            self.step(x, y)

    def sync(self):
        pass

    def eval_loss(self):
        x, y = self.batches[0]
        return float(self.loss_fn(y, self.model(x, training=False)))


def _mlp(tt, ctx):
    sz = ctx["cfg"]["sizes"]
    layers = [tt.Input((sz[0],))]
    for k, fo in enumerate(sz[1:]):
        layers.append(tt.layers.Dense(fo, activation="relu" if k < len(sz) - 2 else None))
    return tt.Sequential(layers)


def mlp_tape_function(ctx):
    return _Compiled(ctx, _mlp, use_fit=False)


def mlp_fit_jit(ctx):
    return _Compiled(ctx, _mlp, use_fit=True)


def mlp_fit_eager(ctx):
    """``fit`` with ``run_eagerly=True``: the eager steps, for comparison (``tnp_plugins``'s
    ``mlp_fit`` now runs compiled steps, fit's default)."""
    return _Compiled(ctx, _mlp, use_fit=True, jit_compile=False)


def _cnn(tt, ctx):
    # the harness's small CNN (train_cnn.py's keras_model), weights in its order
    c = ctx["cfg"]
    L = tt.layers
    return tt.Sequential([
        tt.Input((c["hw"], c["hw"], c["cin"])),
        L.Conv2D(c["c1"], 3, padding="same", activation="relu"), L.MaxPooling2D(2),
        L.Conv2D(c["c2"], 3, padding="same", activation="relu"), L.MaxPooling2D(2),
        L.Flatten(), L.Dense(c["classes"])])


def cnn_tape_function(ctx):
    """The CNN's GradientTape step in ``tt.function(jit_compile=True)``: each convolution and
    pooling is one primitive node forward and one backward (``tnp.extend.primitive``)."""
    return _Compiled(ctx, _cnn, use_fit=False)


def cnn_fit_jit(ctx):
    return _Compiled(ctx, _cnn, use_fit=True)


def cnn_fit_eager(ctx):
    """``fit`` with ``run_eagerly=True``: the eager steps, for comparison."""
    return _Compiled(ctx, _cnn, use_fit=True, jit_compile=False)
