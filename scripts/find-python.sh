#!/usr/bin/env bash
# Print the path of a working CPython X.Y (the one argument) able to make
# venvs. Looks, in order, at $FASTPROF_PYTHON_X_Y, pyenv's versions (newest
# plain X.Y.Z first), the per-machine cache of scripts/install-python.sh
# (3.14+: ${FASTPROF_PYTHONS_DIR:-~/.cache/fastprof/pythons}/X.Y), then
# pythonX.Y on PATH and in /usr/bin, /usr/local/bin. Finds only: installing
# is install-python.sh's job (scripts/venv.sh calls it when this finds none).
set -euo pipefail
want=${1:?usage: find-python.sh X.Y}

works() {
    "$1" -c "import sys, venv, ensurepip
sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$want' else 1)" >/dev/null 2>&1
}

var="FASTPROF_PYTHON_${want//./_}"
if [ -n "${!var:-}" ]; then
    if works "${!var}"; then echo "${!var}"; exit 0; fi
    echo "find-python: $var=${!var} is not a working Python $want with venv" >&2
    exit 1
fi

roots=()
if command -v pyenv >/dev/null 2>&1; then roots+=("$(pyenv root 2>/dev/null || true)"); fi
roots+=("${PYENV_ROOT:-}" "$HOME/.pyenv")
for root in "${roots[@]}"; do
    [ -n "$root" ] && [ -d "$root/versions" ] || continue
    while IFS= read -r dir; do
        name=${dir##*/}
        [[ ${name#"$want".} =~ ^[0-9]+$ ]] || continue   # skip 3.13.0t, 3.12-dev, ...
        if works "$dir/bin/python"; then echo "$dir/bin/python"; exit 0; fi
    done < <(ls -d "$root/versions/$want".* 2>/dev/null | sort -rV)
done

# scripts/install-python.sh's root; the X.Y symlink is only made once complete
cached=${FASTPROF_PYTHONS_DIR:-$HOME/.cache/fastprof/pythons}/$want
if [ -f "$cached/.fastprof-complete" ] && works "$cached/usr/bin/python$want"; then
    echo "$cached/usr/bin/python$want"; exit 0
fi

for cand in "$(command -v "python$want" 2>/dev/null || true)" "/usr/local/bin/python$want" "/usr/bin/python$want"; do
    [ -n "$cand" ] && [ -x "$cand" ] || continue
    if works "$cand"; then
        # resolve pyenv shims to the real interpreter
        "$cand" -c 'import sys; print(sys.executable)'
        exit 0
    fi
done

echo "find-python: no working Python $want found (pyenv versions, $cached, PATH); set $var=/path/to/python$want" >&2
exit 1
