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
    """Set CuPy's float32 matmul compute type; a CuPy without the knob keeps full float32."""
    import warnings

    for mod_name in ("cupy._core", "cupy._core._routines_linalg"):
        try:
            mod = __import__(mod_name, fromlist=["set_compute_type"])
            mod.set_compute_type(mod.COMPUTE_TYPE_TF32 if enabled else mod.COMPUTE_TYPE_DEFAULT)
            return True
        except (ImportError, AttributeError):
            continue
        except Exception as e:  # a CUDA error must not make the GPU unusable
            warnings.warn(f"could not set TensorFloat-32 mode in CuPy: {e}", RuntimeWarning)
            return False
    if enabled:
        warnings.warn("this CuPy has no compute-type setting; float32 matmul stays full precision",
                      RuntimeWarning)
    return False
