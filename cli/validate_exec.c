/* cli/validate_exec.c — `ratiolab validate --ratios ...` (see validate_exec.h): for every ratio
 * (and schedule) runs the executor (`ratiolab run --json`, under mpirun when --ranks > 1),
 * predicts the same run with the simulator (the same scaled model, the same exec ledger), and
 * writes DIR/report.md, DIR/report.json and both sides' traces. */
#include <errno.h>
#include <jansson.h>
#include <malloc.h>   /* malloc_trim */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/validate_exec.h"
#include "sim/step.h"
#include "validation/calib.h"
#include "validation/val.h"

#if defined(__has_include)
#if __has_include("exec/exec.h")
#include "exec/exec.h"
#define HAVE_EXEC 1
#endif
#endif

enum { X_RATIOS = 100, X_RANKS, X_BACKEND, X_CALIBRATE, X_STEPS, X_OUT, X_GATE_TIME, X_MEM_TOL, X_SCALE };

const struct cli_opt cli_validate_exec_opts[] = {
    {"ratios", "LIST", "ratios to run, e.g. 0,0.3,0.5,1 or 0:1:0.25", X_RATIOS},
    {"ranks", "N", "MPI ranks of each executor run (default 1; mpirun is started for N > 1)", X_RANKS},
    {"backend", "B", "executor backend: cpu (emulated device, default) or cuda", X_BACKEND},
    {"calibrate", NULL, "measure this machine first (ratiolab calibrate) and predict with that profile", X_CALIBRATE},
    {"steps", "K", "timed steps per run (default 3; one warm-up step before them)", X_STEPS},
    {"out", "DIR", "where report.md, report.json and the traces go", X_OUT},
    {"gate-time", "PCT", "fail when the step MAPE over the runs exceeds PCT (default: reported only)", X_GATE_TIME},
    {"mem-tolerance", "PCT", "allowed peak RSS / device use difference from ledger + baseline (default 10)", X_MEM_TOL},
    {"scale", "F", "shrink the model by F for the executor and the prediction (>= 1, default 1)", X_SCALE},
    {NULL, NULL, NULL, 0},
};

void cli_validate_exec_init(struct cli_validate_exec *x)
{
    memset(x, 0, sizeof *x);
    x->backend = "cpu";
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
        if (!rl_streq(v, "cpu") && !rl_streq(v, "cuda"))
            return rl_errf(e, RL_EINVAL, "--backend: '%s' is not allowed; allowed: cpu, cuda", v);
        x->backend = v;
        return 0;
    case X_CALIBRATE: x->calibrate = true; return 0;
    case X_STEPS: return rl_parse_int("--steps", v, 1, 100000, &x->steps, e);
    case X_OUT: x->out = v; return 0;
    case X_GATE_TIME: return rl_parse_double("--gate-time", v, 0, 1e6, &x->gate_time_pct, e);
    case X_MEM_TOL: return rl_parse_double("--mem-tolerance", v, 0, 1e6, &x->mem_tol_pct, e);
    case X_SCALE: return rl_parse_double("--scale", v, 1, 1e12, &x->scale, e);
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
            return rc;
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
            return rc;
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
static void argf(struct argv_b *a, const char *fmt, double v)
{
    if (a->n >= MAX_ARGS)
        return;
    snprintf(a->store[a->n], sizeof a->store[a->n], fmt, v);
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
    argf(a, "%.0f", ranks);
}

/* What one rank of the run does (for the calibration under the same launch): the GEMMs of one
 * forward pass as the simulator charges them and the executor's --compute gemm runs them
 * (exec/compute.c): per layer a GEMM per weight on micro-batch x seq tokens (2-D weights as they
 * are, other tensors rank-1), attention scores and values per sequence and local head, the logits
 * once after the layers, nothing for the embedding lookup; grouped by shape. Then the rank's
 * partition (device Adam), the host chunk, a layer's all-gather, a flush's reduce-scatter. */
static void add_gemm(struct val_calib_run *r, int64_t m, int64_t n, int64_t k, int64_t count)
{
    int j = 0;
    while (j < r->n_gemm && !(r->gemm[j].m == m && r->gemm[j].n == n && r->gemm[j].k == k))
        j++;
    if (j < r->n_gemm)
        r->gemm[j].count += count;
    else if (r->n_gemm < VAL_CALIB_MAX_GEMMS)
        r->gemm[r->n_gemm++] = (struct val_gemm_shape){m, n, k, count};
}

static void run_shape(const struct plan *p, int64_t micro_batch, int64_t seq, struct val_calib_run *r)
{
    memset(r, 0, sizeof *r);
    const struct plan_model *m = p->model;
    const struct plan_arch *a = &m->arch;
    int mdb = plan_dtype_bytes(p->zero.dtype);
    int64_t tokens = micro_batch * seq;
    int first = -1, last = -1;
    for (int i = 0; i < m->n_tensors; i++) {
        int l = m->tensors[i].layer;
        if (l >= 0 && (first < 0 || l < first))
            first = l;
        if (l > last)
            last = l;
    }
    int64_t layers = first < 0 ? 0 : last - first + 1, layer_part = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const struct plan_tensor *t = &m->tensors[i];
        if (t->layer < 0)
            continue;
        if (t->layer == first)
            layer_part += p->part_numel[i];
        if (t->ndim == 2)
            add_gemm(r, tokens, t->shape[0], t->shape[1], 1);
        else
            add_gemm(r, tokens, t->numel, 1, 1);
    }
    int64_t heads = a->heads > 0 ? a->heads : 1, tp = a->tp > 0 ? a->tp : 1;
    int64_t hd = a->head_dim > 0 ? a->head_dim : a->hidden / heads;
    int64_t local = heads / tp > 0 ? heads / tp : 1;
    if (layers > 0 && hd > 0) {
        add_gemm(r, seq, seq, hd, micro_batch * local * layers);   /* Q K^T */
        add_gemm(r, seq, hd, seq, micro_batch * local * layers);   /* scores V */
    }
    int64_t vocab = a->vocab_padded > 0 ? a->vocab_padded : a->vocab;
    if (layers > 0 && vocab > 0 && a->hidden > 0)
        add_gemm(r, tokens, vocab / tp, a->hidden, 1);   /* the logits */
    int W = p->layout.dp > 0 ? p->layout.dp : 1;
    r->device_adam_numel = p->per_rank_numel;
    r->host_adam_numel = step_chunk_numel(p->per_rank_numel, p->exec_chunk_numel);
    r->allgather_bytes = layer_part * mdb;
    int64_t bucket = p->zero.reduce_bucket_size < p->per_rank_numel * W ? p->zero.reduce_bucket_size
                                                                         : p->per_rank_numel * W;
    r->reduce_scatter_bytes = bucket * mdb / 4 / W * 4;   /* the executor's fp32 elements per rank */
    r->working_set_bytes = p->per_rank_numel * (16 + mdb);
}

