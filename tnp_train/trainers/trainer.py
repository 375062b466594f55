"""``compile``/``fit``/``evaluate``/``predict``: the Keras training loop (TF 2.4 signatures).

The loop is plain Python around three overridable steps: ``train_step`` (forward under a
``GradientTape``, the compiled loss, ``optimizer.minimize(loss, vars, tape=tape)``, the
metrics), ``test_step`` and ``predict_step``. Callbacks see Keras's hooks. As in TF, a step's
logs stay on the device: they are read back to the host only for a callback that looks at
batch logs, when the progress bar redraws, and once at each epoch's end (History, the epoch
hooks, ``evaluate``'s result and ``train_on_batch``'s get Python floats).
"""
from __future__ import annotations

from collections.abc import Mapping
import warnings

import numpy as _np

import tnp

from .. import compiler as _compiler
from .. import losses as _losses
from ..distribute import distribute_lib as _ds
from ..utils.lazy import LazyModule

_metrics = LazyModule("tnp_train.metrics")   # metrics sit beside the trainers
from .. import optimizers as _optimizers
from ..autodiff import GradientTape, Variable
from ..utils import tracing as _tracing
from ..utils.logs import python_logs as _python_logs
from ..utils.tree import flatten, pack_sequence_as
from . import distributed as _dist
from . import ps_fit as _ps_fit
from .compile_utils import LossesContainer, MetricsContainer, OutputNames
from .data_adapter import (DataHandler, check_count, check_fraction, train_validation_split,
                           unpack_x_y_sample_weight)

__all__ = ["Trainer"]

_END = object()      # what next() gives at the end of an epoch's batches


def _concat(batches):
    if not batches:
        return None
    first = batches[0]
    flat = [flatten(b) for b in batches]
    leaves = [tnp.concatenate([f[i] for f in flat], axis=0) for i in range(len(flat[0]))]
    return pack_sequence_as(first, leaves)


# compile(jit_compile=None) compiles the built-in steps when they can be (see _auto_compiles);
# False runs them eagerly unless jit_compile=True (what this project did before)
_AUTO_COMPILE = True


