#!/usr/bin/env bash
# Make one scratch venv per CPython (3.9-3.13, from pyenv) holding the optional
# profilers of requirements.txt, plus matplotlib in the venv of `python3`'s
# version (the one that runs run.py and draws the plot).
#
#   bash benchmarks/make_venvs.sh [DIR]        # default DIR: /tmp/fastprof-bench-venvs
#
# Then:  PYTHONPATH=python DIR/venv-3.11/bin/python benchmarks/run.py --all-versions --venvs DIR ...
# A venv that already exists is only topped up.  Nothing is installed globally.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:-${BENCH_VENVS:-/tmp/fastprof-bench-venvs}}"
ROOT="${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}"
DRIVER="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
mkdir -p "$DIR"
for minor in 3.9 3.10 3.11 3.12 3.13; do
    base="$(ls -d "$ROOT"/versions/"$minor".*/bin/python 2>/dev/null | sort -V | tail -n1 || true)"
    if [ -z "$base" ]; then echo "no CPython $minor under $ROOT/versions: skipped" >&2; continue; fi
    venv="$DIR/venv-$minor"
    [ -x "$venv/bin/python" ] || "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements.txt" \
        || echo "warning: optional profilers not installed for $minor" >&2
    if [ "$minor" = "$DRIVER" ]; then
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements-plot.txt"
    fi
    echo "$venv ready"
done
