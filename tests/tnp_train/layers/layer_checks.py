"""Checks the layer test files share: a config that survives serialize/deserialize, and a
model that trains, saves and loads back to the same predictions."""
import numpy as np

import tnp_train as tt


def assert_config_round_trips(layer):
    """``deserialize(serialize(layer))`` is a layer of the same class and config (name aside)."""
    again = tt.layers.deserialize(tt.layers.serialize(layer))
    cfg, cfg2 = layer.get_config(), again.get_config()
    cfg.pop("name"), cfg2.pop("name")
    assert type(again) is type(layer)
    assert cfg == cfg2
    return again


def assert_fits_and_reloads(model, x, y, path, epochs=6):
    """``model`` (compiled here: Adam(0.05), mse) lowers its loss in ``epochs`` and loads back
    from ``model.save(path)`` with the same predictions."""
    model.compile(tt.optimizers.Adam(0.05), "mse")
    hist = model.fit(x, y, epochs=epochs, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    model.save(path)
    again = tt.models.load_model(path)
    np.testing.assert_array_equal(np.asarray(again.predict(x)), np.asarray(model.predict(x)))
    return again
