#!/usr/bin/env bash
# Installs the Debian packages ratiolab needs when they are missing (as root), or prints the
# exact command to run and fails. Usage: deps.sh [--quiet] PACKAGE...
set -u
quiet=0
if [ "${1:-}" = "--quiet" ]; then quiet=1; shift; fi
missing=()
for p in "$@"; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
  [ "$st" = "installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  [ $quiet = 1 ] || echo "deps: all Debian packages present"
  exit 0
fi
echo "deps: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    && { echo "deps: installed ${missing[*]}"; exit 0; }
  echo "deps: apt-get failed; run: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: run as root: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
exit 1
