/* sim/tune.c — the search of sim/tune.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/tune.h"

/* ratio < 0: no optimizer offload (device "none"). */
static int build(struct plan *p, const struct sim_tune_request *q, double ratio, int64_t sgs,
                 enum plan_policy policy, struct rl_err *e)
{
    struct plan_zero z = *q->zero;
    if (ratio < 0) {
        z.offload = PLAN_OFFLOAD_NONE;
        z.ratio = 1.0;
        z.src_ratio = PLAN_SRC_DEFAULT;
    } else {
        if (z.offload == PLAN_OFFLOAD_NONE)
            z.offload = PLAN_OFFLOAD_CPU;   /* a ratio needs offload to the CPU */
        z.ratio = ratio;
        z.src_ratio = PLAN_SRC_CLI;
    }
    if (sgs > 0) {
        z.sub_group_size = sgs;
        z.src_sub_group_size = PLAN_SRC_CLI;
    }
    struct plan_options o = q->popt;
    o.policy = policy;
    memset(p, 0, sizeof *p);
    int rc = plan_build(p, q->model, q->layout, &z, &o, e);
    if (rc)
        rl_err_prefix(e, "tune: ratio %g", ratio);
    return rc;
}

static bool fits(const struct sim_tune_request *q, const struct sim_step_result *r)
{
    return r->fits_host && r->gpu_total_bytes <= r->gpu_capacity_bytes - q->headroom_bytes;
}

static void fill(struct sim_tune_choice *c, const struct sim_tune_request *q, const struct plan *p, double ratio,
                 const struct sim_train *t, const struct sim_step_result *r)
{
    c->offload = ratio >= 0;
    c->ratio = ratio >= 0 ? ratio : 0.0;
    c->honored = p->honored_ratio;
    c->micro_batch = r->micro_batch;
    c->grad_accum = r->grad_accum;
    c->ckpt = t->checkpoint_activations;
    c->sub_group_size = p->zero.sub_group_size;
    c->n_subgroups = p->n_subgroups;
    for (int i = 0; i < q->n_more && i < PLAN_MAX_MORE_VERSIONS; i++) {
        struct plan v = *p;   /* a read-only view under the other version's rule */
        v.policy = q->more_policies[i];
        if (plan_honored_for(&v, p->zero.sub_group_size, p->requested_ratio, &c->more_honored[i], NULL))
            c->more_honored[i] = NAN;
    }
    c->r = *r;
    /* r->tokens_per_s is per GPU already (the replica's tokens over its TP x PP ranks). */
    int gpn = q->layout->gpus_per_node > 0 ? q->layout->gpus_per_node : 1;
    c->tokens_per_s_gpu = r->tokens_per_s;
    c->tokens_per_s_node = c->tokens_per_s_gpu * gpn;
    c->free_gpu_bytes = r->gpu_capacity_bytes - r->gpu_total_bytes;
}

/* The plan of candidate ratio under policy: under a DeepSpeed policy with the config's
 * sub_group_size when DeepSpeed honors the ratio with it, else with the largest that does.
 * *honored is false (and p holds nothing) when no sub_group_size honors the ratio. */
static int candidate(struct plan *p, const struct sim_tune_request *q, double ratio, enum plan_policy policy,
                     bool *honored, struct rl_err *e)
{
    *honored = true;
    int rc = build(p, q, ratio, 0, policy, e);
    if (rc || ratio < 0 || policy == PLAN_POLICY_EXACT ||
        plan_honors_under(p, p->zero.sub_group_size, q->more_policies, q->n_more, q->tol))
        return rc;
    int64_t sgs = plan_max_honoring_sub_group_size_under(p, q->more_policies, q->n_more, q->tol);
    plan_free(p);
    memset(p, 0, sizeof *p);
    if (sgs <= 0) {
        *honored = false;
        return 0;
    }
    if ((rc = build(p, q, ratio, sgs, policy, e)))
        return rc;
    if (!plan_honors_under(p, sgs, q->more_policies, q->n_more, q->tol)) {   /* by construction */
        plan_free(p);
        return rl_errf(e, RL_EINTERNAL, "tune: ratio %g: sub_group_size %lld was found to honor it and does not",
                       ratio, (long long)sgs);
    }
    return 0;
}

