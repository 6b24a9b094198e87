"""scripts/ds_oracle.py — the DeepSpeed oracle's matrix, run inside one `torchrun` launch.

Started by scripts/ds-oracle.sh as
    torchrun --nproc_per_node N scripts/ds_oracle.py --cells CELLS.json --out DIR
under DS_ACCELERATOR=cpu with one DeepSpeed release on PYTHONPATH. Every cell (a model config
file, a param-group layout, a ratio, a sub_group_size, stock or split mode) initialises its own
ZeRO-3 engine in this process, attaches ratiolab_probe, runs three training steps on a fixed
token sequence, writes DIR/<cell>/probe.json (and .rank1 ...) and DIR/<cell>/deepspeed.log (what
DeepSpeed's logger printed on rank 0 for that engine), and tears the engine down. Batching the
cells into one launch pays the interpreter, torch, DeepSpeed and the CPU Adam build once.

Models are built from their config.json with random initialisation (seed 1234): nothing is read
from a hub. Param groups are either one flat group (HF Trainer with an "optimizer" block in the
DeepSpeed config) or HF Trainer's two groups (decay: every parameter outside the norm layers whose
name does not contain "bias"; no-decay: the rest), each in named_parameters order, or three groups
a user builds ("three": param_groups_three).

Split mode gives the CPU accelerator the device name "cpu:0" while the engine lives: stock
DeepSpeed compares a sub-group's device with "cpu", which on the CPU accelerator is true for every
sub-group, so every sub-group would run DeepSpeedCPUAdam; with "cpu:0" the sub-groups DeepSpeed
keeps on the "device" take the backup optimizer (torch.optim.AdamW), as on a GPU.
"""

import time as _time

_T_MAIN = _time.time()  # this process's first line, before torch is imported

import argparse
import gc
import hashlib
import json
import logging
import math
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import ratiolab_probe  # noqa: E402

STEPS = 3
SEQ = 16


# The config keys of each family's dropout probabilities (a cell's "dropout" sets them all).
DROPOUT_KEYS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "attention_dropout", "dropout_rate")


def build_model(config_path, dropout=None):
    """The model of a config file, randomly initialised with seed 1234; dropout (when given) set
    on every dropout key of the family. T5 (encoder-decoder) is built as a seq2seq model."""
    import transformers
    with open(config_path) as f:
        cfg = json.load(f)
    cfg = {k: v for k, v in cfg.items() if k != "architectures"}
    if dropout is not None:
        for k in DROPOUT_KEYS:
            cfg[k] = float(dropout)
    conf = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(1234)
    if cfg.get("model_type") == "t5":
        return transformers.AutoModelForSeq2SeqLM.from_config(conf)
    return transformers.AutoModelForCausalLM.from_config(conf, attn_implementation="eager")


def param_groups(model, layout, weight_decay):
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if layout == "flat":
        return [{"params": [p for _, p in params]}]
    if layout == "three":
        return param_groups_three(params, weight_decay)
    if layout == "reordered":
        return param_groups_reordered(params, weight_decay)
    from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS
    from transformers.trainer_pt_utils import get_parameter_names
    decay = set(n for n in get_parameter_names(model, ALL_LAYERNORM_LAYERS) if "bias" not in n)
    return [{"params": [p for n, p in params if n in decay], "weight_decay": weight_decay},
            {"params": [p for n, p in params if n not in decay], "weight_decay": 0.0}]


THREE_MLP_LR = 5e-4   # the third group's own lr (the optimizer block's is 1e-3)


def param_groups_three(params, weight_decay):
    """Three groups a user builds by hand, in named_parameters order within each: 0 the
    no-decay parameters (1-D ones: biases and norm weights, and the embeddings), 1 the decayed
    weights outside the MLP, 2 the MLP's weights, decayed, with another lr (THREE_MLP_LR). The
    same three groups as the group file tests/deepspeed/groups/three.groups."""
    def kind(n, p):
        if p.dim() == 1 or "emb" in n or "wte" in n or "wpe" in n:
            return 0
        return 2 if "mlp" in n else 1
    g = [[], [], []]
    for n, p in params:
        g[kind(n, p)].append(p)
    return [{"params": g[0], "weight_decay": 0.0},
            {"params": g[1], "weight_decay": weight_decay},
            {"params": g[2], "weight_decay": weight_decay, "lr": THREE_MLP_LR}]


