# make test: create .venv, install the project with its test extras, run the test suite.
# make demo: create .venv, install the project with its example extras, run the main job
#            (examples/digits_cnn.py: a CNN on scikit-learn's 8x8 digits, to >= 97% test accuracy).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: test demo demo-numpy venv bench bench-train gpu-check clean

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

# training speed with the reference harness (../shared/bench, beside the checkout)
BENCH_DIR ?= ../shared/bench
bench-train: $(STAMP)
	$(PIP) install --quiet -e ".[bench]"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=$(BENCH_DIR) $(PY) $(BENCH_DIR)/train_mlp.py --threads 1 --rounds 11 --chunk-s 0.5 --impls numpy-manual,torch,plugin:tnp_plugins:mlp_tape,plugin:tnp_plugins:mlp_fit
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=$(BENCH_DIR) $(PY) $(BENCH_DIR)/train_cnn.py --threads 1 --rounds 7 --chunk-s 1 --impls numpy-im2col,torch,torch-cl,plugin:tnp_plugins:cnn_tape,plugin:tnp_plugins:cnn_fit

# On the lent GPU machine: nothing can be installed there, so use its python directly.
gpu-check:
	bash scripts/gpu_check.sh

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
