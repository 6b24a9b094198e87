#!/usr/bin/env bash
# scripts/mutate.sh — mutation score of the test suite (`make mutate`).
#
# Each tests/mutants/*.mut file describes one small, realistic bug in the library: the file, an
# exact original snippet (it must occur exactly once in that file) and its replacement, the suites
# that should notice, and a one-line reason. The script copies the source tree to a scratch
# directory, builds it once, checks that the chosen suites pass there, then for each mutant:
# applies it, rebuilds, runs the suites (CK_RUN_SUITE), and restores the file. A mutant is
#   killed      some suite failed (or the test binary crashed / timed out),
#   survived    every suite passed: a gap in the tests, named in the summary,
#   equivalent  marked `equivalent:` in its file (no observable change; listed, not scored),
#   stale       its snippet is not found exactly once (the library moved on; fix the mutant),
#   unbuildable the mutated tree does not compile (fix the mutant).
# Stale and unbuildable mutants count against the set: the score is killed / (all - equivalent).
#
# The score is printed twice: with every test, and with the golden prediction table excluded
# (CK_EXCLUDE_TAGS=golden), so that it shows what independently derived expected values catch.
#
# Usage: scripts/mutate.sh [--check] [mutant-file-or-name ...]   (default: every tests/mutants/*.mut)
#        --check only reports stale mutants, without building or testing.
# Environment: MUTATE_JOBS (make -j, default 2), MUTATE_KEEP=1 keeps the scratch directory,
#              MUTATE_TIMEOUT seconds per suite run (default 600), MUTATE_LONG=0 runs the loop tests
#              in their `make test` length (default 1: RL_TEST_LONG=1, their full `make test-long` length).
#
# Mutant file format (see tests/mutants/README.md):
#   reason: <one line: the bug this stands for>
#   file: <path from the repository root>
#   suites: <suite names, space separated; suite:case runs one test case (CK_RUN_CASE)>
#   equivalent: <why no test can tell>           (optional)
#   @@ original
#   <exact text: whole lines or part of one; the newline before "@@ replacement" is not part of it>
#   @@ replacement
#   <text put in its place>
#   @@ end
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${MUTATE_JOBS:-2}
per_run_timeout=${MUTATE_TIMEOUT:-600}

check_only=0
if [ "${1:-}" = --check ]; then check_only=1; shift; fi

