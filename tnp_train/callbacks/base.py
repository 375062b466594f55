"""``Callback``, ``CallbackList`` and ``History`` (TF 2.4's ``tf.keras.callbacks``).

``Model.fit``/``evaluate``/``predict`` build one :class:`CallbackList` per call and drive its
hooks; the list forwards every hook to each callback in order. A ``History`` is appended last
(so it records what earlier callbacks, e.g. ``ReduceLROnPlateau`` adding ``lr``, put in the
epoch logs) and a ``ProgbarLogger`` is put first when the call is verbose.
"""
from __future__ import annotations

from ._util import python_logs

__all__ = ["Callback", "CallbackList", "History"]


def _default(hook):
    """Marks a hook of the base class that ignores its logs (Keras's ``doc_controls.default``):
    a callback that does not replace it never makes ``fit`` read batch logs from the device."""
    hook._is_default = True
    return hook


# The hooks that run a batch's end, and the methods a callback overrides to see its logs.
_BATCH_END_HOOKS = {"on_train_batch_end": ("on_train_batch_end", "on_batch_end"),
                    "on_test_batch_end": ("on_test_batch_end",),
                    "on_predict_batch_end": ("on_predict_batch_end",)}


# The methods a callback overrides to be called at a batch's beginning (the base's training
# hook calls the old name).
_BATCH_BEGIN_HOOKS = {"on_train_batch_begin": ("on_train_batch_begin", "on_batch_begin"),
                      "on_test_batch_begin": ("on_test_batch_begin",),
                      "on_predict_batch_begin": ("on_predict_batch_begin",)}


def _overrides(callback, names):
    """Whether ``callback`` replaces one of the base class's hooks ``names`` (on its class or
    on the instance): otherwise calling the hook does nothing, and the list skips it, as
    Keras's ``CallbackList`` skips the batch hooks no callback overrides."""
    return any(not getattr(getattr(callback, name, None), "_is_default", False)
               for name in names)


def _reads_batch_logs(callback, hook):
    if getattr(callback, "_supports_tf_logs", False):
        return False
    return any(not getattr(getattr(callback, name), "_is_default", False)
               for name in _BATCH_END_HOOKS[hook])


class Callback:
    """Mirrors ``tf.keras.callbacks.Callback()``: the base of all callbacks.

    Subclasses override any of the hooks below; each receives ``logs``, a dict of Python floats
    (the running loss and metrics of the epoch at a batch's end, the epoch's final values plus
    the ``val_`` ones at an epoch's end). ``self.model`` is the model being trained and
    ``self.params`` holds ``verbose``, ``epochs`` and ``steps``.
    ``on_batch_begin``/``on_batch_end`` are the old names of the training batch hooks: the base
    ``on_train_batch_begin``/``on_train_batch_end`` call them, so overriding either works.

    As in TF, a batch's logs stay on the device (0-d tnp arrays) until a callback needs them:
    ``fit`` reads them back only for a callback that overrides a batch-end hook, unless it sets
    ``_supports_tf_logs = True`` (then it gets the device values and converts what it uses,
    e.g. with ``float()``), so callbacks that ignore batch logs cost no host round trip.
    """

    _supports_tf_logs = False

    def __init__(self):
        self.validation_data = None
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    # batch hooks ---------------------------------------------------------------------------
    @_default
    def on_batch_begin(self, batch, logs=None):
        """Alias kept for backwards compatibility: called by ``on_train_batch_begin``."""

    @_default
    def on_batch_end(self, batch, logs=None):
        """Alias kept for backwards compatibility: called by ``on_train_batch_end``."""

    @_default
    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    @_default
    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    @_default
    def on_test_batch_begin(self, batch, logs=None):
        pass

    @_default
    def on_test_batch_end(self, batch, logs=None):
        pass

    @_default
    def on_predict_batch_begin(self, batch, logs=None):
        pass

    @_default
    def on_predict_batch_end(self, batch, logs=None):
        pass

    # epoch hooks ---------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    # whole-call hooks ----------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    # elastic training (no Keras analogue) ------------------------------------------------------
    def on_workers_changed(self, logs=None):
        """An elastic job lost workers and goes on: ``logs`` holds ``old_workers``,
        ``new_workers``, ``lost`` (the old ranks that died), ``epoch`` and ``step`` (the step
        being redone or finished on the survivors)."""
        pass


