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
# A release that runs on another release's torch and transformers has no venv of its own but an
# overlay, scripts/ds-oracle-overlay-<version>.txt: its "# base: B" line names the venv whose
# interpreter it uses, and the packages it lists (DeepSpeed itself, pinned) go into
# build-ds/ds-<version> with `pip --target --no-deps` (the base venv's torch is not downloaded
# again), first on PYTHONPATH through build-ds/ds-<version>/bin/python, a two-line wrapper of
# the base interpreter. 0.15.4, 0.16.9, 0.17.6 and 0.18.9 run so on 0.19.8's torch 2.5.1 and
# transformers 4.46.3; 0.19.8's own overlay adds only accelerate (the HF Trainer cell). An
# overlay is reused while its stamp (its file's hash and the base venv's stamp) matches.
#
# Usage: scripts/ds-oracle-venv.sh VERSION [DIR]   (DIR default: build-ds under the repository root)
# DS_ORACLE_WHEELS=FOLDER keeps the downloaded wheels there (about 2.5 GB per torch release).
# Prints the python to run on its last line (the venv's, or the overlay's wrapper).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
v=${1:?usage: ds-oracle-venv.sh VERSION [DIR]}
dir=${2:-$root/build-ds}
req=$root/scripts/ds-oracle-req-$v.txt
overlay=$root/scripts/ds-oracle-overlay-$v.txt
if [ -f "$overlay" ] && [ -z "${DS_ORACLE_NO_OVERLAY:-}" ]; then
    base=$(sed -n 's/^# base: *//p' "$overlay" | head -1)
    [ -n "$base" ] || { echo "ds-oracle-venv: $overlay: no '# base: VERSION' line" >&2; exit 2; }
    bpy=$(DS_ORACLE_NO_OVERLAY=1 "$0" "$base" "$dir" | tail -1)   # the base's own venv, made or reused
    odir=$dir/ds-$v
    ostamp="$(sha256sum < "$overlay" | cut -c1-64) on $(cat "${bpy%/bin/python}/.stamp")"
    if [ "$(cat "$odir/.stamp" 2>/dev/null)" != "$ostamp" ]; then
        rm -rf "$odir"
        mkdir -p "$odir/bin"
        echo "ds-oracle-venv: installing $overlay into $odir (interpreter of $base)" >&2
        # DeepSpeed's source archive is built as for a venv (below): no isolation, no C++ ops.
        DS_BUILD_OPS=0 "$bpy" -m pip install -q --no-compile --disable-pip-version-check --no-deps \
            --no-build-isolation --target "$odir" $(grep -v '^#' "$overlay") >&2
        printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' "$odir" "$bpy" > "$odir/bin/python"
        chmod +x "$odir/bin/python"
        echo "$ostamp" > "$odir/.stamp"
    fi
    echo "$odir/bin/python"
    exit 0
fi
[ -f "$req" ] || { echo "ds-oracle-venv: no lock file $req nor overlay $overlay (DeepSpeed $v is not pinned)" >&2; exit 2; }
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
