/* sim/step.c — builds the task graph of one ZeRO-3 step for every GPU of a node, runs it on the
 * flow model and reduces the result to a step time, a per-phase breakdown and a memory
 * prediction. Cost: O(ranks x (blocks x grad_accum + buckets + sub-groups + chunks)) tasks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/step.h"
#include "sim/step_impl.h"

void sim_train_defaults(struct sim_train *t)
{
    memset(t, 0, sizeof *t);
    t->schedule = SIM_SCHED_DS012;
    t->gpu_reserve_bytes = -1;
}

/* ---- the model, reduced to blocks --------------------------------------------------------------
 * Block 0 holds the parameters before the first transformer layer (embeddings), blocks 1..L the
 * layers of this stage, block L+1 what follows (final norm, untied output layer). */
struct blocks {
    int n;                 /* L + 2 */
    int64_t *full_numel;   /* per block: elements on this TP rank before ZeRO partitioning */
    int64_t *part_numel;   /* per block: this rank's ZeRO-3 partition */
    int64_t *cpu_numel;    /* per block: of which updated on the CPU */
    double *fwd_flops;     /* per block: forward FLOPs per micro-batch */
    int64_t max_layer_numel;   /* largest full_numel over blocks */
};

static void blocks_free(struct blocks *k)
{
    free(k->full_numel);
    free(k->part_numel);
    free(k->cpu_numel);
    free(k->fwd_flops);
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
    int *blk = malloc(sizeof *blk * (size_t)(m->n_tensors > 0 ? (unsigned)m->n_tensors : 1u));
    if (!k->full_numel || !k->part_numel || !k->cpu_numel || !k->fwd_flops || !blk) {
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
        k->full_numel[blk[i]] += m->tensors[i].numel;
        k->part_numel[blk[i]] += p->part_numel[i];
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
            if (c1 > c0)
                k->cpu_numel[blk[ti]] += c1 - c0;
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
}

/* Activation bytes per rank (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", eq. 2 with tensor parallelism t and no sequence parallelism): per layer
 * s b h (10 + 24/t + 5 a s / (h t)) bytes at 16-bit; with full checkpointing each layer keeps
 * its 16-bit input (2 s b h) and one layer's full set is live during recomputation. Pipeline
 * stage k of pp holds pp - k micro-batches in flight (1F1B). Plus fp32 logits and their gradient
 * on the last stage. */
/* Bytes one layer keeps from its forward to its backward: the full set, or with checkpointing
 * its 16-bit input. *full_out receives the full set (live during recomputation). */
static double layer_activation_bytes(const struct plan *p, const struct sim_train *t, double *full_out)
{
    const struct plan_arch *a = &p->model->arch;
    double s = (double)t->seq_len, b = (double)t->micro_batch, h = (double)a->hidden;
    double tp = a->tp > 0 ? a->tp : 1, heads = (double)(a->heads > 0 ? a->heads : 1);
    double width = plan_dtype_bytes(p->zero.dtype) / 2.0;   /* fp32 activations are twice as big */
    double full = s * b * h * (10.0 + 24.0 / tp + 5.0 * heads * s / (h * tp)) * width;
    if (full_out)
        *full_out = full;
    return t->checkpoint_activations ? 2.0 * s * b * h * width : full;
}

static int64_t activation_bytes(const struct plan *p, const struct sim_train *t, int layers)
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
    return (int64_t)ceil(bytes);
}

