/* validation/probe_json.c — the JSON document of `validate --probe` (validation/probe_json.h). */
#include "validation/probe_json.h"

#include <math.h>

#include "kernels/adam_replay.h"   /* kern_replay_opt_name */

/* Each check's name, status and detail, in val_probe_compare's order. */
static json_t *checks_json(const struct val_probe_result *r)
{
    json_t *ch = json_array();
    for (int k = 0; k < VAL_PROBE_CHECKS; k++) {
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(r->checks[k].name));
        json_object_set_new(x, "status", json_string(val_status_name(r->checks[k].status)));
        json_object_set_new(x, "detail", json_string(r->checks[k].detail));
        json_array_append_new(ch, x);
    }
    return ch;
}

/* Rank 0's part: the probe, the plan's figures, rank 0's checks (its verdict every rank's). */
static json_t *probe_json(const struct val_probe_json_in *in, const struct val_probe *pr, const struct val_probe_result *r)
{
    const struct plan *p = in->p;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("ratiolab-validate-probe"));
    json_object_set_new(o, "probe", json_string(in->probe));
    json_object_set_new(o, "model", json_string(in->model_desc));
    json_object_set_new(o, "hardware", json_string(in->hw_name));
    json_object_set_new(o, "deepspeed_version", json_string(pr->ds_version_text));
    json_object_set_new(o, "accelerator", json_string(pr->accelerator));
    json_object_set_new(o, "cpu_accelerator", json_boolean(val_probe_cpu_accelerator(pr)));
    json_object_set_new(o, "policy", json_string(plan_policy_name(p->policy)));
    json_object_set_new(o, "subgroups", json_integer(p->n_subgroups));
    json_object_set_new(o, "plan_cpu_numel", json_integer(p->cpu_numel));
    json_object_set_new(o, "observed_cpu_numel", json_integer(r->observed_cpu_numel));
    json_object_set_new(o, "per_rank_numel", json_integer(p->per_rank_numel));
    json_object_set_new(o, "checks", checks_json(r));
    json_object_set_new(o, "digest_step", pr->digest_step >= 0 ? json_integer(pr->digest_step) : json_null());
    json_object_set_new(o, "digest", pr->digest_step >= 0 ? json_string(pr->digest) : json_null());
    json_object_set_new(o, "probe_overhead_ns", json_integer(pr->overhead_ns));
    json_object_set_new(o, "probe_overhead_cpu_ns", pr->overhead_cpu_ns >= 0 ? json_integer(pr->overhead_cpu_ns) : json_null());
    json_object_set_new(o, "step_wall_ns_total", json_integer(pr->step_total_ns));
    json_t *tm = json_object();
    for (int t = 0; t < pr->n_timers; t++)
        json_object_set_new(tm, pr->timers[t].name, json_real(pr->timers[t].median_ms));
    json_object_set_new(o, "timers_median_ms", tm);
    json_object_set_new(o, "verdict", json_string(val_status_name(r->overall)));
    return o;
}

/* The audit: one object per sub-group (docs/audit-format.md). */
static json_t *audit_json(const char *path, const struct val_audit *a, const struct val_audit_finding *f)
{
    json_t *o = json_object(), *arr = json_array();
    json_object_set_new(o, "file", json_string(path));
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_rec *r = &a->rec[i];
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(r->rank));
        json_object_set_new(x, "sub_group", json_integer(r->sub_group));
        json_object_set_new(x, "param_group", json_integer(r->param_group));
        json_object_set_new(x, "optimizer", json_string(kern_replay_opt_name(r->optimizer)));
        json_object_set_new(x, "optimizer_object", json_string(r->optimizer_object ? "backup" : "own"));
        json_object_set_new(x, "numel", json_integer(r->numel));
        json_object_set_new(x, "step", json_integer(r->step));
        json_object_set_new(x, "simd_width", json_integer(r->simd_width));
        json_object_set_new(x, "status", json_string(val_audit_status_name(f[i].status)));
        json_object_set_new(x, "n_diff", json_integer(f[i].n_diff));
        json_object_set_new(x, "max_ulps", json_integer(f[i].max_ulps));
        json_object_set_new(x, "n_sqrt_faithful", json_integer(f[i].n_sqrt_faithful));
        json_object_set_new(x, "formula_ok", json_boolean(f[i].formula_ok));
        json_object_set_new(x, "formula_not_applicable", json_boolean(f[i].formula_na));
        json_object_set_new(x, "formula_max", json_real(isfinite(f[i].formula_max) ? f[i].formula_max : -1));
        json_object_set_new(x, "cause", f[i].cause[0] ? json_string(f[i].cause) : json_null());
        json_object_set_new(x, "other_optimizer", json_string(kern_replay_opt_name(f[i].other_optimizer)));
        json_object_set_new(x, "other_n_diff", json_integer(f[i].other_n_diff));
        json_object_set_new(x, "other_max_ulps", json_integer(f[i].other_max_ulps));
        json_array_append_new(arr, x);
    }
    json_object_set_new(o, "sub_groups", arr);
    return o;
}

double val_probe_ratio(const struct val_probe *p) { return p->config.have_ratio ? p->config.ratio : -1; }

bool val_probe_rng_shift(const struct val_probe *a, const struct val_probe *b)
{
    double ra = val_probe_ratio(a), rb = val_probe_ratio(b);
    return ra >= 0 && rb >= 0 && ((ra >= 1.0) != (rb >= 1.0));
}

