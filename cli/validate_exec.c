/* cli/validate_exec.c — `ratiolab validate --ratios ...` (see validate_exec.h): for every ratio
 * (and schedule) runs the executor (`ratiolab run --json`, under mpirun when --ranks > 1),
 * predicts the same run with the simulator (the same scaled model, the same exec ledger), and
 * writes DIR/report.md, DIR/report.json and both sides' traces. */
#include <errno.h>
#include <jansson.h>
#include <malloc.h>   /* malloc_trim */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/validate_exec.h"
#include "sim/step.h"
#include "calib/calib.h"
#include "validation/val.h"

#include "exec/exec.h"
#include "exec/result_json.h"
#include "kernels/adam.h"   /* kern_cuda_device_count */
#include "validation/exec_row.h"

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
    x->backend = EX_BACKEND_CPU;
    x->steps = 3;
    x->gate_time_pct = -1;
    x->mem_tol_pct = 10;
    x->scale = 1;
    x->ranks = 1;
}

int cli_validate_exec_opt(struct cli_validate_exec *x, int id, const char *v, struct rl_err *e)
{
    x->given = true;
    switch (id) {
    case X_RATIOS: x->ratios = v; return 0;
    case X_RANKS: return rl_parse_int("--ranks", v, 1, VAL_MAX_RANKS, &x->ranks, e);
    case X_BACKEND:
        return ex_backend_parse_named("--backend", v, &x->backend, e);
    case X_CALIBRATE: x->calibrate = true; return 0;
    case X_STEPS: return rl_parse_int("--steps", v, 1, 100000, &x->steps, e);
    case X_OUT: x->out = v; return 0;
    case X_GATE_TIME: return rl_parse_double("--gate-time", v, 0, 1e6, &x->gate_time_pct, e);
    case X_MEM_TOL: return rl_parse_double("--mem-tolerance", v, 0, 1e6, &x->mem_tol_pct, e);
    case X_SCALE: return rl_parse_double("--scale", v, 1, 1e12, &x->scale, e);
    case X_ALSO_HW: x->also_hw = v; return 0;
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

bool cli_validate_exec_given(const struct cli_validate_exec *x) { return x->given; }

/* Splits a comma list into at most VAL_EXEC_MAX_LIST items of up to 63 characters. */
static int split_list(const char *field, const char *v, char items[][64], int *n, struct rl_err *e)
{
    *n = 0;
    const char *q = v;
    while (true) {
        const char *c = strchr(q, ',');
        size_t len = c ? (size_t)(c - q) : strlen(q);
        if (len == 0 || len > 63 || *n == VAL_EXEC_MAX_LIST)
            return rl_errf(e, RL_EINVAL, "%s: '%s' is not allowed; allowed: up to %d names separated by commas",
                           field, v, VAL_EXEC_MAX_LIST);
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
    char items[VAL_EXEC_MAX_LIST][64];
    int n, rc;
    if ((rc = split_list("--policy", v, items, &n, e)))
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = plan_policy_parse(items[i], &x->policies[i], e)))
            return cli_err_flag(e, "policy", "--policy");
    x->n_policies = n;
    *first = x->policies[0];
    return 0;
}

int cli_validate_exec_schedules(struct cli_validate_exec *x, const char *v, enum step_schedule *first,
                                struct rl_err *e)
{
    char items[VAL_EXEC_MAX_LIST][64];
    int n, rc;
    if ((rc = split_list("--schedule", v, items, &n, e)))
        return rc;
    for (int i = 0; i < n; i++)
        if ((rc = sim_schedule_parse(items[i], &x->schedules[i], e)))
            return cli_err_flag(e, "schedule", "--schedule");
    x->n_schedules = n;
    *first = x->schedules[0];
    return 0;
}

/* ---- running a command and capturing its stdout ------------------------------------------------ */
/* Runs argv (argv[0] looked up in PATH) with stdout captured into *out (malloc'd); stderr passes
 * through. Returns the exit status (128 + signal when killed), or -1 when it could not start. */
static int capture(char *const *argv, char **out)
{
    *out = NULL;
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && n + 4096 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
        char sink[4096];
        ssize_t k = read(fd[0], buf ? buf + n : sink, 4096);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += buf ? (size_t)k : 0;
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (buf)
        buf[n] = 0;
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

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

/* ---- argv for `ratiolab run` -------------------------------------------------------------------- */
#define MAX_ARGS 160
struct argv_b {
    char *v[MAX_ARGS + 1];   /* NULL-terminated */
    int n;                   /* entries */
    char store[MAX_ARGS][64];/* storage for formatted numbers */
};
static void arg(struct argv_b *a, const char *s)
{
    if (a->n < MAX_ARGS)
        a->v[a->n++] = (char *)s;
    a->v[a->n] = NULL;
}
static void argf(struct argv_b *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void argf(struct argv_b *a, const char *fmt, ...)
{
    if (a->n >= MAX_ARGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->store[a->n], sizeof a->store[a->n], fmt, ap);
    va_end(ap);
    arg(a, a->store[a->n]);
}

/* mpirun for `ranks` > 1 (none for one): oversubscription allowed (ranks, copy threads and
 * OpenBLAS may outnumber the cores), a waiting rank yields its core instead of spinning, and the
 * OpenBLAS thread count travels to the ranks. The runs and their calibration launch alike. */
static void launcher(struct argv_b *a, int ranks)
{
    if (ranks <= 1)
        return;
    arg(a, "mpirun");
    arg(a, "--oversubscribe");
    arg(a, "--mca");
    arg(a, "mpi_yield_when_idle");
    arg(a, "1");
    arg(a, "-x");
    arg(a, "OPENBLAS_NUM_THREADS");
    arg(a, "-np");
    argf(a, "%d", ranks);
}

/* --gemm (last false) or --gemm-last (true) MxNxK[xC],... for `ratiolab calibrate`. */
static void gemm_arg(const struct calib_run *r, bool last, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < r->n_gemm; i++) {
        if (r->gemm[i].last != last)
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%lldx%lldx%lldx%lld", l ? "," : "", (long long)r->gemm[i].m,
                 (long long)r->gemm[i].n, (long long)r->gemm[i].k, (long long)r->gemm[i].count);
    }
}

/* The run's GEMM list for `ratiolab calibrate`: --gemm (one layer's with --layers) and, when the
 * model has uniform layers, --layers N and --gemm-last (the logits). The lists live in static
 * buffers until the next call. */
static void gemm_args(struct argv_b *a, const struct calib_run *rs)
{
    static char gemms[CALIB_MAX_GEMMS * 64], last[CALIB_MAX_GEMMS * 64];
    gemm_arg(rs, false, gemms, sizeof gemms);
    gemm_arg(rs, true, last, sizeof last);
    if (!gemms[0])
        return;
    arg(a, "--gemm");
    arg(a, gemms);
    if (rs->layers > 0) {
        arg(a, "--layers");
        argf(a, "%.0f", (double)rs->layers);
        if (last[0]) {
            arg(a, "--gemm-last");
            arg(a, last);
        }
    }
}

/* Started by an MPI launcher (as exec/comm.c tells it): validate is then one of the ranks and runs
 * the executor in this process instead of launching mpirun again. */
static bool under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

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

/* What the phases of `validate --ratios` share, from the setup to the report. */
struct vx {
    struct cli_validate_exec *x;     /* the flags (ranks set from the world under mpirun) */
    struct plan_inputs *s;           /* the inputs (the executor's layout and policy filled in) */
    struct cli_sim *sim;             /* the simulator's options (hardware, schedule of the row) */
    struct plan_setup c;             /* the resolved model, layout and ZeRO config */
    struct plan_model scaled;        /* c's model shrunk by --scale */
    struct hw_profile hw;            /* the hardware the predictions use */
    char hw_path[600];               /* where it came from (DIR/hw-calibrated.json with --calibrate) */
    struct val_report *rep;          /* what rank 0 reports */
    struct hw_profile hw_also;       /* --also-hw's profile, adjusted as hw is (when given) */
    struct val_report *rep_also;     /* rank 0: rep's runs predicted with hw_also; NULL without --also-hw */
    struct ex_comm comm;             /* the world under an existing mpirun; size 1 otherwise */
    bool in_mpi;                     /* started under mpirun: the executor runs in this process */
    bool rank0;                      /* this process predicts, reports and writes */
    char exe[4096];                  /* this executable, for the launched runs */
    int dev_threads;                 /* OpenBLAS threads of a rank (the emulated device's kernels) */
    struct argv_b base;              /* the common part of every launched `ratiolab run` */
    int n_launch;                    /* base's leading mpirun arguments */
    bool run_traces;                 /* the launched executor writes traces (--trace) */
    struct ex_opts xo;               /* the runs' options in this process (under mpirun) */
    int64_t baseline[VAL_MAX_RANKS]; /* per rank: RSS besides the ledger buffers, bytes; -1 unknown */
    int64_t extra_rss;               /* in this process: what a run adds besides its ledger, bytes */
    int lock_fd;                     /* rank 0: the --out folder's lock (rl_outdir_lock), -1 none */
};

/* Setup: the world under an existing mpirun (every rank runs validate: the executor runs in this
 * process, rank 0 predicts, reports and writes), the output folder, the executor's layout, the
 * resolved and scaled model, this executable and the OpenBLAS threads of a rank. */
static int vx_setup(struct vx *v, bool schedule_given, struct rl_err *e)
{
    struct cli_validate_exec *x = v->x;
    struct plan_inputs *s = v->s;
    if (s->n_more_versions > 0)   /* one executor run per row: one release's step */
        return rl_errf(e, RL_EINVAL, "--deepspeed-version: validate --ratios runs one DeepSpeed release's step, the "
                       "list names %d; allowed: one X.Y.Z", s->n_more_versions + 1);
    v->in_mpi = under_mpirun();
    if (v->in_mpi) {
        RL_TRY(ex_comm_init(&v->comm, e));
        if (x->ranks != 1 && x->ranks != v->comm.size)
            return rl_errf(e, RL_EINVAL, "--ranks %d: validate runs under mpirun with %d ranks; allowed: %d (or leave "
                           "it out)", x->ranks, v->comm.size, v->comm.size);
        x->ranks = v->comm.size;
    }
    v->rank0 = v->comm.rank == 0;
    /* The folder: created, locked against a second validate for as long as this one runs, and
     * the verdict of an earlier run removed, so a run that fails or is interrupted leaves no
     * report beside traces it did not judge. Before anything is measured. */
    if (v->rank0) {
        if (rl_outdir_lock(x->out, &v->lock_fd, e))
            return rl_err_prefix(e, "--out");
        static const char *const verdicts[] = {"report.json", "report.md"};
        for (size_t i = 0; i < RL_COUNT(verdicts); i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", x->out, verdicts[i]);
            if (unlink(path) != 0 && errno != ENOENT)
                return rl_errf(e, RL_EENV, "--out %s: cannot remove the earlier %s (%s)", x->out, path, strerror(errno));
        }
        RL_TRY(cli_validate_outputs_forget(x->out, e));   /* the earlier run's traces */
    }
    /* The executor's layout: --ranks data-parallel processes on one node, TP 1 unless given. */
    if (s->layout.tp <= 0)
        s->layout.tp = 1;
    if (s->layout.dp <= 0 && s->layout.world <= 0)
        s->layout.dp = x->ranks;
    s->layout.nodes = 1;
    if (s->policy == PLAN_POLICY_AUTO)
        s->policy = PLAN_POLICY_EXACT;
    if (!schedule_given)
        v->sim->train.schedule = STEP_SCHED_OVERLAP;
    RL_TRY(cli_setup_resolve(s, &v->c, e));
    if (ex_scale_model(&v->c.model, x->scale, &v->scaled, e))
        return cli_run_err(e);
    /* --scale shrinks the tensors (their first dimension), not hidden, heads or vocab: the
     * executor's GEMMs are the simulator's per block (exec/compute.c), attention and logits at
     * full size, so the simulator sees the scaled tensors and the architecture as it is. */
    if (v->c.layout.dp != x->ranks)
        return rl_errf(e, RL_EINVAL, "--ranks %d: the layout has %d data-parallel ranks; allowed: equal (the executor "
                       "runs one rank per data-parallel rank)", x->ranks, v->c.layout.dp);
    ssize_t el = readlink("/proc/self/exe", v->exe, sizeof v->exe - 1);
    if (el <= 0)
        return rl_errf(e, RL_EENV, "validate: cannot find its own executable (/proc/self/exe)");
    v->exe[el] = 0;
    if (geteuid() == 0) {   /* Open MPI refuses root without these */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    /* The emulated device's kernels run on cores / ranks threads (at least 1): OpenBLAS in the runs
     * and in the calibration gets that many unless the environment already says. */
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    v->dev_threads = ncores > 0 && ncores / x->ranks >= 1 ? (int)(ncores / x->ranks) : 1;
    char blas_threads[16];
    snprintf(blas_threads, sizeof blas_threads, "%d", v->dev_threads);
    setenv("OPENBLAS_NUM_THREADS", blas_threads, 0);
    return 0;
}

/* The calibration of what one rank of the run does, launched like the runs
 * (`mpirun ... ratiolab calibrate --collectives-only`), read back into *cal. */
static int vx_calibrate_launched(struct vx *v, const struct calib_run *rs, struct calib *cal,
                                 struct rl_err *e)
{
    char nums[5][32];
    snprintf(nums[0], sizeof nums[0], "%lld", (long long)rs->device_adam_numel);
    snprintf(nums[1], sizeof nums[1], "%lld", (long long)rs->host_adam_numel);
    snprintf(nums[2], sizeof nums[2], "%lld", (long long)(rs->allgather_bytes > 0 ? rs->allgather_bytes : 1));
    snprintf(nums[3], sizeof nums[3], "%lld", (long long)(rs->reduce_scatter_bytes >= 4 ? rs->reduce_scatter_bytes : 4));
    snprintf(nums[4], sizeof nums[4], "%lld", (long long)rs->working_set_bytes);
    struct argv_b cv = {0};
    launcher(&cv, v->x->ranks);
    arg(&cv, v->exe);
    arg(&cv, "calibrate");
    arg(&cv, "--collectives-only");
    arg(&cv, "--quiet");
    gemm_args(&cv, rs);
    arg(&cv, "--adam-numel");
    arg(&cv, nums[0]);
    arg(&cv, "--chunk-numel");
    arg(&cv, nums[1]);
    arg(&cv, "--allgather-bytes");
    arg(&cv, nums[2]);
    arg(&cv, "--reduce-scatter-bytes");
    arg(&cv, nums[3]);
    arg(&cv, "--working-set");
    arg(&cv, nums[4]);
    char *out = NULL;
    int st = capture(cv.v, &out);
    if (st != 0 || !out || calib_read_collectives(out, cal, e)) {
        free(out);
        return rl_errf(e, RL_EENV, "validate --calibrate: mpirun ... ratiolab calibrate --collectives-only failed "
                       "(exit %d)", st);
    }
    free(out);
    return 0;
}

/* --calibrate --backend cuda: `[mpirun -np N] ratiolab calibrate --backend cuda --base <--hw>` at
 * the run's GEMM shapes (cuBLAS) and, under mpirun, NCCL, written to DIR/hw-calibrated.json. */
static int vx_calibrate_gpu(struct vx *v, const struct calib_run *rs, struct rl_err *e)
{
    struct argv_b cv = {0};
    launcher(&cv, v->x->ranks);
    arg(&cv, v->exe);
    arg(&cv, "calibrate");
    arg(&cv, "--backend");
    arg(&cv, ex_backend_name(EX_BACKEND_CUDA));
    arg(&cv, "--base");
    arg(&cv, v->sim->hw);
    arg(&cv, "--quiet");
    arg(&cv, "--out");
    arg(&cv, v->hw_path);
    gemm_args(&cv, rs);
    char *out = NULL;
    int st = capture(cv.v, &out);
    free(out);
    if (st != 0)
        return rl_errf(e, st == 3 ? RL_EENV : RL_EINVAL, "validate --calibrate: ratiolab calibrate --backend cuda "
                       "--base %s failed (exit %d; its message is above)", v->sim->hw, st);
    return 0;
}

/* --calibrate: measures this machine for the emulated device, then what one rank of the run does,
 * and writes the profile to DIR/hw-calibrated.json (rank 0), which the predictions then use. */
static int vx_calibrate(struct vx *v, struct rl_err *e)
{
    struct cli_validate_exec *x = v->x;
    struct calib_opts co;
    calib_opts_default(&co);
    co.devices = x->ranks;
    co.device_threads = v->dev_threads;
    struct calib cal;
    bool cuda = x->backend == EX_BACKEND_CUDA;
    snprintf(v->hw_path, sizeof v->hw_path, "%s/hw-calibrated.json", x->out);
    if (v->rank0)
        fprintf(stderr, "validate: calibrating this machine (%d %s%s) ...\n", x->ranks, cuda ? "GPU" : "device",
                x->ranks == 1 ? "" : "s");
    memset(&cal, 0, sizeof cal);
    if (v->rank0 && !cuda)
        RL_TRY(calib_measure(&co, &cal, e));
    /* Then what one rank of the run does, on every rank at once under the runs' own launch:
     * the GEMMs at the model's shapes, Adam and copies at the run's sizes, the shared memory,
     * the collectives at the run's message sizes. */
    struct plan p0;
    struct calib_run rs;
    int rc = plan_exec_plan(&v->c, &v->scaled, x->scale, 0, PLAN_POLICY_AUTO, &p0, e);
    if (rc) {
        plan_free(&p0);
        return rc;
    }
    int64_t mb = v->c.zero.micro_batch > 0 ? v->c.zero.micro_batch : 1;
    int64_t seq = v->scaled.arch.seq_len > 0 ? v->scaled.arch.seq_len : 1024;
    calib_run_of_plan(&p0, mb, seq, &rs);
    plan_free(&p0);
    if (cuda) {
        RL_TRY(vx_calibrate_gpu(v, &rs, e));
        v->sim->hw = v->hw_path;
        return 0;
    }
    if (v->in_mpi) {   /* every rank here, at once, as the runs will */
        RL_TRY(ex_comm_barrier(&v->comm, e));
        if (v->comm.size > 1)
            RL_TRY(calib_measure_collectives(&v->comm, false, &cal, e));
        RL_TRY(calib_measure_run(&v->comm, &rs, false, &cal, e));
    } else {
        RL_TRY(vx_calibrate_launched(v, &rs, &cal, e));
    }
    if (v->rank0) {
        char *text = NULL;
        struct rl_outfile of;
        rc = calib_profile(&cal, "calibrated", &text, e);
        if (!rc && !(rc = rl_outfile_open(&of, v->hw_path, e))) {
            fprintf(of.fp, "%s\n", text);
            rc = rl_outfile_commit(&of, e);
        }
        free(text);
        RL_TRY(rc);
    }
    if (v->in_mpi)   /* the profile is written before anyone reads it */
        RL_TRY(ex_comm_barrier(&v->comm, e));
    v->sim->hw = v->hw_path;
    return 0;
}

/* What the executor runs, in a profile the predictions use: on cuda its GEMMs are fp32
 * (cublasSgemm) and its host Adam runs on the runs' threads (ratiolab run's default), not every core. */
static void vx_adjust_hw(const struct vx *v, struct hw_profile *hw)
{
    if (v->x->backend != EX_BACKEND_CUDA)   /* the executor's GEMMs are fp32 (cublasSgemm), its host Adam on the runs' threads */
        return;
    hw->tensor_tflops = hw->fp32_tflops;
    hw->tensor_efficiency = hw->fp32_efficiency;
    struct ex_opts ro;
    ex_opts_default(&ro);
    sim_hw_use_rank_threads(hw, v->x->ranks, ro.threads);
}

/* Hardware: the calibrated profile (--calibrate) or --hw, and the simulator set up as the runs go. */
static int vx_hardware(struct vx *v, struct rl_err *e)
{
    if (v->x->calibrate)
        RL_TRY(vx_calibrate(v, e));
    else
        snprintf(v->hw_path, sizeof v->hw_path, "%s", v->sim->hw);
    RL_TRY(cli_sim_load_hw(v->sim, &v->c, &v->hw, e));
    vx_adjust_hw(v, &v->hw);
    if (v->x->also_hw) {   /* the same options over another profile */
        struct cli_sim also = *v->sim;
        also.hw = v->x->also_hw;
        if (cli_sim_load_hw(&also, &v->c, &v->hw_also, e))
            return rl_err_prefix(e, "--also-hw");
        vx_adjust_hw(v, &v->hw_also);
    }
    v->sim->train.micro_batch = v->c.zero.micro_batch > 0 ? v->c.zero.micro_batch : 1;
    v->sim->train.comm_dtype_bytes = 4;   /* the executor reduce-scatters fp32 (exact sums) */
    return 0;
}

/* The report's header: what was run, on what, how. */
static void vx_report_header(struct vx *v)
{
    struct cli_validate_exec *x = v->x;
    struct val_report *rep = v->rep;
    snprintf(rep->model, sizeof rep->model, "%s, scaled 1/%g", v->c.model_desc, x->scale);
    snprintf(rep->hardware, sizeof rep->hardware, "%s%s", v->hw.name,
             x->backend == EX_BACKEND_CUDA ? " (GEMMs at its fp32 rate: the executor's are cublasSgemm)" : "");
    snprintf(rep->hardware_path, sizeof rep->hardware_path, "%s", v->hw_path);
    snprintf(rep->backend, sizeof rep->backend, "%s", ex_backend_name(x->backend));
    snprintf(rep->policy, sizeof rep->policy, "%s", plan_policy_name(v->c.popt.policy));
    for (int i = 1; i < x->n_policies; i++) {
        size_t l = strlen(rep->policy);
        snprintf(rep->policy + l, sizeof rep->policy - l, ",%s", plan_policy_name(x->policies[i]));
    }
    rep->ranks = x->ranks;
    rep->steps = x->steps;
    rep->scale = x->scale;
    rep->mem_tol_pct = x->mem_tol_pct;
    rep->gate_time_pct = x->gate_time_pct;
    rep->device_in_rss = x->backend == EX_BACKEND_CPU;
    if (x->backend == EX_BACKEND_CPU && !x->calibrate && !v->sim->hw_given)
        snprintf(rep->time_skipped, sizeof rep->time_skipped, "the cpu backend ran on this machine, the prediction "
                 "is of the %s profile (the default), not of this machine; --calibrate measures this machine first, "
                 "--hw FILE names its profile", v->sim->hw);
    rep->baseline_before_run = v->in_mpi;
    if (v->rep_also) {   /* the same header (no rows yet) over the other profile */
        *v->rep_also = *rep;
        snprintf(v->rep_also->hardware, sizeof v->rep_also->hardware, "%s%s", v->hw_also.name,
                 x->backend == EX_BACKEND_CUDA ? " (GEMMs at its fp32 rate: the executor's are cublasSgemm)" : "");
        snprintf(v->rep_also->hardware_path, sizeof v->rep_also->hardware_path, "%s", x->also_hw);
    }
}

/* How the runs start: the common part of every launched `ratiolab run`, whether that executor
 * writes traces, and the options of the runs in this process (under mpirun) as `ratiolab run`
 * would set them. */
static void vx_run_options(struct vx *v, const char *const *fwd, int n_fwd)
{
    struct cli_validate_exec *x = v->x;
    struct argv_b *base = &v->base;
    launcher(base, x->ranks);
    v->n_launch = base->n;
    arg(base, v->exe);
    arg(base, "run");
    for (int i = 0; i < n_fwd; i++)
        arg(base, fwd[i]);
    arg(base, "--tp");
    argf(base, "%d", v->c.layout.tp);
    arg(base, "--policy");
    arg(base, plan_policy_name(v->c.popt.policy));
    arg(base, "--backend");
    arg(base, ex_backend_name(x->backend));
    arg(base, "--scale");
    argf(base, "%.17g", x->scale);
    arg(base, "--steps");
    argf(base, "%d", x->steps);
    arg(base, "--compute");
    arg(base, "gemm");

    char *out;
    char *hv[] = {v->exe, "run", "--help", NULL};
    v->run_traces = capture(hv, &out) == 0 && out && strstr(out, "--trace");
    free(out);

    ex_opts_default(&v->xo);
    if (v->in_mpi) {
        v->xo.compute = EX_COMPUTE_GEMM;
        v->xo.steps = x->steps;
        v->xo.micro_batch = v->c.zero.micro_batch > 0 ? v->c.zero.micro_batch : 1;
        v->xo.seq_len = v->s->seq_len;
        v->xo.checkpoint_activations = v->c.checkpoint_activations;
        v->xo.backend = x->backend;
    }
    for (int k = 0; k < VAL_MAX_RANKS; k++)
        v->baseline[k] = -1;
}

/* The scale that cuts every tensor to one row: the largest first dimension (smaller it cannot
 * get), or --scale when that is larger. */
static double one_row_scale(const struct vx *v)
{
    double rows = 1;
    for (int t = 0; t < v->c.model.n_tensors; t++)
        rows = (double)v->c.model.tensors[t].shape[0] > rows ? (double)v->c.model.tensors[t].shape[0] : rows;
    return rows > v->x->scale ? rows : v->x->scale;
}

/* Under mpirun, the reference digest on rank 0, in this process (scalar Adam). The baseline of
 * each run is then its rank's RSS right before it, with the freed heap handed back (malloc_trim)
 * and the peak reset. */
static int vx_reference_inproc(struct vx *v, struct rl_err *e)
{
    if (!v->rank0)
        return 0;
    fprintf(stderr, "validate: reference digest (scalar Adam, in this process)\n");
    struct ex_opts ro = v->xo;
    ro.ref_dtype = v->c.zero.dtype;
    uint32_t d = 0;
    int64_t steps = 0;
    RL_TRY(ex_reference(&v->scaled, &ro, ro.warmup + ro.steps, &d, &steps, e));
    v->rep->reference_digest = d;
    v->rep->have_reference = true;
    return 0;
}

/* Under mpirun: the baseline run in this process (every tensor one row, as the launched one):
 * its peak RSS growth beyond its ledger buffers is what a run adds besides its ledger. */
static int vx_baseline_inproc(struct vx *v, struct rl_err *e)
{
    struct plan_model tiny;
    memset(&tiny, 0, sizeof tiny);
    struct plan q;
    memset(&q, 0, sizeof q);
    struct ex_result r;
    memset(&r, 0, sizeof r);
    double fb = one_row_scale(v);
    if (v->rank0)
        fprintf(stderr, "validate: baseline run (every tensor one row, in this mpirun)\n");
    int rc = ex_scale_model(&v->c.model, fb, &tiny, e);
    if (!rc)
        rc = plan_exec_plan(&v->c, &tiny, fb, 0, PLAN_POLICY_AUTO, &q, e);
    malloc_trim(0);
    reset_peak_rss();
    int64_t before = self_rss();
    if (!rc && (rc = ex_run(&q, &v->xo, &v->comm, &r, e)))
        cli_run_err(e);
    if (!rc) {
        int64_t own = 0;
        for (int b = 0; b < r.self.n_bufs; b++)
            if (r.self.bufs[b].ledger_bytes >= 0 &&
                (v->x->backend == EX_BACKEND_CPU || r.self.bufs[b].device != PLAN_DEV_GPU))
                own += r.self.bufs[b].bytes;
        v->extra_rss = r.self.mem.peak_rss_bytes >= 0 && before >= 0 ? r.self.mem.peak_rss_bytes - before - own : 0;
    }
    ex_result_free(&r);
    plan_free(&q);
    plan_model_free(&tiny);
    return rc;
}

/* The reference digest: one process, scalar Adam. */
static int vx_reference_launched(struct vx *v, struct rl_err *e)
{
    struct argv_b r = {0};
    for (int i = v->n_launch; i < v->base.n; i++)   /* without mpirun */
        arg(&r, v->base.v[i]);
    arg(&r, "--reference");
    char *out;
    fprintf(stderr, "validate: reference digest (one process, scalar Adam)\n");
    int st = capture(r.v, &out);
    const char *d = out ? strstr(out, "digest ") : NULL;
    unsigned dg;
    if (st != 0 || !d || sscanf(d, "digest %8x", &dg) != 1) {
        free(out);
        return rl_errf(e, RL_EENV, "validate: ratiolab run --reference failed (exit %d)", st);
    }
    v->rep->reference_digest = dg;
    v->rep->have_reference = true;
    free(out);
    return 0;
}

/* Buffers outside the ledger count as device or host scratch (the executor's compute scratch is
 * part of what the device pool holds). */
void cli_val_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline)
{
    w->digest = r->digest;
    w->measured.deepspeed_version[0] = 0;
    if (r->ds_step)   /* the release whose step the executor ran (its run record) */
        rl_version_str(r->ds_version, w->measured.deepspeed_version, sizeof w->measured.deepspeed_version);
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    w->measured.step_ns = cr->step_ns;
    for (int k = 0; k < VAL_PHASES && k < STEP_PH_COUNT; k++) {
        w->measured.busy_ns[k] = cr->phase[k].busy_ns;
        w->measured.exposed_ns[k] = cr->phase[k].exposed_ns;
    }
    w->n_ranks = r->world < VAL_MAX_RANKS ? r->world : VAL_MAX_RANKS;
    for (int k = 0; k < w->n_ranks; k++) {
        const struct ex_rank_result *q = &r->ranks[k];
        struct val_rank_mem *vm = &w->mem[k];
        vm->ledger_device_bytes = q->ledger_device_bytes;
        vm->ledger_host_bytes = q->ledger_host_bytes;
        vm->host_placed_numel = q->host_placed_numel;
        vm->per_rank_numel = q->per_rank_numel;
        vm->rss_bytes = q->mem.peak_rss_bytes;
        vm->baseline_rss_bytes = baseline[k];
        vm->pinned_bytes = q->mem.pinned_bytes;
        vm->device_used_bytes = q->mem.device_used_bytes;
        for (int b = 0; b < q->n_bufs; b++)
            if (q->bufs[b].ledger_bytes < 0 && q->bufs[b].device == PLAN_DEV_GPU)
                vm->scratch_device_bytes += q->bufs[b].bytes;
            else if (q->bufs[b].ledger_bytes < 0)
                vm->scratch_host_bytes += q->bufs[b].bytes;
    }
}

/* The baseline: the same launch with every tensor cut to one row (the reduce bucket keeps the
 * flush count of an ordinary run); its RSS at the end minus its ledger buffers (on the cpu backend
 * the device's too) is the program, its libraries, MPI's shared memory, OpenBLAS, thread stacks
 * and the resident part of the compute scratch, whose size follows the tokens, hidden and vocab,
 * not the scale (a GEMM operand that is only read stays on the zero page and is not resident).
 * A failed baseline leaves the ranks' baselines unknown. */
static void vx_baseline_launched(struct vx *v)
{
    struct argv_b a = v->base;
    char bscale[32];
    snprintf(bscale, sizeof bscale, "%.17g", one_row_scale(v));
    for (int i = 0; i < a.n; i++)
        if (strcmp(a.v[i], "--scale") == 0 && i + 1 < a.n)
            a.v[i + 1] = bscale;
    arg(&a, "--ratio");
    arg(&a, "0");
    arg(&a, "--json");
    char *out;
    fprintf(stderr, "validate: baseline run (every tensor one row)\n");
    int st = capture(a.v, &out);
    struct ex_result r;
    struct rl_err e = {0};
    if (st != 0 || !out || ex_result_from_json(out, &r, &e)) {
        free(out);
        return;
    }
    free(out);
    bool dev_host = v->x->backend == EX_BACKEND_CPU;   /* the emulated device is host memory */
    for (int k = 0; k < r.world && k < VAL_MAX_RANKS; k++) {
        const struct ex_rank_result *q = &r.ranks[k];
        if (q->mem.rss_bytes < 0)
            continue;
        int64_t own = 0;
        for (int b = 0; b < q->n_bufs; b++)
            if (q->bufs[b].ledger_bytes >= 0 && (dev_host || q->bufs[b].device != PLAN_DEV_GPU))
                own += q->bufs[b].bytes;
        v->baseline[k] = q->mem.rss_bytes - own;
    }
    ex_result_free(&r);
}

/* Prediction: the plan the executor builds for the row (cli/cmd_run.c), simulated; rank 0 writes
 * its trace to ptrace. */
static int vx_predict(struct vx *v, struct val_row *w, const struct hw_profile *hw, const char *ptrace, struct rl_err *e)
{
    struct plan p;
    int rc = plan_exec_plan(&v->c, &v->scaled, v->x->scale, w->ratio, PLAN_POLICY_AUTO, &p, e);
    if (!rc)
        rc = val_row_predict(&p, hw, &v->sim->train, v->rank0 ? ptrace : NULL, w, e);
    plan_free(&p);
    return rc;
}

/* Measurement in this process, on every rank (under mpirun); rank 0 fills the row. A failed run
 * aborts the world. */
static int vx_measure_inproc(struct vx *v, struct val_row *w, const char *mtrace, struct rl_err *e)
{
    struct cli_validate_exec *x = v->x;
    struct plan q;
    struct ex_opts o = v->xo;
    o.schedule = v->sim->train.schedule;
    o.trace_path = mtrace;
    struct ex_result r;
    memset(&r, 0, sizeof r);
    if (v->rank0)
        fprintf(stderr, "validate: ratio %g, %s, %s: %d rank%s (in this mpirun) ...\n", w->ratio, w->schedule,
                w->policy, x->ranks, x->ranks == 1 ? "" : "s");
    int rc = plan_exec_plan(&v->c, &v->scaled, x->scale, w->ratio, PLAN_POLICY_AUTO, &q, e);
    malloc_trim(0);
    reset_peak_rss();
    int64_t mine = self_rss();
    mine = mine >= 0 ? mine + v->extra_rss : -1;
    void *all = NULL;
    int64_t all_bytes = 0;
    if (!rc && !(rc = ex_comm_gatherv(&v->comm, &mine, sizeof mine, &all, &all_bytes, e)))
        for (int64_t k = 0; v->rank0 && k < all_bytes / (int64_t)sizeof mine && k < VAL_MAX_RANKS; k++)
            memcpy(&v->baseline[k], (char *)all + k * (int64_t)sizeof mine, sizeof mine);
    free(all);
    if (!rc && (rc = ex_run(&q, &o, &v->comm, &r, e)))
        cli_run_err(e);
    plan_free(&q);
    if (rc) {
        ex_result_free(&r);
        fprintf(stderr, "ratiolab validate: rank %d: %s\n", v->comm.rank, e->msg);
        ex_comm_abort(&v->comm, rc == RL_EINVAL ? 2 : rc == RL_ECHECK ? 1 : 3);
        return rc;
    }
    w->others_cpu_pct = -1;   /* the ranks are not this process's children: not measured */
    if (v->rank0)
        cli_val_row_from_result(w, &r, v->baseline);
    ex_result_free(&r);
    return 0;
}

/* Measurement by a launched `ratiolab run --json` (under mpirun for --ranks > 1), with the share
 * of the cores other processes used meanwhile. */
static int vx_measure_launched(struct vx *v, struct val_row *w, const char *mtrace, struct rl_err *e)
{
    struct argv_b a = v->base;
    arg(&a, "--ratio");
    argf(&a, "%.17g", w->ratio);
    arg(&a, "--schedule");
    arg(&a, w->schedule);
    arg(&a, "--policy");
    arg(&a, w->policy);
    if (v->run_traces) {
        arg(&a, "--trace");
        arg(&a, mtrace);
    }
    arg(&a, "--json");
    fprintf(stderr, "validate: ratio %g, %s, %s: %d rank%s ...\n", w->ratio, w->schedule, w->policy, v->x->ranks,
            v->x->ranks == 1 ? "" : "s");
    char *out;
    struct cpu_mark m0, m1;
    cpu_mark(&m0);
    int st = capture(a.v, &out);
    cpu_mark(&m1);
    w->others_cpu_pct = others_pct(&m0, &m1);
    struct ex_result r;
    int rc = st == 0 && out ? ex_result_from_json(out, &r, e) : RL_EENV;
    free(out);
    if (!rc) {
        cli_val_row_from_result(w, &r, v->baseline);
        ex_result_free(&r);
    }
    if (rc)
        return rl_errf(e, st == 0 ? RL_EINTERNAL : RL_EENV, "validate: ratio %g: ratiolab run %s (exit %d)", w->ratio,
                       st == 0 ? "printed no JSON" : "failed", st);
    return 0;
}

/* The runs: ratio, then policy, then schedule; each predicted, then measured, one report row. */
static int vx_rows(struct vx *v, const double *ratios, size_t n_ratios, struct rl_err *e)
{
    struct cli_validate_exec *x = v->x;
    struct val_report *rep = v->rep;
    int n_pol = x->n_policies > 0 ? x->n_policies : 1, n_sch = x->n_schedules > 0 ? x->n_schedules : 1;
    const enum plan_policy pol0 = v->c.popt.policy;
    const enum step_schedule sch0 = v->sim->train.schedule;
    const size_t n_runs = n_ratios * (size_t)n_pol * (size_t)n_sch;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t ci = 0; ci < n_runs; ci++) {
        size_t ri = ci / (size_t)(n_pol * n_sch);
        int pi = (int)(ci / (size_t)n_sch % (size_t)n_pol), si = (int)(ci % (size_t)n_sch);
        v->c.popt.policy = x->n_policies ? x->policies[pi] : pol0;
        v->sim->train.schedule = x->n_schedules ? x->schedules[si] : sch0;
        struct val_row *w = &rep->rows[rep->n_rows];
        memset(w, 0, sizeof *w);
        w->ratio = ratios[ri];
        snprintf(w->schedule, sizeof w->schedule, "%s", sim_schedule_name(v->sim->train.schedule));
        snprintf(w->policy, sizeof w->policy, "%s", plan_policy_name(v->c.popt.policy));
        char ptrace[700], mtrace[700];
        snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s.json.gz", x->out, ratios[ri], w->schedule);
        snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s.json.gz", x->out, ratios[ri], w->schedule);
        if (x->n_policies > 1) {   /* one trace per policy too */
            snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s-%s.json.gz", x->out, ratios[ri], w->schedule, w->policy);
            snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s-%s.json.gz", x->out, ratios[ri], w->schedule, w->policy);
        }
        if (v->rank0) {   /* listed before they are written: an interrupted run's are removed next time too */
            RL_TRY(cli_validate_outputs_note(x->out, ptrace, e));
            RL_TRY(cli_validate_outputs_note(x->out, mtrace, e));
        }
        RL_TRY(vx_predict(v, w, &v->hw, ptrace, e));
        RL_TRY(v->in_mpi ? vx_measure_inproc(v, w, mtrace, e) : vx_measure_launched(v, w, mtrace, e));
        if (v->rank0 && strcmp(w->predicted.deepspeed_version, w->measured.deepspeed_version) != 0) {
            int rc = rl_errf(e, RL_EINTERNAL, "validate: ratio %g, %s: the simulator predicted DeepSpeed %s's step, "
                             "the executor ran %s's", w->ratio, w->schedule, w->predicted.deepspeed_version[0] ?
                             w->predicted.deepspeed_version : "no", w->measured.deepspeed_version[0] ?
                             w->measured.deepspeed_version : "no");
            if (v->in_mpi) {   /* the other ranks would wait in the next run's collectives */
                fprintf(stderr, "ratiolab validate: %s\n", e->msg);
                ex_comm_abort(&v->comm, 3);
            }
            return rc;
        }
        rep->n_rows++;
        if (v->rep_also && v->rank0) {   /* the same row, predicted with --also-hw (no trace) */
            struct val_row *w2 = &v->rep_also->rows[v->rep_also->n_rows];
            *w2 = *w;
            RL_TRY(vx_predict(v, w2, &v->hw_also, NULL, e));
            v->rep_also->n_rows++;
        }
        if (v->rank0) {   /* progress: runs take about equally long, so the mean so far predicts the rest */
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double spent = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            double left = spent / (double)(ci + 1) * (double)(n_runs - ci - 1);
            fprintf(stderr, "validate: run %zu of %zu done, %.0f s so far, about %.0f s left\n", ci + 1, n_runs,
                    spent, left);
        }
    }
    return 0;
}

