/* cli/validate_exec.c — `ratiolab validate --ratios ...` (see validate_exec.h): the options, their
 * consistency, the campaign (campaign/campaign.h: the runs, predictions, checks and report files)
 * and the report on stdout. */
#include <stdlib.h>
#include <string.h>

#include "campaign/campaign.h"
#include "cli/validate_exec.h"
#include "exec/backend.h"   /* ex_backend_named: the cuda backend's device discovery */
#include "validation/val.h"

enum { X_RATIOS = 100, X_RANKS, X_BACKEND, X_CALIBRATE, X_STEPS, X_OUT, X_GATE_TIME, X_MEM_TOL, X_SCALE, X_ALSO_HW };

const struct cli_opt cli_validate_exec_opts[] = {
    {"ratios", "LIST", "ratios to run, e.g. 0,0.3,0.5,1 or 0:1:0.25", X_RATIOS},
    {"ranks", "N", "MPI ranks of each executor run (default 1; mpirun is started for N > 1)", X_RANKS},
    {"backend", "B", "executor backend: cpu (emulated device, default) or cuda", X_BACKEND},
    {"calibrate", NULL, "measure this machine first (ratiolab calibrate) and predict with that profile; with --backend cuda the GPUs, over --hw (the machine type's catalog profile)", X_CALIBRATE},
    {"steps", "K", "timed steps per run (default 3; one warm-up step before them)", X_STEPS},
    {"out", "DIR", "where report.md, report.json and the traces go", X_OUT},
    {"gate-time", "PCT", "fail when the step MAPE over the runs exceeds PCT (default: reported only)", X_GATE_TIME},
    {"mem-tolerance", "PCT", "allowed peak RSS / device use difference from ledger + baseline (default 10)", X_MEM_TOL},
    {"scale", "F", "shrink the model by F for the executor and the prediction (>= 1, default 1)", X_SCALE},
    {"also-hw", "NAME|FILE", "predict every run with this profile too: DIR/also/report.md and report.json hold the same measurements against it (e.g. the catalog's profile beside --calibrate's)", X_ALSO_HW},
    {NULL, NULL, NULL, 0},
};

void cli_validate_exec_init(struct cli_validate_exec *x)
{
    memset(x, 0, sizeof *x);
    camp_opts_init(&x->o);
}

int cli_validate_exec_opt(struct cli_validate_exec *x, int id, const char *v, struct rl_err *e)
{
    x->given = true;
    switch (id) {
    case X_RATIOS: x->ratios = v; return 0;
    case X_RANKS: return rl_parse_int("--ranks", v, 1, VAL_MAX_RANKS, &x->o.ranks, e);
    case X_BACKEND:
        return ex_backend_parse_named("--backend", v, &x->o.backend, e);
    case X_CALIBRATE: x->o.calibrate = true; return 0;
    case X_STEPS: return rl_parse_int("--steps", v, 1, 100000, &x->o.steps, e);
    case X_OUT: x->o.out_dir = v; return 0;
    case X_GATE_TIME: return rl_parse_double("--gate-time", v, 0, 1e6, &x->o.gate_time_pct, e);
    case X_MEM_TOL: return rl_parse_double("--mem-tolerance", v, 0, 1e6, &x->o.mem_tol_pct, e);
    case X_SCALE: return rl_parse_double("--scale", v, 1, 1e12, &x->o.scale, e);
    case X_ALSO_HW: x->o.also_hw = v; return 0;
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

bool cli_validate_exec_given(const struct cli_validate_exec *x) { return x->given; }

/* Splits a comma list into at most CAMP_MAX_LIST items of up to 63 characters. */
static int split_list(const char *field, const char *v, char items[][64], int *n, struct rl_err *e)
{
    *n = 0;
    const char *q = v;
    while (true) {
        const char *c = strchr(q, ',');
        size_t len = c ? (size_t)(c - q) : strlen(q);
        if (len == 0 || len > 63 || *n == CAMP_MAX_LIST)
            return rl_errf(e, RL_EINVAL, "%s: '%s' is not allowed; allowed: up to %d names separated by commas",
                           field, v, CAMP_MAX_LIST);
        memcpy(items[*n], q, len);
        items[(*n)++][len] = 0;
        if (!c)
            return 0;
        q = c + 1;
    }
}

int cli_validate_exec_policies(struct cli_validate_exec *x, const char *v, enum plan_policy *first,
                               struct rl_err *e)
{
    char items[CAMP_MAX_LIST][64];
    int n, rc;
    if ((rc = split_list("--policy", v, items, &n, e)))
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = plan_policy_parse(items[i], &x->o.policies[i], e)))
            return cli_err_flag(e, "policy", "--policy");
    x->o.n_policies = n;
    *first = x->o.policies[0];
    return 0;
}

