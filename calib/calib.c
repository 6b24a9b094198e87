/* calib/calib.c — see calib.h. */
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stddef.h>   /* offsetof */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/backend.h"
#include "exec/exec.h"
#include "kernels/adam.h"
#include "calib/calib.h"

#ifdef RL_HAVE_OPENBLAS
#include <cblas.h>   /* cblas_sgemm, openblas_set_num_threads */
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void calib_opts_default(struct calib_opts *o)
{
    memset(o, 0, sizeof *o);
    o->devices = 2;
}

static void progress(const struct calib_opts *o, const char *what, int done, int total)
{
    if (o->progress)
        o->progress(o->progress_ctx, what, done, total);
}

/* Triad a = b + s c over n floats with t threads, static chunks (first touch by the same chunks). */
static double triad_gbps(float *a, const float *b, const float *c, int64_t n, int t)
{
    double t0 = now_s();
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t i = 0; i < n; i++)
        a[i] = b[i] + 3.0f * c[i];
    double dt = now_s() - t0;
    return (double)n * 12.0 / dt * 1e-9;   /* 4 bytes read b, read c, write a */
}

static int adam_run(int64_t numel, int threads, int reps, struct calib_figure *f, struct rl_err *e)
{
    float *p = malloc((size_t)numel * 4), *m = malloc((size_t)numel * 4), *v = malloc((size_t)numel * 4);
    float *g = malloc((size_t)numel * 4);
    uint16_t *lp = malloc((size_t)numel * 2);
    int rc = 0;
    if (!p || !m || !v || !g || !lp) {
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %lld Adam elements", (long long)numel);
        goto out;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < numel; i++) {
        p[i] = 1.0f + (float)(i & 1023) * 1e-3f;
        m[i] = v[i] = 0;
        g[i] = (float)((i * 7) & 255) * 0x1p-10f;
        lp[i] = 0;
    }
    struct kern_adam_hparams h = kern_adam_hparams_default();
    struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g, .grad_dtype = KERN_F32,
                               .param_lowp = lp, .param_lowp_dtype = KERN_BF16, .numel = numel};
    double x[64];
    for (int r = 0; r <= reps && !rc; r++) {
        struct kern_adam_scalars s;
        if ((rc = kern_adam_scalars_make(&h, r + 1, &s, e)))
            break;
        double t0 = now_s();
        rc = kern_adam_cpu(&s, &b, threads, e);
        double dt = now_s() - t0;
        if (r > 0)   /* the first run pays page faults */
            x[r - 1] = (double)numel / dt;
    }
    if (!rc)
        calib_figure_of(f, x, reps);
out:
    free(p);
    free(m);
    free(v);
    free(g);
    free(lp);
    return rc;
}

/* `k` threads each memcpy their own `bytes` buffer at once; the sum of their bandwidths. */
static int copy_run(int64_t bytes, int k, int reps, struct calib_figure *f, struct rl_err *e)
{
    char **src = calloc((size_t)k, sizeof *src), **dst = calloc((size_t)k, sizeof *dst);
    int rc = 0;
    for (int i = 0; src && dst && i < k; i++) {
        src[i] = malloc((size_t)bytes);
        dst[i] = malloc((size_t)bytes);
        if (src[i])
            memset(src[i], i + 1, (size_t)bytes);
        if (dst[i])
            memset(dst[i], 0, (size_t)bytes);
        if (!src[i] || !dst[i])
            rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate copy buffers of %lld bytes", (long long)bytes);
    }
    if (!src || !dst)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
    double x[64];
    for (int r = 0; r < reps && !rc; r++) {
        double gb = 0;
#pragma omp parallel num_threads(k) reduction(+ : gb)
        {
            int i = omp_get_thread_num();
            double t0 = now_s();
            memcpy(dst[i], src[i], (size_t)bytes);
            gb += (double)bytes / (now_s() - t0) * 1e-9;
        }
        x[r] = gb;
    }
    if (!rc)
        calib_figure_of(f, x, reps);
    for (int i = 0; src && dst && i < k; i++) {
        free(src[i]);
        free(dst[i]);
    }
    free(src);
    free(dst);
    return rc;
}

static int gemm_run(int n, int threads, int reps, struct calib_figure *f, struct rl_err *e)
{
#ifdef RL_HAVE_OPENBLAS
    float *a = malloc(sizeof(float) * (size_t)n * (size_t)n), *b = malloc(sizeof(float) * (size_t)n * (size_t)n);
    float *c = malloc(sizeof(float) * (size_t)n * (size_t)n);
    int rc = 0;
    if (!a || !b || !c) {
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %dx%d GEMM operands", n, n);
    } else {
        for (int64_t i = 0; i < (int64_t)n * n; i++) {
            a[i] = (float)(i % 17) * 0.25f;
            b[i] = (float)(i % 13) * 0.5f;
            c[i] = 0;
        }
        openblas_set_num_threads(threads);
        double x[64];
        for (int r = 0; r <= reps; r++) {
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
            double dt = now_s() - t0;
            if (r > 0)
                x[r - 1] = 2.0 * n * (double)n * n / dt;
        }
        calib_figure_of(f, x, reps);
    }
    free(a);
    free(b);
    free(c);
    return rc;
#else
    (void)n;
    (void)threads;
    (void)reps;
    (void)e;
    memset(f, 0, sizeof *f);
    return 0;
#endif
}

static void host_facts(struct calib *c)
{
    if (gethostname(c->host, sizeof c->host) != 0)
        snprintf(c->host, sizeof c->host, "unknown");
    c->host[sizeof c->host - 1] = 0;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(c->date, sizeof c->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    c->cores = nc > 0 ? (int)nc : 1;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    c->host_mem_bytes = pages > 0 && psz > 0 ? (int64_t)pages * psz : 0;
    snprintf(c->cpu_model, sizeof c->cpu_model, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 2;
                colon[strcspn(colon, "\n")] = 0;
                snprintf(c->cpu_model, sizeof c->cpu_model, "%s", colon);
            }
            break;
        }
    }
    if (f)
        fclose(f);
    enum kern_isa isa;
    struct rl_err ie;
    snprintf(c->isa, sizeof c->isa, "%s", kern_isa_resolve(KERN_ISA_AUTO, &isa, &ie) == 0 ? kern_isa_name(isa) : "?");
}

/* DRAM: triad over three arrays far larger than the caches, `reps` repeats after a warm-up per
 * thread count (a GPU profile: one thread and all of them, which bound the best). Progress counts
 * on from *done. RL_ENOMEM when the arrays cannot be allocated. */
static int measure_dram(const struct calib_opts *o, int reps, int total, int *done, struct calib *c,
                        struct rl_err *e)
{
    c->dram_array_bytes = (int64_t)(o->thorough ? 256 : 64) << 20;
    int64_t n = c->dram_array_bytes / 4;
    float *a = malloc((size_t)c->dram_array_bytes), *b = malloc((size_t)c->dram_array_bytes),
          *cc = malloc((size_t)c->dram_array_bytes);
    if (!a || !b || !cc) {
        free(a);
        free(b);
        free(cc);
        return rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate 3 x %lld bytes for the DRAM triad",
                       (long long)c->dram_array_bytes);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = (float)(i & 255);
        cc[i] = 1;
    }
    for (int t = 1; t <= c->n_threads; t++) {
        if (o->gpu_host && t != 1 && t != c->n_threads)
            continue;   /* a GPU profile takes the best triad; one thread and all of them bound it */
        char what[64];
        snprintf(what, sizeof what, "DRAM triad, %d thread%s", t, t == 1 ? "" : "s");
        progress(o, what, (*done)++, total);
        double x[64];
        triad_gbps(a, b, cc, n, t);   /* warm-up */
        for (int r = 0; r < reps; r++)
            x[r] = triad_gbps(a, b, cc, n, t);
        calib_figure_of(&c->dram_gbps[t - 1], x, reps);
    }
    free(a);
    free(b);
    free(cc);
    return 0;
}