/* A name validate writes into --out: predicted-*.json.gz or measured-*.json.gz, no folder part. */
static bool vx_own_output(const char *name)
{
    size_t n = strlen(name);
    return !strchr(name, '/') && n > 8 && strcmp(name + n - 8, ".json.gz") == 0 &&
           (strncmp(name, "predicted-", 10) == 0 || strncmp(name, "measured-", 9) == 0);
}

int cli_validate_outputs_forget(const char *dir, struct rl_err *e)
{
    char list[4200];
    snprintf(list, sizeof list, "%s/" CLI_VALIDATE_OUTPUTS, dir);
    FILE *f = fopen(list, "r");
    if (!f)
        return errno == ENOENT ? 0 : rl_errf(e, RL_EENV, "--out %s: cannot read %s (%s)", dir, list, strerror(errno));
    char line[1024];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!vx_own_output(line))
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, line);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;   /* gone already, or a link or folder validate did not make: left alone */
        if (unlink(path) != 0 && errno != ENOENT)
            rc = rl_errf(e, RL_EENV, "--out %s: cannot remove the earlier trace %s (%s)", dir, path, strerror(errno));
    }
    fclose(f);
    if (!rc && unlink(list) != 0 && errno != ENOENT)
        rc = rl_errf(e, RL_EENV, "--out %s: cannot remove %s (%s)", dir, list, strerror(errno));
    return rc;
}

