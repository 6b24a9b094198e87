/* sim/step.c — builds the task graph of one ZeRO-3 step for every GPU of a node, runs it on the
 * flow model and reduces the result to a step time, a per-phase breakdown and a memory
 * prediction. The machinery shared by both schedules lives here (blocks, resources, forward,
 * backward, bucket flushes); the task constructors of sim/step_build.h are sim/step_task.c, and
 * each schedule's own tasks are in its file: sim/step_ds.c (DeepSpeed's, per release) and
 * sim/step_overlap.c. Cost: O(ranks x (blocks x min(grad_accum, 4) + buckets + sub-groups + chunks))
 * tasks: a longer accumulation repeats the steady-state micro-step (sim/README.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_rules.h"
#include "sim/collective.h"
#include "sim/gemm.h"
#include "sim/step.h"
#include "sim/step_build.h"

static const char *const cpu_opt_names[] = {"deepspeed", "torch"};
_Static_assert(RL_COUNT(cpu_opt_names) == SIM_CPU_OPT_COUNT, "a name per enum sim_cpu_optimizer");

const char *sim_cpu_optimizer_name(enum sim_cpu_optimizer o)
{
    return (int)o >= 0 && o < SIM_CPU_OPT_COUNT ? cpu_opt_names[o] : "?";
}

int sim_cpu_optimizer_parse(const char *s, enum sim_cpu_optimizer *out, struct rl_err *e)
{
    for (int i = 0; i < SIM_CPU_OPT_COUNT; i++)
        if (rl_streq(s, cpu_opt_names[i])) {
            *out = (enum sim_cpu_optimizer)i;
            return 0;
        }
    return rl_errf(e, RL_EINVAL, "cpu_optimizer: '%s' is not allowed; allowed: deepspeed, torch", s ? s : "");
}

int sim_gpu_ids_parse(const char *s, int *ids, int *n, struct rl_err *e)
{
    *n = 0;
    bool seen[HW_MAX_GPUS] = {false};
    const char *q = s ? s : "";
    while (*q) {
        char *end;
        long lo = strtol(q, &end, 10), hi = lo;
        if (end == q || lo < 0 || lo >= HW_MAX_GPUS)
            goto bad;
        q = end;
        if (*q == '-') {
            hi = strtol(q + 1, &end, 10);
            if (end == q + 1 || hi < lo || hi >= HW_MAX_GPUS)
                goto bad;
            q = end;
        }
        for (long g = lo; g <= hi; g++) {
            if (seen[g])
                return rl_errf(e, RL_EINVAL, "gpu_ids: '%s' names GPU %ld twice; allowed: distinct GPU "
                               "indices of the node", s, g);
            seen[g] = true;
            ids[(*n)++] = (int)g;
        }
        if (*q == ',' && q[1])
            q++;
        else if (*q)
            goto bad;
    }
    if (*n == 0)
        goto bad;
    return 0;
bad:
    return rl_errf(e, RL_EINVAL, "gpu_ids: '%s' is not a GPU list; allowed: indices 0..%d as '0,1,2' or "
                   "'0-3'", s ? s : "", HW_MAX_GPUS - 1);
}

void sim_train_defaults(struct sim_train *t)
{
    memset(t, 0, sizeof *t);
    t->schedule = STEP_SCHED_DS012;
    t->gpu_reserve_bytes = -1;
    t->cpu_optimizer = SIM_CPU_OPT_DEEPSPEED;
}

static void blocks_free(struct blocks *k)
{
    free(k->full_numel);
    free(k->part_numel);
    free(k->cpu_numel);
    free(k->n_tensors);
    free(k->cpu_tensors);
    free(k->cpu_fresh_numel);
    free(k->fwd_flops);
    free(k->ahead_numel);
}

static int blocks_build(struct blocks *k, const struct plan *p, int64_t b, int64_t s, struct rl_err *e)
{
    const struct plan_model *m = p->model;
    const struct plan_arch *a = &m->arch;
    int lo = -1, hi = -1;
    for (int i = 0; i < m->n_tensors; i++) {
        int l = m->tensors[i].layer;
        if (l >= 0) {
            if (lo < 0 || l < lo)
                lo = l;
            if (l > hi)
                hi = l;
        }
    }
    int L = lo < 0 ? 0 : hi - lo + 1;
    k->n = L + 2;
    k->full_numel = calloc((size_t)k->n, sizeof *k->full_numel);
    k->part_numel = calloc((size_t)k->n, sizeof *k->part_numel);
    k->cpu_numel = calloc((size_t)k->n, sizeof *k->cpu_numel);
    k->fwd_flops = calloc((size_t)k->n, sizeof *k->fwd_flops);
    k->n_tensors = calloc((size_t)k->n, sizeof *k->n_tensors);
    k->cpu_tensors = calloc((size_t)k->n, sizeof *k->cpu_tensors);
    k->cpu_fresh_numel = calloc((size_t)k->n, sizeof *k->cpu_fresh_numel);
    k->ahead_numel = calloc((size_t)k->n, sizeof *k->ahead_numel);
    int *blk = malloc(sizeof *blk * (size_t)(m->n_tensors > 0 ? (unsigned)m->n_tensors : 1u));
    if (!k->full_numel || !k->part_numel || !k->cpu_numel || !k->fwd_flops || !k->n_tensors || !k->cpu_tensors ||
        !k->cpu_fresh_numel || !k->ahead_numel || !blk) {
        free(blk);
        blocks_free(k);
        return rl_errf(e, RL_ENOMEM, "step: out of memory for %d blocks", k->n);
    }
    bool seen_layer = false;
    for (int i = 0; i < m->n_tensors; i++) {
        int l = m->tensors[i].layer;
        if (l >= 0) {
            blk[i] = 1 + (l - lo);
            seen_layer = true;
        } else {
            blk[i] = seen_layer ? L + 1 : 0;
        }
        int64_t ahead = p->zero.prefetch_bucket_size;
        if (p->zero.max_live_parameters > 0 && p->zero.max_live_parameters < ahead)
            ahead = p->zero.max_live_parameters;
        if (k->ahead_numel[blk[i]] < ahead || k->n_tensors[blk[i]] == 0)   /* whole parameters, at least one */
            k->ahead_numel[blk[i]] += m->tensors[i].numel;
        k->full_numel[blk[i]] += m->tensors[i].numel;
        k->part_numel[blk[i]] += p->part_numel[i];
        k->n_tensors[blk[i]]++;
    }
    /* CPU elements per tensor: each sub-group's CPU share is the prefix [offset, offset +
     * cpu_numel) of its range of the flat partition (DeepSpeed policies: all or nothing; exact:
     * the split sub-group's first elements). Tensors are laid out in plan->order. */
    int64_t off = 0;
    int sg = 0;
    for (int j = 0; j < m->n_tensors; j++) {
        int ti = p->order[j];
        int64_t n = p->part_numel[ti];
        while (sg < p->n_subgroups && j >= p->subgroups[sg].first + p->subgroups[sg].n_tensors)
            sg++;
        if (sg < p->n_subgroups) {
            const struct plan_subgroup *g = &p->subgroups[sg];
            int64_t c0 = off > g->offset ? off : g->offset;
            int64_t c1 = off + n < g->offset + g->cpu_numel ? off + n : g->offset + g->cpu_numel;
            if (c1 > c0) {
                k->cpu_numel[blk[ti]] += c1 - c0;
                k->cpu_tensors[blk[ti]]++;
                if ((c1 - c0) * plan_dtype_bytes(p->zero.dtype) >= SIM_FRESH_BYTES)
                    k->cpu_fresh_numel[blk[ti]] += c1 - c0;
            }
        }
        off += n;
    }
    free(blk);
    int tp = a->tp > 0 ? a->tp : 1;
    double tokens = (double)b * (double)s;
    int64_t heads = a->heads > 0 ? a->heads : 1;
    int64_t head_dim = a->head_dim > 0 ? a->head_dim : a->hidden / heads;
    int64_t vocab = a->vocab_padded > 0 ? a->vocab_padded : a->vocab;
    k->max_layer_numel = 0;
    for (int i = 0; i < k->n; i++) {
        if (k->full_numel[i] > k->max_layer_numel)
            k->max_layer_numel = k->full_numel[i];
        if (i >= 1 && i <= L) /* dense GEMMs + attention scores and values (QK^T, AV) */
            k->fwd_flops[i] = 2.0 * tokens * (double)k->full_numel[i] +
                              4.0 * (double)b * (double)s * (double)s * (double)(heads / tp > 0 ? heads / tp : 1) *
                                  (double)head_dim;
    }
    if (a->pp_stage == a->pp - 1 || a->pp <= 1)   /* logits on the last stage */
        k->fwd_flops[L + 1] = 2.0 * tokens * (double)a->hidden * (double)vocab / tp;
    return 0;
}