const char *sim_tune_class_name(enum sim_tune_class c)
{
    static const char *const names[] = {"no offload", "partial offload", "full offload"};
    return c >= 0 && c < SIM_TUNE_N_CLASSES ? names[c] : "?";
}

enum sim_tune_class sim_tune_class_of(double ratio)
{
    return ratio <= 0 ? SIM_TUNE_NO_OFFLOAD : ratio >= 1 ? SIM_TUNE_FULL : SIM_TUNE_PARTIAL;
}

static void best_init(struct sim_tune_best *b)
{
    memset(b, 0, sizeof *b);
    b->min_gpu_bytes = b->min_host_node_bytes = b->min_gpu_bytes_host_ok = INT64_MAX;
    for (int c = 0; c < SIM_TUNE_N_CLASSES; c++) {
        struct sim_tune_class_stats *k = &b->cls[c];
        k->min_gpu_bytes = k->host_at_min_gpu_bytes = k->min_gpu_bytes_host_ok = INT64_MAX;
        k->min_host_node_bytes = k->min_host_any_bytes = INT64_MAX;
    }
}

/* Adds one candidate's memory prediction to its class's facts. */
static void class_add(struct sim_tune_class_stats *k, double ratio, const struct sim_step_result *r, bool gpu_ok)
{
    const double rq = ratio < 0 ? 0 : ratio;
    if (k->evaluated == 0 || rq < k->ratio_lo)
        k->ratio_lo = rq;
    if (k->evaluated == 0 || rq > k->ratio_hi)
        k->ratio_hi = rq;
    k->evaluated++;
    k->gpu_fit += gpu_ok;
    k->host_fit += r->fits_host;
    k->fit += gpu_ok && r->fits_host;
    if (r->gpu_total_bytes < k->min_gpu_bytes ||
        (r->gpu_total_bytes == k->min_gpu_bytes && r->host_total_node_bytes < k->host_at_min_gpu_bytes)) {
        k->min_gpu_bytes = r->gpu_total_bytes;
        k->host_at_min_gpu_bytes = r->host_total_node_bytes;
    }
    if (r->fits_host && r->gpu_total_bytes < k->min_gpu_bytes_host_ok)
        k->min_gpu_bytes_host_ok = r->gpu_total_bytes;
    if (gpu_ok && r->host_total_node_bytes < k->min_host_node_bytes)
        k->min_host_node_bytes = r->host_total_node_bytes;
    if (r->host_total_node_bytes < k->min_host_any_bytes)
        k->min_host_any_bytes = r->host_total_node_bytes;
}