/* The emulated device: copy threads (one alone, then one per device at once), its Adam and GEMM
 * on device_threads threads, and its launch cost. Progress counts on from *done. */
static int measure_emulated_device(const struct calib_opts *o, int reps, int total, int *done, struct calib *c,
                                   struct rl_err *e)
{
    int rc;
    c->copy_bytes = (int64_t)(o->thorough ? 256 : 64) << 20;
    progress(o, "copy threads", (*done)++, total);
    if ((rc = copy_run(c->copy_bytes, 1, reps, &c->copy_gbps, e)) ||
        (rc = copy_run(c->copy_bytes, c->devices, reps, &c->copy_all_gbps, e)))
        return rc;
    progress(o, "device Adam", (*done)++, total);
    if ((rc = adam_run(c->adam_numel, c->device_threads, reps, &c->device_adam_elems_per_s, e)))
        return rc;
    progress(o, "device GEMM (OpenBLAS sgemm)", (*done)++, total);
    c->gemm_n = o->thorough ? 2048 : 1024;
    if ((rc = gemm_run(c->gemm_n, c->device_threads, o->thorough ? 5 : 3, &c->gemm_flops, e)))
        return rc;
    progress(o, "launch latency", (*done)++, total);
    double x[64];
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < 1000; i++) {
#pragma omp parallel num_threads(c->device_threads)
            {
                __asm__ volatile("" ::: "memory");
            }
        }
        x[r] = (now_s() - t0) * 1e6 / 1000;
    }
    calib_figure_of(&c->launch_us, x, reps);
    return 0;
}

int calib_measure(const struct calib_opts *o, struct calib *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    host_facts(c);
    c->devices = o->devices > 0 ? o->devices : 1;
    c->n_threads = o->max_threads > 0 ? o->max_threads : c->cores;
    if (c->n_threads > CALIB_MAX_THREADS)
        c->n_threads = CALIB_MAX_THREADS;
    c->device_threads = o->device_threads > 0 ? o->device_threads : c->cores / c->devices;
    if (c->device_threads < 1)
        c->device_threads = 1;
    int reps = o->thorough ? 15 : 9;
    int total = 2 * c->n_threads + 4, done = 0;
    int rc = measure_dram(o, reps, total, &done, c, e);
    if (rc)
        return rc;

    /* CPU Adam (kernels/, the executor's host kernel) against threads. */
    c->adam_numel = (int64_t)(o->thorough ? 16 : 4) << 20;
    for (int t = 1; t <= (o->gpu_host ? 1 : c->n_threads); t++) {   /* a GPU profile: per core */
        char what[64];
        snprintf(what, sizeof what, "CPU Adam, %d thread%s", t, t == 1 ? "" : "s");
        progress(o, what, done++, total);
        if ((rc = adam_run(c->adam_numel, t, reps, &c->adam_elems_per_s[t - 1], e)))
            return rc;
    }
    if (o->gpu_host) {   /* no emulated device on a GPU machine: its copies, Adam, GEMM, launch */
        rc = calib_measure_host(o, c->n_threads, &c->host_costs, e);
        progress(o, "done", total, total);
        return rc;
    }
    if ((rc = measure_emulated_device(o, reps, total, &done, c, e)) ||
        (rc = calib_measure_host(o, c->n_threads, &c->host_costs, e)))
        return rc;
    progress(o, "done", total, total);
    return 0;
}

int calib_measure_collectives(struct ex_comm *comm, bool thorough, struct calib *c, struct rl_err *e)
{
    if (comm->size < 2)
        return 0;
    int W = comm->size, reps = thorough ? 15 : 7;
    int64_t max_bytes = (int64_t)(thorough ? 64 : 16) << 20, min_bytes = 4096;
    char *in = malloc((size_t)max_bytes), *out = malloc((size_t)max_bytes * (size_t)W);
    float *rs = malloc((size_t)max_bytes * (size_t)W);
    int rc = 0;
    if (!in || !out || !rs) {
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %d x %lld bytes for the collectives", W,
                     (long long)max_bytes);
        goto out;
    }
    memset(in, 1, (size_t)max_bytes);
    memset(out, 0, (size_t)max_bytes * (size_t)W);
    memset(rs, 0, (size_t)max_bytes * (size_t)W);
    double x[64], y[64];
    for (int64_t b = min_bytes; b <= max_bytes && !rc; b *= 4) {
        bool last = b * 4 > max_bytes;
        for (int r = 0; r <= reps && !rc; r++) {
            if ((rc = ex_comm_barrier(comm, e)))
                break;
            double t0 = now_s();
            if ((rc = ex_comm_allgather(comm, in, out, b, e)))
                break;
            double t1 = now_s();
            if ((rc = ex_comm_barrier(comm, e)))
                break;
            double t2 = now_s();
            if ((rc = ex_comm_reduce_scatter_f32(comm, rs, b / 4, e)))
                break;
            double t3 = now_s();
            if (r == 0)
                continue;   /* warm-up */
            double bus = (double)(W - 1) / W;
            x[r - 1] = b == min_bytes ? (t1 - t0) * 1e6 : (double)b * W / (t1 - t0) * bus * 1e-9;
            y[r - 1] = (double)b * W / (t3 - t2) * bus * 1e-9;
        }
        if (rc)
            break;
        if (b == min_bytes)
            calib_figure_of(&c->collective_latency_us, x, reps);
        if (last) {
            calib_figure_of(&c->allgather_busbw_gbps, x, reps);
            calib_figure_of(&c->reduce_scatter_busbw_gbps, y, reps);
            c->coll_max_bytes = b;
        }
    }
    if (!rc) {
        c->have_mpi = true;
        c->coll_ranks = W;
    }
out:
    free(in);
    free(out);
    free(rs);
    return rc;
}

/* ---- what one rank of the run does, every rank at once ---------------------------------------- */

/* The slowest rank's time of one repeat, seconds (every rank calls it with its own). */
static int slowest(struct ex_comm *comm, double dt, double *out, struct rl_err *e)
{
    int64_t ns = (int64_t)llround(dt * 1e9);
    int rc = ex_comm_max_i64(comm, &ns, 1, e);
    *out = (double)ns * 1e-9;
    return rc;
}

static double *falloc(int64_t n)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; x && i < n; i++)
        x[i] = (float)(i & 255) * 0x1p-8f;
    return (double *)(void *)x;
}

/* One thread's in-place triad a = a + 3b + c (reads a, b, c, writes a: 16 B per element, every
 * written line already read, so the bytes counted are the bytes moved, as in Adam), vectorised
 * (no aliasing) so that it measures the memory and not the loop. */
static void triad1(float *restrict a, const float *restrict b, const float *restrict c, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        a[i] = a[i] + 3.0f * b[i] + c[i];
}

