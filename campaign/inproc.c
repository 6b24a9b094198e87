/* campaign/inproc.c — the in-process entry of the campaign's two (camp_modes): validate was
 * started by mpirun, so every rank is a validate process and runs the executor itself (ex_run),
 * rank 0 predicts and reports; the calibration of one rank's work runs on every rank at once. */
#include <malloc.h>   /* malloc_trim */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/campaign_impl.h"

/* This process's VmRSS (bytes, -1 unknown), and a reset of its peak (VmHWM) for the next run. */
static int64_t self_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? -1 : (int64_t)kb * 1024;
}
static void reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");   /* "5": VmHWM := VmRSS (Linux >= 4.0) */
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}


/* Under mpirun, the reference digest on rank 0, in this process (scalar Adam). The baseline of
 * each run is then its rank's RSS right before it, with the freed heap handed back (malloc_trim)
 * and the peak reset. */
static int inproc_reference(struct camp *k, struct rl_err *e)
{
    if (!k->rank0)
        return 0;
    camp__say(k, "validate: reference digest (scalar Adam, in this process)");
    struct ex_opts ro = k->xo;
    ro.ref_dtype = k->c.zero.dtype;
    uint32_t d = 0;
    int64_t steps = 0;
    RL_TRY(ex_reference(&k->scaled, &ro, ro.warmup + ro.steps, &d, &steps, e));
    k->rep->reference_digest = d;
    k->rep->have_reference = true;
    return 0;
}

/* Under mpirun: the baseline run in this process (every tensor one row, as the launched one):
 * its peak RSS growth beyond its ledger buffers is what a run adds besides its ledger. */
static int inproc_baseline(struct camp *k, struct rl_err *e)
{
    struct plan_model tiny;
    memset(&tiny, 0, sizeof tiny);
    struct plan q;
    memset(&q, 0, sizeof q);
    struct ex_result r;
    memset(&r, 0, sizeof r);
    double fb = camp__one_row_scale(k);
    camp__say(k, "validate: baseline run (every tensor one row, in this mpirun)");
    int rc = ex_scale_model(&k->c.model, fb, &tiny, e);
    if (!rc)
        rc = plan_exec_plan(&k->c, &tiny, fb, 0, PLAN_POLICY_AUTO, &q, e);
    malloc_trim(0);
    reset_peak_rss();
    int64_t before = self_rss();
    if (!rc && (rc = ex_run(&q, &k->xo, &k->comm, &r, e)))
        camp__exec_err(k, e);
    if (!rc) {
        int64_t own = 0;
        for (int b = 0; b < r.self.n_bufs; b++)
            if (r.self.bufs[b].ledger_bytes >= 0 &&
                (k->o.backend == EX_BACKEND_CPU || r.self.bufs[b].device != PLAN_DEV_GPU))
                own += r.self.bufs[b].bytes;
        k->extra_rss = r.self.mem.peak_rss_bytes >= 0 && before >= 0 ? r.self.mem.peak_rss_bytes - before - own : 0;
    }
    ex_result_free(&r);
    plan_free(&q);
    plan_model_free(&tiny);
    return rc;
}

/* Measurement in this process, on every rank (under mpirun); rank 0 fills the row. A failed run
 * aborts the world. */
static int inproc_measure(struct camp *k, struct val_row *w, const char *mtrace, struct rl_err *e)
{
        struct plan q;
    struct ex_opts o = k->xo;
    o.schedule = k->train->schedule;
    o.trace_path = mtrace;
    struct ex_result r;
    memset(&r, 0, sizeof r);
    camp__say(k, "validate: ratio %g, %s, %s: %d rank%s (in this mpirun) ...", w->ratio, w->schedule, w->policy,
              k->o.ranks, k->o.ranks == 1 ? "" : "s");
    int rc = plan_exec_plan(&k->c, &k->scaled, k->o.scale, w->ratio, PLAN_POLICY_AUTO, &q, e);
    malloc_trim(0);
    reset_peak_rss();
    int64_t mine = self_rss();
    mine = mine >= 0 ? mine + k->extra_rss : -1;
    void *all = NULL;
    int64_t all_bytes = 0;
    if (!rc && !(rc = ex_comm_gatherv(&k->comm, &mine, sizeof mine, &all, &all_bytes, e)))
        for (int64_t q_rank = 0; k->rank0 && q_rank < all_bytes / (int64_t)sizeof mine && q_rank < VAL_MAX_RANKS; q_rank++)
            memcpy(&k->baseline[q_rank], (char *)all + q_rank * (int64_t)sizeof mine, sizeof mine);
    free(all);
    if (!rc && (rc = ex_run(&q, &o, &k->comm, &r, e)))
        camp__exec_err(k, e);
    plan_free(&q);
    if (rc) {
        ex_result_free(&r);
        ex_comm_abort(&k->comm, k->h.rank_failed(k->h.ctx, k->comm.rank, e));
        return rc;
    }
    w->others_cpu_pct = -1;   /* the ranks are not this process's children: not measured */
    if (k->rank0)
        camp_row_from_result(w, &r, k->baseline);
    ex_result_free(&r);
    return 0;
}

/* The runs' options as `ratiolab run` would set them. */
static void inproc_prepare(struct camp *k, const char *const *fwd, int n_fwd)
{
    (void)fwd;   /* the options are the setup's, already resolved */
    (void)n_fwd;
    k->xo.compute = EX_COMPUTE_GEMM;
    k->xo.steps = k->o.steps;
    k->xo.micro_batch = k->c.zero.micro_batch > 0 ? k->c.zero.micro_batch : 1;
    k->xo.seq_len = k->o.seq_len;
    k->xo.checkpoint_activations = k->c.checkpoint_activations;
    k->xo.backend = k->o.backend;
}

/* Every rank at once, as the runs will: the collectives at the run's sizes, then its work. */
static int inproc_calibrate_run(struct camp *k, const struct calib_run *rs, struct calib *cal, struct rl_err *e)
{
    RL_TRY(ex_comm_barrier(&k->comm, e));
    if (k->comm.size > 1)
        RL_TRY(calib_measure_collectives(&k->comm, false, cal, e));
    return calib_measure_run(&k->comm, rs, false, cal, e);
}

const struct camp__mode camp__inproc = {
    .name = "in-process",
    .prepare = inproc_prepare,
    .calibrate_run = inproc_calibrate_run,
    .reference = inproc_reference,
    .baseline = inproc_baseline,
    .measure = inproc_measure,
};