def param_groups_reordered(params, weight_decay):
    """Two groups, the first built out of module order as two lists concatenated: the 1-D
    parameters (norms and biases), then the embeddings (wpe, then wte); the second the other
    weights, decayed. DeepSpeed packs a group in its list's order, so the first group's sub-groups
    are not what module order would give."""
    emb = [p for n, p in params if "wpe" in n] + [p for n, p in params if "wte" in n]
    one_d = [p for n, p in params if p.dim() == 1]
    taken = set(id(p) for p in emb + one_d)
    return [{"params": one_d + emb, "weight_decay": 0.0},
            {"params": [p for n, p in params if id(p) not in taken], "weight_decay": weight_decay}]


def cell_accumulation(cell):
    """The cell's gradient_accumulation_steps (default 1): each of the STEPS optimizer steps
    takes that many micro-steps (engine.step() calls), each on its own micro-batch."""
    return int(cell.get("gradient_accumulation_steps", 1))


def full_fp32_digest(engine, model):
    """SHA-256 of every parameter's fp32 master, whole (its partitions gathered from every rank,
    padding dropped), in named_parameters order: the same for any number of ranks."""
    opt = engine.optimizer
    world = dist.get_world_size()
    full = {}
    for i, flat in enumerate(opt.fp32_partitioned_groups_flat):
        parts = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(parts, flat.detach().contiguous())
        off = 0
        for p in opt.fp16_groups[i]:
            n = p.partition_numel()
            whole = torch.cat([q[off:off + n] for q in parts])[:p.ds_numel]
            full[id(p)] = whole.float().contiguous().numpy().tobytes()
            off += n
    h = hashlib.sha256()
    for _, p in model.named_parameters():
        h.update(full[id(p)])
    return h.hexdigest()


class CellLog:
    """DeepSpeed's logger, copied to a file for one engine (rank 0 logs what matters)."""

    def __init__(self, path):
        from deepspeed.utils import logger
        self.logger = logger
        self.h = logging.FileHandler(path, mode="w")
        fmt = "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s"
        self.h.setFormatter(logging.Formatter(fmt))
        logger.addHandler(self.h)

    def close(self):
        self.logger.removeHandler(self.h)
        self.h.close()


