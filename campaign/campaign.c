/* campaign/campaign.c — the validate campaign's phases (campaign.h): the world and the folder,
 * the setup, the calibration and the profiles, the report's header, the rows (each predicted here,
 * measured by the mode's entry: launched.c or inproc.c), the traces' list and the report files. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "campaign/campaign_impl.h"
#include "validation/exec_row.h"   /* val_row_predict */

/* How the runs start, by whether validate was itself started by mpirun. */
static const struct camp__mode *const camp_modes[2] = {[false] = &camp__launched, [true] = &camp__inproc};

void camp_opts_init(struct camp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = EX_BACKEND_CPU;
    o->steps = 3;
    o->gate_time_pct = -1;
    o->mem_tol_pct = 10;
    o->scale = 1;
    o->ranks = 1;
}

bool camp_under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int camp_open(struct camp **kp, const struct camp_opts *o, const struct camp_hooks *h, struct rl_err *e)
{
    struct camp *k = *kp = calloc(1, sizeof *k);
    if (!k)
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    k->o = *o;
    k->h = *h;
    k->comm.size = 1;
    k->lock_fd = -1;
    k->rep = calloc(1, sizeof *k->rep);
    if (o->also_hw)
        k->rep_also = calloc(1, sizeof *k->rep_also);
    if (!k->rep || (o->also_hw && !k->rep_also))
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    /* The world under an existing mpirun: every rank runs validate, the executor runs in this
     * process, rank 0 predicts, reports and writes. */
    k->in_mpi = camp_under_mpirun();
    k->mode = camp_modes[k->in_mpi];
    if (k->in_mpi) {
        RL_TRY(ex_comm_init(&k->comm, e));
        if (k->o.ranks != 1 && k->o.ranks != k->comm.size)
            return rl_errf(e, RL_EINVAL, "ranks %d: validate runs under mpirun with %d ranks; allowed: %d (or leave "
                           "it out)", k->o.ranks, k->comm.size, k->comm.size);
        k->o.ranks = k->comm.size;
    }
    k->rank0 = k->comm.rank == 0;
    /* The folder: created, locked against a second validate for as long as this one runs, and
     * the verdict of an earlier run removed, so a run that fails or is interrupted leaves no
     * report beside traces it did not judge. Before anything is measured. */
    if (k->rank0) {
        if (rl_outdir_lock(k->o.out_dir, &k->lock_fd, e))
            return rl_err_prefix(e, "out_dir");
        static const char *const verdicts[] = {"report.json", "report.md"};
        for (size_t i = 0; i < RL_COUNT(verdicts); i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", k->o.out_dir, verdicts[i]);
            if (unlink(path) != 0 && errno != ENOENT)
                return rl_errf(e, RL_EENV, "out_dir %s: cannot remove the earlier %s (%s)", k->o.out_dir, path,
                               strerror(errno));
        }
        RL_TRY(camp_outputs_forget(k->o.out_dir, e));   /* the earlier run's traces */
    }
    return 0;
}

void camp_exec_inputs(const struct camp *k, struct plan_inputs *s)
{
    if (s->layout.tp <= 0)
        s->layout.tp = 1;
    if (s->layout.dp <= 0 && s->layout.world <= 0)
        s->layout.dp = k->o.ranks;
    s->layout.nodes = 1;
    if (s->policy == PLAN_POLICY_AUTO)
        s->policy = PLAN_POLICY_EXACT;
}