/* ---- GEMM rate per shape (sim/gemm.h) ----------------------------------------------------------
 * With the profile's per-shape model on, each block's forward is its kernels' seconds, given to the
 * flow model as FLOPs at the SMs' resource rate (tensor_tflops x tensor_efficiency), so the block
 * takes those seconds alone and shares the SMs as before:
 * * every 2-D weight of a layer as the GEMM tokens x out x in (out, in: its shape on this TP rank),
 *   the logits as tokens x vocab / tp x hidden;
 * * attention per micro-batch and local head: Q K^T (s x s x d) and scores x V (s x d x s), their
 *   outputs in HBM when materialized; FlashAttention keeps the s x s scores on chip;
 * * the memory-bound kernels of a GPT layer over their HBM traffic (sim_layer_elementwise_bytes:
 *   norms, residual adds, the MLP activation, materialized attention's softmax; the dropouts only
 *   where the model's probability is above 0). */
static void gemm_block_flops(struct blocks *k, const struct plan *p, const struct hw_profile *hw, const struct sim_train *t)
{
    if (!sim_gemm_model_on(hw) || p->zero.dtype == PLAN_FP32)
        return;
    const struct plan_model *m = p->model;
    const struct plan_arch *a = &m->arch;
    int lo = -1;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].layer >= 0 && (lo < 0 || m->tensors[i].layer < lo))
            lo = m->tensors[i].layer;
    int L = k->n - 2;
    double *sec = k->fwd_flops;   /* seconds first, FLOPs at the end */
    bool logits = k->fwd_flops[L + 1] > 0;
    for (int i = 0; i < k->n; i++)
        sec[i] = 0;
    double b = (double)t->micro_batch, s = (double)t->seq_len, tokens = b * s, h = (double)a->hidden;
    double tp = a->tp > 0 ? a->tp : 1;
    int64_t heads = a->heads > 0 ? a->heads : 1;
    double lheads = heads / a->tp > 0 ? (double)(heads / (a->tp > 0 ? a->tp : 1)) : 1;
    double d = (double)(a->head_dim > 0 ? a->head_dim : a->hidden / heads);
    bool flash = t->attention == PLAN_ATTN_FLASH;
    for (int i = 0; i < m->n_tensors; i++) {
        const struct plan_tensor *x = &m->tensors[i];
        if (x->layer >= 0 && x->ndim == 2)
            sec[1 + (x->layer - lo)] += sim_gemm_time_s(hw, 1, tokens, (double)x->shape[0], (double)x->shape[1], true);
    }
    double attn = sim_gemm_time_s(hw, b * lheads, s, s, d, !flash) + sim_gemm_time_s(hw, b * lheads, s, d, s, true);
    double elem = sim_layer_elementwise_bytes(a, s, b, !flash);
    for (int i = 1; i <= L; i++)
        sec[i] += attn + sim_gemm_hbm_time_s(hw, elem);
    if (logits) {
        double vocab = (double)(a->vocab_padded > 0 ? a->vocab_padded : a->vocab);
        sec[L + 1] = sim_gemm_time_s(hw, 1, tokens, vocab / tp, h, true);
    }
    double rate = hw->tensor_tflops * hw->tensor_efficiency * 1e12;   /* the SMs' resource */
    for (int i = 1; i < k->n; i++)
        sec[i] *= rate;
}

/* ---- memory ------------------------------------------------------------------------------------- */
static void resolve_train(const struct plan *p, const struct sim_train *in, struct sim_train *t)
{
    *t = *in;
    if (t->micro_batch <= 0)
        t->micro_batch = p->zero.micro_batch > 0 ? p->zero.micro_batch : 1;
    if (t->seq_len <= 0)
        t->seq_len = p->model->arch.seq_len > 0 ? p->model->arch.seq_len : 1024;
    if (t->grad_accum <= 0)
        t->grad_accum = p->zero.grad_accum > 0 ? p->zero.grad_accum : 1;
    if (t->attention == PLAN_ATTN_DEFAULT)   /* the framework's default; materialized when unknown */
        t->attention = p->model->arch.attention == PLAN_ATTN_FLASH ? PLAN_ATTN_FLASH : PLAN_ATTN_MATERIALIZED;
}

/* Activation bytes per rank (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", eq. 2 with tensor parallelism t and no sequence parallelism): per layer
 * s b h (10 + 24/t + 5 a s / (h t)) bytes at 16-bit; with full checkpointing each layer keeps
 * its 16-bit input (2 s b h) and one layer's full set is live during recomputation. Pipeline
 * stage k of pp holds pp - k micro-batches in flight (1F1B). Plus fp32 logits and their gradient
 * on the last stage.
 * The 5 a s^2 b / t term is the materialized attention: softmax output (2 a s^2 b), dropout mask
 * (a s^2 b) and dropout output (2 a s^2 b). Fused attention (FlashAttention, Dao et al. 2022
 * section 3.1; FlashAttention-2, Dao 2023 section 3.1: "we only need to store the logsumexp")
 * keeps none of them: it stores the output (already in the 24/t term, as the projection's input)
 * and one fp32 log-sum-exp per row and head, 4 a s b / t bytes (PyTorch's flash and
 * memory-efficient SDPA kernels return it as `logsumexp` [b, a, s] float); the dropout mask is
 * regenerated from the RNG state in the backward. */
/* Bytes one layer keeps from its forward to its backward: the full set, or with checkpointing
 * its 16-bit input. *full_out receives the full set (live during recomputation). */
static double layer_activation_bytes(const struct plan *p, const struct sim_train *t, double *full_out)
{
    const struct plan_arch *a = &p->model->arch;
    double s = (double)t->seq_len, b = (double)t->micro_batch, h = (double)a->hidden;
    double tp = a->tp > 0 ? a->tp : 1, heads = (double)(a->heads > 0 ? a->heads : 1);
    double width = plan_dtype_bytes(p->zero.dtype) / 2.0;   /* fp32 activations are twice as big */
    bool flash = t->attention == PLAN_ATTN_FLASH;
    double scores = flash ? 0.0 : 5.0 * heads * s / (h * tp);   /* the s x s matrices, per s b h */
    double full = s * b * h * (10.0 + 24.0 / tp + scores) * width;
    if (flash)
        full += 4.0 * heads * s * b / tp;   /* fp32 log-sum-exp per row and head */
    if (full_out)
        *full_out = full;
    return t->checkpoint_activations ? 2.0 * s * b * h * width : full;
}

static double activation_bytes_f(const struct plan *p, const struct sim_train *t, int layers)
{
    const struct plan_arch *a = &p->model->arch;
    double s = (double)t->seq_len, b = (double)t->micro_batch;
    double tp = a->tp > 0 ? a->tp : 1;
    double full;
    double kept = layer_activation_bytes(p, t, &full);
    double per_mb = t->checkpoint_activations ? layers * kept + full : layers * full;
    int in_flight = a->pp > 1 ? a->pp - a->pp_stage : 1;
    double bytes = per_mb * in_flight;
    if (a->pp <= 1 || a->pp_stage == a->pp - 1) {
        double vocab = (double)(a->vocab_padded > 0 ? a->vocab_padded : a->vocab);
        bytes += 2.0 * 4.0 * s * b * vocab / tp;
    }
    return bytes;
}

/* Largest byte or nanosecond count the model accepts: products above it are refused instead of
 * wrapping (2^62, so sums of a few of them still fit in int64). */
#define SIM_MAX_COUNT 4.611686018427387904e18

/* NCCL communicators a rank holds: the world group, and the DP, TP and PP groups when they are
 * proper subgroups with more than one rank (each communicator allocates its own buffers). */
static int nccl_communicators(const struct plan *p)
{
    const struct plan_layout *l = &p->layout;
    int world = l->world > 0 ? l->world : 1;
    if (world <= 1)
        return 0;
    int n = 1;
    n += l->dp > 1 && l->dp < world;
    n += l->tp > 1 && l->tp < world;
    n += l->pp > 1 && l->pp < world;
    return n;
}

/* The caching allocator's 2 MiB rounding of the ledger's GPU buffers (PyTorch rounds requests
 * above 1 MiB up to a multiple of 2 MiB, c10/cuda/CUDACachingAllocator.cpp kRoundLarge). */
static int64_t ledger_rounding_bytes(const struct plan *p)
{
    const int64_t gran = INT64_C(2) << 20;
    int64_t sum = 0;
    for (int i = 0; i < p->n_buffers; i++) {
        const struct plan_buffer *x = &p->buffers[i];
        if (x->device == PLAN_DEV_GPU && x->bytes > (INT64_C(1) << 20) && x->bytes % gran)
            sum += gran - x->bytes % gran;
    }
    return sum;
}

