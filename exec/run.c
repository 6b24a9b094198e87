/* exec/run.c — the pipeline: one ZeRO-3 step with a ratio-split optimizer, on a backend table
 * (exec/backend.h): setup, buffers, forward, backward and the bucket flushes shared by both
 * schedules; each schedule's gradient delivery, overflow scan and optimizer step are in its own
 * file, exec/step_ds.c (deepspeed) and exec/step_overlap.c (overlap), beside the simulator's
 * sim/step_ds.c and sim/step_overlap.c (exec/README.md draws both).
 *
 * Layout of a rank's state. Tensor t (model order, n_t elements, global offset goff_t) has a
 * per-rank partition of s_t = ceil(n_t / W) elements; rank k holds its elements
 * [k s_t, k s_t + s_t) (those >= n_t are padding: no global index, always zero). Partitions are
 * laid out in the plan's flat order (plan->order). The plan's sub-groups split that flat range;
 * each sub-group's first cpu_numel elements are updated on the host, the rest on the device.
 * A "segment" is one such run: host segments are packed into the *_cpu arrays, device segments
 * into the *_gpu arrays, both in flat order. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>   /* crc32, crc32_combine */

#include "exec/backend.h"
#include "exec/exec.h"
#include "exec/dtype.h"
#include "exec/exec_impl.h"
#include "monitor/monitor.h"

static const char *const backend_names[] = {"auto", "cpu", "cuda"};
_Static_assert(RL_COUNT(backend_names) == EX_BACKEND_COUNT, "a backend without a name");
const char *ex_backend_name(enum ex_backend_kind k) { return backend_names[k]; }

int ex_backend_parse(const char *s, enum ex_backend_kind *k, struct rl_err *e)
{
    for (int i = 0; i < EX_BACKEND_COUNT; i++)
        if (rl_streq(s, backend_names[i])) {
            *k = (enum ex_backend_kind)i;
            return 0;
        }
    return rl_errf(e, RL_EINVAL, "backend: '%s' is not a backend; allowed: auto, cpu, cuda", s ? s : "");
}

int ex_backend_parse_named(const char *field, const char *s, enum ex_backend_kind *k, struct rl_err *e)
{
    for (int i = EX_BACKEND_AUTO + 1; i < EX_BACKEND_COUNT; i++)
        if (rl_streq(s, backend_names[i])) {
            *k = (enum ex_backend_kind)i;
            return 0;
        }
    char allowed[64] = "";
    for (int i = EX_BACKEND_AUTO + 1; i < EX_BACKEND_COUNT; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i > 1 ? ", " : "",
                 backend_names[i]);
    return rl_errf(e, RL_EINVAL, "%s: '%s' is not allowed; allowed: %s", field, s ? s : "", allowed);
}

void ex_opts_default(struct ex_opts *o)
{
    memset(o, 0, sizeof *o);
    o->schedule = STEP_SCHED_OVERLAP;
    o->backend = EX_BACKEND_AUTO;
    o->compute = EX_COMPUTE_NONE;
    o->steps = 3;
    o->warmup = 1;
    o->seed = 1;
    o->threads = 1;
    o->weight_decay = 0.01;
    o->lr = 1e-3;
    o->micro_batch = 1;
    o->fail_rank = -1;
    o->comm_dtype = KERN_F32;
}

void ex_result_free(struct ex_result *r)
{
    free(r->ranks);
    r->ranks = NULL;
}

/* ---- setup ----------------------------------------------------------------------------------- */

static int build_maps(struct ex_run *r, struct rl_err *e)
{
    const struct plan *p = r->p;
    const struct plan_model *m = p->model;
    r->T = m->n_tensors;
    r->tm = calloc((size_t)r->T, sizeof *r->tm);
    r->seg = calloc((size_t)(2 * p->n_subgroups + 1), sizeof *r->seg);
    if (!r->tm || !r->seg)
        return rl_errf(e, RL_ENOMEM, "out of host memory for the rank's maps");
    int64_t g = 0;
    for (int t = 0; t < r->T; t++) {
        struct ex_tmap *x = &r->tm[t];
        x->n = m->tensors[t].numel;
        x->s = (x->n + r->W - 1) / r->W;
        x->goff = g;
        g += x->n;
        int64_t lo = (int64_t)r->k * x->s;
        x->real = lo >= x->n ? 0 : (x->n - lo < x->s ? x->n - lo : x->s);
        x->layer = m->tensors[t].layer;
        x->group = m->tensors[t].group;
    }
    r->total_numel = g;
    int64_t f = 0;
    for (int j = 0; j < r->T; j++) {
        struct ex_tmap *x = &r->tm[p->order[j]];
        x->foff = f;
        f += x->s;
    }
    r->P = f;
    int64_t coff = 0, goff = 0;
    for (int i = 0; i < p->n_subgroups; i++) {
        const struct plan_subgroup *sg = &p->subgroups[i];
        int group = m->tensors[p->order[sg->first]].group;
        if (sg->cpu_numel > 0) {
            r->seg[r->nseg++] = (struct ex_seg){.flat = sg->offset, .numel = sg->cpu_numel, .off = coff,
                                                .cpu = true, .group = group, .subgroup = i};
            coff += sg->cpu_numel;
        }
        if (sg->numel > sg->cpu_numel) {
            r->seg[r->nseg++] = (struct ex_seg){.flat = sg->offset + sg->cpu_numel,
                                                .numel = sg->numel - sg->cpu_numel, .off = goff,
                                                .cpu = false, .group = group, .subgroup = i};
            goff += sg->numel - sg->cpu_numel;
        }
    }
    r->Pc = coff;
    r->Pg = goff;
    if (coff + goff != r->P)
        return rl_errf(e, RL_EINTERNAL, "sub-groups cover %lld elements, partitions %lld",
                       (long long)(coff + goff), (long long)r->P);
    /* Blocks: maximal runs of tensors (model order) with the same layer index. */
    r->blocks = calloc((size_t)r->T + 1, sizeof *r->blocks);
    if (!r->blocks)
        return rl_errf(e, RL_ENOMEM, "out of host memory for the block list");
    r->nblocks = ex_model_blocks(m, r->blocks);
    r->ag = calloc((size_t)r->nblocks + 1, sizeof *r->ag);
    if (!r->ag)
        return rl_errf(e, RL_ENOMEM, "out of host memory for the all-gather list");
    /* ZeRO-3 prefetch: the simulator's depth (plan/step.h) over the largest block before
     * partitioning; a pass cannot gather further ahead than its last block. */
    int64_t max_block = 0;
    for (int b = 0; b < r->nblocks; b++) {
        int64_t n = 0;
        for (int t = r->blocks[b]; t < r->blocks[b + 1]; t++)
            n += r->tm[t].n;
        max_block = n > max_block ? n : max_block;
    }
    r->prefetch_depth = step_prefetch_depth(p->zero.prefetch_bucket_size, max_block, r->nblocks);
    r->gather_buffers = (int)step_gather_buffers(r->prefetch_depth);
    return 0;
}

