# make test: create .venv, install the project with its test extras, run the test suite.
# make demo: create .venv, install the project with its example extras, run the main job
#            (examples/digits_cnn.py: a CNN on scikit-learn's 8x8 digits, to >= 97% test accuracy).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: test demo demo-numpy venv bench gpu-check clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e ".[test,examples]"
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n 2 --timeout=300 -q

demo: $(STAMP)
	$(PY) examples/digits_cnn.py

# the tnp demo: a NumPy program (k-means, least squares, FFT) that prints the same on tnp
demo-numpy: $(STAMP)
	$(PY) examples/demo.py

bench: $(STAMP)
	$(PIP) install --quiet -e ".[bench]"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) benchmarks/op_overhead.py --threads 1 --backends numpy,tnp,torch

# On the lent GPU machine: nothing can be installed there, so use its python directly.
gpu-check:
	bash scripts/gpu_check.sh

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