static int memory(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t,
                  const struct blocks *k, struct sim_step_result *r, struct rl_err *e)
{
    int dp = p->layout.dp > 0 ? p->layout.dp : 1;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    r->gpu_ledger_bytes = plan_peak_gpu_bytes(p);
    double act = activation_bytes_f(p, t, k->n - 2);
    if (!(act <= SIM_MAX_COUNT))
        return rl_errf(e, RL_EINVAL, "activations: seq_len %lld x micro_batch %lld gives %.3g bytes per GPU, "
                       "more than the %.3g the model counts; allowed: a smaller seq_len or micro_batch",
                       (long long)t->seq_len, (long long)t->micro_batch, act, SIM_MAX_COUNT);
    r->gpu_activation_bytes = (int64_t)ceil(act);
    /* ZeRO-3 gathers each block before use and prefetches up to prefetch_bucket_size elements
     * ahead, bounded by max_live_parameters; with dp == 1 the partition is the whole tensor, unless
     * offload_param keeps it on the host: then the blocks fetched to the GPU are the gathered ones
     * (partition_parameters.py _no_gather_coalesced). With offload_param and dp > 1 the fetched
     * partition copies of one gather (`[p.ds_tensor.to(device) for p in params]`, all made before
     * the torch.cat into the gather buffer) live beside it: one block's partition at most. */
    bool param_host = p->zero.offload_param == PLAN_OFFLOAD_CPU;
    double live = 0;
    if (dp > 1 || param_host) {
        int64_t depth = step_prefetch_depth(p->zero.prefetch_bucket_size, k->max_layer_numel, k->n);
        live = (double)step_gather_buffers(depth) * (double)k->max_layer_numel;
        if (p->zero.max_live_parameters > 0 &&
            live > (double)p->zero.max_live_parameters + (double)k->max_layer_numel)
            live = (double)p->zero.max_live_parameters + (double)k->max_layer_numel;
    }
    if (param_host && dp > 1) {
        int64_t most = 0;
        for (int i = 0; i < k->n; i++)
            most = k->part_numel[i] > most ? k->part_numel[i] : most;
        live += (double)most;
    }
    double transient = act + live * dtype;
    double alloc = (double)r->gpu_ledger_bytes + transient;
    if (!(alloc <= SIM_MAX_COUNT))
        return rl_errf(e, RL_EINVAL, "GPU memory: %.3g bytes per GPU (model states %.3g, activations %.3g, "
                       "gathered parameters %.3g) is more than the model counts (%.3g); allowed: a smaller "
                       "model, seq_len or micro_batch", alloc, (double)r->gpu_ledger_bytes, act, live * dtype,
                       SIM_MAX_COUNT);
    r->gpu_live_param_bytes = (int64_t)live * dtype;
    r->gpu_allocated_bytes = r->gpu_ledger_bytes + r->gpu_activation_bytes + r->gpu_live_param_bytes;
    r->nccl_communicators = nccl_communicators(p);
    if (t->gpu_reserve_bytes >= 0) {
        r->gpu_reserve_bytes = t->gpu_reserve_bytes;
    } else {
        r->gpu_context_bytes = hw->context_bytes;
        r->gpu_nccl_bytes = (int64_t)r->nccl_communicators * hw->nccl_comm_bytes;
        r->gpu_allocator_bytes = ledger_rounding_bytes(p) + (int64_t)ceil(hw->allocator_overhead * transient);
        r->gpu_reserve_bytes = r->gpu_context_bytes + r->gpu_nccl_bytes + r->gpu_allocator_bytes;
    }
    r->gpu_total_bytes = r->gpu_allocated_bytes + r->gpu_reserve_bytes;
    r->gpu_capacity_bytes = hw->gpu_mem_bytes;
    r->fits_gpu = r->gpu_total_bytes <= r->gpu_capacity_bytes;
    r->host_rank_bytes = plan_peak_cpu_bytes(p);
    int per_node = p->layout.gpus_per_node > 0 ? p->layout.gpus_per_node : 1;
    r->host_node_bytes = r->host_rank_bytes * per_node;
    r->host_baseline_node_bytes = hw->host_baseline_bytes * per_node;
    r->host_os_reserve_bytes = hw->os_reserve_bytes;
    r->host_total_node_bytes = r->host_node_bytes + r->host_baseline_node_bytes + r->host_os_reserve_bytes;
    r->host_capacity_bytes = hw->host_mem_bytes;
    r->fits_host = r->host_total_node_bytes <= r->host_capacity_bytes;
    r->micro_batch = t->micro_batch;
    r->seq_len = t->seq_len;
    r->grad_accum = t->grad_accum;
    r->attention = t->attention;
    r->ds_version = p->zero.ds_version;
    return 0;
}

/* The ranks of this node and their GPUs: the first ranks of the node (what a launcher does) or
 * --gpu-ids; fills b->gpu and the result's record of which GPUs and sockets are modelled. */
static int place_ranks(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t, int *gpu,
                       int *ranks_out, struct sim_step_result *r, struct rl_err *e)
{
    int gpn = p->layout.gpus_per_node > 0 ? p->layout.gpus_per_node : 1;
    if (gpn > hw->gpus)
        return rl_errf(e, RL_EINVAL, "layout: %d GPUs per node, but hardware profile %s has %d per node "
                       "(allowed: gpus_per_node <= %d, or another hw)", gpn, hw->name, hw->gpus, hw->gpus);
    int ranks = gpn;
    if (ranks > p->layout.world && p->layout.world > 0)
        ranks = p->layout.world;
    int rc = sim_place_gpus(hw, t, ranks, gpu, &r->socket_mask, e);
    if (rc)
        return rc;
    *ranks_out = ranks;
    r->ranks = ranks;
    for (int g = 0; g < ranks; g++)
        r->gpu_ids[g] = gpu[g];
    r->sockets_used = __builtin_popcount(r->socket_mask);
    return 0;
}

int sim_place_gpus(const struct hw_profile *hw, const struct sim_train *t, int ranks, int *gpu,
                   unsigned *socket_mask, struct rl_err *e)
{
    if (t->n_gpu_ids > 0 && t->n_gpu_ids != ranks)
        return rl_errf(e, RL_EINVAL, "gpu_ids: %d GPUs given for %d ranks per node; allowed: exactly %d "
                       "distinct indices", t->n_gpu_ids, ranks, ranks);
    *socket_mask = 0;
    for (int g = 0; g < ranks; g++) {
        gpu[g] = t->n_gpu_ids > 0 ? t->gpu_ids[g] : g;
        if (gpu[g] < 0 || gpu[g] >= hw->gpus)
            return rl_errf(e, RL_EINVAL, "gpu_ids: GPU %d is not in hardware profile %s; allowed: 0..%d", gpu[g],
                           hw->name, hw->gpus - 1);
        *socket_mask |= 1u << hw->sw[hw->gpu_switch[gpu[g]]].socket;
    }
    return 0;
}

/* What predicting memory and simulating a step share: the GPUs the ranks sit on, the resolved
 * training settings, and the memory prediction filled into r (cleared first). */
static int step_setup(const struct plan *p, const struct hw_profile *hw, const struct sim_train *in,
                      int gpu[HW_MAX_GPUS], int *ranks, struct sim_train *t, struct sim_step_result *r,
                      struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    /* The step simulated is ZeRO-3's (parameters, gradients and optimizer states partitioned, the
     * parameters gathered per module); a stage 0-2 config would get ZeRO-3's memory and time. */
    if (p->zero.stage != 3)
        return rl_errf(e, RL_EINVAL, "zero_optimization.stage: %d is not simulated; allowed: 3 (the simulator "
                       "models ZeRO-3's step only)", p->zero.stage);
    int rc = place_ranks(p, hw, in, gpu, ranks, r, e);
    if (rc)
        return rc;
    resolve_train(p, in, t);
    struct blocks k;
    if ((rc = blocks_build(&k, p, t->micro_batch, t->seq_len, e)))
        return rc;
    rc = memory(p, hw, t, &k, r, e);
    blocks_free(&k);
    return rc;
}

int sim_step_memory(const struct plan *p, const struct hw_profile *hw, const struct sim_train *in,
                    struct sim_step_result *r, struct rl_err *e)
{
    int gpu[HW_MAX_GPUS] = {0}, ranks;
    struct sim_train t;
    return step_setup(p, hw, in, gpu, &ranks, &t, r, e);
}

/* ---- graph construction (the task constructors: sim/step_task.c) --------------------------------- */
enum coll_kind { COLL_AG, COLL_RS, COLL_AR };
_Static_assert((int)COLL_AG == (int)SIM_COLL_AG && (int)COLL_RS == (int)SIM_COLL_RS && (int)COLL_AR == (int)SIM_COLL_AR,
               "collective() passes its kind to sim_coll_cost");

