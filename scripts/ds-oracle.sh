#!/usr/bin/env bash
# scripts/ds-oracle.sh — `make ds-oracle`: real DeepSpeed on this machine's CPU, held against the plan.
#
# For each DeepSpeed release (DS_RELEASES, default the six pinned: 0.14.1, the oldest that runs on
# the CPU accelerator, the last patch of 0.15-0.18, and 0.19.8) and each rank count (1, 2 and 3):
# one `torchrun` launch of scripts/ds_oracle.py runs that launch's cells inside its processes
# (scripts/ds_oracle_cells.py: the full matrix for DS_ORACLE_FULL's releases at 1 and 2 ranks,
# the short set elsewhere), each cell with ratiolab_probe attached and audited at step 3. Then
# `ratiolab validate --probe` (with `--audit`, once per rank's audit file) on every cell, the
# trimmed probes recorded into tests/deepspeed/observed/ and the trimmed audits of the short
# set into tests/deepspeed/audit/cells/ (what `make test` checks without any of this), the
# example files refreshed, and `git diff --stat` of tests/deepspeed shown.
#
# Environment: DS_RELEASES (or its older name DS_ORACLE_VERSIONS; DS_RELEASES wins), DS_ORACLE_RANKS
# ("1 2 3"), DS_ORACLE_FULL ("0.14.1 0.19.8": the releases whose 1- and 2-rank launches run the
# full matrix), DS_ORACLE_JOBS (2: releases run side by side; each runs its launches side by side),
# DS_ORACLE_RATIOS ("0 0.3 0.5 0.8 1"), DS_ORACLE_STOCK_RATIOS (the ratios of the stock-mode cells,
# default the same), DS_ORACLE_SGS ("n1 n2 n8": sub-groups per param group), DS_ORACLE_MODES
# ("stock split"), DS_ORACLE_LAYOUTS ("flat hf"), DS_ORACLE_MODELS ("gpt2-tiny.json
# llama-tiny.json"), DS_ORACLE_DIR (build-ds: the venvs, overlays and the JIT cache),
# DS_ORACLE_RUNS (DIR/oracle: the runs), DS_ORACLE_WHEELS (unset: a folder that keeps the wheels
# pip downloads; scripts/ds-oracle-venv.sh), DS_ORACLE_PORT (29500: the launches' master ports
# start there), RATIOLAB_BIN (build/ratiolab), DS_ORACLE_BUILD (a command that builds RATIOLAB_BIN,
# run while the venvs are made: `make ds-oracle` passes its own build of build/ratiolab, so a
# fresh clone compiles while pip downloads). DeepSpeed 0.14.1's CPU accelerator runs `numactl`:
# it must be on PATH (Debian package numactl).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=${DS_ORACLE_DIR:-$root/build-ds}
bin=${RATIOLAB_BIN:-$root/build/ratiolab}
versions=${DS_RELEASES:-${DS_ORACLE_VERSIONS:-"0.14.1 0.15.4 0.16.9 0.17.6 0.18.9 0.19.8"}}
ranks=${DS_ORACLE_RANKS:-"1 2 3"}
full=${DS_ORACLE_FULL:-"0.14.1 0.19.8"}
jobs=${DS_ORACLE_JOBS:-2}
runs=${DS_ORACLE_RUNS:-$dir/oracle}
command -v numactl > /dev/null || case " $versions " in *" 0.14."*)
    echo "ds-oracle: numactl is not on PATH; DeepSpeed 0.14's CPU accelerator runs it (apt-get install numactl)" >&2
    exit 2 ;; esac
port=${DS_ORACLE_PORT:-29500}
t0=$(date +%s)

# DS_ORACLE_RECORD_ONLY=1: no launches; validate and record the runs already in $runs (after a
# change to validate or to the recording).
record_only=${DS_ORACLE_RECORD_ONLY:-}
[ -n "$record_only" ] || rm -rf "$runs"
mkdir -p "$runs"
build_pid=""
if [ -n "${DS_ORACLE_BUILD:-}" ]; then
    (t=$(date +%s); rc=0; $DS_ORACLE_BUILD > "$runs/build.log" 2>&1 || rc=$?
     printf 'all\tbuild ratiolab\t%s\n' "$(( $(date +%s) - t ))" >> "$runs/build-time.tsv"; exit $rc) &
    build_pid=$!
else
    [ -x "$bin" ] || { echo "ds-oracle: $bin: not built (make build/ratiolab)" >&2; exit 2; }
fi


# One chain per release, the chains side by side: its venv (made or reused), then its launches (1
# and 2 ranks side by side: the 1-rank launch keeps a core busy while the 2-rank one waits in its
# collectives), then the example launch. The first launch of a release builds DeepSpeed's CPU Adam
# (and on 0.19 its shm op) into $dir/ext-<version>, torch's JIT cache: the other launch waits for
# that build (torch's lock file) and every later run loads it. Each part's wall seconds go to
# $runs/timings.tsv.
timings=$runs/timings.tsv
: > "$timings"
stamp() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$timings"; }

