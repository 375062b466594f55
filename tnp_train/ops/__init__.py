"""Fused kernels behind the layers: each op records one node on the tape (its backward is
written by hand), runs NumPy/Numba on the CPU and CuPy on the GPU."""