/* Index of the segment holding flat element f (segments are sorted and cover [0, P)). */
/* ---- buffers --------------------------------------------------------------------------------- */

static int alloc_buf(struct ex_run *r, const char *name, enum plan_device dev, int64_t bytes, void **ptr,
                     bool transient, struct rl_err *e)
{
    /* Every buffer is reported, checked and freed: one beyond the table is a bug, not a loss. */
    if (r->nbufs == EX_MAX_BUFS)
        return rl_errf(e, RL_EINTERNAL, "buffer %s: more than EX_MAX_BUFS (%d) buffers", name, EX_MAX_BUFS);
    int rc = dev == PLAN_DEV_GPU ? r->be->dev_alloc(r->dev, bytes, ptr, e)
                                 : r->be->host_alloc(r->dev, bytes, dev == PLAN_DEV_CPU_PINNED, ptr, e);
    if (rc)
        return rc;
    struct ex_buf_report *b = &r->bufs[r->nbufs];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->device = dev;
    b->bytes = bytes;
    b->ledger_bytes = -1;
    r->buf_ptr[r->nbufs] = ptr;
    r->buf_transient[r->nbufs] = transient;
    r->nbufs++;
    return 0;
}

static void free_bufs(struct ex_run *r)
{
    for (int i = r->nbufs - 1; i >= 0; i--) {
        struct ex_buf_report *b = &r->bufs[i];
        if (b->device == PLAN_DEV_GPU)
            r->be->dev_free(r->dev, *r->buf_ptr[i], b->bytes);
        else
            r->be->host_free(r->dev, *r->buf_ptr[i], b->bytes, b->device == PLAN_DEV_CPU_PINNED);
        *r->buf_ptr[i] = NULL;
    }
}

/* Device bytes of one gather buffer: the largest block's partitions, W times. */
static int64_t gather_bytes(const struct ex_run *r)
{
    int64_t gather = 0;
    for (int b = 0; b < r->nblocks; b++) {
        int64_t s = 0;
        for (int t = r->blocks[b]; t < r->blocks[b + 1]; t++)
            s += r->tm[t].s;
        if (s > gather)
            gather = s;
    }
    return gather * r->W * r->mdb;
}

/* Device bytes the run needs besides the ledger: the gather buffers (prefetch depth + 1), for
 * deepspeed the copy of a bucket's gradients brought back from the host (and from 0.15.4 their
 * fp32 upcast for the host share), for overlap with a
 * 16-bit reduce-scatter the widened sums of one flush. */
static int64_t transient_device_bytes(const struct ex_run *r, int64_t bucket_rank_numel)
{
    int64_t bytes = r->gather_buffers * gather_bytes(r);
    if (r->o->schedule == STEP_SCHED_DS012)
        bytes += bucket_rank_numel * r->mdb + (ex__ds_upcasts(r) ? bucket_rank_numel * 4 : 0);
    else if (r->cdb == 2)
        bytes += bucket_rank_numel * 4;
    return bytes;
}

/* The smallest ratio (grid 0.01) whose device bytes fit in `cap`; -1 when none does. */
static double ratio_that_fits(const struct ex_run *r, int64_t cap, int64_t transient)
{
    for (int i = 0; i <= 100; i++) {
        struct plan q;
        struct plan_zero z = r->p->zero;
        z.ratio = i / 100.0;
        struct plan_options po = {.policy = r->p->policy, .ledger = PLAN_LEDGER_EXEC,
                                  .exec_chunk_numel = r->p->exec_chunk_numel};
        struct rl_err e2 = {0};
        if (plan_build(&q, r->p->model, &r->p->layout, &z, &po, &e2) == 0) {
            int64_t need = q.stages[PLAN_STAGE_COUNT - 1].gpu_bytes + transient;
            plan_free(&q);
            if (need <= cap)
                return z.ratio;
        }
    }
    return -1;
}

