/* cli/sim_opts.c — see sim_opts.h. */
#include <string.h>

#include "cli/sim_opts.h"

enum { M_HW = 2000, M_SCHEDULE, M_CKPT, M_GA, M_NUMA, M_RESERVE, M_CPU_OPT, M_GPU_IDS, M_GPU_MEM, M_HOST_MEM, M_PCIE_GEN, M_ATTENTION, M_INTRAOP, M_HOST_BASELINE, M_CPU_BINDING, M_CPU_CORES, M_THP, M_PREFETCH };

const struct cli_opt cli_sim_opts[] = {
    {"hw", "NAME|FILE", "hardware profile (ratiolab catalog) or a profile file (default dgx1-v100)", M_HW},
    {"schedule", "S", "optimizer step: deepspeed (the --deepspeed-version's step, default) or overlap (ratiolab's pipeline)", M_SCHEDULE},
    {"checkpoint-activations", NULL, "full activation checkpointing (recompute in backward)", M_CKPT},
    {"grad-accum", "N", "micro-steps per step, overrides the config (default: its gradient_accumulation_steps, else train_batch_size / micro-batch / DP as DeepSpeed derives it, else 1)", M_GA},
    {"numa", "M", "host buffers and CPU Adam threads: local (bound to the GPU's socket, default) or interleave", M_NUMA},
    {"reserve", "BYTES", "GPU memory outside the allocator (default: the profile's CUDA context + NCCL + allocator model)", M_RESERVE},
    {"cpu-optimizer", "O", "what updates the CPU share: deepspeed (DeepSpeedCPUAdam, default) or torch (torch.optim.AdamW)", M_CPU_OPT},
    {"gpu-ids", "LIST", "the node's GPUs the ranks use, e.g. 0,2,4,6 or 4-7 (default: the first ones, as a launcher)", M_GPU_IDS},
    {"gpu-mem", "BYTES", "GPU memory per GPU, overrides the profile's (e.g. 16GiB)", M_GPU_MEM},
    {"host-mem", "BYTES", "host memory per node, overrides the profile's (e.g. 512GiB)", M_HOST_MEM},
    {"host-baseline", "BYTES", "host memory of one rank's process before its model states, overrides the profile's (e.g. what calibrate --host-baseline-from takes from a monitor CSV; default 4GiB)", M_HOST_BASELINE},
    {"pcie-gen", "N", "PCIe generation 3, 4 or 5 of the host-GPU links and switch uplinks, overrides the profile's", M_PCIE_GEN},
    {"attention", "flash|materialized", "attention's activations: flash (fused kernels, no s x s matrix) or materialized (default: the framework's, printed)", M_ATTENTION},
    {"intraop-threads", "N", "PyTorch intra-op threads per rank (its CPU casts and copies; default: the node's physical cores, PyTorch's default when the launcher leaves OMP_NUM_THREADS unset)", M_INTRAOP},
    {"cpu-binding", "none|per-rank", "the ranks' host threads: none (every rank's OpenMP team is the node's cores, DeepSpeed's launcher's default) or per-rank (deepspeed --bind_cores_to_rank: cores // ranks each)", M_CPU_BINDING},
    {"cpu-cores", "N", "physical cores of a node the launcher divides among its ranks (--bind_core_list's count; default: the profile's cores)", M_CPU_CORES},
    {"thp", "always|madvise|never", "transparent huge pages mode of the nodes, overrides the profile's host.thp_mode: the page size of a fresh pageable temporary (2 MiB under always, 4 KiB otherwise)", M_THP},
    {"zero3-prefetch", "on|off", "DeepSpeed's ZeRO-3 parameter prefetch: on (its trace complete, the steady state, default) or off (the trace recorded or invalidated: every gather waits for the previous block)", M_PREFETCH},
    {NULL, NULL, NULL, 0},
};

