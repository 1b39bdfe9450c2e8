#!/usr/bin/env bash
# Make one scratch venv per CPython (3.9-3.13 from pyenv, 3.14+ from the
# per-machine cache of scripts/install-python.sh, which installs them if needed) holding the optional
# profilers of requirements.txt (and py-spy), the real programs of
# requirements-programs.txt (run.py accuracy), plus matplotlib in the venv of `python3`'s
# version (the one that runs run.py and draws the plot).
#
#   bash benchmarks/make_venvs.sh [DIR]        # default DIR: /tmp/fastprof-bench-venvs
#
# Then:  PYTHONPATH=python DIR/venv-3.11/bin/python benchmarks/run.py timing --all-versions --venvs DIR ...
# A venv that already exists is only topped up.  Nothing is installed globally.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:-${BENCH_VENVS:-/tmp/fastprof-bench-venvs}}"
REPO="$(dirname "$HERE")"
DRIVER="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
mkdir -p "$DIR"
for minor in ${BENCH_PYTHONS:-3.9 3.10 3.11 3.12 3.13 3.14 3.15}; do
    if ! base="$("$REPO/scripts/find-python.sh" "$minor" 2>/dev/null)"; then
        case $minor in 3.1[4-9]) "$REPO/scripts/install-python.sh" "$minor" || true ;; esac
        base="$("$REPO/scripts/find-python.sh" "$minor" 2>/dev/null || true)"
    fi
    if [ -z "$base" ]; then echo "no CPython $minor found (scripts/find-python.sh): skipped" >&2; continue; fi
    venv="$DIR/venv-$minor"
    [ -x "$venv/bin/python" ] || "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements.txt" \
        || echo "warning: optional profilers not installed for $minor" >&2
    # the real programs of the accuracy mode (black, jinja2, sympy): apart, so a failure leaves the rest
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements-programs.txt" \
        || echo "warning: the accuracy mode's real programs not installed for $minor" >&2
    if [ "$minor" = "$DRIVER" ]; then
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements-plot.txt"
    fi
    echo "$venv ready"
done
