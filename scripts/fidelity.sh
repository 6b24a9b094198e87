#!/usr/bin/env bash
# Regenerates docs/fidelity.md from docs/fidelity-runs.tsv: every public measurement found, and for
# each run the repository can configure (an `args` column other than "-") ratiolab's prediction of
# the same phases and the error, with the median and largest |step error| over those runs.
#
# Usage: scripts/fidelity.sh [BIN] [OUT]   (default build/ratiolab, docs/fidelity.md; FIDELITY_DATA=FILE
# reads another data file)
# Exit 2 on a malformed data file, 3 when the binary cannot be run; OUT is replaced only when the
# whole table was written (a temporary beside it, then renamed).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/ratiolab}
out=${2:-$here/docs/fidelity.md}
data=${FIDELITY_DATA:-$here/docs/fidelity-runs.tsv}
"$bin" --version >/dev/null 2>&1 || { echo "fidelity: cannot run '$bin' (make first)" >&2; exit 3; }
[ -r "$data" ] || { echo "fidelity: cannot read $data" >&2; exit 2; }
command -v jq >/dev/null || { echo "fidelity: jq is needed to read ratiolab's --json" >&2; exit 3; }
tmp=$(mktemp "$out.XXXXXX") || exit 3
trap 'rm -f "$tmp"' EXIT
err() { awk -v p="$1" -v m="$2" 'BEGIN { if (m == "-" || m == "" || p == "") print "-"; else printf "%+.1f %%", (p / m - 1) * 100 }'; }
{
    echo "# Fidelity: ratiolab against public measurements"
    echo
    echo "Written by \`scripts/fidelity.sh\` from \`docs/fidelity-runs.tsv\` (do not edit by hand). Each row is a"
    echo "public measurement of DeepSpeed training with the optimizer offloaded to the CPU, with its source;"
    echo "a run the repository can configure (model preset, hardware profile, ZeRO-3) is predicted with the"
    echo "command shown and compared phase by phase (DeepSpeed's fwd / bwd / step timers; error ="
    echo "predicted / measured - 1). Nothing in the model was fitted to these runs."
    echo
    echo "| id | model | GPUs | cluster | DeepSpeed | ZeRO | batch | measured fwd / bwd / step / iteration s | ratiolab command | predicted fwd / bwd / step s | step error | other errors | source | note |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    n=0; errs=""; bycl=""
    while IFS=$'\t' read -r id src cluster model gpus ds zero batch fwd bwd step iter args note; do
        case "$id" in ''|'#'*|id) continue ;; esac
        [ -n "$note" ] || { echo "fidelity: $data: row '$id' has fewer than 14 columns" >&2; exit 2; }
        cmd="-"; pred="-"; e="-"; phases="-"
        if [ "$args" != "-" ]; then
            args=${args//@repo@/$here}   # files the args name (a launch line) live in the repository
            # shellcheck disable=SC2086  # the args column is a word list by design
            j=$("$bin" predict $args --json 2>/dev/null) || { echo "fidelity: row '$id': ratiolab predict $args failed" >&2; exit 2; }
            pf=$(printf '%s' "$j" | jq -r '.prediction.windows.forward_ns / 1e9')
            pb=$(printf '%s' "$j" | jq -r '.prediction.windows.backward_ns / 1e9')
            ps=$(printf '%s' "$j" | jq -r '.prediction.windows.step_ns / 1e9')
            pt=$(printf '%s' "$j" | jq -r '.prediction.step_ns / 1e9')
            cmd="\`ratiolab predict ${args//"$here"\//}\`"
            pred=$(printf '%.3f / %.3f / %.3f (iteration %.3f)' "$pf" "$pb" "$ps" "$pt")
            if [ "$step" != "-" ]; then e=$(err "$ps" "$step"); else e=$(err "$pt" "$iter"); fi
            if [ "$e" != "-" ]; then
                n=$((n + 1)); errs="$errs ${e% %}"
                # the cluster, for the summary by cluster: the centre's name and the machine's
                cl=$(printf '%s' "$cluster" | grep -oE '(ALCF|CSCS|NERSC|OLCF) [A-Za-z0-9]+' | head -1)
                bycl="$bycl${cl:-other}	${e% %}
"
            fi
            phases="fwd $(err "$pf" "$fwd") / bwd $(err "$pb" "$bwd") / iteration $(err "$pt" "$iter")"
        fi
        echo "| $id | $model | $gpus | $cluster | $ds | $zero | $batch | $fwd / $bwd / $step / $iter | $cmd | $pred | $e | $phases | <$src> | $note |"
    done < "$data"
    echo
    total=$(grep -cv -e '^#' -e '^id	' -e '^$' "$data")
    echo "Runs found: $total. Runs configured and predicted: $n."
    if [ "$n" -gt 0 ]; then
        # shellcheck disable=SC2086  # one error per word
        printf '%s\n' $errs | tr -d '+-' | sort -g | awk '{ v[NR] = $1; if ($1 > 30) far++ } END { n = NR;
            med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
            printf "Median |step error| %.1f %%, largest %.1f %%; %d beyond 30 %%.\n", med, v[n], far }'
        echo
        echo "| cluster | configured runs | median \\|step error\\| | largest | beyond 30 % |"
        echo "|---|---|---|---|---|"
        printf '%s' "$bycl" | tr -d '+-' | sort -t '	' -k1,1 -k2,2g | awk -F '\t' '
            function flush() { if (c == "") return; med = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2;
                printf "| %s | %d | %.1f %% | %.1f %% | %d |\n", c, k, med, v[k], far }
            $1 != c { flush(); c = $1; k = 0; far = 0 }
            { v[++k] = $2; if ($2 > 30) far++ }
            END { flush() }'
    fi
    echo
    echo "## What is not configured, and why"
    echo
    echo "Public measurements of ZeRO-3 with optimizer offload that state the model, the GPUs, the host"
    echo "CPUs, the batch and DeepSpeed's timers together are rare: most reports give one of them, a ratio"
    echo "between two configurations, or screenshots. ratiolab models ZeRO-3 with CPU offload only, so"
    echo "ZeRO-2 offload measurements (the core-binding study above), NVMe offload (the MLP-Offload"
    echo "baselines), modified DeepSpeeds (Deep Optimizer States with its additions on, SuperOffload,"
    echo "DeepCompile) and DeepSpeeds older than 0.12.3, the oldest whose rules ratiolab models (the"
    echo "ThetaGPU BERT runs of 2021), cannot be predicted, and a run on hardware without a sourced"
    echo "profile in \`catalog/hardware/\` is not configured rather than guessed."
    echo "The target is at least 20 configured runs from at least two clusters, a median |step error|"
    echo "within 15 % and none beyond 30 %; the summary above says where it stands."
    echo "The rows above are every run found; adding"
    echo "one is a line in \`docs/fidelity-runs.tsv\` and a rerun of this script. \"Other errors\" are"
    echo "the forward's, the backward's and the whole iteration's (DeepSpeed's timers leave out the"
    echo "framework's work between them). A run without DeepSpeed's timers (only an iteration time) is"
    echo "compared on the iteration: its \"step error\" is the iteration's."
} > "$tmp" || exit 3
mv -f "$tmp" "$out" && trap - EXIT
