"""scripts/ds_oracle_cells.py — the cells of one `make ds-oracle` launch (scripts/ds-oracle.sh), as JSON.

    ds_oracle_cells.py --release V --ranks N --profile full|short --models-dir DIR --out CELLS.json

Plain Python 3. Every cell is audited at optimizer step 3 (`audit_step`, docs/audit-format.md).

* `full` (0.14.1 and 0.19.8 at 1 and 2 ranks: DS_ORACLE_FULL): every model of DIR x param-group
  layout (DS_ORACLE_LAYOUTS) x sub-groups asked (DS_ORACLE_SGS) x mode (DS_ORACLE_MODES) x ratio
  (DS_ORACLE_RATIOS, DS_ORACLE_STOCK_RATIOS for stock), one cell again without the probe (its
  digest must not change) and one with DeepSpeed's wall-clock breakdown on; then the short set.
* `short` (every other launch): the short set only, the cold run's trim (about 1.5 s a cell):
  - the core: gpt2-tiny and llama-tiny, HF Trainer's two groups, about 8 sub-groups, split mode at
    ratios 0, 0.5, 0.8, 1 and stock mode at 0.5; gpt2-tiny flat at n1 (split 0.5) and n2 (split 0.3);
    gpt2-tiny flat asked for 20 sub-groups at split 0.8 (8 come out: a sub-group never splits a
    parameter; the 0.18 rule's edge, int((1 - 0.8) x N) = N/5 - 1 for N a multiple of 5, is held by
    the full matrix's gpt2-tiny flat n8 split 0.8 cell, 5 sub-groups, all on the CPU);
    gpt2-tiny HF n8 split 0.5 in fp32; gpt2-tiny with three param groups of the user's own (layout
    "three", n2, split 0.5) and HF n8 split 0.5 with gradient accumulation 2;
  - the schedules: DeepSpeed's WarmupLR and WarmupDecayLR, and a client LambdaLR (as the HF
    Trainer builds it), each on gpt2-tiny HF n8 split 0.5; the LambdaLR also in stock mode;
  - at 1 rank only: the deliberately wrong cells (lr x2 inside the backup optimizer's step for
    group 0 and inside DeepSpeedCPUAdam's for group 1; sub-group 2 not stepped at step 3), the
    RNG cells (ratio 0.5 and 1, the model's dropout and dropout 0, not re-seeded, fp32), and (with
    accelerate, releases >= 0.15) the Trainer cell: t5-tiny through transformers.Trainer, flat.

`expect` is the verdict validate --probe must give: FAIL for the wrong cells and for every
schedule cell whose split keeps sub-groups of param group 0 on the backup optimizer (the
scheduler-lr hazard, as observed: that optimizer's group 0 is a copy made at initialisation).
"""
import argparse
import json
import os

STEP = 3