launch() {  # launch VERSION PYTHON NRANKS CELLS OUTDIR LOG PORT
    local v=$1 py=$2 n=$3 cells=$4 out=$5 log=$6 p=$7 t rc=0
    mkdir -p "$out"
    t=$(date +%s.%N)
    # One OpenMP/torch thread per rank: the ranks share the machine's cores.
    DS_ORACLE_LAUNCH_T0=$t DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 TORCH_EXTENSIONS_DIR="$dir/ext-$v" \
        "$py" -m torch.distributed.run --nproc_per_node "$n" --master_port "$p" \
        scripts/ds_oracle.py --cells "$cells" --out "$out" > "$log" 2>&1 || rc=$?
    stamp "$v" "launch $(basename "$out") ($n rank(s))" "$(python3 -c 'import sys,time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$t")"
    return $rc
}

chain() {  # chain VERSION INDEX: one release, start to end
    local v=$1 k=$2 py t n pids="" rc=0 pid
    t=$(date +%s)
    py=$(scripts/ds-oracle-venv.sh "$v" "$dir" 2> "$runs/venv-$v.log" | tail -1) \
        || { echo "ds-oracle: DeepSpeed $v: venv failed (see $runs/venv-$v.log)" >&2; return 1; }
    stamp "$v" venv "$(( $(date +%s) - t ))"
    echo "ds-oracle: DeepSpeed $v venv ready after $(( $(date +%s) - t0 )) s" >&2
    # DeepSpeed's C++ ops for the CPU accelerator are built by torch's JIT into $dir/ext-<version>
    # the first time they are loaded: inside a launch one after the other (0.19's shm op when
    # the process group starts, then CPU Adam with the first engine). When one is not built yet,
    # it is built here in its own process, each side by side with the launches, by the call
    # DeepSpeed itself makes; a launch that needs it waits on torch's lock file and then loads it.
    local op
    for op in shm:deepspeed_shm_comm cpu_adam:cpu_adam; do
        [ -e "$dir/ext-$v/${op#*:}/${op#*:}.so" ] && continue
        # (a venv's site-packages, or an overlay's folder: scripts/ds-oracle-venv.sh)
        [ "${op%%:*}" = shm ] && ! grep -qs "def build_shm_op" "${py%/bin/python}"/lib/python3*/site-packages/deepspeed/comm/torch.py \
            "${py%/bin/python}"/deepspeed/comm/torch.py && continue   # DeepSpeed 0.14 has no shm op
        (t=$(date +%s); DS_ACCELERATOR=cpu TORCH_EXTENSIONS_DIR="$dir/ext-$v" "$py" -c '
import sys
if sys.argv[1] == "shm":
    import importlib
    t = importlib.import_module("deepspeed.comm.torch")
    t.build_shm_op()
else:
    from deepspeed.ops.op_builder import CPUAdamBuilder
    CPUAdamBuilder().load()
' "${op%%:*}" > "$runs/jit-$v-${op%%:*}.log" 2>&1 || true
         stamp "$v" "JIT build of ${op%%:*} (own process)" "$(( $(date +%s) - t ))") &
    done
    local trainer=""
    "$py" -c 'import accelerate' 2> /dev/null && trainer=--trainer
    for n in $ranks; do
        local profile=short
        case " $full " in *" $v "*) [ "$n" -le 2 ] && profile=full ;; esac
        mkdir -p "$runs/$v-np$n"
        python3 scripts/ds_oracle_cells.py --release "$v" --ranks "$n" --profile $profile $trainer \
            --models-dir "$root/tests/deepspeed/models" --out "$runs/cells-$v-np$n.json" >&2
        echo "ds-oracle: DeepSpeed $v, $n rank(s): torchrun --nproc_per_node $n scripts/ds_oracle.py" >&2
        launch "$v" "$py" "$n" "$runs/cells-$v-np$n.json" "$runs/$v-np$n" "$runs/$v-np$n/launch.log" \
            $((port + 10 * k + n)) &
        pids="$pids $!"
    done
    for pid in $pids; do
        wait "$pid" || rc=1
    done
    for n in $ranks; do
        grep "^ds_oracle:" "$runs/$v-np$n/launch.log" | tail -1 | sed "s/^/ds-oracle: $v np$n: /" >&2 || true
    done
    [ $rc -eq 0 ] || echo "ds-oracle: DeepSpeed $v: a launch failed (see $runs/$v-np*/launch.log)" >&2
    # The shipped example: one cell alone in its own launch, so its log is all a user would have
    # (stdout and stderr of the launch, DeepSpeed's accelerator line included).
    local ex=$dir/oracle-example/$v
    rm -rf "$ex"
    mkdir -p "$ex"
    python3 -c 'import json,sys; c=[dict(x, audit_step=None) for x in json.load(open(sys.argv[1])) if x["id"]==sys.argv[2]]; json.dump(c,open(sys.argv[3],"w"))' \
        "$runs/cells-$v-np1.json" gpt2-tiny-hf-n8-split-r0.5 "$ex/cells.json"
    launch "$v" "$py" 1 "$ex/cells.json" "$ex" "$ex/deepspeed.log" $((port + 10 * k + 9)) || true
    return $rc
}

