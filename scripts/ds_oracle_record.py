"""scripts/ds_oracle_record.py — the oracle's probes, trimmed, into tests/deepspeed/observed/, and the
matrix table. Plain Python 3 (no torch), run by scripts/ds-oracle.sh after the launches.

    ds_oracle_record.py --runs build-ds/oracle --verdicts VERDICTS.tsv --out tests/deepspeed/observed
                        --command "make ds-oracle" [--table TABLE.md]

Each launch folder build-ds/oracle/<version>-np<N>/<cell>/probe.json (rank 0) becomes one line of
tests/deepspeed/observed/<version>-np<N>.jsonl, after a first line that says what made the file.
What changes from run to run (wall times, process memory, per-step timers, the cell's seconds)
is dropped, so a re-recording differs only where DeepSpeed's behaviour or the matrix did. The
recorded lines keep the probe schema (docs/json-probe.md), so `validate --probe` reads them.
"""

import argparse
import json
import os
import sys

ZERO_KEYS = ("stage", "sub_group_size", "reduce_bucket_size", "stage3_prefetch_bucket_size", "prefetch_bucket_size")


def trim(doc):
    z = doc.get("zero") or {}
    zero = {k: z[k] for k in ZERO_KEYS if k in z}
    off = z.get("offload_optimizer")
    zero["offload_optimizer"] = None if off is None else {k: off.get(k) for k in ("device", "pin_memory", "ratio")}
    out = {k: doc.get(k) for k in ("schema_version", "kind", "rank", "world_size", "dp_world_size",
                                    "deepspeed_version", "torch_version", "accelerator")}
    out["zero"] = zero
    out["dtype"] = doc.get("dtype")
    out["memory"] = {"device_source": (doc.get("memory") or {}).get("device_source")}
    out["steps"] = []
    pl = doc.get("placement") or {}
    out["placement"] = pl
    dg = doc.get("digest")
    out["digest"] = None if dg is None else {k: dg.get(k) for k in ("step", "algorithm", "sha256", "subgroups")}
    o = dict(doc.get("oracle") or {})
    o.pop("cell_seconds", None)
    o.pop("phase_seconds", None)
    out["oracle"] = o
    return out


