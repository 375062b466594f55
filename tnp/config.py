"""Run-time settings of tnp (``tnp.config``).

TensorFloat-32 is off by default: a drop-in for NumPy owes NumPy's float32 numbers. Mixed-
precision policies (``tnp_train.mixed_precision``) turn it on for their float32 parts on a GPU.
"""
from __future__ import annotations

_state = {"tf32": False}


def tensor_float_32_execution_enabled():
    """Whether float32 matmul/convolution may use TensorFloat-32 on a GPU."""
    return _state["tf32"]


def enable_tensor_float_32_execution(enabled):
    """Allow (or forbid) TensorFloat-32 for float32 matmul on Ampere-or-newer GPUs.

    Mirrors ``tf.config.experimental.enable_tensor_float_32_execution``; on the CPU it changes
    nothing. On a GPU it sets CuPy's cuBLAS compute type for float32.
    """
    _state["tf32"] = bool(enabled)
    from ._core.backend import cupy_backend

    b = cupy_backend()
    if b is not None:
        _apply_cupy(b.xp, _state["tf32"])


def _apply_cupy(cupy, enabled):
    core = cupy._core
    try:
        core.set_compute_type(core.COMPUTE_TYPE_TF32 if enabled else core.COMPUTE_TYPE_DEFAULT)
    except AttributeError:  # older CuPy: the routine lives in _routines_linalg
        from cupy._core import _routines_linalg as rl

        rl.set_compute_type(rl.COMPUTE_TYPE_TF32 if enabled else rl.COMPUTE_TYPE_DEFAULT)