static int memory(const struct plan *p, const struct sim_hw *hw, const struct sim_train *t,
                  const struct blocks *k, struct sim_step_result *r)
{
    int dp = p->layout.dp > 0 ? p->layout.dp : 1;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    r->gpu_ledger_bytes = plan_peak_gpu_bytes(p);
    r->gpu_activation_bytes = activation_bytes(p, t, k->n - 2);
    /* ZeRO-3 gathers each block before use and prefetches up to prefetch_bucket_size elements
     * ahead, bounded by max_live_parameters; with dp == 1 the partition is the whole tensor. */
    int64_t live = 0;
    if (dp > 1) {
        int64_t depth = k->max_layer_numel > 0 ? p->zero.prefetch_bucket_size / k->max_layer_numel : 0;
        if (depth < 1)
            depth = 1;
        live = (depth + 1) * k->max_layer_numel;
        if (p->zero.max_live_parameters > 0 && live > p->zero.max_live_parameters + k->max_layer_numel)
            live = p->zero.max_live_parameters + k->max_layer_numel;
    }
    r->gpu_live_param_bytes = live * dtype;
    r->gpu_allocated_bytes = r->gpu_ledger_bytes + r->gpu_activation_bytes + r->gpu_live_param_bytes;
    r->gpu_reserve_bytes = t->gpu_reserve_bytes >= 0
                               ? t->gpu_reserve_bytes
                               : hw->context_bytes + (int64_t)ceil(hw->allocator_overhead * (double)r->gpu_allocated_bytes);
    r->gpu_total_bytes = r->gpu_allocated_bytes + r->gpu_reserve_bytes;
    r->gpu_capacity_bytes = hw->gpu_mem_bytes;
    r->fits_gpu = r->gpu_total_bytes <= r->gpu_capacity_bytes;
    r->host_rank_bytes = plan_peak_cpu_bytes(p);
    int per_node = p->layout.gpus_per_node > 0 ? p->layout.gpus_per_node : 1;
    r->host_node_bytes = r->host_rank_bytes * per_node;
    r->host_capacity_bytes = hw->host_mem_bytes;
    r->fits_host = r->host_node_bytes <= r->host_capacity_bytes;
    r->micro_batch = t->micro_batch;
    r->seq_len = t->seq_len;
    r->grad_accum = t->grad_accum;
    return 0;
}

static int check_inputs(const struct plan *p, const struct sim_hw *hw, struct rl_err *e)
{
    int gpn = p->layout.gpus_per_node > 0 ? p->layout.gpus_per_node : 1;
    if (gpn > hw->gpus)
        return rl_errf(e, RL_EINVAL, "layout: %d GPUs per node, but hardware profile %s has %d per node "
                       "(allowed: --gpus-per-node <= %d, or another --hw)", gpn, hw->name, hw->gpus, hw->gpus);
    return 0;
}

int sim_step_memory(const struct plan *p, const struct sim_hw *hw, const struct sim_train *in,
                    struct sim_step_result *r, struct rl_err *e)
{
    int rc = check_inputs(p, hw, e);
    if (rc)
        return rc;
    struct sim_train t;
    resolve_train(p, in, &t);
    struct blocks k;
    if ((rc = blocks_build(&k, p, t.micro_batch, t.seq_len, e)))
        return rc;
    memset(r, 0, sizeof *r);
    memory(p, hw, &t, &k, r);
    blocks_free(&k);
    return 0;
}

/* ---- graph construction -------------------------------------------------------------------------- */
struct builder {
    struct sim__step *b;   /* the run being built */
    struct blocks k;       /* the model cut into blocks */
    int err;               /* first error while adding tasks (sticky) */
};

static int add_task(struct builder *u, const char *name, int rank, int track, int phase, double work,
                    int64_t lat_ns, double cap, int n, const int *res, const double *w, int64_t arg)
{
    struct sim_task t = {.name = name, .track = track, .phase = phase, .rank = rank, .latency_ns = lat_ns,
                         .arg = arg};
    t.req.work = work;
    t.req.rate_cap = cap;
    t.req.n_res = n;
    for (int i = 0; i < n; i++) {
        t.req.res[i] = res[i];
        t.req.weight[i] = w[i];
    }
    int id = sim_graph_add(&u->b->g, &t);
    if (id < 0 && !u->err)
        u->err = id;
    return id;
}

static void dep(struct builder *u, int from, int to)
{
    if (to < 0)
        return;
    int rc = sim_graph_dep(&u->b->g, from, to);
    if (rc && !u->err)
        u->err = rc;
}

