#!/usr/bin/env bash
# `make test`: every stage, then a summary. A failing test stage does not
# stop the later ones (one run shows every failure); deps or venvs failing
# does, as nothing after them can work. Exit status non-zero if anything failed.
# Logs: build/logs/<stage>.log; pytest JUnit reports: build/reports/.
#
# The machine has 2 cores: after the builds, the tests run in two lanes side
# by side (the sanitizer lane, then the plain one), each lane's stages in
# turn. A lane's output is shown when it ends, so logs never interleave.
# FASTPROF_TEST_LANES=1 runs everything in one lane, in order.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE=${MAKE:-make}
serial=(deps venvs build)
fatal=(deps venvs)
lane_a=(test-c test-asan)
lane_b=(lint test-py bench-smoke)     # lint: seconds, and never stops the tests
if [ "${FASTPROF_TEST_LANES:-2}" = 1 ]; then
    serial+=("${lane_a[@]}" "${lane_b[@]}")
    lane_a=(); lane_b=()
fi

rm -rf build/logs build/reports
mkdir -p build/logs build/reports build/results
rm -f build/results/*
start_all=$SECONDS

# run_stage STAGE: make STAGE, its output to build/logs/STAGE.log (and to
# stdout when $2 is "show"); its result to build/results/STAGE
run_stage() {
    local st=$1 show=${2:-} t0=$SECONDS rc status
    if [ "$show" = show ]; then
        echo
        echo "################ make $st ################"
        "$MAKE" --no-print-directory -k "$st" < /dev/null 2>&1 | tee "build/logs/$st.log"
        rc=${PIPESTATUS[0]}
    else
        "$MAKE" --no-print-directory -k "$st" < /dev/null > "build/logs/$st.log" 2>&1
        rc=$?
    fi
    if [ "$rc" = 0 ]; then
        status=ok
        grep -q -e 'skipping the C tests' -e 'does not exist yet: skipped' "build/logs/$st.log" \
            && status=skipped
    else
        status=FAILED
    fi
    echo "$st $status $((SECONDS - t0))" > "build/results/$st"
    [ "$rc" = 0 ]
}

stop=
for st in "${serial[@]}"; do
    [ -n "$stop" ] && continue
    if ! run_stage "$st" show; then
        for f in "${fatal[@]}"; do [ "$f" = "$st" ] && stop=1; done
    fi
done

run_lane() {
    for st in "$@"; do run_stage "$st"; done
}
show_lane() {
    for st in "$@"; do
        echo
        echo "################ make $st ################"
        cat "build/logs/$st.log"
    done
}
if [ -z "$stop" ] && [ ${#lane_a[@]} -gt 0 ]; then
    echo
    echo "################ lanes side by side: ${lane_a[*]} | ${lane_b[*]} ################"
    run_lane "${lane_a[@]}" &
    pid_a=$!
    run_lane "${lane_b[@]}"
    show_lane "${lane_b[@]}"
    wait "$pid_a"
    show_lane "${lane_a[@]}"
fi

results=()
for st in "${serial[@]}" "${lane_a[@]}" "${lane_b[@]}"; do
    if [ -f "build/results/$st" ]; then results+=("$(cat "build/results/$st")")
    else results+=("$st not-run 0"); fi
done

py=python3
[ -x ".venv/py3.11/bin/python" ] && py=.venv/py3.11/bin/python
command -v "$py" >/dev/null 2>&1 || py=$(ls .venv/py*/bin/python 2>/dev/null | head -n1)
"$py" scripts/summarize.py $((SECONDS - start_all)) "${results[@]}"
