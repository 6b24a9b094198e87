#!/usr/bin/env python3
"""Imports the public Polaris runs of the Deep Optimizer States results repository
(github.com/mauryaavinash95/deep-optimizer-states-results) into the fidelity table: for each log of
vanilla DeepSpeed (the fork's additions off: prefetch0, not flush_async1), the launch line's model
arguments and the config the engine printed go to docs/fidelity/dosr/<key>.args and <key>.json,
and its row (rank 0's DeepSpeed timers and Megatron's iteration time, the mean of iterations 3 to
the end) is printed for docs/fidelity-runs.tsv. Nothing in a log is executed: its Python-literal
lines are read with ast.literal_eval.

Usage: scripts/fidelity_import_dos.py GITDIR [REPO] > rows.tsv
  GITDIR  a clone (or bare mirror) of that repository; its HEAD is the commit the rows cite
  REPO    this repository (default: the script's parent directory)
"""
import ast, hashlib, json, os, re, statistics, subprocess, sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2 if len(sys.argv) < 2 else 0)
gd = sys.argv[1]
repo = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(gd):
    print(f"fidelity_import_dos: GITDIR: {gd} is not a directory", file=sys.stderr)
    sys.exit(2)
outdir = os.path.join(repo, "docs/fidelity/dosr")
os.makedirs(outdir, exist_ok=True)
recs = []
commit = subprocess.check_output(["git", "--git-dir", gd, "rev-parse", "HEAD"], text=True).strip()
files = subprocess.check_output(["git", "--git-dir", gd, "ls-tree", "-r", "--name-only", "HEAD"], text=True).split("\n")
logs = [f for f in files if f.endswith(".log") and "-prefetch0" in f and "flush_async1" not in f
        and "incorrect" not in f and "not-req" not in f]

KEEP = {"--tensor-model-parallel-size", "--num-layers", "--hidden-size", "--num-attention-heads",
        "--micro-batch-size", "--global-batch-size", "--seq-length", "--max-position-embeddings",
        "--ffn-hidden-size", "--num-key-value-heads", "--pipeline-model-parallel-size",
        "--tokenizer-type", "--make-vocab-size-divisible-by", "--normalization",
        "--attention-dropout", "--hidden-dropout"}
FLAGS = {"--bf16", "--fp16", "--use-rotary-position-embeddings", "--untie-embeddings-and-output-weights",
         "--swiglu", "--disable-bias-linear", "--no-pipeline-parallel", "--cpu-optimizer",
         "--checkpoint-activations", "--deepspeed-activation-checkpointing", "--no-query-key-layer-scaling"}

def strip_host(line):
    return re.sub(r"^x\d+c\d+s\d+b\d+n\d+: ", "", line)

