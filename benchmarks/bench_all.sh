#!/usr/bin/env bash
# The full benchmark, every supported CPython, one command (what `make bench` runs):
#   1. scratch venvs with yappi, pyinstrument, line_profiler (+ matplotlib for the driver) -> make_venvs.sh
#   2. build fastprof for each interpreter (`make build-X.Y` -> build/pyX.Y/lib)
#   3. run.py --all-versions: 5 interleaved repeats, tables on stdout,
#      raw + summaries to benchmarks/results.json, plot to docs/benchmark.png
# Takes an hour or more on the 2-core reference machine (builds excluded; every mode, full sizes).  Extra arguments go to
# run.py (e.g. --repeats 3, --metric cpu, --workloads fib,regex).
#   BENCH_VENVS  where the venvs live (default /tmp/fastprof-bench-venvs)
#   BENCH_JSON   results file          (default benchmarks/results.json)
#   BENCH_PLOT   plot file             (default docs/benchmark.png)
#   BENCH_PYTHONS  versions            (default 3.9 ... 3.15)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
VENVS="${BENCH_VENVS:-/tmp/fastprof-bench-venvs}"
JSON="${BENCH_JSON:-$ROOT/benchmarks/results.json}"
PLOT="${BENCH_PLOT:-$ROOT/docs/benchmark.png}"

bash "$HERE/make_venvs.sh" "$VENVS"
cd "$ROOT"
for minor in ${BENCH_PYTHONS:-3.9 3.10 3.11 3.12 3.13 3.14 3.15}; do
    make --no-print-directory "build-$minor"
done
DRIVER="$VENVS/venv-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/bin/python"
# each interpreter's workers import the build made for it
"$DRIVER" "$HERE/run.py" --all-versions --venvs "$VENVS" --pythonpath "$ROOT/build/py{minor}/lib" \
    --json "$JSON" --plot "$PLOT" "$@"
