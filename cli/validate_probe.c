/* cli/validate_probe.c — `ratiolab validate --probe FILE`: what ratiolab_probe read from a live
 * DeepSpeed engine, on rank 0 and on every rank beside it, against the plan and the prediction
 * (validation/probe.h); with --audit, every sub-group's optimizer update replayed bit for bit
 * (validation/audit.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/validate_probe.h"
#include "kernels/adam_replay.h"
#include "validation/audit.h"
#include "validation/hparams.h"
#include "validation/probe.h"
#include "validation/probe_run.h"

static double gib(int64_t b) { return (double)b / RL_GIB; }

static void print_ranks(const char *const *paths, const struct val_probe *prs, const struct val_probe_result *rs,
                        int n, enum val_status digest, const char *digest_detail);

/* The run's param groups (when the probe names them) and its steps' micro-steps. */
static void print_groups_steps(const struct val_probe *pr)
{
    if (pr->groups.n_groups > 0) {
        printf("groups     %d param group%s, as the probe recorded them (the plan's):", pr->groups.n_groups,
               pr->groups.n_groups == 1 ? "" : "s");
        for (int g = 0; g < pr->groups.n_groups; g++) {
            const struct val_probe_group *x = &pr->group[g];
            printf("\n             %d: %d parameter%s, %lld elements", g, x->n_params, x->n_params == 1 ? "" : "s",
                   (long long)x->numel);
            if (!isnan(x->lr))
                printf(", lr %.6g", x->lr);
            if (!isnan(x->weight_decay))
                printf(", weight decay %.6g", x->weight_decay);
        }
        printf("\n");
    }
    if (pr->micro_steps >= 0 && pr->optimizer_steps >= 0) {
        printf("steps      %lld optimizer step%s of %d micro-step%s each (gradient_accumulation_steps %d: %lld "
               "engine.step() calls", (long long)pr->optimizer_steps, pr->optimizer_steps == 1 ? "" : "s",
               pr->grad_accum, pr->grad_accum == 1 ? "" : "s", pr->grad_accum, (long long)pr->micro_steps);
        if (pr->micro_batch > 0)
            printf(", micro-batch %lld", (long long)pr->micro_batch);
        printf("); step_time predicts one optimizer step of %d micro-batch%s\n", pr->grad_accum,
               pr->grad_accum == 1 ? "" : "es");
    }
}