static void mem_event(struct builder *u, int task, int64_t delta)
{
    struct sim__step *b = u->b;
    if (!b->record_links || task < 0 || delta == 0)
        return;
    if (b->n_mem == b->cap_mem) {
        int n = b->cap_mem ? 2 * b->cap_mem : 1024;
        void *q = realloc(b->mem, sizeof *b->mem * (size_t)n);
        if (!q) {
            u->err = RL_ENOMEM;
            return;
        }
        b->mem = q;
        b->cap_mem = n;
    }
    b->mem[b->n_mem++] = (struct sim__mem_ev){task, delta};
}

static int64_t us_to_ns(double us) { return (int64_t)llround(us * 1000.0); }

static int socket_of(const struct sim__step *b, int g) { return b->hw->sw[b->hw->gpu_switch[g]].socket; }

/* A host copy of `bytes` for rank g: GPU link, switch uplink, DRAM of the host buffer's socket
 * (pageable: twice, the driver's staging copy), spread over all sockets with numa_interleave. */
static int host_copy(struct builder *u, const char *name, int g, bool h2d, bool pinned, double bytes,
                     int phase, int64_t arg)
{
    struct sim__step *b = u->b;
    const struct sim_hw *hw = b->hw;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    int sw = hw->gpu_switch[g];
    res[n] = h2d ? b->r_h2d[g] : b->r_d2h[g], w[n++] = 1;
    if (hw->n_switches > 0)
        res[n] = h2d ? b->r_up_h2d[sw] : b->r_up_d2h[sw], w[n++] = 1;
    double dram_w = pinned ? 1.0 : 2.0;
    int k = socket_of(b, g);
    if (b->t.numa_interleave && hw->n_sockets == 2 && b->r_isl >= 0) {
        res[n] = b->r_dram[0], w[n++] = dram_w / 2;
        res[n] = b->r_dram[1], w[n++] = dram_w / 2;
        res[n] = b->r_isl, w[n++] = 0.5;
    } else {
        res[n] = b->r_dram[k], w[n++] = dram_w;
    }
    double cap = pinned ? 0 : (h2d ? hw->h2d_pageable_gbps : hw->d2h_pageable_gbps) * 1e9;
    return add_task(u, name, g, h2d ? SIM_TR_H2D : SIM_TR_D2H, phase, bytes, us_to_ns(hw->lat_copy_us), cap, n,
                    res, w, arg);
}

/* CPU Adam over `elems` for rank g: the socket's cores (the rank's share as its own cap) and DRAM
 * at dram_bytes_per_element. */
static int cpu_adam(struct builder *u, const char *name, int g, double elems)
{
    struct sim__step *b = u->b;
    const struct sim_hw *hw = b->hw;
    int k = socket_of(b, g);
    int ranks_here = 0;
    for (int i = 0; i < b->ranks; i++)
        ranks_here += socket_of(b, i) == k;
    double cores = (double)hw->socket[k].cores / (ranks_here ? ranks_here : 1);
    double cap = cores * hw->cpu_adam_elems_per_core;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    res[n] = b->r_cores[k], w[n++] = 1;
    if (b->t.numa_interleave && hw->n_sockets == 2 && b->r_isl >= 0) {
        res[n] = b->r_dram[0], w[n++] = hw->cpu_adam_dram_bytes / 2;
        res[n] = b->r_dram[1], w[n++] = hw->cpu_adam_dram_bytes / 2;
        res[n] = b->r_isl, w[n++] = hw->cpu_adam_dram_bytes / 2;
    } else {
        res[n] = b->r_dram[k], w[n++] = hw->cpu_adam_dram_bytes;
    }
    return add_task(u, name, g, SIM_TR_CPU_ADAM, SIM_PH_CPU_ADAM, elems, 0, cap, n, res, w, (int64_t)elems);
}

/* GPU Adam over `elems`: HBM-bound, 30 bytes per element (read fp32 p, g, m, v; write p, m, v and
 * the 16-bit parameter). */
