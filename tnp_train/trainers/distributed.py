"""What ``compile``/``fit``/``evaluate``/``predict`` and the callbacks need from a
distribution strategy (TF 2.4 keeps it in ``distributed_training_utils``): the model's
strategy, the chief's writes, the gradient aggregator, the scaled loss. Only the strategies'
public API is used (``StrategyExtended.num_workers``, ``communicator``, ``on_read_values``,
``install_gradient_aggregator``, ``metric_state_rider``)."""
from __future__ import annotations

import contextlib

from ..autodiff import VariableSynchronization
from ..distribute import distribute_lib

__all__ = ["model_strategy", "is_chief", "chief_only", "chief_writes", "wait_for_chief",
           "strategy_scope", "num_replicas", "batch_rows", "install_gradient_aggregator",
           "carry_metric_state", "check_variables_in_scope"]


def model_strategy(model):
    """The strategy ``model`` was compiled under, else the current one, else the one its
    weights were made in (a model built in a scope and saved outside it); None for none."""
    s = model.__dict__.get("_distribution_strategy") if model is not None else None
    if s is None:   # (a model's own strategy is never the default one)
        s = distribute_lib.get_strategy_if_any()
    if s is None:
        s = strategy_of_weights(model) if model is not None and \
            hasattr(model, "weights") else None
    return s


def run_strategy(model):
    """The strategy ``fit``/``evaluate``/``predict`` run ``model`` under: the one it was
    compiled under (ValueError inside another's scope), else the current one, whose scope its
    variables must have been made in (as TF checks); None without a strategy."""
    own = model.__dict__.get("_distribution_strategy")
    current = distribute_lib.get_strategy() if distribute_lib.has_strategy() else None
    if own is not None:
        if current is not None and current is not own:
            raise ValueError(f"the model was compiled under {own!r} and is used in the scope "
                             f"of {current!r}; a model belongs to one strategy")
        return own
    if current is not None:
        check_variables_in_scope(current, model)
    return current


def num_replicas():
    """The number of replicas whose losses are combined (1 without a strategy)."""
    return distribute_lib.get_strategy().num_replicas_in_sync


def batch_rows():
    """``(n, lo, hi)``: the current replica's rows of the global batch the strategy split,
    else None."""
    return distribute_lib.replica_batch_rows()


def is_chief(model):
    """Whether this worker writes files and prints progress: the chief (worker 0) under a
    multi-worker strategy, always otherwise."""
    s = model_strategy(model)
    return s is None or s.extended.should_checkpoint


@contextlib.contextmanager
def chief_only(model):
    """``with chief_only(model) as writes:`` -- ``writes`` says whether this worker writes
    (the chief); the block runs as one that only some ranks run (no variable made in it is
    broadcast), so the chief's writes never wait for ranks that skip them."""
    s = model_strategy(model)
    if s is None or s.extended.num_workers == 1:
        yield True
        return
    # The ON_READ state the chief writes (BatchNormalization's moving statistics) is the
    # job's, as TF's checkpoint of a SyncOnReadVariable is: every worker joins one collective
    # here (only for models that have such state; every worker makes the call, as every
    # worker calls `model.save` under a multi-worker strategy)
    on_read = [v for v in getattr(model, "variables", ())
               if getattr(v, "synchronization", None) is VariableSynchronization.ON_READ]
    combine = s.extended.on_read_values(on_read) if on_read and \
        not distribute_lib.in_on_read_values() else contextlib.nullcontext()
    with combine, distribute_lib.local_only():
        yield s.extended.should_checkpoint


def chief_writes(model, what, write):
    """``model.save``/``save_weights``: ``write()`` runs on the chief only (its result is
    returned there, None elsewhere), and under a multi-worker strategy every worker returns
    only when the chief's write has ended, so that what it wrote can be read next on any worker
    (TF's multi-worker tutorial loads the chief's model right after every worker saved). Every
    worker makes the call, as TF requires; a write that failed on the chief raises there and
    a RuntimeError naming it on the others. Inside a block only the chief runs (a callback's
    write), the write just runs."""
    s = model_strategy(model)
    if s is None or s.extended.num_workers == 1 or distribute_lib.in_local_only_block():
        with chief_only(model) as writes:
            return write() if writes else None
    result = error = None
    with chief_only(model) as writes:
        if writes:
            try:
                result = write()
            except BaseException as e:   # noqa: BLE001 -- told to every worker, then raised
                error = e
    comm = s.extended.communicator
    failure = comm.broadcast_object(
        None if error is None else f"{type(error).__name__}: {error}", root=0)
    if error is not None:
        raise error
    if failure is not None:
        raise RuntimeError(f"{what}: the chief (worker 0) failed to write: {failure}")
    return result


