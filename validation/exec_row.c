/* validation/exec_row.c — one row of `ratiolab validate --ratios`, computed (see exec_row.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validation/exec_row.h"

int val_row_predict(const struct plan_setup *c, const struct plan_model *scaled, double scale,
                    const struct sim_hw *hw, const struct sim_train *t, const char *trace_path, struct val_row *w,
                    struct rl_err *e)
{
    struct plan p;
    struct sim_step_result sr;
    int rc = plan_exec_plan(c, scaled, scale, w->ratio, PLAN_POLICY_AUTO, &p, e);
    if (!rc)
        rc = sim_step_run(&p, hw, t, trace_path, &sr, e);
    if (rc) {
        plan_free(&p);
        return rc;
    }
    w->predicted.step_ns = sr.step_ns;
    for (int k = 0; k < VAL_PHASES; k++) {
        w->predicted.busy_ns[k] = sr.phase[k].busy_ns;
        w->predicted.exposed_ns[k] = sr.phase[k].exposed_ns;
    }
    w->plan_cpu_numel = p.cpu_numel;
    w->plan_per_rank_numel = p.per_rank_numel;
    w->plan_honored_ratio = p.honored_ratio;
    w->plan_device_bytes = plan_peak_gpu_bytes(&p);
    w->plan_host_bytes = plan_peak_cpu_bytes(&p);
    w->plan_host_pinned_bytes = p.stages[PLAN_STAGE_COUNT - 1].cpu_pinned_bytes;
    if (t->schedule == STEP_SCHED_DS012) {
        /* DeepSpeed's pinned flat gradient buffer (the deepspeed-0.12 ledger's entry, P elements
         * of the model dtype), which the exec ledger leaves to the schedule */
        int64_t flat = p.per_rank_numel * plan_dtype_bytes(p.zero.dtype);
        w->plan_host_bytes += flat;
        w->plan_host_pinned_bytes += flat;
    }
    plan_free(&p);
    return 0;
}

void val_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline)
{
    w->digest = r->digest;
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    w->measured.step_ns = cr->step_ns;
    for (int k = 0; k < VAL_PHASES && k < STEP_PH_COUNT; k++) {
        w->measured.busy_ns[k] = cr->phase[k].busy_ns;
        w->measured.exposed_ns[k] = cr->phase[k].exposed_ns;
    }
    w->n_ranks = r->world < VAL_MAX_RANKS ? r->world : VAL_MAX_RANKS;
    for (int k = 0; k < w->n_ranks; k++) {
        const struct ex_rank_result *q = &r->ranks[k];
        struct val_rank_mem *vm = &w->mem[k];
        vm->ledger_device_bytes = q->ledger_device_bytes;
        vm->ledger_host_bytes = q->ledger_host_bytes;
        vm->host_placed_numel = q->host_placed_numel;
        vm->per_rank_numel = q->per_rank_numel;
        vm->rss_bytes = q->mem.peak_rss_bytes;
        vm->baseline_rss_bytes = baseline[k];
        vm->pinned_bytes = q->mem.pinned_bytes;
        vm->device_used_bytes = q->mem.device_used_bytes;
        for (int b = 0; b < q->n_bufs; b++)
            if (q->bufs[b].ledger_bytes < 0 && q->bufs[b].device == PLAN_DEV_GPU)
                vm->scratch_device_bytes += q->bufs[b].bytes;
            else if (q->bufs[b].ledger_bytes < 0)
                vm->scratch_host_bytes += q->bufs[b].bytes;
    }
}

int val_row_from_run_json(struct val_row *w, const char *json_text, const int64_t *baseline, struct rl_err *e)
{
    json_error_t je;
    json_t *j = json_loads(json_text, 0, &je);
    if (!j)
        return rl_errf(e, RL_EINVAL, "ratiolab run --json: not JSON (line %d: %s)", je.line, je.text);
    unsigned dg = 0;
    const char *ds = json_string_value(json_object_get(j, "digest"));
    if (ds)
        sscanf(ds, "%8x", &dg);
    w->digest = dg;
    json_t *m = json_object_get(j, "measurement");
    w->measured.step_ns = json_integer_value(json_object_get(m, "step_ns"));
    json_t *ph = json_object_get(m, "phases");
    for (int k = 0; k < VAL_PHASES; k++) {
        json_t *q = json_object_get(ph, sim_phase_name(k));
        w->measured.busy_ns[k] = json_integer_value(json_object_get(q, "busy_ns"));
        w->measured.exposed_ns[k] = json_integer_value(json_object_get(q, "exposed_ns"));
    }
    json_t *rk = json_object_get(j, "ranks");
    w->n_ranks = (int)json_array_size(rk);
    if (w->n_ranks > VAL_MAX_RANKS)
        w->n_ranks = VAL_MAX_RANKS;
    for (int k = 0; k < w->n_ranks; k++) {
        json_t *q = json_array_get(rk, (size_t)k), *mem = json_object_get(q, "memory");
        struct val_rank_mem *vm = &w->mem[k];
        vm->ledger_device_bytes = json_integer_value(json_object_get(q, "ledger_device_bytes"));
        vm->ledger_host_bytes = json_integer_value(json_object_get(q, "ledger_host_bytes"));
        vm->host_placed_numel = json_integer_value(json_object_get(q, "host_placed_numel"));
        vm->per_rank_numel = json_integer_value(json_object_get(q, "per_rank_numel"));
        json_t *val = json_object_get(mem, "peak_rss_bytes");
        vm->rss_bytes = json_is_integer(val) ? json_integer_value(val) : -1;
        vm->baseline_rss_bytes = baseline[k];
        val = json_object_get(mem, "pinned_bytes");
        vm->pinned_bytes = json_is_integer(val) ? json_integer_value(val) : -1;
        val = json_object_get(mem, "device_used_bytes");
        vm->device_used_bytes = json_is_integer(val) ? json_integer_value(val) : -1;
        /* Device buffers outside the ledger (the executor's compute scratch) are part of
         * what the device pool should hold. */
        json_t *bufs = json_object_get(q, "buffers");
        for (size_t b = 0; b < json_array_size(bufs); b++) {
            json_t *bb = json_array_get(bufs, b);
            const char *dev = json_string_value(json_object_get(bb, "device"));
            if (json_is_null(json_object_get(bb, "ledger_bytes")) && dev && strcmp(dev, "gpu") == 0)
                vm->scratch_device_bytes += json_integer_value(json_object_get(bb, "bytes"));
            else if (json_is_null(json_object_get(bb, "ledger_bytes")) && dev)
                vm->scratch_host_bytes += json_integer_value(json_object_get(bb, "bytes"));
        }
    }
    json_decref(j);
    return 0;
}

