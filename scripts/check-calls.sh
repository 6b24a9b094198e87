#!/usr/bin/env bash
# Checks that no two source files call each other, directly or around a loop: file A uses a
# symbol that file B defines and B (or a file B reaches) uses one that A defines. Reads the
# symbol tables of built objects (nm), so it runs after a build; `make test` runs it on build/obj
# (tests/check_layers.c).
#
# Usage: check-calls.sh [--src DIR] OBJDIR [SKIP_PREFIX...]
#   --src DIR    the source tree: an object whose source (same path, .c or .cu) is gone is left out
#                (an incremental build keeps the objects of deleted files)
#   OBJDIR       the folder of .o files (e.g. build/obj); file names are taken relative to it
#   SKIP_PREFIX  object paths under OBJDIR to leave out (e.g. tests/: test files may reach anywhere)
# Exit 0 when the file graph has no cycle, 1 when it has (one line per file of a cycle with the
# files it reaches back through), 2 on a usage error.
set -u
src=
if [ "${1:-}" = --src ]; then
    src=$(cd "${2:-}" 2>/dev/null && pwd) || { echo "check-calls: --src ${2:-}: not a folder" >&2; exit 2; }
    shift 2
fi
dir=${1:-}
[ -n "$dir" ] && [ -d "$dir" ] || { echo "check-calls: usage: check-calls.sh OBJDIR [SKIP_PREFIX...]" >&2; exit 2; }
shift
cd "$dir" || exit 2
objs=$(find . -name '*.o' | sed 's#^\./##' | sort)
for skip in "$@"; do
    objs=$(printf '%s\n' "$objs" | grep -v "^$skip" || true)
done
if [ -n "$src" ]; then
    kept=
    for o in $objs; do
        b=${o%.o}; b=${b%.cu}
        { [ -f "$src/$b.c" ] || [ -f "$src/$b.cu" ]; } && kept="$kept $o"
    done
    objs=$kept
fi
[ -n "$objs" ] || { echo "check-calls: $dir: no object files" >&2; exit 2; }
# nm -A: "file.o:ADDR T sym" for a definition, "file.o:    U sym" for a use.
# shellcheck disable=SC2086
nm -A $objs 2>/dev/null | awk '
{
    i = index($0, ":"); f = substr($0, 1, i - 1); sub(/\.o$/, "", f); rest = substr($0, i + 1)
    n = split(rest, t, " ")
    if (n == 3 && t[2] ~ /^[TDBR]$/) def[t[3]] = f
    else if (n == 2 && t[1] == "U") { nu++; uf[nu] = f; us[nu] = t[2] }
    files[f] = 1
}
END {
    for (k = 1; k <= nu; k++) {
        g = def[us[k]]
        if (g != "" && g != uf[k]) { reach[uf[k], g] = 1; via[uf[k], g] = us[k] }
    }
    nf = 0
    for (f in files) name[++nf] = f
    # Transitive closure (Floyd-Warshall): O(files^3), about 100 files here.
    for (k = 1; k <= nf; k++)
        for (i = 1; i <= nf; i++)
            if ((name[i], name[k]) in reach)
                for (j = 1; j <= nf; j++)
                    if ((name[k], name[j]) in reach) reach[name[i], name[j]] = 1
    bad = 0
    for (i = 1; i <= nf; i++)
        for (j = 1; j <= nf; j++)
            if (i != j && ((name[i], name[j]) in via) && ((name[j], name[i]) in reach)) {
                printf "%s calls %s (%s), which calls back into %s\n", name[i], name[j], via[name[i], name[j]], name[i]
                bad = 1
            }
    exit bad
}' | sort
st=${PIPESTATUS[1]}
[ "$st" = 0 ] && echo "check-calls: no two files call each other"
exit "$st"
