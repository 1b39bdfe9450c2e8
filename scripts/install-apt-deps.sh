#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt that are not
# installed yet. Runs `apt-get update` at most once, and only when something
# is missing, so a re-run on a ready machine costs a few dpkg-query calls.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
list=scripts/apt-packages.txt

pkgs=()
while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}                        # strip comments
    for word in $line; do pkgs+=("$word"); done
done < "$list"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: not a Debian system (no dpkg-query); install by hand: ${pkgs[*]}" >&2
    exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#pkgs[@]} Debian packages present"
    exit 0
fi

echo "deps: installing missing Debian packages: ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else
        echo "deps: not root and no sudo; install by hand: apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0)
"${sudo[@]}" apt-get "${apt_opts[@]}" update -qq < /dev/null
"${sudo[@]}" apt-get "${apt_opts[@]}" install -y -qq "${missing[@]}" < /dev/null
echo "deps: installed ${missing[*]}"
