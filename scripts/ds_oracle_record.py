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


def trim(doc, keep_hparams=True):
    z = doc.get("zero") or {}
    zero = {k: z[k] for k in ZERO_KEYS if k in z}
    off = z.get("offload_optimizer")
    zero["offload_optimizer"] = None if off is None else {k: off.get(k) for k in ("device", "pin_memory", "ratio")}
    out = {k: doc.get(k) for k in ("schema_version", "kind", "rank", "world_size", "dp_world_size",
                                    "deepspeed_version", "torch_version", "accelerator")}
    # the run's accumulation and its param groups' names (what validate --probe plans a grouping of
    # the user's own from, and what holds a rule's grouping to the one DeepSpeed built)
    for k in ("gradient_accumulation_steps", "micro_batch_size", "micro_steps", "optimizer_steps", "param_groups"):
        if k in doc:
            out[k] = doc[k]
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
    hp = doc.get("hparams")
    if keep_hparams and hp is not None:   # the hyperparameters of every update (validate --probe's check)
        out["hparams"] = {"engine": hp.get("engine"), "dropped": hp.get("dropped", 0),
                          "updates": [{k: v for k, v in u.items() if k != "optimizer_class"}
                                      for u in hp.get("updates") or []]}
    return out


def load_cells(runs, launch):
    """The launch's cells file (scripts/ds_oracle_cells.py), by id; {} when there is none."""
    p = os.path.join(runs, "cells-%s.json" % launch)
    if not os.path.isfile(p):
        return {}
    with open(p) as f:
        return {c["id"]: c for c in json.load(f)}


def record_audits(runs, launch, cells, out_dir, keep):
    """The audit files of the launch's short-set cells, every rank's records in one file per
    cell, each record trimmed to its first and last `keep` elements (scripts/audit_trim.py), into
    out_dir/<launch>/<cell>.rla (the folder written anew). Returns the files written."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import struct
    import zlib
    import audit_trim
    ldir = os.path.join(out_dir, launch)
    if os.path.isdir(ldir):
        for n in os.listdir(ldir):
            if n.endswith(".rla"):
                os.remove(os.path.join(ldir, n))
    written = 0
    for cid, c in sorted(cells.items()):
        if not c.get("short"):
            continue
        cdir = os.path.join(runs, launch, cid)
        files = sorted(n for n in os.listdir(cdir) if n.startswith("probe.audit") and n.endswith(".rla")) \
            if os.path.isdir(cdir) else []
        out = []
        for n in files:
            with open(os.path.join(cdir, n), "rb") as f:
                buf = f.read()
            for fields, arrays in audit_trim.records(buf):
                numel, first, total = fields[9], fields[20], fields[21]
                spans = [(0, numel)] if numel <= 2 * keep else [(0, keep), (numel - keep, numel)]
                for lo, hi in spans:
                    g = list(fields)
                    g[0] = audit_trim.HEAD + 28 * (hi - lo)
                    g[9] = hi - lo
                    g[20] = first + lo
                    g[21] = total
                    out.append(struct.pack(audit_trim.RECORD, *g) + b"".join(x[4 * lo:4 * hi] for x in arrays))
        if not out:
            continue
        os.makedirs(ldir, exist_ok=True)
        body = b"".join(out)
        head = struct.pack(audit_trim.HEADER, b"RLAUDIT\0", 1, 32, len(out), zlib.crc32(body) & 0xffffffff, len(body))
        with open(os.path.join(ldir, cid + ".rla"), "wb") as f:
            f.write(head + body)
        written += 1
    return written


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
        if not cell.rsplit("-", 1)[-1].startswith("r"):   # -timers, and the short set's extra cells (schedules,
            continue                                     # wrong updates, RNG, fp32, the Trainer)
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
    ap.add_argument("--audit-verdicts", help="TSV: audit file, validate --probe --audit's exit status")
    ap.add_argument("--audit-out", help="folder for the short set's trimmed audits (one subfolder per launch)")
    ap.add_argument("--audit-keep", type=int, default=4, help="elements kept at each end of a sub-group")
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
        cells = load_cells(a.runs, launch)
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
            lines.append(json.dumps(trim(doc, keep_hparams=(cells.get(cell) or {}).get("short", True)), sort_keys=True))
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
        if a.audit_out and cells:
            record_audits(a.runs, launch, cells, a.audit_out, a.audit_keep)
    # the table
    audit_v = {}   # cell folder -> [exit status of validate --probe --audit, per rank's file]
    if a.audit_verdicts and os.path.isfile(a.audit_verdicts):
        with open(a.audit_verdicts) as f:
            for line in f:
                path, rc = line.rstrip("\n").split("\t")
                audit_v.setdefault(os.path.dirname(path), []).append(int(rc))
    out = ["| launch | cell | sub-groups | DS offloaded | optimizer(s) | validate --probe | audit (ranks) | expected | "
           "fp32 digest (all ranks) |",
           "|---|---|---|---|---|---|---|---|---|"]
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
        o = doc.get("oracle") or {}
        expect = o.get("expect") or "PASS"
        # lr x2 inside DeepSpeedCPUAdam's step for group 1 changes nothing where no sub-group of
        # group 1 is on it (the 0.12 rule at ratio 0.5 keeps the last sub-groups on the device).
        if (o.get("wrong") or "").startswith("lr x2 on the cpu optimizer, group 1") and not any(
                x.get("param_group") == 1 and x.get("optimizer") == "optimizer" for x in subs):
            expect = "PASS"
        av = audit_v.get(os.path.join(a.runs, launch, cell), [])
        averdict = " ".join({0: "PASS", 1: "FAIL", 2: "refused"}.get(x, "?") for x in av) or "-"
        # The expected verdict, for validate --probe and for every rank's audit that has a finding
        # to make (the wrong cells' and the schedule cells' ranks all step group 0 or the hooked
        # sub-group on each rank).
        if verdict != expect or any(x != (0 if expect == "PASS" else 1) for x in av):
            failed += 1
            expect += " (NOT MET)"
        if not o.get("losses_finite", True):
            nonfinite.append("%s %s" % (launch, cell))
        out.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s |" % (launch, cell, len(subs), off, "+".join(opts),
                                                                      verdict, averdict, expect,
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
    print("ds-oracle: %d cells, %d not as expected, %d with a loss that is not finite" % (len(rows), failed, len(nonfinite)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
