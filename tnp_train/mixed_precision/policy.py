"""``Policy``: the dtype a layer computes in and the dtype its variables are kept in.

Lives below the layers (a layer holds a policy). Mirrors ``tf.keras.mixed_precision.Policy``:
``"float32"``, ``"float64"``, ``"float16"``, ``"bfloat16"``, ``"mixed_float16"``,
``"mixed_bfloat16"`` (compute in 16 bits, variables in float32).

TensorFloat-32: while a mixed policy is the *global* policy, ``tnp.config``'s TensorFloat-32
switch is on (the float32 matmuls and convolutions of a mixed model may use TF32 tensor cores on
an Ampere-or-newer GPU; on the CPU the switch changes nothing). Setting a non-mixed global policy
again restores the setting that was in force before the mixed one was set. A layer given
``dtype="mixed_float16"`` under a float32 global policy does not touch the switch.
"""
from __future__ import annotations

import threading

import numpy as _np

from tnp import config as _tnp_config

from ..backend import config as _backend_config

__all__ = ["Policy", "set_global_policy", "global_policy", "get_policy"]

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_PLAIN = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool", "uint8")


def _bf16():
    import tnp
    return tnp.bfloat16


class Policy:
    """A dtype policy; ``compute_dtype`` and ``variable_dtype`` are dtype names."""

    def __init__(self, name):
        if isinstance(name, Policy):
            name = name.name
        if not isinstance(name, str):
            try:
                name = _np.dtype(name).name
            except TypeError:
                raise TypeError(f"Policy: expected a policy name or dtype, got {name!r}") from None
        if name in _MIXED:
            self._compute, self._variable = _MIXED[name], "float32"
        elif name in _PLAIN:
            self._compute = self._variable = name
        else:
            raise ValueError(f"Cannot convert value {name!r} to a mixed precision Policy. Valid "
                             f"policies include 'mixed_float16', 'mixed_bfloat16', and the name of "
                             f"any dtype such as 'float32'.")
        self._name = name
        # the compute dtype as a NumPy dtype object, compared on every layer call
        self._compute_np = _np.dtype(_bf16() if self._compute == "bfloat16" else self._compute)

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        return self._compute

    @property
    def compute_np_dtype(self):
        """``compute_dtype`` as a NumPy dtype object (``tnp.bfloat16``'s for bfloat16), what a
        layer compares its inputs' dtypes with."""
        return self._compute_np

    @property
    def variable_dtype(self):
        return self._variable

    @property
    def is_mixed(self):
        return self._compute != self._variable

    def __eq__(self, other):
        return isinstance(other, Policy) and other._name == self._name

    def __hash__(self):
        return hash(("Policy", self._name))

    def __repr__(self):
        return f'<Policy "{self._name}">'

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "loss_scale" in config:
            # TF 2.4's experimental PolicyV1 (its loss scale may be a serialized LossScale)
            from .policy_v1 import Policy as PolicyV1    # it subclasses this module's Policy
            ls = config.pop("loss_scale")
            if isinstance(ls, dict):
                kind, inner = ls.get("class_name"), ls.get("config", {})
                ls = "dynamic" if kind == "DynamicLossScale" else \
                    inner.get("loss_scale_value") if kind == "FixedLossScale" else ls
            return PolicyV1(config.pop("name"), loss_scale=ls)
        return cls(**config)


_global = {"policy": None, "tf32_before": None}
_global_lock = threading.Lock()


def global_policy():
    """The policy layers get when created without ``dtype=`` (``float32`` unless set)."""
    p = _global["policy"]
    return p if p is not None else Policy("float32")


def set_global_policy(policy):
    """Set the global policy (a name, a dtype, a ``Policy``, or None for ``float32``); mirrors
    ``tf.keras.mixed_precision.set_global_policy``. A mixed policy turns TensorFloat-32 on
    while it is global (see the module docstring)."""
    p = None if policy is None else (policy if isinstance(policy, Policy) else Policy(policy))
    if p is not None and p.compute_dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"set_global_policy: the global policy must be floating, got {p.name!r}")
    with _global_lock:
        old = _global["policy"]
        was_mixed = old is not None and old.is_mixed
        now_mixed = p is not None and p.is_mixed
        if now_mixed and not was_mixed:
            _global["tf32_before"] = _tnp_config.tensor_float_32_execution_enabled()
            _tnp_config.enable_tensor_float_32_execution(True)
        elif was_mixed and not now_mixed:
            before = _global["tf32_before"]
            _global["tf32_before"] = None
            _tnp_config.enable_tensor_float_32_execution(bool(before))
        _global["policy"] = p


# set_floatx makes its dtype the global policy, as in TF 2.4 (whose default policy is floatx);
# one made before this module was first imported is applied now
_backend_config.follow_floatx(set_global_policy)
if _backend_config.floatx() != "float32":
    set_global_policy(_backend_config.floatx())


def get_policy(dtype):
    """The policy for a layer's ``dtype=`` argument (None: the global policy)."""
    if dtype is None:
        return global_policy()
    if isinstance(dtype, Policy):
        return dtype
    if isinstance(dtype, dict) and "config" in dtype:   # a serialized policy
        return Policy(dtype["config"]["name"])
    return Policy(dtype)
