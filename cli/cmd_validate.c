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
#include "validation/ds_judge.h"
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

/* --hw's options (--gpu-mem, --pcie-gen, ...) over the profile of each group judged. */
static int ds_load_hw(void *ctx, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e)
{
    return cli_sim_load_hw(ctx, c, hw, e);
}

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

/* The flags of the inputs an error of val_ds_judge_run's step names; logged: what the log or the
 * group the error is about printed of its configuration (no_stages_in_log's advice). */
static int ds_err(enum val_ds_judge_stage failed, const struct trace_ds_config *logged, struct rl_err *e)
{
    if (failed == VAL_DSJ_PREDICT) {
        cli_sim_err(e);
        cli_err_flag(e, "monitor_csv", "--monitor");
    }
    if (failed == VAL_DSJ_MONITOR)
        cli_err_flag(e, "monitor_csv", "--monitor");
    if (failed == VAL_DSJ_READ || failed == VAL_DSJ_FACTS || failed == VAL_DSJ_COMPARE)
        cli_err_flag(e, "deepspeed_log", "--deepspeed-log");
    if (logged && (failed == VAL_DSJ_READ || failed == VAL_DSJ_PREDICT || failed == VAL_DSJ_COMPARE))
        no_stages_in_log(logged, e);
    return e->code;
}

/* --deepspeed-log: the logs' runs judged (validation/ds_judge.h); each group printed, or a run
 * that contradicts the user's settings said to be not judged, in order, then the error that ended
 * the judgement or, with several runs, the overall verdict. */
static int run_ds(struct validate_args *a, struct plan_inputs *s, struct cli_sim *sim)
{
    struct rl_err e = {0};
    struct val_ds_judge k;
    memset(&k, 0, sizeof k);
    const struct val_ds_judge_in in = {.logs = a->logs, .n_logs = a->n_logs, .monitor = a->monitor, .in = s,
                                       .train = &sim->train, .tol_gib = a->tol_gib, .tol_pct = a->tol_pct,
                                       .resolve = cli_setup_resolve, .load_hw = ds_load_hw, .ctx = sim};
    int rc = val_ds_judge_run(&in, &k, &e);
    for (int i = 0; !a->json && i < k.n_done; i++) {
        struct val_ds_judged *x = &k.j[i];
        if (x->skipped) {
            ds_err(x->failed, &x->logged, &x->err);
            printf("run        %s: not judged: %s\n\n", x->g->name, x->err.msg);
            continue;
        }
        if (k.n_groups > 1)
            printf("run        %s\n", x->g->name);
        print_ds(a, &x->c, &x->p, &x->hw, &x->r, &x->vt, x->g->name);
        if (x->ma_is_rss)
            printf("\nCPU accelerator (the log says \"Setting ds_accelerator to cpu\"): its MA is the process RSS,\n"
                   "interpreter and torch included, so MA is shown against the GPU ledger but not gated; the\n"
                   "sub-group count N still is.\n");
        if (k.n_groups > 1)
            printf("\n");
    }
    if (rc) {
        const struct trace_ds_config *logged = k.failed == VAL_DSJ_READ ? (k.runs.empty ? &k.runs.empty_cfg : NULL)
                                               : k.j && k.n_done < k.n_groups ? &k.j[k.n_done].logged : NULL;
        ds_err(k.failed, logged, &e);
        rc = cli_fail("validate", &e);
    } else if (a->json) {
        json_t *j = cli_json_versioned(val_ds_judge_json(&in, &k));
        char *text = cli_json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else if (k.n_groups > 1) {
        printf("verdict    %s (%d of %d runs judged, each against its own configuration)\n",
               k.overall == VAL_PASS ? "PASS" : "FAIL", k.judged, k.n_groups);
    }
    if (!rc)
        rc = k.overall == VAL_PASS ? 0 : 1;
    val_ds_judge_free(&k);
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
