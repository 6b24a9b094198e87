/* cli/cmd_validate.c — `ratiolab validate`: checks predictions against what really ran.
 *   --deepspeed-log FILE...  a real DeepSpeed run: its see_memory_usage stages against the plan's
 *                            ledger, Megatron's iteration time against predict's step;
 *   --ratios ... --out DIR   the executor (`ratiolab run`) per ratio against the simulator:
 *                            bitwise, honored ratio, memory, time (cli/validate_exec.c,
 *                            campaign/). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/sim_opts.h"
#include "cli/validate_exec.h"
#include "cli/validate_probe.h"
#include "plan/ds_rules.h"
#include "traces/dslog.h"
#include "validation/ds_runs.h"
#include "validation/probe.h"
#include "validation/val.h"

enum { V_DSLOG = 1, V_MONITOR, V_TOL, V_JSON, V_PROBE, V_AUDIT, V_AGAINST_PROBE, V_AGAINST_AUDIT, V_REPORT };
static const struct cli_opt opts[] = {
    {"probe", "FILE", "a ratiolab_probe JSON of a real DeepSpeed run (one rank): sub-groups, placement, memory, time", V_PROBE},
    {"audit", "FILE", "with --probe: the probe's audit file (audit_step=K): every sub-group's update replayed bit for bit", V_AUDIT},
    {"against-probe", "FILE", "with --audit: rank 0's probe of the same cell at another ratio, to explain the two digests", V_AGAINST_PROBE},
    {"against-audit", "FILE", "with --against-probe: that run's audit file (the same rank as --audit)", V_AGAINST_AUDIT},
    {"report", "FILE", "with --probe: the verdicts as JSON in FILE too (what --json prints; the file replaced whole)", V_REPORT},
    {"deepspeed-log", "FILE...", "DeepSpeed/Megatron log(s) of a real run (plain or .gz); more files may follow", V_DSLOG},
    {"monitor", "FILE", "a ratiolab monitor --csv of the same run: per-process host memory", V_MONITOR},
    {"tolerance", "GIB[,PCT]", "allowed difference: memory in GiB (default 0.1), step time in percent (default 10)", V_TOL},
    {"json", NULL, "machine-readable output (exact integers: bytes, nanoseconds)", V_JSON},
    {NULL, NULL, NULL, 0},
};

struct validate_args {
    const char *logs[CLI_MAX_POS + 1];   /* --deepspeed-log FILE and the files after it */
    int n_logs;                          /* entries */
    const char *monitor;                 /* --monitor FILE, NULL when absent */
    const char *probe;                   /* --probe FILE, NULL when absent */
    struct cli_probe_opts po;            /* --audit, --against-probe, --against-audit, --report (with --probe) */
    double tol_gib;                      /* memory tolerance, GiB */
    double tol_pct;                      /* step-time tolerance, percent */
    bool json;                           /* --json */
    struct cli_validate_exec ex;         /* executor mode's options */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct validate_args *a = ctx;
    switch (id) {
    case V_DSLOG: a->logs[a->n_logs++] = v; return 0;
    case V_MONITOR: a->monitor = v; return 0;
    case V_PROBE: a->probe = v; return 0;
    case V_AUDIT: a->po.audit = v; return 0;
    case V_AGAINST_PROBE: a->po.against_probe = v; return 0;
    case V_AGAINST_AUDIT: a->po.against_audit = v; return 0;
    case V_REPORT: a->po.report = v; return 0;
    case V_JSON: a->json = true; return 0;
    case V_TOL: {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", v);
        char *comma = strchr(buf, ',');
        if (comma)
            *comma = 0;
        int rc = rl_parse_double("--tolerance (GiB)", buf, 0, 1e6, &a->tol_gib, e);
        if (!rc && comma)
            rc = rl_parse_double("--tolerance (percent)", comma + 1, 0, 1e6, &a->tol_pct, e);
        return rc;
    }
    }
    return cli_validate_exec_opt(&a->ex, id, v, e);
}