static int allocate(struct ex_run *r, struct rl_err *e)
{
    const struct plan *p = r->p;
    const int mdb = r->mdb;
    /* Sizes from the executor's own layout, checked against the ledger below. */
    int64_t bucket_numel = plan_exec_bucket_numel(p);
    int64_t bucket_bytes = bucket_numel * mdb;
    /* The bucket carries comm-type gradients: fp32 by default (exact sums, bytes / 4 of them
     * per flush), the model dtype with --comm-dtype (bytes / 2). */
    r->bucket_rank_numel = bucket_bytes / r->cdb / r->W;
    if (r->bucket_rank_numel < 1)
        return rl_errf(e, RL_EINVAL, "reduce_bucket_size: %lld elements (after scale) hold no %s "
                       "gradient per rank for %d ranks; allowed: at least %d (use a smaller scale)",
                       (long long)bucket_numel, kern_dtype_name(r->cd), r->W, r->cdb * r->W / mdb);
    r->chunk = step_chunk_buffer_numel(r->Pc, p->exec_chunk_numel);
    int64_t trans = transient_device_bytes(r, r->bucket_rank_numel);
    int64_t need_dev = r->P * mdb + r->Pg * 16 + bucket_bytes + trans;
    int64_t cap = r->o->device_mem_bytes;
    if (cap > 0 && need_dev > cap) {
        double fit = ratio_that_fits(r, cap, trans);
        char fits[96];
        if (fit >= 0)
            snprintf(fits, sizeof fits, "ratio %.2f fits", fit);
        else
            snprintf(fits, sizeof fits, "no value of ratio fits (the 16-bit parameters and buckets alone do not)");
        return rl_errf(e, RL_ENOMEM, "rank %d: device memory: the ledger needs %lld bytes (+ %lld "
                       "transient), %lld free (device_mem); %s", r->k,
                       (long long)(need_dev - trans), (long long)trans, (long long)cap, fits);
    }
    int rc;
    const enum plan_device D = PLAN_DEV_GPU, H = PLAN_DEV_CPU_PINNED;
    if ((rc = alloc_buf(r, "param_partition", D, r->P * mdb, &r->param16, false, e)) ||
        (rc = alloc_buf(r, "fp32_master_gpu", D, r->Pg * 4, (void **)&r->master_gpu, false, e)) ||
        (rc = alloc_buf(r, "fp32_master_cpu", H, r->Pc * 4, (void **)&r->master_cpu, false, e)) ||
        (rc = alloc_buf(r, "fp32_grad_gpu", D, r->Pg * 4, (void **)&r->grad_gpu, false, e)) ||
        (rc = alloc_buf(r, "fp32_grad_cpu", H, r->Pc * 4, (void **)&r->grad_cpu, false, e)) ||
        (rc = alloc_buf(r, "adam_m_gpu", D, r->Pg * 4, (void **)&r->m_gpu, false, e)) ||
        (rc = alloc_buf(r, "adam_v_gpu", D, r->Pg * 4, (void **)&r->v_gpu, false, e)) ||
        (rc = alloc_buf(r, "adam_m_cpu", H, r->Pc * 4, (void **)&r->m_cpu, false, e)) ||
        (rc = alloc_buf(r, "adam_v_cpu", H, r->Pc * 4, (void **)&r->v_cpu, false, e)) ||
        (rc = alloc_buf(r, "reduce_scatter_bucket", D, bucket_bytes, (void **)&r->bucket, false, e)))
        return rc;
    if (r->Pc > 0 && (rc = alloc_buf(r, "h2d_staging", H, 2 * r->chunk * mdb, &r->staging, false, e)))
        return rc;
    r->n_ledger_bufs = r->nbufs;
    if (r->o->schedule == STEP_SCHED_DS012) {
        /* DeepSpeed's flat gradient buffer (all P elements, model dtype; pinned only with
         * offload_optimizer.pin_memory, whose default is the release's), its GPU copy of one bucket
         * brought back, the pageable staging of a CPU sub-group's parameter copy; from 0.15.4 the
         * host share's fp32 upcast on the device (0.15.4-0.16.2: and its pinned staging). */
        int64_t sg_max = 0;
        for (int i = 0; i < r->nseg; i++)
            if (r->seg[i].cpu && r->seg[i].numel > sg_max)
                sg_max = r->seg[i].numel;
        int64_t pg = sg_max > r->bucket_rank_numel ? sg_max : r->bucket_rank_numel;
        const enum plan_device flat = p->zero.pin_memory ? H : PLAN_DEV_CPU_PAGEABLE;
        if ((rc = alloc_buf(r, "flat_grad_buffer", flat, r->P * mdb, &r->flat_grad, false, e)) ||
            (rc = alloc_buf(r, "grad_partition_gpu_copy", D, r->bucket_rank_numel * mdb, &r->dev16, true, e)) ||
            (rc = alloc_buf(r, "pageable_staging", PLAN_DEV_CPU_PAGEABLE, pg * mdb, &r->pageable16, true, e)))
            return rc;
        if (ex__ds_upcasts(r) &&
            (rc = alloc_buf(r, "grad_upcast_gpu", D, r->bucket_rank_numel * 4, (void **)&r->up32, true, e)))
            return rc;
        if (r->Pc > 0 && r->ds->grad_copy == PLAN_DS_GRAD_HOST_CAST_SYNCED &&
            (rc = alloc_buf(r, "pinned_grad_staging", H, r->bucket_rank_numel * 4, (void **)&r->pinned32, true, e)))
            return rc;
    }
    if (r->o->schedule != STEP_SCHED_DS012 && r->cdb == 2 &&
        (rc = alloc_buf(r, "comm_widened_sums", D, r->bucket_rank_numel * 4, (void **)&r->comm32, true, e)))
        return rc;
    int64_t gather = gather_bytes(r);
    if ((rc = alloc_buf(r, "gathered_params", D, r->gather_buffers * gather, &r->gathered, true, e)))
        return rc;
    r->gathered_bytes = gather;
    return 0;
}

/* Every buffer against the plan's ledger, by name, to the byte. DeepSpeed's flat gradient buffer
 * (deepspeed-0.12 schedule only) is checked against the deepspeed-0.12 ledger's entry. */