for f in sorted(logs):
    text = subprocess.check_output(["git", "--git-dir", gd, "show", f"HEAD:{f}"], text=True, errors="replace")
    lines = [strip_host(l) for l in text.split("\n")]
    spawned = next((l for l in lines if "spawned with command:" in l), None)
    if spawned is None:
        continue
    argv = ast.literal_eval(spawned.split("spawned with command: ", 1)[1])  # a Python list literal in the log
    argv = argv[argv.index(next(a for a in argv if a.endswith("pretrain_gpt.py"))) + 1:]
    kept, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--zero-stage="):
            kept.append(a)
        elif a in KEEP and i + 1 < len(argv):
            kept += [a, argv[i + 1]]; i += 1
        elif a in FLAGS:
            kept.append(a)
        i += 1
    runner = next((l for l in lines if "runner.py" in l and "cmd =" in l), "")
    bound = "--bind_cores_to_rank" in runner or "--bind_cores_to_rank" in text[:20000]
    # the user config as the engine printed it
    cfg_lines, on, host = [], False, None
    raw = text.split("\n")
    for l in raw:
        m = re.match(r"^(x\d+c\d+s\d+b\d+n\d+: )?(.*)$", l)
        h, body = m.group(1), m.group(2)
        if not on and "print_user_config" in body and "json = {" in body:
            on = True; host = h; cfg_lines = ["{"]; continue
        if on and h == host:
            cfg_lines.append(body)
            if body.startswith("}"):
                break
    if not cfg_lines:
        continue
    cfg = json.loads("\n".join(cfg_lines))
    eff = {}
    for l in lines:
        m = re.search(r"config.py:\d+:print\]\s+(train_batch_size|gradient_accumulation_steps|train_micro_batch_size_per_gpu)\s+\.*\s*(\d+)", l)
        if m:
            eff[m.group(1)] = int(m.group(2))
    cfg["train_batch_size"] = eff.get("train_batch_size", cfg.get("train_batch_size"))
    oo = cfg["zero_optimization"].get("offload_optimizer", {})
    fork = {k: oo.pop(k) for k in ("prefetch_optimizer", "part_grads_async", "prefetch_optimizer_gap") if k in oo}
    timers = [re.search(r"fwd: ([\d.]+) \| bwd: ([\d.]+) .*\| step: ([\d.]+)", l) for l in lines
              if "[Rank 0] time (ms) | fwd:" in l]
    timers = [tuple(float(x) for x in m.groups()) for m in timers if m]
    iters = [float(m.group(1)) for m in (re.search(r"elapsed time per iteration \(ms\): ([\d.]+)", l) for l in lines) if m]
    world = next((l for l in lines if "WORLD INFO DICT" in l), "")
    wd = ast.literal_eval(world.split("WORLD INFO DICT: ", 1)[1]) if world else {}
    nodes = len(wd); gpus = sum(len(v) for v in wd.values())
    nparam = next((l for l in lines if "number of parameters on (tensor, pipeline)" in l), "")
    vocab = next((l for l in lines if "padded vocab" in l), "")
    ver = next((re.search(r"version=(\S+), git-hash=(\S+), git-branch=(\S+)", l) for l in lines if "DeepSpeed info: version=" in l), None)
    base = os.path.basename(f)[4:-4]
    m = re.search(r"/home/([a-z0-9]+)/", text); user = m.group(1) if m else None
    m = re.search(r"(x\d+c\d+s\d+b\d+n\d+)(\.hsn\.cm\.polaris\.alcf\.anl\.gov)?", text); host = (m.group(0) if m else None)
    m = re.search(r"bind_core_list=([\d,]+)", runner); bind_list = [int(x) for x in m.group(1).split(",")] if m else None
    m = re.search(r"CPU Virtual Memory:  used = ([\d.]+) GB, percent = ([\d.]+)%", text); hostmem = (float(m.group(1)) / float(m.group(2)) * 100) if m else None
    key = hashlib.sha1((" ".join(kept) + json.dumps(cfg, sort_keys=True)).encode()).hexdigest()[:8]
    rec = {"file": f, "url": f"https://github.com/mauryaavinash95/deep-optimizer-states-results/blob/{commit}/{f}",
           "base": base, "args": " ".join(kept), "cfg": cfg, "fork": fork, "eff": eff, "bound": bound,
           "nodes": nodes, "gpus": gpus, "n_timers": len(timers), "n_iters": len(iters),
           "timers": timers, "iters": iters, "nparam": nparam.strip(), "vocab": vocab.strip(),
           "version": ver.groups() if ver else None, "key": key, "user": user, "host": host,
           "bind_list": bind_list, "hostmem_gb": hostmem}
    if len(timers) >= 3:
        t = timers[2:]
        rec["mean"] = [statistics.mean(x[k] for x in t) / 1e3 for k in range(3)]
        rec["mean_iter"] = statistics.mean(iters[2:]) / 1e3 if len(iters) >= 3 else None
    recs.append(rec)

recs = [r for r in recs if "skip" not in r and not r["fork"].get("prefetch_optimizer", 0) and not r["fork"].get("part_grads_async", 0)]

def arg(args, name, default=None):
    m = re.search(r"(?:^| )" + re.escape(name) + r" (\S+)", args)
    return m.group(1) if m else default

def ffn_default(h):  # Megatron-DeepSpeed's SwiGLU default: 4h * 2/3, rounded down to a multiple of 64
    return int((4 * h * 2 / 3) / 64) * 64

def fmt_s(x):
    return "%.4f" % x

