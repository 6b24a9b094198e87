#!/usr/bin/env python3
"""scripts/ds_hook_cost.py — ZeRO-3's host time per submodule, measured with real DeepSpeed.

Run with an oracle venv's python (scripts/ds-oracle-venv.sh) on the CPU accelerator, one process:

    PYTHONPATH=build-ds/ds-0.18.9 build-ds/venv-0.19.8/bin/python scripts/ds_hook_cost.py

For transformers' Llama and GPT-2 at 32 layers and tiny widths (hidden 64, 16 tokens, so that the
operators' arithmetic is negligible and what is left is the host's work), it counts the submodules
one forward calls (forward pre-hooks) and times, as the mean of 20 passes after 6 warm-ups, one
forward and one backward of a ZeRO-3 engine (optimizer offloaded to the CPU, as the profiles'
runs) and of the same model without DeepSpeed. Per called submodule, the engine's forward and
backward time is what the simulator charges the host per submodule and pass
(host.zero3_us_per_module_forward / _backward, sim/README.md "ZeRO-3's host time per
submodule"): the submodule's hooks and its eager dispatch together. Prints one JSON object.
"""
import os
os.environ.setdefault('DS_ACCELERATOR', 'cpu')
os.environ.setdefault('OMP_NUM_THREADS', '1')
os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=os.environ.get('MASTER_PORT', '29519'), RANK='0',
                  WORLD_SIZE='1', LOCAL_RANK='0')
import json, logging, platform, time, warnings
warnings.filterwarnings('ignore')
import torch, deepspeed, transformers
deepspeed.utils.logger.setLevel(logging.ERROR)

LAYERS, TOKENS, PASSES, WARMUP = 32, 16, 20, 6


def make(kind):
    if kind == 'llama':
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=64, intermediate_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256, max_position_embeddings=64))
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=64, n_layer=LAYERS, n_head=4, vocab_size=256,
                                                                 n_positions=64))


def called_modules(model, tokens):
    """Submodules one forward calls, and of them those of the first layer."""
    seen = set()
    hooks = [m.register_forward_pre_hook(lambda m, a, n=n: seen.add(n)) for n, m in model.named_modules()]
    model(tokens)
    for h in hooks:
        h.remove()
    first = [n for n in seen if n.startswith(('model.layers.0.', 'transformer.h.0.')) or n in ('model.layers.0',
                                                                                              'transformer.h.0')]
    return len(seen), len(first)


def passes(forward, backward):
    """Mean seconds of one forward and one backward."""
    tf = tb = 0.0
    for i in range(WARMUP + PASSES):
        t0 = time.perf_counter()
        loss = forward()
        t1 = time.perf_counter()
        backward(loss)
        t2 = time.perf_counter()
        if i >= WARMUP:
            tf += t1 - t0
            tb += t2 - t1
    return tf / PASSES, tb / PASSES


deepspeed.init_distributed(dist_backend='gloo')
tokens = torch.randint(0, 256, (1, TOKENS), generator=torch.Generator().manual_seed(0))
out = {'deepspeed': deepspeed.__version__, 'torch': torch.__version__, 'transformers': transformers.__version__,
       'cpu': platform.processor() or platform.machine(), 'layers': LAYERS, 'tokens': TOKENS}
for kind in ('llama', 'gpt2'):
    torch.manual_seed(0)
    plain = make(kind)
    n, per_layer = called_modules(plain, tokens)
    pf, pb = passes(lambda: plain(tokens, labels=tokens).loss, lambda l: (l.backward(), plain.zero_grad(set_to_none=True)))
    cfg = {'train_micro_batch_size_per_gpu': 1,
           'zero_optimization': {'stage': 3, 'offload_optimizer': {'device': 'cpu'}},
           'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-4}}}
    with deepspeed.zero.Init(config_dict_or_path=cfg):
        model = make(kind)
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    zf, zb = passes(lambda: engine(tokens, labels=tokens).loss, lambda l: engine.backward(l))
    out[kind] = {'modules_called': n, 'modules_per_layer': per_layer,
                 'plain_forward_ms': round(pf * 1e3, 2), 'plain_backward_ms': round(pb * 1e3, 2),
                 'zero3_forward_ms': round(zf * 1e3, 2), 'zero3_backward_ms': round(zb * 1e3, 2),
                 'zero3_us_per_module_forward': round(zf * 1e6 / n, 1),
                 'zero3_us_per_module_backward': round(zb * 1e6 / n, 1)}
print(json.dumps(out, indent=1))