def resolve_sgs(cell, model, groups, world):
    """A sub_group_size given as "n1", "n2" or "n8": DeepSpeed's default (one sub-group per param
    group), or the rank's partition of the largest param group over 2 or 8, so that group splits
    into about that many sub-groups."""
    v = cell["sub_group_size"]
    if not isinstance(v, str):
        return int(v)
    k = int(v[1:])
    if k == 1:
        return 1000000000
    per_group = [sum((p.numel() + world - 1) // world for p in g["params"]) for g in groups]
    return -(-max(per_group) // k)


def wrong_lr_hook(engine, group, which):
    """A deliberately wrong update, for the audit to find: the chosen optimizer ("backup": the
    torch AdamW of the sub-groups kept on the device; "cpu": DeepSpeedCPUAdam) steps param group
    `group` with twice its lr, inside its step only (the group's lr is restored before anyone
    reads it again)."""
    zo = engine.optimizer
    opt = zo.backup_optimizer if which == "backup" else zo.optimizer
    orig = opt.step

    def step(*a, **k):
        g = opt.param_groups[group]
        if not g["params"]:
            return orig(*a, **k)
        old = g["lr"]
        g["lr"] = old * 2
        try:
            return orig(*a, **k)
        finally:
            g["lr"] = old

    opt.step = step


def skip_subgroup_hook(engine, sub_group, at_step):
    """A deliberately wrong update, for the audit to find: sub-group `sub_group` is not stepped at
    optimizer step `at_step` (its optimizer's step count is at_step - 1 when DeepSpeed calls
    _optimizer_step for it; skipped once). Installed before the probe, so the probe's own
    wrappers (audit, hyperparameters) see the skipped call as DeepSpeed made it."""
    zo = engine.optimizer
    orig = zo._optimizer_step
    done = []

    def optimizer_step(sub_group_id):
        if sub_group_id == sub_group and not done:
            fp32 = zo.fp32_partitioned_groups_flat[sub_group_id]
            opt = zo.optimizer
            if getattr(zo, "subgroup_to_device", None) and zo.subgroup_to_device[sub_group_id] != "cpu" and \
                    getattr(zo, "backup_optimizer", None) is not None:
                opt = zo.backup_optimizer
            st = opt.state.get(fp32, {}).get("step", 0)
            st = int(st.item()) if torch.is_tensor(st) else int(st)
            if st == at_step - 1:
                done.append(True)
                return None
        return orig(sub_group_id)

    zo._optimizer_step = optimizer_step


# The learning-rate schedules of the scheduler cells: DeepSpeed's own (the config's "scheduler"
# block, built by the engine after the ZeRO optimizer) and a client one (a torch LambdaLR made by
# transformers' get_linear_schedule_with_warmup, passed to deepspeed.initialize as a callable of
# the optimizer, as the HF Trainer passes its own). Each changes the lr at every step, so a
# sub-group stepped with a stale lr shows at step 3.
SCHEDULERS = {
    "warmup": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 1e-3,
                                               "warmup_num_steps": 4, "warmup_type": "linear"}},
    "warmupdecay": {"type": "WarmupDecayLR", "params": {"total_num_steps": 6, "warmup_min_lr": 0.0,
                                                         "warmup_max_lr": 1e-3, "warmup_num_steps": 2,
                                                         "warmup_type": "linear"}},
}


def scheduler_setup(cell, config):
    """Puts a cell's DeepSpeed scheduler block into config, or returns the client scheduler's
    callable for deepspeed.initialize(lr_scheduler=...) ("lambda"); None when the cell has none."""
    kind = cell.get("scheduler")
    if not kind:
        return None
    if kind in SCHEDULERS:
        config["scheduler"] = SCHEDULERS[kind]
        return None
    if kind == "lambda":
        import transformers
        return lambda opt: transformers.get_linear_schedule_with_warmup(opt, num_warmup_steps=4,
                                                                        num_training_steps=10)
    raise ValueError("cell %s: scheduler %r (allowed: %s, lambda)" % (cell["id"], kind, ", ".join(SCHEDULERS)))


def cell_start(cell, out):
    """A cell's folder, rank 0's DeepSpeed log in it, and the accelerator with the name it had (a
    split cell renames it; cell_done puts it back)."""
    from deepspeed.accelerator import get_accelerator
    rank = dist.get_rank()
    cdir = os.path.join(out, cell["id"])
    os.makedirs(cdir, exist_ok=True)
    log = CellLog(os.path.join(cdir, "deepspeed.log")) if rank == 0 else None
    acc = get_accelerator()
    return rank, cdir, log, acc, acc._name


def write_probe(doc, cdir, rank):
    """The cell's probe document, this rank's file (probe.json, probe.rankR.json)."""
    path = ratiolab_probe._rank_path(os.path.join(cdir, "probe.json"), rank)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def cell_failed(ex, cdir, rank):
    """A failing cell: its traceback into error.rankR.txt; the one-line reason returned."""
    import traceback
    with open(os.path.join(cdir, "error.rank%d.txt" % rank), "w") as f:
        f.write(traceback.format_exc())
    return "%s: %s" % (type(ex).__name__, ex)


def cell_done(acc, old_name, log):
    """After every cell, failed or not: the accelerator's name back, its log closed, the cell's
    objects collected before the next cell builds its engine."""
    acc._name = old_name
    if log:
        log.close()
    gc.collect()
    gc.freeze()


def run_cell(cell, out, ds_ver):
    import deepspeed
    rank, cdir, log, acc, old_name = cell_start(cell, out)
    t0 = time.perf_counter()
    ph = Phases()
    try:
        if cell["mode"] == "split":
            acc._name = "cpu:0"
        model = build_model(cell["model_path"], cell.get("dropout"))
        ph.mark("model")
        groups = param_groups(model, cell["param_groups"], 0.01)
        sgs = resolve_sgs(cell, model, groups, dist.get_world_size())
        offload = {"device": "cpu", "pin_memory": True, "ratio": cell["ratio"]}
        config = {
            "train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": cell_accumulation(cell),
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
                                                        "weight_decay": 0.01}},
            "bf16": {"enabled": cell.get("dtype", "bf16") == "bf16"},
            "zero_optimization": {"stage": 3, "sub_group_size": sgs,
                                  "offload_optimizer": offload},
            "wall_clock_breakdown": bool(cell.get("wall_clock_breakdown", False)),
            "steps_per_print": 1000,
        }
        client_sched = scheduler_setup(cell, config)
        with open(os.path.join(cdir, "ds_config.json"), "w") as f:
            json.dump(config, f, indent=1)
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=groups, config=config,
                                               lr_scheduler=client_sched)
        ph.mark("initialize")
        if cell.get("skip_subgroup") is not None:
            skip_subgroup_hook(engine, cell["skip_subgroup"], cell.get("audit_step") or STEPS)
        use_probe = cell.get("probe", True)
        probe = ratiolab_probe.attach(engine, out=os.path.join(cdir, "probe.json"), digest_step=STEPS,
                                      audit_step=cell.get("audit_step")) if use_probe else None
        if cell.get("wrong_lr_group") is not None:
            wrong_lr_hook(engine, cell["wrong_lr_group"], cell.get("wrong_lr_optimizer", "backup"))
        # DeepSpeed draws one random number (torch.randn(1), the backup optimizer's placeholder
        # parameter, stage3.py) when the ratio is not 1: the global RNG after initialize depends on
        # the ratio, and so would the dropout masks. Re-seeded here (unless the cell says
        # "reseed": false), every cell's forward passes draw the same masks and the digests
        # compare the optimizers' arithmetic only.
        if cell.get("reseed", True):
            torch.manual_seed(4321)
        ph.mark("probe_attach")
        gen = torch.Generator().manual_seed(1000 + rank)
        vocab = model.config.vocab_size
        losses = []
        for _ in range(STEPS * cell_accumulation(cell)):
            ids = torch.randint(0, vocab, (1, SEQ), generator=gen)
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            engine.step()
            losses.append(float(loss.detach().float()))
        ph.mark("steps")
        # A loss that is not finite (seen with DeepSpeed 0.14.1 at 2 ranks, now and then) is
        # written as null, with losses_finite false: JSON has no NaN, and validate --probe
        # must still read the cell's placement.
        losses_finite = all(math.isfinite(x) for x in losses)
        losses = [x if math.isfinite(x) else None for x in losses]
        digest_full = full_fp32_digest(engine, model)
        ph.mark("full_digest")
        if probe is None:   # the twin of a probed cell: the same run without the probe
            if rank == 0:
                with open(os.path.join(cdir, "noprobe.json"), "w") as f:
                    json.dump({"cell": cell["id"], "fp32_full_sha256": digest_full, "losses": losses,
                               "losses_finite": losses_finite}, f, indent=1)
            if hasattr(engine, "destroy"):
                engine.destroy()
            del engine, model, groups
            return None
        doc = probe.document()
        ph.mark("probe_document")
        doc["oracle"] = {
            "cell": cell["id"], "model": os.path.basename(cell["model_path"]),
            "param_groups": cell["param_groups"], "mode": cell["mode"], "ratio": cell["ratio"],
            "sub_group_size": sgs, "sub_groups_asked": cell["sub_group_size"], "losses": losses,
            "scheduler": cell.get("scheduler"), "reseed": bool(cell.get("reseed", True)),
            "dropout": cell.get("dropout"), "wrong": wrong_kind(cell), "expect": cell.get("expect", "PASS"),
            "losses_finite": losses_finite,
            "fp32_full_sha256": digest_full, "cell_seconds": round(time.perf_counter() - t0, 3),
            "phase_seconds": ph.seconds,
        }
        write_probe(doc, cdir, rank)
        probe.out = None  # written: nothing more at exit
        if hasattr(engine, "destroy"):
            engine.destroy()
        del engine, probe, model, groups
        return None
    except Exception as ex:  # noqa: BLE001 -- one failing cell is recorded, the others go on
        return cell_failed(ex, cdir, rank)
    finally:
        cell_done(acc, old_name, log)