/* One policy's search over the request's candidates; unhonored ratios are counted in out. */
static int search(const struct sim_tune_request *q, enum plan_policy policy, struct sim_tune_best *b,
                  struct sim_tune_result *out, struct rl_err *e)
{
    best_init(b);
    /* Candidates: no offload first when asked (it wins ties: no host memory at all), then the
     * ratios; ratio[k] < 0 marks no offload. */
    const size_t n_cand = q->n_ratios + (q->no_offload ? 1 : 0);
    struct plan *plans = calloc(n_cand, sizeof *plans);
    double *ratio = calloc(n_cand, sizeof *ratio);
    bool *ok = calloc(n_cand, sizeof *ok);
    if (!plans || !ratio || !ok) {
        free(plans);
        free(ratio);
        free(ok);
        return rl_errf(e, RL_ENOMEM, "tune: out of memory for %zu plans", n_cand);
    }
    size_t k0 = 0;
    if (q->no_offload)
        ratio[k0++] = -1;
    for (size_t i = 0; i < q->n_ratios; i++)
        ratio[k0 + i] = q->ratios[i];
    int rc = 0;
    size_t built = 0;
    for (; built < n_cand && !rc; built++) {
        rc = candidate(&plans[built], q, ratio[built], policy, &ok[built], e);
        if (!rc && !ok[built] && policy != PLAN_POLICY_EXACT) {
            if (out->n_unhonored < (int)(sizeof out->unhonored / sizeof out->unhonored[0]))
                out->unhonored[out->n_unhonored] = ratio[built];
            out->n_unhonored++;
        }
    }
    if (rc)
        built--;   /* the failed one holds nothing */
    const int64_t dp = q->layout->dp > 0 ? q->layout->dp : 1;
    /* Loop order sets the tie-break: checkpointing off first, smaller micro-batches, smaller ratios. */
    for (int ck = 0; ck < 2 && !rc; ck++) {
        if ((ck == 0 && !q->ckpt_off) || (ck == 1 && !q->ckpt_on))
            continue;
        for (int m = 0; m < q->n_micro_batches && !rc; m++) {
            const int64_t mb = q->micro_batches[m];
            int64_t ga = q->train.grad_accum;
            if (q->global_batch > 0) {
                if (q->global_batch % (mb * dp) != 0)
                    continue;   /* this micro-batch cannot make the global batch */
                ga = q->global_batch / (mb * dp);
            }
            struct sim_train t = q->train;
            t.micro_batch = mb;
            t.grad_accum = ga;
            t.checkpoint_activations = ck == 1;
            for (size_t i = 0; i < n_cand && !rc; i++) {
                if (!ok[i])
                    continue;
                struct sim_step_result r;
                if ((rc = sim_step_memory(&plans[i], q->hw, &t, &r, e)))
                    break;
                b->evaluated++;
                const bool gpu_ok = r.gpu_total_bytes <= r.gpu_capacity_bytes - q->headroom_bytes;
                b->gpu_fit += gpu_ok;
                b->host_fit += r.fits_host;
                if (r.gpu_total_bytes < b->min_gpu_bytes)
                    b->min_gpu_bytes = r.gpu_total_bytes;
                if (r.fits_host && r.gpu_total_bytes < b->min_gpu_bytes_host_ok)
                    b->min_gpu_bytes_host_ok = r.gpu_total_bytes;
                if (gpu_ok && r.host_total_node_bytes < b->min_host_node_bytes)
                    b->min_host_node_bytes = r.host_total_node_bytes;
                struct sim_tune_class_stats *cls = &b->cls[sim_tune_class_of(ratio[i])];
                class_add(cls, ratio[i], &r, gpu_ok);
                if (!fits(q, &r))
                    continue;
                if ((rc = sim_step_run(&plans[i], q->hw, &t, NULL, &r, e)))
                    break;
                b->simulated++;
                if (r.tokens_per_s > cls->best_tokens_per_s_gpu)
                    cls->best_tokens_per_s_gpu = r.tokens_per_s;
                if (!b->found || r.tokens_per_s > b->best.r.tokens_per_s) {
                    fill(&b->best, q, &plans[i], ratio[i], &t, &r);
                    b->found = true;
                }
                if (ratio[i] >= 0 && (!b->offload_found || r.tokens_per_s > b->best_offload.r.tokens_per_s)) {
                    fill(&b->best_offload, q, &plans[i], ratio[i], &t, &r);
                    b->offload_found = true;
                }
            }
            if (rc)
                rl_err_prefix(e, "micro-batch %lld, checkpointing %s", (long long)mb, ck ? "on" : "off");
        }
    }
    for (size_t i = 0; i < built; i++)
        if (ok[i])
            plan_free(&plans[i]);
    free(plans);
    free(ratio);
    free(ok);
    return rc;
}