/* The run's GEMMs, one pass of the list as the executor runs it: each GEMM queued on the cpu
 * backend's compute stream (OpenBLAS on its worker thread, with the threads the environment gives
 * it), so that the time includes the stream's hand-off per operation, the stream synchronised
 * after each block. With layers: block by block as the run's forward, an all-gather of a block's
 * partition after each, so that the ranks meet at every block as in the run and the time includes
 * their waiting for each other (the all-gathers' own time, measured alone, is taken out later by
 * run_gemm_rate). gemm_dt[r]: repeat r's time of the slowest rank (s). */
static int run_gemms(struct ex_comm *comm, const struct calib_run *run, int reps, struct calib *c, double *gemm_dt,
                     struct rl_err *e)
{
    int rc = 0, W = comm->size;
    int64_t ma = 1, mb = 1, mc = 1;
    double flop = 0, dt;
    bool blocks = run->layers > 0;
    bool sync = blocks && W > 1 && run->allgather_bytes > 0;
    for (int i = 0; i < run->n_gemm; i++) {
        const struct calib_gemm_shape *g = &run->gemm[i];
        ma = g->m * g->k > ma ? g->m * g->k : ma;
        mb = g->k * g->n > mb ? g->k * g->n : mb;
        mc = g->m * g->n > mc ? g->m * g->n : mc;
        double times = blocks && !g->last ? (double)run->layers : 1.0;
        flop += 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->count * times;
    }
#ifdef RL_HAVE_OPENBLAS
    if (run->n_gemm == 0 || flop <= 0)
        return 0;
    /* The operands as the executor's compute scratch holds them: zeroed and only ever read, so they
     * stay on the kernel's zero page (which OpenBLAS reads faster than written operands); the
     * output is written, as the executor's is. */
    float *a = calloc((size_t)ma, sizeof *a), *b = calloc((size_t)mb, sizeof *b), *cc = (float *)falloc(mc);
    char *agin = sync ? calloc((size_t)run->allgather_bytes, 1) : NULL;
    char *agout = sync ? calloc((size_t)run->allgather_bytes, (size_t)W) : NULL;
    const struct ex_backend *be = &ex_backend_cpu;
    struct ex_dev *dev = NULL;
    if (!a || !b || !cc || (sync && (!agin || !agout)))
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate the GEMM operands (%lld floats)",
                     (long long)(ma + mb + mc));
    else
        rc = be->open(&dev, comm, 0, 0, e);
    for (int r = 0; r <= reps && !rc; r++) {
        if ((rc = ex_comm_barrier(comm, e)))
            break;
        double t0 = now_s();
        for (int64_t l = 0; l <= (blocks ? run->layers : 0) && !rc; l++) {
            bool last = blocks && l == run->layers;
            for (int i = 0; i < run->n_gemm && !rc; i++) {
                const struct calib_gemm_shape *g = &run->gemm[i];
                if (blocks && g->last != last)
                    continue;
                for (int64_t j = 0; j < g->count && !rc; j++)
                    rc = be->gemm(dev, g->m, g->n, g->k, a, b, cc, EX_STREAM_COMPUTE, e);
            }
            if (!rc)
                rc = be->sync(dev, EX_STREAM_COMPUTE, e);
            if (!rc && sync)
                rc = ex_comm_allgather(comm, agin, agout, run->allgather_bytes, e);
        }
        if (rc || (rc = slowest(comm, now_s() - t0, &dt, e)))
            break;
        if (r > 0)
            gemm_dt[r - 1] = dt;
    }
    if (!rc) {
        c->run_gemm_flop = flop;
        c->run_gemm_blocks = blocks ? run->layers + 1 : 0;
        c->run_gemm_syncs = sync ? run->layers + 1 : 0;
    }
    if (dev)
        be->close(dev);
    free(a);
    free(b);
    free(cc);
    free(agin);
    free(agout);
#else
    (void)comm, (void)reps, (void)c, (void)gemm_dt, (void)e, (void)dt, (void)sync;
#endif
    return rc;
}

/* The synthetic gradient shares of one bucket (this rank's share of every rank's part), as the
 * executor's backward writes them on the compute stream before each reduce-scatter. */
static int run_grad_shares(struct ex_comm *comm, const struct calib_run *run, int reps, struct calib *c,
                           struct rl_err *e)
{
    int rc = 0, W = comm->size;
    double x[64], dt;
    int64_t gcnt = run->reduce_scatter_bytes / 4;
    if (gcnt <= 0)
        return 0;
    float *bucket = calloc((size_t)gcnt, sizeof(float) * (size_t)W);
    const struct ex_backend *be = &ex_backend_cpu;
    struct ex_dev *dev = NULL;
    if (!bucket)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate a bucket of %lld x %d floats", (long long)gcnt, W);
    else
        rc = be->open(&dev, comm, 0, 0, e);
    for (int r = 0; r <= reps && !rc; r++) {
        if ((rc = ex_comm_barrier(comm, e)))
            break;
        double t0 = now_s();
        for (int q = 0; q < W && !rc; q++)
            rc = be->shares(dev, bucket + (int64_t)q * gcnt, KERN_F32, gcnt, gcnt, (int64_t)q * gcnt, 1, r + 1,
                            comm->rank, W, -1, EX_STREAM_COMPUTE, e);
        if (rc || (rc = be->sync(dev, EX_STREAM_COMPUTE, e)) || (rc = slowest(comm, now_s() - t0, &dt, e)))
            break;
        if (r > 0)
            x[r - 1] = (double)gcnt * W / dt;
    }
    if (!rc) {
        c->run_grad_elements = gcnt * W;
        calib_figure_of(&c->run_grad_elems_per_s, x, reps);
    }
    if (dev)
        be->close(dev);
    free(bucket);
    return rc;
}

/* Device Adam over the rank's partition in one call; host Adam over as many elements in
 * chunk-sized calls; a copy of the same bytes in chunk-sized memcpys (the run's D2H). */
static int run_adam_and_copy(struct ex_comm *comm, const struct calib_run *run, int reps, struct calib *c,
                             struct rl_err *e)
{
    int rc = 0;
    double x[64], y[64], z[64], dt;
    int64_t n = run->device_adam_numel;
    if (n <= 0)
        return 0;
    float *p = (float *)falloc(n), *m = (float *)falloc(n), *v = (float *)falloc(n), *g = (float *)falloc(n);
    float *dst = (float *)falloc(n);
    uint16_t *lp = calloc((size_t)n, 2);
    if (!p || !m || !v || !g || !lp || !dst)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %lld Adam elements", (long long)n);
    struct kern_adam_hparams h = kern_adam_hparams_default();
    int64_t chunk = run->host_adam_numel > 0 && run->host_adam_numel < n ? run->host_adam_numel : n;
    for (int r = 0; r <= reps && !rc; r++) {
        struct kern_adam_scalars sc;
        if ((rc = kern_adam_scalars_make(&h, r + 1, &sc, e)) || (rc = ex_comm_barrier(comm, e)))
            break;
        struct kern_adam_bufs bb = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g, .grad_dtype = KERN_F32,
                                    .param_lowp = lp, .param_lowp_dtype = KERN_BF16, .numel = n};
        double t0 = now_s();
        if ((rc = kern_adam_cpu(&sc, &bb, 1, e)) || (rc = slowest(comm, now_s() - t0, &dt, e)))
            break;
        if (r > 0)
            x[r - 1] = (double)n / dt;
        if (run->host_adam_numel <= 0)
            continue;
        if ((rc = ex_comm_barrier(comm, e)))
            break;
        t0 = now_s();
        for (int64_t a0 = 0; a0 < n && !rc; a0 += chunk) {
            struct kern_adam_bufs cb = bb;
            cb.param += a0, cb.exp_avg += a0, cb.exp_avg_sq += a0, cb.grad += a0, cb.param_lowp = lp + a0;
            cb.numel = n - a0 < chunk ? n - a0 : chunk;
            rc = kern_adam_cpu(&sc, &cb, 1, e);
        }
        if (rc || (rc = slowest(comm, now_s() - t0, &dt, e)))
            break;
        if (r > 0)
            y[r - 1] = (double)n / dt;
        if ((rc = ex_comm_barrier(comm, e)))
            break;
        t0 = now_s();
        for (int64_t a0 = 0; a0 < n; a0 += chunk)
            memcpy(dst + a0, g + a0, (size_t)(n - a0 < chunk ? n - a0 : chunk) * 4);
        if ((rc = slowest(comm, now_s() - t0, &dt, e)))
            break;
        if (r > 0)
            z[r - 1] = (double)n * 4 / dt * 1e-9;
    }
    if (!rc) {
        c->run_device_adam_numel = n;
        calib_figure_of(&c->run_device_adam_elems_per_s, x, reps);
        if (run->host_adam_numel > 0) {
            c->run_host_adam_numel = chunk;
            calib_figure_of(&c->run_host_adam_elems_per_s, y, reps);
            c->run_copy_bytes = chunk * 4;
            calib_figure_of(&c->run_copy_gbps, z, reps);
        }
    }
    free(p);
    free(m);
    free(v);
    free(g);
    free(lp);
    free(dst);
    return rc;
}