static int check_ledger(struct ex_run *r, struct rl_err *e)
{
    const struct plan *p = r->p;
    int bad = -1;
    for (int i = 0; i < r->nbufs; i++) {
        struct ex_buf_report *b = &r->bufs[i];
        if (r->buf_transient[i])
            continue;
        if (strcmp(b->name, "flat_grad_buffer") == 0)
            b->ledger_bytes = p->per_rank_numel * plan_dtype_bytes(p->zero.dtype);
        for (int j = 0; j < p->n_buffers; j++)
            if (strcmp(p->buffers[j].name, b->name) == 0)
                b->ledger_bytes = p->buffers[j].bytes;
        if (b->ledger_bytes < 0 && b->bytes == 0)
            b->ledger_bytes = 0;   /* the ledger lists no empty buffer */
        if (b->ledger_bytes != b->bytes && bad < 0)
            bad = i;
    }
    /* And every ledger buffer is allocated. */
    for (int j = 0; j < p->n_buffers && bad < 0; j++) {
        bool found = false;
        for (int i = 0; i < r->nbufs; i++)
            found |= strcmp(p->buffers[j].name, r->bufs[i].name) == 0;
        if (!found && p->buffers[j].bytes > 0)
            return rl_errf(e, RL_ECHECK, "rank %d: ledger buffer %s (%lld bytes) was not allocated", r->k,
                           p->buffers[j].name, (long long)p->buffers[j].bytes);
    }
    r->ledger_ok = bad < 0;
    if (bad >= 0)
        return rl_errf(e, RL_ECHECK, "rank %d: buffer %s: allocated %lld bytes, the plan's ledger says %lld",
                       r->k, r->bufs[bad].name, (long long)r->bufs[bad].bytes, (long long)r->bufs[bad].ledger_bytes);
    return 0;
}

/* ---- state ----------------------------------------------------------------------------------- */

/* Fresh state: master from ex_synth_param, m = v = 0, padding 0. Written EX_HOST_CHUNK elements at
 * a time, so the host scratch is the same few MiB at every scale and ratio: a scratch the size of the
 * largest tensor would sit in the measured peak RSS (VmHWM) of a full-size run, but not in the
 * one-row baseline run that validate subtracts. */
static int init_state(struct ex_run *r, struct rl_err *e)
{
    int64_t maxs = 0;
    for (int t = 0; t < r->T; t++)
        maxs = r->tm[t].s > maxs ? r->tm[t].s : maxs;
    int64_t cap = maxs < EX_HOST_CHUNK ? maxs : EX_HOST_CHUNK;
    float *hm = calloc((size_t)cap + 1, 4), *z = calloc((size_t)cap + 1, 4);
    int rc = 0;
    if (!hm || !z)
        rc = rl_errf(e, RL_ENOMEM, "out of host memory");
    for (int t = 0; t < r->T && !rc; t++) {
        const struct ex_tmap *x = &r->tm[t];
        int64_t g0 = x->goff + (int64_t)r->k * x->s;
        for (int64_t c0 = 0; c0 < x->s && !rc; c0 += cap) {
            int64_t n = x->s - c0 < cap ? x->s - c0 : cap;
            for (int64_t j = 0; j < n; j++)
                hm[j] = c0 + j < x->real ? ex_synth_param(r->o->seed, g0 + c0 + j) : 0.0f;
            rc = ex__put_range(r, x->foff + c0, n, hm, z, z, e);
        }
    }
    free(hm);
    free(z);
    return rc;
}

/* ---- the step -------------------------------------------------------------------------------- */

/* Moves the backend's finished copy spans into the step's spans (and the trace). */
static void collect_copy_spans(struct ex_run *r, bool keep)
{
    if (!r->be->take_spans)
        return;
    struct step_span buf[64];
    int n;
    while ((n = r->be->take_spans(r->dev, buf, 64)) > 0)
        for (int i = 0; keep && i < n; i++) {
            if (rl_grow(&r->spans, &r->cap_spans, sizeof *r->spans, r->n_spans + 1, 256)) {
                r->span_oom = true;
                return;
            }
            r->spans[r->n_spans++] = buf[i];
            if (r->o->trace_path)
                ex__trace_add(r, buf[i].start_ns, buf[i].end_ns, buf[i].phase, 0);
        }
}

/* Block b's GEMMs (exec/compute.c), `times` passes (compute time only: outputs feed nothing). */
static int block_compute(struct ex_run *r, int b, int times, struct rl_err *e)
{
    if (r->o->compute != EX_COMPUTE_GEMM || !r->act)
        return 0;
    for (int pass = 0; pass < times; pass++)
        for (int i = r->gemm_first[b]; i < r->gemm_first[b + 1]; i++) {
            const struct ex_gemm *g = &r->gemms[i];
            for (int64_t c = 0; c < g->count; c++)
                RL_TRY(r->be->gemm(r->dev, g->m, g->n, g->k, r->act, r->wscratch, r->act_out, EX_STREAM_COMPUTE, e));
        }
    return r->be->sync(r->dev, EX_STREAM_COMPUTE, e);
}

/* True when no started, not yet waited all-gather fills gather buffer `slot`. */
static bool gather_slot_free(const struct ex_run *r, int slot)
{
    for (int q = 0; q < r->nblocks; q++)
        if (r->ag[q].started && r->ag[q].slot == slot)
            return false;
    return true;
}

/* Starts the all-gather of block b's 16-bit partitions into gather buffer `slot`: this rank's
 * partitions packed into its place (communication stream), then the in-place all-gather. The
 * slot's previous gather must have been waited for: its values would be overwritten while in
 * flight, and nothing in the outputs shows it (the gathered values feed no result). */