FOLDER = {
    "act-output-7B-scale-DP": "7B DP scaling", "act-output-7B-scale-GA-single-GPU": "7B gradient accumulation",
    "act-output-7B-scale-DP-motivation": "7B DP x sub-group size", "act-output-7B-scale-TP-motivation": "7B TP x sub-group size",
    "act-output-7B-scale-subg-size-motivation": "7B sub-group size", "act-output-13B-scale-DP": "13B DP scaling",
    "act-output-13B-scale-GA-single-GPU": "13B gradient accumulation", "act-output-13B-scale-gaps-scale-DP": "13B DP scaling (second series)",
    "act-output-13B-monitor-mem-single-GPU": "13B memory monitoring", "act-output-30B": "30B", "act-output-30B-scale-gaps-scale-DP": "30B DP/TP (second series)",
    "act-output-70B": "70B", "act-output-7B-scale-gaps-a100": "7B bound", "act-output-8B-scale-gaps-a100": "8B bound",
    "act-output-13B-scale-gaps-a100": "13B bound", "act-output-20B-scale-gaps-a100": "20B bound",
    "act-output-20B-scale-twinflow": "20B Twin-Flow ratio sweep", "act-output-scale-models-twinflow-0.8": "Twin-Flow across models",
}

rows, written = [], set()
ids = {}
for r in recs:
    a = r["args"].replace("GPTSentencePieceTokenizer", "GPT2BPETokenizer")
    key = r["key"]
    if key not in written and r["user"] == "am6429":
        with open(os.path.join(outdir, key + ".args"), "w") as f:
            f.write(a + "\n")
        with open(os.path.join(outdir, key + ".json"), "w") as f:
            json.dump(r["cfg"], f, indent=4)
            f.write("\n")
        written.add(key)
    folder = r["file"].split("/")[0]
    size = re.match(r"log-([\d.]+B)-", os.path.basename(r["file"])).group(1)
    tp, L, h, A = int(arg(a, "--tensor-model-parallel-size")), int(arg(a, "--num-layers")), int(arg(a, "--hidden-size")), int(arg(a, "--num-attention-heads"))
    kv = arg(a, "--num-key-value-heads", "-")
    ffn = arg(a, "--ffn-hidden-size")
    ffn_s = f"FFN {ffn}" if ffn else f"FFN {ffn_default(h)} (Megatron's SwiGLU default; the launch line sets none)"
    mbs, gbs = int(arg(a, "--micro-batch-size")), int(arg(a, "--global-batch-size"))
    gpus, nodes = r["gpus"], r["nodes"]
    dp = gpus // tp
    ga = r["eff"].get("gradient_accumulation_steps", 1)
    oo = r["cfg"]["zero_optimization"]["offload_optimizer"]
    ratio = oo.get("ratio", 1)
    subg = r["cfg"]["zero_optimization"].get("sub_group_size", 1e9)
    m = re.search(r"subg(\d+)", r["file"]); subg_tag = int(m.group(1))
    ver = r["version"]
    rid = f"dosr-{size.lower()}-tp{tp}-dp{dp}-mbs{mbs}-gbs{gbs}"
    if subg_tag != 100000000:
        rid += f"-subg{subg_tag:.0e}".replace("+0", "").replace("+", "")
    if float(ratio) != 1.0:
        rid += f"-ratio{ratio}"
    if r["bound"]:
        rid += "-bound"
    rid += "-" + ver[1][:4]
    n = ids.get(rid, 0); ids[rid] = n + 1
    if n:
        rid += f"-rep{n + 1}"
    nparam = re.search(r"(\d+)$", r["nparam"]).group(1) if r["nparam"] else "?"
    model = (f"Llama-like {size} (Megatron-DeepSpeed: {L} layers, hidden {h}, {A} heads, {kv} KV heads, {ffn_s}, SwiGLU, RMSNorm, "
             f"GPT-2 vocabulary 50257 padded to 50304 as the log prints); {int(nparam):,} parameters per (tensor, pipeline) rank as the log counts them")
    cluster = (f"ALCF Polaris, {nodes} node{'s' if nodes > 1 else ''} of 4 x A100-SXM4-40GB, one 32-core EPYC 7543P, 512 GiB DDR4, "
               f"Slingshot 11 (the log's hosts are *.hsn.cm.polaris.alcf.anl.gov)")
    ds = f"0.13.3 (DataStates fork {ver[1]}, branch {ver[2]}, its additions off: prefetch_optimizer 0, part_grads_async 0)" if r["fork"] else \
         f"0.13.3 (DataStates fork {ver[1]}, branch {ver[2]}; the config has none of the fork's keys, so its additions are off)"
    zero = f"3, optimizer on CPU (pinned), ratio {ratio}, sub_group_size {subg:.0e}".replace("e+0", "e").replace("e+", "e")
    batch = f"micro-batch {mbs}, global batch {gbs} (gradient accumulation {ga}), TP {tp}, DP {dp}, seq 2048, bf16, activation checkpointing"
    k = len(r["timers"])
    fwd, bwd, step = r["mean"]
    it = r["mean_iter"]
    cmd = (f"--megatron-args-file @repo@/docs/fidelity/dosr/{key}.args --ds-config @repo@/docs/fidelity/dosr/{key}.json "
           f"--hw polaris-a100-40g --gpus {gpus}" + (f" --nodes {nodes} --gpus-per-node 4" if nodes > 1 else "") +
           " --deepspeed-version 0.13.3" + (f" --cpu-binding per-rank --cpu-cores {len(r['bind_list']) // 2}" if r["bound"] else ""))
    polaris = r["user"] == "am6429"
    if r["host"]:
        where = (f"the log's hosts ({r['host']} and others) are Polaris nodes" if nodes > 1 else
                 f"the log's host, {r['host']}, is a Polaris node")
    else:
        where = ("the log names no host; the same account's (/home/am6429) runs in this repository name Polaris hosts; "
                 f"its host memory (about {r['hostmem_gb']:.0f} GB from DeepSpeed's 'CPU Virtual Memory' line)" +
                 (f" and its {len(r['bind_list'])}-CPU bind list (SMT pairs of 28 of a 32-core, 64-thread node)" if r["bind_list"] else "") +
                 (" match" if r["bind_list"] else " matches") + " a Polaris node")
    cluster = cluster.replace("(the log's hosts are *.hsn.cm.polaris.alcf.anl.gov)", "(" + where + ")")
    if not polaris:
        cmd = "-"
        cluster = (f"not Polaris: another account's (/home/{r['user']}) node with {len(r['bind_list']) // 2 if r['bind_list'] else '?'} "
                   f"physical cores ({len(r['bind_list']) if r['bind_list'] else '?'} CPUs up to {max(r['bind_list']) if r['bind_list'] else '?'} in its bind list, two sockets), "
                   f"about {r['hostmem_gb']:.0f} GB of host memory and GPUs of about 85 GB (the monitor CSV's used + free); the log names neither the node nor the GPU")
    why = ("not configured: the node is not a Polaris node and its CPUs, GPUs and links are not stated, so no catalog profile "
           "can be sourced for it (its ratio-1 step is 2.3x shorter than the Polaris runs' of the same size); " if not polaris else "")
    note = why + (f"series '{FOLDER.get(folder, folder)}' ({folder}); mean of iterations 3-{k} of the log (rank 0's DeepSpeed timers and "
            f"Megatron's 'elapsed time per iteration'; the first two record DeepSpeed's trace and warm up); "
            f"launched {'with' if r['bound'] else 'without'} --bind_cores_to_rank; the args file holds the launch line's model "
            f"arguments (the tokenizer named as GPT-2's, whose vocabulary the log pads) and the config is the one the engine printed "
            f"(train_batch_size as it resolved it" + (", without the fork's keys: " + ", ".join(f"{k} {v}" for k, v in r["fork"].items()) if r["fork"] else "") + ")")
    rows.append("\t".join([rid, r["url"], cluster, model, str(gpus) + (f" ({nodes} nodes)" if nodes > 1 else ""), ds, zero, batch,
                           fmt_s(fwd), fmt_s(bwd), fmt_s(step), fmt_s(it), cmd, note]))
print("\n".join(rows))