/* Memory: a triad over the rank's working set on every rank at once; the sum of the ranks'
 * bandwidths is what they share. */
static int run_triad(struct ex_comm *comm, const struct calib_run *run, int reps, struct calib *c, struct rl_err *e)
{
    int rc = 0;
    double x[64], dt;
    int64_t tn = run->working_set_bytes / 12;   /* three arrays of 4 B */
    if (tn <= 0)
        return 0;
    float *a = (float *)falloc(tn), *b = (float *)falloc(tn), *cc = (float *)falloc(tn);
    if (!a || !b || !cc)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate 3 x %lld floats for the triad", (long long)tn);
    for (int r = 0; r <= reps && !rc; r++) {
        if ((rc = ex_comm_barrier(comm, e)))
            break;
        double t0 = now_s();
        triad1(a, b, cc, tn);
        double mine = now_s() - t0;
        if ((rc = slowest(comm, mine, &dt, e)))
            break;
        if (r > 0)
            x[r - 1] = (double)tn * 16.0 / dt * 1e-9 * comm->size;
    }
    if (!rc) {
        c->run_triad_bytes = tn * 12;
        calib_figure_of(&c->run_mem_gbps, x, reps);
    }
    free(a);
    free(b);
    free(cc);
    return rc;
}

/* The collectives at the run's message sizes. */
static int run_collectives(struct ex_comm *comm, const struct calib_run *run, int reps, struct calib *c,
                           struct rl_err *e)
{
    int rc = 0, W = comm->size;
    double x[64], y[64], dt;
    int64_t agb = run->allgather_bytes, rsb = run->reduce_scatter_bytes / 4 * 4;
    if (W <= 1 || (agb <= 0 && rsb <= 0))
        return 0;
    int64_t big = agb > rsb ? agb : rsb;
    char *in = malloc((size_t)big), *out = malloc((size_t)big * (size_t)W);
    if (!in || !out)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %d x %lld bytes for the collectives", W, (long long)big);
    else {
        memset(in, 1, (size_t)big);
        memset(out, 0, (size_t)big * (size_t)W);
    }
    for (int r = 0; r <= reps && !rc; r++) {
        double t0;
        if (agb > 0) {
            if ((rc = ex_comm_barrier(comm, e)))
                break;
            t0 = now_s();
            if ((rc = ex_comm_allgather(comm, in, out, agb, e)) || (rc = slowest(comm, now_s() - t0, &dt, e)))
                break;
            if (r > 0)
                x[r - 1] = dt * 1e6;
        }
        if (rsb > 0) {
            if ((rc = ex_comm_barrier(comm, e)))
                break;
            t0 = now_s();
            if ((rc = ex_comm_reduce_scatter_f32(comm, (float *)(void *)out, rsb / 4, e)) ||
                (rc = slowest(comm, now_s() - t0, &dt, e)))
                break;
            if (r > 0)
                y[r - 1] = dt * 1e6;
        }
    }
    if (!rc && agb > 0) {
        c->run_allgather_bytes = agb;
        calib_figure_of(&c->run_allgather_us, x, reps);
    }
    if (!rc && rsb > 0) {
        c->run_reduce_scatter_bytes = rsb;
        calib_figure_of(&c->run_reduce_scatter_us, y, reps);
    }
    free(in);
    free(out);
    return rc;
}

/* The GEMM rate: the all-gathers' own time (measured alone) taken out of the blocks' time (at most
 * half of it: a noisy figure alone cannot make the rate absurd). */
static void run_gemm_rate(const double *gemm_dt, int reps, struct calib *c)
{
    double x[64];
    int64_t n_sync = c->run_gemm_syncs;
    double ag = n_sync > 0 && c->run_allgather_bytes > 0 ? c->run_allgather_us.median * 1e-6 : 0;
    for (int r = 0; r < reps; r++) {
        double t = gemm_dt[r] - (double)n_sync * ag;
        x[r] = c->run_gemm_flop / (t > gemm_dt[r] * 0.5 ? t : gemm_dt[r] * 0.5);
    }
    calib_figure_of(&c->run_gemm_flops, x, reps);
}

int calib_measure_run(struct ex_comm *comm, const struct calib_run *run, bool thorough, struct calib *c,
                      struct rl_err *e)
{
    int reps = thorough ? 15 : 7;
    double gemm_dt[64] = {0};
    c->run_ranks = comm->size;
    RL_TRY(run_gemms(comm, run, reps, c, gemm_dt, e));
    RL_TRY(run_grad_shares(comm, run, reps, c, e));
    RL_TRY(run_adam_and_copy(comm, run, reps, c, e));
    RL_TRY(run_triad(comm, run, reps, c, e));
    RL_TRY(run_collectives(comm, run, reps, c, e));
    if (c->run_gemm_flop > 0)
        run_gemm_rate(gemm_dt, reps, c);
    c->have_run = true;
    return 0;
}

json_t *calib_figure_json(const struct calib_figure *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "median", json_real(f->median));
    json_object_set_new(o, "min", json_real(f->min));
    json_object_set_new(o, "max", json_real(f->max));
    json_object_set_new(o, "repeats", json_integer(f->repeats));
    if (f->best > 0)
        json_object_set_new(o, "best", json_real(f->best));
    return o;
}

static int read_fig(json_t *o, const char *k, struct calib_figure *f)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_object(x) || !json_is_number(json_object_get(x, "median")))
        return -1;
    f->median = json_number_value(json_object_get(x, "median"));
    f->min = json_number_value(json_object_get(x, "min"));
    f->max = json_number_value(json_object_get(x, "max"));
    f->repeats = (int)json_integer_value(json_object_get(x, "repeats"));
    return 0;
}

/* The run's figures under "run": each the size it was measured at (an int64_t of struct
 * calib; the pair is there only when it is > 0) and the figure. */
