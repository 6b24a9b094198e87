/* cli/validate_probe.c — `ratiolab validate --probe FILE`: what ratiolab_probe read from a live
 * DeepSpeed engine against the plan and the prediction (validation/probe.h); and the check of
 * the configuration a DeepSpeed log printed against --ds-config / --ratio for --deepspeed-log. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/validate_probe.h"
#include "validation/probe.h"

static double gib(int64_t b) { return (double)b / RL_GIB; }

static void print_probe(const char *path, const struct plan_setup *c, const struct plan *p, const struct sim_hw *hw,
                        const struct val_probe *pr, const struct val_probe_result *r)
{
    printf("probe      %s (rank %d of %d, DeepSpeed %s, torch %s, accelerator \"%s\", %s)\n", path, pr->rank,
           pr->world_size, pr->ds_version_text, pr->torch_version, pr->accelerator, pr->config.dtype);
    printf("model      %s\n", c->model_desc);
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
               g->assigned_device[0] ? g->assigned_device : "-", pd, g->optimizer_class[0] ? g->optimizer_class : "-");
    }
    printf("\n");
    for (int k = 0; k < VAL_PROBE_CHECKS; k++)
        printf("  %-14s %-5s %s\n", r->checks[k].name, val_status_name(r->checks[k].status), r->checks[k].detail);
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
            printf("%s%s %.2f", t % 5 ? ", " : "\n             ", pr->timers[t].name, pr->timers[t].median_ms);
        printf("\n");
    }
    if (pr->digest_step >= 0)
        printf("digest     DeepSpeed's fp32 master after step %d (this rank): %s\n", pr->digest_step, pr->digest);
    else
        printf("digest     none (attach with digest_step=N)\n");
    if (pr->digest_full[0])
        printf("           every parameter, gathered over the ranks: %s\n", pr->digest_full);
    printf("           (DeepSpeed's result depends on the ratio: its CPU and device optimizers differ;\n"
           "            ratiolab's executor gives one digest for every ratio)\n");
    printf("hardware   %s (step time predicted for it)\n", hw->name);
    printf("\nverdict    %s\n", r->overall == VAL_PASS ? "PASS" : "FAIL");
}

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
    json_t *ch = json_array();
    for (int k = 0; k < VAL_PROBE_CHECKS; k++) {
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(r->checks[k].name));
        json_object_set_new(x, "status", json_string(val_status_name(r->checks[k].status)));
        json_object_set_new(x, "detail", json_string(r->checks[k].detail));
        json_array_append_new(ch, x);
    }
    json_object_set_new(o, "checks", ch);
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

int cli_validate_probe(const char *path, const struct plan_inputs *s, struct cli_sim *sim, double tol_gib,
                       double tol_pct, bool json)
{
    struct rl_err e = {0};
    struct plan_setup c;
    struct sim_hw hw;
    struct plan p;
    struct val_probe pr;
    struct sim_step_result sr;
    memset(&c, 0, sizeof c);
    memset(&p, 0, sizeof p);
    memset(&pr, 0, sizeof pr);
    int rc;
    char what[600];
    snprintf(what, sizeof what, "--probe %s", path);
    if ((rc = val_probe_read(path, &pr, &e))) {
        cli_err_flag(&e, "probe", "--probe");
        return cli_fail("validate", &e);
    }
    /* The run's data-parallel degree, unless the user gave a layout (then val_facts_apply compares). */
    struct plan_inputs in = *s;
    if (in.layout.dp <= 0 && in.layout.world <= 0 && in.layout.nodes <= 0)
        in.layout.dp = pr.dp;
    if ((rc = cli_setup_resolve(&in, &c, &e)) || (rc = val_facts_apply(&pr.config, pr.dp, what, s, &c, &e)) ||
        (rc = cli_sim_load_hw(sim, &c, &hw, &e)) || (rc = plan_setup_plan(&c, -1, &p, &e)) ||
        (rc = sim_step_run(&p, &hw, &sim->train, NULL, &sr, &e))) {
        cli_sim_err(&e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    struct val_probe_opts o = {.tol_bytes = (int64_t)llround(tol_gib * RL_GIB), .tol_time_pct = tol_pct,
                               .predicted_step_ns = sr.step_ns};
    struct val_probe_result r;
    val_probe_compare(&p, &pr, &o, &r);
    if (json) {
        json_t *j = probe_json(path, &c, &p, &hw, &pr, &r);
        char *text = cli_json_dumps(cli_json_versioned(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else {
        print_probe(path, &c, &p, &hw, &pr, &r);
    }
    rc = r.overall == VAL_PASS ? 0 : 1;
out:
    val_probe_free(&pr);
    plan_free(&p);
    plan_setup_free(&c);
    return rc;
}

int cli_validate_log_config(const char *const *logs, int n_logs, const struct plan_inputs *s, struct plan_setup *c,
                            struct trace_ds_config *f, struct rl_err *e)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < n_logs; i++) {
        struct trace_ds_config one;
        int rc = trace_ds_config_read(logs[i], &one, e);
        if (rc)
            return rl_err_prefix(e, "--deepspeed-log");
        if (!one.have_version && !one.have_zero)
            continue;
        char what[600];
        snprintf(what, sizeof what, "--deepspeed-log %s", logs[i]);
        if ((rc = val_facts_apply(&one, 0, what, s, c, e)))
            return rc;
        if (!f->have_version && !f->have_zero)
            *f = one;
    }
    return 0;
}