def run_trainer_cell(cell, out, ds_ver):
    """A cell run by transformers.Trainer itself (TrainingArguments(deepspeed=config), the HF
    integration filling the config's "auto" values), with ratiolab_probe.TrainerCallback: the
    Trainer builds the optimizer (one flat group: the DeepSpeed config has an optimizer block)
    and its own linear warmup schedule, a client scheduler DeepSpeed is given as a callable.
    Writes what run_cell writes."""
    import transformers
    rank, cdir, log, acc, old_name = cell_start(cell, out)
    t0 = time.perf_counter()
    try:
        if cell["mode"] == "split":
            acc._name = "cpu:0"
        model = build_model(cell["model_path"], cell.get("dropout"))
        groups = [{"params": [p for p in model.parameters() if p.requires_grad]}]
        sgs = resolve_sgs(cell, model, groups, dist.get_world_size())
        config = {
            "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto",
            "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                        "weight_decay": "auto"}},
            "bf16": {"enabled": "auto"},
            "zero_optimization": {"stage": 3, "sub_group_size": sgs,
                                  "offload_optimizer": {"device": "cpu", "pin_memory": True, "ratio": cell["ratio"]}},
            "steps_per_print": 1000,
        }
        with open(os.path.join(cdir, "ds_config.json"), "w") as f:
            json.dump(config, f, indent=1)
        gen = torch.Generator().manual_seed(1000)
        vocab = model.config.vocab_size
        data = [{"input_ids": torch.randint(2, vocab, (SEQ,), generator=gen),
                 "labels": torch.randint(2, vocab, (SEQ,), generator=gen)} for _ in range(16)]
        args = transformers.TrainingArguments(
            output_dir=os.path.join(cdir, "trainer"), per_device_train_batch_size=1, max_steps=STEPS,
            learning_rate=1e-3, weight_decay=0.01, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
            lr_scheduler_type="linear", warmup_steps=4, bf16=cell.get("dtype", "fp32") == "bf16",
            deepspeed=config, save_strategy="no", report_to=[], logging_steps=1, seed=1234,
            dataloader_num_workers=0, disable_tqdm=True)
        cb = ratiolab_probe.TrainerCallback(out=os.path.join(cdir, "probe.json"), digest_step=STEPS,
                                            audit_step=cell.get("audit_step"))
        trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[cb])
        trainer.train()
        engine = trainer.model_wrapped
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        digest_full = full_fp32_digest(engine, model)
        doc = cb.probe.document()
        doc["oracle"] = {
            "cell": cell["id"], "model": os.path.basename(cell["model_path"]),
            "param_groups": cell["param_groups"], "mode": cell["mode"], "ratio": cell["ratio"],
            "sub_group_size": sgs, "sub_groups_asked": cell["sub_group_size"], "losses": losses,
            "losses_finite": all(math.isfinite(x) for x in losses), "scheduler": "trainer-linear",
            "reseed": False, "dropout": cell.get("dropout"), "wrong": None, "trainer": True,
            "expect": cell.get("expect", "PASS"),
            "fp32_full_sha256": digest_full, "cell_seconds": round(time.perf_counter() - t0, 3),
        }
        write_probe(doc, cdir, rank)
        cb.probe.out = None
        if hasattr(engine, "destroy"):
            engine.destroy()
        del engine, trainer, model, cb
        return None
    except Exception as ex:  # noqa: BLE001 -- one failing cell is recorded, the others go on
        return cell_failed(ex, cdir, rank)
    finally:
        cell_done(acc, old_name, log)


