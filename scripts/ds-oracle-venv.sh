#!/usr/bin/env bash
# scripts/ds-oracle-venv.sh — the pinned Python environments of the DeepSpeed oracle (`make ds-oracle`).
#
# One virtual environment per DeepSpeed release, build-ds/venv-<version>, made from the lock file
# scripts/ds-oracle-req-<version>.txt (every package pinned) plus deepspeed==<version>. The
# releases need different torch pins: DeepSpeed 0.14.1 imports a private torch function that
# torch 2.4 removed (torch.distributed.elastic ... _get_socket_with_port) and numpy.BUFSIZE,
# which numpy 2 removed, so it gets torch 2.3.1 and numpy 1.26.4; 0.19.8 gets torch 2.5.1.
# A venv is reused while its stamp (the lock file's hash and the DeepSpeed version) matches, and
# made anew otherwise. The torch wheels from PyPI run on the CPU and carry the CUDA libraries:
# about 5 GB per venv, downloaded once. --no-compile: pip does not byte-compile the thousands of
# modules of torch and the nvidia wheels (Python compiles what it imports, when it imports it).
#
# Usage: scripts/ds-oracle-venv.sh VERSION [DIR]   (DIR default: build-ds under the repository root)
# DS_ORACLE_WHEELS=FOLDER keeps the downloaded wheels there (about 2.5 GB per torch release).
# Prints the venv's python on its last line.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
v=${1:?usage: ds-oracle-venv.sh VERSION [DIR]}
dir=${2:-$root/build-ds}
req=$root/scripts/ds-oracle-req-$v.txt
[ -f "$req" ] || { echo "ds-oracle-venv: no lock file $req (DeepSpeed $v is not pinned)" >&2; exit 2; }
venv=$dir/venv-$v
stamp="$(sha256sum < "$req" | cut -c1-64) deepspeed==$v"
if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$venv"
    mkdir -p "$dir"
    echo "ds-oracle-venv: creating $venv from $req" >&2
    python3 -m venv "$venv"
    if [ -n "${DS_ORACLE_WHEELS:-}" ]; then
        # The wheels kept in a folder (both releases share it), so a venv made again downloads
        # nothing; pip's own HTTP cache is left on, but it keeps nothing here when the index's
        # responses carry no cache headers (as this machine's mirror's do).
        mkdir -p "$DS_ORACLE_WHEELS"
        "$venv/bin/python" -m pip download -q --disable-pip-version-check -d "$DS_ORACLE_WHEELS" -r "$req" >&2
        "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check --no-index \
            --find-links "$DS_ORACLE_WHEELS" -r "$req" >&2
    else
        "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check -r "$req" >&2
    fi
    # DeepSpeed ships as a source archive whose setup.py imports torch: no build isolation, so it
    # sees the venv's torch; DS_BUILD_OPS=0 leaves the C++ ops to the JIT at run time.
    local_src=()
    if [ -n "${DS_ORACLE_WHEELS:-}" ]; then
        DS_BUILD_OPS=0 "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
            --no-build-isolation -d "$DS_ORACLE_WHEELS" "deepspeed==$v" >&2
        local_src=(--no-index --find-links "$DS_ORACLE_WHEELS")
    fi
    DS_BUILD_OPS=0 "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check --no-deps \
        --no-build-isolation "${local_src[@]}" "deepspeed==$v" >&2
    echo "$stamp" > "$venv/.stamp"
fi
echo "$venv/bin/python"