static int gpu_adam(struct builder *u, const char *name, int g, double elems)
{
    struct sim__step *b = u->b;
    int res[1] = {b->r_hbm[g]};
    double w[1] = {30.0};
    return add_task(u, name, g, SIM_TR_COMPUTE, SIM_PH_GPU_ADAM, elems, us_to_ns(b->hw->lat_launch_us), 0, 1, res,
                    w, (int64_t)elems);
}

enum coll_kind { COLL_AG, COLL_RS, COLL_AR };

/* A collective of `bytes` (the full array, nccl-tests convention) among n ranks of which `local`
 * are in this node, seen from rank g: bus bytes = bytes x (n-1)/n (AG, RS) or 2 (n-1)/n (AR);
 * inside the node on the GPU's NVLink share at the profile's bus bandwidth, across nodes also on
 * the node network (this rank's 1/local part of the group's traffic) and the GPU's PCIe link
 * (GPUDirect RDMA). */
static int collective(struct builder *u, const char *name, int g, enum coll_kind kind, double bytes, int n,
                      int local, int phase, int track)
{
    struct sim__step *b = u->b;
    const struct sim_hw *hw = b->hw;
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
    double lat = inter ? hw->lat_coll_inter_us : hw->lat_coll_intra_us;
    double cap = m == 0 ? busbw * 1e9 : 0;   /* a group on one GPU's NVLink share */
    return add_task(u, name, g, track, phase, bus, us_to_ns(lat), cap, m, res, w, (int64_t)bytes);
}

static int add_resources(struct sim__step *b, struct rl_err *e)
{
    const struct sim_hw *hw = b->hw;
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
    }
    b->r_isl = -1;
    if (hw->n_sockets > 1) {
        snprintf(nm, sizeof nm, "inter-socket");
        RES(b->r_isl, hw->inter_socket_gbps * 1e9);
    }
    b->r_net = -1;
    if (p->layout.nodes > 1) {
        snprintf(nm, sizeof nm, "network");
        RES(b->r_net, hw->net_gbps * 1e9);
    }
#undef RES
    return 0;
}

/* The last task of each stream of a rank, so the next task on that stream follows it. */
struct streams {
    int compute;   /* compute stream: forward, backward, TP all-reduce */
    int gather;    /* NCCL all-gather stream */
    int reduce;    /* NCCL reduce-scatter stream */
    int copy;      /* gradient copies during backward */
};

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
 * Leaves the rank's compute-stream tail in st->compute. */
static void block_compute(struct builder *u, struct streams *st, const struct pass_ctx *pc, int g, int i,
                          int ag, double flops, const char *name, int phase, int64_t act_delta)
{
    const struct blocks *k = &u->k;
    bool inner = i >= 1 && i < k->n - 1;
    if (flops > 0) {
        int res[1] = {u->b->r_sm[g]};
        double w[1] = {1};
        int c = add_task(u, name, g, SIM_TR_COMPUTE, phase, flops, pc->launch_ns, 0, 1, res, w, (int64_t)flops);
        dep(u, st->compute, c);
        dep(u, ag, c);
        st->compute = c;
        if (inner)
            mem_event(u, c, act_delta);
        if (pc->tp > 1 && inner) {
            int ar = collective(u, "tp_allreduce", g, COLL_AR, pc->ar_bytes, pc->tp, pc->tp_local,
                                SIM_PH_TP_ALLREDUCE, SIM_TR_COMPUTE);
            dep(u, c, ar);
            st->compute = ar;
        }
    } else if (ag >= 0) {
        int z = add_task(u, "gathered", g, SIM_TR_COMPUTE, SIM_PH_ALLGATHER, 0, 0, 0, 0, NULL, NULL, 0);
        dep(u, st->compute, z);
        dep(u, ag, z);
        st->compute = z;
    }
    if (ag >= 0) /* released after use */
        mem_event(u, st->compute, -k->full_numel[i] * pc->dtype);
}