/* The scaled model, this executable and the OpenBLAS threads of a rank. */
static int camp_setup(struct camp *k, struct rl_err *e)
{
    if (ex_scale_model(&k->c.model, k->o.scale, &k->scaled, e))
        return camp__exec_err(k, e);
    /* The scale shrinks the tensors (their first dimension), not hidden, heads or vocab: the
     * executor's GEMMs are the simulator's per block (exec/compute.c), attention and logits at
     * full size, so the simulator sees the scaled tensors and the architecture as it is. */
    if (k->c.layout.dp != k->o.ranks)
        return rl_errf(e, RL_EINVAL, "ranks %d: the layout has %d data-parallel ranks; allowed: equal (the executor "
                       "runs one rank per data-parallel rank)", k->o.ranks, k->c.layout.dp);
    ssize_t el = readlink("/proc/self/exe", k->exe, sizeof k->exe - 1);
    if (el <= 0)
        return rl_errf(e, RL_EENV, "validate: cannot find its own executable (/proc/self/exe)");
    k->exe[el] = 0;
    if (geteuid() == 0) {   /* Open MPI refuses root without these */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    /* The emulated device's kernels run on cores / ranks threads (at least 1): OpenBLAS in the runs
     * and in the calibration gets that many unless the environment already says. */
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    k->dev_threads = ncores > 0 && ncores / k->o.ranks >= 1 ? (int)(ncores / k->o.ranks) : 1;
    char blas_threads[16];
    snprintf(blas_threads, sizeof blas_threads, "%d", k->dev_threads);
    setenv("OPENBLAS_NUM_THREADS", blas_threads, 0);
    return 0;
}

/* Calibrating on cuda: `[mpirun -np N] ratiolab calibrate --backend cuda --base <hw>` at the run's
 * GEMM shapes (cuBLAS) and, under mpirun, NCCL, written to DIR/hw-calibrated.json. */
static int calibrate_gpu(struct camp *k, const struct calib_run *rs, struct rl_err *e)
{
    struct camp__argv cv = {0};
    camp__launcher(&cv, k->o.ranks);
    camp__arg(&cv, k->exe);
    camp__arg(&cv, "calibrate");
    camp__arg(&cv, "--backend");
    camp__arg(&cv, ex_backend_name(EX_BACKEND_CUDA));
    camp__arg(&cv, "--base");
    camp__arg(&cv, k->o.hw);
    camp__arg(&cv, "--quiet");
    camp__arg(&cv, "--out");
    camp__arg(&cv, k->hw_path);
    camp__gemm_args(&cv, rs);
    char *out = NULL;
    int st = camp__capture(cv.v, &out);
    free(out);
    if (st != 0)
        return rl_errf(e, st == 3 ? RL_EENV : RL_EINVAL, "calibration: ratiolab calibrate --backend cuda "
                       "--base %s failed (exit %d; its message is above)", k->o.hw, st);
    return 0;
}

/* The calibration: measures this machine for the emulated device, then what one rank of the run
 * does, and writes the profile to DIR/hw-calibrated.json (rank 0), which the predictions then use. */
static int calibrate(struct camp *k, struct rl_err *e)
{
    struct calib_opts co;
    calib_opts_default(&co);
    co.devices = k->o.ranks;
    co.device_threads = k->dev_threads;
    struct calib cal;
    bool cuda = k->o.backend == EX_BACKEND_CUDA;
    snprintf(k->hw_path, sizeof k->hw_path, "%s/hw-calibrated.json", k->o.out_dir);
    camp__say(k, "validate: calibrating this machine (%d %s%s) ...", k->o.ranks, cuda ? "GPU" : "device",
              k->o.ranks == 1 ? "" : "s");
    memset(&cal, 0, sizeof cal);
    if (k->rank0 && !cuda)
        RL_TRY(calib_measure(&co, &cal, e));
    /* Then what one rank of the run does, on every rank at once under the runs' own launch:
     * the GEMMs at the model's shapes, Adam and copies at the run's sizes, the shared memory,
     * the collectives at the run's message sizes. */
    struct plan p0;
    struct calib_run rs;
    int rc = plan_exec_plan(&k->c, &k->scaled, k->o.scale, 0, PLAN_POLICY_AUTO, &p0, e);
    if (rc) {
        plan_free(&p0);
        return rc;
    }
    int64_t mb = k->c.zero.micro_batch > 0 ? k->c.zero.micro_batch : 1;
    int64_t seq = k->scaled.arch.seq_len > 0 ? k->scaled.arch.seq_len : 1024;
    calib_run_of_plan(&p0, mb, seq, &rs);
    plan_free(&p0);
    if (cuda)
        return calibrate_gpu(k, &rs, e);
    RL_TRY(k->mode->calibrate_run(k, &rs, &cal, e));
    if (k->rank0) {
        char *text = NULL;
        struct rl_outfile of;
        rc = calib_profile(&cal, "calibrated", &text, e);
        if (!rc && !(rc = rl_outfile_open(&of, k->hw_path, e))) {
            fprintf(of.fp, "%s\n", text);
            rc = rl_outfile_commit(&of, e);
        }
        free(text);
        RL_TRY(rc);
    }
    if (k->in_mpi)   /* the profile is written before anyone reads it */
        RL_TRY(ex_comm_barrier(&k->comm, e));
    return 0;
}

/* What the executor runs, in a profile the predictions use: on cuda its GEMMs are fp32
 * (cublasSgemm) and its host Adam runs on the runs' threads (ratiolab run's default), not every core. */
static void adjust_hw(const struct camp *k, struct hw_profile *hw)
{
    if (k->o.backend != EX_BACKEND_CUDA)   /* the executor's GEMMs are fp32 (cublasSgemm), its host Adam on the runs' threads */
        return;
    hw->tensor_tflops = hw->fp32_tflops;
    hw->tensor_efficiency = hw->fp32_efficiency;
    struct ex_opts ro;
    ex_opts_default(&ro);
    sim_hw_use_rank_threads(hw, k->o.ranks, ro.threads);
}

/* Hardware: the calibrated profile (calibrate) or hw, and the simulator set up as the runs go. */
static int hardware(struct camp *k, struct rl_err *e)
{
    if (k->o.calibrate)
        RL_TRY(calibrate(k, e));
    else
        snprintf(k->hw_path, sizeof k->hw_path, "%s", k->o.hw);
    RL_TRY(k->h.load_hw(k->h.ctx, k->hw_path, &k->c, &k->hw, e));
    adjust_hw(k, &k->hw);
    if (k->o.also_hw) {   /* the same options over another profile */
        if (k->h.load_hw(k->h.ctx, k->o.also_hw, &k->c, &k->hw_also, e))
            return rl_err_prefix(e, "also_hw");
        adjust_hw(k, &k->hw_also);
    }
    k->train->micro_batch = k->c.zero.micro_batch > 0 ? k->c.zero.micro_batch : 1;
    k->train->comm_dtype_bytes = 4;   /* the executor reduce-scatters fp32 (exact sums) */
    return 0;
}

/* The report's header: what was run, on what, how. */
static void report_header(struct camp *k)
{
    struct val_report *rep = k->rep;
    snprintf(rep->model, sizeof rep->model, "%s, scaled 1/%g", k->c.model_desc, k->o.scale);
    snprintf(rep->hardware, sizeof rep->hardware, "%s%s", k->hw.name,
             k->o.backend == EX_BACKEND_CUDA ? " (GEMMs at its fp32 rate: the executor's are cublasSgemm)" : "");
    snprintf(rep->hardware_path, sizeof rep->hardware_path, "%s", k->hw_path);
    snprintf(rep->backend, sizeof rep->backend, "%s", ex_backend_name(k->o.backend));
    snprintf(rep->policy, sizeof rep->policy, "%s", plan_policy_name(k->c.popt.policy));
    for (int i = 1; i < k->o.n_policies; i++) {
        size_t l = strlen(rep->policy);
        snprintf(rep->policy + l, sizeof rep->policy - l, ",%s", plan_policy_name(k->o.policies[i]));
    }
    rep->ranks = k->o.ranks;
    rep->steps = k->o.steps;
    rep->scale = k->o.scale;
    rep->mem_tol_pct = k->o.mem_tol_pct;
    rep->gate_time_pct = k->o.gate_time_pct;
    rep->device_in_rss = k->o.backend == EX_BACKEND_CPU;
    if (k->o.backend == EX_BACKEND_CPU && !k->o.calibrate && !k->o.hw_given)
        snprintf(rep->time_skipped, sizeof rep->time_skipped, "the cpu backend ran on this machine, the prediction "
                 "is of the %s profile (the default), not of this machine; --calibrate measures this machine first, "
                 "--hw FILE names its profile", k->o.hw);
    rep->baseline_before_run = k->in_mpi;
    if (k->rep_also) {   /* the same header (no rows yet) over the other profile */
        *k->rep_also = *rep;
        snprintf(k->rep_also->hardware, sizeof k->rep_also->hardware, "%s%s", k->hw_also.name,
                 k->o.backend == EX_BACKEND_CUDA ? " (GEMMs at its fp32 rate: the executor's are cublasSgemm)" : "");
        snprintf(k->rep_also->hardware_path, sizeof k->rep_also->hardware_path, "%s", k->o.also_hw);
    }
}

/* Prediction: the plan the executor builds for the row (as `ratiolab run` builds it), simulated;
 * rank 0 writes its trace to ptrace. */
static int predict(struct camp *k, struct val_row *w, const struct hw_profile *hw, const char *ptrace, struct rl_err *e)
{
    struct plan p;
    int rc = plan_exec_plan(&k->c, &k->scaled, k->o.scale, w->ratio, PLAN_POLICY_AUTO, &p, e);
    if (!rc)
        rc = val_row_predict(&p, hw, k->train, k->rank0 ? ptrace : NULL, w, e);
    plan_free(&p);
    return rc;
}

/* The runs: ratio, then policy, then schedule; each predicted, then measured, one report row. */
static int run_rows(struct camp *k, struct rl_err *e)
{
    struct val_report *rep = k->rep;
    const double *ratios = k->o.ratios;
    const size_t n_ratios = k->o.n_ratios;
    int n_pol = k->o.n_policies > 0 ? k->o.n_policies : 1, n_sch = k->o.n_schedules > 0 ? k->o.n_schedules : 1;
    const enum plan_policy pol0 = k->c.popt.policy;
    const enum step_schedule sch0 = k->train->schedule;
    const size_t n_runs = n_ratios * (size_t)n_pol * (size_t)n_sch;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t ci = 0; ci < n_runs; ci++) {
        size_t ri = ci / (size_t)(n_pol * n_sch);
        int pi = (int)(ci / (size_t)n_sch % (size_t)n_pol), si = (int)(ci % (size_t)n_sch);
        k->c.popt.policy = k->o.n_policies ? k->o.policies[pi] : pol0;
        k->train->schedule = k->o.n_schedules ? k->o.schedules[si] : sch0;
        struct val_row *w = &rep->rows[rep->n_rows];
        memset(w, 0, sizeof *w);
        w->ratio = ratios[ri];
        snprintf(w->schedule, sizeof w->schedule, "%s", sim_schedule_name(k->train->schedule));
        snprintf(w->policy, sizeof w->policy, "%s", plan_policy_name(k->c.popt.policy));
        char ptrace[700], mtrace[700];
        snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s.json.gz", k->o.out_dir, ratios[ri], w->schedule);
        snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s.json.gz", k->o.out_dir, ratios[ri], w->schedule);
        if (k->o.n_policies > 1) {   /* one trace per policy too */
            snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s-%s.json.gz", k->o.out_dir, ratios[ri], w->schedule, w->policy);
            snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s-%s.json.gz", k->o.out_dir, ratios[ri], w->schedule, w->policy);
        }
        if (k->rank0) {   /* listed before they are written: an interrupted run's are removed next time too */
            RL_TRY(camp_outputs_note(k->o.out_dir, ptrace, e));
            RL_TRY(camp_outputs_note(k->o.out_dir, mtrace, e));
        }
        RL_TRY(predict(k, w, &k->hw, ptrace, e));
        RL_TRY(k->mode->measure(k, w, mtrace, e));
        if (k->rank0 && strcmp(w->predicted.deepspeed_version, w->measured.deepspeed_version) != 0) {
            int rc = rl_errf(e, RL_EINTERNAL, "validate: ratio %g, %s: the simulator predicted DeepSpeed %s's step, "
                             "the executor ran %s's", w->ratio, w->schedule, w->predicted.deepspeed_version[0] ?
                             w->predicted.deepspeed_version : "no", w->measured.deepspeed_version[0] ?
                             w->measured.deepspeed_version : "no");
            if (k->in_mpi)   /* the other ranks would wait in the next run's collectives */
                ex_comm_abort(&k->comm, k->h.rank_failed(k->h.ctx, k->comm.rank, e));
            return rc;
        }
        rep->n_rows++;
        if (k->rep_also && k->rank0) {   /* the same row, predicted with also_hw (no trace) */
            struct val_row *w2 = &k->rep_also->rows[k->rep_also->n_rows];
            *w2 = *w;
            RL_TRY(predict(k, w2, &k->hw_also, NULL, e));
            k->rep_also->n_rows++;
        }
        if (k->rank0) {   /* progress: runs take about equally long, so the mean so far predicts the rest */
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double spent = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double left = spent / (double)(ci + 1) * (double)(n_runs - ci - 1);
            camp__say(k, "validate: run %zu of %zu done, %.0f s so far, about %.0f s left", ci + 1, n_runs, spent,
                      left);
        }
    }
    return 0;
}

