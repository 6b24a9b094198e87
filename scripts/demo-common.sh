# scripts/demo-common.sh — what scripts/demo.sh and scripts/demo-validate.sh share, sourced by both
# after `set -euo pipefail`: the arguments ([--figures DIR] [BIN]), the output folder, `run` (print
# the command, then run it) and `figure` (a plot; without gnuplot `plot` still writes the .dat and
# .gp and exits 3: say so and go on).
figures_only=
if [ "${1:-}" = --figures ]; then
    figures_only=1
    out=${2:?--figures needs a folder}
    shift 2
fi
bin=${1:-build/ratiolab}
out=${out:-${RATIOLAB_OUT:-out}}
run() { printf '\n$ ratiolab %s\n' "$*"; "$bin" "$@"; }

figure() {
    local rc=0
    if [ -n "$figures_only" ]; then "$bin" plot "$@" >/dev/null || rc=$?; else run plot "$@" || rc=$?; fi
    if [ "$rc" = 3 ]; then
        echo "  (no gnuplot: the figure's .dat and .gp are written; install gnuplot to draw it)"
    elif [ "$rc" != 0 ]; then
        exit "$rc"
    fi
}

mkdir -p "$out"