void cli_sim_init(struct cli_sim *s)
{
    memset(s, 0, sizeof *s);
    s->hw = "dgx1-v100";
    sim_train_defaults(&s->train);
}

int cli_sim_err(struct rl_err *e)
{
    cli_err_flag(e, "gpu_ids", "--gpu-ids");
    cli_err_flag(e, "cpu_optimizer", "--cpu-optimizer");
    /* fields the simulator names inside its messages ("seq_len 4096 x micro_batch 8 gives ...") */
    static const char *const words[][2] = {
        {"seq_len", "--seq-len"}, {"micro_batch", "--micro-batch"}, {"gpus_per_node", "--gpus-per-node"},
        {"grad_accum", "--grad-accum"}, {"another hw", "another --hw"},
    };
    for (size_t i = 0; i < RL_COUNT(words); i++)
        cli_err_word(e, words[i][0], words[i][1]);
    return e->code;
}

void cli_warn_decimal_gpu_mem(const char *flag, const char *v, int64_t bytes)
{
    size_t l = strlen(v);
    if (l >= 2 && (v[l - 1] == 'B' || v[l - 1] == 'b') && strchr("kKmMgGtT", v[l - 2]))
        fprintf(stderr, "ratiolab: warning: %s %s is %.2f GiB (decimal units, 10^%d B), and that is what is used; a GPU "
                "sold as \"%.*s\" has that many GiB: write %.*siB if you mean the card\n", flag, v, (double)bytes / RL_GIB,
                strchr("kK", v[l - 2]) ? 3 : strchr("mM", v[l - 2]) ? 6 : strchr("gG", v[l - 2]) ? 9 : 12,
                (int)l, v, (int)(l - 1), v);
}