/* A name a campaign writes into its folder: predicted-*.json.gz or measured-*.json.gz, no folder
 * part. */
static bool own_output(const char *name)
{
    size_t n = strlen(name);
    return !strchr(name, '/') && n > 8 && strcmp(name + n - 8, ".json.gz") == 0 &&
           (strncmp(name, "predicted-", 10) == 0 || strncmp(name, "measured-", 9) == 0);
}

int camp_outputs_forget(const char *dir, struct rl_err *e)
{
    char list[4200];
    snprintf(list, sizeof list, "%s/" CAMP_OUTPUTS, dir);
    FILE *f = fopen(list, "r");
    if (!f)
        return errno == ENOENT ? 0 : rl_errf(e, RL_EENV, "out_dir %s: cannot read %s (%s)", dir, list, strerror(errno));
    char line[1024];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!own_output(line))
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, line);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;   /* gone already, or a link or folder validate did not make: left alone */
        if (unlink(path) != 0 && errno != ENOENT)
            rc = rl_errf(e, RL_EENV, "out_dir %s: cannot remove the earlier trace %s (%s)", dir, path, strerror(errno));
    }
    fclose(f);
    if (!rc && unlink(list) != 0 && errno != ENOENT)
        rc = rl_errf(e, RL_EENV, "out_dir %s: cannot remove %s (%s)", dir, list, strerror(errno));
    return rc;
}