/* Rank 0's report in full, then the other ranks (print_ranks); r->overall is every rank's. */
static void print_probe(const char *path, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                        const struct val_probe *pr, const struct val_probe_result *r, const char *const *paths,
                        const struct val_probe *prs, const struct val_probe_result *rs, int n, enum val_status digest,
                        const char *digest_detail, const struct val_hparams_result *hp)
{
    printf("probe      %s (rank %d of %d, DeepSpeed %s, torch %s, accelerator \"%s\", %s)\n", cli_data(path), pr->rank,
           pr->world_size, cli_data(pr->ds_version_text), cli_data(pr->torch_version), cli_data(pr->accelerator),
           cli_data(pr->config.dtype));
    printf("model      %s\n", cli_data(c->model_desc));
    printf("plan       DeepSpeed %s rules: policy %s, ledger %s, ratio %.4g, sub_group_size %lld, dp %d: "
           "%d sub-groups, %d on the CPU, honored ratio %.4f\n", RL_VERSION_S(p->zero.ds_version),
           plan_policy_name(p->policy), plan_ledger_name(p->ledger_kind), p->requested_ratio,
           (long long)p->zero.sub_group_size, p->layout.dp, p->n_subgroups, p->cpu_subgroups, p->honored_ratio);
    print_groups_steps(pr);
    printf("\n  %-4s %-6s %12s %12s  %-10s %-10s %s\n", "sub", "group", "DeepSpeed", "plan", "DS device", "plan", "state held by");
    for (int i = 0; i < pr->n_sub; i++) {
        const struct val_probe_subgroup *g = &pr->sub[i];
        char pn[24] = "-", pd[12] = "-";
        if (i < p->n_subgroups) {
            snprintf(pn, sizeof pn, "%lld", (long long)p->subgroups[i].numel);
            snprintf(pd, sizeof pd, "%s", p->subgroups[i].cpu_numel > 0 ? "cpu" : "device");
        }
        printf("  %-4d %-6d %12lld %12s  %-10s %-10s %s\n", i, g->param_group, (long long)g->numel, pn,
               g->assigned_device[0] ? cli_data(g->assigned_device) : "-", pd,
               g->optimizer_class[0] ? cli_data(g->optimizer_class) : "-");
    }
    printf("\n");
    for (int k = 0; k < VAL_PROBE_CHECKS; k++)
        printf("  %-14s %-5s %s\n", r->checks[k].name, val_status_name(r->checks[k].status),
               cli_data(r->checks[k].detail));
    printf("  %-14s %-5s %s\n", "hparams", val_status_name(hp->status), cli_data(hp->detail));
    if (val_probe_cpu_accelerator(pr))
        printf("\nCPU accelerator: device memory and step time cannot be held to a GPU's; sub-groups, placement,\n"
               "the honored ratio and the optimizer's tensors can%s.\n",
               val_probe_stock_cpu(pr) ? " (placement only as \"every sub-group on the CPU optimizer\": the "
                                         "accelerator is named \"cpu\")" : "");
    printf("\nhost       RSS %.3f GiB, locked %.3f GiB, pinned %.3f GiB (the process, when the probe wrote)\n",
           gib(pr->host_rss_bytes), gib(pr->host_locked_bytes), gib(pr->host_pinned_bytes));
    if (pr->step_total_ns > 0) {
        printf("probe      %.3f ms inside %d step%s (%.3f %% of their wall time)", (double)pr->overhead_ns * 1e-6,
               pr->n_steps, pr->n_steps == 1 ? "" : "s", 100.0 * (double)pr->overhead_ns / (double)pr->step_total_ns);
        if (pr->overhead_cpu_ns >= 0)
            printf(", %.3f ms of CPU time (%.3f %%)", (double)pr->overhead_cpu_ns * 1e-6,
                   100.0 * (double)pr->overhead_cpu_ns / (double)pr->step_total_ns);
        printf("\n");
    }
    if (pr->n_timers > 0) {
        printf("timers     DeepSpeed's wall-clock breakdown, ms, median of the steps%s:",
               pr->n_steps > 1 ? " after the first" : "");
        for (int t = 0; t < pr->n_timers; t++)
            printf("%s%s %.2f", t % 5 ? ", " : "\n             ", cli_data(pr->timers[t].name), pr->timers[t].median_ms);
        printf("\n");
    }
    if (pr->digest_step >= 0)
        printf("digest     DeepSpeed's fp32 master after step %d (this rank): %s\n", pr->digest_step, cli_data(pr->digest));
    else
        printf("digest     none (attach with digest_step=N)\n");
    if (pr->digest_full[0])
        printf("           every parameter, gathered over the ranks: %s\n", cli_data(pr->digest_full));
    printf("           (DeepSpeed's result depends on the ratio, for two reasons: the ratio decides which\n"
           "            sub-groups its CPU optimizer and which its device optimizer steps, and they round\n"
           "            differently; and below ratio 1 it draws one random number (torch.randn(1), the\n"
           "            backup optimizer's placeholder), which shifts the RNG and so the dropout masks\n"
           "            unless the run re-seeds after initialize. ratiolab's executor gives one digest\n"
           "            for every ratio)\n");
    printf("hardware   %s (step time predicted for it)\n", cli_data(hw->name));
    print_ranks(paths, prs, rs, n, digest, digest_detail);
    printf("\nverdict    %s\n", r->overall == VAL_PASS ? "PASS" : "FAIL");
}

static json_t *checks_json(const struct val_probe_result *r);

static json_t *probe_json(const char *path, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                          const struct val_probe *pr, const struct val_probe_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("ratiolab-validate-probe"));
    json_object_set_new(o, "probe", json_string(path));
    json_object_set_new(o, "model", json_string(c->model_desc));
    json_object_set_new(o, "hardware", json_string(hw->name));
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

