#!/usr/bin/env python3
"""scripts/ds_parity.py — what one DeepSpeed release's config classes make of the parity corpus.

Run with the python of a pinned oracle venv (scripts/ds-oracle-venv.sh); no GPU, no JIT build:
DeepSpeedConfig and its pydantic models parse on the CPU. For each config of
tests/deepspeed/parity/corpus.tsv:
  * mode ds: DeepSpeedConfig(path), which reads the file with hjson as a training script's
    deepspeed.initialize(config=path) does;
  * mode hf: the file read with json.load, its "auto" values filled by the transformers
    release's own HfTrainerDeepSpeedConfig.trainer_config_process / trainer_config_finalize
    (a Trainer with per-device batch 1, one process, the corpus row's precision flag, a model
    whose config has the row's hidden_size), then DeepSpeedConfig(dict), as the HF Trainer does.
    transformers' class inherits the config lookups from accelerate's HfDeepSpeedConfig, which the
    venv does not carry: the five lookups it uses are given here as accelerate writes them.
Writes one line per config: accepted or refused (with the exception's first line), and the values
that shape a plan: stage, offload_optimizer device / ratio / pin_memory, sub_group_size,
reduce_bucket_size, stage3_prefetch_bucket_size, stage3_param_persistence_threshold,
stage3_max_live_parameters, the precision, offload_param device / pin_memory, the micro-batch.

Usage: PYTHON scripts/ds_parity.py CORPUS_DIR OUT.tsv
"""
import json
import logging
import os
import sys
import types
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("DS_ACCELERATOR", "cpu")
logging.disable(logging.WARNING)

import deepspeed  # noqa: E402
import hjson  # noqa: E402
import pydantic  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402
from deepspeed.runtime.zero.offload_config import (DeepSpeedZeroOffloadOptimizerConfig,  # noqa: E402
                                                   DeepSpeedZeroOffloadParamConfig)
from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig  # noqa: E402

logging.disable(logging.WARNING)
deepspeed.utils.logger.setLevel(logging.ERROR)


class HfFill:
    """The lookups of accelerate's HfDeepSpeedConfig (accelerate/utils/deepspeed.py) that
    transformers' HfTrainerDeepSpeedConfig methods call, over a config dict."""

    def __init__(self, config):
        self.config = config
        self.mismatches = []
        self._dtype = None

    def find_config_node(self, ds_key_long):
        config = self.config
        nodes = ds_key_long.split(".")
        ds_key = nodes.pop()
        for node in nodes:
            config = config.get(node)
            if config is None:
                return None, ds_key
        return config, ds_key

    def get_value(self, ds_key_long, default=None):
        config, ds_key = self.find_config_node(ds_key_long)
        if config is None:
            return default
        return config.get(ds_key, default)

    def _true(self, ds_key_long):
        value = self.get_value(ds_key_long)
        return False if value is None else bool(value)

    def is_true(self, ds_key_long):
        return self._true(ds_key_long)

    def is_false(self, ds_key_long):
        value = self.get_value(ds_key_long)
        return False if value is None else not bool(value)

    def is_zero3(self):
        return self.get_value("zero_optimization.stage", -1) == 3

    is_auto = HfTrainerDeepSpeedConfig.is_auto
    fill_match = HfTrainerDeepSpeedConfig.fill_match
    fill_only = HfTrainerDeepSpeedConfig.fill_only
    trainer_config_process = HfTrainerDeepSpeedConfig.trainer_config_process
    trainer_config_finalize = HfTrainerDeepSpeedConfig.trainer_config_finalize


def hf_config(path, hidden, flag):
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    lr = config.get("optimizer", {}).get("params", {}).get("lr", "auto")   # the Trainer's --learning_rate
    args = types.SimpleNamespace(
        world_size=1, per_device_train_batch_size=1, gradient_accumulation_steps=1, max_grad_norm=1.0,
        learning_rate=5e-5 if lr == "auto" else lr, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, weight_decay=0.0,
        fp16=flag == "fp16", fp16_full_eval=False, fp16_backend="auto", half_precision_backend="auto",
        save_on_each_node=False, fp16_opt_level="O1", bf16=flag == "bf16", bf16_full_eval=False,
        get_warmup_steps=lambda n: 0)
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=hidden))
    fill = HfFill(config)
    fill.trainer_config_process(args)
    fill.trainer_config_finalize(args, model, 100)
    return fill.config


def num(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return "%.17g" % v
    if isinstance(v, int):
        return str(int(v))   # pp_int's str() has thousands separators
    return str(v)


def observe(row, corpus):
    ident, path, mode, hidden, flag = row[:5]
    full = os.path.join(corpus, path)
    try:
        ds = DeepSpeedConfig(hf_config(full, int(hidden), flag) if mode == "hf" else full)
        zc = ds.zero_config
        oo = zc.offload_optimizer or DeepSpeedZeroOffloadOptimizerConfig()
        op = zc.offload_param or DeepSpeedZeroOffloadParamConfig()
        fp16 = getattr(ds, "float16_config", None)
        fp16 = fp16.enabled if fp16 is not None else ds.fp16_enabled
        bf16 = getattr(ds, "bfloat16_config", None)
        bf16 = bf16.enabled if bf16 is not None else ds.bfloat16_enabled
        dtype = "bf16" if bf16 else "fp16" if fp16 else "fp32"
        dev = lambda d: d.value if hasattr(d, "value") else str(d)  # noqa: E731
        vals = [int(zc.stage), dev(oo.device), num(float(oo.ratio)), num(bool(oo.pin_memory)), num(zc.sub_group_size),
                num(zc.reduce_bucket_size), num(zc.prefetch_bucket_size), num(zc.param_persistence_threshold),
                num(zc.max_live_parameters), dtype, dev(op.device), num(bool(op.pin_memory)),
                num(ds.train_micro_batch_size_per_gpu), num(ds.gradient_accumulation_steps)]
        return [ident, "accept"] + [str(v) for v in vals] + ["-"]
    except BaseException as e:  # noqa: B902 - an assertion or a TypeError refuses the config too
        if isinstance(e, KeyboardInterrupt):
            raise
        msg = (type(e).__name__ + ": " + str(e)).replace("\t", " ").replace("\n", " | ")
        return [ident, "refuse"] + ["-"] * 14 + [msg[:160]]


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(corpus, "corpus.tsv"))
            if not line.startswith("#")]
    lines = ["# DeepSpeed %s (torch %s, pydantic %s, hjson %s, transformers %s): scripts/ds_parity.py"
             % (deepspeed.__version__, torch.__version__.split("+")[0], pydantic.VERSION, hjson.__version__,
                transformers.__version__),
             "# id\tverdict\tstage\tdevice\tratio\tpin_memory\tsub_group_size\treduce_bucket_size\t"
             "prefetch_bucket_size\tparam_persistence_threshold\tmax_live_parameters\tdtype\tparam_device\t"
             "param_pin_memory\tmicro_batch\tgrad_accum\treason"]
    for row in rows:
        lines.append("\t".join(observe(row, corpus)))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    acc = sum(1 for ln in lines[2:] if "\taccept\t" in ln)
    print("ds_parity: DeepSpeed %s: %d configs, %d accepted, %d refused -> %s"
          % (deepspeed.__version__, len(rows), acc, len(rows) - acc, out), file=sys.stderr)


main()