/* One more GEMM of shape m x n x k, count times (grouped with its shape). */
static void add_gemm(struct calib_run *r, int64_t m, int64_t n, int64_t k, int64_t count, bool last)
{
    int j = 0;
    while (j < r->n_gemm &&
           !(r->gemm[j].m == m && r->gemm[j].n == n && r->gemm[j].k == k && r->gemm[j].last == last))
        j++;
    if (j < r->n_gemm)
        r->gemm[j].count += count;
    else if (r->n_gemm < CALIB_MAX_GEMMS)
        r->gemm[r->n_gemm++] = (struct calib_gemm_shape){m, n, k, count, last};
}

static double list_flop(const struct calib_run *r, bool last)
{
    double f = 0;
    for (int i = 0; i < r->n_gemm; i++)
        if (r->gemm[i].last == last)
            f += 2.0 * (double)r->gemm[i].m * (double)r->gemm[i].n * (double)r->gemm[i].k * (double)r->gemm[i].count;
    return f;
}

void calib_run_of_plan(const struct plan *p, int64_t micro_batch, int64_t seq, struct calib_run *r)
{
    memset(r, 0, sizeof *r);
    const struct plan_model *m = p->model;
    const struct plan_arch *a = &m->arch;
    int mdb = plan_dtype_bytes(p->zero.dtype);
    int64_t tokens = micro_batch * seq;
    int first = -1, last = -1;
    for (int i = 0; i < m->n_tensors; i++) {
        int l = m->tensors[i].layer;
        if (l >= 0 && (first < 0 || l < first))
            first = l;
        if (l > last)
            last = l;
    }
    int64_t layers = first < 0 ? 0 : last - first + 1, layer_part = 0;
    int64_t heads = a->heads > 0 ? a->heads : 1, tp = a->tp > 0 ? a->tp : 1;
    int64_t hd = a->head_dim > 0 ? a->head_dim : a->hidden / heads;
    int64_t local = heads / tp > 0 ? heads / tp : 1;
    int64_t vocab = a->vocab_padded > 0 ? a->vocab_padded : a->vocab;
    /* One layer's GEMMs (the first layer's), run `layers` times as the run's blocks, then the
     * logits as one more block; every layer must have the first one's FLOPs, else one pass of
     * all of them grouped by shape (no blocks). */
    double all = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const struct plan_tensor *t = &m->tensors[i];
        if (t->layer < 0)
            continue;
        all += 2.0 * (double)tokens * (double)t->numel;
        if (t->layer != first)
            continue;
        layer_part += p->part_numel[i];
        if (t->ndim == 2)
            add_gemm(r, tokens, t->shape[0], t->shape[1], 1, false);
        else
            add_gemm(r, tokens, t->numel, 1, 1, false);
    }
    if (layers > 0 && hd > 0) {
        add_gemm(r, seq, seq, hd, micro_batch * local, false);   /* Q K^T */
        add_gemm(r, seq, hd, seq, micro_batch * local, false);   /* scores V */
        all += 2.0 * 2.0 * (double)seq * (double)seq * (double)hd * (double)(micro_batch * local * layers);
    }
    bool uniform = layers > 0 && fabs(list_flop(r, false) * (double)layers - all) <= 1e-9 * all;
    if (uniform) {
        r->layers = layers;
    } else {   /* layers that differ: every layer's GEMMs in one list */
        r->n_gemm = 0;
        for (int i = 0; i < m->n_tensors; i++) {
            const struct plan_tensor *t = &m->tensors[i];
            if (t->layer < 0)
                continue;
            if (t->ndim == 2)
                add_gemm(r, tokens, t->shape[0], t->shape[1], 1, false);
            else
                add_gemm(r, tokens, t->numel, 1, 1, false);
        }
        if (layers > 0 && hd > 0) {
            add_gemm(r, seq, seq, hd, micro_batch * local * layers, false);
            add_gemm(r, seq, hd, seq, micro_batch * local * layers, false);
        }
    }
    if (layers > 0 && vocab > 0 && a->hidden > 0)
        add_gemm(r, tokens, vocab / tp, a->hidden, 1, uniform);   /* the logits */
    int W = p->layout.dp > 0 ? p->layout.dp : 1;
    r->device_adam_numel = p->per_rank_numel;
    r->host_adam_numel = step_chunk_numel(p->per_rank_numel, p->exec_chunk_numel);
    r->allgather_bytes = layer_part * mdb;
    int64_t bucket = plan_exec_bucket_numel(p);
    r->reduce_scatter_bytes = bucket * mdb / 4 / W * 4;   /* the executor's fp32 elements per rank */
    r->working_set_bytes = p->per_rank_numel * (16 + mdb);
}
