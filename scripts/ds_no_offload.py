#!/usr/bin/env python3
"""scripts/ds_no_offload.py — what a live ZeRO-3 engine without optimizer offload keeps (issue 38 item 6).

Run with an oracle venv's python (scripts/ds-oracle-venv.sh) on the CPU accelerator, one process:
a tiny GPT-2 (hidden 64, 2 layers, vocabulary 512), bf16, torch AdamW (no JIT build for the
optimizer; 0.19 builds its shm comm op when the process group starts). Prints the flat gradient
buffer's dtype, size and device and whether the fp32 gradients are gone after initialization.
Recorded in plan/README.md ("The ledger without optimizer offload").
"""
import os, sys
os.environ.setdefault('DS_ACCELERATOR', 'cpu')
os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='29517', RANK='0', WORLD_SIZE='1', LOCAL_RANK='0')
import logging, warnings
warnings.filterwarnings('ignore')
import torch, deepspeed, transformers
deepspeed.utils.logger.setLevel(logging.ERROR)
deepspeed.init_distributed(dist_backend='gloo')
cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=512, n_positions=64)
torch.manual_seed(1234)
model = transformers.GPT2LMHeadModel(cfg)
ds = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "sub_group_size": 20000},
      "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds)
o = engine.optimizer
b = o.grad_partitions_flat_buffer
print("deepspeed", deepspeed.__version__, "flat_grad_buffer", b.dtype, b.numel(), b.device)
print("fp32 groups", len(o.fp32_partitioned_groups_flat), "grads None after init:",
      all(g.grad is None for g in o.fp32_partitioned_groups_flat), "fp32 numel", sum(g.numel() for g in o.fp32_partitioned_groups_flat))
print("params", sum(p.ds_numel for p in model.parameters()))
