#!/usr/bin/env bash
# Build fastprof for one Python version into its own directory:
#   scripts/build.sh X.Y normal  ->  build/pyX.Y/lib        (-O2)
#   scripts/build.sh X.Y asan    ->  build/pyX.Y-asan/lib   (FASTPROF_SANITIZE=1: ASan + UBSan)
# The lib dir holds fastprof/ with the .py files, package data and the .so:
# put it (and only it) on PYTHONPATH. The build is redone from scratch, or not
# at all: a stamp records the sources' names, the flags and the interpreter,
# and any source newer than the stamp (or a different record) rebuilds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
v=${1:?usage: build.sh X.Y normal|asan}
kind=${2:-normal}
case $kind in
    normal) B=build/py$v;      sanitize=0 ;;
    asan)   B=build/py$v-asan; sanitize=1 ;;
    *) echo "build.sh: kind must be normal or asan, not $kind" >&2; exit 2 ;;
esac
py=.venv/py$v/bin/python
[ -x "$py" ] || { echo "build.sh: $py missing; run: make venv-$v" >&2; exit 1; }

sources() {   # extra find tests may be given, e.g. -newer FILE
    find csrc python setup.py pyproject.toml -type f \
        ! -name '*.so' ! -name '*.pyd' ! -name '*.o' ! -name '*.pyc' \
        ! -path '*/__pycache__/*' ! -path '*.egg-info/*' "$@" -print 2>/dev/null | LC_ALL=C sort
}
record=$( { echo "sanitize=$sanitize debug=${FASTPROF_DEBUG:-} CC=${CC:-} CFLAGS=${CFLAGS:-} LDFLAGS=${LDFLAGS:-}"
            "$py" -c 'import sys; from importlib.metadata import version; print(sys.executable, sys.version, version("setuptools"))'
            sources; } | sha256sum | cut -d' ' -f1)

if [ -f "$B/.stamp" ] && [ "$(cat "$B/.record" 2>/dev/null)" = "$record" ] \
        && [ -z "$(sources -newer "$B/.stamp")" ]; then
    echo "build $B: up to date"
    exit 0
fi

echo "build $B: building (FASTPROF_SANITIZE=$sanitize)"
rm -rf "$B"
mkdir -p "$B"
touch "$B/.started"        # sources edited during the build are newer than this
# -Werror: the project's own builds only (a user's pip install never gets it).
FASTPROF_WERROR=1 FASTPROF_SANITIZE=$sanitize "$py" setup.py --quiet build \
    --build-base "$B" --build-lib "$B/lib" --build-temp "$B/temp" --force --parallel 2

# The lib dir must hold exactly one extension, the one for this interpreter:
# never a copy of an in-place build (python/fastprof/*.so) or another ABI.
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
mapfile -t exts < <(find "$B/lib" -name '_fastprof*' \( -name '*.so' -o -name '*.pyd' \))
if [ ${#exts[@]} -ne 1 ] || [ "${exts[0]}" != "$B/lib/fastprof/_fastprof$suffix" ]; then
    echo "build $B: expected exactly $B/lib/fastprof/_fastprof$suffix, found: ${exts[*]:-nothing}" >&2
    exit 1
fi
echo "$record" > "$B/.record"
mv "$B/.started" "$B/.stamp"
echo "build $B: ok"