/* The ranks other than 0 after rank 0's report: each one's own checks, one line per check. */
static void print_ranks(const char *const *paths, const struct val_probe *prs, const struct val_probe_result *rs,
                        int n, enum val_status digest, const char *digest_detail)
{
    if (n < 2)
        return;
    printf("\nranks      %d files of one run (world %d); each judged against the plan:\n", n, prs[0].world_size);
    for (int i = 0; i < n; i++) {
        printf("  rank %-4d %s  %s\n", prs[i].rank, cli_data(paths[i]), val_status_name(rs[i].overall));
        for (int k = 0; i > 0 && k < VAL_PROBE_CHECKS; k++)
            if (rs[i].checks[k].status == VAL_FAIL)
                printf("    %-14s %-5s %s\n", rs[i].checks[k].name, val_status_name(rs[i].checks[k].status),
                       cli_data(rs[i].checks[k].detail));
    }
    printf("  %-14s %-5s %s\n", "gathered", val_status_name(digest), cli_data(digest_detail));
}

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

/* One text line per audited sub-group (docs/audit-format.md). */
static void print_audit(const char *path, const struct val_audit *a, const struct val_audit_finding *f)
{
    printf("\naudit      %s: %d sub-group%s, each replayed with its optimizer's arithmetic\n", cli_data(path), a->n,
           a->n == 1 ? "" : "s");
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_rec *r = &a->rec[i];
        printf("  rank %u sub-group %u (group %u, %s, %s, %lld elements, step %lld): ", r->rank, r->sub_group,
               r->param_group, kern_replay_opt_name(r->optimizer), r->optimizer_object ? "backup optimizer" : "own optimizer",
               (long long)r->numel, (long long)r->step);
        if (f[i].status == VAL_AUDIT_IDENTICAL)
            printf("bit-identical");
        else
            printf("DIFFERS in %lld element%s, at most %lld ulps", (long long)f[i].n_diff, f[i].n_diff == 1 ? "" : "s",
                   (long long)f[i].max_ulps);
        if (f[i].n_sqrt_faithful > 0)
            printf(" (%lld with torch's faithful sqrt)", (long long)f[i].n_sqrt_faithful);
        if (f[i].formula_na)
            printf("; formula not applicable (the run's state overflows: no finite bound)");
        else
            printf("; formula %s (%.3g of its bound)", f[i].formula_ok ? "ok" : "FAIL", f[i].formula_max);
        if (f[i].cause[0])
            printf("; %s", f[i].cause);
        if (f[i].other_n_diff >= 0)
            printf("; %s from the same state: %lld element%s differ, at most %lld ulps",
                   kern_replay_opt_name(f[i].other_optimizer), (long long)f[i].other_n_diff,
                   f[i].other_n_diff == 1 ? "" : "s", (long long)f[i].other_max_ulps);
        printf("\n");
    }
}

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

static double ratio_of(const struct val_probe *p) { return p->config.have_ratio ? p->config.ratio : -1; }

/* DeepSpeed draws one random number (torch.randn(1), stage3.py's backup parameter) when the ratio
 * is below 1: a run at 1 and a run below it see other random numbers from the first forward on. */
static bool rng_shift(const struct val_probe *a, const struct val_probe *b)
{
    double ra = ratio_of(a), rb = ratio_of(b);
    return ra >= 0 && rb >= 0 && ((ra >= 1.0) != (rb >= 1.0));
}