# The releases' chains, DS_ORACLE_JOBS at a time (each chain's launches run side by side: about
# 0.6 GB per rank, 6 ranks a release at 1-3 ranks).
# (wait -n on the chains' own pids: the build of ratiolab is a job of this shell too; bash >= 5.1)
k=0
launch_rc=0
cpids=()
reap() {   # waits for one chain to end and drops it from cpids
    local done_pid="" p rest=()
    wait -n -p done_pid "${cpids[@]}" || launch_rc=1
    for p in "${cpids[@]}"; do [ "$p" = "$done_pid" ] || rest+=("$p"); done
    cpids=("${rest[@]}")
}
[ -z "$record_only" ] || versions_run=""
for v in ${versions_run-$versions}; do
    [ "${#cpids[@]}" -lt "$jobs" ] || reap
    chain "$v" "$k" &
    cpids+=("$!")
    k=$((k + 1))
done
while [ "${#cpids[@]}" -gt 0 ]; do
    reap
done
stamp all "venvs and launches" "$(( $(date +%s) - t0 ))"
if [ -n "$build_pid" ]; then
    wait "$build_pid" || { echo "ds-oracle: building $bin failed (see $runs/build.log)" >&2; exit 2; }
    cat "$runs/build-time.tsv" >> "$timings"
fi

# validate --probe on every cell's rank-0 probe (the model and layout of each read in one pass).
t=$(date +%s)
: > "$runs/audit-verdicts.tsv"
verdicts=$runs/verdicts.tsv
: > "$verdicts"
python3 -c '
import glob, json, os, sys
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*", "probe.json"))):
    o = json.load(open(p))["oracle"]
    print("%s\t%s\t%s" % (p, o["model"], o["param_groups"]))
' "$runs" > "$runs/validate-list.tsv"
while IFS=$'\t' read -r p model groups; do
    rc=0
    gflag=(--param-groups "$groups")
    case $groups in three|reordered) gflag=() ;; esac   # groupings of the user's own: the probe's names
    "$bin" validate --probe "$p" --model "tests/deepspeed/models/$model" "${gflag[@]}" \
        > "$(dirname "$p")/validate.txt" 2>&1 || rc=$?
    printf '%s\t%s\n' "$p" "$rc" >> "$verdicts"
    # The audit of every rank (probe.audit.rla, probe.audit.rankR.rla), each with rank 0's probe.
    for a in "$(dirname "$p")"/probe.audit*.rla; do
        [ -f "$a" ] || continue
        rc=0
        "$bin" validate --probe "$p" --model "tests/deepspeed/models/$model" "${gflag[@]}" --audit "$a" \
            > "${a%.rla}.validate.txt" 2>&1 || rc=$?
        printf '%s\t%s\n' "$a" "$rc" >> "$runs/audit-verdicts.tsv"
    done
done < "$runs/validate-list.tsv"
stamp all "validate --probe ($(wc -l < "$verdicts") cells)" "$(( $(date +%s) - t ))"

rc=0
touch "$runs/audit-verdicts.tsv"
python3 scripts/ds_oracle_record.py --runs "$runs" --verdicts "$verdicts" --out tests/deepspeed/observed \
    --audit-verdicts "$runs/audit-verdicts.tsv" --audit-out tests/deepspeed/audit/cells \
    --command "make ds-oracle (DS_RELEASES='$versions' DS_ORACLE_RANKS='$ranks')" \
    --table "$runs/matrix.md" || rc=$?
# The matrix per cell (placement, sub-groups, verdict, digest), kept beside the observations.
[ -f "$runs/matrix.md" ] && cp "$runs/matrix.md" tests/deepspeed/observed/matrix.md

# The shipped example: the split-mode GPT-2 cell at ratio 0.5, 1 rank, about 8 sub-groups in the
# decay group, HF Trainer's two groups; its launch log per release and the newest one's probe.
ex=tests/deepspeed/example
mkdir -p "$ex"
for v in $versions; do
    l=$dir/oracle-example/$v/deepspeed.log
    grep -q "DeepSpeed info: version=" "$l" 2>/dev/null && sed "s|$root/||g" "$l" > "$ex/deepspeed-$v.log"
done
newest=$(echo $versions | tr ' ' '\n' | tail -1)
p=$dir/oracle-example/$newest/gpt2-tiny-hf-n8-split-r0.5/probe.json
[ -f "$p" ] && cp "$p" "$ex/probe.json"

stamp all total "$(( $(date +%s) - t0 ))"
column -t -s $'\t' "$timings" | sed 's/^/ds-oracle: seconds: /' >&2
echo "ds-oracle: matrix in $runs/matrix.md; $(( $(date +%s) - t0 )) s in all" >&2
git --no-pager diff --stat -- tests/deepspeed || true
[ $launch_rc -eq 0 ] || rc=1
exit $rc
