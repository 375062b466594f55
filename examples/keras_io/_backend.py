"""Backend switch for the example programs in this folder: tnp_train (default) or tf-keras.

A program starts with ``from _backend import keras, layers, tf, QUICK, report``. Under
``--backend tf`` (or ``KERAS_IO_BACKEND=tf``, in a Python that has tensorflow and tf-keras 2.x)
``keras`` is tf-keras, ``tf`` is TensorFlow. Under tnp_train, ``keras`` is tnp_train and ``tf``
is a namespace holding only the few TensorFlow names the programs use, each mapped onto tnp or
tnp_train (``_TF_NAMES`` below), so the program text is the same on both sides.

Flags, removed from ``sys.argv`` before the program parses it:
``--quick`` (``KERAS_IO_QUICK=1``): smaller data and fewer epochs, what the CI test runs;
``--seed N`` (``KERAS_IO_SEED``): seeds NumPy and the framework's own generator.
"""
import json
import os
import sys

import numpy as np


def _take_flag(name, with_value=False):
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

if BACKEND == "tf":
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    import tensorflow as tf  # noqa: E402
    import tf_keras as keras  # noqa: E402
    from tf_keras import layers  # noqa: E402,F401

    if not keras.__version__.startswith("2."):
        raise SystemExit(f"the tf side needs tf-keras 2.x, got {keras.__version__}")
    # tnp_train's optimizers are modelled on TF 2.4's, which tf-keras keeps as its "legacy"
    # (OptimizerV2) classes; comparing against the newer classes would measure their
    # differences too.
    from tf_keras.src import optimizers as _optimizers_module

    _get_optimizer = _optimizers_module.get

    def _get_legacy_optimizer(identifier, **kwargs):
        kwargs.setdefault("use_legacy_optimizer", True)
        return _get_optimizer(identifier, **kwargs)

    _optimizers_module.get = _get_legacy_optimizer
    for _name in ("SGD", "Adam", "RMSprop"):
        setattr(keras.optimizers, _name, getattr(keras.optimizers.legacy, _name))
else:
    import types

    import tnp  # noqa: E402
    import tnp_train as keras  # noqa: E402
    from tnp_train import layers  # noqa: E402,F401

    def _random_normal(shape, mean=0.0, stddev=1.0, dtype="float32"):
        return keras.backend.random_normal(shape, mean, stddev, dtype)

    _TF_NAMES = dict(
        GradientTape=keras.GradientTape,
        reduce_sum=tnp.sum, reduce_mean=tnp.mean, square=tnp.square, sqrt=tnp.sqrt,
        exp=tnp.exp, minimum=tnp.minimum, shape=lambda x: tnp.asarray(tnp.shape(x)),
        random=types.SimpleNamespace(normal=_random_normal), strings=keras.strings,
    )
    tf = types.SimpleNamespace(**_TF_NAMES)


def seed_everything(seed=SEED):
    """NumPy's global generator and the framework's; the test calls it before each program
    it runs in one process, so a program's numbers do not depend on which ran before."""
    np.random.seed(seed)
    if BACKEND == "tf":
        tf.random.set_seed(seed)
    else:
        keras.utils.set_random_seed(seed)


seed_everything()


def to_float(x):
    return float(np.asarray(x))


def report(loss_start, loss_end, metric_name, metric, **extra):
    """Print the line compare.py reads (first and last training loss, the final metric, any
    other scalars) and return the same values as a dict."""
    out = dict(backend=BACKEND, seed=SEED, loss_start=to_float(loss_start),
               loss_end=to_float(loss_end), metric_name=metric_name, metric=to_float(metric))
    out.update({k: to_float(v) for k, v in extra.items()})
    print("KERAS_IO_RESULT " + json.dumps(out), flush=True)
    return out
