#!/usr/bin/env python3
"""scripts/ds_hook_cost.py — ZeRO-3's host time per submodule, measured with real DeepSpeed.

Run with an oracle venv's python (scripts/ds-oracle-venv.sh) on the CPU accelerator:

    PYTHONPATH=build-ds/ds-0.18.9 build-ds/venv-0.19.8/bin/python scripts/ds_hook_cost.py

For transformers' Llama and GPT-2 at 32 layers and tiny widths (hidden 64, 16 tokens, so that the
operators' arithmetic is negligible and what is left is the host's work), it counts the submodules
one forward calls (forward pre-hooks) and times, as the mean of 20 iterations after 6 warm-ups, one
forward and one backward of a ZeRO-3 engine (optimizer offloaded to the CPU, as the profiles' runs;
an optimizer step, not timed, after each backward, so that every forward gathers its parameters
again as in training), and of the same model without DeepSpeed.

The engine runs twice, on one rank and on two (torch.distributed.run, gloo):
* on one rank DeepSpeed takes its gather-free path (partition_parameters.py: num_partitions == 1
  returns _no_gather_coalesced), which gives host.zero3_us_per_module_forward / _backward;
* on two ranks every fetch goes through the all-gather path and the backward through the
  reduce-scatter path; what that adds per submodule is host.zero3_partitioned_us_per_module_forward
  / _backward (sim/README.md "ZeRO-3's host time per submodule").
On two ranks, once the engine is built, the collectives (all-gather, reduce-scatter, all-reduce,
all-to-all) are replaced by local copies of the right shapes that return a finished handle: DeepSpeed
does all of its own work around them, but gloo's transport, which on a GPU node is NCCL's on the
GPU and which on this 2-vCPU machine would take the host's cores (about 1 ms per all-gather here),
is not timed. Broadcasts and barriers stay real (DeepSpeed's cross-rank checks).

The ZeRO-3 knobs are DeepSpeed's defaults at the proportions of an 8-billion-parameter model:
stage3_prefetch_bucket_size (5e7), stage3_max_live_parameters and stage3_max_reuse_distance (1e9)
scaled by the parameters of one tiny layer over those of one Llama-3-8B layer (218,112,000: q and o
4096 x 4096, k and v 4096 x 1024, gate, up and down 4096 x 14336, two norms of 4096), so that a
coalesced fetch spans as many submodules and as many layers stay gathered as in the 8B run; and
stage3_param_persistence_threshold 1000, so that the norms' weights stay resident and every linear
is partitioned, as at the default 1e5 for an 8B model. Prints one JSON object.
"""
import json
import os
import platform
import subprocess
import sys
import time

LAYERS, TOKENS, PASSES, WARMUP = 32, 16, 20, 6
BIG_LAYER = 218112000   # one Llama-3-8B layer's parameters: the proportions the knobs are scaled to
KINDS = ('llama', 'gpt2')
FIRST_LAYER = ('model.layers.0', 'transformer.h.0')   # the first layer's module name in each kind
FIRST_LAYER_PREFIX = tuple(n + '.' for n in FIRST_LAYER)


def make(transformers, kind):
    if kind == 'llama':
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=64, intermediate_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256, max_position_embeddings=64))
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=64, n_layer=LAYERS, n_head=4, vocab_size=256,
                                                                 n_positions=64))


class Done:
    """A collective's handle that has finished."""

    def wait(self, *args, **kwargs):
        return True

    def is_completed(self):
        return True


def local_collectives(dcomm, counts):
    """Replace the backend's collectives by local copies of the right shapes (see the module's text)."""
    cdb, world, rank = dcomm.comm.cdb, dcomm.get_world_size(), dcomm.get_rank()

    def done(kwargs):
        counts[0] += 1
        return Done() if kwargs.get('async_op') else None

    def all_gather_into_tensor(output_tensor, input_tensor, *args, **kwargs):
        output_tensor.view(world, -1).copy_(input_tensor.reshape(1, -1).expand(world, -1))
        return done(kwargs)

    def all_gather(tensor_list, tensor, *args, **kwargs):
        for t in tensor_list:
            t.copy_(tensor)
        return done(kwargs)

    def reduce_scatter_tensor(output_tensor, input_tensor, *args, **kwargs):
        output_tensor.copy_(input_tensor.view(world, -1)[rank].view_as(output_tensor))
        return done(kwargs)

    def reduce_scatter(output, input_list, *args, **kwargs):
        output.copy_(input_list[rank])
        return done(kwargs)

    def in_place(*args, **kwargs):
        return done(kwargs)

    def all_to_all_single(output, tensor, *args, **kwargs):
        output.copy_(tensor)
        return done(kwargs)

    for name, fn in (('all_gather_into_tensor', all_gather_into_tensor), ('all_gather', all_gather),
                     ('reduce_scatter_tensor', reduce_scatter_tensor), ('reduce_scatter', reduce_scatter),
                     ('all_reduce', in_place), ('all_reduce_coalesced', in_place),
                     ('all_to_all_single', all_to_all_single)):
        setattr(cdb, name, fn)


