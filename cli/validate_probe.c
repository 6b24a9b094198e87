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

static double gib(int64_t b) { return (double)b / RL_GIB; }

static void print_ranks(const char *const *paths, const struct val_probe *prs, const struct val_probe_result *rs,
                        int n, enum val_status digest, const char *digest_detail);

/* Rank 0's report in full, then the other ranks (print_ranks); r->overall is every rank's. */
static void print_probe(const char *path, const struct plan_setup *c, const struct plan *p, const struct sim_hw *hw,
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

static json_t *probe_json(const char *path, const struct plan_setup *c, const struct plan *p, const struct sim_hw *hw,
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

/* Rank 0's file and, for a run of several ranks, every rank's file beside it (val_probe_rank_path),
 * each checked to belong to rank 0's run. prs and paths get world_size entries (owned by the caller:
 * val_probe_free each, free the paths). */
static int read_ranks(const char *path, struct val_probe **prs_out, char ***paths_out, int *n_out, struct rl_err *e)
{
    struct val_probe first;
    int rc = val_probe_read(path, &first, e);
    if (rc)
        return rc;
    int n = first.world_size;
    if (first.rank != 0) {
        char r0[4200];
        snprintf(r0, sizeof r0, "%s", path);
        val_probe_free(&first);
        return rl_errf(e, RL_EINVAL, "%s: rank: %d; allowed: 0 (give rank 0's file: the files of ranks 1..%d are "
                       "found beside it, named <stem>.rank<R>.json)", r0, first.rank, n - 1);
    }
    struct val_probe *prs = calloc((size_t)n, sizeof *prs);
    char **paths = calloc((size_t)n, sizeof *paths);
    if (!prs || !paths) {
        free(prs);
        free(paths);
        val_probe_free(&first);
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    }
    prs[0] = first;
    paths[0] = strdup(path);
    *prs_out = prs;
    *paths_out = paths;
    *n_out = n;
    if (!paths[0])
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    for (int i = 1; i < n; i++) {
        char rp[4200];
        if ((rc = val_probe_rank_path(path, i, rp, sizeof rp, e)))
            return rc;
        if (!(paths[i] = strdup(rp)))
            return rl_errf(e, RL_ENOMEM, "validate: out of memory");
        struct rl_err re = {0};
        if ((rc = val_probe_read(rp, &prs[i], &re))) {
            if (rc == RL_ENOENT || strstr(re.msg, "No such file"))
                return rl_errf(e, RL_EINVAL, "%s: rank %d of the run's %d: its file %s is missing (ratiolab_probe "
                               "writes one per rank beside rank 0's; copy every rank's file together)", path, i, n, rp);
            *e = re;
            return rc;
        }
        if ((rc = val_probe_same_run(&prs[0], &prs[i], rp, i, e)))
            return rc;
    }
    return 0;
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

int cli_validate_probe(const char *path, const struct plan_inputs *s, struct cli_sim *sim, double tol_gib,
                       double tol_pct, bool json, const char *audit_path)
{
    struct rl_err e = {0};
    struct plan_setup c;
    struct sim_hw hw;
    struct plan p;
    struct val_probe *prs = NULL;
    char **paths = NULL;
    int n = 0;
    struct val_probe_result *rs = NULL;
    struct sim_step_result sr;
    struct val_audit au;
    struct val_audit_finding *af = NULL;
    memset(&au, 0, sizeof au);
    memset(&c, 0, sizeof c);
    memset(&p, 0, sizeof p);
    int rc;
    char what[600];
    snprintf(what, sizeof what, "--probe %s", path);
    if ((rc = read_ranks(path, &prs, &paths, &n, &e))) {
        cli_err_flag(&e, "probe", "--probe");
        rc = cli_fail("validate", &e);
        goto out;
    }
    struct val_probe *pr = &prs[0];
    /* The run's data-parallel degree, unless the user gave a layout (then val_facts_apply compares). */
    struct plan_inputs in = *s;
    if (in.layout.dp <= 0 && in.layout.world <= 0 && in.layout.nodes <= 0)
        in.layout.dp = pr->dp;
    if ((rc = cli_setup_resolve(&in, &c, &e)) || (rc = val_facts_apply(&pr->config, pr->dp, what, s, &c, &e)) ||
        (rc = cli_sim_load_hw(sim, &c, &hw, &e)) || (rc = plan_setup_plan(&c, -1, &p, &e)) ||
        (rc = sim_step_run(&p, &hw, &sim->train, NULL, &sr, &e))) {
        cli_sim_err(&e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    if (!(rs = calloc((size_t)n, sizeof *rs))) {
        rl_errf(&e, RL_ENOMEM, "validate: out of memory");
        rc = cli_fail("validate", &e);
        goto out;
    }
    /* Every rank against the same plan: ZeRO-3 pads each parameter's partition to one size, so
     * every rank holds the same sub-groups; each rank's own placement, memory and steps. */
    struct val_probe_opts o = {.tol_bytes = (int64_t)llround(tol_gib * RL_GIB), .tol_time_pct = tol_pct,
                               .predicted_step_ns = sr.step_ns};
    enum val_status overall = VAL_PASS;
    for (int i = 0; i < n; i++) {
        val_probe_compare(&p, &prs[i], &o, &rs[i]);
        if (rs[i].overall == VAL_FAIL)
            overall = VAL_FAIL;
    }
    char digest_detail[200];
    enum val_status digest = val_probe_ranks_digest(prs, n, digest_detail, sizeof digest_detail);
    if (digest == VAL_FAIL)
        overall = VAL_FAIL;
    /* Every rank's hyperparameter record (validation/hparams.h): rank 0's line, or the first rank
     * that fails. */
    struct val_hparams_result hp;
    memset(&hp, 0, sizeof hp);
    for (int i = 0; i < n; i++) {
        struct val_hparams h;
        struct val_hparams_result hr;
        if ((rc = val_hparams_read(paths[i], &h, &e)) || (rc = val_hparams_check(&prs[i], &h, &hr, &e))) {
            val_hparams_free(&h);
            cli_err_flag(&e, "probe", "--probe");
            rc = cli_fail("validate", &e);
            val_hparams_result_free(&hp);
            goto out;
        }
        val_hparams_free(&h);
        if (i == 0 || (hr.status == VAL_FAIL && hp.status != VAL_FAIL)) {
            if (i > 0)
                snprintf(hr.detail + strlen(hr.detail), sizeof hr.detail - strlen(hr.detail), " (rank %d)",
                         prs[i].rank);
            val_hparams_result_free(&hp);
            hp = hr;
        } else {
            val_hparams_result_free(&hr);
        }
    }
    if (hp.status == VAL_FAIL)
        overall = VAL_FAIL;
    struct val_probe_result r0 = rs[0];
    r0.overall = overall;
    int audit_bad = 0;
    if (audit_path) {
        if ((rc = val_audit_read(audit_path, &au, &e))) {
            cli_err_flag(&e, "audit", "--audit");
            rc = cli_fail("validate", &e);
            goto out;
        }
        /* DeepSpeed's release, for its IncrementStep (validation/audit.h val_audit_set_release). */
        if ((rc = val_audit_set_release(&au, pr->config.version, &e))) {
            rc = cli_fail("validate", &e);
            goto out;
        }
        af = calloc(au.n ? (size_t)au.n : 1, sizeof *af);
        if (!af) {
            rl_errf(&e, RL_ENOMEM, "--audit: out of memory");
            rc = cli_fail("validate", &e);
            goto out;
        }
        if ((rc = val_audit_replay(&au, af, &e))) {
            rc = cli_fail("validate", &e);
            goto out;
        }
        for (int i = 0; i < au.n; i++)
            audit_bad += af[i].status != VAL_AUDIT_IDENTICAL || !af[i].formula_ok || af[i].hp_mismatch;
    }
    if (json) {
        json_t *j = probe_json(path, &c, &p, &hw, pr, &r0);
        json_t *ranks = json_array();
        for (int i = 0; i < n; i++) {
            json_t *x = json_object();
            json_object_set_new(x, "rank", json_integer(prs[i].rank));
            json_object_set_new(x, "probe", json_string(paths[i]));
            json_object_set_new(x, "checks", checks_json(&rs[i]));
            json_object_set_new(x, "verdict", json_string(val_status_name(rs[i].overall)));
            json_array_append_new(ranks, x);
        }
        json_object_set_new(j, "ranks", ranks);
        json_t *g = json_object();
        json_object_set_new(g, "status", json_string(val_status_name(digest)));
        json_object_set_new(g, "detail", json_string(digest_detail));
        json_object_set_new(j, "gathered_digest", g);
        json_t *hj = json_object();
        json_object_set_new(hj, "status", json_string(val_status_name(hp.status)));
        json_object_set_new(hj, "detail", json_string(hp.detail));
        json_object_set_new(hj, "sub_groups_with_a_finding", json_integer(hp.n_bad));
        json_object_set_new(hj, "lr_changed", json_boolean(hp.lr_changed));
        json_t *ha = json_array();
        for (int i = 0; i < hp.n_sub; i++) {
            json_t *x = json_object();
            json_object_set_new(x, "sub_group", json_integer(prs[0].sub[i].index));
            json_object_set_new(x, "finding", json_string(val_hp_kind_name(hp.sub[i].kind)));
            json_object_set_new(x, "step", json_integer(hp.sub[i].step));
            if (hp.sub[i].field) {
                json_object_set_new(x, "field", json_string(hp.sub[i].field));
                json_object_set_new(x, "held", json_real(hp.sub[i].held));
                json_object_set_new(x, "current", json_real(hp.sub[i].current));
            }
            json_array_append_new(ha, x);
        }
        json_object_set_new(hj, "sub_groups", ha);
        json_object_set_new(j, "hparams", hj);
        if (audit_path) {
            json_object_set_new(j, "audit", audit_json(audit_path, &au, af));
            json_object_set_new(j, "verdict", json_string(overall == VAL_PASS && !audit_bad ? "PASS" : "FAIL"));
        }
        char *text = cli_json_dumps(cli_json_versioned(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else {
        print_probe(path, &c, &p, &hw, pr, &r0, (const char *const *)paths, prs, rs, n, digest, digest_detail, &hp);
        if (audit_path) {
            print_audit(audit_path, &au, af);
            printf("verdict    %s (the audit: %d of %d sub-groups with a finding)\n",
                   overall == VAL_PASS && !audit_bad ? "PASS" : "FAIL", audit_bad, au.n);
        }
    }
    rc = overall == VAL_PASS && !audit_bad ? 0 : 1;
    val_hparams_result_free(&hp);
out:
    free(af);
    val_audit_free(&au);
    for (int i = 0; prs && i < n; i++)
        val_probe_free(&prs[i]);
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(prs);
    free(paths);
    free(rs);
    plan_free(&p);
    plan_setup_free(&c);
    return rc;
}
