#!/usr/bin/env bash
# make demo: the built-in default case, Megatron gpt-2.7b with TP 8 on 8 x V100 (dgx1-v100),
# under DeepSpeed 0.12's placement rule and ratiolab's exact policy side by side.
set -euo pipefail
bin=${1:-build/ratiolab}
run() { printf '\n$ ratiolab %s\n' "$*"; "$bin" "$@"; }

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