int camp_outputs_note(const char *dir, const char *path, struct rl_err *e)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char list[4200];
    snprintf(list, sizeof list, "%s/" CAMP_OUTPUTS, dir);
    FILE *f = fopen(list, "a");
    if (!f)
        return rl_errf(e, RL_EENV, "out_dir %s: cannot write %s (%s)", dir, list, strerror(errno));
    bool ok = fprintf(f, "%s\n", base) > 0;
    if (fclose(f) != 0 || !ok)
        return rl_errf(e, RL_EENV, "out_dir %s: cannot write %s", dir, list);
    return 0;
}

/* The checks, then DIR/report.json and DIR/report.md; with also_hw the same into DIR/also/. */
static int write_one(struct val_report *rep, const char *dir, struct rl_err *e);
static int write_report(struct camp *k, struct rl_err *e)
{
    RL_TRY(write_one(k->rep, k->o.out_dir, e));
    if (!k->rep_also)
        return 0;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/also", k->o.out_dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rl_errf(e, RL_EENV, "out_dir %s: cannot make %s (%s)", k->o.out_dir, dir, strerror(errno));
    RL_TRY(write_one(k->rep_also, dir, e));
    camp__say(k, "validate: the same runs predicted with %s: %s/report.md", k->o.also_hw, dir);
    return 0;
}

