/* sim/check.c — the verdict of `ratiolab check` (see check.h). */
#include <math.h>
#include <string.h>

#include "sim/check.h"

/* The GPU bytes of one rank under plan p: the simulator's whole per-rank prediction (model states,
 * activations, gathered parameters, context and allocator reserve), or the ledger's model states
 * alone (states_only). */
static int gpu_bytes_of(const struct sim_check_request *q, const struct plan *p, int64_t *bytes,
                        struct sim_step_result *parts, struct rl_err *e)
{
    if (q->states_only) {
        *bytes = plan_peak_gpu_bytes(p);
        return 0;
    }
    struct sim_step_result r;
    int rc = sim_step_memory(p, q->hw, q->train, &r, e);
    if (rc)
        return rc;
    *bytes = r.gpu_total_bytes;
    if (parts)
        *parts = r;
    return 0;
}

/* The ratio DeepSpeed honors under policy for sub_group_size sgs and the plan's ratio. */
static double honored_under(const struct plan *p, enum plan_policy policy, int64_t sgs)
{
    struct plan q = *p;   /* a read-only view with another placement rule */
    q.policy = policy;
    double h = 0;
    if (plan_honored_for(&q, sgs, p->requested_ratio, &h, NULL))
        return NAN;
    return h;
}

/* Builds a plan for (ratio, sgs) and returns the honoring sgs for that ratio (the config's own
 * when it already honors), the resulting honored ratio and the GPU bytes. */
static int try_ratio(const struct plan_setup *c, const struct sim_check_request *q, double ratio, int64_t sgs,
                     int64_t *sgs_out, double *honored, int64_t *gpu, struct rl_err *e)
{
    struct plan_setup cc = *c;
    cc.zero.sub_group_size = sgs;
    struct plan p;
    int rc = plan_setup_plan(&cc, ratio, &p, e);
    if (rc)
        return rc;
    *sgs_out = sgs;
    if (!plan_honors_under(&p, sgs, c->more_policies, c->n_more, q->tol) && p.policy != PLAN_POLICY_EXACT) {
        int64_t s = plan_max_honoring_sub_group_size_under(&p, c->more_policies, c->n_more, q->tol);
        if (s > 0) {
            plan_free(&p);
            cc.zero.sub_group_size = s;
            if ((rc = plan_setup_plan(&cc, ratio, &p, e)))
                return rc;
            *sgs_out = s;
        }
    }
    *honored = p.honored_ratio;
    /* Every further version must honor it too: else report the first version's miss. */
    for (int i = 0; i < c->n_more; i++) {
        double h = honored_under(&p, c->more_policies[i], *sgs_out);
        if (!plan_ratio_within(h, ratio, q->tol))
            *honored = h;
    }
    rc = gpu_bytes_of(q, &p, gpu, NULL, e);
    plan_free(&p);
    return rc;
}

/* GPU bytes at ratio r honored exactly: cheap (no sub_group_size search) and non-increasing in
 * r, so the memory fix can bisect on it. */
static int exact_bytes(const struct plan_setup *c, const struct sim_check_request *q, double r, int64_t *gpu,
                       struct rl_err *e)
{
    struct plan_setup cc = *c;
    cc.popt.policy = PLAN_POLICY_EXACT;
    struct plan p;
    int rc = plan_setup_plan(&cc, r, &p, e);
    if (rc)
        return rc;
    rc = gpu_bytes_of(q, &p, gpu, NULL, e);
    plan_free(&p);
    return rc;
}

int sim_check(const struct plan_setup *c, const struct sim_check_request *q, struct sim_check_verdict *v,
              struct rl_err *e)
{
    memset(v, 0, sizeof *v);
    v->fix_ratio = -1;
    struct plan p;
    int rc = plan_setup_plan(c, -1, &p, e);
    if (rc)
        return rc;
    v->requested = p.requested_ratio;
    v->honored = p.honored_ratio;
    v->n_subgroups = p.n_subgroups;
    v->sub_group_size = p.zero.sub_group_size;
    if (q->gpu_mem_bytes && (rc = gpu_bytes_of(q, &p, &v->gpu_bytes, &v->mem, e))) {
        plan_free(&p);
        return rc;
    }
    if (!q->gpu_mem_bytes)
        v->gpu_bytes = plan_peak_gpu_bytes(&p);
    v->ratio_ok = v->version_ok[0] = plan_honors(&p, q->tol);
    for (int i = 0; i < c->n_more; i++) {
        v->more_honored[i] = honored_under(&p, c->more_policies[i], v->sub_group_size);
        v->version_ok[1 + i] = plan_ratio_within(v->more_honored[i], v->requested, q->tol);
        v->ratio_ok = v->ratio_ok && v->version_ok[1 + i];
    }
    v->memory_ok = q->gpu_mem_bytes == 0 || v->gpu_bytes <= q->gpu_mem_bytes;
    if (!v->ratio_ok) {
        v->fix_sgs = plan_max_honoring_sub_group_size_under(&p, c->more_policies, c->n_more, q->tol);
        v->fix_sgs_none = v->fix_sgs == 0;
        if (v->fix_sgs > 0) {
            v->fix_honored[0] = honored_under(&p, p.policy, v->fix_sgs);
            for (int i = 0; i < c->n_more; i++)
                v->fix_honored[1 + i] = honored_under(&p, c->more_policies[i], v->fix_sgs);
        }
        if (v->fix_sgs_none)
            v->closest_sgs = plan_closest_sub_group_size(&p, &v->closest_honored);
    }
    plan_free(&p);
    if (v->memory_ok)
        return 0;
    /* The smallest ratio on a 0.01 grid (least offload, fastest) whose memory fits once its
     * sub_group_size honors it. Bisect on the exactly-honored memory (non-increasing in the
     * ratio) for the first grid point that can fit, then confirm upwards under the real policy:
     * O(log 100) cheap plans and a few sub_group_size searches, not 101 of them. */
    int64_t g;
    if ((rc = exact_bytes(c, q, 1.0, &g, e)))
        return rc;
    if (g > q->gpu_mem_bytes)
        return 0;   /* even everything on the CPU does not fit */
    int lo = 0, hi = 100;   /* exact(hi) fits; find the smallest such */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((rc = exact_bytes(c, q, mid / 100.0, &g, e)))
            return rc;
        if (g <= q->gpu_mem_bytes)
            hi = mid;
        else
            lo = mid + 1;
    }
    /* A DeepSpeed policy honors r within the tolerance, so a grid point up to tol below lo may
     * still fit with its honored ratio: the confirmation starts there, as the old scan would. */
    int from = lo - (int)ceil(q->tol * 100.0) - 1;
    for (int i = from > 0 ? from : 0; i <= 100; i++) {
        double r = i / 100.0, h;
        int64_t s;
        if ((rc = try_ratio(c, q, r, v->sub_group_size, &s, &h, &g, e)))
            return rc;
        if (g <= q->gpu_mem_bytes && plan_ratio_within(h, r, q->tol)) {
            v->fix_ratio = r;
            v->fix_sgs = s != v->sub_group_size ? s : 0;
            v->fix_gpu_bytes = g;
            v->fix_fits = true;
            break;
        }
    }
    return 0;
}