int cli_validate_exec_schedules(struct cli_validate_exec *x, const char *v, enum step_schedule *first,
                                struct rl_err *e)
{
    char items[CAMP_MAX_LIST][64];
    int n, rc;
    if ((rc = split_list("--schedule", v, items, &n, e)))
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = sim_schedule_parse(items[i], &x->o.schedules[i], e)))
            return cli_err_flag(e, "schedule", "--schedule");
    x->o.n_schedules = n;
    *first = x->o.schedules[0];
    return 0;
}

/* The report on stdout: report.json's text with --json, else a table of the rows and the checks. */
static void print_report(const struct val_report *rep, const char *out, bool json)
{
    if (json) {
        struct rl_err e = {0};
        char *t2;
        if (!val_report_json(rep, &t2, &e)) {
            printf("%s\n", t2);
            free(t2);
        }
        return;
    }
    printf("model      %s\nhardware   %s (%s)\nbackend    %s, %d rank%s, %d timed steps, policy %s\n",
           cli_data(rep->model), cli_data(rep->hardware), cli_data(rep->hardware_path), rep->backend, rep->ranks, rep->ranks == 1 ? "" : "s", rep->steps,
           rep->policy);
    char ds[256];
    val_report_deepspeed_text(rep, ds, sizeof ds);
    if (ds[0])   /* the DeepSpeed release whose step each side ran */
        printf("deepspeed  %s\n", ds);
    printf("\n");
    printf("  %-6s %-15s %-15s %8s %9s %12s %12s %8s %8s\n", "ratio", "schedule", "policy", "honored", "digest",
           "predicted ms", "measured ms", "error %", "others %");
    for (int i = 0; i < rep->n_rows; i++) {
        const struct val_row *w = &rep->rows[i];
        char oc[16] = "-";
        if (w->others_cpu_pct >= 0)
            snprintf(oc, sizeof oc, "%.0f", w->others_cpu_pct);
        char err[16] = "-";   /* no error against another machine's profile */
        if (!rep->time_skipped[0])
            snprintf(err, sizeof err, "%+.1f", w->step_error_pct);
        printf("  %-6g %-15s %-15s %8.4f %9.8x %12.3f %12.3f %8s %8s\n", w->ratio, w->schedule, w->policy,
               w->plan_honored_ratio, w->digest, (double)w->predicted.step_ns * 1e-6,
               (double)w->measured.step_ns * 1e-6, err, oc);
    }
    if (rep->time_skipped[0])
        printf("  (error %%: not compared: %s)\n", rep->time_skipped);
    printf("  (others %%: the share of the machine's cores other processes used while the run ran)\n");
    printf("\n");
    for (int i = 0; i < rep->n_checks; i++)
        printf("  %-15s %-4s%s  %s\n", rep->checks[i].name, val_status_name(rep->checks[i].status),
               rep->checks[i].gated ? "" : " (not gated)", cli_data(rep->checks[i].detail));
    printf("\nreport     %s/report.md, %s/report.json\n", cli_data(out), cli_data(out));
}

/* Before anything is measured or written: what --hw means with --calibrate (cpu: nothing, the
 * emulated device is measured whole; cuda: the catalog profile of this machine type, for what the
 * GPU calibration does not measure), and whether a GPU is there for --backend cuda. */
static int check_backend(const struct camp_opts *x, const struct cli_sim *sim, struct rl_err *e)
{
    bool cuda = x->backend == EX_BACKEND_CUDA;
    if (!cuda && !x->calibrate && !sim->hw_given && x->gate_time_pct >= 0)
        return rl_errf(e, RL_EINVAL, "--gate-time: with the cpu backend needs --calibrate (or --hw FILE, this "
                       "machine's profile): the default profile %s is not this machine, so there is no time error to "
                       "gate", sim->hw);
    if (x->calibrate && !cuda && sim->hw_given)
        return rl_errf(e, RL_EINVAL, "--hw %s: not with --calibrate on the cpu backend, which measures the emulated "
                       "device whole; allowed: one of them", sim->hw);
    if (x->calibrate && cuda && !sim->hw_given)
        return rl_errf(e, RL_EINVAL, "--calibrate: with --backend cuda needs --hw NAME|FILE, the catalog profile of "
                       "this machine type (what the GPU calibration does not measure comes from it)");
    if (x->calibrate && cuda && camp_under_mpirun())
        return rl_errf(e, RL_EINVAL, "--calibrate: with --backend cuda under mpirun is not allowed; allowed: run "
                       "`ratiolab calibrate --backend cuda --base %s` first and give its profile as --hw FILE", sim->hw);
    if (!cuda)
        return 0;
    const struct ex_backend *be = ex_backend_named(ex_backend_name(EX_BACKEND_CUDA));   /* NULL: not built */
    if (!be)
        return rl_errf(e, RL_EENV, "--backend cuda: this ratiolab was built without CUDA (nvcc, cuBLAS and NCCL are "
                       "needed); the cpu backend (--backend cpu) runs anywhere");
    if (be->device_count() <= 0)
        return rl_errf(e, RL_EENV, "--backend cuda: no GPU is visible; the cpu backend (--backend cpu) runs anywhere");
    return 0;
}

