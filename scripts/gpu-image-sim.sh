#!/usr/bin/env bash
# scripts/gpu-image-sim.sh — runs `GPU_CHECK_DRY=build scripts/gpu-check.sh` (preflight, the
# sm_90 build from gpu-bundle/, the cpu-backend steps with what it built) on this Debian machine
# made to look like the GPU image as far as a mount namespace can (root, unshare): every file of
# the packages the image lacks (jansson, Check, subunit, OpenBLAS, Open MPI, pkg-config, make)
# is hidden behind /dev/null, and NCCL and cuBLAS (library and headers) leave the CUDA install
# for a fake pip-wheel folder (nvidia/nccl, nvidia/cu13), as PyTorch's wheels bring them. What it
# cannot hide: libraries this machine has that the image may lack beyond those (ldd in the
# preflight names them on the GPU machine). Usage: scripts/gpu-image-sim.sh (needs gpu-bundle/).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d gpu-bundle ] || { echo "gpu-image-sim: run scripts/gpu-bundle.sh first" >&2; exit 3; }
[ "$(id -u)" = 0 ] || { echo "gpu-image-sim: needs root (a mount namespace)" >&2; exit 3; }
if [ "${RL_SIM_INSIDE:-}" != 1 ]; then
    exec unshare -m --propagation private env RL_SIM_INSIDE=1 "$0" "$@"
fi
hide_pkgs="libjansson4 libjansson-dev check libsubunit0 libsubunit-dev libopenblas0 libopenblas0-pthread
           libopenblas-dev libopenblas-pthread-dev libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common
           libpmix2 pkgconf pkgconf-bin libpkgconf3 pkg-config make"
# What this machine's own toolchain loads stays visible (binutils 2.40's ld loads libjansson.so.4):
# the image's toolchain brings its own copy, and gpu-check.sh keeps the bundle off the build's
# library path, so hiding it would break this machine's ld, not test the image's.
keep=$(for t in "$(command -v ld)" "$(command -v as)" "$(gcc -print-prog-name=cc1)" "$(gcc -print-prog-name=collect2)"; do
           [ -x "$t" ] && ldd "$t" 2>/dev/null | awk '/=>/ {print $3}'
       done | xargs -r readlink -f | sort -u)
n=0
kept=""
for p in $hide_pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || continue
    while IFS= read -r f; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        if grep -qxF "$(readlink -f "$f")" <<< "$keep"; then
            kept="$kept $f"
            continue
        fi
        mount --bind /dev/null "$f" && n=$((n + 1))
    done < <(dpkg -L "$p")
done
[ -z "$kept" ] || echo "gpu-image-sim: left visible for this machine's own toolchain:$kept"
cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
site=$(mktemp -d /tmp/rl-sim-site.XXXXXX)
mkdir -p "$site/nvidia/nccl/lib" "$site/nvidia/nccl/include" "$site/nvidia/cu13/lib" "$site/nvidia/cu13/include"
move() {   # move FILE DIR: FILE's content appears in DIR, FILE itself reads as empty
    local f=$1 to=$2/$(basename "$1")
    : > "$to"
    mount --bind "$(readlink -f "$f")" "$to"
    mount --bind /dev/null "$(readlink -f "$f")"
}
move "$cuda/lib/libnccl.so.2" "$site/nvidia/nccl/lib"
move "$cuda/include/nccl.h" "$site/nvidia/nccl/include"
for f in "$cuda"/lib/libcublas.so.13 "$cuda"/lib/libcublasLt.so.13; do move "$f" "$site/nvidia/cu13/lib"; done
for f in "$cuda"/include/cublas*.h; do move "$f" "$site/nvidia/cu13/include"; done
echo "gpu-image-sim: $n files of the packages the image lacks hidden; NCCL and cuBLAS moved to $site"
for t in pkg-config mpicc mpirun make; do
    command -v "$t" >/dev/null && [ -s "$(readlink -f "$(command -v "$t")")" ] && echo "gpu-image-sim: $t still visible" >&2
done
GPU_CHECK_BUILD_S=${GPU_CHECK_BUILD_S:-1200} GPU_CHECK_SITE="$site/nvidia" GPU_CHECK_DRY=build scripts/gpu-check.sh "$@"
