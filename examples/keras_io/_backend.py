"""The one import switch shared by the keras-io examples: tnp_train (default) or tf-keras.

Each example starts with ``from _backend import keras, layers, tf, QUICK, report`` instead
of ``from tensorflow import keras`` / ``import tensorflow as tf``; everything after that line is
the keras-io program. Choose the backend with ``--backend tf`` (or ``KERAS_IO_BACKEND=tf``); the
tf side must run under the reference venv (/work/tfref, ``TF_USE_LEGACY_KERAS=1``) so that
``tf.keras`` is tf-keras 2.x, the Keras 2 line. ``--quick`` (or ``KERAS_IO_QUICK=1``) makes the
example run a few steps only (the CI smoke test).

On the tf side, ``keras.optimizers.Adam`` etc. and ``compile("adam")`` give tf-keras's legacy
optimizers, which are TF 2.4's (see below). Under tnp_train, ``tf`` is a small namespace holding
the TensorFlow calls the examples make, each mapped onto its tnp / tnp_train equivalent (listed
in ``_TF_NAMES`` below); nothing else of TensorFlow is emulated.
"""
import json
import os
import sys

import numpy as np


def _take_flag(name, with_value=False):
    """Remove ``--name [value]`` from sys.argv (so the examples see their usual argv)."""
    if name not in sys.argv:
        return None
    i = sys.argv.index(name)
    value = sys.argv[i + 1] if with_value else True
    del sys.argv[i:i + (2 if with_value else 1)]
    return value


BACKEND = _take_flag("--backend", with_value=True) or os.environ.get("KERAS_IO_BACKEND", "tnp")
QUICK = bool(_take_flag("--quick")) or os.environ.get("KERAS_IO_QUICK", "") == "1"
SEED = int(_take_flag("--seed", with_value=True) or os.environ.get("KERAS_IO_SEED", "0"))
if BACKEND not in ("tnp", "tf"):
    raise SystemExit(f"--backend must be 'tnp' or 'tf', got {BACKEND!r}")
# the examples' own NumPy draws (shuffles, generated data) are the same on both backends
np.random.seed(SEED)

if BACKEND == "tf":
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    import tensorflow as tf  # noqa: E402
    import tf_keras as keras  # noqa: E402
    from tf_keras import layers  # noqa: E402,F401

    from tf_keras.layers.experimental.preprocessing import TextVectorization  # noqa: E402,F401

    tf.random.set_seed(SEED)
    # TF 2.4's optimizers are tf-keras's "legacy" ones (OptimizerV2): one instance may update
    # any variables (the training-loop guide reuses its optimizer on a second model), and
    # compile("adam") builds one. tf-keras 2.11+ defaults to the newer classes instead.
    from tf_keras.src import optimizers as _optimizers_module

    _get_optimizer = _optimizers_module.get

    def _get_legacy_optimizer(identifier, **kwargs):
        kwargs.setdefault("use_legacy_optimizer", True)
        return _get_optimizer(identifier, **kwargs)

    _optimizers_module.get = _get_legacy_optimizer
    for _name in ("SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl"):
        setattr(keras.optimizers, _name, getattr(keras.optimizers.legacy, _name))
    if not keras.__version__.startswith("2."):
        raise SystemExit(f"the tf side needs tf-keras 2.x (Keras 2), got {keras.__version__}")
else:
    import types

    import tnp  # noqa: E402
    import tnp_train as keras  # noqa: E402
    from tnp_train import layers  # noqa: E402,F401

    from tnp_train.layers.experimental.preprocessing import TextVectorization  # noqa: E402,F401

    keras.utils.set_random_seed(SEED)

    def _identity_function(fn=None, **_):
        # tt.function (the compiler) is not there yet: the examples' @tf.function steps run eagerly
        return fn if fn is not None else (lambda f: f)

    def _shape(x):
        return tnp.asarray(tnp.shape(x))

    # TextVectorization hands a callable standardize an object array of str
    def _regex_replace(input, pattern, rewrite):
        import re
        regex = re.compile(pattern)
        return np.frompyfunc(lambda s: regex.sub(rewrite, s), 1, 1)(np.asarray(input))

    def _lower(input):
        return np.frompyfunc(str.lower, 1, 1)(np.asarray(input))

    _TF_NAMES = dict(
        GradientTape=keras.GradientTape, function=getattr(keras, "function", _identity_function),
        reduce_sum=tnp.sum, reduce_mean=tnp.mean, reduce_max=tnp.max, square=tnp.square,
        exp=tnp.exp, concat=tnp.concatenate, ones=tnp.ones, zeros=tnp.zeros, shape=_shape,
        expand_dims=tnp.expand_dims, cast=lambda x, dtype: tnp.asarray(x).astype(dtype),
        reshape=lambda x, shape: tnp.reshape(x, shape), argmax=tnp.argmax, multiply=tnp.multiply,
        float32=tnp.float32, data=keras.data, keras=keras,
        device=lambda name: tnp.default_device(name.lower()),
        strings=types.SimpleNamespace(lower=_lower,
                                      regex_replace=_regex_replace),
        random=types.SimpleNamespace(normal=lambda shape, mean=0.0, stddev=1.0, dtype="float32":
                                     keras.backend.random_normal(shape, mean, stddev, dtype)),
    )
    tf = types.SimpleNamespace(**_TF_NAMES)


def to_float(x):
    return float(np.asarray(x))


def report(loss_start, loss_end, metric_name, metric, **extra):
    """Print the line compare.py reads: first/last training loss and the final metric."""
    out = dict(backend=BACKEND, seed=SEED, loss_start=to_float(loss_start),
               loss_end=to_float(loss_end), metric_name=metric_name, metric=to_float(metric))
    out.update({k: to_float(v) for k, v in extra.items()})
    print("KERAS_IO_RESULT " + json.dumps(out))
