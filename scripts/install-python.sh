#!/usr/bin/env bash
# Install CPython X.Y (3.14 and later; pyenv on this machine stops at 3.13)
# from Debian's own binary packages into a per-machine cache shared by every
# clone and worktree:
#
#   scripts/install-python.sh [--force] X.Y
#   -> ${FASTPROF_PYTHONS_DIR:-$HOME/.cache/fastprof/pythons}/X.Y/usr/bin/pythonX.Y
#
# How (docs/dev-setup.md has the why):
#  1. A private apt configuration (own sources list, state and cache dirs; the
#     system's apt sources are never touched) names Debian's `unstable` and
#     `testing` suites on the mirror this machine's apt already uses, and
#     checks their signatures with the keyring that source names.
#  2. `apt-get download` fetches pythonX.Y's packages and, recursively, the
#     libraries they depend on (libc6 included: these builds need a newer glibc
#     than the machine's); `dpkg -x` unpacks them into a private root.
#  3. patchelf points the interpreter at the root's own loader (absolute path)
#     and libraries (DT_RPATH $ORIGIN/..., which also covers the stdlib's
#     extension modules it dlopens), so nothing else on the machine sees them.
#  4. Fix-ups so builds and venvs use the root, not the machine's /usr: the
#     pyconfig.h wrapper includes its multiarch pyconfig.h by relative path
#     (extensions build with no extra -I), and sysconfig's WHEEL_PKG_DIR,
#     include and library dirs name the root (ensurepip takes pip from there).
#  5. The stdlib is byte-compiled once; a smoke test imports the extension
#     modules; only then does X.Y (a symlink) point at the finished root.
#
# Idempotent and safe to run concurrently (one lock per cache dir; the X.Y
# symlink is switched atomically by rename). --force (or
# FASTPROF_PYTHON_REINSTALL=1) builds a fresh root from the newest packages
# and removes the old one. FASTPROF_DEBIAN_MIRROR=URI overrides the mirror
# taken from the machine's apt sources.
set -euo pipefail

force=${FASTPROF_PYTHON_REINSTALL:-}
case ${1:-} in --force) force=1; shift ;; esac
v=${1:?usage: install-python.sh [--force] X.Y   (X.Y >= 3.14)}
if ! [[ $v =~ ^3\.([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 14 ]; then
    echo "install-python: only 3.14 and later are installed this way (3.9-3.13 come from pyenv), not '$v'" >&2
    exit 2
fi
base=${FASTPROF_PYTHONS_DIR:-$HOME/.cache/fastprof/pythons}
link=$base/$v
py_rel=usr/bin/python$v
say() { echo "install-python $v: $*" >&2; }
die() { echo "install-python $v: $*" >&2; exit 1; }

# The finished root runs: nothing to do (the common case, cheap).
usable() { [ -f "$1/.fastprof-complete" ] && "$1/$py_rel" -c pass >/dev/null 2>&1; }
if [ -z "$force" ] && usable "$link"; then exit 0; fi

for tool in apt-get dpkg patchelf flock; do
    command -v "$tool" >/dev/null 2>&1 \
        || die "needs '$tool' (Debian: apt-get install apt dpkg patchelf util-linux; make deps installs patchelf)"
done
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
[ -n "$multiarch" ] || die "cannot tell the multiarch triplet (dpkg-architecture or gcc -print-multiarch)"

mkdir -p "$base"
exec 9>"$base/.lock"
if ! flock -n 9; then
    say "waiting for another install in $base to finish"
    flock 9
fi
# Another run may have finished it while we waited.
if [ -z "$force" ] && usable "$link"; then exit 0; fi

# --- the mirror: the Debian archive this machine's apt already uses ---------
# Prints "URI KEYRING" of the first source for the machine's own suite
# (VERSION_CODENAME) with component main, from deb822 *.sources files or
# one-line sources.list entries. KEYRING is that source's Signed-By, if a file.
find_mirror() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$codename" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") &&
                    (" " comps " ") ~ / main / && uris != "") {
                    split(uris, u, " "); print u[1], (signed ~ /^\// ? signed : "-"); found = 1; exit
                }
                types = suites = comps = uris = signed = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
              if (key == "types") types = $0; else if (key == "uris") uris = $0
              else if (key == "suites") suites = $0; else if (key == "components") comps = $0
              else if (key == "signed-by") signed = $0 }
            END { if (!found) flush() }' "$f" | head -n1 | grep . && return 0
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        # deb [options] URI suite component...
        awk -v suite="$codename" '
            $1 == "deb" {
                i = 2; opts = ""
                if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
                if ($(i + 1) != suite) next
                main = 0; for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
                if (!main) next
                key = "-"; if (match(opts, /signed-by=[^] ]+/)) key = substr(opts, RSTART + 10, RLENGTH - 10)
                print $i, key; exit
            }' "$f" | head -n1 | grep . && return 0
    done
    return 1
}
if [ -n "${FASTPROF_DEBIAN_MIRROR:-}" ]; then
    mirror=$FASTPROF_DEBIAN_MIRROR; keyring=-
