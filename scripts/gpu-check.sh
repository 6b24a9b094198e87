#!/usr/bin/env bash
# scripts/gpu-check.sh — every GPU check of ratiolab in one run on a bare GPU machine (the
# nvidia-h200 image: nvcc 13, PyTorch's pip wheels with libnccl.so.2 and libcublas.so.13, no
# jansson, Check, OpenBLAS, Open MPI, pkg-config or apt). What the image lacks travels as
# gpu-bundle/ (scripts/gpu-bundle.sh here: 43 Debian 12 packages and nccl.h, 22 MiB; carry it:
# `carry: ["gpu-bundle"]`; the tree itself is about 3 MiB). The bundle's libraries reach only the
# binaries built here (their DT_RPATH) and the bundle's own tools; the build, the image's
# compilers and everything else run with the image's library path as it is.
#
# Steps, each under `timeout` with its wall time printed. The times are ESTIMATES for the lent
# nvidia-h200 machine (16 cores, one H200), not measurements: no GPU has run this script yet. The
# build is scaled from its CPU time here; the other steps are counted from what they start (a
# ratiolab process on a GPU: ~2-3 s of CUDA context, cuBLAS load and allocation, guessed) and from
# their work at the H200's rates; the run's summary prints the real times, and the end of the run
# says when it was over budget.
#   preflight     ~5 s   unpacks the bundle (dpkg -x) into a private prefix (never /), finds nvcc,
#                        NCCL and cuBLAS (the CUDA install or the wheels' nvidia/*/lib), lists
#                        EVERYTHING missing and stops (exit 3) when anything is (5 s here);
#   build        ~30 s   make -j$(nproc), nvcc for sm_90 only, MPI only with more than one GPU,
#                        warnings not fatal (WERROR=): the image's compiler is not the gcc 12 this
#                        tree is built with; the compilers' versions and the warning count go to
#                        the summary. A clean build is 67 s of CPU here (user + sys; 4 min of wall
#                        time at -j2 on the loaded 2-core VM), ~5 s over 16 cores, plus the links
#                        and the longest nvcc compile (3.5 s of CPU) on the critical path;
#   kernels      ~15 s   the Adam kernel bitwise against the reference (gpu_kernels suite; the
#                        reference's scalar loops on the host dominate);
#   executor     ~25 s   run --backend cuda, ratios 0 / 0.5 / 1 x both schedules: the reference's
#                        digest; prefetch depth 14 and --comm-dtype fp16 too; CUDA-event busy
#                        times in the JSON (5 processes at scale 64, ~5 s each);
#   nccl1         ~5 s   one run through a 1-rank NCCL communicator (every collective via NCCL);
#   gpu_exec     ~30 s   the gpu_exec suite (GEMM compute, ledger, event timing; 8 processes);
#   validate     ~90 s   validate --backend cuda --calibrate, ratios 0 / 0.5 / 1: the one
#                        calibration (~35 s: copies by size and direction, latency, D2D, GPU Adam,
#                        cuBLAS at the run's shapes on random data, host DRAM, CPU Adam, first
#                        touch, memcpy and cast; no emulated-device sweeps), the scalar reference
#                        (~10 s) and 4 executor processes (~10 s each: 166 M host elements at
#                        ratio 1), every run predicted with the measured profile and, from the same
#                        measurements, with the catalog's hgx-h200 (--also-hw); the 10 % time gate
#                        is REPORTED, not gated (the fidelity is what this run measures);
#   monitor      ~10 s   the monitor's NVML path (a "skipped: no GPU" fails);
#   bench_adam   ~10 s   bench/adam --gpu (a bitwise mismatch fails);
#   bench_exec   ~20 s   bench/exec --gpu;
#   bench_scan    ~5 s   bench/scan: the host's overflow scan against its read bandwidth (9 s on the
#                        loaded 2-core VM for 64 Mi elements; 16 cores read faster).
# Total ~245 s estimated, plus 1-2 minutes of machine start outside the script; the budget
# (GPU_CHECK_BUDGET_S, default 360) is checked at the end and no step runs past
# GPU_CHECK_DEADLINE_S (default 540) from the start, so the logs come back within the device's
# 600 s per command. With one GPU, NCCL runs as a 1-rank communicator only: the summary lists the
# NCCL paths that were not exercised, and the Check suites accept exactly the skips a one-GPU
# machine must have (skip_expected below), no others.
# Output ($OUT, 7 files of the 8 the device returns; without OUT, a new
# /tmp/ratiolab-gpu-check.*.out): summary.txt (one line per step, the verdict last),
# gpu-check-logs.tar.gz (every log), hgx-h200-measured.json (the calibrated profile, every
# figure's method and spread in its "sources"), report-measured.md and report-measured.json
# (executor against simulator per ratio and phase with that profile), report-catalog.md and
# report-catalog.json (the same measurements predicted with the catalog's hgx-h200).
#
# GPU_CHECK_DRY=1 (make test runs it): no GPU needed; the preflight checks this machine, and each
# step runs its command on the cpu backend at tiny sizes with the already built tree
# (RATIOLAB_BIN, RATIOLAB_BUILD), or prints the command where the step needs a GPU. Exit: 0 all
# passed, 1 a check failed, 3 something is missing (preflight) or the build failed.
# GPU_CHECK_DRY=build: as the dry run, but the preflight wants the bundle and the build step
# runs (sm_90, build-gpu/) and the cpu-backend steps use what it built (scripts/gpu-image-sim.sh
# runs this with the packages the GPU image lacks hidden).
# Sourced (`source scripts/gpu-check.sh`), it only defines suite() and skip_expected() and
# returns: tests/check_gpucheck.c checks them on stub outputs.
set -u -o pipefail

