#!/usr/bin/env bash
# make demo: the built-in default case, Megatron gpt-2.7b with TP 8 on 8 x V100 (dgx1-v100),
# under DeepSpeed 0.12's placement rule and ratiolab's exact policy side by side: plan, sweep,
# tune, then the figures (1 memory and honored ratio, 2 step time by phase, 3 one step's
# timeline) with their data, written to out/ (RATIOLAB_OUT) and listed at the end. Simulation
# only: seconds. Figure 4 (the executor against the simulator) is scripts/demo-validate.sh.
#
#   scripts/demo.sh [BIN]                  the demo
#   scripts/demo.sh --figures DIR [BIN]    only the figures, as PNGs, into DIR (make figures)
set -euo pipefail
. "$(dirname "$0")/demo-common.sh"
quiet() { "$bin" "$@" >/dev/null; }
if [ -z "$figures_only" ]; then
    echo "== What a DeepSpeed user sweeping offload_optimizer.ratio 0.0 .. 1.0 really gets =="
    run plan --ratios 0:1:0.1
    echo
    echo "== Why: the plan at ratio 0.3, with the sub_group_size that would honor it =="
    run plan --ratio 0.3
    echo
    echo "== With that sub_group_size the staircase gets finer =="
    run plan --ratios 0:1:0.1 --sub-group-size 1e8
    echo
    echo "== Predicted step time and memory per ratio (simulator, dgx1-v100) =="
    run sweep --ratios 0:1:0.1
    echo
    echo "== The micro-batch, checkpointing and ratio with the most tokens/s that fit a 16 GiB V100 =="
    run tune --gpu-mem 16GiB
    echo
    echo "== Micro-batch 16 with activation checkpointing needs offload: which ratio, which sub_group_size =="
    run tune --gpu-mem 16GiB --micro-batch 16 --checkpoint-activations
    echo
    echo "== Figures for a paper (ratiolab plot; data and gnuplot script beside each) =="
fi

# The data the figures are drawn from (plot never re-runs a simulation).
quiet sweep --ratios 0:1:0.05 --micro-batch 2 --json --out "$out/sweep-deepspeed-0.12.json"
quiet sweep --ratios 0:1:0.05 --micro-batch 2 --json --policy exact --out "$out/sweep-exact.json"
quiet sweep --ratios 0:1:0.05 --micro-batch 2 --json --policy exact --schedule overlap --out "$out/sweep-exact-overlap.json"
quiet predict --ratio 0.4 --micro-batch 2 --policy exact --schedule overlap --trace "$out/step-exact-overlap-0.4.json"

# PDFs for papers in out/, PNGs for screens in out/png/ (each with its own .dat and .gp).
draw() {   # draw DIR EXT
    figure memory --in "$out/sweep-deepspeed-0.12.json" --in "$out/sweep-exact.json" --width double \
        --out "$1/fig1-memory.$2"
    figure time --in "$out/sweep-deepspeed-0.12.json" --in "$out/sweep-exact-overlap.json" --gpu-mem 16GiB --speedup no-offload \
        --width double --out "$1/fig2-time.$2"
    figure timeline --in "$out/step-exact-overlap-0.4.json" --pids 1,2,100 --width double \
        --out "$1/fig3-timeline.$2"
}
if [ -n "$figures_only" ]; then
    draw "$out" png
else
    draw "$out" pdf
    mkdir -p "$out/png"
    draw "$out/png" png
fi

# Figure 4 (predicted against measured) runs the executor for minutes: scripts/demo-validate.sh,
# opt-in as `make demo-validate`; `make figures` draws it too.
if [ -n "$figures_only" ]; then
    "$(dirname "$0")/demo-validate.sh" --figures "$out" "$bin"
else
    echo
    echo "== Figure 4, the executor against the simulator, runs real steps for a few minutes: make demo-validate =="
fi

if [ -z "$figures_only" ]; then
    echo
    echo "== Written to $out/ =="
    (cd "$out" && find . -type f | sed "s|^\./||" | sort)
fi
