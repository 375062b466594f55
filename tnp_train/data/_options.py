"""``tt.data.Options`` (``tf.data.Options`` of TF 2.4): settings attached to a dataset with
``ds.with_options(options)`` and read back with ``ds.options()``.

A dataset's options are those of its inputs merged with any ``with_options`` applied along the
chain, so they travel through every transformation (and through ``zip``/``concatenate``, which
merge both sides). Merging follows TF 2.4: an option left at its default takes the other side's
value; two different non-default values are an error (ValueError), not "last one wins".

What tnp_train reads: ``experimental_distribute.auto_shard_policy`` (how a strategy shards the
dataset across workers). ``experimental_deterministic``, ``experimental_optimization``,
``experimental_slack`` and ``experimental_threading`` are accepted and kept as TF's performance hints, without effect here
(``map`` with ``num_parallel_calls`` keeps the input order whatever they say).
"""
from __future__ import annotations

import copy
import enum

__all__ = ["Options", "DistributeOptions", "ThreadingOptions", "OptimizationOptions",
           "MapVectorizationOptions", "AutoShardPolicy", "merge_options"]


class AutoShardPolicy(enum.IntEnum):
    """Mirrors ``tf.data.experimental.AutoShardPolicy`` (TF 2.4): ``OFF`` (every worker reads
    everything), ``AUTO`` (by files when the pipeline reads files, else by data), ``FILE`` (each
    worker reads every N-th file: an error if there are fewer files than workers), ``DATA``
    (each worker keeps every N-th element)."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2


def _option(name, types, default_factory, doc):
    """A typed option, as TF's ``options.create_option``: reading an unset option gives its
    default; setting a value of another type is a TypeError."""
    def get(self):
        values = self._values
        if name not in values:
            values[name] = default_factory()
        return values[name]

    def set_(self, value):
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                            (types if isinstance(types, tuple) else (types,))):
            names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple)
                                                     else (types,)))
            raise TypeError(f'{type(self).__name__}: option "{name}" must be of type {names}, '
                            f"got {value!r} (type {type(value).__name__})")
        self._values[name] = value

    return property(get, set_, None, doc)


class _OptionsBase:
    """Options objects: attribute access only to the declared options (AttributeError
    otherwise, as TF), equality by value, and TF 2.4's merge rule."""

    def __init__(self):
        object.__setattr__(self, "_values", {})

    @classmethod
    def _option_names(cls):
        return [n for n in dir(cls) if isinstance(getattr(cls, n, None), property)]

    def __setattr__(self, name, value):
        if not isinstance(getattr(type(self), name, None), property):
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        if not isinstance(other, type(self)):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._option_names())

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __deepcopy__(self, memo):
        new = type(self)()
        for k, v in self._values.items():
            new._values[k] = copy.deepcopy(v, memo)
        return new

    def __repr__(self):
        fresh = type(self)()
        items = [f"{n}={getattr(self, n)!r}" for n in self._option_names()
                 if getattr(self, n) != getattr(fresh, n)]
        return f"{type(self).__name__}({', '.join(items)})"

    def merge(self, options):
        """A new options object: this one merged with ``options`` (see :func:`merge_options`)."""
        return merge_options(self, options)


def merge_options(*options_list):
    """TF 2.4's ``merge_options``: a new object where each option has the value some input set
    (non-default); nested options merge recursively; two inputs with different non-default
    values raise ValueError; inputs of another type raise TypeError."""
    if not options_list:
        raise ValueError("merge_options: at least one options object is required")
    kind = type(options_list[0])
    if not issubclass(kind, _OptionsBase):
        raise TypeError("merge_options: expected tt.data options objects, got "
                        f"{kind.__name__}")
    for o in options_list[1:]:
        if type(o) is not kind:
            raise TypeError(f"merge_options: cannot merge a {type(o).__name__} into a "
                            f"{kind.__name__}")
    result = kind()
    default = kind()
    for options in options_list:
        for name in kind._option_names():
            that = getattr(options, name)
            if that == getattr(default, name):
                continue
            this = getattr(result, name)
            if this == getattr(default, name):
                setattr(result, name, copy.deepcopy(that))
            elif isinstance(this, _OptionsBase):
                setattr(result, name, merge_options(this, that))
            elif this != that:
                raise ValueError(f"Cannot merge incompatible values ({this!r} and {that!r}) of "
                                 f"option: {name}")
    return result


class DistributeOptions(_OptionsBase):
    """Mirrors ``tf.data.experimental.DistributeOptions``: ``auto_shard_policy`` (default
    ``AutoShardPolicy.AUTO``) and ``num_devices`` (set by the strategy)."""

    auto_shard_policy = _option(
        "auto_shard_policy", AutoShardPolicy, lambda: AutoShardPolicy.AUTO,
        "How a strategy shards the dataset across workers (an AutoShardPolicy).")
    num_devices = _option(
        "num_devices", int, lambda: None,
        "The number of devices attached to this input pipeline.")