int cli_validate_outputs_note(const char *dir, const char *path, struct rl_err *e)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char list[4200];
    snprintf(list, sizeof list, "%s/" CLI_VALIDATE_OUTPUTS, dir);
    FILE *f = fopen(list, "a");
    if (!f)
        return rl_errf(e, RL_EENV, "--out %s: cannot write %s (%s)", dir, list, strerror(errno));
    bool ok = fprintf(f, "%s\n", base) > 0;
    if (fclose(f) != 0 || !ok)
        return rl_errf(e, RL_EENV, "--out %s: cannot write %s", dir, list);
    return 0;
}

/* The checks, then DIR/report.json and DIR/report.md. */
/* The checks, then DIR/report.json and DIR/report.md; with --also-hw the same into DIR/also/. */
static int vx_write_one(struct val_report *rep, const char *dir, struct rl_err *e);
static int vx_write_report(struct vx *v, struct rl_err *e)
{
    RL_TRY(vx_write_one(v->rep, v->x->out, e));
    if (!v->rep_also)
        return 0;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/also", v->x->out);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rl_errf(e, RL_EENV, "--out %s: cannot make %s (%s)", v->x->out, dir, strerror(errno));
    RL_TRY(vx_write_one(v->rep_also, dir, e));
    fprintf(stderr, "validate: the same runs predicted with %s: %s/report.md\n", v->x->also_hw, dir);
    return 0;
}