/* A collective of `bytes` (the full array, nccl-tests convention) among n ranks of which `local`
 * are in this node, seen from rank g: bus bytes = bytes x (n-1)/n (AG, RS) or 2 (n-1)/n (AR);
 * inside the node on the GPU's NVLink share at the profile's bus bandwidth, across nodes also on
 * the node network (this rank's 1/local part of the group's traffic) and the GPU's PCIe link
 * (GPUDirect RDMA). Across nodes the algorithm (sim/collective.h) sets the bus bytes and the
 * latency: its steps' latencies, and for a tree all-reduce its bus bytes. */
static int collective(struct builder *u, const char *name, int g, enum coll_kind kind, double bytes, int n,
                      int local, int phase, int track)
{
    struct sim__step *b = u->b;
    const struct hw_profile *hw = b->hw;
    if (n <= 1)
        return -1;
    double bus = bytes * (kind == COLL_AR ? 2.0 : 1.0) * (n - 1) / n;
    double busbw = kind == COLL_AG ? hw->allgather_busbw_gbps : kind == COLL_RS ? hw->reduce_scatter_busbw_gbps
                                                                                : hw->allreduce_busbw_gbps;
    int res[SIM_MAX_RES], m = 0;
    double w[SIM_MAX_RES];
    bool inter = n > local;
    if (local > 1)
        res[m] = b->r_nvl[g], w[m++] = hw->allgather_busbw_gbps / busbw;
    if (inter && b->r_net >= 0) {
        double share = 1.0 / (local > 0 ? local : 1);
        res[m] = b->r_net, w[m++] = share;
        res[m] = b->r_h2d[g], w[m++] = share;
        res[m] = b->r_d2h[g], w[m++] = share;
    }
    double cap = m == 0 ? busbw * 1e9 : 0;   /* a group on one GPU's NVLink share */
    if (sim__emulated(b))   /* MPI's shared-memory copies run on the rank's thread */
        m = sim__emulated_share(b, g, 0, 1, busbw * 1e9, res, w, m);
    double lat = inter ? hw->lat_coll_inter_us : hw->lat_coll_intra_us;
    if (inter && local > 0 && n % local == 0) {
        struct sim_coll_cost cc;
        if (sim_coll_cost(hw, (enum sim_coll_kind)kind, bytes, n, n / local, &cc) == 0)
            bus = cc.bus_bytes, lat = cc.latency_us;
    }
    return sim__add_task(u, name, g, track, phase, bus, sim__us_to_ns(lat), cap, m, res, w,
                    (union sim_task_size){.bytes = (int64_t)bytes});
}

static int add_resources(struct sim__step *b, struct rl_err *e)
{
    const struct hw_profile *hw = b->hw;
    const struct plan *p = b->p;
    char nm[SIM_NAME_MAX];
    int rc;
    bool tensor = p->zero.dtype != PLAN_FP32;
    double flops = tensor ? hw->tensor_tflops * hw->tensor_efficiency : hw->fp32_tflops * hw->fp32_efficiency;
#define RES(dst, cap)                                                   \
    do {                                                                \
        if ((rc = sim_flow_add_resource(&b->f, nm, (cap), e)) < 0)      \
            return rc;                                                  \
        dst = rc;                                                       \
    } while (0)
    for (int g = 0; g < b->ranks; g++) {
        snprintf(nm, sizeof nm, "gpu%d.sm", g);
        RES(b->r_sm[g], flops * 1e12);
        snprintf(nm, sizeof nm, "gpu%d.hbm", g);
        RES(b->r_hbm[g], hw->hbm_gbps * hw->hbm_efficiency * 1e9);
        snprintf(nm, sizeof nm, "gpu%d.pcie.h2d", g);
        RES(b->r_h2d[g], hw->h2d_pinned_gbps * 1e9);
        snprintf(nm, sizeof nm, "gpu%d.pcie.d2h", g);
        RES(b->r_d2h[g], hw->d2h_pinned_gbps * 1e9);
        snprintf(nm, sizeof nm, "gpu%d.nvlink", g);
        RES(b->r_nvl[g], hw->allgather_busbw_gbps * 1e9);
    }
    for (int s = 0; s < hw->n_switches; s++) {
        snprintf(nm, sizeof nm, "switch%d.up.h2d", s);
        RES(b->r_up_h2d[s], hw->sw[s].uplink_gbps * 1e9);
        snprintf(nm, sizeof nm, "switch%d.up.d2h", s);
        RES(b->r_up_d2h[s], hw->sw[s].uplink_gbps * 1e9);
    }
    for (int k = 0; k < hw->n_sockets; k++) {
        snprintf(nm, sizeof nm, "socket%d.dram", k);
        RES(b->r_dram[k], hw->socket[k].dram_gbps * 1e9);
        snprintf(nm, sizeof nm, "socket%d.cores", k);
        RES(b->r_cores[k], hw->socket[k].cores * hw->cpu_adam_elems_per_core);
        snprintf(nm, sizeof nm, "socket%d.faults", k);
        RES(b->r_fault[k], (hw->host_fault_gbps_per_socket > 0 ? hw->host_fault_gbps_per_socket
                                                              : hw->socket[k].cores * hw->host_fault_gbps_per_thread) * 1e9);
    }
    b->r_isl = -1;
    if (hw->n_sockets > 1) {
        snprintf(nm, sizeof nm, "inter-socket");
        RES(b->r_isl, hw->inter_socket_gbps * 1e9);
    }
    b->r_net = -1;
    if (p->layout.nodes > 1) {
        snprintf(nm, sizeof nm, "network");
        RES(b->r_net, sim_coll_busbw_gbps(hw) * 1e9);   /* NCCL's bus bandwidth across nodes */
    }
#undef RES
    return 0;
}

/* What every block's compute on a rank needs to know. */
struct pass_ctx {
    int64_t launch_ns;   /* kernel launch latency */
    int tp, tp_local;    /* TP degree, TP ranks in this node */
    double ar_bytes;     /* bytes of one TP all-reduce */
    int dtype;           /* bytes per parameter element */
};

/* Block i's compute on rank g, after its all-gather `ag` (-1: none): `flops` on the rank's SMs
 * (0: nothing but waiting for the gather), the TP all-reduce of an inner block, the activation
 * counter moved by act_delta for an inner block, and the gathered parameters released after use.
 * Nothing is launched before the host thread's last blocking operation ends (st->host). Leaves
 * the rank's compute-stream tail in st->compute; returns the block's first compute task (-1:
 * none). */
static int block_compute(struct builder *u, struct streams *st, const struct pass_ctx *pc, int g, int i,
                          int ag, double flops, const char *name, int phase, int64_t act_delta)
{
    const struct blocks *k = &u->k;
    bool inner = i >= 1 && i < k->n - 1;
    int first = -1;
    if (flops > 0) {
        int res[SIM_MAX_RES] = {u->b->r_sm[g]}, n = 1;
        double w[SIM_MAX_RES] = {1};
        if (sim__emulated(u->b))   /* the device's GEMMs on the socket's cores */
            n = sim__emulated_share(u->b, g, 0, sim__emulated_threads(u->b), u->b->f.res[u->b->r_sm[g]].capacity, res,
                                    w, n);
        int c = sim__add_task(u, name, g, SIM_TR_COMPUTE, phase, flops, pc->launch_ns, 0, n, res, w,
                         (union sim_task_size){.flops = (int64_t)flops});
        sim__dep(u, st->compute, c);
        sim__dep(u, st->host, c);
        sim__dep(u, ag, c);
        st->compute = first = c;
        if (inner)
            sim__mem_event(u, c, act_delta);
        if (pc->tp > 1 && inner) {
            int ar = collective(u, "tp_allreduce", g, COLL_AR, pc->ar_bytes, pc->tp, pc->tp_local,
                                STEP_PH_TP_ALLREDUCE, SIM_TR_COMPUTE);
            sim__dep(u, c, ar);
            st->compute = ar;
        }
    } else if (ag >= 0) {
        int z = sim__add_task(u, "gathered", g, SIM_TR_COMPUTE, STEP_PH_ALLGATHER, 0, 0, 0, 0, NULL, NULL, SIM__NO_SIZE);
        sim__dep(u, st->compute, z);
        sim__dep(u, ag, z);
        st->compute = first = z;
    }
    if (ag >= 0) /* released after use */
        sim__mem_event(u, st->compute, -k->full_numel[i] * pc->dtype);
    return first;
}