int cli_sim_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct cli_sim *s = ctx;
    switch (id) {
    case M_HW: s->hw = v; s->hw_given = true; return 0;
    case M_SCHEDULE:
        return sim_schedule_parse(v, &s->train.schedule, e) ? cli_err_flag(e, "schedule", "--schedule") : 0;
    case M_CKPT: s->train.checkpoint_activations = true; return 0;
    case M_GA: return rl_parse_i64("--grad-accum", v, 1, 1 << 16, &s->train.grad_accum, e);
    case M_NUMA:
        if (rl_streq(v, "local"))
            s->train.numa_interleave = false;
        else if (rl_streq(v, "interleave"))
            s->train.numa_interleave = true;
        else
            return rl_errf(e, RL_EINVAL, "--numa: '%s' is not allowed; allowed: local, interleave", v);
        return 0;
    case M_RESERVE: return rl_parse_bytes("--reserve", v, &s->train.gpu_reserve_bytes, e);
    case M_CPU_OPT: return sim_cpu_optimizer_parse(v, &s->train.cpu_optimizer, e) ? cli_sim_err(e) : 0;
    case M_GPU_IDS: return sim_gpu_ids_parse(v, s->train.gpu_ids, &s->train.n_gpu_ids, e) ? cli_sim_err(e) : 0;
    case M_GPU_MEM:
    case M_HOST_MEM: {
        const char *flag = id == M_GPU_MEM ? "--gpu-mem" : "--host-mem";
        int64_t *out = id == M_GPU_MEM ? &s->gpu_mem_bytes : &s->host_mem_bytes;
        if (rl_parse_bytes(flag, v, out, e))
            return RL_EINVAL;
        if (*out <= 0)
            return rl_errf(e, RL_EINVAL, "%s: '%s' must be larger than 0", flag, v);
        if (id == M_GPU_MEM)
            cli_warn_decimal_gpu_mem(flag, v, *out);
        return 0;
    }
    case M_HOST_BASELINE:
        s->host_baseline_set = true;
        return rl_parse_bytes("--host-baseline", v, &s->host_baseline_bytes, e);
    case M_ATTENTION: return plan_attention_parse("--attention", v, &s->train.attention, e);
    case M_INTRAOP: {
        int64_t n;
        if (rl_parse_i64("--intraop-threads", v, 1, 4096, &n, e))
            return RL_EINVAL;
        s->train.intraop_threads = (int)n;
        return 0;
    }
    case M_CPU_BINDING:
        return sim_cpu_binding_parse(v, &s->train.cpu_binding, e) ? cli_err_flag(e, "cpu_binding", "--cpu-binding") : 0;
    case M_CPU_CORES: {
        int64_t n;
        if (rl_parse_i64("--cpu-cores", v, 1, 4096, &n, e))
            return RL_EINVAL;
        s->train.cpu_cores = (int)n;
        return 0;
    }
    case M_THP:
        if (!rl_streq(v, "always") && !rl_streq(v, "madvise") && !rl_streq(v, "never"))
            return rl_errf(e, RL_EINVAL, "--thp: '%s' is not allowed; allowed: always, madvise, never", v);
        s->thp = v;
        return 0;
    case M_PREFETCH:
        if (!rl_streq(v, "on") && !rl_streq(v, "off"))
            return rl_errf(e, RL_EINVAL, "--zero3-prefetch: '%s' is not allowed; allowed: on, off", v);
        s->train.zero3_prefetch_off = rl_streq(v, "off");
        return 0;
    case M_PCIE_GEN: {
        int64_t g;
        if (rl_parse_i64("--pcie-gen", v, 3, 5, &g, e))
            return RL_EINVAL;
        s->pcie_gen = (int)g;
        return 0;
    }
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

/* Host<->GPU bandwidth per PCIe generation, GB/s per direction (pinned H2D, pinned D2H, switch
 * uplink): the sourced figures of the catalog's profiles of that generation (dgx1-v100 Gen3,
 * dgx-a100-* Gen4, dgx-h100 / hgx-h200 Gen5). Pageable copies keep the profile's pageable/pinned
 * proportion. */
static const struct {
    double h2d, d2h, uplink;
} pcie_gen[] = {[3] = {12.2, 12.9, 13.0}, [4] = {25.0, 25.0, 25.0}, [5] = {55.0, 55.0, 55.0}};

static void apply_pcie_gen(struct hw_profile *hw, int gen)
{
    hw->h2d_pageable_gbps *= pcie_gen[gen].h2d / hw->h2d_pinned_gbps;
    hw->d2h_pageable_gbps *= pcie_gen[gen].d2h / hw->d2h_pinned_gbps;
    hw->h2d_pinned_gbps = pcie_gen[gen].h2d;
    hw->d2h_pinned_gbps = pcie_gen[gen].d2h;
    for (int i = 0; i < hw->n_switches; i++)
        hw->sw[i].uplink_gbps = pcie_gen[gen].uplink;   /* an x16 uplink of that generation */
}

int cli_sim_load_hw(struct cli_sim *s, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e)
{
    if (c->checkpoint_activations)   /* a Megatron launch line with --checkpoint-activations */
        s->train.checkpoint_activations = true;
    int rc = sim_hw_load(hw, c->catalog, s->hw, e);
    if (rc)
        return rc;
    if (s->gpu_mem_bytes > 0 && s->gpu_mem_bytes != hw->gpu_mem_bytes) {
        /* Say what is modelled: the profile's GPU with another memory size. */
        char model[sizeof hw->gpu_model];
        snprintf(model, sizeof model, "%.60s (memory set to %.2f GiB)", hw->gpu_model, (double)s->gpu_mem_bytes / RL_GIB);
        snprintf(hw->gpu_model, sizeof hw->gpu_model, "%s", model);
    }
    if (s->gpu_mem_bytes > 0)
        hw->gpu_mem_bytes = s->gpu_mem_bytes;
    if (c->zero.dtype == PLAN_BF16 && !hw->bf16_tensor_cores)
        fprintf(stderr, "ratiolab: warning: dtype bf16 on %s, which has no bf16 tensor cores (profile %s: "
                "gpu.bf16_tensor_cores 0): PyTorch runs bf16 GEMMs there far below the profile's tensor_tflops, %s; "
                "fp16 (--dtype fp16) is what this GPU runs fast\n", hw->gpu_model, hw->name,
                s->memory_only ? "which slows the step (the memory judged here is the same)" : "so the step time is optimistic");
    if (s->host_mem_bytes > 0)
        hw->host_mem_bytes = s->host_mem_bytes;
    if (s->host_baseline_set)
        hw->host_baseline_bytes = s->host_baseline_bytes;
    if (s->pcie_gen)
        apply_pcie_gen(hw, s->pcie_gen);
    if (s->thp && (rc = sim_hw_set_thp(hw, s->thp, e)))
        return cli_err_flag(e, "thp_mode", "--thp");
    return 0;
}

void cli_sim_warn_layout(const struct plan_layout *l)
{
    if (l->tp > l->gpus_per_node && l->gpus_per_node > 0)
        fprintf(stderr, "ratiolab: warning: TP %d spans nodes of %d GPUs: every tensor-parallel all-reduce crosses the "
                "inter-node network (modelled as NCCL's ring or tree at the profile's network.inter_busbw_gbps), which is slower than TP within a "
                "node; keep TP <= GPUs per node if you can\n", l->tp, l->gpus_per_node);
}

void cli_sim_warn_defaults(const struct hw_profile *hw, const struct plan_layout *l)
{
    /* The inter-node collective figures are used only when the layout spans nodes. */
    const char *coll = l->nodes > 1 ? hw->coll_defaulted : "";
    if (!hw->defaulted[0] && !coll[0])
        return;
    fprintf(stderr, "ratiolab: warning: profile %s: the prediction uses figures that are defaults or unverified, not "
            "sourced for this machine: ", hw->name);
    for (const char *p = hw->defaulted; *p; p++)
        fputs(*p == ',' ? ", " : (char[]){*p, 0}, stderr);
    if (coll[0] && hw->defaulted[0])
        fputs(", ", stderr);
    for (const char *p = coll; *p; p++)
        fputs(*p == ',' ? ", " : (char[]){*p, 0}, stderr);
    fprintf(stderr, " (measure them with ratiolab calibrate%s or source them in the profile)\n",
            strstr(hw->defaulted, "host.zero3_") ? "; the host.zero3_* figures with scripts/ds_hook_cost.py" : "");
}

void cli_sim_settings(const struct sim_step_result *r, const struct sim_train *t, char *buf, size_t n)
{
    char ver[48] = "";
    if (t->schedule == STEP_SCHED_DS012)
        snprintf(ver, sizeof ver, " %s", RL_VERSION_S(r->ds_version));
    snprintf(buf, n, "%s%s, CPU optimizer %s; micro-batch %lld, seq %lld, grad accum %lld, activation checkpointing %s, "
             "attention %s, NUMA %s%s",
             sim_schedule_name(t->schedule), ver, sim_cpu_optimizer_name(t->cpu_optimizer), (long long)r->micro_batch,
             (long long)r->seq_len, (long long)r->grad_accum, t->checkpoint_activations ? "on" : "off",
             plan_attention_name(r->attention), t->numa_interleave ? "interleave" : "local",
             t->cpu_binding == SIM_BIND_PER_RANK ? ", CPU binding per-rank" : "");
}

enum plan_attention cli_sim_attention(const struct sim_train *t, const struct plan_arch *a)
{
    if (t->attention != PLAN_ATTN_DEFAULT)
        return t->attention;
    return a->attention == PLAN_ATTN_FLASH ? PLAN_ATTN_FLASH : PLAN_ATTN_MATERIALIZED;   /* as the simulator resolves it */
}

const char *cli_sim_attention_origin(const struct sim_train *t, const struct plan_arch *a)
{
    return t->attention != PLAN_ATTN_DEFAULT ? "--attention" : plan_attention_origin(a);
}