static int build(struct builder *u, struct rl_err *e)
{
    struct sim__step *b = u->b;
    const struct plan *p = b->p;
    const struct sim_hw *hw = b->hw;
    const struct blocks *k = &u->k;
    const struct plan_arch *a = &p->model->arch;
    int tp = p->layout.tp > 0 ? p->layout.tp : 1, dp = p->layout.dp > 0 ? p->layout.dp : 1;
    int pp = p->layout.pp > 0 ? p->layout.pp : 1;
    int G = b->ranks;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    bool offload = p->zero.offload == PLAN_OFFLOAD_CPU;
    bool ds012 = b->t.schedule == SIM_SCHED_DS012;
    /* Ranks are numbered TP fastest, then DP: a TP group is tp consecutive GPUs of a node; a DP
     * group has G / tp members in this node when tp < G. */
    int tp_local = tp < G ? tp : G;
    int dp_local = tp < G ? G / tp : 1;
    if (dp_local > dp)
        dp_local = dp;
    int64_t depth = k->max_layer_numel > 0 ? p->zero.prefetch_bucket_size / k->max_layer_numel : 1;
    if (depth < 1)
        depth = 1;
    int64_t bucket = p->zero.reduce_bucket_size > 0 ? p->zero.reduce_bucket_size : INT64_C(500000000);
    double tokens = (double)b->t.micro_batch * (double)b->t.seq_len;
    double ar_bytes = 2.0 * tokens * (double)a->hidden * dtype;   /* two all-reduces per pass */
    int64_t launch = us_to_ns(hw->lat_launch_us);
    double flop_rate = b->f.res[b->r_sm[0]].capacity;

    struct streams *st = calloc((size_t)G, sizeof *st);
    int *fwd = malloc(sizeof *fwd * (size_t)k->n * (size_t)G);   /* per block and rank */
    if (!st || !fwd) {
        free(st);
        free(fwd);
        return rl_errf(e, RL_ENOMEM, "step: out of memory");
    }
    for (int g = 0; g < G; g++)
        st[g] = (struct streams){-1, -1, -1, -1};
    int64_t act_per_block = (int64_t)ceil(layer_activation_bytes(p, &b->t, NULL));   /* trace counter */
    const struct pass_ctx pc = {.launch_ns = launch, .tp = tp, .tp_local = tp_local, .ar_bytes = ar_bytes,
                                .dtype = dtype};

    for (int64_t mb = 0; mb < b->t.grad_accum; mb++) {
        /* Forward: gather block i (prefetched up to `depth` blocks ahead), compute, TP all-reduce. */
        for (int i = 0; i < k->n; i++) {
            for (int g = 0; g < G; g++) {
                int ag = -1;
                if (dp > 1 && k->full_numel[i] > 0) {
                    ag = collective(u, "allgather", g, COLL_AG, (double)k->full_numel[i] * dtype, dp, dp_local,
                                    SIM_PH_ALLGATHER, SIM_TR_GATHER);
                    dep(u, st[g].gather, ag);
                    if (i - 1 - depth >= 0)
                        dep(u, fwd[(i - 1 - depth) * G + g], ag);
                    st[g].gather = ag;
                    mem_event(u, ag, k->full_numel[i] * dtype);
                }
                block_compute(u, &st[g], &pc, g, i, ag, k->fwd_flops[i], i == k->n - 1 ? "logits" : "forward",
                              SIM_PH_FORWARD, act_per_block);
                fwd[i * G + g] = st[g].compute;
            }
        }
        /* Backward, last block first: gather again (prefetched), compute, TP all-reduce; gradients
         * fill buckets of reduce_bucket_size elements, each reduce-scattered when full. */
        int64_t acc_full = 0, acc_part = 0, acc_cpu = 0;
        int *bwd = fwd;   /* reuse: bwd[i * G + g] after block i's backward */
        for (int i = k->n - 1; i >= 0; i--) {
            for (int g = 0; g < G; g++) {
                int ag = -1;
                if (dp > 1 && k->full_numel[i] > 0) {
                    ag = collective(u, "allgather", g, COLL_AG, (double)k->full_numel[i] * dtype, dp, dp_local,
                                    SIM_PH_ALLGATHER, SIM_TR_GATHER);
                    dep(u, st[g].gather, ag);
                    if (i + 1 + depth < k->n)
                        dep(u, bwd[(i + 1 + depth) * G + g], ag);
                    else
                        dep(u, st[g].compute, ag);   /* not before the forward is done */
                    st[g].gather = ag;
                    mem_event(u, ag, k->full_numel[i] * dtype);
                }
                /* backward is twice the forward, three times with recomputation of an inner block */
                double f = k->fwd_flops[i] * (b->t.checkpoint_activations && i >= 1 && i < k->n - 1 ? 3.0 : 2.0);
                block_compute(u, &st[g], &pc, g, i, ag, f, "backward", SIM_PH_BACKWARD, -act_per_block);
                bwd[i * G + g] = st[g].compute;
            }
            acc_full += k->full_numel[i];
            acc_part += k->part_numel[i];
            acc_cpu += k->cpu_numel[i];
            if (acc_full < bucket && i > 0)
                continue;
            for (int g = 0; g < G; g++) {
                int last = st[g].compute;
                int rs = collective(u, "reduce_scatter", g, COLL_RS, (double)acc_full * dtype, dp, dp_local,
                                    SIM_PH_REDUCE_SCATTER, SIM_TR_REDUCE);
                if (rs >= 0) {
                    dep(u, last, rs);
                    dep(u, st[g].reduce, rs);
                    st[g].reduce = rs;
                    last = rs;
                }
                if (ds012 && offload && acc_part > 0) {
                    /* DeepSpeed 0.12: the bucket's partition goes to the flat CPU buffer, comes
                     * back for the norm, and the CPU share goes down again as fp32. */
                    int d1 = host_copy(u, "grad_d2h", g, false, p->zero.pin_memory, (double)acc_part * dtype,
                                       SIM_PH_GRAD_D2H, acc_part * dtype);
                    dep(u, last, d1);
                    dep(u, st[g].copy, d1);
                    int h1 = host_copy(u, "grad_h2d", g, true, p->zero.pin_memory, (double)acc_part * dtype,
                                       SIM_PH_GRAD_H2D, acc_part * dtype);
                    dep(u, d1, h1);
                    st[g].copy = h1;
                    if (acc_cpu > 0) {
                        int d2 = host_copy(u, "grad_d2h_fp32", g, false, true, (double)acc_cpu * 4.0,
                                           SIM_PH_GRAD_D2H, acc_cpu * 4);
                        dep(u, h1, d2);
                        st[g].copy = d2;
                    }
                }
            }
            acc_full = acc_part = acc_cpu = 0;
        }
    }
    free(fwd);

    /* Pipeline parallelism: the 1F1B fill and drain, (pp - 1) micro-batches of compute, added
     * analytically after the last backward. */
    int *ready = malloc(sizeof *ready * (size_t)G);
    if (!ready) {
        free(st);
        return rl_errf(e, RL_ENOMEM, "step: out of memory");
    }
    for (int g = 0; g < G; g++) {
        int z = add_task(u, "step_ready", g, SIM_TR_COMPUTE, -1, 0, 0, 0, 0, NULL, NULL, 0);
        dep(u, st[g].compute, z);
        dep(u, st[g].gather, z);
        dep(u, st[g].reduce, z);
        dep(u, st[g].copy, z);
        ready[g] = z;
        if (pp > 1) {
            double f = 0;
            for (int i = 0; i < k->n; i++)
                f += k->fwd_flops[i] * (b->t.checkpoint_activations ? 4.0 : 3.0);
            int64_t bubble_ns = (int64_t)ceil((double)(pp - 1) * f / flop_rate * 1e9);
            int z2 = add_task(u, "pipeline_bubble", g, SIM_TR_BUBBLE, SIM_PH_PIPELINE_BUBBLE, 0, bubble_ns, 0, 0,
                              NULL, NULL, 0);
            dep(u, z, z2);
            ready[g] = z2;
        }
    }

    /* The optimizer step. */
    for (int g = 0; g < G; g++) {
        if (ds012) {
            /* Sequential over sub-groups, CPU ones (or CPU shares) first: CPU Adam, then the
             * blocking H2D of the fp32 master from pageable memory; then GPU Adam per sub-group. */
            int prev = ready[g];
            for (int s = 0; s < p->n_subgroups; s++) {
                const struct plan_subgroup *sg = &p->subgroups[s];
                if (sg->cpu_numel <= 0)
                    continue;
                int c = cpu_adam(u, "cpu_adam", g, (double)sg->cpu_numel);
                dep(u, prev, c);
                int h = host_copy(u, "master_h2d", g, true, false, (double)sg->cpu_numel * 4.0, SIM_PH_PARAM_H2D,
                                  sg->cpu_numel * 4);
                dep(u, c, h);
                prev = h;
            }
            for (int s = 0; s < p->n_subgroups; s++) {
                const struct plan_subgroup *sg = &p->subgroups[s];
                int64_t n = sg->numel - sg->cpu_numel;
                if (n <= 0)
                    continue;
                int c = gpu_adam(u, "gpu_adam", g, (double)n);
                dep(u, prev, c);
                prev = c;
            }
        } else {
            /* Overlap: GPU Adam on the GPU share at once; the CPU share in chunks through two
             * pinned buffers: D2H (fp32 gradient), CPU Adam, H2D (16-bit parameter). */
            if (p->gpu_numel > 0) {
                int c = gpu_adam(u, "gpu_adam", g, (double)p->gpu_numel);
                dep(u, ready[g], c);
            }
            int64_t cpu = p->cpu_numel;
            if (cpu > 0) {
                int64_t chunk = step_chunk_numel(cpu, p->exec_chunk_numel);
                int64_t nc = step_chunk_count(cpu, p->exec_chunk_numel);
                int pd = -1, pa = -1, ppa = -1, ph = -1;
                for (int64_t c = 0; c < nc; c++) {
                    int64_t n = c == nc - 1 ? cpu - c * chunk : chunk;
                    int d = host_copy(u, "grad_d2h", g, false, true, (double)n * 4.0, SIM_PH_GRAD_D2H, n * 4);
                    dep(u, ready[g], d);
                    dep(u, pd, d);
                    dep(u, ppa, d);   /* its buffer is free once CPU Adam of chunk c - 2 is done */
                    int ad = cpu_adam(u, "cpu_adam", g, (double)n);
                    dep(u, d, ad);
                    dep(u, pa, ad);
                    int h = host_copy(u, "param_h2d", g, true, true, (double)n * dtype, SIM_PH_PARAM_H2D, n * dtype);
                    dep(u, ad, h);
                    dep(u, ph, h);
                    pd = d;
                    ppa = pa;
                    pa = ad;
                    ph = h;
                }
            }
        }
    }
    free(ready);
    free(st);
    if (u->err)
        return rl_errf(e, u->err, "step: building the task graph failed (%s)", rl_strerror(u->err));
    return 0;
}

