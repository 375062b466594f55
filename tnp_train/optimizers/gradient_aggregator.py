"""``GradientAggregator``: the protocol between an optimizer and whatever combines its gradients
(a distribution strategy's all-reduce, a user's aggregator).

An optimizer's ``gradient_aggregator`` may be any callable on ``(gradient, variable)`` pairs, as
in TF 2.4. A :class:`GradientAggregator` is one that can also take each gradient the moment the
backward pass makes it final, offer where that gradient should be written, forget a step whose
backward pass failed, and carry small riders (a model's metric state) with the gradients. The
optimizer calls these methods directly: what it asks is decided once per aggregator, from its
class (:func:`as_gradient_aggregator` adapts a plain callable), never probed per step. The
calls, in a step of ``minimize`` (and so of ``fit``):

1. ``gradient_destination(variable)`` just before the operation computing that gradient runs
   (only if the class overrides it): an array to write the gradient into, or None;
2. ``gradient_ready(variable, gradient)`` as each gradient becomes final, last layer first;
3. ``abandon()`` if the backward pass fails, instead of 4;
4. ``reduce(pairs)`` from ``apply_gradients`` with every pair: the combined pairs.

``sharded_update`` lets an aggregator apply the update itself (each rank its part of state
the ranks share, ``tnp_train.distribute.sharded_update``, or each bucket's variables as its
sums arrive); by default it declines.

See docs/seams.md, "Gradients as they become final".
"""
from __future__ import annotations

__all__ = ["GradientAggregator", "as_gradient_aggregator"]


class GradientAggregator:
    """Base class of the aggregators that see gradients as they become final (no TF analogue;
    TF 2.4's ``gradient_aggregator`` is a function of the pairs, which :meth:`reduce` is).

    A subclass implements :meth:`reduce` and overrides what it uses of the rest; an instance
    is still a callable on the pairs, so it can be passed as ``gradient_aggregator=``.
    Class attributes, set from what a subclass overrides, tell the optimizer what to ask:
    ``streams`` (hand each gradient over during the backward pass: ``gradient_ready`` or
    ``abandon`` is overridden), ``offers_destination`` (``gradient_destination`` is) and
    ``updates_sharded`` (``sharded_update`` is). ``copies_handed_over`` (False unless a
    subclass sets it) says that :meth:`gradient_ready` copies what it is handed and keeps no
    reference to it: a compiled step (``fit``'s) may then hand over arrays whose buffers it
    reuses later in the same call; an aggregator that streams without it keeps ``fit``'s step
    eager."""

    streams = False
    offers_destination = False
    updates_sharded = False
    copies_handed_over = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # decided once per class, so a step asks nothing it does not need
        if "streams" not in cls.__dict__:
            cls.streams = (cls.gradient_ready is not GradientAggregator.gradient_ready
                           or cls.abandon is not GradientAggregator.abandon)
        if "offers_destination" not in cls.__dict__:
            cls.offers_destination = (cls.gradient_destination is not
                                      GradientAggregator.gradient_destination)
        if "updates_sharded" not in cls.__dict__:
            cls.updates_sharded = cls.sharded_update is not GradientAggregator.sharded_update

    def gradient_ready(self, variable, gradient):
        """Take ``variable``'s final ``gradient`` (a tnp array, or None for an unconnected
        source) during the backward pass; the same gradient comes again in :meth:`reduce`."""

    def gradient_destination(self, variable):
        """An array shaped and typed like ``variable`` (a backend array, this step only) where
        the backward pass may write its gradient, or None. The tape asks only for a source
        that one recorded operation reads; :meth:`gradient_ready` then gets that array."""
        return None

    def reduce(self, pairs):
        """The ``(gradient, variable)`` pairs combined (a list); ``apply_gradients`` calls it
        once per step with every pair, after the backward pass handed them over."""
        raise NotImplementedError(f"{type(self).__name__} must implement reduce")

    def abandon(self):
        """The backward pass that was handing gradients over failed: forget this step, so the
        next one starts afresh."""

    def sharded_update(self, pairs, optimizer):
        """None (``optimizer`` reduces and updates as usual), or ``apply(learning_rate)``: a
        callable that reduces ``pairs`` and applies ``optimizer``'s update itself (asked only
        when ``optimizer.is_elementwise``)."""
        return None

    def add_rider(self, parts_fn, apply_fn, name="rider"):
        """Carry small state with every step's gradients: ``parts_fn()`` gives this worker's
        arrays (a list of backend arrays, or None for none this step) when the gradients are
        handed over, and ``apply_fn(sums)`` receives them combined the same way, once the step's
        reduction ended. A rider of the same ``name`` replaces the one before. Returns whether
        the rider is carried (False: the caller must combine that state its own way)."""
        return False

    def __call__(self, pairs):
        return self.reduce(pairs)


class _CallableAggregator(GradientAggregator):
    """A plain function of the pairs (TF 2.4's ``gradient_aggregator``, the default
    ``Optimizer.aggregate_gradients``): nothing is handed over during the backward pass."""

    streams = False
    offers_destination = False

    def __init__(self, fn):
        self.fn = fn

    def reduce(self, pairs):
        return self.fn(pairs)


class _DuckAggregator(GradientAggregator):
    """An object that is not a :class:`GradientAggregator` but has its methods by name
    (``gradient_ready``, maybe ``gradient_destination`` and ``abandon_step``), as the
    aggregators written before this class: they are looked up on it at each call, so an
    instance attribute set later is used."""

    streams = True

    def __init__(self, obj):
        self.obj = obj
        self.offers_destination = hasattr(obj, "gradient_destination")

    def gradient_ready(self, variable, gradient):
        self.obj.gradient_ready(variable, gradient)

    def gradient_destination(self, variable):
        return self.obj.gradient_destination(variable)

    def reduce(self, pairs):
        return self.obj(pairs)

    def abandon(self):
        abandon = getattr(self.obj, "abandon_step", None)
        if abandon is not None:
            abandon()


def as_gradient_aggregator(agg):
    """``agg`` (a :class:`GradientAggregator`, or any callable on the pairs) as a
    :class:`GradientAggregator`: itself, or an adapter calling it."""
    if isinstance(agg, GradientAggregator):
        return agg
    if hasattr(agg, "gradient_ready"):
        return _DuckAggregator(agg)
    return _CallableAggregator(agg)