def wrong_kind(cell):
    """The deliberate error a cell carries ("lr x2 on the backup optimizer, group 0", "skipped
    sub-group 2 at step 3"), None for a true run."""
    if cell.get("wrong_lr_group") is not None:
        return "lr x2 on the %s optimizer, group %d" % (cell.get("wrong_lr_optimizer", "backup"), cell["wrong_lr_group"])
    if cell.get("skip_subgroup") is not None:
        return "skipped sub-group %d at step %d" % (cell["skip_subgroup"], cell.get("audit_step") or STEPS)
    return None


class Phases:
    """Wall seconds of a cell's parts (model, initialize, probe_attach, steps, full_digest,
    probe_document), for the launch's profile; not recorded in tests/deepspeed."""

    def __init__(self):
        self.t = time.perf_counter()
        self.seconds = {}

    def mark(self, name):
        now = time.perf_counter()
        self.seconds[name] = round(now - self.t, 3)
        self.t = now


def harness_speedups():
    """Two costs of the harness, not of DeepSpeed's work, cut without touching what a step computes:
    * py-cpuinfo's get_cpu_info() starts a subprocess (about 0.3-1.8 s here) and DeepSpeedCPUAdam
      calls it in every constructor, i.e. once per cell: the first answer is kept and copies of it
      returned (the machine does not change during a launch).
    * gc.collect() walks every object the imports of torch, transformers and DeepSpeed made (0.25 s
      to 1.1 s per call here); DeepSpeed 0.14's see_memory_usage(force=True) calls it ten times per
      engine, the oracle once per cell. gc.freeze() after the imports (and after each cell's
      collection) moves the survivors out of the collector's generations: a later gc.collect()
      only looks at what the cell made. Objects are freed by reference counts as before."""
    import copy
    import functools
    import cpuinfo
    once = functools.lru_cache(maxsize=1)(cpuinfo.get_cpu_info)
    cpuinfo.get_cpu_info = lambda: copy.deepcopy(once())