static int vx_write_one(struct val_report *rep, const char *dir, struct rl_err *e)
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

/* The report on stdout: report.json's text with --json, else a table of the rows and the checks. */
static void vx_print_report(const struct val_report *rep, const char *out, bool json)
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

/* The phases in order, then (rank 0) the report; exit 1 when a gated check failed. */
/* Before anything is measured or written: what --hw means with --calibrate (cpu: nothing, the
 * emulated device is measured whole; cuda: the catalog profile of this machine type, for what the
 * GPU calibration does not measure), and whether a GPU is there for --backend cuda. */
static int vx_check_backend(const struct cli_validate_exec *x, const struct cli_sim *sim, struct rl_err *e)
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
    if (x->calibrate && cuda && under_mpirun())
        return rl_errf(e, RL_EINVAL, "--calibrate: with --backend cuda under mpirun is not allowed; allowed: run "
                       "`ratiolab calibrate --backend cuda --base %s` first and give its profile as --hw FILE", sim->hw);
    if (!cuda)
        return 0;
#ifdef RL_HAVE_CUDA
    if (kern_cuda_device_count() <= 0)
        return rl_errf(e, RL_EENV, "--backend cuda: no GPU is visible; the cpu backend (--backend cpu) runs anywhere");
    return 0;
#else
    return rl_errf(e, RL_EENV, "--backend cuda: this ratiolab was built without CUDA (nvcc, cuBLAS and NCCL are "
                   "needed); the cpu backend (--backend cpu) runs anywhere");