/* The setup and simulator options as given, to pass them on to `ratiolab run`. */
struct fwd_opts {
    struct plan_inputs *s;                 /* parsed into here as usual */
    struct cli_sim *sim;                 /* likewise */
    struct cli_validate_exec *ex;        /* --policy / --schedule lists go here */
    const char *argv[4 * CLI_MAX_POS];   /* "--name", "value", ... */
    char names[2 * CLI_MAX_POS][48];     /* storage of the "--name" strings */
    int n;                               /* entries in argv */
    bool schedule_given;                 /* --schedule seen */
};

static void fwd_push(struct fwd_opts *f, const struct cli_opt *table, int id, const char *v)
{
    for (const struct cli_opt *o = table; o->name; o++)
        if (o->id == id && f->n + 2 <= (int)(sizeof f->argv / sizeof f->argv[0])) {
            char *nm = f->names[f->n / 2 % (2 * CLI_MAX_POS)];
            snprintf(nm, 48, "--%s", o->name);
            f->argv[f->n++] = nm;
            if (v)
                f->argv[f->n++] = v;
            return;
        }
}

static bool opt_is(const struct cli_opt *table, int id, const char *name)
{
    for (const struct cli_opt *o = table; o->name; o++)
        if (o->id == id)
            return strcmp(o->name, name) == 0;
    return false;
}

static int on_setup(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct fwd_opts *f = ctx;
    if (opt_is(cli_setup_opts, id, "policy") && strchr(v, ','))   /* several: one run per policy */
        return cli_validate_exec_policies(f->ex, v, &f->s->policy, e);
    if (opt_is(cli_setup_opts, id, "policy"))
        f->ex->o.n_policies = 0;
    fwd_push(f, cli_setup_opts, id, v);
    return cli_setup_opt(f->s, id, v, e);
}

static int on_sim(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct fwd_opts *f = ctx;
    if (opt_is(cli_sim_opts, id, "schedule")) {
        f->schedule_given = true;
        if (strchr(v, ','))   /* several: one run per schedule */
            return cli_validate_exec_schedules(f->ex, v, &f->sim->train.schedule, e);
        f->ex->o.n_schedules = 0;
    } else if (opt_is(cli_sim_opts, id, "checkpoint-activations")) {
        fwd_push(f, cli_sim_opts, id, v);
    }
    return cli_sim_opt(f->sim, id, v, e);
}

static double gib(int64_t b) { return (double)b / RL_GIB; }

/* The timers against the simulator's windows, and what the iteration pays outside them. */
static void print_timers(const struct val_ds_timers *vt)
{
    if (!vt->n_rows) {
        printf("\ntimers: none logged (DeepSpeed's 'time (ms) | fwd: ...' needs wall_clock_breakdown: true; "
               "Megatron's '(min, max) time across ranks (ms)' its --log-interval)\n");
        return;
    }
    printf("\ntimers (median per iteration, the first skipped; shown, not gated)\n");
    printf("  %-18s %6s %12s %14s %8s  %s\n", "timer", "values", "measured ms", "predicted ms", "error", "predicted as");
    for (int i = 0; i < vt->n_rows; i++) {
        const struct val_ds_timer_row *w = &vt->row[i];
        printf("  %-18s %6d %12.1f %14.1f %+7.1f%%  %s window%s\n", trace_ds_timer_name(w->timer), w->n,
               w->measured_ms, w->predicted_ms, w->error_pct, w->predicted_as, strchr(w->predicted_as, '+') ? "s" : "");
    }
    if (vt->have_outside)
        printf("  outside the timers: %.1f ms per iteration (measured: the iteration minus %s; not predicted)\n",
               vt->outside_ms, vt->outside_of);
}