def wait_for_chief(model):
    """Every worker waits here until the chief has finished what it wrote before (a backup):
    a worker that went on and failed would otherwise end the job in the middle of that write."""
    s = model_strategy(model)
    if s is not None and s.extended.num_workers > 1:
        s.extended.communicator.barrier()


def strategy_scope(strategy):
    """``strategy.scope()``, or nothing for None."""
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def install_gradient_aggregator(strategy, optimizer):
    """Give ``optimizer`` (the inner one of a ``LossScaleOptimizer``) the strategy's aggregator,
    unless it was given its own ``gradient_aggregator`` (TF 2.4 then calls the user's)."""
    strategy.extended.install_gradient_aggregator(optimizer)


def carry_metric_state(strategy, model):
    """Under a strategy of several workers, sum ``model``'s metric state (ON_READ) with each
    step's gradients, as a rider of its optimizer's aggregator: the step's logs then need no
    collective of their own. Nothing where the aggregator carries no riders."""
    opt = model.optimizer
    inner = getattr(opt, "inner_optimizer", None) or opt
    if inner is None or not hasattr(inner, "aggregator"):
        return
    parts, apply = strategy.extended.metric_state_rider(
        lambda: [v for m in model.metrics for v in m.variables])
    inner.aggregator.add_rider(parts, apply, name="metrics")


def check_variables_in_scope(strategy, model):
    """TF 2.4's check in ``compile``: every variable of ``model`` was made in ``strategy``'s
    scope (else it would not be mirrored: each worker would train its own initial weights)."""
    for v in model.weights:
        if not strategy.extended.variable_created_in_scope(v):
            raise ValueError(
                f"Variable ({v.name!r}, shape {tuple(v.shape)}) was not created in the "
                f"distribution strategy scope of ({strategy!r}). It is most likely due to not "
                f"all layers or the model or optimizer being created outside the distribution "
                f"strategy scope. Try to make sure your code looks similar to the following.\n"
                f"with strategy.scope():\n  model=_create_model()\n  model.compile(...)")


def strategy_of_weights(model):
    """The live strategy in whose scope ``model``'s first weight was made, or None."""
    weights = model.weights
    if not weights:
        return None
    for s in distribute_lib.live_strategies():
        if s.extended.variable_created_in_scope(weights[0]):
            return s
    return None


def run_train_step(model, strategy, step, batch, data, cbs=None, epoch=None, index=None):
    """``step(batch)`` through ``strategy.run`` (called directly without a strategy); under an
    elastic strategy (``tt.distribute.experimental.enable_elastic_training``) a worker lost
    during the step is survived: the survivors agree on the model, redo the step over
    themselves if its update was not applied, and go on (see ``distribute.elastic``)."""
    if strategy is None:
        return step(batch)
    if strategy.extended.elastic is None:
        return strategy.run(step, args=(batch,))
    from ..distribute import elastic
    from ..distribute.collective import CollectiveWorkerLostError
    while True:
        before = elastic.step_counter(model)
        try:
            return strategy.run(step, args=(batch,))
        except CollectiveWorkerLostError as error:
            after = elastic.step_counter(model)
            applied_here = before is not None and after is not None and after > before
            variables = list(model.variables)
            opt = getattr(model, "optimizer", None)
            if opt is not None and hasattr(opt, "variables"):
                variables += list(opt.variables())
            old, new, applied = elastic.recover(strategy, error, variables, applied_here)
            if cbs is not None:
                cbs.on_workers_changed({"old_workers": old, "new_workers": new,
                                        "lost": list(error.lost), "epoch": epoch,
                                        "step": index})
            if applied:
                # the update is in; only the step's logs were lost: the job's, read again
                return model._logs()
            batch = data.rebatch()