/* The two runs' audits paired: why their digests differ, one object per record. */
static json_t *why_json(const struct val_probe_run_files *f, const struct val_probe_run *run)
{
    const struct val_probe *pa = &run->prs[0], *pb = &run->pb;
    const struct val_audit *a = &run->au, *b = &run->bu;
    const struct val_audit_finding *fa = run->af;
    const struct val_audit_pair *pairs = run->pairs;
    json_t *o = json_object(), *arr = json_array();
    json_object_set_new(o, "against_probe", json_string(f->against_probe));
    json_object_set_new(o, "against_audit", json_string(f->against_audit));
    json_object_set_new(o, "ratio", val_probe_ratio(pa) >= 0 ? json_real(val_probe_ratio(pa)) : json_null());
    json_object_set_new(o, "against_ratio", val_probe_ratio(pb) >= 0 ? json_real(val_probe_ratio(pb)) : json_null());
    json_object_set_new(o, "step", json_integer(a->n ? a->rec[0].step : 0));
    json_object_set_new(o, "verdict", json_string(val_audit_why_name(run->why)));
    json_object_set_new(o, "rng_shift", json_boolean(val_probe_rng_shift(pa, pb)));
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_pair *q = &pairs[i];
        const struct val_audit_rec *x = &a->rec[q->a], *y = &b->rec[q->b];
        json_t *r = json_object();
        json_object_set_new(r, "rank", json_integer(x->rank));
        json_object_set_new(r, "sub_group", json_integer(x->sub_group));
        json_object_set_new(r, "param_group", json_integer(x->param_group));
        json_object_set_new(r, "first_element", json_integer(x->first_element));
        json_object_set_new(r, "numel", json_integer(x->numel));
        json_object_set_new(r, "optimizer", json_string(kern_replay_opt_name(x->optimizer)));
        json_object_set_new(r, "against_optimizer", json_string(kern_replay_opt_name(y->optimizer)));
        json_object_set_new(r, "exact", json_boolean(q->exact_a));
        json_object_set_new(r, "against_exact", json_boolean(q->exact_b));
        json_object_set_new(r, "n_diff_before", json_integer(q->n_diff_before));
        json_object_set_new(r, "n_diff_grad", json_integer(q->n_diff_grad));
        json_object_set_new(r, "n_diff_after", json_integer(q->n_diff_after));
        json_object_set_new(r, "max_ulps_after", json_integer(q->max_ulps_after));
        json_object_set_new(r, "max_abs_after", json_real(isfinite(q->max_abs_after) ? q->max_abs_after : -1));
        json_object_set_new(r, "other_step_n_diff", json_integer(fa[q->a].other_n_diff));
        json_object_set_new(r, "other_step_max_ulps", json_integer(fa[q->a].other_max_ulps));
        json_array_append_new(arr, r);
    }
    json_object_set_new(o, "records", arr);
    return o;
}

/* probe_json's part, then the run's accumulation, every rank's checks, the gathered digest, the
 * hparams, the audit and the two runs' pairing. */
json_t *val_probe_run_json(const struct val_probe_run *run, const struct val_probe_json_in *in)
{
    const struct val_probe *pr = &run->prs[0];
    const struct val_hparams_result *hp = &run->hp;
    json_t *j = probe_json(in, pr, &run->r0);
    json_object_set_new(j, "predicted_step_ns", json_integer(in->predicted_step_ns));
    json_object_set_new(j, "gradient_accumulation_steps", json_integer(in->grad_accum));
    json_object_set_new(j, "num_param_groups", json_integer(in->p->n_groups));
    json_object_set_new(j, "param_groups_from", json_string(pr->groups.n_groups > 0 ? "probe" : "command line"));
    json_t *ranks = json_array();
    for (int i = 0; i < run->n; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(run->prs[i].rank));
        json_object_set_new(x, "probe", json_string(run->paths[i]));
        json_object_set_new(x, "checks", checks_json(&run->rs[i]));
        json_object_set_new(x, "verdict", json_string(val_status_name(run->rs[i].overall)));
        json_array_append_new(ranks, x);
    }
    json_object_set_new(j, "ranks", ranks);
    json_t *g = json_object();
    json_object_set_new(g, "status", json_string(val_status_name(run->digest)));
    json_object_set_new(g, "detail", json_string(run->digest_detail));
    json_object_set_new(j, "gathered_digest", g);
    json_t *hj = json_object();
    json_object_set_new(hj, "status", json_string(val_status_name(hp->status)));
    json_object_set_new(hj, "detail", json_string(hp->detail));
    json_object_set_new(hj, "sub_groups_with_a_finding", json_integer(hp->n_bad));
    json_object_set_new(hj, "lr_changed", json_boolean(hp->lr_changed));
    json_t *ha = json_array();
    for (int i = 0; i < hp->n_sub; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "sub_group", json_integer(pr->sub[i].index));
        json_object_set_new(x, "finding", json_string(val_hp_kind_name(hp->sub[i].kind)));
        json_object_set_new(x, "step", json_integer(hp->sub[i].step));
        if (hp->sub[i].field) {
            json_object_set_new(x, "field", json_string(hp->sub[i].field));
            json_object_set_new(x, "held", json_real(hp->sub[i].held));
            json_object_set_new(x, "current", json_real(hp->sub[i].current));
        }
        json_array_append_new(ha, x);
    }
    json_object_set_new(hj, "sub_groups", ha);
    json_object_set_new(j, "hparams", hj);
    if (in->f->audit) {
        json_object_set_new(j, "audit", audit_json(in->f->audit, &run->au, run->af));
        json_object_set_new(j, "verdict", json_string(run->pass ? "PASS" : "FAIL"));
    }
    if (run->pairs)
        json_object_set_new(j, "digest_explanation", why_json(in->f, run));
    return j;
}
