#!/usr/bin/env bash
# `make test`: every stage in turn, then a summary. A failing test stage does
# not stop the later ones (one run shows every failure); deps or venvs failing
# does, as nothing after them can work. Exit status non-zero if anything failed.
# Logs: build/logs/<stage>.log; pytest JUnit reports: build/reports/.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE=${MAKE:-make}
stages=(deps venvs build test-c test-py test-asan bench-smoke)
fatal=(deps venvs)

rm -rf build/logs build/reports
mkdir -p build/logs build/reports
start_all=$SECONDS
results=()
stop=
for st in "${stages[@]}"; do
    if [ -n "$stop" ]; then results+=("$st not-run 0"); continue; fi
    echo
    echo "################ make $st ################"
    t0=$SECONDS
    # -k: a failing version does not stop the others within a stage
    "$MAKE" --no-print-directory -k "$st" < /dev/null 2>&1 | tee "build/logs/$st.log"
    rc=${PIPESTATUS[0]}
    dt=$((SECONDS - t0))
    if [ "$rc" = 0 ]; then
        if grep -q -e 'skipping the C tests' -e 'does not exist yet: skipped' "build/logs/$st.log"; then
            results+=("$st skipped $dt")
        else
            results+=("$st ok $dt")
        fi
    else
        results+=("$st FAILED $dt")
        for f in "${fatal[@]}"; do [ "$f" = "$st" ] && stop=1; done
    fi
done

py=python3
[ -x ".venv/py3.11/bin/python" ] && py=.venv/py3.11/bin/python
command -v "$py" >/dev/null 2>&1 || py=$(ls .venv/py*/bin/python 2>/dev/null | head -n1)
"$py" scripts/summarize.py $((SECONDS - start_all)) "${results[@]}"
