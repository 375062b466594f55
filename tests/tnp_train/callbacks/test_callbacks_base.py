"""Callback, CallbackList and History against the fit contract (fake model)."""
import pytest

from cb_fakes import FakeModel, fake_fit
from tnp_train.callbacks import Callback, CallbackList, History, ProgbarLogger


class Recorder(Callback):
    def __init__(self, events):
        super().__init__()
        self.events = events

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name.startswith("on_") and callable(attr):
            events = object.__getattribute__(self, "events")

            def record(*args, logs=None):
                events.append((name,) + args)
                return attr(*args, logs=logs)
            return record
        return attr


def test_default_callbacks_progbar_first_history_last():
    mine = Callback()
    cbs = CallbackList([mine], add_history=True, add_progbar=True)
    assert isinstance(cbs.callbacks[0], ProgbarLogger)
    assert cbs.callbacks[1] is mine
    assert isinstance(cbs.callbacks[2], History)
    assert len(cbs) == 3 and list(cbs) == cbs.callbacks


def test_default_callbacks_not_duplicated():
    h, p = History(), ProgbarLogger()
    cbs = CallbackList([h, p], add_history=True, add_progbar=True)
    assert cbs.callbacks == [h, p]
    assert CallbackList([], add_history=False, add_progbar=False).callbacks == []


def test_set_model_and_params_reach_every_callback():
    model = FakeModel()
    a, b = Callback(), Callback()
    cbs = CallbackList([a, b], add_history=True, model=model, verbose=0, epochs=3, steps=7)
    for cb in cbs:
        assert cb.model is model
        assert cb.params == {"verbose": 0, "epochs": 3, "steps": 7}
    assert model.history is cbs.callbacks[-1]


def test_non_callback_is_type_error():
    with pytest.raises(TypeError, match="Callback"):
        CallbackList([object()])
    with pytest.raises(TypeError, match="Callback"):
        CallbackList().append(lambda: None)


def test_hook_order_and_arguments():
    events = []
    model = FakeModel()
    fake_fit(model, [Recorder(events)], epochs=2, steps=2, val_logs=lambda e: {"loss": 1.0})
    names = [e[0] for e in events]
    # the base's train-batch hooks call the old aliases
    assert names[:6] == ["on_train_begin", "on_epoch_begin", "on_train_batch_begin",
                         "on_batch_begin", "on_train_batch_end", "on_batch_end"]
    assert ("on_epoch_end", 1) in events and names[-1] == "on_train_end"
    assert names.count("on_test_begin") == 2 and names.count("on_test_batch_end") == 4
    assert [e[1] for e in events if e[0] == "on_epoch_begin"] == [0, 1]


def test_overriding_alias_only_still_runs():
    seen = []

    class Old(Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((batch, logs["loss"]))

    fake_fit(FakeModel(), [Old()], epochs=1, steps=3, train_logs=lambda e, s: {"loss": s})
    assert seen == [(0, 0.0), (1, 1.0), (2, 2.0)]


def test_logs_dict_shared_between_callbacks_in_order():
    class Adder(Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["extra"] = 10.0 + epoch

    hist, _ = fake_fit(FakeModel(), [Adder()], epochs=2, steps=1)
    assert hist.history["extra"] == [10.0, 11.0]


def test_callbacklist_batch_aliases_run_train_batch_hooks():
    events = []
    cbs = CallbackList([Recorder(events)])
    cbs.on_batch_begin(3)
    cbs.on_batch_end(3, {"loss": 1.0})
    assert [e[0] for e in events] == ["on_train_batch_begin", "on_batch_begin",
                                      "on_train_batch_end", "on_batch_end"]


def test_history_records_epochs_and_values():
    model = FakeModel()
    hist, ran = fake_fit(model, [], epochs=3, steps=2,
                         train_logs=lambda e, s: {"loss": 10 * e + s, "acc": 0.5},
                         val_logs=lambda e: {"loss": e / 2})
    assert ran == [0, 1, 2]
    assert isinstance(hist, History) and model.history is hist
    assert hist.epoch == [0, 1, 2]
    assert hist.history == {"loss": [1.0, 11.0, 21.0], "acc": [0.5] * 3,
                            "val_loss": [0.0, 0.5, 1.0]}


def test_history_initial_epoch():
    hist, _ = fake_fit(FakeModel(), [], epochs=4, steps=1, initial_epoch=2)
    assert hist.epoch == [2, 3]
    assert hist.history["loss"] == [1 / 3, 1 / 4]


def test_callback_base_defaults():
    cb = Callback()
    assert cb.model is None and cb.params == {} and cb.validation_data is None
    for hook in ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                 "on_predict_begin", "on_predict_end"):
        assert getattr(cb, hook)() is None
    for hook in ("on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end",
                 "on_train_batch_begin", "on_train_batch_end", "on_test_batch_begin",
                 "on_test_batch_end", "on_predict_batch_begin", "on_predict_batch_end"):
        assert getattr(cb, hook)(0, logs={}) is None


def test_batch_hooks_no_callback_overrides_are_skipped_the_others_all_run():
    from tnp_train.callbacks.base import _default

    calls = []

    class Quiet(Callback):
        pass

    class MarkedAsTheBases(Callback):       # what "not overridden" means: the base's marker
        @_default
        def on_train_batch_begin(self, batch, logs=None):
            calls.append(("skipped", batch))

    class OldBegin(Callback):
        def on_batch_begin(self, batch, logs=None):
            calls.append(("old begin", batch))

    class Grandchild(OldBegin):
        def on_train_batch_end(self, batch, logs=None):
            calls.append(("end", batch, logs["loss"]))

    on_instance = Callback()
    on_instance.on_train_batch_end = lambda batch, logs=None: calls.append(("instance", batch))
    fake_fit(FakeModel(), [Quiet(), MarkedAsTheBases(), OldBegin(), Grandchild(), on_instance],
             epochs=1, steps=2, train_logs=lambda e, s: {"loss": s})
    assert calls == [("old begin", 0), ("old begin", 0), ("end", 0, 0.0), ("instance", 0),
                     ("old begin", 1), ("old begin", 1), ("end", 1, 1.0), ("instance", 1)]


def test_test_and_predict_batch_hooks_run_when_overridden():
    seen = []

    class Both(Callback):
        def on_test_batch_begin(self, batch, logs=None):
            seen.append(("test begin", batch))

        def on_predict_batch_end(self, batch, logs=None):
            seen.append(("predict end", batch, sorted(logs)))

    cbs = CallbackList([Both(), Callback()], add_history=True)
    for i in range(2):
        cbs.on_test_batch_begin(i)
        cbs.on_test_batch_end(i, {"loss": 1.0})
        cbs.on_predict_batch_begin(i)
        cbs.on_predict_batch_end(i, {"outputs": 0})
    assert seen == [("test begin", 0), ("predict end", 0, ["outputs"]),
                    ("test begin", 1), ("predict end", 1, ["outputs"])]
