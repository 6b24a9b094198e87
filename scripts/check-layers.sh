#!/usr/bin/env bash
# Checks the layering that the module READMEs state: every `#include "DIR/..."` in a module's
# .c, .h and .cu files must name the module itself or a module its README allows.
#
# Usage: check-layers.sh [ROOT]   (default: the repository this script lives in)
#
# A README states what its module may include in one sentence that starts with "May include" and
# ends at the first period: the modules it names as `dir/`, or "every library module" (all of
# LIBS below), or "every module", or "no other module". A module's private header (`DIR/*_impl.h`)
# may be included by that module only, whatever its README allows (tests/ and bench/ are not
# checked: they may reach into a module). It also refuses a library error message that names a
# command-line flag anywhere in its text (see below). Exit 0 when every include is allowed,
# 1 when one is not (one line per offending include: file:line, the include, what is allowed),
# 2 when a module's README has no such sentence.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
LIBS="common hw plan sim exec kernels traces calib validation plots monitor campaign"
MODULES="$LIBS cli"
cd "$root" || { echo "check-layers: cannot enter $root" >&2; exit 2; }

bad=0
for m in $MODULES; do
    [ -d "$m" ] || continue
    if [ ! -f "$m/README.md" ]; then
        echo "check-layers: $m/README.md: missing (it must say what $m may include)" >&2
        exit 2
    fi
    sentence=$(tr '\n' ' ' < "$m/README.md" | grep -o 'May include[^.]*\.' | head -n 1)
    if [ -z "$sentence" ]; then
        echo "check-layers: $m/README.md: no 'May include ...' sentence" >&2
        exit 2
    fi
    case "$sentence" in
        *"every library module"*) allowed="$LIBS" ;;
        *"every module"*) allowed="$MODULES" ;;
        *"no other module"*) allowed="" ;;
        *) allowed=$(printf '%s\n' "$sentence" | grep -o '`[a-z_]*/`' | tr -d '`/' | tr '\n' ' ') ;;
    esac
    allowed="$m $allowed"
    while IFS= read -r hit; do
        [ -n "$hit" ] || continue
        file=${hit%%:*}
        rest=${hit#*:}
        line=${rest%%:*}
        dep=$(printf '%s\n' "$rest" | sed -n 's/.*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p')
        [ -n "$dep" ] || continue
        case " $MODULES " in *" $dep "*) ;; *) continue ;; esac   # generated or other headers
        if [ "$dep" != "$m" ] && printf '%s\n' "$rest" | grep -q '#[[:space:]]*include[[:space:]]*"[a-z_]*/[a-z_]*_impl\.h"'; then
            echo "$file:$line: includes a private header of $dep/ (only $dep/ may include its *_impl.h)"
            bad=1
            continue
        fi
        case " $allowed " in
            *" $dep "*) ;;
            *) echo "$file:$line: includes $dep/, which $m/README.md does not allow (may include: ${allowed# })"
               bad=1 ;;
        esac
    done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' \
                 $(find "$m" -maxdepth 2 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort) \
                 /dev/null 2>/dev/null)
done
# Library messages name the field (`policy: ...`); cli/ puts back the flag the user typed. A
# library error message (rl_errf, rl_err_prefix, rl_err_first: every string literal of the call,
# continuation lines included) that names a command-line flag anywhere is refused, except a
# Megatron launch line's own argument names (they are the fields of that format: the message says
# "Megatron") and a reference to what another ratiolab command writes, quoted as its command line
# (`ratiolab sweep --json`: the name of a format, not a flag of the command that failed), or a
# command line a library launches, quoted with its values (`ratiolab calibrate --base %s failed`).
while IFS= read -r hit; do
    [ -n "$hit" ] || continue
    echo "$hit: a library message names a flag; name the field and let cli/ put back the flag"
    bad=1
done < <(for l in $LIBS; do [ -d "$l" ] && find "$l" -maxdepth 2 -type f \( -name '*.c' -o -name '*.cu' \); done | sort |
             xargs -r perl -e '
    for my $f (@ARGV) {
        next if $f =~ m{^plan/megatron};
        open my $h, "<", $f or next; local $/; my $t = <$h>; close $h;
        while ($t =~ /\b(?:rl_errf|rl_err_prefix|rl_err_first)\s*\(/g) {
            my ($start, $i, $depth, $instr) = ($-[0], pos($t), 1, 0);
            while ($i < length($t) && $depth > 0) {          # the call, up to its closing parenthesis
                my $c = substr($t, $i, 1);
                if ($instr) { if ($c eq "\\") { $i++ } elsif ($c eq "\"") { $instr = 0 } }
                elsif ($c eq "\"") { $instr = 1 } elsif ($c eq "(") { $depth++ } elsif ($c eq ")") { $depth-- }
                $i++;
            }
            my $text = join("", substr($t, $start, $i - $start) =~ /"((?:[^"\\]|\\.)*)"/g);
            next if $text =~ /Megatron/;
            $text =~ s/ratiolab [a-z]+(?: --[a-z][a-z-]*(?: [^\s-]\S*)?)+//g;   # another command, quoted (values too)
            next unless $text =~ /(?:^|[^-\w])--[a-z]/;
            printf "%s:%d\n", $f, 1 + (substr($t, 0, $start) =~ tr/\n//);
        }
    }' 2>/dev/null)
if [ "$bad" = 0 ]; then
    echo "check-layers: every include is allowed by its module's README; library messages name fields"
fi
exit "$bad"
