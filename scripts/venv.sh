#!/usr/bin/env bash
# Make sure .venv/pyX.Y exists (no system site-packages) and holds what
# scripts/requirements-build.txt and requirements-test.txt ask for (and
# requirements-web.txt for the versions of WEB_PYTHONS, default 3.12 3.13).
# The stamp .venv/pyX.Y/.fastprof-stamp holds a hash of both files and of the
# base interpreter: pip runs again only when that hash changes, and the venv is
# made anew only when it is missing, broken, or its base interpreter changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
v=${1:?usage: venv.sh X.Y}
dir=.venv/py$v
stamp=$dir/.fastprof-stamp
basefile=$dir/.fastprof-base

# 3.14+ are not in pyenv here: scripts/install-python.sh unpacks Debian's
# build into a per-machine cache (once; later calls return at once).
if ! base=$(scripts/find-python.sh "$v" 2>/dev/null); then
    if [[ $v =~ ^3\.(1[4-9]|[2-9][0-9])$ ]]; then scripts/install-python.sh "$v"; fi
    base=$(scripts/find-python.sh "$v")
fi
# The web frameworks of tests/test_middleware.py (requirements-web.txt) are
# heavy: only the versions in WEB_PYTHONS get them (the others skip those tests).
web=()
case " ${WEB_PYTHONS:-3.12 3.13} " in *" $v "*) web=(requirements-web.txt) ;; esac
want=$( { echo "$base"; "$base" -c 'import sys; print(sys.version)';
          cat scripts/requirements-build.txt requirements-test.txt "${web[@]}"; } | sha256sum | cut -d' ' -f1)

# requirements-gate.txt: sdists (tests and all) for tests/test_count_gate_real.py,
# downloaded for one Python version into $dir/sdists (its own stamp)
gate_sdists() {
    [ "$v" = 3.12 ] || return 0
    local gwant; gwant=$(sha256sum requirements-gate.txt | cut -d' ' -f1)
    [ "$(cat "$dir/sdists/.stamp" 2>/dev/null)" = "$gwant" ] && return 0
    echo "venv py$v: downloading requirements-gate.txt's sdists into $dir/sdists"
    mkdir -p "$dir/sdists"
    "$dir/bin/python" -m pip download --quiet --no-input --progress-bar off --no-deps \
        --no-binary :all: -r requirements-gate.txt -d "$dir/sdists" < /dev/null 2>&1 \
        | { grep -vF 'is ignored: it is neither a file nor a directory' || true; }
    echo "$gwant" > "$dir/sdists/.stamp"
}

# A venv copied or moved from elsewhere keeps scripts (bin/pytest) whose
# first line names the old place: make it anew. The venv's real place is
# compared, so a worktree whose .venv links to another checkout's keeps it.
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c pass >/dev/null 2>&1 \
        && [ "$(cat "$basefile" 2>/dev/null)" = "$base" ] \
        && head -n3 "$dir/bin/pip" 2>/dev/null | grep -qF "$(cd "$dir" && pwd -P)/bin/python"; then
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        gate_sdists
        exit 0                                  # up to date: say nothing
    fi
else
    echo "venv py$v: creating $dir from $base"
    rm -rf "$dir"
    "$base" -m venv "$dir"
    echo "$base" > "$basefile"
fi

echo "venv py$v: installing scripts/requirements-build.txt + requirements-test.txt${web:+ + ${web[*]}}"
rm -f "$stamp"
# (the grep drops a warning some machines' pip config prints for every package)
"$dir/bin/python" -m pip install --quiet --no-input --progress-bar off \
    -r scripts/requirements-build.txt -r requirements-test.txt ${web:+-r "${web[@]}"} < /dev/null 2>&1 \
    | { grep -vF 'is ignored: it is neither a file nor a directory' || true; }
echo "$want" > "$stamp"
gate_sdists
echo "venv py$v: ready"