# ---- the Check suites' verdict (sourced by tests/check_gpucheck.c) ----------------------------
# A skip line of the runner ("skipped: WHAT: WHY" or "skipped: WHAT (N runs): WHY") that this
# machine must have: with fewer than 2 GPUs, the tests that need two ranks on two GPUs. Nothing
# else may skip on a GPU machine.
skip_expected() {
    [ "${NGPU:-0}" -lt 2 ] || return 1
    case $1 in
        "skipped: gpu_exec: gpu_two_ranks_nccl: needs 2 GPUs"*) return 0 ;;
    esac
    return 1
}

# suite NAME LIMIT_S: the Check suite NAME of $BD/tests/run_tests, its output in
# $LOGS/suite_NAME.txt and on stdout. In a dry run (no GPU) it must skip as a whole. On the GPU it
# passes when the runner passed, every skip line is one skip_expected accepts, and the closing
# line counts at least one test passed, none failed and exactly the accepted skips.
suite() {
    local rc=0 line n_ok=0 bad=0 runs
    CK_RUN_SUITE=$1 CK_NOFORK_TIMEOUT=$2 "$BD/tests/run_tests" > "$LOGS/suite_$1.txt" 2>&1 || rc=$?
    cat "$LOGS/suite_$1.txt"
    if [ "$DRY" = 1 ]; then
        grep -Eq '^0 passed, 0 failed, [1-9][0-9]* skipped$' "$LOGS/suite_$1.txt"
        return
    fi
    [ $rc = 0 ] || return $rc
    while IFS= read -r line; do
        case $line in skipped*) ;; *) continue ;; esac
        if skip_expected "$line"; then
            runs=1
            [[ $line =~ ^skipped:\ .*\ \(([0-9]+)\ runs\): ]] && runs=${BASH_REMATCH[1]}
            n_ok=$((n_ok + runs))
            echo "suite $1: accepted on a ${NGPU:-0}-GPU machine: $line"
        else
            echo "suite $1: skipped on the GPU machine, which must run it: $line"
            bad=1
        fi
    done < "$LOGS/suite_$1.txt"
    [ $bad = 0 ] || return 1
    grep -Eq "^[1-9][0-9]* passed, 0 failed, $n_ok skipped\$" "$LOGS/suite_$1.txt" \
        || { echo "suite $1: the closing line is not 'N passed, 0 failed, $n_ok skipped'"; return 1; }
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then   # sourced: the functions above only
    return 0
fi