def short_cells(mdir, ranks, trainer):
    g, l, t5 = mdir + "/gpt2-tiny.json", mdir + "/llama-tiny.json", mdir + "/t5-tiny.json"
    cells = []

    def add(cid, model, groups, sgs, mode, ratio, **kw):
        c = {"id": cid, "model_path": model, "param_groups": groups, "mode": mode, "ratio": ratio,
             "sub_group_size": sgs, "audit_step": STEP}
        c.update(kw)
        cells.append(c)

    for name, m in (("gpt2-tiny", g), ("llama-tiny", l)):
        for r in ("0", "0.5", "0.8", "1"):
            add("%s-hf-n8-split-r%s" % (name, r), m, "hf", "n8", "split", float(r))
        add("%s-hf-n8-stock-r0.5" % name, m, "hf", "n8", "stock", 0.5)
    add("gpt2-tiny-flat-n1-split-r0.5", g, "flat", "n1", "split", 0.5)
    add("gpt2-tiny-flat-n2-split-r0.3", g, "flat", "n2", "split", 0.3)
    add("gpt2-tiny-flat-n20-split-r0.8", g, "flat", "n20", "split", 0.8)
    add("gpt2-tiny-hf-n8-split-r0.5-fp32", g, "hf", "n8", "split", 0.5, dtype="fp32")
    # the runs people make: three param groups of the user's own (the third at its own lr; planned
    # from the names the probe records) and gradient accumulation 2 (three optimizer steps of two
    # micro-steps each)
    add("gpt2-tiny-three-n2-split-r0.5", g, "three", "n2", "split", 0.5)
    add("gpt2-tiny-hf-n8-split-r0.5-gas2", g, "hf", "n8", "split", 0.5, gradient_accumulation_steps=2)
    for s in ("warmup", "warmupdecay", "lambda"):
        add("gpt2-tiny-hf-n8-split-r0.5-sched-" + s, g, "hf", "n8", "split", 0.5, scheduler=s, expect="FAIL")
    add("gpt2-tiny-hf-n8-stock-r0.5-sched-lambda", g, "hf", "n8", "stock", 0.5, scheduler="lambda")
    if ranks == 1:
        add("gpt2-tiny-hf-n8-split-r0.5-wronglr", g, "hf", "n8", "split", 0.5, wrong_lr_group=0,
            wrong_lr_optimizer="backup", expect="FAIL")
        add("gpt2-tiny-hf-n8-split-r0.5-wronglrcpu", g, "hf", "n8", "split", 0.5, wrong_lr_group=1,
            wrong_lr_optimizer="cpu", expect="FAIL")
        add("gpt2-tiny-hf-n8-split-r0.5-skip2", g, "hf", "n8", "split", 0.5, skip_subgroup=2, expect="FAIL")
        for r in ("0.5", "1"):
            add("gpt2-tiny-hf-n8-split-r%s-rng-dropout" % r, g, "hf", "n8", "split", float(r), reseed=False,
                dtype="fp32")
            add("gpt2-tiny-hf-n8-split-r%s-rng-nodropout" % r, g, "hf", "n8", "split", float(r), reseed=False,
                dtype="fp32", dropout=0.0)
        if trainer:
            add("t5-tiny-trainer-flat-n8-split-r0.5", t5, "flat", "n8", "split", 0.5, trainer=True, dtype="fp32",
                expect="FAIL")
    return cells


def full_cells(mdir, env):
    models = env.get("DS_ORACLE_MODELS") or "gpt2-tiny.json llama-tiny.json"
    ratios = (env.get("DS_ORACLE_RATIOS") or "0 0.3 0.5 0.8 1").split()
    stock = (env.get("DS_ORACLE_STOCK_RATIOS") or " ".join(ratios)).split()
    cells = []
    for m in models.split():
        for layout in (env.get("DS_ORACLE_LAYOUTS") or "flat hf").split():
            for s in (env.get("DS_ORACLE_SGS") or "n1 n2 n8").split():
                for mode in (env.get("DS_ORACLE_MODES") or "stock split").split():
                    for r in (stock if mode == "stock" else ratios):
                        cells.append({"id": "%s-%s-%s-%s-r%s" % (m[:-5], layout, s, mode, r),
                                      "model_path": mdir + "/" + m, "param_groups": layout, "mode": mode,
                                      "ratio": float(r), "sub_group_size": s, "audit_step": STEP})
    twin = [c for c in cells if c["id"].endswith("-hf-n8-split-r0.5")][:1]
    for c in twin:
        cells.append(dict(c, id=c["id"] + "-noprobe", probe=False))
        cells.append(dict(c, id=c["id"] + "-timers", wall_clock_breakdown=True))
    return cells


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--profile", choices=("full", "short"), required=True)
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--trainer", action="store_true", help="the release's environment has accelerate")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cells = full_cells(a.models_dir, os.environ) if a.profile == "full" else []
    seen = set(c["id"] for c in cells)
    for c in short_cells(a.models_dir, a.ranks, a.trainer):
        if c["id"] not in seen:
            cells.append(c)
    for c in cells:
        c["short"] = c["id"] in set(x["id"] for x in short_cells(a.models_dir, a.ranks, a.trainer))
    with open(a.out, "w") as f:
        json.dump(cells, f, indent=1)
    print("ds-oracle: DeepSpeed %s, %d rank(s): %d cells (%s)" % (a.release, a.ranks, len(cells), a.profile))


if __name__ == "__main__":
    main()