static int gather_start(struct ex_run *r, int b, int slot, struct rl_err *e)
{
    assert(slot >= 0 && slot < r->gather_buffers && gather_slot_free(r, slot));
    struct ex_gather *g = &r->ag[b];
    g->t0_ns = ex__now_ns();
    char *buf = (char *)r->gathered + (int64_t)slot * r->gathered_bytes;
    int64_t per = 0, off = 0;
    for (int t = r->blocks[b]; t < r->blocks[b + 1]; t++)
        per += r->tm[t].s;
    char *mine = buf + (int64_t)r->k * per * r->mdb;
    for (int t = r->blocks[b]; t < r->blocks[b + 1]; t++) {
        RL_TRY(r->be->copy(r->dev, mine + off * r->mdb, (char *)r->param16 + r->tm[t].foff * r->mdb,
                           r->tm[t].s * r->mdb, EX_D2D, EX_STREAM_COMM, e));
        off += r->tm[t].s;
    }
    RL_TRY(r->be->allgather_start(r->dev, buf, per * r->mdb, &g->req, e));
    g->started = true;
    g->slot = slot;
    g->t1_ns = 0;
    g->bytes = per * r->mdb * r->W;
    return 0;
}

/* Notes the completion time of every started all-gather that has completed by now (and, on the
 * cpu backend, progresses them: MPI_Test). Called after a block's compute and before a
 * reduce-scatter, so a gather's span ends where it was first seen complete. */
static int gathers_poll(struct ex_run *r, struct rl_err *e)
{
    for (int b = 0; b < r->nblocks; b++) {
        struct ex_gather *g = &r->ag[b];
        if (!g->started || g->t1_ns)
            continue;
        bool done = false;
        RL_TRY(r->be->allgather_test(r->dev, g->req, &done, e));
        if (done)
            g->t1_ns = ex__now_ns();
    }
    return 0;
}

/* Waits for block b's all-gather. Its span runs from the start's issue to its completion (seen
 * by a poll, or now), or, where the backend times gathers itself (cuda), over the gather's own
 * time on the device: the part behind the previous block's compute counts as overlapped. */
static int gather_wait(struct ex_run *r, int b, struct rl_err *e)
{
    struct ex_gather *g = &r->ag[b];
    if (!g->started)
        return rl_errf(e, RL_EINTERNAL, "block %d computed before its all-gather was started", b);
    g->started = false;
    RL_TRY(r->be->allgather_wait(r->dev, g->req, e));
    int64_t t0 = g->t0_ns, t1 = g->t1_ns ? g->t1_ns : ex__now_ns();
    if (r->be->allgather_times)   /* the device's own times (cuda: events on the comm stream) */
        RL_TRY(r->be->allgather_times(r->dev, g->req, &t0, &t1, e));
    ex__span_add(r, STEP_PH_ALLGATHER, t0, t1, g->bytes);
    return 0;
}

/* Before the compute of the block at position i of a pass (forward: block i; backward: block
 * nblocks - 1 - i): the all-gathers of positions up to i + prefetch_depth are started (those
 * not yet), position j into gather buffer j mod (depth + 1), whose previous block (position
 * j - depth - 1 <= i - 1) has computed; then block i's own is waited for. *next: the first
 * position not yet started. */
int ex__gather_for(struct ex_run *r, bool forward, int i, int *next, struct rl_err *e)
{
    int last = i + (int)r->prefetch_depth < r->nblocks - 1 ? i + (int)r->prefetch_depth : r->nblocks - 1;
    for (; *next <= last; (*next)++)
        RL_TRY(gather_start(r, forward ? *next : r->nblocks - 1 - *next, *next % r->gather_buffers, e));
    return gather_wait(r, forward ? i : r->nblocks - 1 - i, e);
}


/* Delivers a reduced range (device pointer src: fp32; src16: the model dtype, deepspeed with a
 * 16-bit comm type only, else NULL; flat [f, f + len)) to the fp32 gradients, as the run's
 * schedule does it (exec/step_ds.c, exec/step_overlap.c). */
static int deliver(struct ex_run *r, const float *src, const void *src16, int64_t f, int64_t len, struct rl_err *e)
{
    if (r->o->schedule == STEP_SCHED_DS012)
        return ex__ds_deliver(r, src, src16, f, len, e);
    return ex__overlap_deliver(r, src, f, len, e);
}

/* Flushes the bucket: every rank's shares of the items in rank-major order, reduce-scatter in
 * fp32 (exact) or the model dtype (--comm-dtype), delivery of this rank's sums. */
