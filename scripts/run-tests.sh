#!/usr/bin/env bash
# `make test`: every stage, then a summary. A failing test stage does not
# stop the later ones (one run shows every failure); deps or venvs failing
# does, as nothing after them can work. Exit status non-zero if anything failed.
# Logs: build/logs/<stage>.log; pytest JUnit reports: build/reports/.
#
# The machine has 2 cores: after the builds, two workers take the test
# stages from one queue, longest first (each version's sanitizer run, the C
# tests, each version's plain run, then the short ones), so neither core idles
# while the other still has a long lane. A stage's output is shown when all
# are done, in queue order, so logs never interleave.
# FASTPROF_TEST_LANES=1 runs everything with one worker, in order.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE=${MAKE:-make}
serial=(deps venvs build)
fatal=(deps venvs)
# make's lists, so the queue follows ASAN_PY / PY when they are given
read -r -a asan_versions <<< "$("$MAKE" --no-print-directory -s print-ASAN_PY)"
read -r -a py_versions <<< "$("$MAKE" --no-print-directory -s print-PY)"
# Longest first (8-10 minutes, then 3-4, then 1-2): the sanitizer runs of
# tests/version_sample.py's ASAN_SAMPLE and the plain runs of its
# PLAIN_SAMPLE (every test file), then the other sanitizer runs (newer
# interpreters run slower), the C tests, the other plain runs (the files
# whose subject is the C).
sample_of() { sed -n "s/^$1 = (\(.*\))/\1/p" tests/version_sample.py | tr -d '",'; }
read -r -a asan_sample <<< "$(sample_of ASAN_SAMPLE)"
read -r -a plain_sample <<< "$(sample_of PLAIN_SAMPLE)"
export FASTPROF_VERSION_SAMPLE=${FASTPROF_VERSION_SAMPLE:-1}
queue=()
for v in "${asan_sample[@]}"; do
    [[ " ${asan_versions[*]} " == *" $v "* ]] && queue+=("test-asan-$v")
done
for v in "${plain_sample[@]}"; do
    [[ " ${py_versions[*]} " == *" $v "* ]] && queue+=("test-py-$v")
done
for ((i=${#asan_versions[@]}-1; i>=0; i--)); do
    [[ " ${asan_sample[*]} " == *" ${asan_versions[i]} "* ]] || queue+=("test-asan-${asan_versions[i]}")
done
queue+=(test-c)
for ((i=${#py_versions[@]}-1; i>=0; i--)); do
    [[ " ${plain_sample[*]} " == *" ${py_versions[i]} "* ]] || queue+=("test-py-${py_versions[i]}")
done
queue+=(bench-smoke lint)
workers=${FASTPROF_TEST_LANES:-2}

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
        # the serial stages (venvs, builds: one per version) take both cores,
        # each version's output kept together
        "$MAKE" --no-print-directory -k -j"$workers" --output-sync=target "$st" < /dev/null 2>&1 \
            | tee "build/logs/$st.log"
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

# worker: takes the next stage off build/queue until it is empty
worker() {
    local st
    while :; do
        st=$(flock build/queue.lock bash -c \
             'st=$(head -n1 build/queue); [ -n "$st" ] && sed -i 1d build/queue; echo "$st"')
        [ -n "$st" ] || return 0
        run_stage "$st"
    done
}
if [ -z "$stop" ]; then
    echo
    echo "################ $workers workers, longest first: ${queue[*]} ################"
    printf '%s\n' "${queue[@]}" > build/queue
    pids=()
    for ((w=0; w<workers; w++)); do worker & pids+=($!); done
    wait "${pids[@]}"
    for st in "${queue[@]}"; do
        echo
        echo "################ make $st ################"
        cat "build/logs/$st.log"
    done
fi

# One summary row per kind of stage (test-py, test-asan): the versions'
# statuses joined, their seconds added; their counts come from the reports.
for kind in test-py test-asan; do
    status=ok secs=0 any=
    for f in build/results/"$kind"-[0-9]*; do
        [ -f "$f" ] || continue
        read -r _ st t < "$f"
        any=1; secs=$((secs + t))
        [ "$st" = ok ] || status=FAILED
        rm -f "$f"
    done
    [ -n "$any" ] && echo "$kind $status $secs" > "build/results/$kind"
done

results=()
for st in "${serial[@]}" test-c test-py test-asan bench-smoke lint; do
    if [ -f "build/results/$st" ]; then results+=("$(cat "build/results/$st")")
    else results+=("$st not-run 0"); fi
done

py=python3
[ -x ".venv/py3.11/bin/python" ] && py=.venv/py3.11/bin/python
command -v "$py" >/dev/null 2>&1 || py=$(ls .venv/py*/bin/python 2>/dev/null | head -n1)
"$py" scripts/summarize.py $((SECONDS - start_all)) "${results[@]}"