/* The text of the two runs' comparison: a line per record, then the verdict. */
static void print_why(const struct cli_probe_opts *po, const struct val_probe *pa, const struct val_probe *pb,
                      const struct val_audit *a, const struct val_audit_finding *fa, const struct val_audit *b,
                      const struct val_audit_finding *fb, const struct val_audit_pair *pairs, enum val_audit_why why)
{
    int64_t step = a->n ? a->rec[0].step : 0, n_el = 0, n_after = 0, mu = 0, n_moved_el = 0, n_moved_after = 0;
    int64_t mu_moved = 0, other_n = 0, other_mu = 0, n_grad = 0;
    double abs_moved = 0, abs_all = 0;
    printf("\ndigests    why this run's fp32 master and --against-probe %s's differ (their audits at optimizer step "
           "%lld): ratio %.4g here, %.4g there\n", cli_data(po->against_probe), (long long)step, ratio_of(pa),
           ratio_of(pb));
    if (pa->digest_full[0] && pb->digest_full[0])
        printf("           every parameter gathered: %.16s... here, %.16s... there%s\n", cli_data(pa->digest_full),
               cli_data(pb->digest_full), strcmp(pa->digest_full, pb->digest_full) ? "" : " (the same)");
    (void)fb;
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_pair *q = &pairs[i];
        const struct val_audit_rec *x = &a->rec[q->a], *y = &b->rec[q->b];
        printf("  rank %u sub-group %u (group %u, elements %lld..%lld of %lld): %s", x->rank, x->sub_group,
               x->param_group, (long long)x->first_element, (long long)(x->first_element + x->numel - 1),
               (long long)x->subgroup_numel, kern_replay_opt_name(x->optimizer));
        if (q->same_optimizer)
            printf(" in both");
        else
            printf(" here, %s there", kern_replay_opt_name(y->optimizer));
        printf(", %s; after step %lld %lld of %lld elements differ", q->exact_a && q->exact_b ? "exact in both"
               : q->exact_a ? "NOT exact there" : q->exact_b ? "NOT exact here" : "NOT exact in either",
               (long long)step, (long long)q->n_diff_after, (long long)q->numel);
        if (q->n_diff_after)
            printf(", at most %lld ulps (%.3g)", (long long)q->max_ulps_after, q->max_abs_after);
        if (!q->same_optimizer && fa[q->a].other_n_diff >= 0)
            printf(" (one step of %s from this run's state: %lld differ, at most %lld ulps)",
                   kern_replay_opt_name(fa[q->a].other_optimizer), (long long)fa[q->a].other_n_diff,
                   (long long)fa[q->a].other_max_ulps);
        else if (q->same_optimizer)
            printf(" (the gradient step %lld saw differs in %lld)", (long long)step, (long long)q->n_diff_grad);
        printf("\n");
        n_el += q->numel;
        n_after += q->n_diff_after;
        n_grad += q->n_diff_grad;
        if (q->max_ulps_after > mu)
            mu = q->max_ulps_after;
        if (q->max_abs_after > abs_all)
            abs_all = q->max_abs_after;
        if (!q->same_optimizer) {
            if (q->max_abs_after > abs_moved)
                abs_moved = q->max_abs_after;
            n_moved_el += q->numel;
            n_moved_after += q->n_diff_after;
            if (q->max_ulps_after > mu_moved)
                mu_moved = q->max_ulps_after;
            if (fa[q->a].other_n_diff > 0)
                other_n += fa[q->a].other_n_diff;
            if (fa[q->a].other_max_ulps > other_mu)
                other_mu = fa[q->a].other_max_ulps;
        }
    }
    switch (why) {
    case VAL_WHY_IDENTICAL:
        printf("  identical  the two runs' fp32 masters after step %lld are the same bits in all %lld elements\n",
               (long long)step, (long long)n_el);
        break;
    case VAL_WHY_OPTIMIZERS:
        printf("  explained  the ratio moved sub-groups between the optimizers (%lld of %lld elements audited); each "
               "sub-group is bit-exact to the optimizer that stepped it in each run, so the digests differ by the "
               "two optimizers' rounding: after %lld steps the moved sub-groups differ in %lld elements (at most "
               "%lld ulps, %.3g; one step of the other optimizer from the same state: %lld, at most %lld ulps), and "
               "through the forward pass every sub-group in %lld of %lld (at most %.3g)\n",
               (long long)n_moved_el, (long long)n_el, (long long)step, (long long)n_moved_after, (long long)mu_moved,
               abs_moved, (long long)other_n, (long long)other_mu, (long long)n_after, (long long)n_el, abs_all);
        break;
    case VAL_WHY_INPUTS:
        printf("  inputs     every sub-group was stepped by the same optimizer in both runs and is bit-exact to it, "
               "yet the gradients of step %lld differ in %lld of %lld elements: not the optimizers' arithmetic, "
               "the forward and backward saw other inputs or other random numbers\n", (long long)step,
               (long long)n_grad, (long long)n_el);
        break;
    case VAL_WHY_NOT_EXACT:
        printf("  NOT explained  a sub-group above was not exact to its optimizer's arithmetic (see the audit): "
               "the digests' difference is not only the optimizers' rounding\n");
        break;
    }
    if (rng_shift(pa, pb) && why != VAL_WHY_IDENTICAL)
        printf("  note       one run has ratio 1, the other below 1: DeepSpeed then draws torch.randn(1) for its "
               "backup parameter (stage3.py), which shifts the global RNG, so with dropout the two runs see other "
               "masks from the first forward on\n");
}