class Trainer:
    """The training API of ``tt.Model`` (mixed into it)."""

    def _init_trainer(self):
        d = self.__dict__
        d["optimizer"] = None
        d["compiled_loss"] = None
        d["compiled_metrics"] = None
        d["_is_compiled"] = False
        d["stop_training"] = False
        d["history"] = None
        d["_compile_config"] = None
        d["_run_eagerly"] = None
        d["_distribution_strategy"] = None

    @property
    def distribute_strategy(self):
        """The ``tt.distribute.Strategy`` the model was compiled under (TF's
        ``Model.distribute_strategy``), else the current one."""
        s = self.__dict__.get("_distribution_strategy")
        return s if s is not None else _ds.get_strategy()

    # ------------------------------------------------------------------ compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, **kwargs):
        """Configure training; mirrors ``tf.keras.Model.compile``. Under a ``mixed_float16``
        global or model policy the optimizer is wrapped in a ``LossScaleOptimizer``, as TF 2.4
        does. Inside a strategy's scope (or for a model whose variables were made in one) the
        model records the strategy (``distribute_strategy``), which ``fit``/``evaluate``/
        ``predict`` then use, and the optimizer sums its gradients over the replicas."""
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: {sorted(kwargs)}")
        if jit_compile and run_eagerly:
            raise ValueError("You cannot enable `run_eagerly` and `jit_compile` at the same "
                             "time.")
        if steps_per_execution is None:
            steps_per_execution = 1
        if isinstance(steps_per_execution, bool) or not isinstance(
                steps_per_execution, (int, _np.integer)) or steps_per_execution < 1:
            raise ValueError(f"compile: steps_per_execution must be a positive integer, got "
                             f"{steps_per_execution!r}")
        self.__dict__["_jit_compile"] = jit_compile
        self.__dict__["_step_functions"] = {}
        self.__dict__["_steps_per_execution"] = int(steps_per_execution)
        strategy = self._compile_strategy()
        with _dist.strategy_scope(strategy):
            self._compile(strategy, optimizer, loss, metrics, loss_weights, weighted_metrics,
                          run_eagerly)

    def _compile_strategy(self):
        own = self.__dict__.get("_distribution_strategy")
        if _ds.has_strategy():
            strategy = _ds.get_strategy()
            if own is not None and own is not strategy:
                raise ValueError(f"compile: the model was compiled under {own!r} and is now "
                                 f"compiled in the scope of {strategy!r}; a model belongs to one "
                                 f"strategy")
        else:
            strategy = own if own is not None else _dist.strategy_of_weights(self)
        if strategy is not None:
            _dist.check_variables_in_scope(strategy, self)
        self.__dict__["_distribution_strategy"] = strategy
        return strategy

    def _compile(self, strategy, optimizer, loss, metrics, loss_weights, weighted_metrics,
                 run_eagerly):
        self._compile_config = {"optimizer": optimizer, "loss": loss, "metrics": metrics,
                                "loss_weights": loss_weights, "weighted_metrics": weighted_metrics}
        opt = _optimizers.get(optimizer)
        # TF 2.4's rule: the policy's loss scale ("dynamic" for mixed_float16; an experimental
        # Policy may give a fixed one, or None)
        policy = self.dtype_policy
        scale = getattr(policy, "loss_scale", "dynamic" if policy.name == "mixed_float16"
                        else None)
        if scale is not None:
            from ..mixed_precision import loss_scale_optimizer as _lso
            if not isinstance(opt, _lso.LossScaleOptimizer):
                opt = _lso.LossScaleOptimizer(opt, **_lso.arguments_from_loss_scale(
                    scale, "compile"))
        if strategy is not None:
            _dist.install_gradient_aggregator(strategy, opt)
        self.__dict__["optimizer"] = opt
        pending = self.__dict__.pop("_pending_optimizer_state", None)
        slots = self.__dict__.pop("_pending_optimizer_slots", None)
        if pending is not None or slots:
            # load_weights ran before compile: the saved optimizer state goes to this optimizer
            from ..checkpoint._graph import restore_pending_optimizer
            restore_pending_optimizer(opt, pending, slots or [])
        names = self._output_names()
        wide = self.dtype == "float64" or any(w.dtype == "float64" for w in self.weights)
        tracker_dtype = "float64" if wide else "float32"
        # a container even without a loss, as TF 2.4: add_loss terms still reach it
        self.compiled_loss = LossesContainer(loss, loss_weights, names, dtype=tracker_dtype)
        self.compiled_metrics = MetricsContainer(metrics, weighted_metrics, names)
        self._run_eagerly = run_eagerly
        self._is_compiled = True
        self.stop_training = False

    def _output_names(self):
        outs = getattr(self, "_flat_outputs", None)
        if outs:
            names = []
            for t in outs:
                n = t.node.layer.name
                names.append(n if n not in names else f"{n}_{len(names)}")
            nested = getattr(self, "_nested_outputs", None)
            if isinstance(nested, Mapping) and len(nested) == len(names):
                # a dict of outputs (flattened in sorted key order): its keys name the outputs
                # in a dict of losses, metrics or targets too, as in TF
                return OutputNames(names, sorted(nested))
            return names
        return ["output"]

    def get_compile_config(self):
        """The compile arguments as JSON-able data (what ``model.save`` writes), None before
        ``compile``; mirrors tf.keras's ``Model.get_compile_config()``."""
        if self._compile_config is None:
            return None
        cfg = self._compile_config

        def ser(x, module):
            if x is None or isinstance(x, (str, int, float)):
                return x
            if isinstance(x, (list, tuple)):
                return [ser(e, module) for e in x]
            if isinstance(x, dict):
                return {k: ser(v, module) for k, v in x.items()}
            return module.serialize(x)

        opt = self.optimizer
        inner = getattr(opt, "inner_optimizer", None)
        return {"optimizer": _optimizers.serialize(inner if inner is not None else opt),
                "loss": ser(cfg["loss"], _losses), "metrics": ser(cfg["metrics"], _metrics),
                "loss_weights": cfg["loss_weights"],
                "weighted_metrics": ser(cfg["weighted_metrics"], _metrics)}

    def compile_from_config(self, config):
        """Compile with the arguments :meth:`get_compile_config` gave (what ``load_model``
        does); mirrors tf.keras's ``Model.compile_from_config(config)``."""
        def de(x, module):
            if isinstance(x, dict) and "class_name" in x:
                return module.deserialize(x)
            if isinstance(x, list):
                return [de(e, module) for e in x]
            if isinstance(x, dict):
                return {k: de(v, module) for k, v in x.items()}
            return x
        self.compile(optimizer=_optimizers.deserialize(config["optimizer"])
                     if isinstance(config["optimizer"], dict) else config["optimizer"],
                     loss=de(config.get("loss"), _losses), metrics=de(config.get("metrics"), _metrics),
                     loss_weights=config.get("loss_weights"),
                     weighted_metrics=de(config.get("weighted_metrics"), _metrics))

    def _assert_compiled(self, what):
        if not self._is_compiled:
            raise RuntimeError(f"You must compile your model before {what}. Call "
                               f"`model.compile(optimizer, loss)`.")

    # ------------------------------------------------------------------ metrics
    @property
    def metrics(self):
        """The loss tracker(s) and the compiled metrics (once a step has used them, as in TF),
        then the metrics the model and its layers hold (attributes, ``add_metric``)."""
        out = []
        if self.compiled_loss is not None:
            out.extend(self.compiled_loss.metrics)
        if self.compiled_metrics is not None:
            out.extend(self.compiled_metrics.metrics)
        held = super().metrics
        if held:
            seen = {id(m) for m in out}
            out.extend(m for m in held if id(m) not in seen)
        return out

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def _logs(self):
        # results stay on their device, as TF's logs are tensors: the loops read them back
        # when a callback or the progress bar asks, and once at the epoch's end
        metrics = self.metrics
        strategy = _ds.get_strategy()
        if strategy.num_replicas_in_sync == 1:
            return {m.name: m.result() for m in metrics}
        # TF 2.4's metric result_wrapper: results computed in cross-replica context, where the
        # ON_READ totals and counts are summed over the replicas -- the job's numbers
        ctx = _ds.get_replica_context()
        if ctx is None:
            return _global_results(strategy, metrics)
        return ctx.merge_call(_global_results, args=(metrics,))

    # ------------------------------------------------------------------ steps
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss plus the model's regularization losses (Keras 3's hook); updates
        the loss trackers, as calling ``compiled_loss`` does in TF 2.4."""
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)

    def _train_update(self, data):
        """``train_step`` but its logs: the forward and backward pass, the metrics' update and
        the optimizer's step (what a compiled step under a strategy compiles)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            # profiling: the loss is the end of the forward pass
            with _tracing.span("loss", "forward"):
                loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_variables
        if variables and not self.compiled_loss.has_loss_for(y) and not self.losses:
            # TF fails later with "No gradients provided for any variable"; say why
            raise ValueError("No loss to minimize: compile the model with a loss for an output "
                             "that has targets (y), or add one with `add_loss`")
        # TF 2.4's `_minimize` applies nothing without trainable variables: a model with only
        # add_loss terms and frozen weights still reports its loss
        if y is not None:
            # Keras updates the metrics after the step; before it they take the same values
            # (y_pred is this step's), and under a strategy their state is then final when the
            # gradients are summed over the workers, so it is summed with them
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        if variables:
            self.optimizer.minimize(loss, variables, tape=tape)

    def train_step(self, data):
        """One optimisation step on a batch; returns the logs (mirrors ``Model.train_step``)."""
        self._train_update(data)
        return self._logs()

    def _update_metrics(self, y, y_pred, sample_weight):
        if y is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self._logs()

    def _test_update(self, data):
        """``test_step`` but its logs: the loss trackers' and the metrics' update."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        with _tracing.span("loss", "forward"):
            self.compute_loss(x, y, y_pred, sample_weight)
        if y is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)

    def test_step(self, data):
        """Loss and metrics on a batch, no update (mirrors ``Model.test_step``)."""
        self._test_update(data)
        return self._logs()

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, kind, strategy):
        """The step ``fit``/``evaluate``/``predict`` run (``kind``: "train", "test",
        "predict"): compiled with ``tt.function`` (TF's ``train_function``), unless
        ``run_eagerly``, ``jit_compile=False`` or ``tt.config.run_functions_eagerly(True)``;
        under a strategy see :meth:`_strategy_step_function`. With ``compile(jit_compile=True)``
        (TF 2.5's name) a step that cannot be compiled is an error naming the reason; by default
        (``jit_compile=None``) the built-in steps are compiled where they can be and run
        eagerly otherwise, silently (see :meth:`_auto_compiles`), and a ``train_step`` of the
        user's runs eagerly. The first call of each step runs eagerly (it builds the metrics'
        and the optimizer's state); later calls run the compiled step."""
        step = getattr(self, kind + "_step")
        jit = self.__dict__.get("_jit_compile")
        if self.run_eagerly or jit is False or _compiler.config.functions_run_eagerly():
            return step
        underlying = getattr(step, "__func__", step)
        if strategy is not None:
            return self._strategy_step_function(kind, strategy, step, underlying, jit)
        if not jit and not (_AUTO_COMPILE and self._auto_compiles(kind, underlying)):
            return step
        table = self.__dict__.setdefault("_step_functions", {})
        entry = table.get(kind)
        if entry is None or entry[0] is not underlying or len(entry) != 2:
            # new, or the step was replaced (a train_step assigned on the instance)
            # without jit_compile=True, what cannot be compiled runs as it always did
            fn = _compiler.step_function(step, f"{kind}_function", strict=bool(jit))
            table[kind] = [underlying, fn]
            return step            # the first call builds the state: eagerly
        return entry[1]

    def _strategy_step_function(self, kind, strategy, step, underlying, jit):
        """The step under ``strategy``: the built-in step's update (forward, loss, backward,
        metrics, the optimizer's step) compiled, its logs read after it eagerly (the job's
        numbers, read in cross-replica context as in an eager step), where the strategy runs
        one replica per process. The hand-over of each gradient to the strategy's bucketed
        all-reduce and the optimizer's step (the reduction, a sharded update) are effects of
        the compiled function: they run at every call in program order, so the buckets still
        start during the backward pass. The compiled function is traced again when the number
        of replicas or this replica's rows of the global batch change (an uneven last batch,
        an elastic job's survivors): the loss is scaled by them. Otherwise (a step of the
        user's, replica threads, an aggregator that keeps the arrays it is handed) the step
        runs eagerly; with ``jit_compile=True`` that is an error naming why."""
        why = None
        if underlying is not getattr(Trainer, kind + "_step"):
            why = f"the model's own {kind}_step is not compiled under a strategy (its logs " \
                  f"are read in the replica function)"
        elif len(strategy.extended.local_devices) > 1:
            why = "several replicas in one process (replica threads) run their steps eagerly"
        elif kind == "train" and not self._aggregation_compiles():
            why = "the optimizer's gradient_aggregator keeps the gradient arrays it is handed"
        if why is not None:
            if jit:
                raise ValueError(f"compile(jit_compile=True) under {type(strategy).__name__}: "
                                 f"the {kind} step cannot be compiled: {why}. Use "
                                 f"jit_compile=None (it then runs eagerly)")
            return step
        if not jit and not _AUTO_COMPILE:
            return step
        table = self.__dict__.setdefault("_step_functions", {})
        entry = table.get(kind)
        if entry is not None and len(entry) == 4 and entry[0] is underlying and \
                entry[2] is strategy:
            return entry[3]
        body = {"train": self._train_update, "test": self._test_update,
                "predict": self.predict_step}[kind]

        def update(data, replicas_and_rows):
            # (the second argument only keys the signature: the trace reads both values)
            return body(data)

        fn = _compiler.step_function(update, f"{kind}_function", strict=bool(jit))
        aggregator = self._train_aggregator() if kind == "train" else None

        def compiled_step(data):
            key = (strategy.num_replicas_in_sync, _dist.batch_rows())
            try:
                out = fn(data, key)
            except BaseException:
                if aggregator is not None and aggregator.streams:
                    aggregator.abandon()     # as a failed eager backward pass does
                raise
            return out if kind == "predict" else self._logs()

        table[kind] = [underlying, fn, strategy, compiled_step]
        return step                # the first call builds the state: eagerly

    def _train_aggregator(self):
        opt = getattr(self, "optimizer", None)
        if opt is None:
            return None
        inner = getattr(opt, "inner_optimizer", None) or opt
        return inner.aggregator

    def _aggregation_compiles(self):
        """Whether the optimizer's aggregation can be effects of a compiled step: none that
        is handed gradients during the backward pass, or one that copies what it is handed
        (a compiled step hands over its own buffers, reused later in the same call)."""
        agg = self._train_aggregator()
        return agg is None or not agg.streams or agg.copies_handed_over

    def _auto_compiles(self, kind, underlying):
        """Whether ``compile(jit_compile=None)`` compiles this step: the built-in step (a
        user's ``train_step`` keeps running eagerly, its Python at every step) with the
        optimizer's own aggregation; a signature that cannot be compiled (an operation the
        tracer cannot follow) runs eagerly. A profiler changes nothing: the compiled step
        records its spans (``tnp_train.compiler.spans``)."""
        if underlying is not getattr(Trainer, kind + "_step"):
            return False
        if kind == "train":
            if getattr(self, "optimizer", None) is None or not self._aggregation_compiles():
                return False
        return True

    @property
    def step_compilation(self):
        """How the steps run since ``compile``: {kind: state} for the steps set up for
        compilation so far, ``state`` being "compiled" (a signature of it runs compiled),
        "eager" (traced, but every signature runs eagerly: an operation the tracer cannot
        follow, such as a random draw made in Python) or "not traced yet" (tnp_train's own
        introspection; TF has no equivalent)."""
        def state(fn):
            if fn.compiled_signature_count():
                return "compiled"
            return "eager" if fn.experimental_get_tracing_count() else "not traced yet"
        return {kind: state(entry[1])
                for kind, entry in self.__dict__.get("_step_functions", {}).items()}

    # ------------------------------------------------------------------ loops
    # the CallbackList class the loops drive: the model sets it, since the callbacks use the
    # trainers and so the trainers may not import them
    _callback_list_class = None

    def _callbacks(self, callbacks, verbose, epochs, steps, add_history=True):
        callback_list = self._callback_list_class
        if isinstance(callbacks, callback_list):
            return callbacks
        return callback_list(callbacks, add_history=add_history,
                             add_progbar=verbose != 0 and _dist.is_chief(self),
                             model=self, verbose=verbose, epochs=epochs, steps=steps)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, max_queue_size=10, workers=1,
            use_multiprocessing=False):
        """Train for ``epochs`` epochs; mirrors ``tf.keras.Model.fit``. Returns the History.

        Under a strategy (the one the model was compiled under), ``batch_size`` is the global
        batch: each worker trains on its part of every batch, and the logs are the job's."""
        self._assert_compiled("training/testing")
        strategy = _dist.run_strategy(self)
        if _ps_fit.is_parameter_server(strategy):
            # the chief schedules the steps on the workers (what TF added to fit after 2.4),
            # through its ClusterCoordinator
            return _ps_fit.fit(
                self, x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                callbacks=callbacks, validation_split=validation_split,
                validation_data=validation_data, shuffle=shuffle, class_weight=class_weight,
                sample_weight=sample_weight, initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
                validation_batch_size=validation_batch_size, validation_freq=validation_freq)
        with _dist.strategy_scope(strategy):
            return self._fit(strategy, x, y, batch_size, epochs, verbose, callbacks,
                             validation_split, validation_data, shuffle, class_weight,
                             sample_weight, initial_epoch, steps_per_epoch, validation_steps,
                             validation_batch_size, validation_freq)

    def _fit(self, strategy, x, y, batch_size, epochs, verbose, callbacks, validation_split,
             validation_data, shuffle, class_weight, sample_weight, initial_epoch,
             steps_per_epoch, validation_steps, validation_batch_size, validation_freq):
        epochs = check_count("epochs", epochs, minimum=0, allow_none=False)
        initial_epoch = check_count("initial_epoch", initial_epoch, minimum=0, allow_none=False)
        batch_size = check_count("batch_size", batch_size)
        steps_per_epoch = check_count("steps_per_epoch", steps_per_epoch)
        validation_steps = check_count("validation_steps", validation_steps)
        validation_batch_size = check_count("validation_batch_size", validation_batch_size)
        validation_split = check_fraction("validation_split", validation_split)
        _check_validation_freq(validation_freq)
        verbose = 1 if verbose == "auto" else int(verbose)
        if validation_split and validation_data is None:
            if isinstance(x, (tnp.ndarray, _np.ndarray, list, tuple, dict)):
                (x, y, sample_weight), validation_data = train_validation_split(
                    (x, y, sample_weight), validation_split)
            else:
                raise ValueError("`validation_split` is only supported for arrays, not for "
                                 "datasets or generators")
        data = DataHandler(x, y, sample_weight, batch_size, steps_per_epoch, shuffle, class_weight,
                           num_classes=_output_classes(self) if class_weight else None,
                           distribute=strategy)
        val = None
        if validation_data is not None:
            if isinstance(validation_data, (tuple, list)) and \
                    not hasattr(validation_data, "cardinality"):
                vx, vy, vsw = unpack_x_y_sample_weight(validation_data)
                val = DataHandler(vx, vy, vsw, validation_batch_size or batch_size,
                                  validation_steps, distribute=strategy)
            else:
                val = DataHandler(validation_data, batch_size=validation_batch_size or batch_size,
                                  steps_per_epoch=validation_steps, distribute=strategy)
        steps = data.steps_per_epoch
        if strategy is not None:
            _carry_metric_state(strategy, self)
        cbs = self._callbacks(callbacks, verbose, epochs, steps)
        self.stop_training = False
        self._initial_epoch_from_backup = None
        self._initial_step_from_backup = None
        cbs.on_train_begin()
        start = self._initial_epoch_from_backup
        start = initial_epoch if start is None else start
        skip = self._initial_step_from_backup or 0   # a mid-epoch backup: batches already done
        epoch_logs = {}
        steps_run = 0      # the profiler's step_num: unique across the epochs of this fit
        for epoch in range(start, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            logs = {}
            seen = 0
            # compile(steps_per_execution=N): the batch callbacks see a chunk of N steps, as
            # TF's (begin at its first step, end at its last; stop_training read at its end)
            per = self.__dict__.get("_steps_per_execution", 1)
            open_chunk = False
            for step, (batch, t_next, t_batch) in enumerate(_timed_batches(data)):
                seen += 1
                if skip:
                    skip -= 1
                    continue
                if not open_chunk:
                    cbs.on_train_batch_begin(step)
                    open_chunk = True
                # TF 2.4's Trace("train", step_num=..., _r=1) around the step, opened after
                # on_train_batch_begin (where TensorBoard(profile_batch=) starts the profiler)
                # and dated back to the wait for the batch, which is its first part
                with _tracing.span("train", "step", t_next, step_num=steps_run, epoch_num=epoch,
                                   batch=step):
                    _tracing.complete("IteratorGetNext", "input", t_next, t_batch)
                    logs = _batch_logs(_dist.run_train_step(self, strategy,
                                                            self._step_function("train", strategy),
                                                            batch, data, cbs, epoch, step))
                    if per == 1 or (step + 1) % per == 0:
                        cbs.on_train_batch_end(step, logs)
                        open_chunk = False
                steps_run += 1
                if self.stop_training and not open_chunk:
                    break
            if open_chunk:                  # the epoch's last, shorter chunk
                cbs.on_train_batch_end(step, logs)
            if data.out_of_data:
                warnings.warn(_ran_out_of_data(steps, epochs - start), stacklevel=3)
            if not seen:
                if epoch == start:
                    raise ValueError("Unexpected result of `train_function` (Empty logs): the "
                                     "training data produced no batches")
                if not data.out_of_data:
                    warnings.warn(_ran_out_of_data(steps, epochs - start), stacklevel=3)
                break
            if not logs:
                logs = self._logs()    # every batch of a resumed epoch was done before
            # the epoch's one read of its values from the device: History gets Python floats
            epoch_logs = _python_logs(dict(logs))
            if val is not None and _should_validate(epoch, validation_freq):
                val_logs = self._evaluate_handler(val, cbs, verbose=0, strategy=strategy)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training or data.out_of_data:
                break
        cbs.on_train_end(epoch_logs)
        return self.history

    def _evaluate_handler(self, data, cbs, verbose, strategy=None):
        self.reset_metrics()
        cbs.on_test_begin()
        logs = {}
        for step, (batch, t_next, t_batch) in enumerate(_timed_batches(data)):
            cbs.on_test_batch_begin(step)
            with _tracing.span("test", "step", t_next, step_num=step):
                _tracing.complete("IteratorGetNext", "input", t_next, t_batch)
                logs = _batch_logs(_run(strategy, self._step_function("test", strategy), batch))
                cbs.on_test_batch_end(step, logs)
        logs = _python_logs(dict(logs))
        cbs.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None, max_queue_size=10, workers=1,
                 use_multiprocessing=False, return_dict=False):
        """Loss and metrics on the data; mirrors ``tf.keras.Model.evaluate``: a scalar when
        there is only the loss, else a list in ``metrics_names`` order (or a dict). Under a
        strategy each worker evaluates its part of every batch; the numbers are the job's."""
        self._assert_compiled("training/testing")
        strategy = _dist.run_strategy(self)
        with _dist.strategy_scope(strategy):
            return self._evaluate(strategy, x, y, batch_size, verbose, sample_weight, steps,
                                  callbacks, return_dict)

    def _evaluate(self, strategy, x, y, batch_size, verbose, sample_weight, steps, callbacks,
                  return_dict):
        verbose = 1 if verbose == "auto" else int(verbose)
        data = DataHandler(x, y, sample_weight, batch_size, check_count("steps", steps),
                           distribute=strategy)
        cbs = self._callbacks(callbacks, verbose, 1, data.steps_per_epoch, add_history=False)
        logs = self._evaluate_handler(data, cbs, verbose, strategy=strategy)
        if not logs:
            raise ValueError("evaluate: the data produced no batches")
        if return_dict:
            return logs
        return _as_list(logs, self.metrics_names)

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None,
                max_queue_size=10, workers=1, use_multiprocessing=False):
        """The model's outputs on ``x``, batch by batch, concatenated (tnp arrays). Under a
        strategy each worker predicts its part of every batch and every worker gets all the
        outputs, in the order of the data."""
        strategy = _dist.run_strategy(self)
        with _dist.strategy_scope(strategy):
            return self._predict(strategy, x, batch_size, verbose, steps, callbacks)

    def _predict(self, strategy, x, batch_size, verbose, steps, callbacks):
        verbose = 0 if verbose == "auto" else int(verbose)
        data = DataHandler(x, None, None, batch_size, check_count("steps", steps), for_predict=True,
                           distribute=strategy)
        cbs = self._callbacks(callbacks, verbose, 1, data.steps_per_epoch, add_history=False)
        cbs.on_predict_begin()
        outs = []
        gather = strategy is not None and strategy.num_replicas_in_sync > 1
        for step, batch in enumerate(data.epoch_iterator()):
            cbs.on_predict_batch_begin(step)
            out = _run(strategy, self._step_function("predict", strategy), batch)
            if gather:
                # the workers' parts of this batch, in worker order: the batch as one process
                # would have predicted it
                out = strategy.gather(out, axis=0)
            outs.append(out)
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outs:
            raise ValueError("predict: the data produced no batches")
        return _concat(outs)

    # ------------------------------------------------------------------ single batches
    # ------------------------------------------------------------------ TF 2.4's older names
    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1, callbacks=None,
                      validation_data=None, validation_steps=None, validation_freq=1,
                      class_weight=None, max_queue_size=10, workers=1,
                      use_multiprocessing=False, shuffle=True, initial_epoch=0):
        """Deprecated in TF 2.4 (``fit`` takes generators): calls :meth:`fit`."""
        _warn_deprecated("fit_generator", "fit")
        return self.fit(generator, steps_per_epoch=steps_per_epoch, epochs=epochs,
                        verbose=verbose, callbacks=callbacks, validation_data=validation_data,
                        validation_steps=validation_steps, validation_freq=validation_freq,
                        class_weight=class_weight, max_queue_size=max_queue_size,
                        workers=workers, use_multiprocessing=use_multiprocessing,
                        shuffle=shuffle, initial_epoch=initial_epoch)

    def evaluate_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                           workers=1, use_multiprocessing=False, verbose=0):
        """Deprecated in TF 2.4: calls :meth:`evaluate`."""
        _warn_deprecated("evaluate_generator", "evaluate")
        return self.evaluate(generator, steps=steps, callbacks=callbacks,
                             max_queue_size=max_queue_size, workers=workers,
                             use_multiprocessing=use_multiprocessing, verbose=verbose)

    def predict_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                          workers=1, use_multiprocessing=False, verbose=0):
        """Deprecated in TF 2.4: calls :meth:`predict`."""
        _warn_deprecated("predict_generator", "predict")
        return self.predict(generator, steps=steps, callbacks=callbacks,
                            max_queue_size=max_queue_size, workers=workers,
                            use_multiprocessing=use_multiprocessing, verbose=verbose)

    def reset_states(self):
        """Reset the state of every stateful layer (a stateful RNN's carried states), nested
        models' layers included."""
        for layer in self._flatten_layers(include_self=False):
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    @property
    def run_eagerly(self):
        """Always true in effect (there is no graph to compile); reads what ``compile`` or
        the setter was given, as TF's attribute (False when neither set it)."""
        return bool(self.__dict__.get("_run_eagerly"))

    @run_eagerly.setter
    def run_eagerly(self, value):
        self.__dict__["_run_eagerly"] = value

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, reset_metrics=True,
                       return_dict=False):
        self._assert_compiled("training/testing")
        strategy = _dist.run_strategy(self)
        with _dist.strategy_scope(strategy):
            if reset_metrics:
                self.reset_metrics()
            data = DataHandler(x, y, sample_weight, batch_size=_n(x), class_weight=class_weight,
                               num_classes=_output_classes(self) if class_weight else None,
                               distribute=strategy)
            logs = _python_logs(dict(_run(strategy, self.train_step,
                                          next(data.epoch_iterator()))))
        return logs if return_dict else _as_list(logs, self.metrics_names)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True, return_dict=False):
        self._assert_compiled("training/testing")
        strategy = _dist.run_strategy(self)
        with _dist.strategy_scope(strategy):
            if reset_metrics:
                self.reset_metrics()
            data = DataHandler(x, y, sample_weight, batch_size=_n(x), distribute=strategy)
            logs = _python_logs(dict(_run(strategy, self.test_step,
                                          next(data.epoch_iterator()))))
        return logs if return_dict else _as_list(logs, self.metrics_names)

    def predict_on_batch(self, x):
        return self(x if isinstance(x, (list, tuple, dict)) else tnp.asarray(x), training=False)