#endif
}

static int vx_main(struct vx *v, const double *ratios, size_t n_ratios, const char *const *fwd, int n_fwd,
                   bool schedule_given, bool json, struct rl_err *e)
{
    RL_TRY(vx_setup(v, schedule_given, e));
    RL_TRY(vx_hardware(v, e));
    vx_report_header(v);
    vx_run_options(v, fwd, n_fwd);
    if (v->in_mpi) {
        RL_TRY(vx_reference_inproc(v, e));
        RL_TRY(vx_baseline_inproc(v, e));
    } else {
        RL_TRY(vx_reference_launched(v, e));
        vx_baseline_launched(v);
    }
    RL_TRY(vx_rows(v, ratios, n_ratios, e));
    if (v->in_mpi && !v->rank0)   /* rank 0 reports */
        return 0;
    RL_TRY(vx_write_report(v, e));
    vx_print_report(v->rep, v->x->out, json);
    return 0;
}

int cli_validate_exec_run(struct cli_validate_exec *x, struct plan_inputs *s, struct cli_sim *sim,
                          const char *const *fwd, int n_fwd, bool schedule_given, bool json)
{
    struct rl_err e = {0};
    if (!x->ratios || !x->out) {
        rl_errf(&e, RL_EINVAL, "give --deepspeed-log FILE, or --ratios LIST and --out DIR (see --help)");
        return cli_fail("validate", &e);
    }
    double *ratios = NULL;
    size_t n_ratios = 0;
    if (rl_parse_ratio_list("--ratios", x->ratios, 0, 1, &ratios, &n_ratios, &e))
        return cli_fail("validate", &e);
    int n_pol = x->n_policies > 0 ? x->n_policies : 1, n_sch = x->n_schedules > 0 ? x->n_schedules : 1;
    if (n_ratios * (size_t)n_pol * (size_t)n_sch > VAL_MAX_ROWS) {
        free(ratios);
        rl_errf(&e, RL_EINVAL, "--ratios: %zu ratios x %d policies x %d schedules; allowed: at most %d runs", n_ratios,
                n_pol, n_sch, VAL_MAX_ROWS);
        return cli_fail("validate", &e);
    }
    if (vx_check_backend(x, sim, &e)) {
        free(ratios);
        return cli_fail("validate", &e);
    }
    struct vx v;
    memset(&v, 0, sizeof v);
    v.x = x;
    v.s = s;
    v.sim = sim;
    v.comm.size = 1;
    v.lock_fd = -1;
    v.rep = calloc(1, sizeof *v.rep);
    if (x->also_hw)
        v.rep_also = calloc(1, sizeof *v.rep_also);
    int code = 0;
    if (!v.rep || (x->also_hw && !v.rep_also)) {
        free(v.rep);
        free(v.rep_also);
        free(ratios);
        rl_errf(&e, RL_ENOMEM, "validate: out of memory");
        return cli_fail("validate", &e);
    }
    if (vx_main(&v, ratios, n_ratios, fwd, n_fwd, schedule_given, json, &e))
        code = cli_fail("validate", &e);
    else if (!(v.in_mpi && !v.rank0))
        code = val_report_failed(v.rep) ? 1 : 0;
    if (v.in_mpi)
        ex_comm_finalize(&v.comm);
    if (v.lock_fd >= 0)
        close(v.lock_fd);
    free(v.rep);
    free(v.rep_also);
    free(ratios);
    plan_model_free(&v.scaled);
    plan_setup_free(&v.c);
    return code;
}
