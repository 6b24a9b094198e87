#!/usr/bin/env bash
# The size figures a closing note reports: the ten longest functions (lizard's length: lines from
# the signature to the closing brace, with their cyclomatic complexity), the files over 800 lines,
# and cli/'s line count.
#
# Usage: code-size.sh [REV]   (default: the tracked files as they are now; REV: that commit, read
#                              with git archive into a temporary folder)
#
# Functions: `python3 -m lizard -l c --csv` over the tracked .c and .h files (lizard does not parse
# .cu; `pip install lizard`). Files: `wc -l` over the tracked .c, .h, .cu, .sh and .md files.
# cli/: the lines of cli/*.c and cli/*.h. Exit 2 when lizard or REV is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
python3 -m lizard --version >/dev/null 2>&1 || { echo "code-size: lizard is missing (pip install lizard)" >&2; exit 2; }
tree=$root
tmp=
if [ $# -ge 1 ]; then
    git rev-parse --verify -q "$1^{commit}" >/dev/null || { echo "code-size: $1: not a commit" >&2; exit 2; }
    tmp=$(mktemp -d) || exit 2
    trap 'rm -rf "$tmp"' EXIT
    git archive "$1" | tar -x -C "$tmp" || exit 2
    tree=$tmp
    files=$(git ls-tree -r --name-only "$1")
else
    files=$(git ls-files)
fi
rev=${1:-working tree}
cd "$tree" || exit 2
pick() { printf '%s\n' "$files" | grep -E "$1" | while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done; }

echo "== $rev: the ten longest functions (lines, CCN, function, file:line)"
# shellcheck disable=SC2046
python3 -m lizard -l c --csv $(pick '\.(c|h)$') 2>/dev/null | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if len(r) >= 10 and r[4].isdigit()]
rows.sort(key=lambda r: (-int(r[4]), r[6], int(r[9])))
for r in rows[:10]:
    print("%6d %5s  %s (%s:%s)" % (int(r[4]), r[1], r[7], r[6], r[9]))
'
echo "== $rev: files over 800 lines"
# shellcheck disable=SC2046
wc -l $(pick '\.(c|h|cu|sh|md)$') | awk '$2 != "total" && $1 > 800' | sort -k1,1nr -k2 | awk '{ printf "%6d  %s\n", $1, $2 }'
echo "== $rev: cli/ (cli/*.c cli/*.h)"
# shellcheck disable=SC2046
cat $(pick '^cli/[^/]*\.(c|h)$') | wc -l | awk '{ printf "%6d lines\n", $1 }'