def _warn_deprecated(name, instead):
    warnings.warn(f"`Model.{name}` is deprecated and will be removed in a future version. "
                  f"Please use `Model.{instead}`, which supports generators.",
                  DeprecationWarning, stacklevel=3)


def _timed_batches(data):
    """The epoch's batches, each with when the loop began to wait for it and when it came
    (the step's input span, which the step span is dated back to)."""
    batches = iter(data.epoch_iterator())
    while True:
        t_next = _tracing.clock()
        batch = next(batches, _END)
        if batch is _END:
            return
        yield batch, t_next, _tracing.clock()


def _run(strategy, step, batch):
    """One step: called directly without a strategy, else through ``strategy.run`` (its
    replica context), as TF 2.4's train/test/predict functions do."""
    if strategy is None:
        return step(batch)
    return strategy.run(step, args=(batch,))


def _carry_metric_state(strategy, model):
    """Under a strategy of several workers, the metrics' ON_READ state is summed with each
    step's gradients (see ``AllReduceGradients.carry_on_read``), so the step's logs need no
    collective of their own."""
    opt = model.optimizer
    inner = getattr(opt, "inner_optimizer", None) or opt
    carry = getattr(getattr(inner, "gradient_aggregator", None), "carry_on_read", None)
    if carry is not None:
        carry(lambda: [v for m in model.metrics for v in m.variables], strategy.extended)