int sim_tune(const struct sim_tune_request *q, struct sim_tune_result *out, struct rl_err *e)
{
    memset(out, 0, sizeof *out);
    best_init(&out->ans);
    best_init(&out->exact);
    if (q->n_ratios == 0 || q->n_micro_batches == 0 || (!q->ckpt_off && !q->ckpt_on))
        return rl_errf(e, RL_EINVAL, "tune: nothing to search (no ratio, micro-batch or checkpointing setting)");
    int rc = search(q, q->popt.policy, &out->ans, out, e);
    if (rc)
        return rc;
    out->found = out->ans.found;
    if (q->popt.policy == PLAN_POLICY_EXACT) {
        out->exact = out->ans;
        return 0;
    }
    out->has_exact = true;
    return search(q, PLAN_POLICY_EXACT, &out->exact, out, e);
}

const char *sim_tune_binds(const struct sim_tune_class_stats *k)
{
    if (k->evaluated == 0)
        return "not_searched";
    if (k->fit > 0)
        return "none";
    if (k->gpu_fit == 0)
        return k->host_fit > 0 ? "gpu" : "gpu_and_host";
    return k->host_fit > 0 ? "gpu_or_host" : "host";
}

int64_t sim_tune_gpu_mem_for(int64_t need, int64_t headroom_bytes, bool headroom_given, int64_t gpu_mem_bytes)
{
    if (headroom_given)
        return need + headroom_bytes;
    double share = (double)headroom_bytes / (double)gpu_mem_bytes;
    return (int64_t)ceil((double)need / (1.0 - share));
}

/* The memory figures of fix[] from the search's class facts. */
static void memory_fixes(const struct sim_tune_request *q, const struct sim_tune_result *r, bool headroom_given,
                         struct sim_tune_fix *fix)
{
    for (int c = 0; c <= SIM_TUNE_N_CLASSES; c++) {
        struct sim_tune_fix *f = &fix[c];
        memset(f, 0, sizeof *f);
        struct sim_tune_class_stats all = {.min_gpu_bytes = r->ans.min_gpu_bytes,
                                           .min_gpu_bytes_host_ok = r->ans.min_gpu_bytes_host_ok,
                                           .min_host_node_bytes = r->ans.min_host_node_bytes,
                                           .evaluated = r->ans.evaluated};
        const struct sim_tune_class_stats *k = c < SIM_TUNE_N_CLASSES ? &r->ans.cls[c] : &all;
        if (k->evaluated == 0)
            continue;
        if (k->min_gpu_bytes_host_ok != INT64_MAX)
            f->gpu_mem_bytes = sim_tune_gpu_mem_for(k->min_gpu_bytes_host_ok, q->headroom_bytes, headroom_given,
                                                    q->hw->gpu_mem_bytes);
        if (k->min_host_node_bytes != INT64_MAX)
            f->host_mem_bytes = k->min_host_node_bytes;
        if (!f->gpu_mem_bytes && !f->host_mem_bytes && c < SIM_TUNE_N_CLASSES) {
            f->both_gpu_mem_bytes = sim_tune_gpu_mem_for(k->min_gpu_bytes, q->headroom_bytes, headroom_given,
                                                         q->hw->gpu_mem_bytes);
            f->both_host_mem_bytes = k->host_at_min_gpu_bytes;
        }
    }
}

/* The fewest GPUs of fix[].gpus: the data-parallel degree doubled until each class has its count. */
static void fewest_gpus(const struct sim_tune_request *q0, const struct sim_tune_result *r0, struct sim_tune_fix *fix)
{
    for (int m = 2; m <= 64; m *= 2) {
        bool missing = fix[SIM_TUNE_N_CLASSES].gpus == 0;
        for (int k = 0; k < SIM_TUNE_N_CLASSES; k++)
            missing |= r0->ans.cls[k].evaluated > 0 && fix[k].gpus == 0;
        if (!missing)
            return;
        const struct plan_layout *b = q0->layout;
        struct plan_layout l = {.tp = b->tp, .pp = b->pp, .dp = b->dp * m};
        l.world = l.tp * l.pp * l.dp;
        l.gpus_per_node = l.world < q0->hw->gpus ? l.world : q0->hw->gpus;
        struct rl_err e = {0};
        if (plan_layout_resolve(&l, &e))
            continue;
        struct sim_tune_request q = *q0;
        q.layout = &l;
        struct sim_tune_result r;
        if (sim_tune(&q, &r, &e) || !r.found)
            continue;
        for (int k = 0; k <= SIM_TUNE_N_CLASSES; k++) {
            struct sim_tune_fix *f = &fix[k];
            bool fit = k < SIM_TUNE_N_CLASSES ? r.ans.cls[k].fit > 0 : true;
            if (f->gpus || !fit)
                continue;
            f->gpus = l.world;
            f->dp = l.dp;
            f->nodes = l.nodes;
            f->gpus_tokens_per_s_gpu = k < SIM_TUNE_N_CLASSES ? r.ans.cls[k].best_tokens_per_s_gpu
                                                             : r.ans.best.tokens_per_s_gpu;
        }
    }
}