static const struct {
    const char *size_key, *fig_key;   /* JSON keys */
    size_t size_off, fig_off;         /* offsetof in struct calib */
} run_keys[] = {
#define RK(sk, sm, fk, fm) {sk, fk, offsetof(struct calib, sm), offsetof(struct calib, fm)}
    RK("device_adam_numel", run_device_adam_numel, "device_adam_elements_per_s", run_device_adam_elems_per_s),
    RK("host_adam_numel", run_host_adam_numel, "host_adam_elements_per_s", run_host_adam_elems_per_s),
    RK("copy_bytes", run_copy_bytes, "copy_gbps", run_copy_gbps),
    RK("triad_bytes", run_triad_bytes, "memory_gbps", run_mem_gbps),
    RK("allgather_bytes", run_allgather_bytes, "allgather_us", run_allgather_us),
    RK("reduce_scatter_bytes", run_reduce_scatter_bytes, "reduce_scatter_us", run_reduce_scatter_us),
    RK("grad_elements", run_grad_elements, "grad_elements_per_s", run_grad_elems_per_s),
#undef RK
};
#define N_RUN_KEYS (sizeof run_keys / sizeof run_keys[0])

static int64_t *run_size(struct calib *c, size_t i) { return (int64_t *)(void *)((char *)c + run_keys[i].size_off); }
static struct calib_figure *run_fig(struct calib *c, size_t i)
{
    return (struct calib_figure *)(void *)((char *)c + run_keys[i].fig_off);
}

json_t *calib_collectives_json(const struct calib *c)
{
    json_t *o = json_object();
    if (c->have_mpi) {
        json_object_set_new(o, "ranks", json_integer(c->coll_ranks));
        json_object_set_new(o, "max_bytes", json_integer(c->coll_max_bytes));
        json_object_set_new(o, "allgather_busbw_gbps", calib_figure_json(&c->allgather_busbw_gbps));
        json_object_set_new(o, "reduce_scatter_busbw_gbps", calib_figure_json(&c->reduce_scatter_busbw_gbps));
        json_object_set_new(o, "latency_us", calib_figure_json(&c->collective_latency_us));
    }
    if (!c->have_run)
        return o;
    json_t *r = json_object();
    json_object_set_new(r, "ranks", json_integer(c->run_ranks));
    if (c->run_gemm_flop > 0) {
        json_object_set_new(r, "gemm_flop", json_real(c->run_gemm_flop));
        json_object_set_new(r, "gemm_flops", calib_figure_json(&c->run_gemm_flops));
        json_object_set_new(r, "gemm_blocks", json_integer(c->run_gemm_blocks));
        json_object_set_new(r, "gemm_syncs", json_integer(c->run_gemm_syncs));
    }
    for (size_t i = 0; i < N_RUN_KEYS; i++) {
        int64_t size = *(const int64_t *)(const void *)((const char *)c + run_keys[i].size_off);
        if (size > 0) {
            json_object_set_new(r, run_keys[i].size_key, json_integer(size));
            json_object_set_new(r, run_keys[i].fig_key,
                                calib_figure_json((const struct calib_figure *)(const void *)((const char *)c + run_keys[i].fig_off)));
        }
    }
    json_object_set_new(o, "run", r);
    return o;
}

int calib_read_collectives(const char *json_text, struct calib *c, struct rl_err *e)
{
    json_t *o = json_loads(json_text, 0, NULL);
    bool coll = json_object_get(o, "allgather_busbw_gbps") != NULL;   /* absent on one rank */
    int bad = !o || (coll && (read_fig(o, "allgather_busbw_gbps", &c->allgather_busbw_gbps) ||
                              read_fig(o, "reduce_scatter_busbw_gbps", &c->reduce_scatter_busbw_gbps) ||
                              read_fig(o, "latency_us", &c->collective_latency_us)));
    bad = bad || (!coll && !json_is_object(json_object_get(o, "run")));
    if (!bad && coll) {
        c->coll_ranks = (int)json_integer_value(json_object_get(o, "ranks"));
        c->coll_max_bytes = json_integer_value(json_object_get(o, "max_bytes"));
        c->have_mpi = true;
    }
    json_t *r = json_object_get(o, "run");
    if (!bad && json_is_object(r)) {   /* each figure is there only when it was measured */
        c->have_run = true;
        c->run_ranks = (int)json_integer_value(json_object_get(r, "ranks"));
        c->run_gemm_flop = json_number_value(json_object_get(r, "gemm_flop"));
        c->run_gemm_blocks = json_integer_value(json_object_get(r, "gemm_blocks"));
        c->run_gemm_syncs = json_integer_value(json_object_get(r, "gemm_syncs"));
        read_fig(r, "gemm_flops", &c->run_gemm_flops);
        for (size_t i = 0; i < N_RUN_KEYS; i++) {
            *run_size(c, i) = json_integer_value(json_object_get(r, run_keys[i].size_key));
            read_fig(r, run_keys[i].fig_key, run_fig(c, i));
        }
    }
    json_decref(o);
    return bad ? rl_errf(e, RL_EINVAL, "collectives (ratiolab calibrate --collectives-only): unexpected output") : 0;
}

/* ---- the profile -------------------------------------------------------------------------------- */
static double best_dram(const struct calib *c, int *at)
{
    double best = 0;
    for (int t = 0; t < c->n_threads; t++)
        if (c->dram_gbps[t].median > best) {
            best = c->dram_gbps[t].median;
            *at = t + 1;
        }
    return best;
}