def _global_results(strategy, metrics):
    """The metrics' results with their ON_READ state combined over the replicas (a result
    that is a state Variable is copied before the local state comes back)."""
    variables = [v for m in metrics for v in m.variables]
    with strategy.extended.on_read_values(variables):
        out = {}
        for m in metrics:
            r = m.result()
            out[m.name] = tnp.copy(r) if isinstance(r, Variable) else r
        return out


def _n(x):
    leaves = [a for a in flatten(x) if a is not None]
    return max(1, int(_np.shape(leaves[0])[0])) if leaves else 1


def _as_list(logs, names):
    """TF's ``flatten_metrics_in_order``: ``names`` first, then any other keys a custom step
    returned, sorted."""
    vals = [logs[n] for n in names if n in logs]
    vals += [logs[k] for k in sorted(logs) if k not in names]
    return vals[0] if len(vals) == 1 else vals


def _ran_out_of_data(steps, epochs):
    """TF 2.4's warning when fit's data ends before ``steps_per_epoch * epochs`` batches."""
    total = f" (in this case, {steps * epochs} batches)" if steps else ""
    return ("Your input ran out of data; interrupting training. Make sure that your dataset or "
            f"generator can generate at least `steps_per_epoch * epochs` batches{total}. You may "
            "need to use the repeat() function when building your dataset.")