/* ---- the campaign's hooks: what it has to say, printed here ------------------------------------- */
/* The hooks' context: the simulator options, and whether the setup failed to resolve (its
 * message then names the flags already). */
struct exec_ctx {
    struct cli_sim *sim;           /* --hw and its overrides, the training settings */
    bool resolve_failed;           /* on_resolve returned an error */
};

static void on_say(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static int on_exec_err(void *ctx, struct rl_err *e)
{
    (void)ctx;
    return cli_run_err(e);
}

static int on_rank_failed(void *ctx, int rank, const struct rl_err *e)
{
    (void)ctx;
    fprintf(stderr, "ratiolab validate: rank %d: %s\n", rank, e->msg);
    return e->code == RL_EINVAL ? 2 : e->code == RL_ECHECK ? 1 : 3;
}

static int on_resolve(void *ctx, const struct plan_inputs *s, struct plan_setup *c, struct rl_err *e)
{
    int rc = cli_setup_resolve(s, c, e);
    ((struct exec_ctx *)ctx)->resolve_failed = rc != 0;
    return rc;
}

/* --hw's options (--gpu-mem, --pcie-gen, ...) over the profile the campaign names. */
static int on_load_hw(void *ctx, const char *name_or_path, const struct plan_setup *c, struct hw_profile *hw,
                      struct rl_err *e)
{
    struct cli_sim *sim = ((struct exec_ctx *)ctx)->sim;
    const char *given = sim->hw;
    sim->hw = name_or_path;
    int rc = cli_sim_load_hw(sim, c, hw, e);
    sim->hw = given;
    return rc;
}

/* The campaign's fields in its messages, as the flags that set them. */
static int campaign_err(struct rl_err *e)
{
    static const char *const flags[][2] = {
        {"ranks", "--ranks"}, {"out_dir", "--out"}, {"also_hw", "--also-hw"}, {"calibration", "validate --calibrate"},
    };
    for (size_t i = 0; i < RL_COUNT(flags); i++)
        cli_err_flag(e, flags[i][0], flags[i][1]);
    return e->code;
}

/* The options checked, the campaign (the setup resolved in the executor's layout), the report. */
int cli_validate_exec_run(struct cli_validate_exec *x, struct plan_inputs *s, struct cli_sim *sim,
                          const char *const *fwd, int n_fwd, bool schedule_given, bool json)
{
    struct rl_err e = {0};
    struct camp_opts *o = &x->o;
    if (!x->ratios || !o->out_dir) {
        rl_errf(&e, RL_EINVAL, "give --deepspeed-log FILE, or --ratios LIST and --out DIR (see --help)");
        return cli_fail("validate", &e);
    }
    double *ratios = NULL;
    size_t n_ratios = 0;
    if (rl_parse_ratio_list("--ratios", x->ratios, 0, 1, &ratios, &n_ratios, &e))
        return cli_fail("validate", &e);
    int n_pol = o->n_policies > 0 ? o->n_policies : 1, n_sch = o->n_schedules > 0 ? o->n_schedules : 1;
    if (n_ratios * (size_t)n_pol * (size_t)n_sch > VAL_MAX_ROWS)
        rl_errf(&e, RL_EINVAL, "--ratios: %zu ratios x %d policies x %d schedules; allowed: at most %d runs", n_ratios,
                n_pol, n_sch, VAL_MAX_ROWS);
    else if (!check_backend(o, sim, &e) && s->n_more_versions > 0)   /* one executor run per row: one release's step */
        rl_errf(&e, RL_EINVAL, "--deepspeed-version: validate --ratios runs one DeepSpeed release's step, the list "
                "names %d; allowed: one X.Y.Z", s->n_more_versions + 1);
    if (e.code) {
        free(ratios);
        return cli_fail("validate", &e);
    }
    o->ratios = ratios;
    o->n_ratios = n_ratios;
    o->hw = sim->hw;
    o->hw_given = sim->hw_given;
    o->seq_len = s->seq_len;
    if (!schedule_given)   /* the executor's schedule */
        sim->train.schedule = STEP_SCHED_OVERLAP;
    struct exec_ctx ctx = {.sim = sim};
    const struct camp_hooks hooks = {.say = on_say, .resolve = on_resolve, .exec_err = on_exec_err,
                                     .load_hw = on_load_hw, .rank_failed = on_rank_failed, .ctx = &ctx};
    struct camp *k = NULL;
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    int code = 0;
    int rc = camp_validate(&k, o, &hooks, s, &c, &sim->train, fwd, n_fwd, &e);
    if (rc && !ctx.resolve_failed)
        campaign_err(&e);
    const struct val_report *rep = rc ? NULL : camp_report(k);
    if (rc) {
        code = cli_fail("validate", &e);
    } else if (rep) {
        print_report(rep, o->out_dir, json);
        code = val_report_failed(rep) ? 1 : 0;
    }
    camp_close(k);
    plan_setup_free(&c);
    free(ratios);
    return code;
}
