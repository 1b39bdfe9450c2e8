#!/usr/bin/env bash
# Build the sdist and one manylinux_2_17 (manylinux2014) wheel per Python version:
#   scripts/build-wheels.sh [-o OUTDIR] X.Y [X.Y ...]     (make wheels: every supported version)
# 1. .venv/wheel-tools (scripts/requirements-wheels.txt: build, auditwheel, ziglang)
# 2. the sdist, which carries uthash.h and its license (setup.py's sdist command)
# 3. per version, the wheel is built FROM THAT SDIST by .venv/pyX.Y (make venv-X.Y)
#    with zig cc targeting glibc 2.17: the extension then links only symbols that
#    glibc 2.17 has, whatever this machine's glibc is. No -Werror (a user's build).
# 4. auditwheel repair tags it manylinux_2_17 and `auditwheel show` must confirm it.
# The sdist and the wheels land in OUTDIR (default dist/); logs and temporary
# files in $FASTPROF_WHEELS_WORK (default build/wheels/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
out=$ROOT/dist
if [ "${1:-}" = -o ]; then out=$(mkdir -p "$2" && cd "$2" && pwd); shift 2; fi
[ $# -gt 0 ] || { echo "usage: build-wheels.sh [-o OUTDIR] X.Y [X.Y ...]" >&2; exit 2; }
GLIBC=2.17
arch=$(uname -m)
plat=manylinux_${GLIBC/./_}_$arch
work=${FASTPROF_WHEELS_WORK:-$ROOT/build/wheels}
mkdir -p "$out" "$work"

# --- 1. the tools venv (remade when the requirements or the interpreter change)
tools=$ROOT/.venv/wheel-tools
base=$(scripts/find-python.sh "${WHEEL_TOOLS_PY:-${DEV_PY:-3.11}}")
want=$( { echo "$base"; cat scripts/requirements-wheels.txt; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$tools/.fastprof-stamp" 2>/dev/null)" != "$want" ] || ! "$tools/bin/python" -c pass 2>/dev/null; then
    echo "wheels: making $tools from $base"
    rm -rf "$tools"
    "$base" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --no-input --progress-bar off \
        -r scripts/requirements-wheels.txt < /dev/null 2>&1 \
        | { grep -vF 'is ignored: it is neither a file nor a directory' || true; }
    echo "$want" > "$tools/.fastprof-stamp"
fi

# zig cc for glibc $GLIBC, as one program: setuptools splits CC on blanks.
zig=$("$tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
cc=$work/bin/cc
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec "%s" cc -target %s-linux-gnu.%s "$@"\n' "$zig" "$arch" "$GLIBC" > "$cc"
chmod +x "$cc"

# --- 2. the sdist
rm -rf "$work/sdist"
echo "wheels: sdist"
"$tools/bin/python" -m build --sdist --no-isolation -o "$work/sdist" . > "$work/sdist.log" 2>&1 \
    || { cat "$work/sdist.log"; echo "wheels: FAILED: the sdist (log above)" >&2; exit 1; }
sdist=$(ls "$work"/sdist/fastprof-*.tar.gz)

# --- 3 and 4. one wheel per version
fail=
built=()
for v in "$@"; do
    py=$ROOT/.venv/py$v/bin/python
    log=$work/py$v.log
    if [ ! -x "$py" ]; then echo "wheels: $py missing; run: make venv-$v" >&2; fail="$fail $v"; continue; fi
    echo "wheels: Python $v"
    rm -rf "$work/raw-$v" "$work/repaired-$v"
    # LDSHARED replaces the interpreter's own link command (gcc on this
    # machine); pip -v shows every compile command in the log.
    if ! CC=$cc LDSHARED="$cc -shared" "$py" -m pip wheel -v --no-deps --no-build-isolation --no-index \
            --no-cache-dir -w "$work/raw-$v" "$sdist" > "$log" 2>&1 < /dev/null \
        || ! PATH=$tools/bin:$PATH "$tools/bin/auditwheel" repair --strip --plat "$plat" \
                -w "$work/repaired-$v" "$work"/raw-$v/*.whl >> "$log" 2>&1; then
        tail -n 30 "$log"
        echo "wheels: FAILED on Python $v (log: $log)" >&2
        fail="$fail $v"; continue
    fi
    whl=$(ls "$work"/repaired-$v/*.whl)
    # auditwheel show names the oldest policy the wheel satisfies: it must be ours.
    "$tools/bin/auditwheel" show "$whl" | tee -a "$log" | tr -s ' \n' ' ' \
        | grep -q "consistent with the following platform tag: \"$plat\"" \
        || { echo "wheels: FAILED: $whl is not $plat (log: $log)" >&2; fail="$fail $v"; continue; }
    cp "$whl" "$out/"
    built+=("$out/${whl##*/}")
done
cp "$sdist" "$out/"
echo "wheels: sdist $out/${sdist##*/}"
for w in ${built[@]+"${built[@]}"}; do echo "wheels: $w"; done
if [ -n "$fail" ]; then echo "wheels: FAILED on Python$fail" >&2; exit 1; fi
