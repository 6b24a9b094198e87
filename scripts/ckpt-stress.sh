#!/usr/bin/env bash
# scripts/ckpt-stress.sh [BIN] [PAIRS] — two `ratiolab run --save D` into one folder at once, PAIRS
# times (default 20), with and without a kill -9 (issue 35 item 2; tests/check_hardening.c runs a
# bounded form of it in make test). BIN defaults to build/ratiolab; RL_SEED fixes the kill delays.
#
# Pair i runs mode i mod 4, A and B started together:
#   plain      A and B one rank each
#   mpi        A on 2 ranks (mpirun -np 2, rank 0 holds the lock across the save), B one rank
#   kill-lock  A on 2 ranks; as soon as its rank 0 holds the lock (its note names it), B (one
#              rank) starts and A's rank 0 is killed (kill -9): mpirun ends A's other rank, and
#              B saves over A's debris (or finds the lock still held)
#   kill-late  A and B one rank each; one of them (B, then A, in turn) is killed (kill -9) after a
#              random 0..199 ms
# Before every pair a link D/gen-00000000 -> OUTSIDE (a folder beside D holding a rank file) is
# made. After every pair: each save exited 0, 3 (another save held the folder; its message says
# so) or was the one killed; D loads, and one more step from it gives the reference digest of the
# iterations its manifest names plus one (a whole save: the old one or a new one); OUTSIDE and
# its file are intact. Prints one line per pair and a total; exit 1 when any pair failed.
set -u
bin=${1:-build/ratiolab}
pairs=${2:-20}
seed=${RL_SEED:-$(date +%s)}
echo "ckpt-stress: $pairs pairs, seed $seed (RL_SEED=$seed to replay), binary $bin"
RANDOM=$seed
bin=$(realpath "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/rl-ckpt-stress.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
small="--backend cpu --scale 10000 --sub-group-size 1e8 --warmup 0"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_2="timeout 120 mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np 2"

declare -A ref
for k in 2 3 4 5; do
    ref[$k]=$("$bin" run $small --reference --steps $k | sed -n 's/^digest //p')
done
"$bin" run $small --steps 4 --save D >/dev/null || { echo "the first save failed"; exit 2; }
mkdir OUTSIDE && echo keep > OUTSIDE/rank-00000.rlck

bad=0
for ((i = 0; i < pairs; i++)); do
    mode=$(( i % 4 ))
    ln -sfn "$work/OUTSIDE" D/gen-00000000
    sa=$(( 1 + RANDOM % 3 )) sb=$(( 1 + RANDOM % 3 ))
    case $mode in
    0) name=plain;     ca="$bin run $small --steps $sa --save D";            cb="$bin run $small --steps $sb --save D" ;;
    1) name=mpi;       ca="$mpirun_2 $bin run $small --steps $sa --save D";  cb="$bin run $small --steps $sb --save D" ;;
    2) name=kill-lock; ca="$mpirun_2 $bin run $small --steps $sa --save D";  cb="$bin run $small --steps $sb --save D" ;;
    3) name=kill-late; ca="$bin run $small --steps $sa --save D";            cb="$bin run $small --steps $sb --save D" ;;
    esac
    before=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' D/.ratiolab.lock 2>/dev/null)
    { $ca > a.out 2> a.err & } 2>/dev/null; a=$!
    holder=""
    if [ $mode = 2 ]; then
        for _ in $(seq 10000); do
            holder=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' D/.ratiolab.lock 2>/dev/null)
            [ -n "$holder" ] && [ "$holder" != "$before" ] && break
            holder=""
            kill -0 $a 2>/dev/null || break
            sleep 0.002
        done
    fi
    { $cb > b.out 2> b.err & } 2>/dev/null; b=$!
    killed=""
    if [ -n "$holder" ]; then
        kill -9 "$holder" 2>/dev/null && killed="A's rank 0 (pid $holder) holding the lock"
    elif [ $mode = 3 ]; then
        sleep "0.$(printf %03d $(( RANDOM % 200 )))"
        if [ $(( i / 4 % 2 )) = 0 ]; then victim=$b v=B; else victim=$a v=A; fi
        kill -9 $victim 2>/dev/null && killed=$v
    fi
    wait $a 2>/dev/null; ra=$?
    wait $b 2>/dev/null; rb=$?
    why=""
    for x in "A $ra a.err" "B $rb b.err"; do
        set -- $x
        case $2 in
        0) ;;
        3) grep -q "another ratiolab is writing there" "$3" || why+=" $1 exit 3 without the lock message: $(cat "$3");" ;;
        *) [ -n "$killed" ] || why+=" $1 exit $2: $(tail -1 "$3");" ;;
        esac
    done
    n=$(sed -n 's/^iterations //p' D/CHECKPOINT)
    got=$("$bin" run $small --steps 1 --load D --hash 2> load.err | sed -n 's/^digest //p')
    if [ -z "$n" ] || [ -z "${ref[$((n + 1))]:-}" ] || [ "$got" != "${ref[$((n + 1))]}" ]; then
        why+=" D: iterations '$n', digest '$got' (expected ${ref[$((n + 1))]:-?}): $(cat load.err);"
    fi
    [ "$(cat OUTSIDE/rank-00000.rlck 2>/dev/null)" = keep ] || why+=" OUTSIDE/rank-00000.rlck gone;"
    if [ -n "$why" ]; then bad=$((bad + 1)); status="FAIL:$why"; else status=ok; fi
    printf 'pair %2d %-9s A %d steps exit %3d, B %d steps exit %3d%s; D iteration %s digest %s: %s\n' \
        "$i" "$name" "$sa" "$ra" "$sb" "$rb" "${killed:+, killed $killed}" "${n:-?}" "${got:-?}" "$status"
done
echo "ckpt-stress: $pairs pairs, $((pairs - bad)) ok, $bad failed (seed $seed)"
[ $bad = 0 ]