export SHELLOPTS   # the steps' child shells fail a pipeline as this one does
cd "$(dirname "$0")/.."
src=$PWD
dry=${GPU_CHECK_DRY:-0}
build_dry=0
[ "$dry" = build ] && { dry=1; build_dry=1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ratiolab-gpu-check.XXXXXX") || exit 3
out=${OUT:-$work.out}
logs=$work/logs
mkdir -p "$out" "$logs" || exit 3
summary=$out/summary.txt
: > "$summary"
t_start=$SECONDS
# The device runs one command for at most 600 s: every step ends before this deadline, so the
# summary and the log tarball always come back.
deadline=${GPU_CHECK_DEADLINE_S:-560}
failed=0
declare -a not_exercised=()

say() { echo "$*" | tee -a "$summary"; }
# Packs the logs at every exit (a timeout of the whole run included).
finish() {
    tar -czf "$out/gpu-check-logs.tar.gz" -C "$work" logs 2>/dev/null
    rm -rf "$work"
}
trap finish EXIT

# ---- preflight -------------------------------------------------------------------------------
prefix=$work/prefix
missing=()
need_tool() { command -v "$1" >/dev/null 2>&1 || missing+=("tool $1 ($2)"); }

# dpkg -x into the prefix (ar + tar where dpkg-deb is absent); absolute symlinks inside the
# packages are turned into links inside the prefix.
unpack_bundle() {
    local deb
    mkdir -p "$prefix"
    for deb in gpu-bundle/*.deb; do
        if command -v dpkg-deb >/dev/null; then
            dpkg-deb -x "$deb" "$prefix" || return 1
        else
            ( cd "$work" && rm -rf deb.x && mkdir deb.x && cd deb.x && ar x "$src/$deb" && tar -xf data.tar.* -C "$prefix" ) \
                || return 1
        fi
    done
    local l t
    while IFS= read -r l; do
        t=$(readlink "$l")
        case $t in /*) ln -sfn "$prefix$t" "$l" ;; esac
    done < <(find "$prefix" -type l)
}

# First non-empty regular file (or link to one) named $1 under the given folders, a few levels down.
find_first() {
    local name=$1 d f
    shift
    for d in "$@"; do
        [ -d "$d" ] || continue
        while IFS= read -r f; do
            [ -f "$f" ] && [ -s "$f" ] && { echo "$f"; return 0; }
        done < <(find -L "$d" -maxdepth 5 -name "$name" 2>/dev/null | sort)
    done
    return 1
}

preflight() {
    need_tool gcc "host compiler"
    need_tool g++ "nvcc's host compiler"
    need_tool ar "static library"
    need_tool timeout "step limits"
    need_tool tar "the log tarball"
    need_tool awk "log checks"
    need_tool find "library search"
    if [ "$dry" != 1 ]; then
        need_tool nvidia-smi "GPU count"
    fi
    if [ "$dry" != 1 ] || [ "$build_dry" = 1 ]; then
        [ -d gpu-bundle ] || missing+=("gpu-bundle/ (run scripts/gpu-bundle.sh here and carry gpu-bundle)")
    fi
    make_bin=""
    make --version >/dev/null 2>&1 && make_bin=$(command -v make)
    pkgconf_bin=""
    mpi_libs=""
    mpi_cflags=""
    nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
    [ -z "$nvcc" ] || "$nvcc" --version >/dev/null 2>&1 || nvcc=""
    [ -n "$nvcc" ] || missing+=("nvcc (CUDA toolkit)")
    cuda_home=${nvcc:+$(dirname "$(dirname "$(readlink -f "$nvcc")")")}
    libdirs=()
    pcdirs=()
    # The plain dry run checks this machine's own packages (fast: make test runs it).
    if { [ "$dry" != 1 ] || [ "$build_dry" = 1 ]; } && ls gpu-bundle/*.deb >/dev/null 2>&1; then
        unpack_bundle || missing+=("gpu-bundle: a package did not unpack")
        local ml=$prefix/usr/lib/x86_64-linux-gnu
        libdirs+=("$ml" "$prefix/lib/x86_64-linux-gnu" "$ml/openblas-pthread")
        pcdirs+=("$ml/pkgconfig" "$ml/openblas-pthread/pkgconfig" "$prefix/usr/share/pkgconfig")
        [ -n "$make_bin" ] || make_bin=$prefix/usr/bin/make
        pkgconf_bin=$prefix/usr/bin/pkgconf
        # Open MPI is relocated with OPAL_PREFIX; used only with more than one GPU.
        if [ -x "$prefix/usr/bin/orterun" ]; then
            mpi_cflags="-I$ml/openmpi/include -I$ml/openmpi/include/openmpi"
            mpi_libs="-L$ml/openmpi/lib -lmpi"
            libdirs+=("$ml/openmpi/lib")
        fi
    fi
    [ -x "${make_bin:-/nonexistent}" ] || missing+=("make (image or gpu-bundle)")
    # pkg-config: the bundle's pkgconf, reading only the bundle's .pc files with the prefix as
    # sysroot; on a machine with its own packages (the dry run here), its pkg-config.
    pc=$work/pkg-config
    if [ -n "$pkgconf_bin" ]; then
        local ld pcl
        ld=$(IFS=:; echo "${libdirs[*]}")
        pcl=$(IFS=:; echo "${pcdirs[*]}")
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 PKG_CONFIG_LIBDIR=%s PKG_CONFIG_SYSROOT_DIR=%s exec %s "$@"\n' \
            "$ld" "$pcl" "$prefix" "$pkgconf_bin" > "$pc"
    else
        printf '#!/bin/sh\nexec pkg-config "$@"\n' > "$pc"
    fi
    chmod +x "$pc"
    local p
    for p in jansson zlib check openblas; do
        "$pc" --exists "$p" 2>/dev/null || missing+=("library $p (pkg-config $p)")
    done
    # NCCL and cuBLAS: the CUDA install, the system, or a pip wheel's nvidia/*/ folders.
    sites=()
    local py
    for py in python3 /opt/torch/.venv/bin/python3; do
        command -v "$py" >/dev/null 2>&1 || continue
        while IFS= read -r p; do [ -d "$p/nvidia" ] && sites+=("$p/nvidia"); done \
            < <("$py" -c 'import sys; print("\n".join(p for p in sys.path if p))' 2>/dev/null)
    done
    for p in ${GPU_CHECK_SITE:-}; do sites+=("$p"); done
    local cl=${cuda_home:+$cuda_home/lib64} ci=${cuda_home:+$cuda_home/include}
    lib_nccl=$(find_first libnccl.so.2 $cl /usr/lib/x86_64-linux-gnu "${sites[@]}") || missing+=("libnccl.so.2 (CUDA or the nvidia-nccl wheel)")
    lib_cublas=$(find_first libcublas.so.13 $cl /usr/lib/x86_64-linux-gnu "${sites[@]}") || missing+=("libcublas.so.13 (CUDA or the nvidia-cublas wheel)")
    nccl_h=$(find_first nccl.h $ci /usr/include "${sites[@]}" gpu-bundle/include) || missing+=("nccl.h (CUDA, the wheel or gpu-bundle/include)")
    cublas_h=$(find_first cublas_v2.h $ci /usr/include "${sites[@]}") || missing+=("cublas_v2.h (CUDA or the nvidia-cublas wheel)")
    [ -z "$cuda_home" ] || [ -e "$cuda_home/lib64/libcudart.so" ] || [ -e "$cuda_home/lib/libcudart.so" ] \
        || missing+=("libcudart.so in $cuda_home/lib64")
    # One folder of headers and one of libraries for the build (NCCL_H's folder is on -I).
    inc=$work/include
    lib=$work/lib
    mkdir -p "$inc" "$lib"
    if [ -n "${nccl_h:-}" ]; then ln -sf "$(readlink -f "$nccl_h")" "$inc/nccl.h"; fi
    if [ -n "${cublas_h:-}" ] && [ "$(dirname "$cublas_h")" != "$ci" ]; then
        for p in "$(dirname "$cublas_h")"/*.h; do ln -sf "$p" "$inc/"; done
    fi
    if [ -n "${lib_nccl:-}" ]; then ln -sf "$(readlink -f "$lib_nccl")" "$lib/libnccl.so"; ln -sf "$(readlink -f "$lib_nccl")" "$lib/libnccl.so.2"; fi
    libdirs=("$lib" ${lib_cublas:+"$(dirname "$lib_cublas")"} ${lib_nccl:+"$(dirname "$lib_nccl")"} ${cl:+"$cl"} "${libdirs[@]}")
    # The binaries built here find these folders through their DT_RPATH (-rpath with
    # --disable-new-dtags: searched for their libraries' own dependencies too, and by dlopen of
    # cuBLAS), so no step's environment carries the bundle's Debian libraries: not the build (the
    # image's gcc, nvcc and ld), not python3 or nvidia-smi. ldd below and the bundle's own tools
    # (pkgconf, mpirun) get them on their command line only.
    rpath=$(IFS=:; echo "${libdirs[*]}")
    ldpath=$rpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # The bundle's libraries load (ldd names any dependency the image lacks).
    if [ -d "$prefix" ] && command -v ldd >/dev/null; then
        local so
        for so in libjansson.so.4 libopenblas.so.0 libsubunit.so.0; do
            p=$(find "$prefix" -name "$so" | head -1)
            [ -n "$p" ] || { missing+=("$so (gpu-bundle)"); continue; }
            LD_LIBRARY_PATH=$ldpath ldd "$p" 2>&1 | awk -v s="$so" '/not found/{print "library " $1 " (needed by " s ")"}' \
                > "$work/ldd.txt"
            while IFS= read -r p; do missing+=("$p"); done < "$work/ldd.txt"
        done
    fi
    ngpu=0
    if [ "$dry" != 1 ] && command -v nvidia-smi >/dev/null; then
        ngpu=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
        [ "$ngpu" -ge 1 ] || missing+=("a visible GPU (nvidia-smi -L lists none)")
    fi
    {
        echo "nvcc: ${nvcc:-missing} (CUDA ${cuda_home:-?})"
        echo "libnccl.so.2: ${lib_nccl:-missing}"
        echo "nccl.h: ${nccl_h:-missing}"
        echo "libcublas.so.13: ${lib_cublas:-missing}"
        echo "cublas_v2.h: ${cublas_h:-missing}"
        echo "make: ${make_bin:-missing}; pkg-config: ${pkgconf_bin:-the system one}"
        echo "GPUs: $ngpu"
        echo "rpath of the built binaries: $rpath"
        echo "LD_LIBRARY_PATH of the steps (the image's own): ${LD_LIBRARY_PATH:-unset}"
    } > "$logs/preflight.log"
    if [ "${#missing[@]}" -gt 0 ]; then
        printf 'missing: %s\n' "${missing[@]}" | tee -a "$logs/preflight.log"
        return 3
    fi
    return 0
}

# ---- steps -----------------------------------------------------------------------------------
# step NAME LIMIT_S FUNCTION: runs FUNCTION (a shell function of this script) in a child bash
# under `timeout`, its output in logs/NAME.log; prints the wall time and, on failure, the
# failing tests' lines and the log's last lines. In a dry run a step whose function is marked
# gpu_only is printed instead of run.
step() {
    local name=$1 limit=$2 fn=$3 t0=$SECONDS rc
    # No step runs past the whole run's deadline (what is left of it, less 15 s to pack the logs).
    local left=$((deadline - (SECONDS - t_start) - 15))
    if [ "$left" -lt 5 ]; then
        failed=1
        say "step $name: FAILED: not run, the run's ${deadline} s deadline is reached"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    if [ "$dry" = 1 ] && [[ " $gpu_only " == *" $fn "* ]] && ! { [ "$build_dry" = 1 ] && [ "$fn" = s_build ]; }; then
        { echo "# $name (needs a GPU; the dry run prints it)"; declare -f "$fn" | sed 1,2d | sed '$d'; } > "$logs/$name.log"
        say "step $name: printed (needs a GPU)"
        return 0
    fi
    timeout -k 10 "$limit" bash -c "$fn" > "$logs/$name.log" 2>&1
    rc=$?
    local dt=$((SECONDS - t0))
    if [ $rc = 0 ]; then
        say "step $name: passed in ${dt} s"
    else
        failed=1
        [ $rc = 124 ] && say "step $name: FAILED: ran past its ${limit} s limit (after ${dt} s)" \
                      || say "step $name: FAILED (exit $rc) in ${dt} s"
        # Check's failure lines (file:line:F|E:tcase:test:message), then the log's end.
        grep -E '^[^ ]+:[0-9]+:[EF]:' "$logs/$name.log" | head -20 | sed 's/^/  | /'
        echo "  | ... last lines of logs/$name.log:"
        tail -n 25 "$logs/$name.log" | sed 's/^/  | /'
    fi
    return 0
}

# The functions run in a child bash: everything they use is exported.
export_env() {
    export RATIOLAB_SRC=$src DRY=$dry LOGS=$logs OUTDIR=$out RPATH_=$rpath
    if [ "$build_dry" = 1 ]; then
        export RATIOLAB_BIN=$src/build-gpu/ratiolab RATIOLAB_BUILD=$src/build-gpu
        export BE=cpu EX="--scale 1000 --sub-group-size 1e8 --warmup 0 --steps 1"
    elif [ "$dry" = 1 ]; then
        export RATIOLAB_BIN=${RATIOLAB_BIN:-$src/build/ratiolab} RATIOLAB_BUILD=${RATIOLAB_BUILD:-$src/build}
        export BE=cpu EX="--scale 1000 --sub-group-size 1e8 --warmup 0 --steps 1"
    else
        export RATIOLAB_BIN=$src/build-gpu/ratiolab RATIOLAB_BUILD=$src/build-gpu
        export BE=cuda EX="--scale 64 --warmup 1 --steps 2"
        if [ "$ngpu" -gt 1 ]; then
            # The bundle's Open MPI, relocated with OPAL_PREFIX; its libraries on mpirun's own path.
            mkdir -p "$work/bin"
            printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$ldpath" "$prefix/usr/bin/mpirun" > "$work/bin/mpirun"
            chmod +x "$work/bin/mpirun"
            export OPAL_PREFIX=$prefix/usr PATH=$work/bin:$PATH
        fi
    fi
    # validate's runs: gpt-2.7b shrunk 16 x (166 M host elements at ratio 1), one rank.
    export VAL="--scale 16 --seq-len 512 --ratios 0,0.5,1 --ranks 1"
    export B=$RATIOLAB_BIN BD=$RATIOLAB_BUILD NGPU=$ngpu
    export -f s_build s_kernels s_executor s_nccl1 s_gpu_exec s_bench_adam s_bench_exec s_bench_scan s_monitor s_validate
    export -f digest_of suite skip_expected keep_report
}

gpu_only="s_build s_bench_adam s_bench_exec s_bench_scan s_monitor s_validate"

s_build() {
    set -e
    local mpi=(MPICC=)
    [ "$NGPU" -gt 1 ] && [ -n "$MPI_LIBS_" ] && mpi=(MPICC= "MPI_CFLAGS=$MPI_CFLAGS_" "MPI_LIBS=$MPI_LIBS_")
    echo "compilers: $(gcc --version | head -1); $(g++ --version | head -1); nvcc $("$NVCC_" --version | grep -o 'release [0-9.]*')"
    # WERROR= : a warning of the image's compiler is logged and counted, not fatal.
    "$MAKE_" -j"$(nproc)" RL_INNER=1 BUILD=build-gpu WERROR= PKG_CONFIG="$PC_" NVCC="$NVCC_" NCCL_H="$INC_/nccl.h" \
        NCCL_LIBDIR="$LIB_" NVCC_ARCH="-gencode arch=compute_90,code=sm_90" \
        EXTRA_LDFLAGS="-Wl,--disable-new-dtags,-rpath,$RPATH_" "${mpi[@]}" \
        build-gpu/ratiolab build-gpu/tests/run_tests build-gpu/bench/adam build-gpu/bench/exec build-gpu/bench/scan \
        build-gpu/tests/progs/gpuhog build-gpu/tests/progs/memhog
    # Every library of the binaries resolves through their rpath, with the steps' environment.
    local b
    for b in build-gpu/ratiolab build-gpu/tests/run_tests build-gpu/bench/exec; do
        if ldd "$b" | grep 'not found'; then
            echo "build: $b has libraries its rpath does not find"
            exit 1
        fi
    done
}

digest_of() { awk '/^digest /{print $2}' "$1"; }

s_kernels() { suite gpu_kernels 100; }

# The executor: ratios x schedules, two later releases' deepspeed step, deep prefetch, fp16
# reduction; every digest the reference's.
s_executor() {
    set -e
    "$B" run $EX --reference --hash > "$LOGS/ref.txt"
    local ref n
    ref=$(digest_of "$LOGS/ref.txt")
    [ -n "$ref" ]
    echo "reference digest $ref"
    "$B" run $EX --backend $BE --ratios 0,0.5,1 --policies exact --schedules overlap,deepspeed-0.12 | tee "$LOGS/matrix.txt"
    n=$(grep -c " digest $ref\$" "$LOGS/matrix.txt" || true)
    [ "$n" = 6 ] || { echo "executor: $n of 6 runs give the reference digest $ref"; exit 1; }
    # The deepspeed schedule of the releases whose gradient copy differs (exec/step_ds.c): the fp32
    # upcast through pinned staging (0.15.4) and its non-blocking D2H (0.19.5).
    local v
    for v in 0.15.4 0.19.5; do
        "$B" run $EX --ratio 0.5 --backend $BE --policy exact --schedule deepspeed --deepspeed-version $v --hash \
            | tee "$LOGS/ds-$v.txt"
        [ "$(digest_of "$LOGS/ds-$v.txt")" = "$ref" ] || { echo "executor: deepspeed $v's step differs"; exit 1; }
    done
    "$B" run $EX --ratio 0.5 --backend $BE --comm-dtype fp16 --hash | tee "$LOGS/fp16.txt"
    [ "$(digest_of "$LOGS/fp16.txt")" = "$ref" ] || { echo "executor: --comm-dtype fp16 differs"; exit 1; }
    printf '{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1e9, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}, "fp16": {"enabled": true}}\n' \
        > "$LOGS/prefetch.json"
    "$B" run $EX --backend $BE --ds-config "$LOGS/prefetch.json" --hash | tee "$LOGS/prefetch.txt"
    [ "$(digest_of "$LOGS/prefetch.txt")" = "$ref" ] && grep -q '^prefetch ' "$LOGS/prefetch.txt" \
        || { echo "executor: deep prefetch differs or reports no depth"; exit 1; }
    "$B" run $EX --ratio 0.5 --backend $BE --json > "$LOGS/run.json"
    local ph
    for ph in gpu_adam grad_d2h param_h2d; do
        grep -A1 "\"$ph\": {" "$LOGS/run.json" | grep -Eq '"busy_ns": [1-9]' \
            || { echo "executor: phase $ph has no busy time"; exit 1; }
    done
    echo "executor: 6 + 2 + 2 runs give the reference digest $ref; busy times present"
}

# One run through a 1-rank NCCL communicator: its reduce-scatters and all-gathers go through
# NCCL; the digest is the reference's (the executor step covers the other paths).
s_nccl1() {
    set -e
    "$B" run $EX --reference --hash > "$LOGS/ref1.txt"
    local ref
    ref=$(digest_of "$LOGS/ref1.txt")
    [ -n "$ref" ]
    RATIOLAB_NCCL_ONE_RANK=1 "$B" run $EX --ratio 0.5 --backend $BE --json > "$LOGS/nccl1.json"
    grep -q "\"digest\": \"$ref\"" "$LOGS/nccl1.json" || { echo "nccl1: the digest is not the reference's $ref"; exit 1; }
    # The all-gathers' busy time (CUDA events on the communication stream), reported, not gated:
    # a 1-rank in-place gather moves nothing.
    grep -A1 '"allgather": {' "$LOGS/nccl1.json" | head -2
    echo "nccl1: the reference digest $ref through NCCL"
}

s_gpu_exec() { suite gpu_exec 170; }

s_bench_adam() { "$BD/bench/adam" --gpu; }

s_bench_exec() { "$BD/bench/exec" --gpu; }

# The overflow scan of the host share against the host's read bandwidth (no GPU used).
s_bench_scan() { "$BD/bench/scan"; }

# keep_report DIR NAME: DIR's report.md and report.json into $OUTDIR as report-NAME.*, and the
# rows of its run table (ratio, schedule, policy, honored, digest, predicted and measured ms, step
# error %, others' CPU %) on stdout.
keep_report() {
    cp "$1/report.md" "$OUTDIR/report-$2.md" && cp "$1/report.json" "$OUTDIR/report-$2.json" || return 1
    grep -E '^\| [0-9.]+ \| [a-z0-9.-]+ \| [a-z0-9.-]+ \| [0-9.]+ \| [0-9a-f]{8} \| ' "$1/report.md" | sed "s/^/$2: /"
}

# validate with the one calibration of this machine (calibrate --backend cuda over the catalog's
# hgx-h200, at the runs' GEMM shapes): the runs predicted with it, and the same measurements
# predicted with the catalog's hgx-h200 (--also-hw), so one run says how far the catalog profile is
# from the machine. The time gate is reported, not gated: the step-time error is what this run
# measures. Exit 1 only for a gated check (bitwise, honored ratio, memory), after the reports are kept.
s_validate() {
    local rc=0 d=$LOGS/validate
    "$B" validate --backend cuda --calibrate --hw hgx-h200 --also-hw hgx-h200 $VAL --out "$d" || rc=$?
    cp "$d/hw-calibrated.json" "$OUTDIR/hgx-h200-measured.json" || return 1
    keep_report "$d" measured || return 1
    keep_report "$d/also" catalog || return 1
    "$B" predict --hw "$OUTDIR/hgx-h200-measured.json" --model llama2-7b --ratio 0.3 > "$LOGS/predict-measured.txt" \
        || { echo "predict cannot read the measured profile"; return 1; }
    return $rc
}

s_monitor() {
    CK_RUN_SUITE=monitor CK_RUN_CASE=monitor "$BD/tests/run_tests" | tee "$LOGS/monitor.txt"
    ! grep -q 'skipped: no GPU' "$LOGS/monitor.txt"
}

# ---- main ------------------------------------------------------------------------------------
say "gpu-check: $( [ "$dry" = 1 ] && echo "DRY RUN on the cpu backend (no GPU used)" || echo "on $(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)")"
t0=$SECONDS
if ! timeout 60 true; then echo "gpu-check: timeout does not run"; exit 3; fi
preflight
rc=$?
say "step preflight: $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0)) s"
if [ $rc != 0 ]; then
    sed 's/^/  | /' "$logs/preflight.log"
    say "gpu-check: FAILED (preflight: something is missing; nothing was built or run)"
    exit 3
fi
export MAKE_=$make_bin PC_=$pc NVCC_=${nvcc:-} INC_=$inc LIB_=$lib MPI_LIBS_=$mpi_libs MPI_CFLAGS_=$mpi_cflags
export_env
step build "${GPU_CHECK_BUILD_S:-180}" s_build
if grep -q '^compilers: ' "$logs/build.log" 2>/dev/null; then
    say "build: $(grep -m1 '^compilers: ' "$logs/build.log" | cut -d' ' -f2-); $(grep -c 'warning:' "$logs/build.log") compiler warnings (logs/build.log)"
fi
if { [ "$dry" != 1 ] || [ "$build_dry" = 1 ]; } && ! grep -q '^step build: passed' "$summary"; then
    say "gpu-check: FAILED (the build failed; nothing was run)"
    exit 3
fi
step kernels 100 s_kernels
step executor 100 s_executor
step nccl1 40 s_nccl1
step gpu_exec 150 s_gpu_exec
step validate 200 s_validate
step monitor 40 s_monitor
step bench_adam 60 s_bench_adam
step bench_exec 90 s_bench_exec
step bench_scan 30 s_bench_scan
[ -f "$logs/validate.log" ] && grep -E '^(measured|catalog): \| ' "$logs/validate.log" | sed 's/^/  /' | tee -a "$summary"
if [ "$dry" != 1 ] && [ "$ngpu" -lt 2 ]; then
    not_exercised=("reduce-scatter sums over 2+ ranks (fp32, bf16, fp16)" "the unique id's broadcast over MPI"
                   "rank > 0 offsets of the in-place collectives" "GPU-to-GPU transports (NVLink, P2P, SHM)"
                   "NCCL calibration (calibrate under mpirun)" "a peer's asynchronous NCCL error")
    say "NCCL paths not exercised (one GPU: a 1-rank communicator only): $(IFS=';'; echo "${not_exercised[*]}")"
fi
total=$((SECONDS - t_start))
budget=${GPU_CHECK_BUDGET_S:-360}
if [ "$dry" != 1 ] && [ "$total" -gt "$budget" ]; then   # reported; the verdict is on the checks
    say "gpu-check: OVER BUDGET: the run took ${total} s, the budget is ${budget} s (a second try must fit the lease)"
fi
[ "$dry" = 1 ] && cp "$summary" "$logs/" 2>/dev/null
say "gpu-check: $([ $failed = 0 ] && echo passed || echo FAILED) in ${total} s (logs: $out/gpu-check-logs.tar.gz)"
exit $failed
