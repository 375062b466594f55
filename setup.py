"""The one thing pyproject.toml cannot say without setuptools' experimental table: the C base of
tnp.ndarray (fast x[key], x.T, x.reshape, and the Python-level protocols: scalar indexing and
arithmetic, iteration, len, item assignment). It is optional: without a C compiler the install
goes on and tnp runs the same methods in pure Python."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tnp._core._speedups", ["tnp/_core/_speedups.c"], optional=True)])