static json_t *why_json(const struct cli_probe_opts *po, const struct val_probe *pa, const struct val_probe *pb,
                        const struct val_audit *a, const struct val_audit_finding *fa, const struct val_audit *b,
                        const struct val_audit_finding *fb, const struct val_audit_pair *pairs, enum val_audit_why why)
{
    json_t *o = json_object(), *arr = json_array();
    (void)fb;
    json_object_set_new(o, "against_probe", json_string(po->against_probe));
    json_object_set_new(o, "against_audit", json_string(po->against_audit));
    json_object_set_new(o, "ratio", ratio_of(pa) >= 0 ? json_real(ratio_of(pa)) : json_null());
    json_object_set_new(o, "against_ratio", ratio_of(pb) >= 0 ? json_real(ratio_of(pb)) : json_null());
    json_object_set_new(o, "step", json_integer(a->n ? a->rec[0].step : 0));
    json_object_set_new(o, "verdict", json_string(val_audit_why_name(why)));
    json_object_set_new(o, "rng_shift", json_boolean(rng_shift(pa, pb)));
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

/* The JSON document written whole to path through rl_outfile (a temporary file renamed over a
 * regular file; a link's target replaced; a device or FIFO written in place). */
static int write_report(const char *path, const json_t *j, struct rl_err *e)
{
    struct rl_outfile o;
    int rc = rl_outfile_open(&o, path, e);
    if (rc)
        return cli_err_flag(e, "report", "--report");
    if (cli_json_dumpf(j, o.fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || fputc('\n', o.fp) == EOF) {
        rl_outfile_abort(&o);
        return rl_errf(e, RL_EENV, "--report %s: cannot write the JSON", path);
    }
    return rl_outfile_commit(&o, e);
}

/* The grouping the user gave (--param-groups RULE or FILE) against the probe's recorded one:
 * RL_EINVAL saying both group counts and the first parameter they place apart. Nothing given:
 * 0 (the probe's is taken). */
static int check_groups(const struct plan_inputs *in, const struct val_probe *pr, struct rl_err *e)
{
    if (in->groups == PLAN_GROUPS_AUTO && !in->groups_file)
        return 0;
    struct plan_setup mine, run;
    memset(&mine, 0, sizeof mine);
    memset(&run, 0, sizeof run);
    struct plan_inputs rin = *in;
    rin.group_spec = &pr->groups;
    int rc = cli_setup_resolve(in, &mine, e);
    if (!rc && (rc = cli_setup_resolve(&rin, &run, e)) == 0) {
        const struct plan_model *a = &mine.model, *b = &run.model;
        int t = 0;
        while (t < a->n_tensors && t < b->n_tensors && a->tensors[t].group == b->tensors[t].group)
            t++;
        char given[200];
        snprintf(given, sizeof given, "%s", in->groups_file ? in->groups_file : plan_group_rule_name(in->groups));
        if (a->n_groups != b->n_groups || t < a->n_tensors)
            rc = rl_errf(e, RL_EINVAL, "--param-groups %s: %d param group%s, the run's probe records %d (%s: "
                         "group %d there, group %d in the run); leave --param-groups out to take the probe's",
                         given, a->n_groups, a->n_groups == 1 ? "" : "s", b->n_groups,
                         t < a->n_tensors ? a->tensors[t].name : "every parameter",
                         t < a->n_tensors ? a->tensors[t].group : 0, t < b->n_tensors ? b->tensors[t].group : 0);
    }
    plan_setup_free(&mine);
    plan_setup_free(&run);
    return rc;
}

/* The run's gradient accumulation and micro-batch from the probe: the step predict models is the
 * step the run made (an optimizer step of grad_accum micro-steps). A --grad-accum, --micro-batch
 * or DeepSpeed config that says otherwise is RL_EINVAL. */
static int probe_accumulation(const struct val_probe *pr, const struct plan_setup *c, struct sim_train *t,
                              struct rl_err *e)
{
    if (t->grad_accum > 0 && t->grad_accum != pr->grad_accum)
        return rl_errf(e, RL_EINVAL, "--grad-accum: %lld; the run (--probe) took %d micro-step%s per optimizer step "
                       "(gradient_accumulation_steps); give the run's or none", (long long)t->grad_accum,
                       pr->grad_accum, pr->grad_accum == 1 ? "" : "s");
    if (t->grad_accum <= 0 && c->zero.src_grad_accum == PLAN_SRC_CONFIG && c->zero.grad_accum != pr->grad_accum)
        return rl_errf(e, RL_EINVAL, "--ds-config: gradient_accumulation_steps: %lld; the run (--probe) used %d; give "
                       "the run's own config", (long long)c->zero.grad_accum, pr->grad_accum);
    t->grad_accum = pr->grad_accum;
    if (pr->micro_batch > 0) {
        if (t->micro_batch > 0 && t->micro_batch != pr->micro_batch)
            return rl_errf(e, RL_EINVAL, "--micro-batch: %lld; the run (--probe) used %lld; give the run's or none",
                           (long long)t->micro_batch, (long long)pr->micro_batch);
        if (t->micro_batch <= 0 && (c->zero.src_micro_batch == PLAN_SRC_CONFIG || c->zero.src_micro_batch == PLAN_SRC_CLI) &&
            c->zero.micro_batch != pr->micro_batch)
            return rl_errf(e, RL_EINVAL, "micro_batch: %lld (%s); the run (--probe) used %lld; give the run's or none",
                           (long long)c->zero.micro_batch, c->zero.src_micro_batch == PLAN_SRC_CONFIG ? "--ds-config"
                           : "--micro-batch", (long long)pr->micro_batch);
        t->micro_batch = pr->micro_batch;
    }
    return 0;
}

/* The whole document of --json and --report: probe_json's, then the run's accumulation, every
 * rank's checks, the gathered digest, the hparams, the audit and the two runs' pairing. */
static json_t *run_json(const char *path, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                        const struct sim_step_result *sr, const struct sim_train *train, const struct val_probe_run *run,
                        const struct cli_probe_opts *po)
{
    const struct val_probe *pr = &run->prs[0];
    const struct val_hparams_result *hp = &run->hp;
    json_t *j = probe_json(path, c, p, hw, pr, &run->r0);
    json_object_set_new(j, "predicted_step_ns", json_integer(sr->step_ns));
    json_object_set_new(j, "gradient_accumulation_steps", json_integer(train->grad_accum));
    json_object_set_new(j, "num_param_groups", json_integer(p->n_groups));
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
    if (po->audit) {
        json_object_set_new(j, "audit", audit_json(po->audit, &run->au, run->af));
        json_object_set_new(j, "verdict", json_string(run->pass ? "PASS" : "FAIL"));
    }
    if (run->pairs)
        json_object_set_new(j, "digest_explanation", why_json(po, pr, &run->pb, &run->au, run->af, &run->bu, run->bf,
                                                              run->pairs, run->why));
    cli_json_versioned(j);
    return j;
}

/* The flags of the inputs val_probe_run_judge's error is about (run->failed). */
static int judge_err(const struct val_probe_run *run, const struct cli_probe_opts *po, struct rl_err *e)
{
    switch (run->failed) {
    case VAL_RUN_HPARAMS: cli_err_flag(e, "probe", "--probe"); break;
    case VAL_RUN_AUDIT_READ: cli_err_flag(e, "audit", "--audit"); break;
    case VAL_RUN_AGAINST_AUDIT_READ: cli_err_flag(e, "audit", "--against-audit"); break;
    case VAL_RUN_AGAINST: cli_err_flag(e, "against_probe", "--against-probe"); break;
    case VAL_RUN_OK: case VAL_RUN_AUDIT: break;
    }
    if ((run->failed == VAL_RUN_AGAINST_AUDIT_READ || run->failed == VAL_RUN_AGAINST) && !strstr(e->msg, "--against"))
        rl_err_prefix(e, "--against-probe %s / --against-audit %s", po->against_probe, po->against_audit);
    return e->code;
}

/* The plan of the run rank 0's probe pr records, from the user's inputs s: the run's data-parallel
 * degree unless the user gave a layout (then val_facts_apply compares), the run's param groups
 * when the probe names them (a grouping the user gave must be the same, check_groups), its
 * configuration, accumulation and micro-batch; then the hardware and the predicted step. */
static int probe_plan(const char *path, const struct val_probe *pr, const struct plan_inputs *s, struct cli_sim *sim,
                      struct plan_setup *c, struct sim_train *train, struct hw_profile *hw, struct plan *p,
                      struct sim_step_result *sr, struct rl_err *e)
{
    char what[600];
    snprintf(what, sizeof what, "--probe %s", path);
    struct plan_inputs in = *s;
    if (in.layout.dp <= 0 && in.layout.world <= 0 && in.layout.nodes <= 0)
        in.layout.dp = pr->dp;
    int rc;
    if (pr->groups.n_groups > 0) {
        if ((rc = check_groups(&in, pr, e)))
            return rc;
        in.group_spec = &pr->groups;
    }
    *train = sim->train;
    if ((rc = cli_setup_resolve(&in, c, e)) || (rc = val_facts_apply(&pr->config, pr->dp, what, s, c, e)) ||
        (rc = probe_accumulation(pr, c, train, e)) || (rc = cli_sim_load_hw(sim, c, hw, e)) ||
        (rc = plan_setup_plan(c, -1, p, e)) || (rc = sim_step_run(p, hw, train, NULL, sr, e)))
        return cli_sim_err(e);
    return 0;
}

/* The text report: the probe's, the audit's, the two runs' pairing, the verdict. */
static void print_run(const char *path, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                      const struct val_probe_run *run, const struct cli_probe_opts *po)
{
    const struct val_probe *pr = &run->prs[0];
    print_probe(path, c, p, hw, pr, &run->r0, (const char *const *)run->paths, run->prs, run->rs, run->n, run->digest,
                run->digest_detail, &run->hp);
    if (po->audit) {
        print_audit(po->audit, &run->au, run->af);
        if (run->pairs)
            print_why(po, pr, &run->pb, &run->au, run->af, &run->bu, run->bf, run->pairs, run->why);
        printf("verdict    %s (the audit: %d of %d sub-groups with a finding%s)\n", run->pass ? "PASS" : "FAIL",
               run->audit_bad - (run->why == VAL_WHY_NOT_EXACT), run->au.n,
               run->why == VAL_WHY_NOT_EXACT ? "; the digests' difference not explained" : "");
    }
    if (po->report)
        printf("report     %s\n", cli_data(po->report));
}

int cli_validate_probe(const char *path, const struct plan_inputs *s, struct cli_sim *sim, double tol_gib,
                       double tol_pct, bool json, const struct cli_probe_opts *po)
{
    struct rl_err e = {0};
    struct plan_setup c;
    struct hw_profile hw;
    struct plan p;
    struct sim_step_result sr;
    struct sim_train train;
    struct val_probe_run run;
    memset(&c, 0, sizeof c);
    memset(&p, 0, sizeof p);
    memset(&run, 0, sizeof run);
    int rc;
    if (po->report && (rc = rl_outfile_check(po->report, &e))) {   /* before any work */
        cli_err_flag(&e, "report", "--report");
        rc = cli_fail("validate", &e);
        goto out;
    }
    if ((rc = val_probe_run_read(path, &run, &e))) {
        cli_err_flag(&e, "probe", "--probe");
        rc = cli_fail("validate", &e);
        goto out;
    }
    if ((rc = probe_plan(path, &run.prs[0], s, sim, &c, &train, &hw, &p, &sr, &e))) {
        rc = cli_fail("validate", &e);
        goto out;
    }
    struct val_probe_opts o = {.tol_bytes = (int64_t)llround(tol_gib * RL_GIB), .tol_time_pct = tol_pct,
                               .predicted_step_ns = sr.step_ns};
    struct val_probe_run_files f = {.probe_name = "--probe", .audit = po->audit, .against_probe = po->against_probe,
                                    .against_audit = po->against_audit};
    if ((rc = val_probe_run_judge(&run, &p, &o, &f, &e))) {
        judge_err(&run, po, &e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    if (json || po->report) {
        json_t *j = run_json(path, &c, &p, &hw, &sr, &train, &run, po);
        if (po->report && (rc = write_report(po->report, j, &e))) {
            json_decref(j);
            rc = cli_fail("validate", &e);
            goto out;
        }
        if (json) {
            char *text = cli_json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            printf("%s\n", text);
            free(text);
        }
        json_decref(j);
    }
    if (!json)
        print_run(path, &c, &p, &hw, &run, po);
    rc = run.pass ? 0 : 1;
out:
    val_probe_run_free(&run);
    plan_free(&p);
    plan_setup_free(&c);
    return rc;
}
