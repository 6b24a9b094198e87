/* campaign/launched.c — the launched entry of the campaign's two (camp_modes): every run is a
 * child `ratiolab run --json` (under mpirun for ranks > 1) whose stdout is read back, and the
 * calibration of one rank's work a child `ratiolab calibrate --collectives-only`. Also the argv
 * and capture helpers the cuda calibration (campaign.c) launches with. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "campaign/campaign_impl.h"
#include "exec/result_json.h"   /* ex_result_from_json */

/* ---- how busy the machine was ----------------------------------------------------------------- */
/* The machine's busy CPU seconds (/proc/stat: all but idle and iowait; steal counts, the cores
 * were not ours then) and this process's waited-for children's CPU seconds. */
struct cpu_mark {
    double busy_s;                 /* machine, all cores; < 0 unknown */
    double children_s;             /* user + system of the children */
    double wall_s;                 /* CLOCK_MONOTONIC */
};
static void cpu_mark(struct cpu_mark *m)
{
    m->busy_s = -1;
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                    &v[6], &v[7]) == 8) {
        long hz = sysconf(_SC_CLK_TCK);
        m->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)(hz > 0 ? hz : 100);
    }
    if (f)
        fclose(f);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    m->children_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                    ru.ru_stime.tv_usec * 1e-6;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    m->wall_s = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
