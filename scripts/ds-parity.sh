#!/usr/bin/env bash
# scripts/ds-parity.sh — the config-parity stage (`make ds-parity`; a step of `make ds-oracle`).
#
# Regenerates the corpus (scripts/ds_parity_corpus.py), then gives every config to each recorded
# release's own config classes in its pinned venv (scripts/ds-oracle-venv.sh, made or reused;
# scripts/ds_parity.py: DeepSpeedConfig and its pydantic models on the CPU, no GPU, no JIT build)
# and writes tests/deepspeed/parity/observed-<version>.tsv, which `make test` checks ratiolab
# against (suite ds_parity) without any Python. About 30 s per release once its venv exists.
# Environment: DS_ORACLE_VERSIONS ("0.14.1 0.19.8"), DS_ORACLE_DIR (build-ds).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
versions=${DS_ORACLE_VERSIONS:-"0.14.1 0.19.8"}
dir=${DS_ORACLE_DIR:-$root/build-ds}
out=tests/deepspeed/parity
python3 scripts/ds_parity_corpus.py "$out"
for v in $versions; do
    py=$(scripts/ds-oracle-venv.sh "$v" "$dir" | tail -1)
    DS_ACCELERATOR=cpu "$py" scripts/ds_parity.py "$out" "$out/observed-$v.tsv" 2> >(grep -v '^\[' >&2)
done
git --no-pager diff --stat -- "$out" || true
