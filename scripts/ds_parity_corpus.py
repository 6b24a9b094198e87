#!/usr/bin/env python3
"""scripts/ds_parity_corpus.py — writes the config-parity corpus, tests/deepspeed/parity/.

Every config of the corpus is given to each recorded DeepSpeed release's own config classes
(scripts/ds_parity.py, `make ds-parity`) and to ratiolab (tests/check_ds_parity.c), and the two
must agree on whether the config is accepted and on the values that shape a plan. The corpus is
generated, so it can be read and regrown here: the shipped examples (the Megatron-DeepSpeed GPT
template with its placeholders, as written and as its launch script fills them; the HF ZeRO-3
example), the HF Trainer's ZeRO-2 and ZeRO-3 templates and a Megatron-DeepSpeed ZeRO-1 template,
and variants of a base config: stages 0-3, offload devices (cpu, nvme, none), ratios,
pin_memory, sizes and buckets, precision, "auto", values as strings, comments and trailing
commas, unknown keys at every level, and the mistakes users make.

Writes configs/NNN-name.json (bytes exactly as given here) and corpus.tsv: id, file, mode (ds:
DeepSpeedConfig reads the file; hf: the HF Trainer's integration fills its "auto" values first,
from the model's hidden size and the Trainer's precision flag), hidden size, precision flag,
and what the case is about.

Usage: scripts/ds_parity_corpus.py [DIR]   (default: tests/deepspeed/parity under the repository)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "deepspeed", "parity")

cases = []   # (name, text, mode, hidden, dtype flag, about)


def add(name, cfg, about, mode="ds", hidden=0, flag="-"):
    text = cfg if isinstance(cfg, str) else json.dumps(cfg, indent=2) + "\n"
    cases.append((name, text, mode, hidden, flag, about))


def base(**zo):
    """A ZeRO-3 config with optimizer offload to pinned CPU memory, ratio 0.3, fp16."""
    z = {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True, "ratio": 0.3}}
    z.update(zo)
    return {"train_micro_batch_size_per_gpu": 1, "zero_optimization": z, "fp16": {"enabled": True}}


def with_off(**off):
    c = base()
    c["zero_optimization"]["offload_optimizer"].update(off)
    return c


def without(c, path):
    node = c
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return c


# ---- the shipped examples and the frameworks' templates ----
GPT_TEMPLATE = """{
  "train_batch_size" : CONFIG_BATCH_SIZE,
  "train_micro_batch_size_per_gpu": CONFIG_MBSIZE,
  "steps_per_print": LOG_INTERVAL,

  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {
      "device": "cpu",
      "pin_memory": true,
      "ratio": 0.1
    }
  },

  "gradient_clipping": 1.0,
  "prescale_gradients":false,

  "fp16": {
    "enabled": CONFIG_FP16_ENABLED,
    "loss_scale": 0,
    "loss_scale_window": 500,
    "hysteresis": 2,
    "min_loss_scale": 1,
    "initial_scale_power": 11
  },

  "bf16": {
    "enabled": CONFIG_BF16_ENABLED
  },

  "wall_clock_breakdown" : false
}
"""
add("gpt-template-raw", GPT_TEMPLATE, "the Megatron-DeepSpeed GPT template with its placeholders")
filled = (GPT_TEMPLATE.replace("CONFIG_BATCH_SIZE", "16").replace("CONFIG_MBSIZE", "2")
          .replace("LOG_INTERVAL", "10"))
add("gpt-template-fp16", filled.replace("CONFIG_FP16_ENABLED", "true").replace("CONFIG_BF16_ENABLED", "false"),
    "the GPT template as its launch script fills it, fp16")
add("gpt-template-bf16", filled.replace("CONFIG_FP16_ENABLED", "false").replace("CONFIG_BF16_ENABLED", "true"),
    "the GPT template filled, bf16")
add("gpt-template-both", filled.replace("CONFIG_FP16_ENABLED", "true").replace("CONFIG_BF16_ENABLED", "true"),
    "the GPT template filled with fp16 and bf16 both on")
add("gpt-template-ratio-str", filled.replace("CONFIG_FP16_ENABLED", "true").replace("CONFIG_BF16_ENABLED", "false")
    .replace('"ratio": 0.1', '"ratio": "0.1"'), "the GPT template with the ratio as a string")
add("gpt-template-ratoi", filled.replace("CONFIG_FP16_ENABLED", "true").replace("CONFIG_BF16_ENABLED", "false")
    .replace('"ratio": 0.1', '"ratoi": 0.1'), "the GPT template with ratio misspelled")
add("gpt-template-commented", filled.replace("CONFIG_FP16_ENABLED", "true").replace("CONFIG_BF16_ENABLED", "false")
    .replace('"stage": 3,', '"stage": 3, // ZeRO-3').replace('"ratio": 0.1', '"ratio": 0.1 # a tenth on the CPU'),
    "the GPT template with // and # comments")

HF_ZERO3_EXAMPLE = {
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "bf16": {"enabled": "auto"},
    "optimizer": {"type": "AdamW", "params": {"lr": 5e-7, "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                 "warmup_num_steps": "auto"}},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True, "ratio": 0.0}},
    "prescale_gradients": False, "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "steps_per_print": 2000, "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "wall_clock_breakdown": False,
}
for flag in ("bf16", "fp16", "fp32"):
    add("hf-zero3-example-" + flag, HF_ZERO3_EXAMPLE, "the shipped HF ZeRO-3 example, Trainer --" + flag,
        mode="hf", hidden=5120, flag=flag)

HF_ZERO3 = {   # transformers docs, main_classes/deepspeed "ZeRO-3 Example"
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                 "warmup_num_steps": "auto"}},
    "zero_optimization": {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "offload_param": {"device": "cpu", "pin_memory": True},
        "overlap_comm": True, "contiguous_gradients": True, "sub_group_size": 1e9,
        "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
        "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
        "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": True,
    },
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto", "steps_per_print": 2000,
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "wall_clock_breakdown": False,
}
for hidden in (64, 4096, 5120, 8192):
    for flag in ("fp16", "bf16"):
        add("hf-zero3-template-h%d-%s" % (hidden, flag), HF_ZERO3, "the HF Trainer ZeRO-3 template, hidden %d, --%s"
            % (hidden, flag), mode="hf", hidden=hidden, flag=flag)
c = json.loads(json.dumps(HF_ZERO3))
c["zero_optimization"]["offload_optimizer"]["ratio"] = 0.3
add("hf-zero3-template-ratio", c, "the HF ZeRO-3 template with a partial offload", mode="hf", hidden=5120, flag="bf16")
c = json.loads(json.dumps(HF_ZERO3))
c["zero_optimization"]["offload_optimizer"]["ratoi"] = 0.3
add("hf-zero3-template-ratoi", c, "the HF ZeRO-3 template with ratio misspelled", mode="hf", hidden=5120, flag="bf16")
c = json.loads(json.dumps(HF_ZERO3))
c["zero_optimization"]["reduce_bucket_size"] = 1000000
add("hf-zero3-template-bucket-set", c, "the HF ZeRO-3 template with the reduce bucket given", mode="hf", hidden=5120,
    flag="bf16")

HF_ZERO2 = {   # transformers docs, "ZeRO-2 Example"
    "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                 "warmup_num_steps": "auto"}},
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                          "allgather_partitions": True, "allgather_bucket_size": 2e8, "overlap_comm": True,
                          "reduce_scatter": True, "reduce_bucket_size": "auto", "contiguous_gradients": True},
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto", "steps_per_print": 2000,
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "wall_clock_breakdown": False,
}
for hidden in (768, 5120):
    add("hf-zero2-template-h%d" % hidden, HF_ZERO2, "the HF Trainer ZeRO-2 template, hidden %d" % hidden,
        mode="hf", hidden=hidden, flag="fp16")

MEG_ZERO1 = """{
  "train_batch_size": 256,
  "train_micro_batch_size_per_gpu": 4,
  "steps_per_print": 10,
  "zero_optimization": {
    "stage": 1
  },
  "gradient_clipping": 1.0,
  "prescale_gradients": false,
  "fp16": {
    "enabled": true,
    "loss_scale": 0,
    "loss_scale_window": 500,
    "hysteresis": 2,
    "min_loss_scale": 1,
    "initial_scale_power": 11
  },
  "wall_clock_breakdown": false
}
"""
add("megatron-zero1", MEG_ZERO1, "a Megatron-DeepSpeed ZeRO-1 template")
add("megatron-zero3-offload", MEG_ZERO1.replace('"stage": 1', '"stage": 3,\n    "offload_optimizer": {"device": "cpu", '
                                                '"pin_memory": true, "ratio": 0.3}'), "the same at ZeRO-3 with a ratio")

# ---- stages and devices ----
for stage in (0, 1, 2, 3):
    for dev in ("none", "cpu", "nvme"):
        off = {"device": dev}
        if dev == "nvme":
            off["nvme_path"] = "/local_nvme"
        c = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": stage, "offload_optimizer": off},
             "bf16": {"enabled": True}}
        add("stage%d-%s" % (stage, dev), c, "stage %d, offload_optimizer %s" % (stage, dev))
        c2 = json.loads(json.dumps(c))
        c2["zero_optimization"]["offload_optimizer"]["ratio"] = 0.3
        add("stage%d-%s-ratio" % (stage, dev), c2, "stage %d, offload_optimizer %s, ratio 0.3" % (stage, dev))
for dev, stage in (("cpu", 3), ("cpu", 2), ("none", 3), ("nvme", 3)):
    off = {"device": dev, "pin_memory": True}
    if dev == "nvme":
        off["nvme_path"] = "/local_nvme"
    add("param-%s-stage%d" % (dev, stage), base(stage=stage, offload_param=off),
        "offload_param %s at stage %d" % (dev, stage))
add("param-pin-unset", base(offload_param={"device": "cpu"}), "offload_param cpu, pin_memory left to the release")
add("opt-pin-unset", without(base(), ["zero_optimization", "offload_optimizer", "pin_memory"]),
    "offload_optimizer pin_memory left to the release")
add("no-zero-block", {"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": True}}, "no zero_optimization block")
add("empty-offload", base(offload_optimizer={}), "an empty offload_optimizer block")
add("null-offload", base(offload_optimizer=None), "offload_optimizer null")
add("null-zero", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": None}, "zero_optimization null")
add("zero-array", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": []}, "zero_optimization an array")
add("offload-string", base(offload_optimizer="cpu"), "offload_optimizer a string")

# ---- ratio ----
for i, r in enumerate([0, 0.0, 0.1, 0.3, 0.5, 1, 1.0, "0.3", " 0.3 ", "1e-1", "0", "1", ".5", "half", "nan", "inf",
                       True, False, 1.5, -0.1, "auto", None, [0.3], "0.3.1", "3e-1"]):
    add("ratio-%02d" % i, with_off(ratio=r), "offload_optimizer.ratio %s" % json.dumps(r))

# ---- pin_memory ----
for i, p in enumerate([True, False, "true", "false", "True", "FALSE", "yes", "no", "on", "off", "y", "n", "t", "f",
                       "1", "0", 1, 0, 1.0, 0.0, 2, "maybe", "", None, "auto", " true", [True]]):
    add("pin-%02d" % i, with_off(pin_memory=p), "offload_optimizer.pin_memory %s" % json.dumps(p))
for i, p in enumerate(["true", "no", 1, None, "auto"]):
    add("param-pin-%02d" % i, base(offload_param={"device": "cpu", "pin_memory": p}),
        "offload_param.pin_memory %s" % json.dumps(p))

# ---- device ----
for i, d in enumerate(["cpu", "nvme", "none", "CPU", "gpu", "cuda", "", None, "auto", 0, "Cpu"]):
    c = with_off(device=d)
    if d == "nvme":
        c["zero_optimization"]["offload_optimizer"]["nvme_path"] = "/local_nvme"
    add("device-%02d" % i, c, "offload_optimizer.device %s" % json.dumps(d))

# ---- stage ----
for i, s in enumerate([0, 1, 2, 3, 4, -1, "3", "2", 3.0, 3.5, True, False, None, "auto", "three", [3]]):
    c = base(stage=s)
    add("stage-%02d" % i, c, "zero_optimization.stage %s" % json.dumps(s))

# ---- sub_group_size and buckets ----
for i, v in enumerate([1e9, 100000000, 1e8, "100000000", "1e8", "100000000.0", 100000000.5, 1.5e8, True, " 1000 ",
                       "1_000", -1, 0, "auto", None, "10**8", 2**62, "0x100"]):
    add("sgs-%02d" % i, base(sub_group_size=v), "zero_optimization.sub_group_size %s" % json.dumps(v))
for key in ("reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
            "stage3_max_live_parameters"):
    for i, v in enumerate([12345678, "12345678", "auto", 5e7, -5, "big"]):
        add("%s-%02d" % (key, i), base(**{key: v}), "zero_optimization.%s %s" % (key, json.dumps(v)))
for i, (k, v) in enumerate([("prefetch_bucket_size", 7000000), ("param_persistence_threshold", 4096),
                            ("max_live_parameters", 300000000)]):
    add("alias-%02d" % i, base(**{k: v}), "zero_optimization.%s (the field name of a stage3_ alias)" % k)
add("alias-both", base(prefetch_bucket_size=7000000, stage3_prefetch_bucket_size=8000000),
    "a field under its name and its alias both")

# ---- precision ----
for i, (f, b) in enumerate([(True, None), (False, None), (None, True), (None, False), ("true", None), ("false", None),
                            (1, None), (0, None), (None, "yes"), (None, "no"), (True, True), ("auto", None),
                            (None, "auto"), ("auto", "auto")]):
    c = base()
    del c["fp16"]
    if f is not None:
        c["fp16"] = {"enabled": f}
    if b is not None:
        c["bf16"] = {"enabled": b}
    add("prec-%02d" % i, c, "fp16.enabled %s, bf16.enabled %s" % (json.dumps(f), json.dumps(b)))
c = base()
del c["fp16"]
c["bfloat16"] = {"enabled": True}
add("prec-bfloat16", c, "the old bfloat16 block")
c = base()
c["fp16"] = None
add("prec-null", c, "fp16 null")
c = base()
c["fp16"] = {"enabled": True, "loss_scale": 0, "auto_cast": False, "initial_scale_power": 12}
add("prec-fp16-full", c, "an fp16 block with its loss-scale keys")

# ---- batch sizes ----
for i, m in enumerate([1, 4, "4", 4.0, 0, "auto", None, True]):
    c = base()
    c["train_micro_batch_size_per_gpu"] = m
    add("micro-%02d" % i, c, "train_micro_batch_size_per_gpu %s" % json.dumps(m))
c = base()
del c["train_micro_batch_size_per_gpu"]
add("no-batch", c, "no batch size at all")
c = base()
c["train_batch_size"] = 8
add("train-batch", c, "train_batch_size 8 with micro 1 (one rank: 8 accumulation steps)")

# ---- unknown keys at every level ----
unknown = [
    (["top"], "zero_optimisation", {"stage": 3}, "a misspelled zero_optimization block"),
    (["top"], "foo", 1, "an unknown top-level key"),
    (["top"], "train_micro_batch_size_per_gpus", 2, "a misspelled top-level batch key"),
    (["zero_optimization"], "stag", 3, "zero_optimization.stag"),
    (["zero_optimization"], "offload_optimiser", {"device": "cpu"}, "zero_optimization.offload_optimiser"),
    (["zero_optimization"], "ratio", 0.3, "the ratio one level too high"),
    (["zero_optimization"], "sub_group_sizes", 1e8, "zero_optimization.sub_group_sizes"),
    (["zero_optimization"], "foo", "auto", "an unknown zero key with the value \"auto\""),
    (["zero_optimization"], "mics_shard_size", 2, "a key 0.19.8 removed (MiCS)"),
    (["zero_optimization"], "compute_grad_norm", True, "a key 0.19.8 added"),
    (["zero_optimization"], "zenflow", None, "a key 0.17.5 added, null"),
    (["zero_optimization"], "stage3_gather_16bit_weights_on_model_save", True, "a known key"),
    (["zero_optimization"], "cpu_offload", True, "a deprecated key"),
    (["zero_optimization", "offload_optimizer"], "ratoi", 0.3, "offload_optimizer.ratoi"),
    (["zero_optimization", "offload_optimizer"], "ratoi", "auto", "offload_optimizer.ratoi \"auto\""),
    (["zero_optimization", "offload_optimizer"], "pin_memroy", True, "offload_optimizer.pin_memroy"),
    (["zero_optimization", "offload_optimizer"], "super_offload", False, "a key 0.18.0 added"),
    (["zero_optimization", "offload_optimizer"], "fast_init", True, "a known key"),
    (["zero_optimization", "offload_optimizer"], "buffer_count", "4", "a known key as a string"),
    (["zero_optimization", "offload_param"], "pin_memroy", True, "offload_param.pin_memroy"),
    (["zero_optimization", "offload_param"], "max_in_cpu", 1e9, "a known offload_param key"),
    (["fp16"], "enabeld", True, "fp16.enabeld"),
    (["fp16"], "loss_scale_windw", 500, "fp16.loss_scale_windw"),
    (["bf16"], "enable", True, "bf16.enable"),
    (["optimizer", "params"], "lrr", 1e-4, "an unknown optimizer parameter"),
]
for i, (where, k, v, about) in enumerate(unknown):
    c = base(offload_param={"device": "cpu"}) if where[-1] == "offload_param" else base()
    if where[0] == "bf16":
        del c["fp16"]
        c["bf16"] = {"enabled": True}
    if where[0] == "optimizer":
        c["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-4}}
    node = c
    if where != ["top"]:
        for w in where:
            node = node[w]
    node[k] = v
    add("unknown-%02d" % i, c, about)

# ---- comments, trailing commas and the rest of hjson ----
B = json.dumps(base(), indent=2)
hj = [
    ("slash", B.replace('"stage": 3,', '"stage": 3, // ZeRO-3'), "a // comment"),
    ("hash", B.replace('"stage": 3,', '"stage": 3, # ZeRO-3'), "a # comment"),
    ("block", B.replace('"stage": 3,', '/* ZeRO\n     stage */ "stage": 3,'), "a /* */ comment over two lines"),
    ("head", "// DeepSpeed config\n# for the 14B run\n" + B, "comment lines before the document"),
    ("tail", B + "\n// end\n", "a comment after the document"),
    ("quote-in-comment", B.replace('"stage": 3,', '"stage": 3, // the "stage" key, {braces}'),
     "a comment holding quotes and braces"),
    ("slash-in-string", json.dumps(with_off(device="nvme", nvme_path="/mnt//nvme#1"), indent=2),
     "// and # inside a string"),
    ("trailing-object", B.replace('"ratio": 0.3', '"ratio": 0.3,'), "a trailing comma in an object"),
    ("trailing-top", B[:B.rindex("}")].rstrip() + ",\n}\n", "a trailing comma at the top level"),
    ("trailing-comment", B.replace('"ratio": 0.3', '"ratio": 0.3, // last'), "a trailing comma then a comment"),
    ("trailing-array", json.dumps({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3},
                                   "optimizer": {"type": "AdamW", "params": {"betas": [0.9, 0.999]}}},
                                  indent=2).replace("0.999", "0.999,"), "a trailing comma in an array"),
    ("all", "// all of them\n{\n  \"train_micro_batch_size_per_gpu\": 1, # one\n  \"zero_optimization\": {\n"
     "    /* three */ \"stage\": 3,\n    \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": \"0.3\",},\n  },\n}\n",
     "every kind of comment, trailing commas and a string ratio"),
    ("unclosed-block", B.replace('"stage": 3,', '/* ZeRO "stage": 3,'), "a /* comment never closed"),
    ("single-quotes", B.replace('"cpu"', "'cpu'"), "a single-quoted string (hjson reads it)"),
    ("unquoted-key", B.replace('"stage"', "stage"), "an unquoted key (hjson reads it)"),
    ("missing-comma", B.replace('"stage": 3,', '"stage": 3'), "a newline instead of a comma (hjson reads it)"),
    ("double-comma", B.replace('"stage": 3,', '"stage": 3,,'), "two commas"),
    ("duplicate", B.replace('"stage": 3,', '"stage": 3, "stage": 2,'), "a duplicate key"),
    ("bare-word", B.replace('"ratio": 0.3', '"ratio": RATIO'), "a bare word value (a placeholder)"),
]
for name, text, about in hj:
    add("hjson-" + name, text if text.endswith("\n") else text + "\n", about)

# ---- the jobs and more mistakes ----
add("mistake-ratio-no-device", {"train_micro_batch_size_per_gpu": 1,
                                "zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 0.3}}},
    "a ratio without an offload device")
add("mistake-torch-adam", dict(base(), optimizer={"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}),
    "optimizer.params.torch_adam with CPU offload")
add("mistake-scheduler", dict(base(), scheduler={"type": "WarmupLR", "params": {"warmup_num_steps": 10}}),
    "a DeepSpeed scheduler with a partial offload")
add("mistake-nested-zero", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"zero_optimization": {"stage": 3}}},
    "zero_optimization nested twice")
add("mistake-offload-at-top", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3},
                               "offload_optimizer": {"device": "cpu"}}, "offload_optimizer at the top level")
add("mistake-big-int", base(sub_group_size=10**30), "sub_group_size beyond int64")
add("deprecated-cpu-offload", base(offload_optimizer=None, cpu_offload=True), "the deprecated cpu_offload: true")
add("deprecated-cpu-offload-false", without(base(cpu_offload=False), ["zero_optimization", "offload_optimizer"]),
    "the deprecated cpu_offload: false")
add("deprecated-cpu-offload-param", base(cpu_offload_param=True), "the deprecated cpu_offload_param: true")
add("deprecated-cpu-offload-str", without(base(cpu_offload="yes"), ["zero_optimization", "offload_optimizer"]),
    "the deprecated cpu_offload: \"yes\"")
add("mistake-zero-false", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": False}, "zero_optimization false")
add("hf-only-fp16-auto-bf16-run", {"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": "auto"},
                                   "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}},
    "an HF config with only an fp16 block, the Trainer in bf16", mode="hf", hidden=5120, flag="bf16")
add("hf-stage2-auto-prefetch", {"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"},
                                "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto",
                                                      "stage3_prefetch_bucket_size": "auto",
                                                      "stage3_param_persistence_threshold": "auto"}},
    "an HF config at stage 2 with the stage-3 buckets \"auto\"", mode="hf", hidden=5120, flag="bf16")
add("mistake-zero-bool", {"train_micro_batch_size_per_gpu": 1, "zero_optimization": True}, "zero_optimization true")

# ---- the accumulation from train_batch_size (one rank: DeepSpeedConfig without a process group) ----
for tb, mb, ga, about in [(16, 4, None, "train_batch_size 16, micro 4: accumulation 4"),
                          (16, 4, 4, "train_batch_size 16, micro 4, accumulation 4: agree"),
                          (16, 4, 2, "train_batch_size 16, micro 4, accumulation 2: 4 x 2 is not 16"),
                          (10, 4, None, "train_batch_size 10, micro 4: not a multiple"),
                          (12, None, 3, "train_batch_size 12, accumulation 3, no micro-batch: micro 4")]:
    c = base()
    c["train_batch_size"] = tb
    if mb is None:
        del c["train_micro_batch_size_per_gpu"]
    else:
        c["train_micro_batch_size_per_gpu"] = mb
    if ga is not None:
        c["gradient_accumulation_steps"] = ga
    add("accum-%d-%s-%s" % (tb, mb, ga), c, about)

os.makedirs(os.path.join(OUT, "configs"), exist_ok=True)
for f in os.listdir(os.path.join(OUT, "configs")):
    os.remove(os.path.join(OUT, "configs", f))
names = set()
with open(os.path.join(OUT, "corpus.tsv"), "w") as tsv:
    tsv.write("# id\tfile\tmode\thidden\tflag\tabout (written by scripts/ds_parity_corpus.py)\n")
    for i, (name, text, mode, hidden, flag, about) in enumerate(cases):
        assert name not in names, name
        names.add(name)
        fn = "%03d-%s.json" % (i, name)
        with open(os.path.join(OUT, "configs", fn), "w") as f:
            f.write(text)
        tsv.write("%03d\tconfigs/%s\t%s\t%d\t%s\t%s\n" % (i, fn, mode, hidden, flag, about))
print("ds_parity_corpus: %d configs in %s" % (len(cases), OUT), file=sys.stderr)