/* Other processes' share of the cores between two marks, percent (< 0 unknown). */
static double others_pct(const struct cpu_mark *a, const struct cpu_mark *b)
{
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    double wall = b->wall_s - a->wall_s;
    if (a->busy_s < 0 || b->busy_s < 0 || wall <= 0 || nc <= 0)
        return -1;
    double others = (b->busy_s - a->busy_s) - (b->children_s - a->children_s);
    double pct = others / (wall * (double)nc) * 100;
    return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

/* ---- the launched mode ------------------------------------------------------------------------ */
/* The common part of every launched `ratiolab run` (fwd: the model, layout and config options as
 * given), and whether that executor writes traces (--trace). */
static void launched_prepare(struct camp *k, const char *const *fwd, int n_fwd)
{
    struct camp__argv *base = &k->base;
    camp__launcher(base, k->o.ranks);
    k->n_launch = base->n;
    camp__arg(base, k->exe);
    camp__arg(base, "run");
    for (int i = 0; i < n_fwd; i++)
        camp__arg(base, fwd[i]);
    camp__arg(base, "--tp");
    camp__argf(base, "%d", k->c.layout.tp);
    camp__arg(base, "--policy");
    camp__arg(base, plan_policy_name(k->c.popt.policy));
    camp__arg(base, "--backend");
    camp__arg(base, ex_backend_name(k->o.backend));
    camp__arg(base, "--scale");
    camp__argf(base, "%.17g", k->o.scale);
    camp__arg(base, "--steps");
    camp__argf(base, "%d", k->o.steps);
    camp__arg(base, "--compute");
    camp__arg(base, "gemm");

    char *out;
    char *hv[] = {k->exe, "run", "--help", NULL};
    k->run_traces = camp__capture(hv, &out) == 0 && out && strstr(out, "--trace");
    free(out);
}

/* The calibration of what one rank of the run does, launched like the runs
 * (`mpirun ... ratiolab calibrate --collectives-only`), read back into *cal. */
static int launched_calibrate_run(struct camp *k, const struct calib_run *rs, struct calib *cal,
                                 struct rl_err *e)
{
    char nums[5][32];
    snprintf(nums[0], sizeof nums[0], "%lld", (long long)rs->device_adam_numel);
    snprintf(nums[1], sizeof nums[1], "%lld", (long long)rs->host_adam_numel);
    snprintf(nums[2], sizeof nums[2], "%lld", (long long)(rs->allgather_bytes > 0 ? rs->allgather_bytes : 1));
    snprintf(nums[3], sizeof nums[3], "%lld", (long long)(rs->reduce_scatter_bytes >= 4 ? rs->reduce_scatter_bytes : 4));
    snprintf(nums[4], sizeof nums[4], "%lld", (long long)rs->working_set_bytes);
    struct camp__argv cv = {0};
    camp__launcher(&cv, k->o.ranks);
    camp__arg(&cv, k->exe);
    camp__arg(&cv, "calibrate");
    camp__arg(&cv, "--collectives-only");
    camp__arg(&cv, "--quiet");
    camp__gemm_args(&cv, rs);
    camp__arg(&cv, "--adam-numel");
    camp__arg(&cv, nums[0]);
    camp__arg(&cv, "--chunk-numel");
    camp__arg(&cv, nums[1]);
    camp__arg(&cv, "--allgather-bytes");
    camp__arg(&cv, nums[2]);
    camp__arg(&cv, "--reduce-scatter-bytes");
    camp__arg(&cv, nums[3]);
    camp__arg(&cv, "--working-set");
    camp__arg(&cv, nums[4]);
    char *out = NULL;
    int st = camp__capture(cv.v, &out);
    if (st != 0 || !out || calib_read_collectives(out, cal, e)) {
        free(out);
        return rl_errf(e, RL_EENV, "calibration: mpirun ... ratiolab calibrate --collectives-only failed "
                       "(exit %d)", st);
    }
    free(out);
    return 0;
}

/* The reference digest: one process, scalar Adam. */
static int launched_reference(struct camp *k, struct rl_err *e)
{
    struct camp__argv r = {0};
    for (int i = k->n_launch; i < k->base.n; i++)   /* without mpirun */
        camp__arg(&r, k->base.v[i]);
    camp__arg(&r, "--reference");
    char *out;
    camp__say(k, "validate: reference digest (one process, scalar Adam)");
    int st = camp__capture(r.v, &out);
    const char *d = out ? strstr(out, "digest ") : NULL;
    unsigned dg;
    if (st != 0 || !d || sscanf(d, "digest %8x", &dg) != 1) {
        free(out);
        return rl_errf(e, RL_EENV, "validate: ratiolab run --reference failed (exit %d)", st);
    }
    k->rep->reference_digest = dg;
    k->rep->have_reference = true;
    free(out);
    return 0;
}

/* The baseline: the same launch with every tensor cut to one row (the reduce bucket keeps the
 * flush count of an ordinary run); its RSS at the end minus its ledger buffers (on the cpu backend
 * the device's too) is the program, its libraries, MPI's shared memory, OpenBLAS, thread stacks
 * and the resident part of the compute scratch, whose size follows the tokens, hidden and vocab,
 * not the scale (a GEMM operand that is only read stays on the zero page and is not resident).
 * A failed baseline leaves the ranks' baselines unknown. */
static int launched_baseline(struct camp *k, struct rl_err *unused)
{
    (void)unused;   /* a failed baseline is no error */
    struct camp__argv a = k->base;
    char bscale[32];
    snprintf(bscale, sizeof bscale, "%.17g", camp__one_row_scale(k));
    for (int i = 0; i < a.n; i++)
        if (strcmp(a.v[i], "--scale") == 0 && i + 1 < a.n)
            a.v[i + 1] = bscale;
    camp__arg(&a, "--ratio");
    camp__arg(&a, "0");
    camp__arg(&a, "--json");
    char *out;
    camp__say(k, "validate: baseline run (every tensor one row)");
    int st = camp__capture(a.v, &out);
    struct ex_result r;
    struct rl_err e = {0};
    if (st != 0 || !out || ex_result_from_json(out, &r, &e)) {
        free(out);
        return 0;
    }
    free(out);
    bool dev_host = k->o.backend == EX_BACKEND_CPU;   /* the emulated device is host memory */
    for (int q_rank = 0; q_rank < r.world && q_rank < VAL_MAX_RANKS; q_rank++) {
        const struct ex_rank_result *q = &r.ranks[q_rank];
        if (q->mem.rss_bytes < 0)
            continue;
        int64_t own = 0;
        for (int b = 0; b < q->n_bufs; b++)
            if (q->bufs[b].ledger_bytes >= 0 && (dev_host || q->bufs[b].device != PLAN_DEV_GPU))
                own += q->bufs[b].bytes;
        k->baseline[q_rank] = q->mem.rss_bytes - own;
    }
    ex_result_free(&r);
    return 0;
}


/* Measurement by a launched `ratiolab run --json` (under mpirun for ranks > 1), with the share
 * of the cores other processes used meanwhile. */
static int launched_measure(struct camp *k, struct val_row *w, const char *mtrace, struct rl_err *e)
{
    struct camp__argv a = k->base;
    camp__arg(&a, "--ratio");
    camp__argf(&a, "%.17g", w->ratio);
    camp__arg(&a, "--schedule");
    camp__arg(&a, w->schedule);
    camp__arg(&a, "--policy");
    camp__arg(&a, w->policy);
    if (k->run_traces) {
        camp__arg(&a, "--trace");
        camp__arg(&a, mtrace);
    }
    camp__arg(&a, "--json");
    camp__say(k, "validate: ratio %g, %s, %s: %d rank%s ...", w->ratio, w->schedule, w->policy, k->o.ranks,
            k->o.ranks == 1 ? "" : "s");
    char *out;
    struct cpu_mark m0, m1;
    cpu_mark(&m0);
    int st = camp__capture(a.v, &out);
    cpu_mark(&m1);
    w->others_cpu_pct = others_pct(&m0, &m1);
    struct ex_result r;
    int rc = st == 0 && out ? ex_result_from_json(out, &r, e) : RL_EENV;
    free(out);
    if (!rc) {
        camp_row_from_result(w, &r, k->baseline);
        ex_result_free(&r);
    }
    if (rc)
        return rl_errf(e, st == 0 ? RL_EINTERNAL : RL_EENV, "validate: ratio %g: ratiolab run %s (exit %d)", w->ratio,
                       st == 0 ? "printed no JSON" : "failed", st);
    return 0;
}

const struct camp__mode camp__launched = {
    .name = "launched",
    .prepare = launched_prepare,
    .calibrate_run = launched_calibrate_run,
    .reference = launched_reference,
    .baseline = launched_baseline,
    .measure = launched_measure,
};