/* The plan the executor builds for `ratio` (cli/cmd_run.c): the scaled model and ZeRO sizes, the
 * exec ledger and chunk. */
static int exec_plan(const struct plan_setup *c, const struct plan_model *scaled, double scale, double ratio,
                     struct plan *p, struct rl_err *e)
{
    memset(p, 0, sizeof *p);
    struct plan_zero z = c->zero;
    int64_t chunk = INT64_C(4) << 20;
    ex_scale_zero(&z, &chunk, scale);
    z.ratio = ratio;
    z.src_ratio = PLAN_SRC_CLI;
    struct plan_options po = c->popt;
    po.ledger = PLAN_LEDGER_EXEC;
    po.exec_chunk_numel = chunk;
    return plan_build(p, scaled, &c->layout, &z, &po, e);
}

/* --gemm MxNxK[xC],... for `ratiolab calibrate`. */
static void gemm_arg(const struct val_calib_run *r, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < r->n_gemm; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%lldx%lldx%lldx%lld", i ? "," : "", (long long)r->gemm[i].m,
                 (long long)r->gemm[i].n, (long long)r->gemm[i].k, (long long)r->gemm[i].count);
    }
}

#ifdef HAVE_EXEC
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

/* A row's measured side from an in-process run (rank 0 holds every rank's result). */
static void row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline)
{
    w->digest = r->digest;
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
#endif

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
#ifndef HAVE_EXEC
    (void)sim;
    (void)s;
    (void)fwd;
    (void)n_fwd;
    (void)schedule_given;
    (void)json;
    (void)capture;
    (void)argf;
    free(ratios);
    rl_errf(&e, RL_EENV, "validate --ratios: the executor (exec/, ratiolab run) is not part of this build");
    return cli_fail("validate", &e);
#else
    int code = 0;
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    struct plan_model scaled;
    memset(&scaled, 0, sizeof scaled);
    struct val_report *rep = calloc(1, sizeof *rep);
    struct sim_hw hw;
    char *text = NULL;
    if (!rep) {
        free(ratios);
        rl_errf(&e, RL_ENOMEM, "validate: out of memory");
        return cli_fail("validate", &e);
    }
    /* Under an existing mpirun every rank runs validate: the executor runs in this process, rank 0
     * predicts, reports and writes. */
    struct ex_comm comm;
    memset(&comm, 0, sizeof comm);
    comm.size = 1;
    const bool in_mpi = under_mpirun();
    if (in_mpi) {
        if (ex_comm_init(&comm, &e))
            goto fail;
        if (x->ranks != 1 && x->ranks != comm.size) {
            rl_errf(&e, RL_EINVAL, "--ranks %d: validate runs under mpirun with %d ranks; allowed: %d (or leave it "
                    "out)", x->ranks, comm.size, comm.size);
            goto fail;
        }
        x->ranks = comm.size;
    }
    const bool rank0 = comm.rank == 0;
    if (rank0 && mkdir(x->out, 0777) != 0 && errno != EEXIST) {
        rl_errf(&e, RL_EINVAL, "--out %s: cannot create the folder (%s)", x->out, strerror(errno));
        goto fail;
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
        sim->train.schedule = SIM_SCHED_OVERLAP;
    if (cli_setup_resolve(s, &c, &e) || ex_scale_model(&c.model, x->scale, &scaled, &e))
        goto fail;
    /* --scale shrinks the tensors (their first dimension), not hidden, heads or vocab: the
     * executor's GEMMs are the simulator's per block (exec/compute.c), attention and logits at
     * full size, so the simulator sees the scaled tensors and the architecture as it is. */
    if (c.layout.dp != x->ranks) {
        rl_errf(&e, RL_EINVAL, "--ranks %d: the layout has %d data-parallel ranks; allowed: equal (the executor "
                "runs one rank per data-parallel rank)", x->ranks, c.layout.dp);
        goto fail;
    }
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el <= 0) {
        rl_errf(&e, RL_EENV, "validate: cannot find its own executable (/proc/self/exe)");
        goto fail;
    }
    exe[el] = 0;
    if (geteuid() == 0) {   /* Open MPI refuses root without these */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    /* The emulated device's kernels run on cores / ranks threads (at least 1): OpenBLAS in the runs
     * and in the calibration gets that many unless the environment already says. */
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    int dev_threads = ncores > 0 && ncores / x->ranks >= 1 ? (int)(ncores / x->ranks) : 1;
    char blas_threads[16];
    snprintf(blas_threads, sizeof blas_threads, "%d", dev_threads);
    setenv("OPENBLAS_NUM_THREADS", blas_threads, 0);
    /* Hardware: --calibrate measures this machine for the emulated device. */
    char hw_path[600];
    if (x->calibrate) {
        struct val_calib_opts co;
        val_calib_opts_default(&co);
        co.devices = x->ranks;
        co.device_threads = dev_threads;
        struct val_calib cal;
        snprintf(hw_path, sizeof hw_path, "%s/hw-calibrated.json", x->out);
        if (rank0)
            fprintf(stderr, "validate: calibrating this machine (%d device%s) ...\n", x->ranks, x->ranks == 1 ? "" : "s");
        memset(&cal, 0, sizeof cal);
        if (rank0 && val_calibrate(&co, &cal, &e))
            goto fail;
        /* Then what one rank of the run does, on every rank at once under the runs' own launch:
         * the GEMMs at the model's shapes, Adam and copies at the run's sizes, the shared memory,
         * the collectives at the run's message sizes. */
        struct plan p0;
        struct val_calib_run rs;
        if (exec_plan(&c, &scaled, x->scale, 0, &p0, &e)) {
            plan_free(&p0);
            goto fail;
        }
        int64_t mb = c.zero.micro_batch > 0 ? c.zero.micro_batch : 1;
        int64_t seq = scaled.arch.seq_len > 0 ? scaled.arch.seq_len : 1024;
        run_shape(&p0, mb, seq, &rs);
        plan_free(&p0);
        if (in_mpi) {   /* every rank here, at once, as the runs will */
            if (ex_comm_barrier(&comm, &e) || (comm.size > 1 && val_calibrate_collectives(&comm, false, &cal, &e)) ||
                val_calibrate_run(&comm, &rs, false, &cal, &e))
                goto fail;
        } else {
            static char gemms[VAL_CALIB_MAX_GEMMS * 64];
            char nums[5][32];
            gemm_arg(&rs, gemms, sizeof gemms);
            snprintf(nums[0], sizeof nums[0], "%lld", (long long)rs.device_adam_numel);
            snprintf(nums[1], sizeof nums[1], "%lld", (long long)rs.host_adam_numel);
            snprintf(nums[2], sizeof nums[2], "%lld", (long long)(rs.allgather_bytes > 0 ? rs.allgather_bytes : 1));
            snprintf(nums[3], sizeof nums[3], "%lld", (long long)(rs.reduce_scatter_bytes >= 4 ? rs.reduce_scatter_bytes : 4));
            snprintf(nums[4], sizeof nums[4], "%lld", (long long)rs.working_set_bytes);
            struct argv_b cv = {0};
            launcher(&cv, x->ranks);
            arg(&cv, exe);
            arg(&cv, "calibrate");
            arg(&cv, "--collectives-only");
            arg(&cv, "--quiet");
            if (rs.n_gemm > 0) {
                arg(&cv, "--gemm");
                arg(&cv, gemms);
            }
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
            if (st != 0 || !out || val_calib_read_collectives(out, &cal, &e)) {
                free(out);
                rl_errf(&e, RL_EENV, "validate --calibrate: mpirun ... ratiolab calibrate --collectives-only failed "
                        "(exit %d)", st);
                goto fail;
            }
            free(out);
        }
        if (rank0 && val_calib_profile(&cal, "calibrated", &text, &e))
            goto fail;
        if (rank0) {
            struct rl_outfile of;
            if (rl_outfile_open(&of, hw_path, &e))
                goto fail;
            fprintf(of.fp, "%s\n", text);
            if (rl_outfile_commit(&of, &e))
                goto fail;
        }
        free(text);
        text = NULL;
        if (in_mpi && ex_comm_barrier(&comm, &e))   /* the profile is written before anyone reads it */
            goto fail;
        sim->hw = hw_path;
    } else {
        snprintf(hw_path, sizeof hw_path, "%s", sim->hw);
    }
    if (cli_sim_load_hw(sim, &c, &hw, &e))
        goto fail;
    sim->train.micro_batch = c.zero.micro_batch > 0 ? c.zero.micro_batch : 1;
    sim->train.comm_dtype_bytes = 4;   /* the executor reduce-scatters fp32 (exact sums) */

    snprintf(rep->model, sizeof rep->model, "%s, scaled 1/%g", c.model_desc, x->scale);
    snprintf(rep->hardware, sizeof rep->hardware, "%s", hw.name);
    snprintf(rep->hardware_path, sizeof rep->hardware_path, "%s", hw_path);
    snprintf(rep->backend, sizeof rep->backend, "%s", x->backend);
    snprintf(rep->policy, sizeof rep->policy, "%s", plan_policy_name(c.popt.policy));
    for (int i = 1; i < x->n_policies; i++) {
        size_t l = strlen(rep->policy);
        snprintf(rep->policy + l, sizeof rep->policy - l, ",%s", plan_policy_name(x->policies[i]));
    }
    rep->ranks = x->ranks;
    rep->steps = x->steps;
    rep->scale = x->scale;
    rep->mem_tol_pct = x->mem_tol_pct;
    rep->gate_time_pct = x->gate_time_pct;
    rep->device_in_rss = strcmp(x->backend, "cpu") == 0;
    rep->baseline_before_run = in_mpi;

    /* The common part of every `ratiolab run`. */
    struct argv_b base = {0};
    launcher(&base, x->ranks);
    int n_launch = base.n;
    arg(&base, exe);
    arg(&base, "run");
    for (int i = 0; i < n_fwd; i++)
        arg(&base, fwd[i]);
    arg(&base, "--tp");
    argf(&base, "%.0f", c.layout.tp);
    arg(&base, "--policy");
    arg(&base, plan_policy_name(c.popt.policy));
    arg(&base, "--backend");
    arg(&base, x->backend);
    arg(&base, "--scale");
    argf(&base, "%.17g", x->scale);
    arg(&base, "--steps");
    argf(&base, "%.0f", x->steps);
    arg(&base, "--compute");
    arg(&base, "gemm");

    /* Does this executor write traces (--trace)? */
    bool run_traces = false;
    {
        char *out;
        char *hv[] = {exe, "run", "--help", NULL};
        if (capture(hv, &out) == 0 && out && strstr(out, "--trace"))
            run_traces = true;
        free(out);
    }
    /* In this process (under mpirun): the runs' options as `ratiolab run` would set them. */
    struct ex_opts xo;
    ex_opts_default(&xo);
    if (in_mpi) {
        xo.compute = EX_COMPUTE_GEMM;
        xo.steps = x->steps;
        xo.micro_batch = c.zero.micro_batch > 0 ? c.zero.micro_batch : 1;
        xo.seq_len = s->seq_len;
        xo.checkpoint_activations = c.checkpoint_activations;
        if (ex_backend_parse(x->backend, &xo.backend, &e))
            goto fail;
    }
    int64_t baseline[VAL_MAX_RANKS];
    for (int k = 0; k < VAL_MAX_RANKS; k++)
        baseline[k] = -1;
    if (in_mpi) {
        /* The reference on rank 0. The baseline of each run is its rank's RSS right before it, with
         * the freed heap handed back (malloc_trim) and the peak reset. */
        if (rank0) {
            fprintf(stderr, "validate: reference digest (scalar Adam, in this process)\n");
            struct ex_opts ro = xo;
            ro.ref_dtype = c.zero.dtype;
            uint32_t d = 0;
            int64_t steps = 0;
            if (ex_reference(&scaled, &ro, ro.warmup + ro.steps, &d, &steps, &e))
                goto fail;
            rep->reference_digest = d;
            rep->have_reference = true;
        }
    }
    /* Under mpirun: the baseline run in this process (every tensor one row, as the launched one):
     * its peak RSS growth beyond its ledger buffers is what a run adds besides its ledger. */
    int64_t extra_rss = 0;
    if (in_mpi) {
        double rows = 1;
        for (int t = 0; t < c.model.n_tensors; t++)
            rows = (double)c.model.tensors[t].shape[0] > rows ? (double)c.model.tensors[t].shape[0] : rows;
        struct plan_model tiny;
        memset(&tiny, 0, sizeof tiny);
        struct plan q;
        memset(&q, 0, sizeof q);
        struct ex_result r;
        memset(&r, 0, sizeof r);
        double fb = rows > x->scale ? rows : x->scale;
        if (rank0)
            fprintf(stderr, "validate: baseline run (every tensor one row, in this mpirun)\n");
        int rc = ex_scale_model(&c.model, fb, &tiny, &e);
        if (!rc)
            rc = exec_plan(&c, &tiny, fb, 0, &q, &e);
        malloc_trim(0);
        reset_peak_rss();
        int64_t before = self_rss();
        if (!rc)
            rc = ex_run(&q, &xo, &comm, &r, &e);
        if (!rc) {
            int64_t own = 0;
            for (int b = 0; b < r.self.n_bufs; b++)
                if (r.self.bufs[b].ledger_bytes >= 0 &&
                    (strcmp(x->backend, "cpu") == 0 || r.self.bufs[b].device != PLAN_DEV_GPU))
                    own += r.self.bufs[b].bytes;
            extra_rss = r.self.mem.peak_rss_bytes >= 0 && before >= 0 ? r.self.mem.peak_rss_bytes - before - own : 0;
        }
        ex_result_free(&r);
        plan_free(&q);
        plan_model_free(&tiny);
        if (rc)
            goto fail;
    }
    /* The reference digest: one process, scalar Adam. */
    if (!in_mpi) {
        int skip = n_launch;   /* without mpirun */
        struct argv_b r = {0};
        for (int i = skip; i < base.n; i++)
            arg(&r, base.v[i]);
        arg(&r, "--reference");
        char *out;
        fprintf(stderr, "validate: reference digest (one process, scalar Adam)\n");
        int st = capture(r.v, &out);
        const char *d = out ? strstr(out, "digest ") : NULL;
        unsigned v;
        if (st != 0 || !d || sscanf(d, "digest %8x", &v) != 1) {
            rl_errf(&e, RL_EENV, "validate: ratiolab run --reference failed (exit %d)", st);
            free(out);
            goto fail;
        }
        rep->reference_digest = v;
        rep->have_reference = true;
        free(out);
    }
    /* The baseline: the same launch with every tensor cut to one row (the scale of the largest first
     * dimension: smaller it cannot get, and the reduce bucket keeps the flush count of an ordinary
     * run); its RSS at the end minus its ledger buffers (on the cpu backend the device's too) is
     * the program, its libraries, MPI's shared memory, OpenBLAS, thread stacks and the resident
     * part of the compute scratch, whose size follows the tokens, hidden and vocab, not the scale
     * (a GEMM operand that is only read stays on the zero page and is not resident). */
    if (!in_mpi) {
        struct argv_b a = base;
        char bscale[32];
        double rows = 1;
        for (int t = 0; t < c.model.n_tensors; t++)
            rows = (double)c.model.tensors[t].shape[0] > rows ? (double)c.model.tensors[t].shape[0] : rows;
        snprintf(bscale, sizeof bscale, "%.17g", rows > x->scale ? rows : x->scale);
        for (int i = 0; i < a.n; i++)
            if (strcmp(a.v[i], "--scale") == 0 && i + 1 < a.n)
                a.v[i + 1] = bscale;
        arg(&a, "--ratio");
        arg(&a, "0");
        arg(&a, "--json");
        char *out;
        fprintf(stderr, "validate: baseline run (every tensor one row)\n");
        int st = capture(a.v, &out);
        json_t *j = st == 0 && out ? json_loads(out, 0, NULL) : NULL;
        free(out);
        json_t *rk = json_object_get(j, "ranks");
        bool dev_host = strcmp(x->backend, "cpu") == 0;   /* the emulated device is host memory */
        for (size_t k = 0; k < json_array_size(rk) && k < VAL_MAX_RANKS; k++) {
            json_t *q = json_array_get(rk, k);
            json_t *m = json_object_get(json_object_get(q, "memory"), "rss_bytes");
            if (!json_is_integer(m))
                continue;
            int64_t own = 0;
            json_t *bufs = json_object_get(q, "buffers");
            for (size_t b = 0; b < json_array_size(bufs); b++) {
                json_t *bb = json_array_get(bufs, b);
                const char *dev = json_string_value(json_object_get(bb, "device"));
                bool in_ledger = !json_is_null(json_object_get(bb, "ledger_bytes"));
                if (in_ledger && (dev_host || (dev && strcmp(dev, "gpu") != 0)))
                    own += json_integer_value(json_object_get(bb, "bytes"));
            }
            baseline[k] = json_integer_value(m) - own;
        }
        json_decref(j);
    }
    const enum plan_policy pol0 = c.popt.policy;
    const enum step_schedule sch0 = sim->train.schedule;
    for (size_t ci = 0; ci < n_ratios * (size_t)n_pol * (size_t)n_sch; ci++) {   /* ratio, then policy, then schedule */
        size_t ri = ci / (size_t)(n_pol * n_sch);
        int pi = (int)(ci / (size_t)n_sch % (size_t)n_pol), si = (int)(ci % (size_t)n_sch);
        c.popt.policy = x->n_policies ? x->policies[pi] : pol0;
        sim->train.schedule = x->n_schedules ? x->schedules[si] : sch0;
        struct val_row *w = &rep->rows[rep->n_rows];
        memset(w, 0, sizeof *w);
        w->ratio = ratios[ri];
        snprintf(w->schedule, sizeof w->schedule, "%s", sim_schedule_name(sim->train.schedule));
        snprintf(w->policy, sizeof w->policy, "%s", plan_policy_name(c.popt.policy));
        /* Prediction: the plan the executor builds (cli/cmd_run.c), simulated. */
        struct plan p;
        char ptrace[700], mtrace[700];
        snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s.json.gz", x->out, ratios[ri], w->schedule);
        snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s.json.gz", x->out, ratios[ri], w->schedule);
        if (x->n_policies > 1) {   /* one trace per policy too */
            snprintf(ptrace, sizeof ptrace, "%s/predicted-%g-%s-%s.json.gz", x->out, ratios[ri], w->schedule, w->policy);
            snprintf(mtrace, sizeof mtrace, "%s/measured-%g-%s-%s.json.gz", x->out, ratios[ri], w->schedule, w->policy);
        }
        struct sim_step_result sr;
        if (exec_plan(&c, &scaled, x->scale, ratios[ri], &p, &e) || sim_step_run(&p, &hw, &sim->train, rank0 ? ptrace : NULL, &sr, &e)) {
            plan_free(&p);
            goto fail;
        }
        w->predicted.step_ns = sr.step_ns;
        for (int k = 0; k < VAL_PHASES; k++) {
            w->predicted.busy_ns[k] = sr.phase[k].busy_ns;
            w->predicted.exposed_ns[k] = sr.phase[k].exposed_ns;
        }
        w->plan_cpu_numel = p.cpu_numel;
        w->plan_per_rank_numel = p.per_rank_numel;
        w->plan_honored_ratio = p.honored_ratio;
        w->plan_device_bytes = plan_peak_gpu_bytes(&p);
        w->plan_host_bytes = plan_peak_cpu_bytes(&p);
        w->plan_host_pinned_bytes = p.stages[PLAN_STAGE_COUNT - 1].cpu_pinned_bytes;
        if (sim->train.schedule == STEP_SCHED_DS012) {
            /* DeepSpeed's pinned flat gradient buffer (the deepspeed-0.12 ledger's entry, P elements
             * of the model dtype), which the exec ledger leaves to the schedule */
            int64_t flat = p.per_rank_numel * plan_dtype_bytes(p.zero.dtype);
            w->plan_host_bytes += flat;
            w->plan_host_pinned_bytes += flat;
        }
        plan_free(&p);
        /* Measurement. */
        if (in_mpi) {   /* in this process, on every rank */
            struct plan q;
            struct ex_opts o = xo;
            o.schedule = sim->train.schedule;
            o.trace_path = mtrace;
            struct ex_result r;
            memset(&r, 0, sizeof r);
            if (rank0)
                fprintf(stderr, "validate: ratio %g, %s, %s: %d rank%s (in this mpirun) ...\n", ratios[ri],
                        w->schedule, w->policy, x->ranks, x->ranks == 1 ? "" : "s");
            int rc = exec_plan(&c, &scaled, x->scale, ratios[ri], &q, &e);
            malloc_trim(0);
            reset_peak_rss();
            int64_t mine = self_rss();
            mine = mine >= 0 ? mine + extra_rss : -1;
            void *all = NULL;
            int64_t all_bytes = 0;
            if (!rc && !(rc = ex_comm_gatherv(&comm, &mine, sizeof mine, &all, &all_bytes, &e)))
                for (int64_t k = 0; rank0 && k < all_bytes / (int64_t)sizeof mine && k < VAL_MAX_RANKS; k++)
                    memcpy(&baseline[k], (char *)all + k * (int64_t)sizeof mine, sizeof mine);
            free(all);
            if (!rc)
                rc = ex_run(&q, &o, &comm, &r, &e);
            plan_free(&q);
            if (rc) {
                ex_result_free(&r);
                fprintf(stderr, "ratiolab validate: rank %d: %s\n", comm.rank, e.msg);
                ex_comm_abort(&comm, rc == RL_EINVAL ? 2 : rc == RL_ECHECK ? 1 : 3);
                goto fail;
            }
            w->others_cpu_pct = -1;   /* the ranks are not this process's children: not measured */
            if (rank0)
                row_from_result(w, &r, baseline);
            ex_result_free(&r);
            rep->n_rows++;
            continue;
        }
        struct argv_b a = base;
        arg(&a, "--ratio");
        argf(&a, "%.17g", ratios[ri]);
        arg(&a, "--schedule");
        arg(&a, w->schedule);
        arg(&a, "--policy");
        arg(&a, w->policy);
        if (run_traces) {
            arg(&a, "--trace");
            arg(&a, mtrace);
        }
        arg(&a, "--json");
        fprintf(stderr, "validate: ratio %g, %s, %s: %d rank%s ...\n", ratios[ri], w->schedule, w->policy, x->ranks,
                x->ranks == 1 ? "" : "s");
        char *out;
        struct cpu_mark m0, m1;
        cpu_mark(&m0);
        int st = capture(a.v, &out);
        cpu_mark(&m1);
        w->others_cpu_pct = others_pct(&m0, &m1);
        json_error_t je;
        json_t *j = st == 0 && out ? json_loads(out, 0, &je) : NULL;
        free(out);
        if (!j) {
            rl_errf(&e, st == 0 ? RL_EINTERNAL : RL_EENV, "validate: ratio %g: ratiolab run %s (exit %d)", ratios[ri],
                    st == 0 ? "printed no JSON" : "failed", st);
            goto fail;
        }
        unsigned dg = 0;
        const char *ds = json_string_value(json_object_get(j, "digest"));
        if (ds)
            sscanf(ds, "%8x", &dg);
        w->digest = dg;
        json_t *m = json_object_get(j, "measurement");
        w->measured.step_ns = json_integer_value(json_object_get(m, "step_ns"));
        json_t *ph = json_object_get(m, "phases");
        for (int k = 0; k < VAL_PHASES; k++) {
            json_t *q = json_object_get(ph, sim_phase_name(k));
            w->measured.busy_ns[k] = json_integer_value(json_object_get(q, "busy_ns"));
            w->measured.exposed_ns[k] = json_integer_value(json_object_get(q, "exposed_ns"));
        }
        json_t *rk = json_object_get(j, "ranks");
        w->n_ranks = (int)json_array_size(rk);
        if (w->n_ranks > VAL_MAX_RANKS)
            w->n_ranks = VAL_MAX_RANKS;
        for (int k = 0; k < w->n_ranks; k++) {
            json_t *q = json_array_get(rk, (size_t)k), *mem = json_object_get(q, "memory");
            struct val_rank_mem *vm = &w->mem[k];
            vm->ledger_device_bytes = json_integer_value(json_object_get(q, "ledger_device_bytes"));
            vm->ledger_host_bytes = json_integer_value(json_object_get(q, "ledger_host_bytes"));
            vm->host_placed_numel = json_integer_value(json_object_get(q, "host_placed_numel"));
            vm->per_rank_numel = json_integer_value(json_object_get(q, "per_rank_numel"));
            json_t *v = json_object_get(mem, "peak_rss_bytes");
            vm->rss_bytes = json_is_integer(v) ? json_integer_value(v) : -1;
            vm->baseline_rss_bytes = baseline[k];
            v = json_object_get(mem, "pinned_bytes");
            vm->pinned_bytes = json_is_integer(v) ? json_integer_value(v) : -1;
            v = json_object_get(mem, "device_used_bytes");
            vm->device_used_bytes = json_is_integer(v) ? json_integer_value(v) : -1;
            /* Device buffers outside the ledger (the executor's compute scratch) are part of
             * what the device pool should hold. */
            json_t *bufs = json_object_get(q, "buffers");
            for (size_t b = 0; b < json_array_size(bufs); b++) {
                json_t *bb = json_array_get(bufs, b);
                const char *dev = json_string_value(json_object_get(bb, "device"));
                if (json_is_null(json_object_get(bb, "ledger_bytes")) && dev && strcmp(dev, "gpu") == 0)
                    vm->scratch_device_bytes += json_integer_value(json_object_get(bb, "bytes"));
                else if (json_is_null(json_object_get(bb, "ledger_bytes")) && dev)
                    vm->scratch_host_bytes += json_integer_value(json_object_get(bb, "bytes"));
            }
        }
        json_decref(j);
        rep->n_rows++;
    }
    if (in_mpi && !rank0) {   /* rank 0 reports */
        code = 0;
        goto out;
    }
    val_report_check(rep);
    char path[700];
    struct rl_outfile of;
    snprintf(path, sizeof path, "%s/report.json", x->out);
    if (val_report_json(rep, &text, &e) || rl_outfile_open(&of, path, &e))
        goto fail;
    fprintf(of.fp, "%s\n", text);
    free(text);
    text = NULL;
    if (rl_outfile_commit(&of, &e))
        goto fail;
    snprintf(path, sizeof path, "%s/report.md", x->out);
    if (val_report_md(rep, &text, &e) || rl_outfile_open(&of, path, &e))
        goto fail;
    fputs(text, of.fp);
    if (rl_outfile_commit(&of, &e))
        goto fail;
    if (json) {
        char *t2;
        if (!val_report_json(rep, &t2, &e)) {
            printf("%s\n", t2);
            free(t2);
        }
    } else {
        printf("model      %s\nhardware   %s (%s)\nbackend    %s, %d rank%s, %d timed steps, policy %s\n\n", rep->model,
               rep->hardware, rep->hardware_path, rep->backend, rep->ranks, rep->ranks == 1 ? "" : "s", rep->steps,
               rep->policy);
        printf("  %-6s %-15s %-15s %8s %9s %12s %12s %8s %8s\n", "ratio", "schedule", "policy", "honored", "digest",
               "predicted ms", "measured ms", "error %", "others %");
        for (int i = 0; i < rep->n_rows; i++) {
            const struct val_row *w = &rep->rows[i];
            char oc[16] = "-";
            if (w->others_cpu_pct >= 0)
                snprintf(oc, sizeof oc, "%.0f", w->others_cpu_pct);
            printf("  %-6g %-15s %-15s %8.4f %9.8x %12.3f %12.3f %+8.1f %8s\n", w->ratio, w->schedule, w->policy,
                   w->plan_honored_ratio, w->digest, (double)w->predicted.step_ns * 1e-6,
                   (double)w->measured.step_ns * 1e-6, w->step_error_pct, oc);
        }
        printf("  (others %%: the share of the machine's cores other processes used while the run ran)\n");
        printf("\n");
        for (int i = 0; i < rep->n_checks; i++)
            printf("  %-15s %-4s%s  %s\n", rep->checks[i].name, val_status_name(rep->checks[i].status),
                   rep->checks[i].gated ? "" : " (not gated)", rep->checks[i].detail);
        printf("\nreport     %s/report.md, %s/report.json\n", x->out, x->out);
    }
    code = val_report_failed(rep) ? 1 : 0;
    goto out;
fail:
    code = cli_fail("validate", &e);
out:
    if (in_mpi)
        ex_comm_finalize(&comm);
    free(text);
    free(rep);
    free(ratios);
    plan_model_free(&scaled);
    plan_setup_free(&c);
    return code;
#endif
}