/* A zero-work task after every stream of rank g: the end of the backward. */
static int rank_marker(struct builder *u, const char *name, int g, const struct streams *st)
{
    int z = sim__add_task(u, name, g, SIM_TR_COMPUTE, -1, 0, 0, 0, 0, NULL, NULL, SIM__NO_SIZE);
    sim__dep(u, st->compute, z);
    sim__dep(u, st->gather, z);
    sim__dep(u, st->reduce, z);
    sim__dep(u, st->copy, z);
    sim__dep(u, st->host, z);
    return z;
}

/* Micro-steps simulated for an accumulation of ga: all of them up to SIM_MAX_SIMULATED_MICRO_STEPS;
 * beyond, the first, two steady-state ones and the boundary (the last). */
static int simulated_micro_steps(const struct sim_train *t)
{
    int most = t->max_simulated_micro_steps >= SIM_MAX_SIMULATED_MICRO_STEPS ? t->max_simulated_micro_steps
                                                                            : SIM_MAX_SIMULATED_MICRO_STEPS;
    return t->grad_accum < most ? (int)t->grad_accum : most;
}

/* What the passes of one step's graph share: the resolved layout and schedule, and the tails of
 * every rank's streams as the passes add tasks. */
struct graph_ctx {
    int G;                  /* ranks simulated */
    int dp, dp_local;       /* DP degree, DP group members in this node */
    int pp;                 /* pipeline stages */
    int dtype;              /* bytes per parameter element */
    int comm_dtype;         /* bytes per gradient element in the reduce-scatter */
    bool offload;           /* the optimizer is offloaded (offload_optimizer.device cpu) */
    bool ds;                /* DeepSpeed's schedule (else ratiolab's overlap schedule) */
    const struct plan_ds_rules *dr; /* the DeepSpeed release's rules (plan/ds_rules.h) */
    int64_t depth;          /* blocks gathered ahead of the compute (prefetch_bucket_size) */
    int64_t bucket;         /* gradient elements per reduce bucket (reduce_bucket_size) */
    int64_t act_per_block;  /* activation bytes of one block (trace counter) */
    double flop_rate;       /* FLOP/s of one rank's SMs */
    struct pass_ctx pc;     /* what every block's compute needs */
    struct streams *st;     /* [G] the last task of each stream per rank */
    int *fwd;               /* [blocks x G] the forward's (then the backward's) last task per block and rank */
    int *first;             /* [blocks x G] the forward's (then the backward's) first compute task per
                               block and rank (-1: none) */
    int *flush_end;         /* [3 x G] the last 3 flushes' ends per rank */
    int64_t n_flush;        /* bucket flushes so far */
};

/* offload_param "cpu" (ZeRO-Infinity): the 16-bit partitions stay in pinned host memory
 * (plan/plan.c's ledger), so before block i's all-gather, in the forward and again in the
 * backward, rank g copies its partition of the block to the GPU over its PCIe link, one copy per
 * parameter, after the rank's previous gather. The same code in every release read (0.12.3 to
 * 0.19.5, partition_parameters.py all_gather_coalesced and _all_gather_dtype):
 *   DP > 1   `p.ds_tensor.to(device)` per parameter, blocking: PyTorch's memcpy_and_sync on the
 *            all-gather stream, so each copy waits for the gathers queued before it and the host
 *            waits for the copy. The fetch of block i is issued in the pre-forward (pre-backward)
 *            hook of the block `depth` blocks earlier in the pass (partitioned_param_coordinator.py
 *            fetch_sub_module's prefetch), so that block's compute is not launched before the
 *            copy returns: *blocks_compute_of is that block (-1: the copy is its own block's,
 *            which waits for it through the all-gather anyway);
 *   DP 1     `_no_gather_coalesced`: `ds_tensor.data.to(device, non_blocking=True)`, nothing waits;
 *            the copy is the gathered block itself, held from the copy on (*holds).
 * Returns the copy's task, or -1 without parameter offload. */
static int param_fetch(struct builder *u, struct graph_ctx *c, int g, int i, bool backward, bool *holds,
                       int *blocks_compute_of)
{
    const struct blocks *k = &u->k;
    *holds = false;
    *blocks_compute_of = -1;
    if (u->b->p->zero.offload_param != PLAN_OFFLOAD_CPU || k->part_numel[i] <= 0)
        return -1;
    double bytes = (double)k->part_numel[i] * c->dtype;
    int t = sim__host_copy(u, "param_fetch", g, true, true, bytes, STEP_PH_PARAM_H2D, (int64_t)bytes, k->n_tensors[i]);
    sim__dep(u, c->st[g].gather, t);
    if (!(c->dp > 1 && k->full_numel[i] > 0)) {
        c->st[g].gather = t;
        sim__mem_event(u, t, k->full_numel[i] * c->dtype);
        *holds = true;
    } else if (!sim__emulated(u->b)) {
        /* the hook that issues it: depth blocks earlier in this pass (forward: the first block at
         * most). The backward gathers the blocks its first depth + 1 blocks need each after the
         * previous block's compute (build_backward), so their fetches are their own blocks' */
        int64_t j = backward ? i + c->depth : i - c->depth;
        if (!backward && j < 0)
            j = 0;
        if (backward && i + 2 + c->depth >= k->n)
            j = i;
        if (j != i)
            *blocks_compute_of = (int)j;
    }
    return t;
}

/* DeepSpeed's prefetch is per parameter, not per block (partitioned_param_coordinator.py
 * fetch_sub_module, v0.12.4-v0.19.5): once the trace is complete, each submodule's fetch issues
 * all-gathers for the next parameters of the trace until min(stage3_prefetch_bucket_size,
 * stage3_max_live_parameters - available) elements are in flight (whole parameters, at least
 * one: blocks.ahead_numel). So of a block larger than that only those first parameters can be
 * gathered while the previous block computes; the rest is fetched in the block's own hooks, after the previous block's compute.
 * Returns the fraction of block i's gather issued ahead (1: all of it, the block-level prefetch
 * above; 0 with sim_train.zero3_prefetch_off, DeepSpeed recording or having invalidated its trace). */
static double prefetch_ahead_fraction(const struct builder *u, const struct graph_ctx *c, int i)
{
    const struct sim__step *b = u->b;
    if (!c->ds || sim__emulated(b))
        return 1.0;
    if (b->t.zero3_prefetch_off)
        return 0.0;
    int64_t ahead = u->k.ahead_numel[i], n = u->k.full_numel[i];
    return n <= 0 || ahead >= n ? 1.0 : (double)ahead / (double)n;
}

/* The part of block i's gather that waits for the previous block's compute (`prev`, -1: none):
 * (1 - ahead fraction) of its bytes, after the prefetched part `ag`. Returns the task the block's
 * compute waits for (ag itself when everything was prefetched). */
static int gather_rest(struct builder *u, struct graph_ctx *c, int g, int i, int ag, int pf, int prev)
{
    double f = prefetch_ahead_fraction(u, c, i);
    if (f >= 1.0)
        return ag;
    int rest = collective(u, "allgather_fetch", g, COLL_AG, (double)u->k.full_numel[i] * c->dtype * (1.0 - f), c->dp,
                          c->dp_local, STEP_PH_ALLGATHER, SIM_TR_GATHER);
    sim__dep(u, ag >= 0 ? ag : c->st[g].gather, rest);   /* one all-gather stream */
    sim__dep(u, pf, rest);
    sim__dep(u, prev, rest);
    if (ag < 0)
        sim__mem_event(u, rest, u->k.full_numel[i] * c->dtype);
    c->st[g].gather = rest;
    return rest;
}

/* ---- ZeRO-3's host time per submodule -----------------------------------------------------------
 * DeepSpeed's ZeRO-3 runs Python hooks around every submodule's forward and backward
 * (parameter_offload.py _register_hooks_recursively: fetch_sub_module before, release_sub_module
 * after, and their backward counterparts; every release read, 0.12.4-0.19.8), on top of the
 * eager dispatch of the submodule's own operators. The host issues block i's kernels only after
 * those have run, so each block and pass gets one host task of (its submodules) x
 * host.zero3_us_per_module_forward (backward), plus host.zero3_partitioned_us_per_module_forward
 * (backward) when the parameters are partitioned over DP > 1 ranks (on one, DeepSpeed's fetch takes
 * the gather-free path: partition_parameters.py, num_partitions == 1 returns _no_gather_coalesced),
 * on the host thread after its previous blocking operation, and the block's compute waits for it.
 * Where the GPU's share of a block is shorter, the pass is bound by the host; where the host blocks
 * (the backward's flush throttle, a blocking copy), the hooks after it wait too. Submodules called per layer (forward pre-hooks counted on
 * transformers 4.46.3's models by scripts/ds_hook_cost.py; Megatron-DeepSpeed's
 * ParallelTransformerLayer read from its megatron/model/transformer.py): */
