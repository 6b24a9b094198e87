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
#include "validation/probe_json.h"
#include "validation/probe_run.h"

static double gib(int64_t b) { return (double)b / RL_GIB; }

static void print_ranks(const struct val_probe_run *run);

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
                        const struct val_probe_run *run)
{
    const struct val_probe *pr = &run->prs[0];
    const struct val_probe_result *r = &run->r0;
    const struct val_hparams_result *hp = &run->hp;
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
    print_ranks(run);
    printf("\nverdict    %s\n", r->overall == VAL_PASS ? "PASS" : "FAIL");
}

/* The ranks other than 0 after rank 0's report: each one's own checks, one line per check. */
static void print_ranks(const struct val_probe_run *run)
{
    if (run->n < 2)
        return;
    printf("\nranks      %d files of one run (world %d); each judged against the plan:\n", run->n,
           run->prs[0].world_size);
    for (int i = 0; i < run->n; i++) {
        const struct val_probe_result *ri = &run->rs[i];
        printf("  rank %-4d %s  %s\n", run->prs[i].rank, cli_data(run->paths[i]), val_status_name(ri->overall));
        for (int k = 0; i > 0 && k < VAL_PROBE_CHECKS; k++)
            if (ri->checks[k].status == VAL_FAIL)
                printf("    %-14s %-5s %s\n", ri->checks[k].name, val_status_name(ri->checks[k].status),
                       cli_data(ri->checks[k].detail));
    }
    printf("  %-14s %-5s %s\n", "gathered", val_status_name(run->digest), cli_data(run->digest_detail));
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

/* The text of the two runs' comparison: a line per record, then the verdict. */
static void print_why(const struct cli_probe_opts *po, const struct val_probe_run *run)
{
    const struct val_probe *pa = &run->prs[0], *pb = &run->pb;
    struct val_probe_why_totals t;
    val_probe_run_why_totals(run, &t);
    long long step = (long long)t.step;
    printf("\ndigests    why this run's fp32 master and --against-probe %s's differ (their audits at optimizer step "
           "%lld): ratio %.4g here, %.4g there\n", cli_data(po->against_probe), step, val_probe_ratio(pa),
           val_probe_ratio(pb));
    if (pa->digest_full[0] && pb->digest_full[0])
        printf("           every parameter gathered: %.16s... here, %.16s... there%s\n", cli_data(pa->digest_full),
               cli_data(pb->digest_full), strcmp(pa->digest_full, pb->digest_full) ? "" : " (the same)");
    for (int i = 0; i < run->au.n; i++) {
        const struct val_audit_pair *q = &run->pairs[i];
        const struct val_audit_rec *x = &run->au.rec[q->a], *y = &run->bu.rec[q->b];
        const struct val_audit_finding *f = &run->af[q->a];
        printf("  rank %u sub-group %u (group %u, elements %lld..%lld of %lld): %s", x->rank, x->sub_group,
               x->param_group, (long long)x->first_element, (long long)(x->first_element + x->numel - 1),
               (long long)x->subgroup_numel, kern_replay_opt_name(x->optimizer));
        if (q->same_optimizer)
            printf(" in both");
        else
            printf(" here, %s there", kern_replay_opt_name(y->optimizer));
        printf(", %s; after step %lld %lld of %lld elements differ", q->exact_a && q->exact_b ? "exact in both"
               : q->exact_a ? "NOT exact there" : q->exact_b ? "NOT exact here" : "NOT exact in either",
               step, (long long)q->n_diff_after, (long long)q->numel);
        if (q->n_diff_after)
            printf(", at most %lld ulps (%.3g)", (long long)q->max_ulps_after, q->max_abs_after);
        if (!q->same_optimizer && f->other_n_diff >= 0)
            printf(" (one step of %s from this run's state: %lld differ, at most %lld ulps)",
                   kern_replay_opt_name(f->other_optimizer), (long long)f->other_n_diff, (long long)f->other_max_ulps);
        else if (q->same_optimizer)
            printf(" (the gradient step %lld saw differs in %lld)", step, (long long)q->n_diff_grad);
        printf("\n");
    }
    switch (run->why) {
    case VAL_WHY_IDENTICAL:
        printf("  identical  the two runs' fp32 masters after step %lld are the same bits in all %lld elements\n",
               step, (long long)t.numel);
        break;
    case VAL_WHY_OPTIMIZERS:
        printf("  explained  the ratio moved sub-groups between the optimizers (%lld of %lld elements audited); each "
               "sub-group is bit-exact to the optimizer that stepped it in each run, so the digests differ by the "
               "two optimizers' rounding: after %lld steps the moved sub-groups differ in %lld elements (at most "
               "%lld ulps, %.3g; one step of the other optimizer from the same state: %lld, at most %lld ulps), and "
               "through the forward pass every sub-group in %lld of %lld (at most %.3g)\n",
               (long long)t.moved_numel, (long long)t.numel, step, (long long)t.moved_n_diff_after,
               (long long)t.moved_max_ulps, t.moved_max_abs, (long long)t.other_n_diff, (long long)t.other_max_ulps,
               (long long)t.n_diff_after, (long long)t.numel, t.max_abs_after);
        break;
    case VAL_WHY_INPUTS:
        printf("  inputs     every sub-group was stepped by the same optimizer in both runs and is bit-exact to it, "
               "yet the gradients of step %lld differ in %lld of %lld elements: not the optimizers' arithmetic, "
               "the forward and backward saw other inputs or other random numbers\n", step,
               (long long)t.n_diff_grad, (long long)t.numel);
        break;
    case VAL_WHY_NOT_EXACT:
        printf("  NOT explained  a sub-group above was not exact to its optimizer's arithmetic (see the audit): "
               "the digests' difference is not only the optimizers' rounding\n");
        break;
    }
    if (val_probe_rng_shift(pa, pb) && run->why != VAL_WHY_IDENTICAL)
        printf("  note       one run has ratio 1, the other below 1: DeepSpeed then draws torch.randn(1) for its "
               "backup parameter (stage3.py), which shifts the global RNG, so with dropout the two runs see other "
               "masks from the first forward on\n");
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

/* --hw's options (--gpu-mem, --pcie-gen, ...) over the profile of the probe's run. */
static int probe_load_hw(void *ctx, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e)
{
    return cli_sim_load_hw(ctx, c, hw, e);
}

/* The flags of the inputs val_probe_run_plan's error is about (pl->failed). */
static int plan_err(const struct val_probe_plan *pl, struct rl_err *e)
{
    if (pl->failed == VAL_PLAN_GROUPS) {
        cli_err_flag(e, "param_groups", "--param-groups");
        return cli_err_word(e, "leave param_groups out", "leave --param-groups out");
    }
    if (pl->failed == VAL_PLAN_ACCUM) {
        cli_err_word(e, "ds_config", "--ds-config");
        cli_err_word(e, "the run (probe)", "the run (--probe)");
    }
    return cli_sim_err(e);
}

/* The text report: the probe's, the audit's, the two runs' pairing, the verdict. */
static void print_run(const char *path, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                      const struct val_probe_run *run, const struct cli_probe_opts *po)
{
    print_probe(path, c, p, hw, run);
    if (po->audit) {
        print_audit(po->audit, &run->au, run->af);
        if (run->pairs)
            print_why(po, run);
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
    struct val_probe_plan pl;
    struct val_probe_run run;
    memset(&pl, 0, sizeof pl);
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
    char what[600];
    snprintf(what, sizeof what, "--probe %s", path);
    const struct val_probe_plan_in pi = {.in = s, .what = what, .train = &sim->train, .resolve = cli_setup_resolve,
                                         .load_hw = probe_load_hw, .ctx = sim};
    if ((rc = val_probe_run_plan(&run.prs[0], &pi, &pl, &e))) {
        plan_err(&pl, &e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    struct val_probe_opts o = {.tol_bytes = (int64_t)llround(tol_gib * RL_GIB), .tol_time_pct = tol_pct,
                               .predicted_step_ns = pl.sr.step_ns};
    struct val_probe_run_files f = {.probe_name = "--probe", .audit = po->audit, .against_probe = po->against_probe,
                                    .against_audit = po->against_audit};
    if ((rc = val_probe_run_judge(&run, &pl.p, &o, &f, &e))) {
        judge_err(&run, po, &e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    if (json || po->report) {
        struct val_probe_json_in ji = {.probe = path, .model_desc = pl.c.model_desc, .hw_name = pl.hw.name, .p = &pl.p,
                                       .predicted_step_ns = pl.sr.step_ns, .grad_accum = pl.train.grad_accum, .f = &f};
        json_t *j = cli_json_versioned(val_probe_run_json(&run, &ji));
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
        print_run(path, &pl.c, &pl.p, &pl.hw, &run, po);
    rc = run.pass ? 0 : 1;
out:
    val_probe_run_free(&run);
    val_probe_plan_free(&pl);
    return rc;
}
