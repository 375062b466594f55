"""``model.fit`` under ``ParameterServerStrategy`` (what TF added after 2.4: ``fit`` drives a
``ClusterCoordinator``); ``Trainer.fit`` hands a model compiled under one to :func:`fit`.

Each step is a closure scheduled on the coordinator (``strategy.run(model.train_step,
args=(next(iterator),))`` on whichever worker is free, with that worker's iterator), so the
workers train asynchronously; each epoch ends with ``coordinator.join()``, then the epoch's
logs are read on the chief from the metrics (their state lives on the parameter servers, so
they sum every worker's batches) and the epoch callbacks run there. As in TF:

* ``steps_per_epoch`` is required (a worker's data has no end the chief could see);
* the data is ``dataset_fn`` (a callable returning a ``tt.data.Dataset``, called on every
  worker, with a ``tt.distribute.InputContext`` if it takes an argument; TF's
  ``DatasetCreator``), a ``tt.data.Dataset`` (each worker iterates its own copy, repeated), or
  arrays ``x, y`` with ``batch_size`` (each worker shuffles its own copy with a seed of its own);
* batch-level callbacks get no logs (the step's result is still on a worker);
* ``validation_data`` is evaluated on the chief at each epoch's end (``model.evaluate``).

Before the first step the chief builds what a worker cannot make (variables are made on the
chief): the model's layers (one forward pass on one batch), the compiled metrics and the
optimizer's slots for every trainable weight, each slot with its weight.
"""
from __future__ import annotations

import numpy as _np

from ..distribute.ps.strategy import ParameterServerStrategy
from .data_adapter import unpack_x_y_sample_weight

__all__ = ["fit", "build_on_chief", "is_parameter_server"]


def is_parameter_server(strategy):
    """Whether ``model.fit`` under ``strategy`` runs here (a ``ParameterServerStrategy``)."""
    return isinstance(strategy, ParameterServerStrategy)


def _positive(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)) or value < 1:
        raise ValueError(f"fit: `{name}` must be a positive integer, got {value!r}")
    return int(value)


class _ArraysFn:
    """``dataset_fn`` of in-memory arrays: each worker shuffles its own copy (no seed: the
    workers' orders differ, as TF's independent workers' do)."""

    def __init__(self, x, y, batch_size, shuffle):
        self.x, self.y, self.batch_size, self.shuffle = x, y, batch_size, shuffle

    def __call__(self):
        from ..data import Dataset
        data = self.x if self.y is None else (self.x, self.y)
        ds = Dataset.from_tensor_slices(data)
        n = len(self.x[0] if isinstance(self.x, (tuple, list)) else self.x)
        if self.shuffle:
            ds = ds.shuffle(n)
        return ds.batch(self.batch_size).repeat()


class _DatasetFn:
    def __init__(self, dataset):
        self.dataset = dataset

    def __call__(self):
        return self.dataset.repeat()


def _dataset_fn(x, y, batch_size):
    from ..data import Dataset
    if isinstance(x, Dataset):
        if y is not None:
            raise ValueError("fit: `y` must not be given with a dataset (it yields the targets)")
        return _DatasetFn(x)
    if callable(x) and not hasattr(x, "shape"):
        if y is not None:
            raise ValueError("fit: `y` must not be given with a dataset function")
        return x
    if x is None:
        raise ValueError("fit: no training data (x is None)")
    return _ArraysFn(x, y, batch_size or 32, True)


def build_on_chief(model, dataset_fn, strategy):
    """Make on the chief, in ``strategy``'s scope, the variables a training step would make:
    the model's layers, the compiled loss and metrics (from one batch of ``dataset_fn``) and the
    optimizer's slots, each with its weight."""
    from ..distribute.ps.server import _call_dataset_fn
    with strategy.scope():
        batch = next(iter(_call_dataset_fn(dataset_fn, 0, 1)))
        x, y, sw = unpack_x_y_sample_weight(batch)
        y_pred = model(x, training=False)
        if y is not None and model.compiled_metrics is not None:
            model.compiled_metrics.build(y, y_pred)
        if model.compiled_loss is not None:
            model.compute_loss(x, y, y_pred, sw)
        model.reset_metrics()
        opt = model.optimizer
        opt = getattr(opt, "inner_optimizer", None) or opt
        runtime = strategy.extended.runtime
        for v in model.trainable_variables:
            if not opt.is_built(v):
                with runtime.colocate(v):
                    opt.ensure_built([v])


def _train_function(model, strategy):
    def train_step(iterator):
        strategy.run(model.train_step, args=(next(iterator),))
    return train_step


def fit(model, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
        validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
        sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
        validation_batch_size=None, validation_freq=1, **unused):
    """``model.fit`` under the model's ``ParameterServerStrategy`` (see the module
    docstring); returns the History."""
    from ..distribute.ps.coordinator import ClusterCoordinator
    model._assert_compiled("training/testing")
    strategy = model.distribute_strategy
    if steps_per_epoch is None:
        raise ValueError("fit: when using a ParameterServerStrategy, `steps_per_epoch` must be "
                         "given (the workers' data has no end the chief could see)")
    steps_per_epoch = _positive("steps_per_epoch", steps_per_epoch)
    if validation_split:
        raise ValueError("fit: `validation_split` is not supported with ParameterServerStrategy "
                         "(give `validation_data`)")
    if class_weight is not None or sample_weight is not None:
        raise ValueError("fit: `class_weight` and `sample_weight` are not supported with "
                         "ParameterServerStrategy (put the weights in the dataset)")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, _np.integer)) or epochs < 0:
        raise ValueError(f"fit: `epochs` must be an integer >= 0, got {epochs!r}")
    verbose = 1 if verbose == "auto" else int(verbose)
    dataset_fn = _dataset_fn(x, y, batch_size)
    coordinator = ClusterCoordinator(strategy)
    build_on_chief(model, dataset_fn, strategy)
    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    train_function = _train_function(model, strategy)
    # the callbacks use the trainers, which may not import them: the model names the list class
    cbs = model._callback_list_class(callbacks, add_history=True, add_progbar=verbose != 0,
                                     model=model, verbose=verbose, epochs=epochs,
                                     steps=steps_per_epoch)
    model.stop_training = False
    cbs.on_train_begin()
    epoch_logs = {}
    for epoch in range(int(initial_epoch), int(epochs)):
        model.reset_metrics()
        cbs.on_epoch_begin(epoch)
        for step in range(steps_per_epoch):
            cbs.on_train_batch_begin(step)
            coordinator.schedule(train_function, args=(iterator,))
            cbs.on_train_batch_end(step, {})
            if model.stop_training:
                break
        coordinator.join()
        epoch_logs = {m.name: float(_np.asarray(m.result())) for m in model.metrics}
        if validation_data is not None and (epoch + 1) % int(validation_freq) == 0:
            val = model.evaluate(validation_data, batch_size=validation_batch_size or batch_size,
                                 steps=validation_steps, verbose=0, return_dict=True) \
                if not isinstance(validation_data, (tuple, list)) else \
                model.evaluate(*validation_data[:2], batch_size=validation_batch_size or
                               batch_size, steps=validation_steps, verbose=0, return_dict=True)
            epoch_logs.update({"val_" + k: float(v) for k, v in val.items()})
        cbs.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    cbs.on_train_end(epoch_logs)
    return model.history