/* ---- breakdown ------------------------------------------------------------------------------------ */
/* The breakdown of one rank's spans (plan/step.h) into r. */
static int breakdown(const struct sim_graph *g, int rank, int64_t t0, int64_t t1, struct sim_step_result *r)
{
    struct step_span *sp = malloc(sizeof *sp * (size_t)(g->n_task > 0 ? g->n_task : 1));
    if (!sp)
        return RL_ENOMEM;
    int n = 0;
    for (int i = 0; i < g->n_task; i++) {
        const struct sim_task *t = &g->task[i];
        if (t->rank == rank)
            sp[n++] = (struct step_span){sim__task_span_start(t), t->t_end_ns, t->phase};
    }
    struct step_breakdown bd = {0};
    int rc = step_breakdown(sp, n, t0, t1, &bd);
    free(sp);
    if (rc)
        return rc;
    memcpy(r->phase, bd.phase, sizeof r->phase);
    r->idle_ns = bd.idle_ns;
    return 0;
}

static void observe_links(struct sim_flow *f, void *arg)
{
    struct sim__step *b = arg;
    if (b->n_link_samples == b->cap_link_samples) {
        int n = b->cap_link_samples ? 2 * b->cap_link_samples : 256;
        void *q1 = realloc(b->link_t_ns, sizeof *b->link_t_ns * (size_t)n);
        if (!q1)
            return;
        b->link_t_ns = q1;
        void *q2 = realloc(b->link_load, sizeof *b->link_load * (size_t)n * (size_t)f->n_res);
        if (!q2)
            return;
        b->link_load = q2;
        b->cap_link_samples = n;
    }
    b->link_t_ns[b->n_link_samples] = f->sim->now_ns;
    for (int i = 0; i < f->n_res; i++)
        b->link_load[(size_t)b->n_link_samples * (size_t)f->n_res + (size_t)i] = f->res[i].load;
    b->n_link_samples++;
}

