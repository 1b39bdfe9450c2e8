#!/usr/bin/env bash
# The full benchmark, every supported CPython, one command (what `make bench` runs):
#   1. scratch venvs with yappi, pyinstrument, line_profiler, py-spy (+ matplotlib for the driver) -> make_venvs.sh
#   2. build fastprof for each interpreter (`make build-X.Y` -> build/pyX.Y/lib)
#   3. run.py timing --all-versions: 5 interleaved repeats, tables on stdout,
#      summaries to benchmarks/results/overhead.json.gz, plot to docs/benchmark.png
#   4. with BENCH_ACCURACY=1, also run.py accuracy on the same interpreters:
#      summaries to benchmarks/results/accuracy.json.gz (hours more; py-spy needs ptrace rights)
# Timing takes an hour or more on the 2-core reference machine (builds excluded; every mode, full
# sizes).  Extra arguments go to run.py timing (e.g. --repeats 3, --metric cpu, --workloads fib,regex).
#   BENCH_VENVS    where the venvs live  (default /tmp/fastprof-bench-venvs)
#   BENCH_JSON     timing summaries      (default benchmarks/results/overhead.json.gz)
#   BENCH_RAW      timing raw data       (default: not kept)
#   BENCH_PLOT     plot file             (default docs/benchmark.png)
#   BENCH_ACCURACY 1: run the accuracy mode too
#   BENCH_ACCURACY_JSON  accuracy summaries (default benchmarks/results/accuracy.json.gz)
#   BENCH_PYTHONS  versions              (default 3.9 ... 3.15)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
VENVS="${BENCH_VENVS:-/tmp/fastprof-bench-venvs}"
JSON="${BENCH_JSON:-$HERE/results/overhead.json.gz}"
PLOT="${BENCH_PLOT:-$ROOT/docs/benchmark.png}"
PYTHONS="${BENCH_PYTHONS:-3.9 3.10 3.11 3.12 3.13 3.14 3.15}"

bash "$HERE/make_venvs.sh" "$VENVS"
cd "$ROOT"
for minor in $PYTHONS; do
    make --no-print-directory "build-$minor"
done
DRIVER="$VENVS/venv-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/bin/python"
raw=()
if [ -n "${BENCH_RAW:-}" ]; then raw=(--raw "$BENCH_RAW"); fi
# each interpreter's workers import the build made for it
"$DRIVER" "$HERE/run.py" timing --all-versions --venvs "$VENVS" --pythonpath "$ROOT/build/py{minor}/lib" \
    --json "$JSON" ${raw[@]+"${raw[@]}"} --plot "$PLOT" "$@"
if [ "${BENCH_ACCURACY:-}" = 1 ]; then
    venvs=()
    for minor in $PYTHONS; do
        if [ -x "$VENVS/venv-$minor/bin/python" ]; then venvs+=("$VENVS/venv-$minor/bin/python"); fi
    done
    "$DRIVER" "$HERE/run.py" accuracy --python "${venvs[@]}" --pythonpath "$ROOT/build/py{minor}/lib" \
        --json "${BENCH_ACCURACY_JSON:-$HERE/results/accuracy.json.gz}"
fi