static int block_modules(const struct plan_arch *a, int i, int n, bool materialized)
{
    if (i == 0)   /* the embedding side: the model, its embedding, the position or rotary module */
        return a->pp <= 1 || a->pp_stage == 0 ? 3 : 0;
    if (i == n - 1)   /* the final norm, the head and the model that wraps it */
        return a->pp <= 1 || a->pp_stage == a->pp - 1 ? 3 : 0;
    switch (a->kind) {
    case PLAN_ARCH_MEGATRON_GPT:   /* the layer, 2 norms, self_attention, query_key_value, the core
                                      attention (flash) or CoreAttention with its softmax and
                                      dropout, dense, mlp, dense_h_to_4h, dense_4h_to_h */
        return materialized ? 12 : 10;
    case PLAN_ARCH_HF_LLAMA:   /* LlamaDecoderLayer: the layer, 2 norms, self_attn, q/k/v/o, mlp,
                                  gate/up/down, act_fn */
        return 13;
    case PLAN_ARCH_HF_GPT2:   /* GPT2Block: the block, ln_1, attn, c_attn, c_proj, resid_dropout,
                                 ln_2, mlp, c_fc, act, c_proj, dropout */
        return 12;
    case PLAN_ARCH_HF_OPT:   /* OPTDecoderLayer: the layer, self_attn, q/k/v/out_proj,
                                self_attn_layer_norm, activation_fn, fc1, fc2, final_layer_norm */
        return 11;
    case PLAN_ARCH_HF_T5:   /* T5Block, encoder 17 and decoder 25 (cross-attention): their mean */
        return 21;
    default:
        return 13;
    }
}

/* Block i's host task of one pass (see above); none for ratiolab's own schedule, an emulated device
 * (the executor runs no hooks) or a profile without the figure. */
static void zero3_hooks(struct builder *u, const struct graph_ctx *c, struct streams *st, int g, int i, bool backward)
{
    const struct sim__step *b = u->b;
    double us = backward ? b->hw->host_zero3_us_bwd : b->hw->host_zero3_us_fwd;
    if (!c->ds || sim__emulated(b) || us <= 0)
        return;
    if (c->dp > 1)
        us += backward ? b->hw->host_zero3_part_us_bwd : b->hw->host_zero3_part_us_fwd;
    int m = block_modules(&b->p->model->arch, i, u->k.n, b->t.attention == PLAN_ATTN_MATERIALIZED);
    if (m <= 0)
        return;
    int h = sim__add_task(u, "zero3_hooks", g, SIM_TR_HOST, STEP_PH_ZERO3_HOOKS, 0, sim__us_to_ns(m * us), 0, 0, NULL,
                          NULL, SIM__NO_SIZE);
    sim__dep(u, st->host, h);
    st->host = h;
}

/* Forward: gather block i (prefetched up to `depth` blocks ahead), compute, TP all-reduce. */
static void build_forward(struct builder *u, struct graph_ctx *c)
{
    const struct blocks *k = &u->k;
    int G = c->G, dp = c->dp, dtype = c->dtype;
    struct streams *st = c->st;
    int *fwd = c->fwd;
    for (int i = 0; i < k->n; i++) {
        for (int g = 0; g < G; g++) {
            bool held;
            int issuer;
            int pf = param_fetch(u, c, g, i, false, &held, &issuer), ag = held ? pf : -1;
            if (issuer >= 0)   /* the host is blocked in the issuing block's hook until the copy returns */
                sim__dep(u, pf, c->first[issuer * G + g]);
            if (dp > 1 && k->full_numel[i] > 0) {
                double ahead = prefetch_ahead_fraction(u, c, i);
                if (ahead > 0) {
                    ag = collective(u, "allgather", g, COLL_AG, (double)k->full_numel[i] * dtype * ahead, dp,
                                    c->dp_local, STEP_PH_ALLGATHER, SIM_TR_GATHER);
                    sim__dep(u, st[g].gather, ag);
                    sim__dep(u, pf, ag);
                    if (i - 1 - c->depth >= 0)
                        sim__dep(u, fwd[(i - 1 - c->depth) * G + g], ag);
                    if (sim__emulated(u->b))   /* gathered when the previous block is done */
                        sim__dep(u, st[g].compute, ag);
                    st[g].gather = ag;
                    sim__mem_event(u, ag, k->full_numel[i] * dtype);
                }
                ag = gather_rest(u, c, g, i, ag, pf, i > 0 ? fwd[(i - 1) * G + g] : -1);
            }
            zero3_hooks(u, c, &st[g], g, i, false);
            c->first[i * G + g] = block_compute(u, &st[g], &c->pc, g, i, ag, k->fwd_flops[i],
                                                i == k->n - 1 ? "logits" : "forward", STEP_PH_FORWARD, c->act_per_block);
            fwd[i * G + g] = st[g].compute;
        }
    }
}

/* One full bucket flushed on every rank: (DeepSpeed with offload: throttled to 2 outstanding
 * flushes, copied into the bucket) reduce-scattered, then (DeepSpeed with offload) partitioned. */
static void build_flush(struct builder *u, struct graph_ctx *c, const struct flush *fl, bool boundary)
{
    int G = c->G, dtype = c->dtype;
    bool ds = c->ds, offload = c->offload;
    int64_t n_flush = c->n_flush;
    struct streams *st = c->st;
    int *flush_end = c->flush_end;
    for (int g = 0; g < G; g++) {
        if (sim__emulated(u->b) && u->b->hw->gpu_emulated_grad_per_s > 0) {
            /* The executor's backward writes the bucket's gradients (its synthetic shares, 4 B
             * each) on the device's compute thread before the reduce-scatter. */
            int res[SIM_MAX_RES], n;
            double w[SIM_MAX_RES];
            n = sim__emulated_share(u->b, g, 4.0, 1, u->b->hw->gpu_emulated_grad_per_s, res, w, 0);
            int sy = sim__add_task(u, "grad_shares", g, SIM_TR_COMPUTE, STEP_PH_BACKWARD, (double)fl->full, 0,
                              u->b->hw->gpu_emulated_grad_per_s, n, res, w, (union sim_task_size){.elements = fl->full});
            sim__dep(u, st[g].compute, sy);
            st[g].compute = sy;
        }
        int last = st[g].compute;
        if (ds && offload && n_flush >= 3) {
            /* at most 2 flushes outstanding: the host waits for the one 3 back */
            int w = sim__add_task(u, "reduce_throttle", g, SIM_TR_HOST, -1, 0, 0, 0, 0, NULL, NULL, SIM__NO_SIZE);
            sim__dep(u, st[g].host, w);
            sim__dep(u, flush_end[(n_flush % 3) * G + g], w);
            sim__dep(u, last, w);
            st[g].host = last = w;
        }
        if (ds && offload) {
            /* the gradients copied into the bucket, then interleaved by torch.cat */
            int cp = sim__gpu_pass(u, "bucket_copy", g, (double)fl->full, 4.0 * dtype, STEP_PH_REDUCE_SCATTER,
                              SIM_TR_REDUCE);
            sim__dep(u, last, cp);
            sim__dep(u, st[g].reduce, cp);
            st[g].reduce = last = cp;
        }
        int rs = collective(u, "reduce_scatter", g, COLL_RS, (double)fl->full * c->comm_dtype, c->dp, c->dp_local,
                            STEP_PH_REDUCE_SCATTER, SIM_TR_REDUCE);
        if (rs >= 0) {
            sim__dep(u, last, rs);
            sim__dep(u, st[g].reduce, rs);
            st[g].reduce = rs;
            last = rs;
        }
        if (ds && offload && fl->part > 0) {
            sim__ds_partition_grads(u, &st[g], c->dr, g, fl, last, boundary);
            flush_end[(n_flush % 3) * G + g] = st[g].reduce;
        }
        if (sim__emulated(u->b) && st[g].reduce >= 0) {   /* the flush is done before the next block's gather */
            int z = sim__add_task(u, "flushed", g, SIM_TR_COMPUTE, -1, 0, 0, 0, 0, NULL, NULL, SIM__NO_SIZE);
            sim__dep(u, st[g].compute, z);
            sim__dep(u, st[g].reduce, z);
            st[g].compute = z;
        }
    }
}

/* Backward, last block first: gather again (prefetched), compute, TP all-reduce; gradients fill
 * buckets of reduce_bucket_size elements, each reduce-scattered when full. */