int sim_step_run(const struct plan *p, const struct sim_hw *hw, const struct sim_train *in,
                 const char *trace_path, struct sim_step_result *r, struct rl_err *e)
{
    int rc = check_inputs(p, hw, e);
    if (rc)
        return rc;
    memset(r, 0, sizeof *r);
    struct sim__step b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.hw = hw;
    resolve_train(p, in, &b.t);
    b.ranks = p->layout.gpus_per_node > 0 ? p->layout.gpus_per_node : 1;
    if (b.ranks > p->layout.world && p->layout.world > 0)
        b.ranks = p->layout.world;
    b.record_links = trace_path != NULL;
    sim_init(&b.s);
    sim_flow_init(&b.f, &b.s);
    sim_graph_init(&b.g);
    struct builder u = {.b = &b};
    if ((rc = blocks_build(&u.k, p, b.t.micro_batch, b.t.seq_len, e)))
        goto out_nok;
    memory(p, hw, &b.t, &u.k, r);
    if ((rc = add_resources(&b, e)) < 0 || (rc = build(&u, e)))
        goto out;
    if (b.record_links) {
        b.f.observe = observe_links;
        b.f.observe_arg = &b;
    }
    if ((rc = sim_graph_run(&b.g, &b.f, e)))
        goto out;
    /* The step ends when every rank is done; the breakdown is the last rank's. */
    int64_t end[SIM_HW_MAX_GPUS] = {0};
    for (int i = 0; i < b.g.n_task; i++) {
        const struct sim_task *t = &b.g.task[i];
        if (t->rank >= 0 && t->rank < b.ranks && t->t_end_ns > end[t->rank])
            end[t->rank] = t->t_end_ns;
    }
    r->critical_rank = 0;
    for (int g = 1; g < b.ranks; g++)
        if (end[g] > end[r->critical_rank])
            r->critical_rank = g;
    r->step_ns = b.g.end_ns;
    if ((rc = breakdown(&b.g, r->critical_rank, 0, r->step_ns, r))) {
        rl_errf(e, rc, "step: out of memory in the breakdown");
        goto out;
    }
    r->events = b.s.n_run;
    r->tasks = b.g.n_task;
    r->tokens_per_s = r->step_ns > 0 ? (double)b.t.micro_batch * (double)b.t.seq_len * (double)b.t.grad_accum /
                                           ((double)r->step_ns * 1e-9)
                                     : 0;
    if (trace_path) {
        const struct sim__run_record rec = {
            .hw = hw, .ranks = b.ranks, .numa_interleave = b.t.numa_interleave, .task = b.g.task,
            .n_task = b.g.n_task, .mem = b.mem, .n_mem = b.n_mem, .res = b.f.res, .n_res = b.f.n_res,
            .link_t_ns = b.link_t_ns, .link_load = b.link_load, .n_link_samples = b.n_link_samples};
        rc = sim__step_trace(&rec, r, trace_path, e);
    }
out:
    blocks_free(&u.k);
out_nok:
    free(b.mem);
    free(b.link_t_ns);
    free(b.link_load);
    sim_graph_free(&b.g);
    sim_flow_free(&b.f);
    sim_free(&b.s);
    return rc < 0 ? rc : 0;
}
