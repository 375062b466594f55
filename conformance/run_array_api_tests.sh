#!/usr/bin/env bash
# Run the array API conformance suite (data-apis/array-api-tests) against tnp.
#
#   conformance/run_array_api_tests.sh [SUITE_SOURCE [SPEC_SOURCE]] [-- PYTEST_ARGS...]
#
# The suite is a local checkout in conformance/array-api-tests/ (git-ignored, never committed)
# at the pinned commit below. When it is missing it is cloned from SUITE_SOURCE (a path or URL
# of a data-apis/array-api-tests git repository; default: GitHub), and its `array-api` submodule
# (the spec and signature stubs the suite reads) from SPEC_SOURCE (default: the URL in the suite's
# .gitmodules). The suite's requirements are installed into the project's .venv if missing.
#
# Environment:
#   ARRAY_API_TESTS_MODULE   namespace under test (default tnp; `numpy` gives NumPy's own count)
#   ARRAY_API_TESTS_VERSION  standard version (default 2025.12)
#   MAX_EXAMPLES             hypothesis examples per test (default 20)
#   WORKERS                  pytest-xdist workers (default 2)
#   XFAILS                   xfails file (default conformance/xfails.txt for tnp, none otherwise)
#   PYTHON                   interpreter (default .venv/bin/python)
set -euo pipefail

SUITE_COMMIT=55fcc60179efa2680ddd6cd926ddf17b83530e2b  # data-apis/array-api-tests, 2026-04-03
SPEC_COMMIT=5f847a3858875c682ae901aa22b0413bf24be9da   # data-apis/array-api, the suite's submodule pin

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SUITE_DIR=$HERE/array-api-tests
PY=${PYTHON:-$ROOT/.venv/bin/python}
MODULE=${ARRAY_API_TESTS_MODULE:-tnp}
VERSION=${ARRAY_API_TESTS_VERSION:-2025.12}
MAX_EXAMPLES=${MAX_EXAMPLES:-20}
WORKERS=${WORKERS:-2}
if [[ -z "${XFAILS+x}" ]]; then
    if [[ $MODULE == tnp ]]; then XFAILS=$HERE/xfails.txt; else XFAILS=; fi
fi

SUITE_SOURCE=https://github.com/data-apis/array-api-tests
SPEC_SOURCE=
if [[ $# -gt 0 && $1 != -- ]]; then SUITE_SOURCE=$1; shift; fi
if [[ $# -gt 0 && $1 != -- ]]; then SPEC_SOURCE=$1; shift; fi
if [[ $# -gt 0 && $1 == -- ]]; then shift; fi

[[ -x $PY ]] || { echo "no Python at $PY (run 'make venv' first, or set PYTHON)" >&2; exit 2; }

# ---- 1. the suite at the pinned commit --------------------------------------------------------
if [[ ! -e $SUITE_DIR/.git ]]; then
    echo ">> cloning array-api-tests from $SUITE_SOURCE"
    git clone --quiet "$SUITE_SOURCE" "$SUITE_DIR"
fi
if [[ $(git -C "$SUITE_DIR" rev-parse HEAD) != "$SUITE_COMMIT" ]]; then
    if ! git -C "$SUITE_DIR" cat-file -e "$SUITE_COMMIT^{commit}" 2>/dev/null; then
        git -C "$SUITE_DIR" fetch --quiet origin || true
    fi
    git -C "$SUITE_DIR" -c advice.detachedHead=false checkout --quiet "$SUITE_COMMIT" || {
        echo "the checkout in $SUITE_DIR lacks commit $SUITE_COMMIT; remove it and rerun" >&2
        exit 2
    }
fi

# ---- 2. its array-api submodule (spec text and signature stubs) ----------------------------------
if [[ ! -d $SUITE_DIR/array-api/spec/$VERSION ]]; then
    echo ">> fetching the array-api spec submodule"
    git -C "$SUITE_DIR" submodule --quiet init
    if [[ -n $SPEC_SOURCE ]]; then
        git -C "$SUITE_DIR" config "submodule.array_api_tests/array-api.url" "$SPEC_SOURCE"
    fi
    git -C "$SUITE_DIR" -c protocol.file.allow=always submodule --quiet update
fi
have_spec=$(git -C "$SUITE_DIR/array-api" rev-parse HEAD)
[[ $have_spec == "$SPEC_COMMIT" ]] || echo "warning: array-api submodule at $have_spec, expected $SPEC_COMMIT" >&2

# ---- 3. the suite's requirements in the project's venv ------------------------------------------
if ! "$PY" - <<'EOF' 2>/dev/null
import importlib.metadata as m, ndindex, pytest_jsonreport, xdist  # noqa: F401
v = tuple(int(p) for p in m.version("hypothesis").split(".")[:2])
assert v >= (6, 151)
EOF
then
    echo ">> installing the suite's requirements into $(dirname "$(dirname "$PY")")"
    "$PY" -m pip install --quiet -r "$SUITE_DIR/requirements.txt" pytest-xdist
fi

# ---- 4. run -------------------------------------------------------------------------------------
LOG=$(mktemp "${TMPDIR:-/tmp}/array-api-tests.XXXXXX.log")
args=(array_api_tests/ --max-examples="$MAX_EXAMPLES" --hypothesis-disable-deadline --derandomize
      -n "$WORKERS" -p no:cacheprovider -q -rfE --rootdir="$SUITE_DIR")
[[ -n $XFAILS ]] && args+=(--xfails-file "$XFAILS")
echo ">> ARRAY_API_TESTS_MODULE=$MODULE ARRAY_API_TESTS_VERSION=$VERSION pytest ${args[*]} $*"
set +e
(cd "$SUITE_DIR" && ARRAY_API_TESTS_MODULE=$MODULE ARRAY_API_TESTS_VERSION=$VERSION \
    "$PY" -m pytest "${args[@]}" "$@") 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
set -e

summary=$(grep -E '^=* ?[0-9]+ (passed|failed)' "$LOG" | tail -1 || true)
count() { grep -oE "[0-9]+ $1" <<<"$summary" | grep -oE '^[0-9]+' || echo 0; }
echo
echo "array-api-tests @ ${SUITE_COMMIT:0:12} (spec $VERSION), module $MODULE, max-examples $MAX_EXAMPLES"
printf '  passed %s  failed %s  xfailed %s  xpassed %s  skipped %s  errors %s\n' \
    "$(count passed)" "$(count failed)" "$(count xfailed)" "$(count xpassed)" "$(count skipped)" \
    "$(count error)"
echo "  log: $LOG"
exit "$rc"
