# make test: create .venv, install the project with its test extras (MPI included), run the
#            test suite.
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

# tests/distributed runs mpiexec jobs of up to 4 ranks: serially, in a pytest run of its own
# (xdist's --dist loadgroup cannot group tests under pytest 9), after the rest on 2 workers.
# Both runs always run; the target fails if either does.
test: $(STAMP)
	$(PY) -m pytest -n 2 --timeout=300 -q --ignore=tests/distributed; rest=$$?; \
	$(PY) -m pytest -n 0 --timeout=300 -q tests/distributed; dist=$$?; \
	test $$rest -eq 0 && test $$dist -eq 0

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

# the digits CNN on 2 MPI ranks (examples/digits_multiworker.py) through the venv's mpiexec (the
# Open MPI wheel's). The env vars: Open MPI refuses root without the first two; 2 ranks on few
# cores need --oversubscribe and yield_when_idle, and one BLAS thread per rank.
.PHONY: demo-distributed
demo-distributed: $(STAMP)
	$(PIP) install --quiet -e ".[mpi]"
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
	$(VENV)/bin/mpiexec --oversubscribe -n 2 $(PY) examples/digits_multiworker.py
