/* calib/run_plan.c — what one rank of a run does, from its plan (calib_run_of_plan): the GEMMs
 * the executor's `--compute gemm` runs and the simulator charges, grouped by shape, and the sizes of
 * its device Adam, host chunk, all-gather, reduce-scatter and model states. */
#include <math.h>
#include <string.h>

#include "calib/calib.h"
#include "plan/plan.h"
#include "plan/step.h"

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
