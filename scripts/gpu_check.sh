#!/usr/bin/env bash
# make gpu-check: tnp's GPU tests, a GPU latency benchmark and the mixed-precision training
# benchmark (float32 vs mixed_float16 vs mixed_bfloat16, ResNet-style CNN), on a lent GPU machine.
#
# That machine has a Python with CuPy, NumPy and pytest but no network, so nothing is installed:
# the repository is put on PYTHONPATH and run with the python found there. Optional pytest
# plugins (pytest-xdist, pytest-timeout) and hypothesis are used only when importable.
# The whole script stays under 8 minutes (every step runs under `timeout`).
#
# Settings (environment):
#   PYTHON                       interpreter (default: python3, else python)
#   GPU_CHECK_PYTEST_TIMEOUT     seconds for the test step (default 200)
#   GPU_CHECK_BENCH_TIMEOUT      seconds for the benchmark step (default 110)
#   GPU_CHECK_MP_TIMEOUT         seconds for the mixed-precision benchmark step (default 120)
#   GPU_CHECK_DEVICE             tnp device for the benchmark (default gpu:0)
#   GPU_CHECK_DRY_RUN=1          on a machine without a GPU, run the steps on the CPU (TNP_BACKEND=
#                                numpy, device cpu:1) to check this script itself
#   OUT                          if set (the device tool sets it), logs and the JSON go there
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
PY="${PYTHON:-$(command -v python3 || command -v python)}"
PYTEST_TIMEOUT_S="${GPU_CHECK_PYTEST_TIMEOUT:-200}"
BENCH_TIMEOUT_S="${GPU_CHECK_BENCH_TIMEOUT:-110}"
MP_TIMEOUT_S="${GPU_CHECK_MP_TIMEOUT:-120}"
DEVICE="${GPU_CHECK_DEVICE:-gpu:0}"
BACKEND=cupy
OUTDIR="${OUT:-}"
failed=()
start=$SECONDS

have() { "$PY" -c "import $1" >/dev/null 2>&1; }

echo "== environment"
"$PY" - <<'EOF'
import platform, sys
from importlib import metadata
print(f"python {platform.python_version()} ({sys.executable})")
for name, dist in (("numpy", "numpy"), ("cupy", None), ("ml_dtypes", "ml_dtypes"), ("numba", "numba"),
                   ("pytest", "pytest"), ("xdist", "pytest-xdist"), ("pytest_timeout", "pytest-timeout"),
                   ("hypothesis", "hypothesis")):
    try:
        mod = __import__(name)
    except Exception as e:  # noqa: BLE001
        print(f"{name}: not importable ({type(e).__name__}: {e})")
        continue
    version = getattr(mod, "__version__", None)
    if version is None and dist:
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "?"
    print(f"{dist or name} {version}")
EOF
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L || echo "nvidia-smi -L failed"
else
    echo "nvidia-smi: not on PATH"
fi

if ! "$PY" -c "import cupy, sys; n = cupy.cuda.runtime.getDeviceCount(); print(f'CuPy sees {n} CUDA device(s)'); sys.exit(0 if n else 1)"; then
    if [ "${GPU_CHECK_DRY_RUN:-0}" = "1" ]; then
        echo "no usable GPU: dry run on the CPU (TNP_BACKEND=numpy, device cpu:1)"
        BACKEND=numpy
        DEVICE=cpu:1
    else
        echo "FAILED: CuPy cannot use a GPU here (set GPU_CHECK_DRY_RUN=1 to check the script on a CPU)"
        exit 1
    fi
fi
if ! "$PY" -c "import tnp" ; then
    echo "FAILED: tnp does not import with this python (PYTHONPATH=$PYTHONPATH)"
    exit 1
fi

echo
echo "== tests/gpu (TNP_BACKEND=$BACKEND, timeout ${PYTEST_TIMEOUT_S}s)"
if [ -d tests/gpu ]; then
    args=(-m pytest tests/gpu -q -m gpu -p no:cacheprovider -rfEs)
    if have pytest_timeout; then
        args+=(--timeout=120)
    else
        echo "(pytest-timeout missing: only the step's own timeout applies)"
    fi
    if ! have hypothesis; then
        # tests/conftest.py imports hypothesis for its profile; load only the conftests in tests/gpu
        echo "(hypothesis missing: tests/conftest.py is not loaded)"
        args+=(--confcutdir=tests/gpu)
    fi
    # pytest-xdist is not used: one GPU, and the tests are short
    TNP_BACKEND=$BACKEND timeout --signal=INT --kill-after=20 "$PYTEST_TIMEOUT_S" "$PY" "${args[@]}" \
        2>&1 | if [ -n "$OUTDIR" ]; then tee "$OUTDIR/gpu_pytest.log"; else cat; fi
    rc=${PIPESTATUS[0]}
    case $rc in
        0) echo "tests/gpu: passed" ;;
        5) echo "tests/gpu: no test marked gpu was collected" ;;
        124|130|137) echo "tests/gpu: TIMED OUT after ${PYTEST_TIMEOUT_S}s"; failed+=("pytest (timeout)") ;;
        *) echo "tests/gpu: FAILED (exit $rc)"; failed+=("pytest (exit $rc)") ;;
    esac
else
    echo "tests/gpu does not exist yet: skipped"
fi

echo
echo "== benchmark: numpy (CPU, 1 thread) vs tnp on $DEVICE (timeout ${BENCH_TIMEOUT_S}s)"
bench=(benchmarks/op_overhead.py --backends numpy,tnp --device "$DEVICE" --repeats 5 --target-ms 10)
if [ -n "$OUTDIR" ]; then
    bench+=(--json-out "$OUTDIR/op_overhead_gpu.json")
fi
TNP_BACKEND=$BACKEND timeout --signal=INT --kill-after=20 "$BENCH_TIMEOUT_S" "$PY" "${bench[@]}"
rc=$?
case $rc in
    0) echo "benchmark: done (results equal NumPy's)" ;;
    124|130|137) echo "benchmark: TIMED OUT after ${BENCH_TIMEOUT_S}s"; failed+=("benchmark (timeout)") ;;
    *) echo "benchmark: FAILED (exit $rc; a tnp result differing from NumPy's counts)"; failed+=("benchmark (exit $rc)") ;;
esac

echo
echo "== benchmark: mixed precision training step on $DEVICE (timeout ${MP_TIMEOUT_S}s)"
mp=(benchmarks/mixed_precision.py --device "$DEVICE" --repeats 3 --iters 2 --warmup 2)
if [ "$BACKEND" = numpy ]; then
    mp+=(--quick)   # dry run on the CPU: a small ResNet, to check the script only
fi
if [ -n "$OUTDIR" ]; then
    mp+=(--json-out "$OUTDIR/mixed_precision_gpu.json")
fi
TNP_BACKEND=$BACKEND timeout --signal=INT --kill-after=20 "$MP_TIMEOUT_S" "$PY" "${mp[@]}"
rc=$?
case $rc in
    0) echo "mixed-precision benchmark: done" ;;
    124|130|137) echo "mixed-precision benchmark: TIMED OUT after ${MP_TIMEOUT_S}s"; failed+=("mixed-precision benchmark (timeout)") ;;
    *) echo "mixed-precision benchmark: FAILED (exit $rc; a non-finite loss counts)"; failed+=("mixed-precision benchmark (exit $rc)") ;;
esac

echo
echo "== gpu-check finished in $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "OK"