def torch_compat():
    """DeepSpeed 0.14.x imports torch's private _get_socket_with_port (elastic agent, unused here),
    which torch 2.4 removed; an equivalent is put back before DeepSpeed is imported. Touches
    nothing a training step uses."""
    import torch.distributed.elastic.agent.server.api as api
    if not hasattr(api, "_get_socket_with_port"):
        import socket

        def _get_socket_with_port():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("localhost", 0))
            return s

        api._get_socket_with_port = _get_socket_with_port
        return ["torch.distributed.elastic.agent.server.api._get_socket_with_port"]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    t_torch = time.time()
    shims = torch_compat()
    harness_speedups()
    import deepspeed
    import transformers  # noqa: F401 -- imported once here, timed with DeepSpeed
    import transformers.models.gpt2.modeling_gpt2  # noqa: F401 -- the lazy model modules, before the freeze
    import transformers.models.llama.modeling_llama  # noqa: F401
    import transformers.models.t5.modeling_t5  # noqa: F401
    import deepspeed.ops.adam  # noqa: F401
    gc.collect()
    gc.freeze()
    t_import = time.time()
    # DeepSpeed's logger at INFO, so its configuration and version lines are logged (0.19 starts it
    # at WARNING; a user sets the launcher's --log_level info or "log_level": "info" for the same).
    from deepspeed.utils import logging as ds_logging
    if hasattr(ds_logging, "set_log_level_from_string"):
        ds_logging.set_log_level_from_string("info")
    else:
        ds_logging.logger.setLevel(logging.INFO)
    deepspeed.init_distributed(dist_backend="gloo")
    t_dist = time.time()
    with open(a.cells) as f:
        cells = json.load(f)
    failed = 0
    t0 = time.perf_counter()
    launch0 = float(os.environ.get("DS_ORACLE_LAUNCH_T0", _T_MAIN))
    if dist.get_rank() == 0:
        print("ds_oracle: profile: launcher to main %.2f s, import torch %.2f s, import deepspeed+transformers "
              "%.2f s, init_distributed %.2f s" % (_T_MAIN - launch0, t_torch - _T_MAIN, t_import - t_torch,
                                                   t_dist - t_import), flush=True)
    for k, cell in enumerate(cells):
        c0 = time.perf_counter()
        err = (run_trainer_cell if cell.get("trainer") else run_cell)(cell, a.out, deepspeed.__version__)
        c1 = time.perf_counter()
        dist.barrier()
        if err:
            failed += 1
        if dist.get_rank() == 0:
            print("ds_oracle: [%d/%d] %s %s %.2f s (barrier %.2f s)" % (k + 1, len(cells), cell["id"], err or "ok",
                                                                       c1 - c0, time.perf_counter() - c1), flush=True)
    if dist.get_rank() == 0:
        print("ds_oracle: %d cells, %d failed, %.1f s" % (len(cells), failed, time.perf_counter() - t0), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