static void print_ds(const struct validate_args *a, const struct plan_setup *c, const struct plan *p,
                     const struct hw_profile *hw, const struct val_ds_result *r, const struct val_ds_timers *vt,
                     const char *run)
{
    char head[512];
    printf("model      %s\n", cli_data(cli_model_head(c, head, sizeof head)));
    printf("DeepSpeed  %s rules: ledger %s, policy %s, %d sub-groups, honored ratio %.4f\n",
           RL_VERSION_S(p->zero.ds_version), plan_ledger_name(p->ledger_kind), plan_policy_name(p->policy), p->n_subgroups, p->honored_ratio);
    printf("logs      ");
    for (int i = 0; i < a->n_logs; i++)
        printf(" %s", cli_data(a->logs[i]));
    printf("\n\nGPU memory per stage (GiB = 1024^3; MA is logged to 2 decimals; tolerance %.2f GiB)\n",
           a->tol_gib);
    printf("  %-44s %8s %9s %8s %12s  %s\n", "stage (log:line)", "MA", "ledger", "diff", "sub-groups", "verdict");
    for (int i = 0; i < r->n_stages; i++) {
        const struct val_ds_stage *s = &r->stages[i];
        char name[45], ma[16] = "-", led[16] = "-", diff[16] = "", sg[24] = "";
        snprintf(name, sizeof name, "%s", cli_data(s->message));
        if (s->logged_ma_bytes >= 0)
            snprintf(ma, sizeof ma, "%.2f", gib(s->logged_ma_bytes));
        if (s->predicted_gpu_bytes >= 0)
            snprintf(led, sizeof led, "%.2f", gib(s->predicted_gpu_bytes));
        if (s->status != VAL_INFO) {
            double d = gib(s->diff_bytes);
            snprintf(diff, sizeof diff, "%+.2f", fabs(d) < 0.005 ? 0.0 : d);   /* no "-0.00" */
        }
        if (s->logged_subgroups >= 0)
            snprintf(sg, sizeof sg, "%d vs %d", s->logged_subgroups, r->plan_subgroups);
        printf("  %-44s %8s %9s %8s %12s  %s%s\n", name, ma, led, diff, sg,
               s->status == VAL_INFO ? "" : val_status_name(s->status),
               s->status == VAL_INFO && s->plan_stage < 0 ? "(not a ledger stage)" : "");
    }
    printf("\nhost memory: DeepSpeed's \"CPU Virtual Memory: used\" is the whole machine's (psutil),\n"
           "not the process's; the ledger's host bytes per rank for comparison:\n");
    for (int i = 0; i < r->n_stages; i++) {
        const struct val_ds_stage *s = &r->stages[i];
        if (s->plan_stage < 0 || s->logged_cpu_used_bytes < 0)
            continue;
        printf("  %-44.44s machine %8.2f  ledger %6.2f\n", cli_data(s->message), gib(s->logged_cpu_used_bytes),
               gib(s->predicted_host_bytes));
    }
    if (r->have_monitor)
        printf("  rank 0 process (pid %d, monitor): start-up %.2f, peak %.2f, growth %.2f vs ledger peak %.2f GiB  %s\n",
               r->monitor_pid, gib(r->monitor_baseline_bytes), gib(r->monitor_peak_bytes),
               gib(r->monitor_peak_bytes - r->monitor_baseline_bytes), gib(r->predicted_host_peak_bytes),
               val_status_name(r->host_status));
    else
        printf("  (give --monitor FILE, a ratiolab monitor CSV of the run, to compare per process)\n");
    printf("\nstep time on %s: ", cli_data(hw->name));
    if (r->n_iterations == 0)
        printf("no 'elapsed time per iteration (ms)' line in the logs\n");
    else
        printf("measured %.1f ms (median of %d logged iteration%s%s), predicted %.1f ms, error %+.1f %% "
               "(tolerance %.1f %%)  %s\n", r->measured_step_ms, r->n_iterations >= 2 ? r->n_iterations - 1 : 1,
               r->n_iterations >= 2 && r->n_iterations - 1 == 1 ? "" : "s",
               r->n_iterations >= 2 ? ", the first skipped" : "", (double)r->predicted_step_ns * 1e-6,
               r->step_error_pct, a->tol_pct, val_status_name(r->time_status));
    print_timers(vt);
    printf("\nverdict    %s (run %s)\n", r->overall == VAL_PASS ? "PASS" : "FAIL", run);
}