else
    read -r mirror keyring < <(find_mirror || true) || true
    [ -n "${mirror:-}" ] || die "no Debian mirror found in /etc/apt (a 'deb' source for this release's suite with component main); set FASTPROF_DEBIAN_MIRROR=URI of a Debian archive"
fi
signed=
if [ "${keyring:--}" != - ] && [ -f "$keyring" ]; then signed="[signed-by=$keyring] "
elif [ -f /usr/share/keyrings/debian-archive-keyring.gpg ]; then
    signed="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
fi

# --- private apt ------------------------------------------------------------
work=$(mktemp -d "$base/.work-$v.XXXXXX")
root=$(mktemp -d "$base/.root-$v.XXXXXX")     # kept: becomes the install
ok=
cleanup() { rm -rf "$work"; [ -n "$ok" ] || rm -rf "$root"; }
trap cleanup EXIT
chmod 755 "$root"
apt_dir=$work/apt
mkdir -p "$apt_dir"/{etc/sources.list.d,etc/preferences.d,state/lists/partial,cache/archives/partial} "$work/debs"
# Newest of unstable and testing: unstable carries a new CPython first.
{ echo "deb $signed$mirror unstable main"; echo "deb $signed$mirror testing main"; } > "$apt_dir/etc/sources.list"
apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/etc/sources.list.d"
    -o "Dir::Etc::Preferences=$apt_dir/etc/preferences"
    -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
    -o "Dir::State=$apt_dir/state" -o "Dir::State::status=/dev/null"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
    -o Acquire::Languages=none -o Acquire::PDiffs=false
    -o Acquire::Retries=3 -o Debug::NoLocking=true
    # the private dirs may be unreadable to the _apt sandbox user
    -o APT::Sandbox::User="$(id -un)"
)
say "reading the package lists of Debian unstable/testing (private apt config in $work)"
# apt-get update exits 0 even when a source failed: its warnings are errors here
# (an unsigned or unverifiable list must not be used).
apt-get "${apt_opts[@]}" -q update > "$work/update.log" 2>&1 < /dev/null \
    || { cat "$work/update.log" >&2; die "apt-get update failed"; }
if grep -E '^(W|E): ' "$work/update.log" >&2; then die "apt-get update reported problems (above)"; fi

debver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "python$v-minimal" 2>/dev/null \
         | awk '/^Version:/ { print $2; exit }')
[ -n "$debver" ] || die "Debian unstable/testing has no python$v-minimal package"

# Packages: python's own, and recursively what they Depend/Pre-Depend on,
# except what a private root for running and building against needs not:
# configuration tools, data the machine already has (zoneinfo, mime types,
# CA certificates), and other -dev packages (their headers would shadow the
# machine's own libc/zlib headers when building against the root).
seeds=("python$v" "python$v-minimal" "libpython$v-minimal" "libpython$v-stdlib" "libpython$v"
       "python$v-dev" "libpython$v-dev" "libpython$v-testsuite" "python$v-venv")