def worker():
    """One rank of one measurement; rank 0 prints one JSON line."""
    os.environ.setdefault('DS_ACCELERATOR', 'cpu')
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    import logging
    import warnings
    warnings.filterwarnings('ignore')
    import torch
    import deepspeed
    import deepspeed.comm as dcomm
    import transformers
    deepspeed.utils.logger.setLevel(logging.ERROR)
    deepspeed.init_distributed(dist_backend='gloo')
    world, rank = dcomm.get_world_size(), dcomm.get_rank()
    tokens = torch.randint(0, 256, (1, TOKENS), generator=torch.Generator().manual_seed(0))
    out = {'deepspeed': deepspeed.__version__, 'torch': torch.__version__, 'transformers': transformers.__version__,
           'ranks': world}
    counts = [0]
    for kind in KINDS:
        torch.manual_seed(0)
        plain = make(transformers, kind)
        numel = sum(p.numel() for p in plain.parameters())
        seen = set()
        hooks = [m.register_forward_pre_hook(lambda m, a, n=n: seen.add(n)) for n, m in plain.named_modules()]
        plain(tokens)
        for h in hooks:
            h.remove()
        n = len(seen)
        per_layer = sum(1 for s in seen if s.startswith(FIRST_LAYER_PREFIX) or s in FIRST_LAYER)
        layer = sum(p.numel() for name, p in plain.named_parameters()
                    if name.startswith(FIRST_LAYER_PREFIX))
        scale = layer / BIG_LAYER
        zero = {'stage': 3, 'offload_optimizer': {'device': 'cpu'},
                'stage3_prefetch_bucket_size': int(5e7 * scale), 'stage3_max_live_parameters': int(1e9 * scale),
                'stage3_max_reuse_distance': int(1e9 * scale), 'stage3_param_persistence_threshold': 1000}
        cfg = {'train_micro_batch_size_per_gpu': 1, 'zero_optimization': zero,
               'optimizer': {'type': 'AdamW', 'params': {'lr': 1e-4}}}
        rec = {'modules_called': n, 'modules_per_layer': per_layer, 'parameters': numel, 'layer_parameters': layer,
               'prefetch_bucket': zero['stage3_prefetch_bucket_size'],
               'max_live_and_reuse': zero['stage3_max_live_parameters']}
        if world == 1:   # the plain model, once
            pf = pb = 0.0
            for i in range(WARMUP + PASSES):
                t0 = time.perf_counter()
                loss = plain(tokens, labels=tokens).loss
                t1 = time.perf_counter()
                loss.backward()
                plain.zero_grad(set_to_none=True)
                t2 = time.perf_counter()
                if i >= WARMUP:
                    pf, pb = pf + t1 - t0, pb + t2 - t1
            rec.update(plain_forward_ms=round(pf / PASSES * 1e3, 2), plain_backward_ms=round(pb / PASSES * 1e3, 2))
        with deepspeed.zero.Init(config_dict_or_path=cfg):
            model = make(transformers, kind)
        engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
        if world > 1:
            local_collectives(dcomm, counts)
        zf = zb = 0.0
        cf = cb = 0
        for i in range(WARMUP + PASSES):
            torch.distributed.barrier()
            c0 = counts[0]
            t0 = time.perf_counter()
            loss = engine(tokens, labels=tokens).loss
            t1 = time.perf_counter()
            c1 = counts[0]
            engine.backward(loss)
            t2 = time.perf_counter()
            c2 = counts[0]
            engine.step()
            if i >= WARMUP:
                zf, zb, cf, cb = zf + t1 - t0, zb + t2 - t1, cf + c1 - c0, cb + c2 - c1
        rec.update(zero3_forward_ms=round(zf / PASSES * 1e3, 2), zero3_backward_ms=round(zb / PASSES * 1e3, 2),
                   us_per_module_forward=round(zf * 1e6 / PASSES / n, 1),
                   us_per_module_backward=round(zb * 1e6 / PASSES / n, 1),
                   collectives_forward=cf // PASSES, collectives_backward=cb // PASSES)
        out[kind] = rec
        del engine, model
    if rank == 0:
        print('RESULT ' + json.dumps(out), flush=True)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout.splitlines():
        if line.startswith('RESULT '):
            return json.loads(line[len('RESULT '):])
    sys.stderr.write(p.stderr[-4000:])
    sys.exit(f'ds_hook_cost.py: the measurement {" ".join(cmd[1:])} failed (exit {p.returncode})')


def main():
    me = os.path.abspath(__file__)
    port = os.environ.get('MASTER_PORT', '29519')
    env = dict(os.environ, DS_ACCELERATOR='cpu', OMP_NUM_THREADS='1', MASTER_ADDR='127.0.0.1', MASTER_PORT=port)
    one = run([sys.executable, me, '--worker'], dict(env, RANK='0', WORLD_SIZE='1', LOCAL_RANK='0'))
    two = run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port', port, me,
               '--worker'], env)
    out = {k: one[k] for k in ('deepspeed', 'torch', 'transformers')}
    out.update(cpu=platform.processor() or platform.machine(), layers=LAYERS, tokens=TOKENS)
    for kind in KINDS:
        a, b = one[kind], two[kind]
        rec = {k: a[k] for k in ('modules_called', 'modules_per_layer', 'parameters', 'layer_parameters', 'prefetch_bucket',
                                 'max_live_and_reuse', 'plain_forward_ms', 'plain_backward_ms')}
        rec['one_rank'] = {k: a[k] for k in ('zero3_forward_ms', 'zero3_backward_ms')}
        rec['two_ranks'] = {k: b[k] for k in ('zero3_forward_ms', 'zero3_backward_ms', 'collectives_forward',
                                              'collectives_backward')}
        rec['zero3_us_per_module_forward'] = a['us_per_module_forward']
        rec['zero3_us_per_module_backward'] = a['us_per_module_backward']
        rec['zero3_partitioned_us_per_module_forward'] = round(b['us_per_module_forward'] - a['us_per_module_forward'], 1)
        rec['zero3_partitioned_us_per_module_backward'] = round(b['us_per_module_backward'] - a['us_per_module_backward'],
                                                                1)
        out[kind] = rec
    print(json.dumps(out, indent=1))


if __name__ == '__main__':
    worker() if '--worker' in sys.argv[1:] else main()