static int write_one(struct val_report *rep, const char *dir, struct rl_err *e)
{
    val_report_check(rep);
    char path[700];
    char *text = NULL;
    struct rl_outfile of;
    snprintf(path, sizeof path, "%s/report.json", dir);
    int rc = val_report_json(rep, &text, e);
    if (!rc && !(rc = rl_outfile_open(&of, path, e))) {
        fprintf(of.fp, "%s\n", text);
        rc = rl_outfile_commit(&of, e);
    }
    free(text);
    text = NULL;
    RL_TRY(rc);
    snprintf(path, sizeof path, "%s/report.md", dir);
    rc = val_report_md(rep, &text, e);
    if (!rc && !(rc = rl_outfile_open(&of, path, e))) {
        fputs(text, of.fp);
        rc = rl_outfile_commit(&of, e);
    }
    free(text);
    return rc;
}

int camp_run(struct camp *k, const struct plan_setup *c, struct sim_train *t, const char *const *fwd, int n_fwd,
             struct rl_err *e)
{
    k->c = *c;
    k->train = t;
    RL_TRY(camp_setup(k, e));
    RL_TRY(hardware(k, e));
    report_header(k);
    ex_opts_default(&k->xo);
    for (int q = 0; q < VAL_MAX_RANKS; q++)
        k->baseline[q] = -1;
    k->mode->prepare(k, fwd, n_fwd);
    RL_TRY(k->mode->reference(k, e));
    RL_TRY(k->mode->baseline(k, e));
    RL_TRY(run_rows(k, e));
    if (!k->rank0)   /* rank 0 reports */
        return 0;
    return write_report(k, e);
}

int camp_validate(struct camp **k, const struct camp_opts *o, const struct camp_hooks *h, struct plan_inputs *s,
                  struct plan_setup *c, struct sim_train *t, const char *const *fwd, int n_fwd, struct rl_err *e)
{
    RL_TRY(camp_open(k, o, h, e));
    camp_exec_inputs(*k, s);
    RL_TRY(h->resolve(h->ctx, s, c, e));
    return camp_run(*k, c, t, fwd, n_fwd, e);
}

const struct val_report *camp_report(const struct camp *k)
{
    return k->rank0 ? k->rep : NULL;
}

void camp_close(struct camp *k)
{
    if (!k)
        return;
    if (k->in_mpi)
        ex_comm_finalize(&k->comm);
    if (k->lock_fd >= 0)
        close(k->lock_fd);
    free(k->rep);
    free(k->rep_also);
    plan_model_free(&k->scaled);
    free(k);
}