skip() {
    case $1 in
        python"$v"-dev|libpython"$v"-dev) return 1 ;;
        *-dev|libc-dev-bin|debconf|cdebconf|ca-certificates|openssl|netbase|tzdata|media-types|readline-common|net-tools) return 0 ;;
    esac
    return 1
}
declare -A seen=()
todo=("${seeds[@]}")
for p in "${seeds[@]}"; do seen[$p]=1; done
while [ ${#todo[@]} -gt 0 ]; do
    mapfile -t deps < <(apt-cache "${apt_opts[@]}" depends --important "${todo[@]}" < /dev/null \
        | sed -nE 's/^ +\|?(Pre)?Depends: ([^< ]+)$/\2/p' | sort -u)
    todo=()
    for p in "${deps[@]}"; do
        [ -n "${seen[$p]:-}" ] && continue
        seen[$p]=1
        skip "$p" || todo+=("$p")
    done
done
pkgs=()
for p in "${!seen[@]}"; do skip "$p" || pkgs+=("$p"); done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort)

say "downloading python$v $debver and ${#pkgs[@]} packages: ${pkgs[*]}"
# apt-get download checks each .deb against the signed package lists.
(cd "$work/debs" && apt-get "${apt_opts[@]}" -q download "${pkgs[@]}" > "$work/download.log" 2>&1 < /dev/null) \
    || { cat "$work/download.log" >&2; die "apt-get download failed"; }
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$root"; done

# --- point the interpreter at the root ---------------------------------------
libdir=usr/lib/$multiarch
loader=$(cd "$root/$libdir" && ls ld-linux*.so.* 2>/dev/null | head -n1)
[ -n "$loader" ] && [ -x "$root/$py_rel" ] || die "unpacked root lacks $libdir/ld-linux*.so.* or $py_rel"
# The loader path must be absolute: the root's real directory, which never
# moves (the X.Y symlink is what changes on a reinstall).
# DT_RPATH (not RUNPATH) so libraries loaded by dlopen'ed stdlib extensions
# (libssl, libffi, ...) are found in the root too.
patchelf --set-interpreter "$root/$libdir/$loader" --force-rpath \
    --set-rpath "\$ORIGIN/../lib/$multiarch" "$root/$py_rel"
py=$root/$py_rel

# --- fix-ups for building against and making venvs from the root ------------
# Debian's pyconfig.h is a wrapper including <MULTIARCH/pythonX.Y/pyconfig.h>,
# found on the machine's /usr/include only: include it relative to the wrapper.
sed -i -E "s|^(#[[:space:]]*include) <([^/>]+/python$v[^/>]*/pyconfig\.h)>|\1 \"../\2\"|" \
    "$root"/usr/include/python"$v"*/pyconfig.h
# Directories sysconfig reports (ensurepip's wheel dir, include and lib dirs):
# into the root. TZPATH, tools (/usr/bin/install) and the like stay the machine's.
"$py" -I - "$root" <<'EOF'
import glob, json, os, re, sys, sysconfig
root = sys.argv[1]
keys = ("WHEEL_PKG_DIR INCLUDEDIR INCLUDEPY CONFINCLUDEDIR CONFINCLUDEPY LIBDIR LIBPL "
        "LIBDEST BINLIBDEST DESTSHARED MACHDESTLIB BINDIR LIBPC SCRIPTDIR").split()
stdlib = sysconfig.get_paths()["stdlib"]
for path in glob.glob(os.path.join(stdlib, "_sysconfigdata_*.py")):
    if os.path.islink(path):
        continue
    with open(path) as f:
        text = f.read()
    for key in keys:
        text = re.sub(r"('%s': ')(/usr\b)" % key, lambda m: m.group(1) + root + m.group(2), text)
    with open(path, "w") as f:
        f.write(text)
for path in glob.glob(os.path.join(stdlib, "_sysconfig_vars_*.json")):
    with open(path) as f:
        data = json.load(f)
    for key in keys:
        if isinstance(data.get(key), str) and re.match(r"/usr\b", data[key]):
            data[key] = root + data[key]
    with open(path, "w") as f:
        json.dump(data, f, indent=2)
EOF

# --- byte-compile, smoke test, publish --------------------------------------
say "byte-compiling the standard library"
# The test suite holds files with deliberate syntax errors: compileall's exit
# status is not a verdict (the smoke test below is).
"$py" -m compileall -qq -j 2 -o 0 "$root/usr/lib/python$v" > /dev/null 2>&1 || true
"$py" -I -c '
import sys, os, sysconfig
import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, curses, decimal, uuid
import hashlib, venv, ensurepip, _testcapi, test.support
inc = sysconfig.get_paths()["include"]
assert os.path.exists(os.path.join(inc, "Python.h")), inc
assert os.path.isdir(sysconfig.get_config_var("WHEEL_PKG_DIR")), "no wheel dir"
' || die "smoke test of the unpacked interpreter failed"
echo "python$v $debver from Debian, unpacked $(date -u +%FT%TZ)" > "$root/.fastprof-complete"

# Publish: a new symlink renamed over the old one (atomic), then the old root goes.
old=$(readlink "$link" 2>/dev/null || true)
ln -sfn "$(basename "$root")" "$base/.link-$v.$$"
mv -Tf "$base/.link-$v.$$" "$link"
ok=1
if [ -n "$old" ] && [ "$old" != "$(basename "$root")" ]; then rm -rf "${base:?}/$old"; fi
# Leftovers of runs that were killed (we hold the lock: none is running).
for d in "$base"/.root-"$v".* "$base"/.work-"$v".*; do
    [ -e "$d" ] && [ "$d" != "$root" ] && [ "$d" != "$work" ] && rm -rf "$d"
done
say "installed $("$link/$py_rel" -c 'import sys; print(sys.version.split()[0])') (Debian $debver) in $link -> $(basename "$root")"