static void build_backward(struct builder *u, struct graph_ctx *c, bool boundary)
{
    struct sim__step *b = u->b;
    const struct blocks *k = &u->k;
    int G = c->G, dp = c->dp, dtype = c->dtype;
    struct streams *st = c->st;
    struct flush fl = {0};
    int *bwd = c->fwd;   /* reuse: bwd[i * G + g] after block i's backward */
    for (int i = k->n - 1; i >= 0; i--) {
        for (int g = 0; g < G; g++) {
            bool held;
            int issuer;
            int pf = param_fetch(u, c, g, i, true, &held, &issuer), ag = held ? pf : -1;
            if (issuer >= 0)   /* blocked in the hook of a block whose backward is already built */
                sim__dep(u, pf, c->first[issuer * G + g]);
            if (dp > 1 && k->full_numel[i] > 0) {
                double ahead = prefetch_ahead_fraction(u, c, i);
                if (ahead > 0) {
                    ag = collective(u, "allgather", g, COLL_AG, (double)k->full_numel[i] * dtype * ahead, dp,
                                    c->dp_local, STEP_PH_ALLGATHER, SIM_TR_GATHER);
                    sim__dep(u, st[g].gather, ag);
                    sim__dep(u, pf, ag);
                    if (i + 1 + c->depth < k->n && !sim__emulated(b))
                        sim__dep(u, bwd[(i + 1 + c->depth) * G + g], ag);
                    else   /* not before the forward is done; an emulated device gathers no block ahead */
                        sim__dep(u, st[g].compute, ag);
                    st[g].gather = ag;
                    sim__mem_event(u, ag, k->full_numel[i] * dtype);
                }
                ag = gather_rest(u, c, g, i, ag, pf, i + 1 < k->n ? bwd[(i + 1) * G + g] : st[g].compute);
            }
            /* backward is twice the forward, three times with recomputation of an inner block */
            double f = k->fwd_flops[i] * (b->t.checkpoint_activations && i >= 1 && i < k->n - 1 ? 3.0 : 2.0);
            zero3_hooks(u, c, &st[g], g, i, true);
            c->first[i * G + g] = block_compute(u, &st[g], &c->pc, g, i, ag, f, "backward", STEP_PH_BACKWARD,
                                                -c->act_per_block);
            bwd[i * G + g] = st[g].compute;
        }
        fl.full += k->full_numel[i];
        fl.part += k->part_numel[i];
        fl.cpu += k->cpu_numel[i];
        fl.tensors += k->n_tensors[i];
        fl.cpu_tensors += k->cpu_tensors[i];
        fl.cpu_fresh += k->cpu_fresh_numel[i];
        if (fl.full < c->bucket && i > 0)
            continue;
        build_flush(u, c, &fl, boundary);
        c->n_flush++;
        fl = (struct flush){0};
    }
}

/* After the last backward, per rank: pipeline parallelism's 1F1B fill and drain, (pp - 1)
 * micro-batches of compute added analytically, then the optimizer step of the schedule. */
static void build_optimizer(struct builder *u, struct graph_ctx *c)
{
    struct sim__step *b = u->b;
    const struct blocks *k = &u->k;
    int pp = c->pp;
    for (int g = 0; g < c->G; g++) {
        int ready = rank_marker(u, "step_ready", g, &c->st[g]);
        if (pp > 1) {
            double f = 0;
            for (int i = 0; i < k->n; i++)
                f += k->fwd_flops[i] * (b->t.checkpoint_activations ? 4.0 : 3.0);
            int64_t bubble_ns = (int64_t)ceil((double)(pp - 1) * f / c->flop_rate * 1e9);
            int z2 = sim__add_task(u, "pipeline_bubble", g, SIM_TR_BUBBLE, STEP_PH_PIPELINE_BUBBLE, 0, bubble_ns, 0, 0,
                              NULL, NULL, SIM__NO_SIZE);
            sim__dep(u, ready, z2);
            ready = z2;
        }
        if (c->ds)
            sim__ds_optimizer(u, c->dr, g, ready);
        else
            sim__overlap_optimizer(u, g, sim__overlap_overflow_check(u, g, ready));
    }
}

static int build(struct builder *u, int nsim, struct rl_err *e)
{
    struct sim__step *b = u->b;
    const struct plan *p = b->p;
    const struct hw_profile *hw = b->hw;
    const struct blocks *k = &u->k;
    const struct plan_arch *a = &p->model->arch;
    int tp = p->layout.tp > 0 ? p->layout.tp : 1, dp = p->layout.dp > 0 ? p->layout.dp : 1;
    int pp = p->layout.pp > 0 ? p->layout.pp : 1;
    int G = b->ranks;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    bool offload = p->zero.offload == PLAN_OFFLOAD_CPU;
    bool ds = b->t.schedule == STEP_SCHED_DS012;
    const struct plan_ds_rules *dr = plan_ds_rules_for(p->zero.ds_version);
    /* Ranks are numbered TP fastest, then DP: a TP group is tp consecutive GPUs of a node; a DP
     * group has G / tp members in this node when tp < G. */
    int tp_local = tp < G ? tp : G;
    int dp_local = tp < G ? G / tp : 1;
    if (dp_local > dp)
        dp_local = dp;
    int64_t depth = step_prefetch_depth(p->zero.prefetch_bucket_size, k->max_layer_numel, k->n);
    int64_t bucket = p->zero.reduce_bucket_size > 0 ? p->zero.reduce_bucket_size : PLAN_DS_REDUCE_BUCKET_SIZE;
    double tokens = (double)b->t.micro_batch * (double)b->t.seq_len;
    double ar_bytes = 2.0 * tokens * (double)a->hidden * dtype;   /* two all-reduces per pass */
    int64_t launch = sim__us_to_ns(hw->lat_launch_us);
    double flop_rate = b->f.res[b->r_sm[0]].capacity;

    struct streams *st = calloc((size_t)G, sizeof *st);
    int *fwd = malloc(sizeof *fwd * (size_t)k->n * (size_t)G);   /* per block and rank */
    int *first = malloc(sizeof *first * (size_t)k->n * (size_t)G);   /* per block and rank */
    int *flush_end = malloc(sizeof *flush_end * 3 * (size_t)G);   /* the last 3 flushes' ends per rank */
    if (!st || !fwd || !first || !flush_end) {
        free(st);
        free(fwd);
        free(first);
        free(flush_end);
        return rl_errf(e, RL_ENOMEM, "step: out of memory for the graph of %d blocks x %d ranks", k->n, G);
    }
    for (int g = 0; g < G; g++)
        st[g] = (struct streams){-1, -1, -1, -1, -1};
    int64_t act_per_block = (int64_t)ceil(layer_activation_bytes(p, &b->t, NULL));   /* trace counter */
    struct graph_ctx c = {.G = G, .dp = dp, .dp_local = dp_local, .pp = pp, .dtype = dtype,
                          .comm_dtype = b->t.comm_dtype_bytes > 0 ? b->t.comm_dtype_bytes : dtype, .offload = offload,
                          .ds = ds, .dr = dr, .depth = depth, .bucket = bucket, .act_per_block = act_per_block,
                          .flop_rate = flop_rate,
                          .pc = {.launch_ns = launch, .tp = tp, .tp_local = tp_local, .ar_bytes = ar_bytes,
                                 .dtype = dtype},
                          .st = st, .fwd = fwd, .first = first, .flush_end = flush_end, .n_flush = 0};

    b->fwd_tail = malloc(sizeof *b->fwd_tail * (size_t)nsim * (size_t)G);
    b->bwd_tail = malloc(sizeof *b->bwd_tail * (size_t)nsim * (size_t)G * 4);
    if (!b->fwd_tail || !b->bwd_tail) {
        free(st);
        free(fwd);
        free(first);
        free(flush_end);
        return rl_errf(e, RL_ENOMEM, "step: out of memory for %d micro-steps x %d ranks", nsim, G);
    }
    b->n_mb = nsim;
    for (int mb = 0; mb < nsim; mb++) {
        bool boundary = mb == nsim - 1;
        build_forward(u, &c);
        for (int g = 0; g < G; g++)
            b->fwd_tail[mb * G + g] = st[g].compute;
        build_backward(u, &c, boundary);
        for (int g = 0; g < G; g++) {
            int *t = &b->bwd_tail[(mb * G + g) * 4];
            t[0] = st[g].compute, t[1] = st[g].reduce, t[2] = st[g].copy, t[3] = st[g].host;
        }
    }
    free(fwd);
    free(first);
    free(flush_end);
    build_optimizer(u, &c);
    free(st);
    if (u->err)
        return rl_errf(e, u->err, "step: building the task graph failed: %s",
                       b->g.e.code ? b->g.e.msg : rl_strerror(u->err));
    return 0;
}

