#!/usr/bin/env bash
# scripts/gpu-bundle.sh — downloads (apt-get download, Debian 12 amd64) the packages a bare GPU
# machine lacks for scripts/gpu-check.sh into gpu-bundle/ (ignored by git; a device run carries
# it): the runtime and -dev packages of jansson, Check (+ subunit), OpenBLAS, zlib's header, Open
# MPI and the libraries they load, pkgconf (the build asks pkg-config), GNU make, and NCCL's
# header (copied from this machine's CUDA: the GPU image's NCCL comes from a pip wheel that may
# lack it). Nothing is installed here. gpu-check.sh unpacks them with dpkg -x into a private
# prefix (never /). Prints the bundle's size at the end (about 22 MiB; the carried limit is 64).
#
# Usage: scripts/gpu-bundle.sh [DIR]   (DIR: gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-gpu-bundle}

# Names, not versions: apt picks this machine's candidate (Debian 12). The GPU image is Ubuntu
# 24.04 (glibc 2.39), which runs binaries built against Debian 12's glibc 2.36. Core libraries
# any image has (libc6, libstdc++6, libgcc-s1, libgomp1, zlib1g's runtime is the exception below)
# are left out: a second copy on LD_LIBRARY_PATH would shadow the image's newer one.
pkgs=(
  libjansson4 libjansson-dev
  check libsubunit0 libsubunit-dev
  libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev libgfortran5 libquadmath0
  zlib1g zlib1g-dev
  pkgconf-bin libpkgconf3 make
  libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
  libpsm2-2 libpsm-infinipath1 libmunge2 libnuma1 libxnvctrl0 libpciaccess0 libx11-6 libxext6
  libxcb1 libxau6 libxdmcp6 libbsd0 libmd0
)
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
( cd "$dir.tmp" && apt-get download -q "${pkgs[@]}" >/dev/null )
nccl_h=""
for f in /usr/local/cuda/include/nccl.h /usr/include/nccl.h; do
  [ -f "$f" ] && { nccl_h=$f; break; }
done
if [ -n "$nccl_h" ]; then
  mkdir -p "$dir.tmp/include"
  cp "$nccl_h" "$dir.tmp/include/nccl.h"
fi
printf '%s\n' "${pkgs[@]}" > "$dir.tmp/PACKAGES"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
grep -qx '/gpu-bundle/' .gitignore 2>/dev/null || echo "note: gpu-bundle/ should be in .gitignore" >&2
echo "gpu-bundle: $(ls "$dir"/*.deb | wc -l) packages, $(du -sm "$dir" | cut -f1) MiB in $dir/" \
     "($( [ -n "$nccl_h" ] && echo "with nccl.h from $nccl_h" || echo "no nccl.h here"))"