static json_t *ds_json(const struct validate_args *a, const struct plan_setup *c, const struct plan *p,
                       const struct hw_profile *hw, const struct val_ds_result *r, const struct val_ds_timers *vt)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("ratiolab-validate-deepspeed-log"));
    json_object_set_new(o, "model", json_string(c->model_desc));
    json_object_set_new(o, "hardware", json_string(hw->name));
    json_object_set_new(o, "deepspeed_version", json_string(RL_VERSION_S(p->zero.ds_version)));
    json_object_set_new(o, "ledger", json_string(plan_ledger_name(p->ledger_kind)));
    json_object_set_new(o, "subgroups", json_integer(p->n_subgroups));
    json_object_set_new(o, "tolerance_bytes", json_integer((json_int_t)llround(a->tol_gib * RL_GIB)));
    json_object_set_new(o, "tolerance_time_pct", json_real(a->tol_pct));
    json_t *logs = json_array();
    for (int i = 0; i < a->n_logs; i++)
        json_array_append_new(logs, json_string(a->logs[i]));
    json_object_set_new(o, "logs", logs);
    json_t *st = json_array();
    for (int i = 0; i < r->n_stages; i++) {
        const struct val_ds_stage *s = &r->stages[i];
        json_t *x = json_object();
        json_object_set_new(x, "message", json_string(s->message));
        json_object_set_new(x, "log", json_integer(s->file));
        json_object_set_new(x, "line", json_integer(s->line));
        json_object_set_new(x, "ledger_stage", s->plan_stage >= 0 ? json_string(plan_stage_name(s->plan_stage)) : json_null());
        json_object_set_new(x, "logged_ma_bytes", s->logged_ma_bytes >= 0 ? json_integer(s->logged_ma_bytes) : json_null());
        json_object_set_new(x, "predicted_gpu_bytes", s->predicted_gpu_bytes >= 0 ? json_integer(s->predicted_gpu_bytes) : json_null());
        json_object_set_new(x, "diff_bytes", s->status != VAL_INFO ? json_integer(s->diff_bytes) : json_null());
        json_object_set_new(x, "logged_subgroups", s->logged_subgroups >= 0 ? json_integer(s->logged_subgroups) : json_null());
        json_object_set_new(x, "machine_cpu_used_bytes", s->logged_cpu_used_bytes >= 0 ? json_integer(s->logged_cpu_used_bytes) : json_null());
        json_object_set_new(x, "predicted_host_bytes", s->predicted_host_bytes >= 0 ? json_integer(s->predicted_host_bytes) : json_null());
        json_object_set_new(x, "status", json_string(val_status_name(s->status)));
        json_array_append_new(st, x);
    }
    json_object_set_new(o, "stages", st);
    json_t *t = json_object();
    json_object_set_new(t, "iterations", json_integer(r->n_iterations));
    json_object_set_new(t, "measured_step_ms", r->n_iterations ? json_real(r->measured_step_ms) : json_null());
    json_object_set_new(t, "predicted_step_ns", json_integer(r->predicted_step_ns));
    json_object_set_new(t, "step_error_pct", r->n_iterations ? json_real(r->step_error_pct) : json_null());
    json_object_set_new(t, "status", json_string(val_status_name(r->time_status)));
    json_object_set_new(o, "time", t);
    json_t *tm = json_array();
    for (int i = 0; i < vt->n_rows; i++) {
        const struct val_ds_timer_row *w = &vt->row[i];
        json_t *x = json_object();
        json_object_set_new(x, "timer", json_string(trace_ds_timer_name(w->timer)));
        json_object_set_new(x, "values", json_integer(w->n));
        json_object_set_new(x, "measured_ms", json_real(w->measured_ms));
        json_object_set_new(x, "predicted_ms", json_real(w->predicted_ms));
        json_object_set_new(x, "error_pct", json_real(w->error_pct));
        json_object_set_new(x, "predicted_as", json_string(w->predicted_as));
        json_array_append_new(tm, x);
    }
    json_object_set_new(o, "timers", tm);
    json_object_set_new(o, "outside_timers_ms", vt->have_outside ? json_real(vt->outside_ms) : json_null());
    json_t *h = json_object();
    json_object_set_new(h, "note", json_string("DeepSpeed's CPU Virtual Memory figure is system-wide; per-process "
                                               "figures come from a ratiolab monitor CSV"));
    json_object_set_new(h, "predicted_peak_bytes", json_integer(r->predicted_host_peak_bytes));
    if (r->have_monitor) {
        json_object_set_new(h, "monitor_pid", json_integer(r->monitor_pid));
        json_object_set_new(h, "baseline_bytes", json_integer(r->monitor_baseline_bytes));
        json_object_set_new(h, "peak_bytes", json_integer(r->monitor_peak_bytes));
    }
    json_object_set_new(h, "status", json_string(val_status_name(r->host_status)));
    json_object_set_new(o, "host", h);
    json_object_set_new(o, "verdict", json_string(val_status_name(r->overall)));
    return o;
}