/* ---- run ------------------------------------------------------------------------------------------ */
static void observe_links(struct sim_flow *f, void *arg)
{
    struct sim__step *b = arg;
    /* Two arrays of one capacity: a sample of every resource's load per time. */
    int cap_t = b->cap_link_samples, cap_l = b->cap_link_samples;
    if (rl_grow(&b->link_t_ns, &cap_t, sizeof *b->link_t_ns, b->n_link_samples + 1, 256) ||
        rl_grow(&b->link_load, &cap_l, sizeof *b->link_load * (size_t)f->n_res, b->n_link_samples + 1, 256))
        return;
    b->cap_link_samples = cap_l;
    b->link_t_ns[b->n_link_samples] = f->sim->now_ns;
    for (int i = 0; i < f->n_res; i++)
        b->link_load[(size_t)b->n_link_samples * (size_t)f->n_res + (size_t)i] = f->res[i].load;
    b->n_link_samples++;
}

/* The critical rank's forward, backward and optimizer windows (sim_step_result.window_*): per
 * micro-step, forward from its start (the previous backward's end, 0 for the first) to its
 * forward's last compute task's end, backward from there to the latest end of its backward's
 * stream tails; the optimizer from the last backward's end to t1. */
static void rank_windows(const struct sim__step *b, int rank, int64_t t1, struct sim_step_result *r)
{
    const struct sim_graph *gr = &b->g;
    int64_t start = 0;
    r->window_forward_ns = r->window_backward_ns = 0;
    for (int mb = 0; mb < b->n_mb; mb++) {
        int ft = b->fwd_tail[mb * b->ranks + rank];
        int64_t fe = ft >= 0 ? gr->task[ft].t_end_ns : start;
        if (fe < start)
            fe = start;
        int64_t be = fe;
        for (int k = 0; k < 4; k++) {
            int bt = b->bwd_tail[(mb * b->ranks + rank) * 4 + k];
            if (bt >= 0 && gr->task[bt].t_end_ns > be)
                be = gr->task[bt].t_end_ns;
        }
        r->window_forward_ns += fe - start;
        r->window_backward_ns += be - fe;
        start = be;
    }
    r->window_step_ns = t1 > start ? t1 - start : 0;
}

/* The breakdown of rank g's spans over [0, t1). */
static int rank_breakdown(const struct sim_graph *gr, int rank, int64_t t1, struct step_breakdown *bd)
{
    struct step_span *sp = malloc(sizeof *sp * (size_t)(gr->n_task > 0 ? gr->n_task : 1));
    if (!sp)
        return RL_ENOMEM;
    int n = 0;
    for (int i = 0; i < gr->n_task; i++) {
        const struct sim_task *t = &gr->task[i];
        if (t->rank == rank)
            sp[n++] = (struct step_span){sim__task_span_start(t), t->t_end_ns, t->phase};
    }
    int rc = step_breakdown(sp, n, 0, t1, bd);
    free(sp);
    return rc;
}

/* Simulates `nsim` micro-steps (the last one the accumulation boundary) and fills the time part of
 * r: the step end, the critical rank (force_rank >= 0: that one) and its breakdown. */
static int simulate(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t, const int *gpu,
                    int ranks, int nsim, int force_rank, const char *trace_path, struct sim_step_result *r,
                    struct rl_err *e)
{
    struct sim__step b;
    memset(&b, 0, sizeof b);
    memcpy(b.gpu, gpu, sizeof b.gpu);
    b.ranks = ranks;
    b.p = p;
    b.hw = hw;
    b.t = *t;
    b.record_links = trace_path != NULL;
    sim_init(&b.s);
    sim_flow_init(&b.f, &b.s);
    sim_graph_init(&b.g);
    struct builder u = {.b = &b};
    int rc;
    if ((rc = blocks_build(&u.k, p, b.t.micro_batch, b.t.seq_len, e)))
        goto out_nok;
    gemm_block_flops(&u.k, p, hw, &b.t);
    if ((rc = add_resources(&b, e)) < 0 || (rc = build(&u, nsim, e)))
        goto out;
    if (b.record_links) {
        b.f.observe = observe_links;
        b.f.observe_arg = &b;
    }
    if ((rc = sim_graph_run(&b.g, &b.f, e)))
        goto out;
    /* The step ends when every rank is done; the breakdown is the last rank's. */
    int64_t end[HW_MAX_GPUS] = {0};
    for (int i = 0; i < b.g.n_task; i++) {
        const struct sim_task *k = &b.g.task[i];
        if (k->rank >= 0 && k->rank < b.ranks && k->t_end_ns > end[k->rank])
            end[k->rank] = k->t_end_ns;
    }
    r->critical_rank = 0;
    for (int g = 1; g < b.ranks; g++)
        if (end[g] > end[r->critical_rank])
            r->critical_rank = g;
    if (force_rank >= 0)
        r->critical_rank = force_rank;
    r->step_ns = b.g.end_ns;
    struct step_breakdown bd = {0};
    if ((rc = rank_breakdown(&b.g, r->critical_rank, r->step_ns, &bd))) {
        rl_errf(e, rc, "step: out of memory in the breakdown");
        goto out;
    }
    memcpy(r->phase, bd.phase, sizeof r->phase);
    r->idle_ns = bd.idle_ns;
    rank_windows(&b, r->critical_rank, end[r->critical_rank], r);
    r->events = b.s.n_run;
    r->tasks = b.g.n_task;
    if (trace_path) {
        const struct sim__run_record rec = {
            .hw = hw, .ranks = b.ranks, .gpu = b.gpu, .numa_interleave = b.t.numa_interleave, .task = b.g.task,
            .n_task = b.g.n_task, .mem = b.mem, .n_mem = b.n_mem, .res = b.f.res, .n_res = b.f.n_res,
            .link_t_ns = b.link_t_ns, .link_load = b.link_load, .n_link_samples = b.n_link_samples};
        rc = sim__step_trace(&rec, r, trace_path, e);
    }
out:
    blocks_free(&u.k);
out_nok:
    free(b.fwd_tail);
    free(b.bwd_tail);
    free(b.mem);
    free(b.link_t_ns);
    free(b.link_load);
    sim_graph_free(&b.g);
    sim_flow_free(&b.f);
    sim_free(&b.s);
    return rc < 0 ? rc : 0;
}

int sim_step_run(const struct plan *p, const struct hw_profile *hw, const struct sim_train *in,
                 const char *trace_path, struct sim_step_result *r, struct rl_err *e)
{
    int gpu[HW_MAX_GPUS] = {0}, ranks;
    struct sim_train t;
    int rc = step_setup(p, hw, in, gpu, &ranks, &t, r, e);
    if (rc)
        return rc;
    /* Up to the limit every micro-step is simulated. Beyond, the step grows by the same amount per
     * micro-step once the pipeline is in its steady state: the difference between a run of n
     * micro-steps and one of n - 1 (both ending with the boundary) is one steady micro-step, repeated
     * for the micro-steps not simulated. */
    int nsim = simulated_micro_steps(&t);
    int64_t repeat = t.grad_accum - nsim;
    if ((rc = simulate(p, hw, &t, gpu, ranks, nsim, -1, trace_path, r, e)))
        return rc;
    r->simulated_micro_steps = nsim;
    if (repeat > 0) {
        struct sim_step_result s = *r;
        if ((rc = simulate(p, hw, &t, gpu, ranks, nsim - 1, r->critical_rank, NULL, &s, e)))
            return rc;
        double total = (double)r->step_ns + (double)repeat * (double)(r->step_ns - s.step_ns);
        if (!(total <= SIM_MAX_COUNT))
            return rl_errf(e, RL_EINVAL, "step: grad_accum %lld gives a step of %.3g ns, more than the model "
                           "counts; allowed: a smaller grad_accum", (long long)t.grad_accum, total);
        r->step_ns += repeat * (r->step_ns - s.step_ns);
        for (int ph = 0; ph < STEP_PH_COUNT; ph++) {
            r->phase[ph].busy_ns += repeat * (r->phase[ph].busy_ns - s.phase[ph].busy_ns);
            r->phase[ph].exposed_ns += repeat * (r->phase[ph].exposed_ns - s.phase[ph].exposed_ns);
        }
        r->idle_ns += repeat * (r->idle_ns - s.idle_ns);
        r->window_forward_ns += repeat * (r->window_forward_ns - s.window_forward_ns);
        r->window_backward_ns += repeat * (r->window_backward_ns - s.window_backward_ns);
        r->window_step_ns += repeat * (r->window_step_ns - s.window_step_ns);
        r->events += s.events;
        r->tasks += s.tasks;
    }
    /* One rank's micro-batches are its model replica's tokens; the TP x PP ranks of the replica
     * share them, so per GPU they are divided by TP x PP. */
    int mp = (p->layout.tp > 0 ? p->layout.tp : 1) * (p->layout.pp > 0 ? p->layout.pp : 1);
    r->tokens_per_s = r->step_ns > 0 ? (double)t.micro_batch * (double)t.seq_len * (double)t.grad_accum /
                                           ((double)r->step_ns * 1e-9) / mp
                                     : 0;
    return 0;
}
