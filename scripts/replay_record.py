"""scripts/replay_record.py — the real optimizers' step 3 on fixed data, as an audit file.

Run with a DeepSpeed venv's python (DS_ACCELERATOR=cpu, TORCH_EXTENSIONS_DIR set):
    python scripts/replay_record.py OUT.rla [--no-ds]
For each case below it builds one float32 parameter of N elements (seed 40), runs three steps of
the optimizer with fresh gradients (plain, tiny, huge and zero ones mixed in), and records the
state around step 3 (kernels/adam_replay.h replays it; tests/check_replay.c compares bit for
bit). N = 4 * 64 + 5: on AVX2 (8 lanes) and AVX-512 (16) both the vector body and the scalar
tail run; DeepSpeed again with 7 elements (all scalar tail). The DeepSpeed build's SIMD width
and FMA use are what its op builder compiled with (ratiolab_probe.audit_ds_build).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import ratiolab_probe  # noqa: E402

N = 4 * 64 + 5
STEPS = 3


def grads(gen, k, n):
    g = torch.randn(n, generator=gen) * 10.0 ** float(-k)
    g[0:4] = torch.tensor([0.0, 1e-30, -3e5, 7e-8])[:n]
    return g


def run(make, opt_name, hp, simd, n=N):
    gen = torch.Generator().manual_seed(40)
    p = torch.nn.Parameter(torch.randn(n, generator=gen) * 0.1)
    opt = make([p])
    rec = None
    for k in range(1, STEPS + 1):
        p.grad = grads(gen, k, n)
        if k == STEPS:
            st = opt.state.get(p, {})
            rec = {"param_before": p.detach().clone(), "grad": p.grad.detach().clone(),
                   "exp_avg_before": st["exp_avg"].clone(), "exp_avg_sq_before": st["exp_avg_sq"].clone()}
        opt.step()
    st = opt.state[p]
    g = opt.param_groups[0]
    step = st["step"]
    step = int(step.item()) if torch.is_tensor(step) else int(step)
    rec.update({"param_after": p.detach().clone(), "exp_avg_after": st["exp_avg"].clone(),
                "exp_avg_sq_after": st["exp_avg_sq"].clone(), "optimizer": opt_name, "rank": 0,
                "sub_group": len(CASES_DONE), "param_group": 0, "optimizer_object": 0,
                "simd_width": simd, "step": step, "numel": n, "lr": g["lr"], "beta1": g["betas"][0],
                "beta2": g["betas"][1], "eps": g["eps"], "weight_decay": g["weight_decay"],
                "group": {"lr": g["lr"], "beta1": g["betas"][0], "beta2": g["betas"][1], "eps": g["eps"],
                          "weight_decay": g["weight_decay"]},
                "adamw_mode": hp.get("adamw_mode", True), "tail_fma": hp.get("tail_fma", False), "bias_correction": hp.get("bias_correction", True)})
    CASES_DONE.append(rec)


CASES_DONE = []


def main():
    out = sys.argv[1]
    torch.set_num_threads(1)
    for wd in (0.01, 0.0):
        for foreach in (False, True):
            run(lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd,
                                             foreach=foreach),
                "torch_adamw_foreach" if foreach else "torch_adamw", {}, 0)
    if "--no-ds" not in sys.argv:
        from deepspeed.ops.adam import DeepSpeedCPUAdam
        simd, fma, args = ratiolab_probe.audit_ds_build()
        print("replay_record: DeepSpeedCPUAdam build: simd_width %d, tail_fma %s (%s)" % (simd, fma, " ".join(args)))
        # N elements (vector body and tail), then 7 (fewer than one vector: all scalar tail)
        for n in (N, 7):
            for adamw in (True, False):
                for wd in (0.01, 0.0):
                    hp = {"adamw_mode": adamw, "bias_correction": True, "tail_fma": fma}
                    run(lambda ps: DeepSpeedCPUAdam(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd,
                                                    adamw_mode=adamw),
                        "ds_cpu_adam", hp, simd, n)
    ratiolab_probe.audit_write(out, CASES_DONE)
    print("replay_record: %d records to %s" % (len(CASES_DONE), out))


if __name__ == "__main__":
    main()