def pivot(rows, verdict_of):
    """The matrix as the closing table: one row per launch x model x param groups x sub-groups
    asked x mode, one column per ratio; each cell "offloaded/sub-groups VERDICT digest" (the fp32
    digest over every parameter, gathered from every rank, first 8 hex digits). Then, per row, how
    many different digests its ratios gave."""
    ratios = sorted(set((d.get("oracle") or {}).get("ratio") for _, _, d, _ in rows if d is not None))
    table = {}
    for launch, cell, doc, v in rows:
        if doc is None:
            continue
        o = doc.get("oracle") or {}
        if cell.endswith("-timers"):
            continue
        key = (launch, o.get("model", "")[:-5], o.get("param_groups"), o.get("sub_groups_asked"), o.get("mode"))
        subs = (doc.get("placement") or {}).get("subgroups") or []
        off = sum(1 for x in subs if x.get("assigned_device") == "cpu")
        nan = "" if o.get("losses_finite", True) else " (loss not finite)"
        table.setdefault(key, {})[o.get("ratio")] = ("%d/%d %s %s%s" % (off, len(subs), verdict_of(v),
                                                                        o.get("fp32_full_sha256", "")[:8], nan),
                                                     o.get("fp32_full_sha256", "")[:8])
    head = "| launch | model | groups | sub-groups asked | mode | " + " | ".join("ratio %g" % r for r in ratios) + \
           " | digests |"
    out = [head, "|" + "---|" * (6 + len(ratios))]
    for key in sorted(table):
        row = table[key]
        cells = [row[r][0] if r in row else "-" for r in ratios]
        distinct = len(set(x[1] for x in row.values()))
        out.append("| %s | %s | %s | %s | %s | %s | %d |" % (key + (" | ".join(cells), distinct)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--verdicts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--table")
    a = ap.parse_args()
    verdicts = {}
    with open(a.verdicts) as f:
        for line in f:
            path, rc = line.rstrip("\n").split("\t")
            verdicts[path] = int(rc)
    os.makedirs(a.out, exist_ok=True)
    rows = []
    twins = []
    for launch in sorted(os.listdir(a.runs)):
        ldir = os.path.join(a.runs, launch)
        if not os.path.isdir(ldir):
            continue
        lines = []
        for cell in sorted(os.listdir(ldir)):
            cdir = os.path.join(ldir, cell)
            p = os.path.join(cdir, "probe.json")
            np_ = os.path.join(cdir, "noprobe.json")
            if os.path.isfile(np_):
                twins.append((launch, np_))
                continue
            if not os.path.isfile(p):
                if os.path.isdir(cdir):
                    rows.append((launch, cell, None, "no probe (DeepSpeed failed: see error.rank*.txt)"))
                continue
            with open(p) as f:
                doc = json.load(f)
            lines.append(json.dumps(trim(doc), sort_keys=True))
            rows.append((launch, cell, doc, verdicts.get(p)))
        if not lines:
            continue
        head = {"recorded_by": a.command, "launch": launch,
                "note": "one ratiolab-probe document per line after this one (rank 0 of each cell), trimmed of "
                        "wall times and process memory; docs/json-probe.md"}
        with open(os.path.join(a.out, launch + ".jsonl"), "w") as f:
            f.write(json.dumps(head, sort_keys=True) + "\n")
            for l in lines:
                f.write(l + "\n")
    # the table
    out = ["| launch | cell | sub-groups | DS offloaded | optimizer(s) | validate --probe | fp32 digest (all ranks) |",
           "|---|---|---|---|---|---|---|"]
    failed = 0
    nonfinite = []   # cells whose loss was not finite in some step (their digest is not DeepSpeed's usual result)
    for launch, cell, doc, v in rows:
        if doc is None:
            out.append("| %s | %s | - | - | - | %s | - |" % (launch, cell, v))
            failed += 1
            continue
        subs = (doc.get("placement") or {}).get("subgroups") or []
        off = sum(1 for s in subs if s.get("assigned_device") == "cpu")
        opts = sorted(set(s.get("optimizer_class") or "-" for s in subs))
        verdict = {0: "PASS", 1: "FAIL", 2: "refused"}.get(v, "not run")
        if v != 0:
            failed += 1
        o = doc.get("oracle") or {}
        if not o.get("losses_finite", True):
            nonfinite.append("%s %s" % (launch, cell))
        out.append("| %s | %s | %d | %d | %s | %s | %s |" % (launch, cell, len(subs), off, "+".join(opts), verdict,
                                                            o.get("fp32_full_sha256", "")[:12]))
    # The probe changes nothing: the twin run without it ends with the same fp32 master weights.
    by_cell = {(l, c): d for l, c, d, _ in rows if d is not None}
    out.append("")
    for launch, path in twins:
        with open(path) as f:
            t = json.load(f)
        probed = by_cell.get((launch, t["cell"][:-len("-noprobe")]))
        same = probed is not None and (probed.get("oracle") or {}).get("fp32_full_sha256") == t["fp32_full_sha256"]
        if not same:
            failed += 1
        out.append("probe off vs on, %s %s: fp32 digest %s" % (launch, t["cell"], "equal" if same else "DIFFERENT"))
    if nonfinite:
        out.append("")
        out.append("loss not finite (NaN/inf) in some step, placement still judged: " + ", ".join(nonfinite))
    text = "\n".join(pivot(rows, verdict_of=lambda v: {0: "PASS", 1: "FAIL", 2: "refused"}.get(v, "not run")) +
                     [""] + out) + "\n"
    if a.table:
        with open(a.table, "w") as f:
            f.write(text)
    print("ds-oracle: %d cells, %d not passing, %d with a loss that is not finite" % (len(rows), failed, len(nonfinite)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