/* ---- --deepspeed-log: the logs split into runs (validation/ds_runs.h), each group judged ---------- */

static bool rows_log_stages(const struct plan_ds_rules *r) { return r->logs_stages; }
static bool rows_no_stages(const struct plan_ds_rules *r) { return !r->logs_stages; }

/* A release whose stage3.py calls see_memory_usage with force=False at every allocation stage
 * (plan_ds_rules.logs_stages false: 0.18.8 on) logs none: a log that printed such a version and gave
 * nothing to compare says so and points to the probe. */
static void no_stages_in_log(const struct trace_ds_config *f, struct rl_err *e)
{
    if (e->code != RL_EINVAL ||
        (!strstr(e->msg, "no DeepSpeed see_memory_usage lines") && !strstr(e->msg, "no allocation stage")))
        return;
    if (!f->have_version) {   /* which release wrote it is unknown: say which ones log the stages */
        char logs[128], silent[128];
        plan_ds_rows_versions(rows_log_stages, logs, sizeof logs);
        plan_ds_rows_versions(rows_no_stages, silent, sizeof silent);
        size_t used = strlen(e->msg);
        snprintf(e->msg + used, sizeof e->msg - used, "; the log names no DeepSpeed version (no \"DeepSpeed info: "
                 "version=\" line): DeepSpeed %s logs the allocation stages, %s does not (stage3.py calls "
                 "see_memory_usage with force=False): for such a run attach probe/ratiolab_probe.py and use validate "
                 "--probe (docs/json-probe.md)", logs, silent);
        return;
    }
    if (plan_ds_rules_for(f->version)->logs_stages)
        return;
    rl_errf(e, RL_EINVAL, "--deepspeed-log: the log is of DeepSpeed %s (line %d), whose stage3.py calls "
            "see_memory_usage with force=False at every allocation stage: the stages are not in the log. Attach "
            "probe/ratiolab_probe.py to the run and use validate --probe (docs/json-probe.md)",
            RL_VERSION_S(f->version), f->version_line);
}

/* Judges one group: the setup from the user's flags and the runs' configuration, the plan, the
 * prediction and the comparison; prints (or adds to *json_runs) and sets *verdict. A
 * contradiction between a run and the user's settings is RL_EINVAL in *e (nothing printed). */