def _batch_logs(logs):
    # A Variable in the logs would change with the next update before a callback reads it:
    # keep this batch's value (on the device), as TF's Metric.result wrapper does
    if isinstance(logs, dict) and any(isinstance(v, Variable) for v in logs.values()):
        return {k: tnp.copy(v) if isinstance(v, Variable) else v for k, v in logs.items()}
    return logs


def _output_classes(model):
    """The classes a single-output model tells apart, for ``class_weight``: the last dimension
    of its ``(batch, classes)`` output (2 for one sigmoid unit); None when not known yet."""
    try:
        shape = model.output_shape
    except AttributeError:
        return None                  # not built yet: the targets tell, as in Keras
    if isinstance(shape, dict):
        shape = list(shape.values())
    elif isinstance(shape, tuple) and any(isinstance(s, (tuple, list)) for s in shape):
        shape = list(shape)
    if isinstance(shape, list):
        if len(shape) != 1:
            raise ValueError("`class_weight` is only supported for Models with a single output.")
        shape = shape[0]
    if len(shape) != 2 or shape[-1] is None:
        return None
    return max(int(shape[-1]), 2)


def _check_validation_freq(freq):
    if isinstance(freq, (list, tuple, set, range)):
        for f in freq:
            check_count("validation_freq", f)
    else:
        check_count("validation_freq", freq, allow_none=False)


def _should_validate(epoch, freq):
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq

