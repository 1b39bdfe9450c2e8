#!/usr/bin/env bash
# The style rules, checked (what `make lint` runs, and `make test` before the tests):
#   python  ruff check (pyproject.toml [tool.ruff]) on the whole tree
#   imports import-linter (pyproject.toml [tool.importlinter]) on python/fastprof:
#           the wings and each wing's floors (no import circles); then
#           scripts/check_house.py: every module on a floor, no reach-in to
#           Profile's or a sibling run mode's private names
#   c       clang-format --dry-run --Werror (.clang-format) on csrc/ and tests/c/
# `scripts/lint.sh python`, `scripts/lint.sh imports` or `scripts/lint.sh c` runs
# one part; no argument runs all three.
# ruff and import-linter are pinned and live in their own venvs,
# .venv/ruff-VERSION and .venv/import-linter-VERSION (made once, as
# scripts/venv.sh makes the test venvs); clang-format is a Debian package
# (scripts/apt-packages.txt, installed by scripts/install-apt-deps.sh).
# Exits non-zero, naming the offending files, when a check fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUFF_VERSION=0.17.5
IMPORT_LINTER_VERSION=2.3
GRIMP_VERSION=3.20   # import-linter's graph builder, pinned with it
PY_DIRS=(python tests benchmarks scripts examples setup.py)

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python imports c)

# tool_venv NAME CHECK-COMMAND PACKAGE==VERSION...: the tool's own venv, made once
tool_venv() {
    local dir=.venv/$1 check=$2
    shift 2
    if ! "$dir/bin/$check" --help >/dev/null 2>&1; then
        echo "lint: installing $* into $dir" >&2
        rm -rf "$dir"
        python3 -m venv "$dir"
        # (the grep drops a warning some machines' pip config prints, as venv.sh does)
        "$dir/bin/python" -m pip install --quiet --no-input --progress-bar off \
            "$@" < /dev/null 2>&1 \
            | { grep -vF 'is ignored: it is neither a file nor a directory' || true; } >&2
    fi
    echo "$dir/bin/$check"
}

ruff_bin() {
    tool_venv "ruff-$RUFF_VERSION" ruff "ruff==$RUFF_VERSION"
}

lint_python() {
    local ruff
    ruff=$(ruff_bin)
    echo "lint: ruff check ${PY_DIRS[*]}"
    "$ruff" check --no-cache --quiet "${PY_DIRS[@]}"
}

lint_imports() {
    local lint_imports
    lint_imports=$(tool_venv "import-linter-$IMPORT_LINTER_VERSION" lint-imports \
        "import-linter==$IMPORT_LINTER_VERSION" "grimp==$GRIMP_VERSION")
    echo "lint: lint-imports (pyproject.toml [tool.importlinter]) on python/fastprof"
    # the package from this tree (python/), read, not imported: no build needed
    PYTHONPATH=python "$lint_imports" --config pyproject.toml --no-cache
    # what import-linter cannot state: every module on a floor, no private reach-in
    echo "lint: scripts/check_house.py (every module on a floor, no private reach-in)"
    "$(dirname "$lint_imports")/python" scripts/check_house.py
}

lint_c() {
    if ! command -v clang-format >/dev/null 2>&1; then
        scripts/install-apt-deps.sh >&2
    fi
    local files
    mapfile -t files < <(ls csrc/*.[ch] tests/c/*.[ch] 2>/dev/null)
    echo "lint: clang-format --dry-run --Werror on ${#files[@]} files in csrc/ tests/c/"
    local bad=()
    for f in "${files[@]}"; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "lint: not formatted as .clang-format says (clang-format -i FILE fixes them):" >&2
        printf '  %s\n' "${bad[@]}" >&2
        return 1
    fi
}

status=0
for part in "${parts[@]}"; do
    case $part in
        python)  lint_python || status=1 ;;
        imports) lint_imports || status=1 ;;
        c)       lint_c || status=1 ;;
        *) echo "usage: scripts/lint.sh [python] [imports] [c]" >&2; exit 2 ;;
    esac
done
[ $status -eq 0 ] && echo "lint: ok"
exit $status