static int judge_group(struct validate_args *a, struct plan_inputs *s, struct cli_sim *sim,
                       const struct val_ds_runs *runs, const struct val_ds_group *g, bool several, json_t *json_runs,
                       enum val_status *verdict, struct rl_err *e)
{
    struct plan_setup c;
    struct hw_profile hw;
    struct plan p;
    memset(&p, 0, sizeof p);
    memset(&c, 0, sizeof c);
    struct trace_ds_log logs[VAL_DS_GROUP_MAX];
    double *ms = NULL;
    int n_ms = 0, rc;
    struct val_monitor mon = {0};
    struct val_ds_result r = {0};
    struct sim_step_result sr;
    struct trace_ds_timers tm = {0};
    struct val_ds_timers vt;
    struct trace_ds_config logged;
    memset(&logged, 0, sizeof logged);
    if ((rc = cli_setup_resolve(s, &c, e)))
        goto out;
    if ((rc = val_ds_group_facts(runs, g, s, &c, &logged, e))) {
        cli_err_flag(e, "deepspeed_log", "--deepspeed-log");
        goto out;
    }
    if ((rc = val_ds_group_join(runs, g, logs, &ms, &n_ms, &tm, e)))
        goto out;
    if ((rc = cli_sim_load_hw(sim, &c, &hw, e)) || (rc = plan_setup_plan(&c, -1, &p, e)) ||
        (rc = sim_step_run(&p, &hw, &sim->train, NULL, &sr, e)) ||
        (a->monitor && (rc = val_monitor_read(a->monitor, &mon, e)))) {
        cli_sim_err(e);
        cli_err_flag(e, "monitor_csv", "--monitor");
        no_stages_in_log(&logged, e);
        rc = rc ? rc : RL_EINVAL;
        goto out;
    }
    struct val_ds_opts o = {.tol_bytes = (int64_t)llround(a->tol_gib * RL_GIB), .tol_time_pct = a->tol_pct,
                            .ma_is_rss = strcmp(logged.accelerator, "cpu") == 0};
    if ((rc = val_ds_compare(&p, logs, g->n, ms, n_ms, sr.step_ns, a->monitor ? &mon : NULL, &o, &r, e))) {
        cli_err_flag(e, "deepspeed_log", "--deepspeed-log");
        no_stages_in_log(&logged, e);
        goto out;
    }
    for (int i = 0; i < r.n_stages; i++)   /* the stage's log among those given, not among the group's */
        r.stages[i].file = val_ds_group_file(runs, g, r.stages[i].file);
    val_ds_timers_compare(&tm, &sr, r.n_iterations ? r.measured_step_ms : -1, &vt);
    if (a->json) {
        json_t *j = ds_json(a, &c, &p, &hw, &r, &vt);
        json_t *jr = json_array();
        for (int i = 0; i < g->n; i++) {
            const struct val_ds_unit *x = &runs->u[g->units[i]];
            json_array_append_new(jr, json_pack("{s:s,s:i}", "log", a->logs[x->file], "line", x->first_line));
        }
        json_object_set_new(j, "runs", jr);
        json_array_append_new(json_runs, j);
    } else {
        if (several)
            printf("run        %s\n", g->name);
        print_ds(a, &c, &p, &hw, &r, &vt, g->name);
        if (o.ma_is_rss)
            printf("\nCPU accelerator (the log says \"Setting ds_accelerator to cpu\"): its MA is the process RSS,\n"
                   "interpreter and torch included, so MA is shown against the GPU ledger but not gated; the\n"
                   "sub-group count N still is.\n");
        if (several)
            printf("\n");
    }
    *verdict = r.overall;
out:
    val_ds_result_free(&r);
    trace_ds_timers_free(&tm);
    val_monitor_free(&mon);
    free(ms);
    plan_free(&p);
    plan_setup_free(&c);
    return rc;
}

/* --deepspeed-log: the logs split into runs (trace_ds_split_runs). When every run printed one
 * configuration (or only one did), they are judged together as one run, stages from one log and
 * iterations from another as before. When they differ (two logs of two ratios, a log with two runs
 * appended), each run is judged against its own configuration, named by its log and first line;
 * a run that contradicts a setting the user gave (--ratio, --ds-config) is not judged, and said
 * so, unless every run does (then that is the error, exit 2). Logs with no configuration at all
 * cannot be told which run they belong to: refused. */