static int flush(struct ex_run *r, int64_t it, struct rl_err *e)
{
    if (r->n_items == 0)
        return 0;
    int64_t cnt = 0;
    for (int i = 0; i < r->n_items; i++)
        cnt += r->items[i].len;
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));   /* the last flush's D2H is done with the bucket */
    int64_t t0 = ex__now_ns();
    int64_t nan_at = it == r->o->inject_nan_step ? 0 : -1;
    for (int q = 0; q < r->W; q++) {
        int64_t off = (int64_t)q * cnt;
        for (int i = 0; i < r->n_items; i++) {
            const struct ex_item *b = &r->items[i];
            const struct ex_tmap *x = &r->tm[b->t];
            int64_t lo = (int64_t)q * x->s + b->a;   /* in-tensor index of the first element */
            int64_t valid = x->n - lo;
            valid = valid < 0 ? 0 : valid > b->len ? b->len : valid;
            /* This rank's share of the elements destined for rank q. */
            RL_TRY(r->be->shares(r->dev, (char *)r->bucket + off * r->cdb, r->cd, b->len, valid, x->goff + lo,
                              r->o->seed, it, r->k, r->W, r->k == 0 ? nan_at : -1, EX_STREAM_COMPUTE, e));
            off += b->len;
        }
    }
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
    ex__phase_add(r, STEP_PH_BACKWARD, t0, 0);
    RL_TRY(gathers_poll(r, e));   /* the prefetched gathers' spans end before the reduce-scatter */
    t0 = ex__now_ns();
    void *sums = NULL;
    RL_TRY(r->be->reduce_scatter(r->dev, r->bucket, cnt, r->cd, &sums, e));
    ex__phase_add(r, STEP_PH_REDUCE_SCATTER, t0, cnt * r->cdb * r->W);
    const float *sums32 = sums;
    const char *sums16 = NULL;
    if (r->cdb == 2) {
        /* deepspeed-0.12 takes the 16-bit sums as they are; overlap widens them on the device. */
        sums16 = sums;
        sums32 = NULL;
        if (r->o->schedule != STEP_SCHED_DS012) {
            t0 = ex__now_ns();
            RL_TRY(r->be->widen(r->dev, r->comm32, sums, r->cd, cnt, EX_STREAM_COMM, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
            ex__phase_add(r, STEP_PH_REDUCE_SCATTER, t0, cnt * 6);
            sums32 = r->comm32;
            sums16 = NULL;
        }
    }
    int64_t off = 0;
    for (int i = 0; i < r->n_items; i++) {
        const struct ex_item *b = &r->items[i];
        RL_TRY(deliver(r, sums32 ? sums32 + off : NULL, sums16 ? sums16 + off * 2 : NULL, r->tm[b->t].foff + b->a,
                    b->len, e));
        off += b->len;
    }
    r->n_items = 0;
    r->bucket_fill = 0;
    return 0;
}

/* Adds tensor t's partition range to the bucket, flushing whenever it is full. */
static int bucket_add(struct ex_run *r, int t, int64_t it, struct rl_err *e)
{
    int64_t a = 0, s = r->tm[t].s;
    while (a < s) {
        if (r->bucket_fill == r->bucket_rank_numel)
            RL_TRY(flush(r, it, e));
        int64_t room = r->bucket_rank_numel - r->bucket_fill;
        int64_t n = s - a < room ? s - a : room;
        r->items[r->n_items++] = (struct ex_item){.t = t, .a = a, .len = n};
        r->bucket_fill += n;
        a += n;
        if (r->n_items == r->cap_items)
            RL_TRY(flush(r, it, e));
    }
    return 0;
}

static int forward_backward(struct ex_run *r, int64_t it, struct rl_err *e)
{
    int next = 0;
    for (int b = 0; b < r->nblocks; b++) {
        RL_TRY(ex__gather_for(r, true, b, &next, e));
        int64_t t0 = ex__now_ns();
        RL_TRY(block_compute(r, b, 1, e));
        ex__phase_add(r, STEP_PH_FORWARD, t0, 0);
        RL_TRY(gathers_poll(r, e));
    }
    next = 0;
    for (int b = r->nblocks - 1; b >= 0; b--) {
        RL_TRY(ex__gather_for(r, false, r->nblocks - 1 - b, &next, e));
        int64_t t0 = ex__now_ns();
        RL_TRY(block_compute(r, b, ex_block_backward_passes(r->p->model, r->blocks, b, r->o->checkpoint_activations), e));
        ex__phase_add(r, STEP_PH_BACKWARD, t0, 0);
        RL_TRY(gathers_poll(r, e));
        for (int t = r->blocks[b + 1] - 1; t >= r->blocks[b]; t--)
            RL_TRY(bucket_add(r, t, it, e));
    }
    return flush(r, it, e);
}

/* Any non-finite gradient on any rank (then the step is skipped): the schedule's scan of this
 * rank's gradients, then the count's maximum over the world. */
static int overflow(struct ex_run *r, bool *skip, struct rl_err *e)
{
    int64_t t0 = ex__now_ns();
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));   /* the host share's gradients have arrived */
    ex__phase_add(r, STEP_PH_GRAD_D2H, t0, 0);
    int64_t bad = 0;
    RL_TRY(r->o->schedule == STEP_SCHED_DS012 ? ex__ds_scan(r, &bad, e) : ex__overlap_scan(r, &bad, e));
    RL_TRY(ex_comm_max_i64(r->c, &bad, 1, e));
    *skip = bad > 0;
    return 0;
}

static int one_step(struct ex_run *r, int64_t it, bool *skipped, struct rl_err *e)
{
    if (r->o->fail_rank == r->k && r->o->fail_phase == EX_FAIL_STEP)
        return rl_errf(e, RL_EENV, "rank %d: failing on purpose at iteration %lld (fail_rank)", r->k,
                       (long long)it);
    RL_TRY(forward_backward(r, it, e));
    RL_TRY(overflow(r, skipped, e));
    if (!*skipped) {
        r->adam_step++;
        RL_TRY(r->o->schedule == STEP_SCHED_DS012 ? ex__ds_optimizer(r, e) : ex__overlap_optimizer(r, e));
    }
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));
    collect_copy_spans(r, true);
    return 0;
}

/* ---- results --------------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return n ? v[n / 2] : 0;
}

static void read_memory(struct ex_run *r, struct ex_mem *m)
{
    struct mon_proc_stat ps;
    struct rl_err e2 = {0};
    m->rss_bytes = m->peak_rss_bytes = m->locked_bytes = m->pinned_bytes = -1;
    if (mon_read_proc((int)getpid(), &ps, &e2) == 0) {
        m->rss_bytes = ps.rss_bytes;
        m->peak_rss_bytes = ps.hwm_bytes;
        m->locked_bytes = ps.locked_bytes;
        m->pinned_bytes = ps.pinned_bytes;
    }
    r->be->mem(r->dev, &m->device_used_bytes, &m->device_capacity_bytes);
    m->gpu_process_bytes = r->be->process_bytes ? r->be->process_bytes(r->dev) : -1;
}

/* ---- the whole run --------------------------------------------------------------------------- */

