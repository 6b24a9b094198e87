#!/usr/bin/env bash
# scripts/fuzz.sh BUILD_DIR SECONDS TARGET... — runs each libFuzzer target (built by `make fuzz`)
# for SECONDS, one after the other on one core, starting from its corpus (kept in
# BUILD_DIR/corpus/<target> between runs) and the seeds: tests/fuzz/seeds/<target>,
# tests/fuzz/regressions/<target>, and per target the catalog and the shared example configs.
# A finding (crash, sanitizer report, leak, timeout, out-of-memory) is copied to
# tests/fuzz/regressions/<target>/ so `make test` replays it; the script then exits 1.
# Prints one line per target: executions, corpus size, findings.
set -u
# Targets that read a path get their input through a file (tests/fuzz_targets.c): keep it in memory.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
build=$1 secs=$2
shift 2
found=0
for t in "$@"; do
    bin=$build/fuzz_$t
    corpus=$build/corpus/$t
    art=$build/findings/$t
    mkdir -p "$corpus" "$art" "tests/fuzz/regressions/$t"
    seeds=(tests/fuzz/seeds/$t tests/fuzz/regressions/$t)
    case $t in
    ds_config)  for d in shared/examples ../shared/examples; do [ -d "$d" ] && seeds+=("$d"); done ;;
    hf_config)  seeds+=(catalog/models) ;;
    hw_profile) seeds+=(catalog/hardware) ;;
    esac
    existing=()
    for d in "${seeds[@]}"; do [ -d "$d" ] && existing+=("$d"); done
    log=$build/fuzz_$t.log
    "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" "${existing[@]}" >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    units=$(ls "$corpus" | wc -l)
    n=0
    for f in "$art"/*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        cp "$f" "tests/fuzz/regressions/$t/$(basename "$f")"
    done
    printf '%-14s %4ss  executions %-10s corpus %-6s findings %d%s\n' "$t" "$secs" "${execs:-?}" "$units" "$n" \
        "$( [ $n -gt 0 ] && echo "  (copied to tests/fuzz/regressions/$t/; log $log)")"
    if [ $n -gt 0 ] || { [ $rc -ne 0 ] && [ -z "$execs" ]; }; then
        found=1
        [ $n -eq 0 ] && echo "  $t: libFuzzer exited $rc without stats; see $log"
    fi
    rm -f "$art"/*
done
exit $found
