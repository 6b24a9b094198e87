#!/usr/bin/env python3
"""scripts/docs-examples.py -- rewrites the shown output of the planning examples of README.md and
its guides (the pages tests/check_newcomer.c holds to what they print) from what build/ratiolab
prints now.

An example is a "$ ratiolab ..." line inside a fenced block; its output is the lines up to the next
"$ " line or the fence. Only examples whose output is shown whole are rewritten: `run` and mpirun
examples (their times and memory are a real run's), validate examples (a user's log, or minutes)
and outputs that leave lines out with "..." are left as they are and listed, so a change to them is
made by hand. Usage: scripts/docs-examples.py [RATIOLAB_BIN] (default build/ratiolab), from any
folder; it prints each page it changed.
"""
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", "docs/plan-and-predict.md", "docs/run.md", "docs/figures.md", "docs/validation.md",
         "docs/deepspeed-oracle.md", "docs/ci.md", "docs/inputs.md", "docs/development.md"]


def run(binary, cmd):
    """What `cmd` (as written after "$ ", starting with "ratiolab ") prints, run from the root."""
    line = shlex.quote(binary) + " " + cmd[len("ratiolab "):]   # through the shell, as the test does
    res = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"docs-examples: `{cmd}` exited {res.returncode}: {res.stderr.strip()}")
    return res.stdout.rstrip("\n").split("\n")


def rewrite(page, binary, outputs, left):
    path = os.path.join(ROOT, page)
    if not os.path.exists(path):
        return
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith("```"):
            continue
        while i < len(lines) and not lines[i].startswith("```"):
            if not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
                continue
            cmd = lines[i][2:]
            k = i + 1
            while k < len(lines) and not lines[k].startswith("$ ") and not lines[k].startswith("```"):
                k += 1
            shown = lines[i + 1:k]
            out.append(lines[i])
            whole = (cmd.startswith("ratiolab ") and not cmd.startswith(("ratiolab run ", "ratiolab validate "))
                     and not any(s.strip() == "..." for s in shown))
            if whole:
                if cmd not in outputs:
                    outputs[cmd] = run(binary, cmd)
                new = outputs[cmd]
                changed |= [s.rstrip() for s in new] != [s.rstrip() for s in shown]
                out.extend(new)
            else:
                left.append(f"{page}: {cmd}")
                out.extend(shown)
            i = k
    if changed:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        os.replace(path + ".tmp", path)
        print(f"docs-examples: rewrote {page}")


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/ratiolab"))
    outputs, left = {}, []
    for page in PAGES:
        rewrite(page, binary, outputs, left)
    for entry in left:
        print(f"docs-examples: left as written (check by hand): {entry}")


if __name__ == "__main__":
    main()