static void src(struct hw_writer *w, const char *key, const struct calib *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void src(struct hw_writer *w, const char *key, const struct calib *c, const char *fmt, ...)
{
    char body[1024], all[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", c->host, c->date, body);
    hw_source(w, key, all);
}

static void fig_span(const struct calib_figure *f, double scale, char *buf, size_t n)
{
    snprintf(buf, n, "median %.4g, spread %.4g..%.4g, %d repeats", f->median * scale, f->min * scale, f->max * scale,
             f->repeats);
}

/* What every run figure's source ends with: how the ranks measured it. */
static const char run_all_ranks[] = "every rank at once under the validated run's mpirun, the slowest rank's time "
                                    "per repeat";

/* The device's GEMM rate at the model's shapes and its synthetic gradient shares. */
static void run_figures_device(const struct calib *c, struct hw_writer *w)
{
    char sp[160];
    const char *all = run_all_ranks;
    if (c->run_gemm_flop > 0 && c->run_gemm_flops.median > 0) {
        hw_put(w, "gpu.tensor_tflops", c->run_gemm_flops.median * 1e-12);
        hw_put(w, "gpu.fp32_tflops", c->run_gemm_flops.median * 1e-12);
        fig_span(&c->run_gemm_flops, 1e-9, sp, sizeof sp);
        char how[320] = "";
        if (c->run_gemm_syncs > 0)
            snprintf(how, sizeof how, ", in %lld blocks as the run's forward, each followed by the all-gather of a "
                     "block's partition (the ranks meet at every block and wait for each other, as in the run; the "
                     "all-gathers' own time, measured alone, taken out)", (long long)c->run_gemm_blocks);
        else if (c->run_gemm_blocks > 0)
            snprintf(how, sizeof how, ", in %lld blocks as the run's forward", (long long)c->run_gemm_blocks);
        src(w, "gpu.tensor_tflops", c, "OpenBLAS cblas_sgemm over the GEMMs of one forward pass at the model's shapes "
            "(%.4g GFLOP), queued one by one on the cpu backend's compute stream as the executor queues them%s, operands zeroed and only read as the executor's, %s: GFLOP/s %s; fp32 whatever the "
            "model dtype", c->run_gemm_flop * 1e-9, how, all, sp);
        src(w, "gpu.fp32_tflops", c, "as gpu.tensor_tflops (the emulated device computes in fp32)");
    }
    if (c->run_grad_elements > 0 && c->run_grad_elems_per_s.median > 0) {
        hw_put(w, "gpu.emulated_grad_elements_per_s", c->run_grad_elems_per_s.median);
        fig_span(&c->run_grad_elems_per_s, 1, sp, sizeof sp);
        src(w, "gpu.emulated_grad_elements_per_s", c, "the executor's synthetic gradient shares (exec/synth.c) of a "
            "bucket of %lld fp32 elements written on the cpu backend's compute stream, as its backward does before "
            "each reduce-scatter, %s: elements/s %s", (long long)c->run_grad_elements, all, sp);
    }
}

/* The device's memory rate as its Adam at the rank's size achieves it, and host Adam at the chunk size. */
static void run_figures_adam(const struct calib *c, struct hw_writer *w)
{
    char sp[160];
    const char *all = run_all_ranks;
    if (c->run_device_adam_numel > 0 && c->run_device_adam_elems_per_s.median > 0) {
        hw_put(w, "gpu.hbm_gbps", c->run_device_adam_elems_per_s.median * 30 * 1e-9);
        hw_put(w, "gpu.hbm_efficiency", 1.0);
        fig_span(&c->run_device_adam_elems_per_s, 1, sp, sizeof sp);
        src(w, "gpu.hbm_gbps", c, "the device's memory rate as its Adam uses it: kernels/ CPU Adam (%s, 1 thread, as "
            "the cpu backend) over the rank's %lld elements in one call, %s: elements/s %s, x 30 B per element",
            c->isa, (long long)c->run_device_adam_numel, all, sp);
        src(w, "gpu.hbm_efficiency", c, "the memory rate above is already the achieved one");
    }
    if (c->run_host_adam_numel > 0 && c->run_host_adam_elems_per_s.median > 0) {
        hw_put(w, "cpu_adam.elements_per_s_per_core", c->run_host_adam_elems_per_s.median);
        fig_span(&c->run_host_adam_elems_per_s, 1, sp, sizeof sp);
        src(w, "cpu_adam.elements_per_s_per_core", c, "kernels/ CPU Adam (%s, 1 thread, as the run's --threads) over "
            "the rank's %lld elements in calls of %lld (the run's chunk), %s: elements/s %s", c->isa,
            (long long)c->run_device_adam_numel, (long long)c->run_host_adam_numel, all, sp);
    }
}

/* Copies at the chunk size (and W ranks' of them at once, the uplink), the memory all W ranks
 * share at their working sets. */
static void run_figures_memory(const struct calib *c, int W, struct hw_writer *w)
{
    char sp[160];
    const char *all = run_all_ranks;
    if (c->run_copy_bytes > 0 && c->run_copy_gbps.median > 0) {
        double g = c->run_copy_gbps.median;
        fig_span(&c->run_copy_gbps, 1, sp, sizeof sp);
        const char *copies[4] = {"gpu.h2d_pinned_gbps", "gpu.d2h_pinned_gbps", "gpu.h2d_pageable_gbps",
                                 "gpu.d2h_pageable_gbps"};
        for (int i = 0; i < 4; i++) {
            hw_put(w, copies[i], g);
            src(w, copies[i], c, "memcpy of the rank's %lld fp32 gradients in copies of %lld bytes (the run's chunk), "
                "%s: GB/s %s", (long long)c->run_device_adam_numel, (long long)c->run_copy_bytes, all, sp);
        }
        hw_put_at(w, "node.pcie_switches[].uplink_gbps", 0, hw_clamp("gpu.h2d_pinned_gbps", g) * W);
        src(w, "node.pcie_switches[].uplink_gbps", c, "%d ranks' copies at once: %d x the copy rate above (measured "
            "with all of them copying)", W, W);
    }
    if (c->run_triad_bytes > 0 && c->run_mem_gbps.median > 0) {
        hw_put_at(w, "node.sockets[].dram_gbps", 0, c->run_mem_gbps.median);
        fig_span(&c->run_mem_gbps, 1, sp, sizeof sp);
        src(w, "node.sockets[].dram_gbps", c, "the memory the ranks share: an in-place triad a = a + 3b + c (16 B per element moved, no write-allocate) over "
            "%lld bytes per rank (the rank's model states), on all %d ranks at once, the sum of their rates: GB/s %s",
            (long long)c->run_triad_bytes, W, sp);
    }
}

/* The collectives at the run's sizes on W > 1 ranks, by alpha-beta over MPI's latency. */
static void run_figures_collectives(const struct calib *c, int W, struct hw_writer *w)
{
    char sp[160];
    const char *all = run_all_ranks;
    double alpha = c->have_mpi ? c->collective_latency_us.median : 0;
    const struct {
        const char *key;           /* collectives.* */
        int64_t bytes;             /* per-rank message */
        const struct calib_figure *us;   /* its time */
        const char *what;          /* MPI call */
    } k[2] = {{"collectives.allgather_busbw_gbps", c->run_allgather_bytes, &c->run_allgather_us, "MPI_Allgather"},
              {"collectives.reduce_scatter_busbw_gbps", c->run_reduce_scatter_bytes, &c->run_reduce_scatter_us,
               "MPI_Reduce_scatter_block (fp32)"}};
    for (int i = 0; i < 2 && W > 1; i++) {
        if (k[i].bytes <= 0 || k[i].us->median <= 0)
            continue;
        /* alpha-beta: the time beyond the latency carries the bus bytes (nccl-tests convention). */
        double t = k[i].us->median - alpha;
        t = t > 0.1 * k[i].us->median ? t : 0.1 * k[i].us->median;
        double bus = (double)k[i].bytes * (W - 1);
        double g = bus / (t * 1e-6) * 1e-9;
        hw_put(w, k[i].key, g);
        if (i == 1)
            hw_put(w, "collectives.allreduce_busbw_gbps", g);
        fig_span(k[i].us, 1, sp, sizeof sp);
        src(w, k[i].key, c, "%s of %lld bytes per rank on %d ranks, %s: us %s; bus bytes %.0f over the time beyond "
            "the %.2f us latency", k[i].what, (long long)k[i].bytes, W, all, sp, bus, alpha);
        if (i == 1)
            src(w, "collectives.allreduce_busbw_gbps", c, "taken as the reduce-scatter's (unverified)");
    }
}

/* The figures of one rank of the run (measured on every rank at once, under the run's launch)
 * replace the node-wide ones they correspond to: the device's GEMM rate at the model's shapes,
 * its memory rate as its Adam at the rank's size achieves it, host Adam and copies at the chunk
 * size, the memory all ranks share at their working sets, the collectives at the run's sizes. */
static void run_figures(const struct calib *c, struct hw_writer *w)
{
    int W = c->run_ranks > 0 ? c->run_ranks : 1;
    run_figures_device(c, w);
    run_figures_adam(c, w);
    run_figures_memory(c, W, w);
    run_figures_collectives(c, W, w);
}

/* The emulated device's figures as the profile holds them, derived once from the measurements;
 * every section of calib_profile writes from these. */
struct emu_figures {
    int dram_threads;              /* thread count of the best triad (1 when none beats 0) */
    double dram_gbps;              /* that triad's median, GB/s: the socket's and the device's memory rate */
    double adam_bytes;             /* bytes the measured Adam moves per element */
    double gemm_tflops;            /* the device GEMM's median, TFLOP/s, or the nominal 0.01 without OpenBLAS */
    bool have_gemm;                /* gemm_tflops was measured */
    double copy1_gbps;             /* one copy thread, within gpu.h2d_pinned_gbps's range */
    double allgather_gbps;         /* MPI's all-gather bus bandwidth, or half copy1_gbps without MPI */
    double reduce_scatter_gbps;    /* MPI's reduce-scatter bus bandwidth, or half copy1_gbps without MPI */
};

static void emu_derive(const struct calib *c, struct emu_figures *f)
{
    f->dram_threads = 1;
    f->dram_gbps = best_dram(c, &f->dram_threads);
    f->adam_bytes = 30;   /* fp32 p, m, v, grad read (16), p, m, v written (12), bf16 copy written (2) */
    f->gemm_tflops = c->gemm_flops.median * 1e-12;
    f->have_gemm = f->gemm_tflops > 0;
    if (!f->have_gemm)   /* without OpenBLAS: a nominal figure, said so in the source */
        f->gemm_tflops = 0.01;
    /* The estimates below start from figures as the profile holds them (within their keys' ranges). */
    f->copy1_gbps = hw_clamp("gpu.h2d_pinned_gbps", c->copy_gbps.median);
    f->allgather_gbps = c->have_mpi ? c->allgather_busbw_gbps.median : f->copy1_gbps / 2;
    f->reduce_scatter_gbps = c->have_mpi ? c->reduce_scatter_busbw_gbps.median : f->copy1_gbps / 2;
}

/* The name, the description and node.*: one socket, one "switch" holding every device. */
static void emu_put_node(const struct calib *c, const struct emu_figures *f, const char *name, struct hw_writer *w)
{
    hw_put_str(w, "name", name);
    char desc[512];
    snprintf(desc, sizeof desc, "emulated devices (ratiolab cpu backend) on %s: %s, %d cores, %d devices of %d "
             "thread%s; measured by ratiolab calibrate on %s", c->host, c->cpu_model, c->cores, c->devices,
             c->device_threads, c->device_threads == 1 ? "" : "s", c->date);
    hw_put_str(w, "description", desc);
    hw_put(w, "node.gpus", c->devices);
    hw_put(w, "node.host_memory_bytes", (double)c->host_mem_bytes);
    hw_put_at(w, "node.sockets[].cores", 0, c->cores);
    hw_put_at(w, "node.sockets[].dram_gbps", 0, f->dram_gbps);
    hw_put(w, "node.inter_socket_gbps", f->dram_gbps);
    int gl[HW_MAX_GPUS];
    for (int g = 0; g < c->devices && g < HW_MAX_GPUS; g++)
        gl[g] = g;
    hw_put_at(w, "node.pcie_switches[].socket", 0, 0);
    hw_put_at(w, "node.pcie_switches[].uplink_gbps", 0, c->copy_all_gbps.median);
    hw_put_list(w, "node.pcie_switches[].gpus", 0, gl, c->devices < HW_MAX_GPUS ? c->devices : HW_MAX_GPUS);
}

/* gpu.*, collectives.*, network.*, latency_us.* and cpu_adam.*: the device is host DRAM and cores. */
static void emu_put_device(const struct calib *c, const struct emu_figures *f, struct hw_writer *w)
{
    double copy1 = f->copy1_gbps;
    hw_put_str(w, "gpu.model", "emulated (host DRAM and cores)");
    hw_put(w, "gpu.memory_bytes", (double)(c->host_mem_bytes / c->devices));
    hw_put(w, "gpu.hbm_gbps", f->dram_gbps);
    hw_put(w, "gpu.hbm_efficiency", c->device_adam_elems_per_s.median * f->adam_bytes / (f->dram_gbps * 1e9));
    hw_put(w, "gpu.tensor_tflops", f->gemm_tflops);
    hw_put(w, "gpu.tensor_efficiency", 1.0);
    hw_put(w, "gpu.fp32_tflops", f->gemm_tflops);
    hw_put(w, "gpu.fp32_efficiency", 1.0);
    hw_put(w, "gpu.h2d_pinned_gbps", copy1);
    hw_put(w, "gpu.d2h_pinned_gbps", copy1);
    hw_put(w, "gpu.h2d_pageable_gbps", copy1);
    hw_put(w, "gpu.d2h_pageable_gbps", copy1);
    hw_put(w, "gpu.context_bytes", 0);
    hw_put(w, "gpu.allocator_overhead", 0);
    hw_put(w, "gpu.emulated", 1);
    hw_put(w, "gpu.emulated_cores", c->device_threads);
    hw_put(w, "collectives.allgather_busbw_gbps", f->allgather_gbps);
    hw_put(w, "collectives.reduce_scatter_busbw_gbps", f->reduce_scatter_gbps);
    hw_put(w, "collectives.allreduce_busbw_gbps", f->reduce_scatter_gbps);
    hw_put(w, "network.node_gbps", copy1);
    hw_put(w, "latency_us.kernel_launch", c->launch_us.median);
    hw_put(w, "latency_us.pcie_copy", 0);
    hw_put(w, "latency_us.collective_intra", c->have_mpi ? c->collective_latency_us.median : 0);
    hw_put(w, "latency_us.collective_inter", 0);
    hw_put(w, "cpu_adam.elements_per_s_per_core", c->adam_elems_per_s[0].median);
    hw_put(w, "cpu_adam.dram_bytes_per_element", f->adam_bytes);
}

/* The sources of node.*: the triad's curve by threads, the copy threads at once. */
static void emu_src_node(const struct calib *c, const struct emu_figures *f, struct hw_writer *w)
{
    const struct calib_figure *dr = &c->dram_gbps[f->dram_threads - 1];
    int at = f->dram_threads;
    char curve[600] = "";
    for (int t = 0; t < c->n_threads; t++) {
        size_t l = strlen(curve);
        snprintf(curve + l, sizeof curve - l, "%s%d: %.1f", t ? ", " : "", t + 1, c->dram_gbps[t].median);
    }
    src(w, "node.gpus", c, "the emulated devices (ranks) the profile is for (--devices)");
    src(w, "node.host_memory_bytes", c, "MemTotal (sysconf)");
    src(w, "node.sockets[].cores", c, "online cores (sysconf), %s, seen as one socket", c->cpu_model);
    src(w, "node.sockets[].dram_gbps", c, "STREAM-style triad a = b + 3c over 3 x %lld MiB float arrays, 12 B per "
        "element, OpenMP static chunks; best over thread counts (%d thread%s: median %.2f GB/s, spread %.2f..%.2f, "
        "%d repeats); GB/s by threads: %s", (long long)(c->dram_array_bytes >> 20), at, at == 1 ? "" : "s",
        dr->median, dr->min, dr->max, dr->repeats, curve);
    src(w, "node.inter_socket_gbps", c, "one socket: no inter-socket link (set to the DRAM bandwidth, unused)");
    src(w, "node.pcie_switches[].socket", c, "the emulated devices live in the one socket's DRAM");
    src(w, "node.pcie_switches[].gpus", c, "every emulated device shares the host's DRAM");
    src(w, "node.pcie_switches[].uplink_gbps", c, "%d copy threads at once, memcpy of %lld MiB each, sum of their "
        "rates: median %.2f GB/s, spread %.2f..%.2f, %d repeats (the copies of all devices share DRAM)", c->devices,
        (long long)(c->copy_bytes >> 20), c->copy_all_gbps.median, c->copy_all_gbps.min, c->copy_all_gbps.max,
        c->copy_all_gbps.repeats);
}

/* The sources of gpu.*: device Adam over the triad, the GEMM (or its nominal figure), the copies. */
static void emu_src_gpu(const struct calib *c, const struct emu_figures *f, struct hw_writer *w)
{
    src(w, "gpu.memory_bytes", c, "host memory divided among the emulated devices");
    src(w, "gpu.hbm_gbps", c, "device memory is host DRAM: the triad bandwidth above");
    src(w, "gpu.hbm_efficiency", c, "device Adam (%d thread%s, %lld elements, kernels/ CPU Adam, %s): median %.3g "
        "elements/s (spread %.3g..%.3g, %d repeats) x %.0f B per element over the DRAM bandwidth",
        c->device_threads, c->device_threads == 1 ? "" : "s", (long long)c->adam_numel, c->isa,
        c->device_adam_elems_per_s.median, c->device_adam_elems_per_s.min, c->device_adam_elems_per_s.max,
        c->device_adam_elems_per_s.repeats, f->adam_bytes);
    if (f->have_gemm) {
        char g[400];
        snprintf(g, sizeof g, "OpenBLAS cblas_sgemm %dx%dx%d on %d thread%s (the device's): median %.3g TFLOP/s, "
                 "spread %.3g..%.3g, %d repeats; the emulated device computes in fp32 whatever the model dtype",
                 c->gemm_n, c->gemm_n, c->gemm_n, c->device_threads, c->device_threads == 1 ? "" : "s",
                 c->gemm_flops.median * 1e-12, c->gemm_flops.min * 1e-12, c->gemm_flops.max * 1e-12, c->gemm_flops.repeats);
        src(w, "gpu.tensor_tflops", c, "%s", g);
        src(w, "gpu.fp32_tflops", c, "%s", g);
    } else {
        src(w, "gpu.tensor_tflops", c, "not measured: built without OpenBLAS (nominal 0.01 TFLOP/s; unverified)");
        src(w, "gpu.fp32_tflops", c, "not measured: built without OpenBLAS (nominal 0.01 TFLOP/s; unverified)");
    }
    src(w, "gpu.tensor_efficiency", c, "the GEMM rate is already the achieved one");
    src(w, "gpu.fp32_efficiency", c, "the GEMM rate is already the achieved one");
    const char *copies[4] = {"gpu.h2d_pinned_gbps", "gpu.d2h_pinned_gbps", "gpu.h2d_pageable_gbps", "gpu.d2h_pageable_gbps"};
    for (int i = 0; i < 4; i++)
        src(w, copies[i], c, "one copy thread, memcpy of %lld MiB between host buffers: median %.2f GB/s, spread "
            "%.2f..%.2f, %d repeats (pinned and pageable are the same memory here)", (long long)(c->copy_bytes >> 20),
            c->copy_gbps.median, c->copy_gbps.min, c->copy_gbps.max, c->copy_gbps.repeats);
    src(w, "gpu.context_bytes", c, "no CUDA context on the emulated device");
    src(w, "gpu.allocator_overhead", c, "the emulated device pool allocates exactly");
    src(w, "gpu.emulated", c, "ratiolab cpu backend: device memory and kernels are host DRAM and cores");
    src(w, "gpu.emulated_cores", c, "threads of one emulated device's kernels (--device-threads)");
}

/* The sources of collectives.*, network.*, latency_us.* and cpu_adam.*: MPI's figures or, without
 * mpirun, the estimates said so; CPU Adam's curve by threads. */
static void emu_src_links(const struct calib *c, struct hw_writer *w)
{
    const char *cn[3] = {"collectives.allgather_busbw_gbps", "collectives.reduce_scatter_busbw_gbps",
                         "collectives.allreduce_busbw_gbps"};
    for (int i = 0; i < 3; i++) {
        const struct calib_figure *bw = i == 0 ? &c->allgather_busbw_gbps : &c->reduce_scatter_busbw_gbps;
        if (c->have_mpi)
            src(w, cn[i], c, "MPI %s under mpirun, %d ranks, %lld MiB per rank, bus bandwidth (nccl-tests convention): "
                "median %.2f GB/s, spread %.2f..%.2f%s", i == 0 ? "all-gather" : "reduce-scatter", c->coll_ranks,
                (long long)(c->coll_max_bytes >> 20), bw->median, bw->min, bw->max,
                i == 2 ? " (all-reduce taken as reduce-scatter; unverified)" : "");
        else
            src(w, cn[i], c, "not measured (not run under mpirun): estimated as half the one-thread copy bandwidth "
                "(%.2f GB/s; shared-memory MPI copies through a buffer; unverified)", c->copy_gbps.median);
    }
    src(w, "network.node_gbps", c, "one node: unused (set to the copy bandwidth)");
    src(w, "latency_us.kernel_launch", c, "an empty OpenMP parallel region of %d thread%s: median %.2f us, spread "
        "%.2f..%.2f, %d x 1000 regions", c->device_threads, c->device_threads == 1 ? "" : "s", c->launch_us.median,
        c->launch_us.min, c->launch_us.max, c->launch_us.repeats);
    src(w, "latency_us.pcie_copy", c, "a copy is a memcpy: no fixed cost beyond the bandwidth");
    if (c->have_mpi)
        src(w, "latency_us.collective_intra", c, "MPI all-gather of 4 KiB per rank over %d ranks: median %.1f us, "
            "spread %.1f..%.1f, %d repeats", c->coll_ranks, c->collective_latency_us.median,
            c->collective_latency_us.min, c->collective_latency_us.max, c->collective_latency_us.repeats);
    else
        src(w, "latency_us.collective_intra", c, "not measured (not run under mpirun): 0; unverified");
    src(w, "latency_us.collective_inter", c, "one node: unused");
    const struct calib_figure *a1 = &c->adam_elems_per_s[0];
    char acurve[600] = "";
    for (int t = 0; t < c->n_threads; t++) {
        size_t l = strlen(acurve);
        snprintf(acurve + l, sizeof acurve - l, "%s%d: %.3g", t ? ", " : "", t + 1, c->adam_elems_per_s[t].median);
    }
    src(w, "cpu_adam.elements_per_s_per_core", c, "kernels/ CPU Adam (%s, AdamW, fp32 grad, bf16 copy) on one "
        "thread, %lld elements: median %.3g elements/s, spread %.3g..%.3g, %d repeats; elements/s by threads: %s",
        c->isa, (long long)c->adam_numel, a1->median, a1->min, a1->max, a1->repeats, acurve);
    src(w, "cpu_adam.dram_bytes_per_element", c, "what the measured kernel moves: fp32 param, m, v, grad read, "
        "param, m, v written, bf16 copy written = 30 B");
}

int calib_profile(const struct calib *c, const char *name, char **out, struct rl_err *e)
{
    struct emu_figures f;
    emu_derive(c, &f);
    struct hw_writer wr, *w = &wr;
    int rc = hw_writer_open(w, NULL, e);
    if (rc)
        return rc;
    /* The figures first, then their sources (the writer keeps the order of the calls). */
    emu_put_node(c, &f, name, w);
    emu_put_device(c, &f, w);
    /* Sources: method, host, date and spread for every number. */
    emu_src_node(c, &f, w);
    emu_src_gpu(c, &f, w);
    emu_src_links(c, w);
    if (c->have_run)
        run_figures(c, w);
    calib_host_json(&c->host_costs, c->host, c->date, w);
    return hw_writer_close(w, 6, out, e);
}