class CallbackList:
    """Mirrors ``tf.keras.callbacks.CallbackList(callbacks=None, add_history=False,
    add_progbar=False, model=None, **params)``: a container that forwards each hook to its
    callbacks in order.

    ``add_history`` appends a :class:`History` and ``add_progbar`` puts a ``ProgbarLogger``
    first, unless the list already holds one. ``model`` is handed to every callback (and the
    history is set as ``model.history``); ``params`` (``verbose``, ``epochs``, ``steps``, ...)
    likewise. The same ``logs`` dict goes to every callback of a hook, so one callback may add
    a key (``ReduceLROnPlateau`` adds ``lr``) that the later ones see.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        if isinstance(callbacks, CallbackList):
            callbacks = callbacks.callbacks
        self.callbacks = list(callbacks) if callbacks else []
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"CallbackList: expected Callback instances, got "
                                f"{type(cb).__name__}")
        self._add_default_callbacks(add_history, add_progbar)
        self.model = None
        self.params = {}
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def _add_default_callbacks(self, add_history, add_progbar):
        from .progbar import ProgbarLogger

        self._progbar = next((cb for cb in self.callbacks if isinstance(cb, ProgbarLogger)), None)
        self._history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger(count_mode="steps")
            self.callbacks.insert(0, self._progbar)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)

    def append(self, callback):
        if not isinstance(callback, Callback):
            raise TypeError(f"CallbackList.append: expected a Callback, got "
                            f"{type(callback).__name__}")
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)

    def set_model(self, model):
        self.model = model
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self):
        return len(self.callbacks)

    def _call(self, hook, *args, logs=None):
        # epoch and whole-call logs are read back here, in place, if the loop has not already
        logs = {} if logs is None else python_logs(logs)
        for cb in self.callbacks:
            getattr(cb, hook)(*args, logs=logs)

    def _batch_callees(self, hook, names):
        """The callbacks that override a batch hook (asked once per hook and list of
        callbacks; a batch then costs nothing for the others)."""
        key = (hook, len(self.callbacks))
        cache = self.__dict__.setdefault("_callees_cache", {})
        callees = cache.get(key)
        if callees is None:
            callees = cache[key] = tuple(cb for cb in self.callbacks if _overrides(cb, names))
        return callees

    def _call_batch_begin(self, hook, batch, logs):
        callees = self._batch_callees(hook, _BATCH_BEGIN_HOOKS[hook])
        if callees:
            logs = {} if logs is None else python_logs(logs)
            for cb in callees:
                getattr(cb, hook)(batch, logs=logs)

    def _call_batch_end(self, hook, batch, logs):
        # A batch's logs stay on the device unless a callback reads them (Keras's
        # ``_call_batch_hook_helper``); then they are read once, for every callback.
        callees = self._batch_callees(hook, _BATCH_END_HOOKS[hook])
        if not callees:
            return
        logs = {} if logs is None else logs
        # which callbacks read batch logs is asked once per hook and list of callbacks
        key = (hook, len(self.callbacks))
        reads = self.__dict__.setdefault("_reads_cache", {}).get(key)
        if reads is None:
            reads = self._reads_cache[key] = any(_reads_batch_logs(cb, hook)
                                                 for cb in self.callbacks)
        if reads:
            python_logs(logs)
        for cb in callees:
            getattr(cb, hook)(batch, logs=logs)

    # The list's own batch aliases run the training batch hooks, as Keras's do.
    def on_batch_begin(self, batch, logs=None):
        self._call_batch_begin("on_train_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._call_batch_end("on_train_batch_end", batch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call_batch_begin("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call_batch_end("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call_batch_begin("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call_batch_end("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call_batch_begin("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call_batch_end("on_predict_batch_end", batch, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs=logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs=logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs=logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs=logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs=logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs=logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs=logs)

    def on_workers_changed(self, logs=None):
        self._call("on_workers_changed", logs=logs)


class History(Callback):
    """Mirrors ``tf.keras.callbacks.History()``: records the epoch logs. ``fit`` adds one to
    every call and returns it (also as ``model.history``): ``history.history`` maps each log key
    to its list of per-epoch values, ``history.epoch`` lists the epochs run (0-based)."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
