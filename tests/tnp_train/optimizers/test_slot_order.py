"""An optimizer's variables list its slots in Keras's creation order (each slot name for every
variable before the next name: all ``m``, then all ``v``), so a weight list written in Keras's
order (``get_weights``/``set_weights``, an h5 file's optimizer weights) lands in the right
slots. The expected orders are tf-keras 2.x's legacy optimizers (TF 2.4's OptimizerV2),
listed from ``/work/tfref`` with the same two-layer model."""
import numpy as np
import pytest

import tnp_train as tt

KERAS_SLOTS = {
    "Adam": ["a/kernel/m", "a/bias/m", "b/kernel/m", "b/bias/m", "a/kernel/v", "a/bias/v",
             "b/kernel/v", "b/bias/v", "a/kernel/vhat", "a/bias/vhat", "b/kernel/vhat",
             "b/bias/vhat"],
    "RMSprop": ["a/kernel/rms", "a/bias/rms", "b/kernel/rms", "b/bias/rms", "a/kernel/momentum",
                "a/bias/momentum", "b/kernel/momentum", "b/bias/momentum", "a/kernel/mg",
                "a/bias/mg", "b/kernel/mg", "b/bias/mg"],
    "Ftrl": ["a/kernel/accumulator", "a/kernel/linear", "a/bias/accumulator", "a/bias/linear",
             "b/kernel/accumulator", "b/kernel/linear", "b/bias/accumulator", "b/bias/linear"],
    "SGD": ["a/kernel/momentum", "a/bias/momentum", "b/kernel/momentum", "b/bias/momentum"],
    "Nadam": ["a/kernel/m", "a/bias/m", "b/kernel/m", "b/bias/m", "a/kernel/v", "a/bias/v",
              "b/kernel/v", "b/bias/v"],
    "Adamax": ["a/kernel/m", "a/bias/m", "b/kernel/m", "b/bias/m", "a/kernel/v", "a/bias/v",
               "b/kernel/v", "b/bias/v"],
    "Adadelta": ["a/kernel/accum_grad", "a/bias/accum_grad", "b/kernel/accum_grad",
                 "b/bias/accum_grad", "a/kernel/accum_var", "a/bias/accum_var",
                 "b/kernel/accum_var", "b/bias/accum_var"],
    "Adagrad": ["a/kernel/accumulator", "a/bias/accumulator", "b/kernel/accumulator",
                "b/bias/accumulator"],
}

MAKE = {
    "Adam": lambda: tt.optimizers.Adam(amsgrad=True),
    "RMSprop": lambda: tt.optimizers.RMSprop(momentum=0.9, centered=True),
    "Ftrl": lambda: tt.optimizers.Ftrl(),
    "SGD": lambda: tt.optimizers.SGD(momentum=0.9),
    "Nadam": lambda: tt.optimizers.Nadam(),
    "Adamax": lambda: tt.optimizers.Adamax(),
    "Adadelta": lambda: tt.optimizers.Adadelta(),
    "Adagrad": lambda: tt.optimizers.Adagrad(),
}


def _trained(make, seed=0):
    tt.utils.set_random_seed(seed)
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2, name="a"),
                           tt.layers.Dense(2, name="b")])
    opt = make()
    model.compile(opt, "mse")
    rng = np.random.default_rng(seed)
    model.fit(rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 2)).astype("float32"),
              batch_size=4, verbose=0)
    return model, opt


@pytest.mark.parametrize("name", sorted(KERAS_SLOTS))
def test_slots_come_in_keras_creation_order(name):
    _, opt = _trained(MAKE[name])
    slots = [v.name for _, _, v in opt._slot_variables()]
    assert slots == KERAS_SLOTS[name]
    # variables() ends with the same slots, in the same order
    assert [v.name for v in opt.variables()][-len(slots):] == slots

