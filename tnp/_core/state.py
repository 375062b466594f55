"""Process-wide switches read on the hot path.

The recording hook is the one seam between ``tnp`` and ``tnp_train``: when a tape is active the
hook is installed and every dispatched operation is handed to it after it has computed; when no
tape is active, each operation pays one global check. Hot-path modules copy the switches into
their own globals (a module global is the cheapest thing Python can read), so the switches are
changed only through :func:`set_recording_hook`, which updates every registered module.
"""
from __future__ import annotations

_hot_modules = []
_hook = [None]
_hook_listeners = []   # callables told of every change (the C accelerator's flag)


def add_hook_listener(fn):
    """``fn(hook_or_None)`` is called now and whenever the recording hook changes."""
    _hook_listeners.append(fn)
    fn(_hook[0])


def register_hot_module(module_globals):
    """Called by a hot-path module at import: it keeps ``_HOOK`` in its globals."""
    _hot_modules.append(module_globals)
    module_globals["_HOOK"] = _hook[0]


def set_recording_hook(hook):
    """Install ``hook(name, args, kwargs, result)`` (or ``None`` to stop recording).

    ``name`` is the registry name of the operation (``'add'``, ``'linalg.inv'``, ``'getitem'``),
    ``args``/``kwargs`` are the call's arguments as the user passed them (tnp arrays, not backend
    arrays) and ``result`` is what the call returns. The hook is process-wide; a thread-local
    tape checks its own thread inside the hook.
    """
    _hook[0] = hook
    for g in _hot_modules:
        g["_HOOK"] = hook
    for fn in _hook_listeners:
        fn(hook)


def get_recording_hook():
    return _hook[0]