class ThreadingOptions(_OptionsBase):
    """Mirrors ``tf.data.experimental.ThreadingOptions`` (kept, without effect here)."""

    max_intra_op_parallelism = _option(
        "max_intra_op_parallelism", int, lambda: None,
        "The maximum degree of intra-op parallelism (a hint).")
    private_threadpool_size = _option(
        "private_threadpool_size", int, lambda: None,
        "The size of a private thread pool (a hint).")


class MapVectorizationOptions(_OptionsBase):
    """Mirrors ``tf.data.experimental.MapVectorizationOptions`` (TF 2.4; kept, without
    effect here: ``map`` runs the Python function element by element)."""

    enabled = _option("enabled", bool, lambda: None,
                      "Whether to vectorize map transformations (a hint).")
    use_choose_fastest = _option(
        "use_choose_fastest", bool, lambda: None,
        "Whether to pick the faster of the vectorized and plain map (a hint).")


def _hint(name, doc, kind=bool):
    return _option(name, kind, lambda: None, doc + " (a hint, without effect here)")


class OptimizationOptions(_OptionsBase):
    """Mirrors ``tf.data.experimental.OptimizationOptions`` (TF 2.4): which of TF's graph
    rewrites of a pipeline to apply. They are performance hints: a pipeline here is not a
    graph and runs as written, so they are kept (and merged) without effect; every option
    defaults to None (TF's default), a value of another type is a TypeError."""

    apply_default_optimizations = _hint(
        "apply_default_optimizations", "Whether to apply the default static optimizations")
    autotune = _hint("autotune", "Whether to tune performance knobs automatically")
    autotune_buffers = _hint("autotune_buffers", "Whether to tune buffer sizes automatically")
    autotune_cpu_budget = _hint("autotune_cpu_budget", "The CPU budget of autotuning", int)
    autotune_ram_budget = _hint("autotune_ram_budget", "The RAM budget of autotuning", int)
    filter_fusion = _hint("filter_fusion", "Whether to fuse filter transformations")
    filter_with_random_uniform_fusion = _hint(
        "filter_with_random_uniform_fusion", "Whether to fuse a filter by a random draw")
    hoist_random_uniform = _hint("hoist_random_uniform",
                                 "Whether to hoist random draws out of map functions")
    map_and_batch_fusion = _hint("map_and_batch_fusion", "Whether to fuse map and batch")
    map_and_filter_fusion = _hint("map_and_filter_fusion", "Whether to fuse map and filter")
    map_fusion = _hint("map_fusion", "Whether to fuse map transformations")
    map_parallelization = _hint("map_parallelization", "Whether to parallelize map functions")
    map_vectorization = _option(
        "map_vectorization", MapVectorizationOptions, MapVectorizationOptions,
        "The map vectorization options (a MapVectorizationOptions, without effect here).")
    noop_elimination = _hint("noop_elimination", "Whether to remove no-op transformations")
    parallel_batch = _hint("parallel_batch", "Whether to batch in parallel")
    reorder_data_discarding_ops = _hint(
        "reorder_data_discarding_ops", "Whether to move shard/skip/take before map")
    shuffle_and_repeat_fusion = _hint("shuffle_and_repeat_fusion",
                                      "Whether to fuse shuffle and repeat")


class Options(_OptionsBase):
    """Mirrors ``tf.data.Options`` (TF 2.4) with the options tnp_train keeps:
    ``experimental_distribute`` (a DistributeOptions), ``experimental_deterministic``,
    ``experimental_optimization`` (an OptimizationOptions, kept without effect),
    ``experimental_slack`` and ``experimental_threading``; TF's ``experimental_stats`` and
    ``experimental_external_state_policy`` do not exist here and raise AttributeError when
    set."""

    experimental_deterministic = _option(
        "experimental_deterministic", bool, lambda: None,
        "Whether elements must come in a deterministic order (None: yes); always true here.")
    experimental_distribute = _option(
        "experimental_distribute", DistributeOptions, DistributeOptions,
        "How a strategy distributes the dataset (a DistributeOptions).")
    experimental_optimization = _option(
        "experimental_optimization", OptimizationOptions, OptimizationOptions,
        "TF's graph rewrites of the pipeline (an OptimizationOptions, without effect here).")
    experimental_slack = _option(
        "experimental_slack", bool, lambda: False,
        "Whether to add slack to the final prefetch (a hint without effect here).")
    experimental_threading = _option(
        "experimental_threading", ThreadingOptions, ThreadingOptions,
        "Threading hints (a ThreadingOptions, without effect here).")