/* --compute gemm: every block's GEMM list and the scratch matrices the largest of them needs. */
static int setup_compute(struct ex_run *r, struct rl_err *e)
{
    if (r->o->compute != EX_COMPUTE_GEMM)
        return 0;
    const struct plan_model *m = r->p->model;
    int64_t seq = r->o->seq_len > 0 ? r->o->seq_len : m->arch.seq_len > 0 ? m->arch.seq_len : 1024;
    int64_t mb = r->o->micro_batch > 0 ? r->o->micro_batch : 1;
    r->tokens = mb * seq;
    r->gemm_first = calloc((size_t)r->nblocks + 1, sizeof *r->gemm_first);
    int n = 0;
    for (int b = 0; b < r->nblocks; b++)
        n += ex_block_gemms(m, r->blocks, r->nblocks, b, mb, seq, NULL, 0);
    r->gemms = calloc((size_t)n + 1, sizeof *r->gemms);
    if (!r->gemm_first || !r->gemms)
        return rl_errf(e, RL_ENOMEM, "out of host memory for the GEMM lists");
    int64_t amax = 1, bmax = 1, cmax = 1;
    for (int b = 0, at = 0; b < r->nblocks; b++) {
        r->gemm_first[b] = at;
        at += ex_block_gemms(m, r->blocks, r->nblocks, b, mb, seq, r->gemms + at, n - at);
        r->gemm_first[b + 1] = at;
    }
    for (int i = 0; i < n; i++) {
        const struct ex_gemm *g = &r->gemms[i];
        amax = g->m * g->k > amax ? g->m * g->k : amax;
        bmax = g->k * g->n > bmax ? g->k * g->n : bmax;
        cmax = g->m * g->n > cmax ? g->m * g->n : cmax;
    }
    int rc;
    if ((rc = alloc_buf(r, "gemm_activations", PLAN_DEV_GPU, amax * 4, (void **)&r->act, true, e)) ||
        (rc = alloc_buf(r, "gemm_outputs", PLAN_DEV_GPU, cmax * 4, (void **)&r->act_out, true, e)) ||
        (rc = alloc_buf(r, "gemm_weights", PLAN_DEV_GPU, bmax * 4, (void **)&r->wscratch, true, e)))
        return rc;
    return 0;
}

static int run_all(struct ex_run *r, struct ex_result *res, struct rl_err *e)
{
    const struct ex_opts *o = r->o;
    RL_TRY(build_maps(r, e));
    RL_TRY(allocate(r, e));
    RL_TRY(check_ledger(r, e));
    RL_TRY(setup_compute(r, e));
    r->cap_items = r->T + 2;
    r->items = calloc((size_t)r->cap_items, sizeof *r->items);
    if (!r->items)
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    if (o->load_dir)
        RL_TRY(ex__ckpt_load(r, o->load_dir, e));
    else
        RL_TRY(init_state(r, e));
    RL_TRY(ex_comm_barrier(r->c, e));
    r->t_origin_ns = ex__now_ns();
    int total = o->warmup + o->steps;
    int64_t *step_ns = calloc((size_t)total + 1, sizeof *step_ns);
    /* per phase: busy then exposed, one row of total + 1 steps each */
    int64_t *ph = calloc((size_t)(total + 1) * 2 * STEP_PH_COUNT, sizeof *ph);
    if (!step_ns || !ph) {
        free(step_ns);
        free(ph);
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    }
    int rc = 0;
    int n_timed = 0;
    for (int s = 0; s < total && !rc; s++) {
        memset(r->ph_bytes, 0, sizeof r->ph_bytes);
        collect_copy_spans(r, false);   /* copies before this step (state set-up) */
        r->n_spans = 0;
        int64_t t0 = ex__now_ns();
        bool skipped = false;
        rc = one_step(r, ++r->iterations, &skipped, e);
        int64_t t1 = ex__now_ns();
        r->skipped += skipped;
        if (o->trace_path) {
            struct ex_mem mm;
            ex__trace_add(r, t0, t1, s < o->warmup ? EX_TSPAN_WARMUP_STEP : EX_TSPAN_STEP, s + 1);
            read_memory(r, &mm);
            ex__trace_add(r, t1, t1, EX_TSPAN_DEVICE_MEMORY, mm.device_used_bytes);
            ex__trace_add(r, t1, t1, EX_TSPAN_RSS, mm.rss_bytes);
        }
        if (!rc && r->span_oom)
            rc = rl_errf(e, RL_ENOMEM, "out of host memory for the step's spans");
        if (!rc && s >= o->warmup) {
            struct step_breakdown bd;
            memset(&bd, 0, sizeof bd);
            if (step_breakdown(r->spans, r->n_spans, t0, t1, &bd)) {
                rc = rl_errf(e, RL_ENOMEM, "out of host memory for the step breakdown");
                break;
            }
            step_ns[n_timed] = t1 - t0;
            for (int k = 0; k < STEP_PH_COUNT; k++) {
                ph[(int64_t)(2 * k) * (total + 1) + n_timed] = bd.phase[k].busy_ns;
                ph[(int64_t)(2 * k + 1) * (total + 1) + n_timed] = bd.phase[k].exposed_ns;
            }
            n_timed++;
        }
    }
    if (!rc) {
        struct ex_rank_result *me = &res->self;
        me->rank = r->k;
        me->step_ns = median(step_ns, n_timed);
        for (int k = 0; k < STEP_PH_COUNT; k++) {
            me->phase[k].busy_ns = median(ph + (int64_t)(2 * k) * (total + 1), n_timed);
            me->phase[k].exposed_ns = median(ph + (int64_t)(2 * k + 1) * (total + 1), n_timed);
            me->phase[k].bytes = r->ph_bytes[k];
            me->bytes_moved += k >= STEP_PH_ALLGATHER ? r->ph_bytes[k] : 0;
        }
        me->per_rank_numel = r->P;
        me->host_placed_numel = r->Pc;
        for (int i = 0; i < r->nbufs; i++)
            if (!r->buf_transient[i]) {
                if (r->bufs[i].device == PLAN_DEV_GPU)
                    me->ledger_device_bytes += r->bufs[i].bytes;
                else
                    me->ledger_host_bytes += r->bufs[i].bytes;
            }
        me->n_bufs = r->nbufs;
        memcpy(me->bufs, r->bufs, sizeof r->bufs);
        read_memory(r, &me->mem);
        res->iterations = r->iterations;
        res->adam_step = r->adam_step;
        res->skipped = r->skipped;
        res->total_numel = r->total_numel;
        res->ledger_ok = r->ledger_ok;
        rc = ex__digest(r, &res->digest, e);
    }
    if (!rc && o->save_dir)
        rc = ex__ckpt_save(r, o->save_dir, e);
    if (!rc && o->trace_path)
        rc = ex__trace_write(r, o->trace_path, e);
    free(step_ns);
    free(ph);
    return rc;
}