static int run_ds(struct validate_args *a, struct plan_inputs *s, struct cli_sim *sim)
{
    struct rl_err e = {0};
    struct val_ds_runs runs = {0};
    int rc;
    static struct val_ds_group groups[VAL_DS_GROUP_MAX];
    int n_groups = 0;
    bool differ = false;
    json_t *json_runs = json_array();
    if ((rc = val_ds_runs_read(&runs, a->logs, a->n_logs, &e)) ||
        (rc = val_ds_runs_group(&runs, groups, VAL_DS_GROUP_MAX, &n_groups, &differ, &e))) {
        cli_err_flag(&e, "deepspeed_log", "--deepspeed-log");
        if (runs.empty)   /* a release that logs no stages says so (no_stages_in_log) */
            no_stages_in_log(&runs.empty_cfg, &e);
        rc = cli_fail("validate", &e);
        goto out;
    }
    if (differ && a->monitor) {
        rl_errf(&e, RL_EINVAL, "--monitor: the logs hold %d runs of different configurations; a monitor CSV is "
                "of one run: validate that run's log with it alone", n_groups);
        rc = cli_fail("validate", &e);
        goto out;
    }
    enum val_status overall = VAL_PASS;
    int judged = 0;
    struct rl_err first_skip = {0};
    for (int k = 0; k < n_groups; k++) {
        enum val_status v = VAL_FAIL;
        struct rl_err ge = {0};
        int grc = judge_group(a, s, sim, &runs, &groups[k], n_groups > 1, json_runs, &v, &ge);
        /* With several runs, one whose configuration contradicts the user's is left out (said
         * below); any other error ends the command. */
        if (grc && n_groups > 1 && grc == RL_EINVAL && strstr(ge.msg, ": the run used ")) {
            if (!first_skip.code)
                first_skip = ge;
            if (!a->json)
                printf("run        %s: not judged: %s\n\n", groups[k].name, ge.msg);
            continue;
        }
        if (grc) {
            rc = cli_fail("validate", &ge);
            goto out;
        }
        judged++;
        if (v != VAL_PASS)
            overall = VAL_FAIL;
    }
    if (!judged) {
        rc = cli_fail("validate", &first_skip);
        goto out;
    }
    if (a->json) {
        json_t *j;
        if (n_groups == 1) {
            j = json_incref(json_array_get(json_runs, 0));
        } else {
            j = json_object();
            json_object_set_new(j, "kind", json_string("ratiolab-validate-deepspeed-log"));
            json_object_set_new(j, "runs", json_incref(json_runs));
            json_object_set_new(j, "verdict", json_string(val_status_name(overall)));
        }
        char *text = cli_json_dumps(cli_json_versioned(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else if (n_groups > 1) {
        printf("verdict    %s (%d of %d runs judged, each against its own configuration)\n",
               overall == VAL_PASS ? "PASS" : "FAIL", judged, n_groups);
    }
    rc = overall == VAL_PASS ? 0 : 1;
out:
    json_decref(json_runs);
    val_ds_runs_free(&runs);
    return rc;
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct validate_args a = {.tol_gib = 0.1, .tol_pct = 10};
    cli_validate_exec_init(&a.ex);
    static struct fwd_opts fw_store;   /* large; one command per process */
    struct fwd_opts *fw = &fw_store;
    memset(fw, 0, sizeof *fw);
    fw->s = &s;
    fw->sim = &sim;
    fw->ex = &a.ex;
    struct cli_optset sets[] = {
        {"real DeepSpeed runs", opts, on_opt, &a},
        {"executor against simulator", cli_validate_exec_opts, on_opt, &a},
        {"hardware and training", cli_sim_opts, on_sim, fw},
        {"model, layout and DeepSpeed config", cli_setup_opts, on_setup, fw},
    };
    static const char usage[] =
        "ratiolab validate --probe FILE --model M [--param-groups G|FILE] [--ds-config F] [--hw P] [--audit FILE\n"
        "         [--against-probe FILE --against-audit FILE]] [--report FILE] [--json]\n"
        "       ratiolab validate --deepspeed-log FILE [FILE...] [--ds-config F] [--model M] [--monitor CSV] [--json]\n"
        "       ratiolab validate --ratios 0,0.3,0.5,1 --ranks N [--backend cpu|cuda] [--hw P | --calibrate] --out DIR";
    static const char desc[] =
        "Checks predictions against what really ran.\n"
        "With --probe: what probe/ratiolab_probe.py read from a live DeepSpeed engine (docs/json-probe.md)\n"
        "against the plan: sub-group count, sizes and placement (exact), the honored ratio, the optimizer's\n"
        "tensors against the ledger, device memory and the step against predict; prints DeepSpeed's digest.\n"
        "The run's version, ratio, sub_group_size, buckets and ranks come from the probe; a --ds-config or\n"
        "flag that contradicts them is refused (exit 2). --deepspeed-log likewise reads the configuration\n"
        "DeepSpeed printed in the log.\n"
        "With --deepspeed-log: every see_memory_usage stage DeepSpeed logged (MA) against the plan's\n"
        "ledger for that DeepSpeed version (the N of 'After creating fp16 partitions: N' must equal the\n"
        "plan's sub-group count), and Megatron's 'elapsed time per iteration (ms)' (median, the first\n"
        "skipped) against predict's step. Exit 1 beyond --tolerance. The timers of a run with wall-clock\n"
        "breakdown (DeepSpeed's fwd, bwd, step; Megatron's forward-backward, optimizer) are shown next to\n"
        "the predicted forward, backward and step windows.\n"
        "With --ratios: runs the executor per ratio (and per --schedule A,B and --policy A,B) and the\n"
        "simulator for the same runs, checks bitwise equality, the honored ratio, memory and time,\n"
        "writes DIR/report.md and DIR/report.json; exit 1 when a gated check fails. It launches mpirun\n"
        "for --ranks N, or, started by mpirun itself, runs the executor in those ranks' processes.";
    struct cli_rest rest;
    struct rl_err e = {0};
    int rc = cli_command_parse_rest("validate", argc, argv, usage, desc, sets, 4, &rest);
    if (rc != CLI_GO_ON)
        return rc;
    if (rest.n_after) {
        rl_errf(&e, RL_EINVAL, "unexpected argument '--'");
        return cli_fail("validate", &e);
    }
    if (rest.n_pos && !a.n_logs) {
        rl_errf(&e, RL_EINVAL, "unexpected argument '%s' (log files follow --deepspeed-log)", rest.pos[0]);
        return cli_fail("validate", &e);
    }
    for (int i = 0; i < rest.n_pos; i++)
        a.logs[a.n_logs++] = rest.pos[i];
    if (a.probe) {
        if (a.n_logs || a.monitor || cli_validate_exec_given(&a.ex)) {
            rl_errf(&e, RL_EINVAL, "--probe: cannot be combined with --deepspeed-log, --monitor or the executor "
                    "options (--ratios, --ranks, --out, ...); run them separately");
            return cli_fail("validate", &e);
        }
        if ((a.po.against_probe || a.po.against_audit) && !(a.po.audit && a.po.against_probe && a.po.against_audit)) {
            rl_errf(&e, RL_EINVAL, "--against-probe and --against-audit: give both, with --audit (two runs' audits "
                    "explain their digests)");
            return cli_fail("validate", &e);
        }
        return cli_validate_probe(a.probe, &s, &sim, a.tol_gib, a.tol_pct, a.json, &a.po);
    }
    const char *needs_probe = a.po.audit ? "--audit" : a.po.against_probe ? "--against-probe"
                              : a.po.against_audit ? "--against-audit" : a.po.report ? "--report" : NULL;
    if (needs_probe) {
        const char *v = a.po.audit ? a.po.audit : a.po.against_probe ? a.po.against_probe
                        : a.po.against_audit ? a.po.against_audit : a.po.report;
        rl_errf(&e, RL_EINVAL, "%s: %s needs --probe (the file belongs to a probe's run)", needs_probe, v);
        return cli_fail("validate", &e);
    }
    if (a.n_logs) {
        if (cli_validate_exec_given(&a.ex)) {
            rl_errf(&e, RL_EINVAL, "--deepspeed-log: cannot be combined with the executor options "
                    "(--ratios, --ranks, --out, ...); run them separately");
            return cli_fail("validate", &e);
        }
        return run_ds(&a, &s, &sim);
    }
    if (a.monitor) {
        rl_errf(&e, RL_EINVAL, "--monitor: applies with --deepspeed-log only");
        return cli_fail("validate", &e);
    }
    return cli_validate_exec_run(&a.ex, &s, &sim, fw->argv, fw->n, fw->schedule_given, a.json);
}

const struct cli_cmd cli_cmd_validate = {"validate", "check predictions against real runs (DeepSpeed logs, or the executor per ratio)", run};
