#!/usr/bin/env bash
# make demo: the default case (Megatron gpt-2.7b, TP 8 on 8 x V100, DeepSpeed 0.12 rule and the
# exact policy side by side).
set -euo pipefail
bin=${1:-build/ratiolab}
echo "\$ ratiolab catalog"
"$bin" catalog
