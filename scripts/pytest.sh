#!/usr/bin/env bash
# Run the pytest suite on one build:
#   scripts/pytest.sh X.Y normal [pytest args...]   build/pyX.Y/lib
#   scripts/pytest.sh X.Y asan   [pytest args...]   build/pyX.Y-asan/lib, libasan preloaded
# PYTHONPATH is exactly the build's lib dir; tests/conftest.py refuses to run
# if `fastprof` would be imported from anywhere else. Any non-zero pytest exit
# fails, 5 (no tests collected) included.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
v=${1:?usage: pytest.sh X.Y normal|asan [pytest args]}
kind=${2:-normal}
shift 2 || shift $#
case $kind in
    normal) name=py$v ;;
    asan)   name=py$v-asan ;;
    *) echo "pytest.sh: kind must be normal or asan, not $kind" >&2; exit 2 ;;
esac
lib=$ROOT/build/$name/lib
[ -d "$lib/fastprof" ] || { echo "pytest.sh: $lib/fastprof missing; run: make build-$v" >&2; exit 1; }

export PYTHONPATH=$lib
export FASTPROF_BUILD_LIB=$lib
export FASTPROF_SANITIZED=0
timeout_per_test=${PYTEST_TIMEOUT:-300}
extra=()
if [ "$kind" = asan ]; then
    export FASTPROF_SANITIZED=1
    preload=$(gcc -print-file-name=libasan.so)
    ubsan=$(gcc -print-file-name=libubsan.so)
    [ -e "$preload" ] || { echo "pytest.sh: libasan not found (gcc -print-file-name=libasan.so)" >&2; exit 1; }
    [ -e "$ubsan" ] && preload="$preload $ubsan"
    export LD_PRELOAD="$preload${LD_PRELOAD:+ $LD_PRELOAD}"
    # Python itself leaks at exit: no leak check. Any report aborts the process.
    # pytest's default fd-level capture would swallow a report printed just
    # before an abort: capture at sys level only, so C-level stderr shows.
    extra=(--capture=sys)
    # ASan also writes its reports to files, from this process and from any
    # child (whose stderr a test may swallow): any file found fails the run.
    sanlog=$ROOT/build/reports/sanitizer-$name
    rm -rf "$sanlog"; mkdir -p "$sanlog"
    # Options already in the environment come last, so they can override.
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:log_path=$sanlog/asan:log_exe_name=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$sanlog/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    # Let ASan see every object allocation (pymalloc would hide use-after-free
    # of Python objects inside its arenas).
    export PYTHONMALLOC=malloc
    timeout_per_test=${PYTEST_TIMEOUT:-900}
    # issue 4: the concurrency stress runs 10 s per mode under the sanitizers
    export FASTPROF_STRESS_SECONDS=${FASTPROF_STRESS_SECONDS:-10}
fi
export PYTEST_TIMEOUT=$timeout_per_test     # read by pytest-timeout

mkdir -p build/reports
report=build/reports/pytest-$name.xml
rm -f "$report"

echo "=== pytest on $name (PYTHONPATH=$lib) ==="
# SIGABRT on overall timeout: pytest's faulthandler then dumps every thread's
# stack. --foreground keeps Ctrl-C working in a terminal.
timeout --foreground --signal=ABRT --kill-after=60 "${PYTEST_RUN_TIMEOUT:-2400}" \
    ".venv/py$v/bin/pytest" -p no:cacheprovider -ra --junitxml="$report" ${extra[@]+"${extra[@]}"} "$@" < /dev/null
rc=$?
if [ "$kind" = asan ] && [ -n "$(ls -A "$sanlog" 2>/dev/null)" ]; then
    for f in "$sanlog"/*; do
        echo "=== sanitizer report $f ==="
        cat "$f"
    done
    echo "=== pytest on $name: FAILED: sanitizer report(s) above (kept in $sanlog) ==="
    [ "$rc" = 0 ] && rc=1
    exit $rc
fi
case $rc in
    0) echo "=== pytest on $name: passed ===" ;;
    5) echo "=== pytest on $name: FAILED: no tests were collected (pytest exit 5) ===" ;;
    124|134) echo "=== pytest on $name: FAILED: exit $rc (time limit, or a sanitizer/abort: see the report above) ===" ;;
    *) echo "=== pytest on $name: FAILED (exit $rc) ===" ;;
esac
exit $rc