void sim_tune_fixes(const struct sim_tune_request *q, const struct sim_tune_result *r, bool headroom_given,
                    struct sim_tune_fix fix[SIM_TUNE_N_CLASSES + 1])
{
    memory_fixes(q, r, headroom_given, fix);
    if (!r->found)
        fewest_gpus(q, r, fix);
}

void sim_tune_micro_batches(const struct plan_zero *z, const int64_t *listed, int n_listed, int64_t *mb, int *n)
{
    *n = 0;
    if (z->src_micro_batch == PLAN_SRC_CLI) {
        mb[(*n)++] = z->micro_batch;
        return;
    }
    if (listed) {
        for (int i = 0; i < n_listed && *n < SIM_TUNE_MAX_MICRO_BATCHES - 1; i++)
            mb[(*n)++] = listed[i];
    } else {
        for (int64_t v = 1; v <= 64; v *= 2)
            mb[(*n)++] = v;
    }
    if (z->src_micro_batch == PLAN_SRC_CONFIG)
        mb[(*n)++] = z->micro_batch;
    for (int i = 1; i < *n; i++)   /* insertion sort: a handful of values */
        for (int j = i; j > 0 && mb[j] < mb[j - 1]; j--) {
            int64_t t = mb[j];
            mb[j] = mb[j - 1];
            mb[j - 1] = t;
        }
    int k = 0;
    for (int i = 0; i < *n; i++)
        if (k == 0 || mb[i] != mb[k - 1])
            mb[k++] = mb[i];
    *n = k;
}

int sim_tune_micro_batches_parse(const char *list, const struct plan_zero *z, int64_t *mb, int *n, struct rl_err *e)
{
    int64_t listed[SIM_TUNE_MAX_MICRO_BATCHES];
    int n_listed = 0;
    for (const char *p = list; p && *p && z->src_micro_batch != PLAN_SRC_CLI;) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 20 || (*end && *end != ',') || n_listed >= SIM_TUNE_MAX_MICRO_BATCHES - 1)
            return rl_errf(e, RL_EINVAL, "micro_batches: '%s' is not allowed; expected up to %d integers "
                           ">= 1 separated by commas, e.g. 1,2,4", list, SIM_TUNE_MAX_MICRO_BATCHES - 1);
        listed[n_listed++] = v;
        p = *end ? end + 1 : end;
    }
    sim_tune_micro_batches(z, list ? listed : NULL, n_listed, mb, n);
    return 0;
}

int sim_tune_profile(const struct sim_tune_request *base, int64_t headroom_bytes, struct sim_tune_run *t,
                     struct rl_err *e)
{
    t->headroom_given = headroom_bytes >= 0;
    t->headroom_bytes = t->headroom_given ? headroom_bytes
                                          : (int64_t)(SIM_TUNE_HEADROOM_FRACTION * (double)t->hw.gpu_mem_bytes);
    struct sim_tune_request q = *base;
    q.hw = &t->hw;
    q.headroom_bytes = t->headroom_bytes;
    int rc = sim_tune(&q, &t->res, e);
    if (rc)
        return rc;
    sim_tune_fixes(&q, &t->res, t->headroom_given, t->fix);
    return 0;
}
