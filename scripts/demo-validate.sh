#!/usr/bin/env bash
# make demo-validate: figure 4 of the demo, the executor against the simulator. A short validate
# on the cpu backend (the default model gpt-2.7b scaled 1/1000, sequence 128, ratios 0, 0.5 and 1,
# two MPI ranks), predicted with a quick calibration of this machine, then the parity figure.
# validate prints each run as it starts and, after each, the time so far and an estimate of the
# time left. On a machine other jobs load, the measured times include their interference: the
# report's others_cpu_pct column says how much of the cores they took.
#
#   scripts/demo-validate.sh [BIN]                  into out/ (RATIOLAB_OUT): PDF and PNG
#   scripts/demo-validate.sh --figures DIR [BIN]    only the PNG, into DIR (make figures)
set -euo pipefail
. "$(dirname "$0")/demo-common.sh"
val_args=(validate --scale 1000 --seq-len 128 --ratios 0,0.5,1 --ranks 2 --calibrate --out "$out/validate")
start=$SECONDS
if [ -z "$figures_only" ]; then
    echo "== The executor against the simulator (cpu backend, gpt-2.7b scaled 1/1000, 2 ranks): a calibration,"
    echo "   then 3 runs; progress and the time left below =="
    rc=0; run "${val_args[@]}" || rc=$?
else
    rc=0; "$bin" "${val_args[@]}" >/dev/null 2>&1 || rc=$?
fi
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then   # 1: a gated check failed; the report is still written
    if [ -n "$figures_only" ]; then
        figure parity --in "$out/validate/report.json" --out "$out/fig4-parity.png"
    else
        mkdir -p "$out/png"
        figure parity --in "$out/validate/report.json" --out "$out/fig4-parity.pdf"
        figure parity --in "$out/validate/report.json" --out "$out/png/fig4-parity.png"
        echo
        echo "== Done in $((SECONDS - start)) s; written to $out/validate/, $out/fig4-parity.pdf, $out/png/fig4-parity.png =="
    fi
else
    echo "  (validate could not run here (exit $rc): figure 4 skipped)"
fi
