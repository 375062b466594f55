"""``fit(dataset, steps_per_epoch=N)`` on a finite dataset, as TF 2.4's DataHandler: an epoch
that is the whole dataset starts it again each epoch; otherwise each epoch goes on where the
last stopped, and when the data runs out the epoch ends there, fit warns and stops (it never
starts the data again: a ``.repeat()``ed dataset is how a user asks for more)."""
import warnings

import numpy as np
import pytest

import tnp_train as tt

X = np.random.RandomState(0).rand(40, 3).astype("float32")
Y = X.sum(1, keepdims=True)


def _fit(n_batches, steps, epochs, repeat=False):
    ds = tt.data.Dataset.from_tensor_slices((X[:n_batches * 4], Y[:n_batches * 4])).batch(4)
    if repeat:
        ds = ds.repeat()
    model = tt.Sequential([tt.layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    batches = []
    cb = tt.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(b))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(ds, steps_per_epoch=steps, epochs=epochs, verbose=0, callbacks=[cb])
    ran_out = [str(w.message) for w in caught if "ran out of data" in str(w.message)]
    return len(history.history["loss"]), len(batches), ran_out


@pytest.mark.parametrize("n_batches,steps,epochs,want_epochs,want_batches", [
    (10, 10, 3, 3, 30),     # each epoch is the whole dataset: started again every epoch
    (10, 4, 3, 3, 10),      # 4 + 4 + 2: the third epoch ends where the data does
    (10, 6, 3, 2, 10),      # 6 + 4
    (7, 10, 3, 1, 7),       # the case: fewer batches than one epoch's steps
])
def test_fit_stops_where_the_data_ends(n_batches, steps, epochs, want_epochs, want_batches):
    ran, batches, ran_out = _fit(n_batches, steps, epochs)
    assert (ran, batches) == (want_epochs, want_batches)
    if want_batches < steps * epochs:
        assert len(ran_out) == 1
        assert f"(in this case, {steps * epochs} batches)" in ran_out[0]
        assert "repeat()" in ran_out[0]
    else:
        assert not ran_out


def test_a_repeated_dataset_gives_every_step():
    assert _fit(7, 10, 3, repeat=True)[:2] == (3, 30)