mutants=()
if [ $# -gt 0 ]; then
    for m in "$@"; do
        if [ -f "$m" ]; then mutants+=("$(cd "$(dirname "$m")" && pwd)/$(basename "$m")")
        elif [ -f "$root/tests/mutants/$m" ]; then mutants+=("$root/tests/mutants/$m")
        elif [ -f "$root/tests/mutants/$m.mut" ]; then mutants+=("$root/tests/mutants/$m.mut")
        else echo "mutate: $m: no such mutant (tests/mutants/*.mut)" >&2; exit 2; fi
    done
else
    for m in "$root"/tests/mutants/*.mut; do mutants+=("$m"); done
fi
[ ${#mutants[@]} -gt 0 ] || { echo "mutate: no mutants in tests/mutants/" >&2; exit 2; }

# ---- scratch copy of the working tree (tracked and untracked, not ignored) --------------------
scratch=$(mktemp -d /tmp/ratiolab-mutate-XXXXXX)
if [ "${MUTATE_KEEP:-0}" != 1 ]; then trap 'rm -rf "$scratch"' EXIT; fi
src=$scratch/src
mkdir -p "$src"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - --ignore-failed-read 2>/dev/null) | tar xf - -C "$src" ||
    { echo "mutate: could not copy the source tree" >&2; exit 3; }
# The build tree, when there is one, saves a full rebuild (timestamps are kept).
if [ "$check_only" = 0 ] && [ -d "$root/build" ]; then cp -a "$root/build" "$src/build"; fi
# Tests read ../shared (DeepSpeed example configs) beside the repository.
if [ -d "$root/../shared" ]; then ln -s "$(cd "$root/../shared" && pwd)" "$scratch/shared"; fi

progs=$(cd "$src" && for p in tests/progs/*.c; do [ -f "$p" ] && echo "build/tests/progs/$(basename "$p" .c)"; done)
build() {
    (cd "$src" && make --no-print-directory RL_INNER=1 RL_FEATURES_SHOWN=1 -j"$jobs" \
        build/ratiolab build/tests/run_tests $progs) >"$scratch/build.log" 2>&1
}

# Runs one suite, or one test case of it as suite:case; $2: extra environment (e.g.
# CK_EXCLUDE_TAGS=golden). Fails when a test fails, the binary crashes or it runs too long.
run_suite() {
    local suite=${1%%:*} case=
    [ "$suite" != "$1" ] && case=${1#*:}
    (cd "$src" && env CK_RUN_SUITE="$suite" ${case:+CK_RUN_CASE="$case"} $2 RATIOLAB_BIN="$src/build/ratiolab" \
        RATIOLAB_SRC="$src" RATIOLAB_BUILD="$src/build" RL_TEST_LONG="${MUTATE_LONG:-1}" CK_SLOWEST=0 \
        timeout "$per_run_timeout" build/tests/run_tests) \
        >"$scratch/run.log" 2>&1
}

field() { sed -n "s/^$1:[[:space:]]*//p" "$2" | head -n 1; }

# Applies mutant $1 to the scratch tree; prints "ok", "stale <why>".
apply() {
    perl -e '
        my ($mut, $target) = @ARGV;
        open my $m, "<", $mut or die; local $/; my $t = <$m>; close $m;
        my ($orig, $repl) = $t =~ /^\@\@ original\n(.*?)\n^\@\@ replacement\n(.*?)\n^\@\@ end\s*$/ms
            or do { print "stale: no \@\@ original / \@\@ replacement / \@\@ end blocks\n"; exit 0 };
        open my $f, "<", $target or do { print "stale: no file $target\n"; exit 0 };
        my $s = <$f>; close $f;
        my $n = () = $s =~ /\Q$orig\E/g;
        if ($n != 1) { print "stale: original snippet found $n times\n"; exit 0 }
        my $i = index($s, $orig);
        substr($s, $i, length $orig) = $repl;
        open $f, ">", $target or die; print $f $s; close $f;
        print "ok\n";
    ' "$1" "$2"
}

# --check: only report stale mutants (no build, no tests).
if [ "$check_only" = 1 ]; then
    n_stale=0
    for m in "${mutants[@]}"; do
        res=$(apply "$m" "$src/$(field file "$m")")
        cp -p "$root/$(field file "$m")" "$src/$(field file "$m")" 2>/dev/null
        if [ "$res" != ok ]; then n_stale=$((n_stale + 1)); echo "$(basename "$m" .mut): $res"; fi
    done
    echo "mutate --check: ${#mutants[@]} mutants, $n_stale stale"
    [ "$n_stale" -eq 0 ]; exit
fi

echo "mutate: scratch tree $scratch (building)"
build || { echo "mutate: the unmutated tree does not build; see $scratch/build.log" >&2; tail -20 "$scratch/build.log" >&2; exit 3; }

# Baseline: every suite named by a mutant must pass on the unmutated tree.
all_suites=$(for m in "${mutants[@]}"; do field suites "$m"; done | tr ' ' '\n' | sed '/^$/d' | sort -u)
for s in $all_suites; do
    if ! run_suite "$s" ""; then
        echo "mutate: suite $s fails on the unmutated tree; fix that first:" >&2
        grep -v ':P:' "$scratch/run.log" | tail -20 >&2
        exit 1
    fi
done
echo "mutate: baseline passes ($(echo $all_suites | wc -w) suites: $(echo $all_suites))"

total=0 killed=0 killed_ng=0 equivalent=0 stale=0 unbuildable=0
survivors=() survivors_ng=() equivalents=() stales=()
for m in "${mutants[@]}"; do
    name=$(basename "$m" .mut)
    file=$(field file "$m")
    suites=$(field suites "$m")
    reason=$(field reason "$m")
    equiv=$(field equivalent "$m")
    if [ -n "$equiv" ]; then
        equivalent=$((equivalent + 1))
        equivalents+=("$name: $equiv")
        printf '%-48s equivalent (%s)\n' "$name" "$equiv"
        continue
    fi
    total=$((total + 1))
    target=$src/$file
    cp -p "$target" "$scratch/orig" 2>/dev/null || true
    res=$(apply "$m" "$target")
    if [ "$res" != ok ]; then
        stale=$((stale + 1))
        stales+=("$name: $res")
        printf '%-48s STALE %s\n' "$name" "$res"
        continue
    fi
    verdict= verdict_ng=
    if ! build; then
        unbuildable=$((unbuildable + 1))
        stales+=("$name: does not build ($(grep -m1 'error' "$scratch/build.log"))")
        verdict="UNBUILDABLE"
    else
        # Without the golden table first; the full run (golden included) only when that passed.
        by= by_ng=
        for s in $suites; do
            if ! run_suite "$s" "CK_EXCLUDE_TAGS=golden"; then by_ng=" $s"; by=" $s"; break; fi
        done
        if [ -z "$by_ng" ]; then
            for s in $suites; do
                if ! run_suite "$s" ""; then by=" $s (golden table)"; break; fi
            done
        fi
        if [ -n "$by" ]; then killed=$((killed + 1)); verdict="killed by$by"
        else survivors+=("$name ($file): $reason"); verdict="SURVIVED"; fi
        if [ -n "$by_ng" ]; then killed_ng=$((killed_ng + 1)); verdict_ng="killed by$by_ng"
        else survivors_ng+=("$name ($file): $reason"); verdict_ng="SURVIVED"; fi
    fi
    cp -p "$scratch/orig" "$target"
    touch "$target"
    printf '%-48s %s | without golden: %s\n' "$name" "$verdict" "${verdict_ng:--}"
done
# Leave the scratch build matching the sources (not needed after, but keeps MUTATE_KEEP trees sane).
build || true

pct() { [ "$2" -gt 0 ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }' || echo 0; }
echo
echo "== mutation score =="
echo "mutants: ${#mutants[@]} ($equivalent equivalent, not scored; $stale stale; $unbuildable unbuildable)"
echo "all tests:          $killed/$total killed ($(pct $killed $total) %)"
echo "without golden:     $killed_ng/$total killed ($(pct $killed_ng $total) %)"
for s in "${survivors[@]+"${survivors[@]}"}"; do echo "survivor: $s"; done
for s in "${survivors_ng[@]+"${survivors_ng[@]}"}"; do echo "survivor without golden: $s"; done
for s in "${stales[@]+"${stales[@]}"}"; do echo "stale: $s"; done
for s in "${equivalents[@]+"${equivalents[@]}"}"; do echo "equivalent: $s"; done
[ "$stale" -eq 0 ] && [ "$unbuildable" -eq 0 ] && [ $((killed_ng * 10)) -ge $((total * 9)) ]