int ex_run(const struct plan *p, const struct ex_opts *o, struct ex_comm *c, struct ex_result *res,
           struct rl_err *e)
{
    memset(res, 0, sizeof *res);
    if (p->ledger_kind != PLAN_LEDGER_EXEC)
        return rl_errf(e, RL_EINTERNAL, "ex_run needs a plan with the exec ledger");
    if (p->layout.pp > 1)
        return rl_errf(e, RL_EINVAL, "pp: %d; the executor runs the data-parallel ZeRO-3 dimension "
                       "only; pipeline parallelism is refused (plan and predict support it)", p->layout.pp);
    if (p->layout.dp != c->size)
        return rl_errf(e, RL_EINVAL, "world size: the layout has %d data-parallel ranks, the MPI "
                       "world has %d processes; allowed: equal (mpirun -np %d)", p->layout.dp, c->size,
                       p->layout.dp);
    if (c->size > EX_MAX_WORLD)
        return rl_errf(e, RL_EINVAL, "world size: %d; allowed up to %d (the synthetic gradient sum is exact "
                       "only up to there)", c->size, EX_MAX_WORLD);
    if (p->zero.dtype == PLAN_FP32)
        return rl_errf(e, RL_EINVAL, "dtype: fp32; the executor runs fp16 or bf16 models");
    if (o->steps < 1 || o->warmup < 0)
        return rl_errf(e, RL_EINVAL, "steps/warmup: %d/%d; allowed: steps >= 1, warmup >= 0", o->steps,
                       o->warmup);
    struct ex_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.o = o;
    r.c = c;
    r.W = c->size;
    r.k = c->rank;
    r.md = ex_kern_dtype(p->zero.dtype);   /* fp16 or bf16: fp32 is refused above */
    r.mdb = 2;
    r.cd = o->comm_dtype == KERN_BF16 || o->comm_dtype == KERN_F16 ? o->comm_dtype : KERN_F32;
    r.cdb = kern_dtype_bytes(r.cd);
    if (o->schedule == STEP_SCHED_DS012) {   /* the release whose step runs (plan/ds_rules.c) */
        r.ds = plan_ds_rules_for(p->zero.ds_version);
        res->ds_step = true;
        res->ds_version = p->zero.ds_version;
    }
    if (r.cd != KERN_F32 && r.cd != r.md)
        return rl_errf(e, RL_EINVAL, "comm_dtype: %s, but the model dtype is %s; allowed: fp32 or %s",
                       kern_dtype_name(r.cd), kern_dtype_name(r.md), kern_dtype_name(r.md));
    /* The backend: the one asked for, or with auto the GPUs when the cuda backend sees one. */
    enum ex_backend_kind bk = o->backend;
    const struct ex_backend *gpu = ex_backend_named(backend_names[EX_BACKEND_CUDA]);   /* NULL: not built */
    if (bk == EX_BACKEND_AUTO)
        bk = gpu && gpu->device_count() > 0 ? EX_BACKEND_CUDA : EX_BACKEND_CPU;
    if (bk == EX_BACKEND_CUDA && !gpu)
        return rl_errf(e, RL_EENV, "backend cuda: this ratiolab was built without the CUDA backend "
                       "(nvcc, cuBLAS and NCCL are needed)");
    r.be = ex_backend_named(backend_names[bk]);
    res->backend = bk;
    res->world = c->size;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int rc = r.be->open(&r.dev, c, lr ? atoi(lr) : 0, o->device_mem_bytes, e);
    if (!rc) {
        rc = run_all(&r, res, e);
        res->prefetch_depth = r.prefetch_depth;
        res->gather_buffers = r.gather_buffers;
        /* Rank 0 collects every rank's figures. */
        if (!rc) {
            void *all = NULL;
            int64_t bytes = 0;
            rc = ex_comm_gatherv(c, &res->self, sizeof res->self, &all, &bytes, e);
            if (!rc && c->rank == 0) {
                res->ranks = all;
                int64_t worst = -1;
                for (int q = 0; q < c->size; q++)
                    if (res->ranks[q].step_ns > worst) {
                        worst = res->ranks[q].step_ns;
                        res->critical_rank = q;
                    }
            } else {
                free(all);
            }
        }
        free_bufs(&r);
        r.be->close(r.dev);
    }
    free(r.tm);
    free(r.seg);
    free(r.blocks);
    free(r.ag);
    free(r.gemms);
    free(r.gemm_first);
    free(r.items);
    free(r.spans);
    free(r.tspans);
    return rc;
}
