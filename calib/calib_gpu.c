/* calib/calib_gpu.c — `ratiolab calibrate --backend cuda` (see calib.h): every measurement goes
 * through the executor's backend table (exec/backend.h): its probe, device and host memory,
 * copies, Adam and GEMMs timed by the backend itself (CUDA events on cuda, the stream thread's
 * clock on cpu), and its collectives (NCCL on cuda) under mpirun. No CUDA, cuBLAS or NCCL call is
 * made here, so the same code runs on the cpu backend in the tests; scripts/gpu-check.sh runs it
 * on a GPU. The profile (calib_gpu_profile) is written below. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib/calib.h"
#include "exec/backend.h"     /* the backend table */
#include "exec/exec.h"        /* ex_comm: barriers, the slowest rank */
#include "kernels/adam.h"
#include "plan/step.h"        /* the phases the timed operations are tagged with */

/* NCCL's in-place reduce-scatter: rank r's result lands in its own block of the send buffer. */
char *calib_nccl_rs_recv(char *buf, int rank, int64_t bytes_per_rank)
{
    return buf + (int64_t)rank * bytes_per_rank;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* After operations were queued on stream s while it was tagged: waits for s and returns the time
 * from the first timed operation's start to the last one's end, in seconds (the backend's own
 * timing: CUDA events on cuda). */
static int timed_seconds(const struct ex_backend *be, struct ex_dev *d, enum ex_stream s, double *sec,
                         struct rl_err *e)
{
    be->tag(d, s, -1);
    RL_TRY(be->sync(d, s, e));
    struct step_span sp[64];
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    int n;
    while ((n = be->take_spans(d, sp, 64)) > 0)
        for (int i = 0; i < n; i++) {
            t0 = sp[i].start_ns < t0 ? sp[i].start_ns : t0;
            t1 = sp[i].end_ns > t1 ? sp[i].end_ns : t1;
        }
    if (t1 < t0)
        return rl_errf(e, RL_EINTERNAL, "calibrate: the %s backend timed no operation", be->name);
    *sec = (double)(t1 - t0) * 1e-9;
    return 0;
}

int calib_copy_gbps(const struct ex_backend *be, struct ex_dev *d, void *dst, const void *src, int64_t bytes,
                    enum ex_copy_dir dir, double *gbps, struct rl_err *e)
{
    be->tag(d, EX_STREAM_COPY, STEP_PH_PARAM_H2D);
    int rc = be->copy(d, dst, src, bytes, dir, EX_STREAM_COPY, e);
    double sec = 0;
    if (rc) {
        be->tag(d, EX_STREAM_COPY, -1);
        return rc;
    }
    RL_TRY(timed_seconds(be, d, EX_STREAM_COPY, &sec, e));
    *gbps = sec > 0 ? (double)bytes / sec * 1e-9 : 0;
    return 0;
}

/* The devices of one process: each opened alone (a 1-rank comm: no collectives), one device
 * buffer and one pinned host buffer of `bytes` each, and one pageable host buffer. */
struct gpu_set {
    int n;                                   /* devices opened */
    struct ex_dev *dev[CALIB_MAX_GPUS];      /* backend state per device */
    void *dbuf[CALIB_MAX_GPUS];              /* device buffer */
    void *pinned[CALIB_MAX_GPUS];            /* pinned host buffer */
    void *pageable;                          /* pageable host buffer (device 0's allocator) */
    int64_t bytes;                           /* of each */
};

static void gpu_set_close(const struct ex_backend *be, struct gpu_set *s)
{
    for (int i = 0; i < s->n; i++) {
        if (s->dbuf[i])
            be->dev_free(s->dev[i], s->dbuf[i], s->bytes);
        if (s->pinned[i])
            be->host_free(s->dev[i], s->pinned[i], s->bytes, true);
        if (i == 0 && s->pageable)
            be->host_free(s->dev[0], s->pageable, s->bytes, false);
        be->close(s->dev[i]);
    }
    s->n = 0;
}

static int gpu_set_open(const struct ex_backend *be, int n, int64_t bytes, struct gpu_set *s, struct rl_err *e)
{
    static struct ex_comm solo = {.size = 1};   /* rank 0 of 1, no MPI */
    memset(s, 0, sizeof *s);
    s->bytes = bytes;
    for (int i = 0; i < n; i++) {
        RL_TRY(be->open(&s->dev[i], &solo, i, 0, e));
        s->n = i + 1;
        RL_TRY(be->dev_alloc(s->dev[i], bytes, &s->dbuf[i], e));
        RL_TRY(be->host_alloc(s->dev[i], bytes, true, &s->pinned[i], e));
        memset(s->pinned[i], 1, (size_t)bytes);
    }
    RL_TRY(be->host_alloc(s->dev[0], bytes, false, &s->pageable, e));
    memset(s->pageable, 1, (size_t)bytes);
    return 0;
}

/* Copies per device alone (pinned and pageable, both directions) and every device at once. */
static int measure_copies(const struct ex_backend *be, const struct calib_opts *o, struct gpu_set *s, int reps,
                          struct calib_gpu *g, struct rl_err *e)
{
    double x[64];
    const struct {
        struct calib_figure *f;      /* per-device figure array */
        bool pin, h2d;               /* pinned or pageable, direction */
    } kinds[4] = {{g->h2d_pinned_gbps, true, true}, {g->d2h_pinned_gbps, true, false},
                  {g->h2d_pageable_gbps, false, true}, {g->d2h_pageable_gbps, false, false}};
    for (int d = 0; d < s->n; d++) {
        if (o->progress) {
            char what[64];
            snprintf(what, sizeof what, "GPU %d copies", d);
            o->progress(o->progress_ctx, what, d, s->n + 3);
        }
        for (int k = 0; k < 4; k++) {
            void *host = kinds[k].pin ? s->pinned[d] : s->pageable;
            for (int r = 0; r <= reps; r++) {   /* [0] is the warm-up */
                double gb = 0;
                RL_TRY(kinds[k].h2d ? calib_copy_gbps(be, s->dev[d], s->dbuf[d], host, g->copy_bytes, EX_H2D, &gb, e)
                                    : calib_copy_gbps(be, s->dev[d], host, s->dbuf[d], g->copy_bytes, EX_D2H, &gb, e));
                if (r > 0)
                    x[r - 1] = gb;
            }
            calib_figure_of(&kinds[k].f[d], x, reps);
        }
    }
    /* Every device at once: H2D from pinned memory, the sum of each one's rate. */
    if (o->progress)
        o->progress(o->progress_ctx, "all GPUs at once", s->n, s->n + 3);
    for (int r = 0; r <= reps; r++) {
        for (int d = 0; d < s->n; d++) {
            be->tag(s->dev[d], EX_STREAM_COPY, STEP_PH_PARAM_H2D);
            RL_TRY(be->copy(s->dev[d], s->dbuf[d], s->pinned[d], g->copy_bytes, EX_H2D, EX_STREAM_COPY, e));
        }
        double sum = 0;
        for (int d = 0; d < s->n; d++) {
            double sec = 0;
            RL_TRY(timed_seconds(be, s->dev[d], EX_STREAM_COPY, &sec, e));
            sum += sec > 0 ? (double)g->copy_bytes / sec * 1e-9 : 0;
        }
        if (r > 0)
            x[r - 1] = sum;
    }
    calib_figure_of(&g->h2d_all_gbps, x, reps);
    return 0;
}

/* GPU 0's copies at the sizes the executor's flush moves (one parameter's gradient, 1-64 MiB; a
 * 500 MB bucket, DeepSpeed's default reduce_bucket_size), those that fit the set's buffers, and
 * the time of a 4 KiB copy (the latency), pinned and pageable, both directions. */
static int measure_copy_sizes(const struct ex_backend *be, const struct calib_opts *o, struct gpu_set *s, int reps,
                              struct calib_gpu *g, struct rl_err *e)
{
    static const int64_t sizes[] = {INT64_C(1) << 20, INT64_C(4) << 20, INT64_C(16) << 20, INT64_C(64) << 20,
                                    INT64_C(500000000)};
    double x[64];
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 copies by size", s->n, s->n + 3);
    g->n_copy_sizes = 0;
    for (size_t i = 0; i < RL_COUNT(sizes) && sizes[i] <= s->bytes; i++)
        g->copy_size_bytes[g->n_copy_sizes++] = sizes[i];
    g->latency_bytes = 4096;
    for (int k = 0; k < CALIB_COPY_KINDS; k++) {   /* h2d pinned, d2h pinned, h2d pageable, d2h pageable */
        bool pin = k < 2, h2d = k % 2 == 0;
        void *host = pin ? s->pinned[0] : s->pageable;
        for (int z = -1; z < g->n_copy_sizes; z++) {   /* -1: the latency */
            int64_t bytes = z < 0 ? g->latency_bytes : g->copy_size_bytes[z];
            for (int r = 0; r <= reps; r++) {   /* [0] is the warm-up */
                double gb = 0;
                RL_TRY(h2d ? calib_copy_gbps(be, s->dev[0], s->dbuf[0], host, bytes, EX_H2D, &gb, e)
                           : calib_copy_gbps(be, s->dev[0], host, s->dbuf[0], bytes, EX_D2H, &gb, e));
                if (r > 0)
                    x[r - 1] = z >= 0 ? gb : gb > 0 ? (double)bytes / (gb * 1e9) * 1e6 : 0;
            }
            calib_figure_of(z < 0 ? &g->copy_latency_us[k] : &g->copy_size_gbps[k][z], x, reps);
        }
    }
    return 0;
}

/* Device 0: a device-to-device copy (read + write bytes) and the device's Adam kernel. */
static int measure_d2d_adam(const struct ex_backend *be, const struct calib_opts *o, struct gpu_set *s, int reps,
                            struct calib_gpu *g, struct rl_err *e)
{
    double x[64];
    struct ex_dev *d = s->dev[0];
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 device-to-device copy", s->n + 1, s->n + 3);
    void *dev2 = NULL, *buf[4] = {0};
    int rc = be->dev_alloc(d, g->copy_bytes, &dev2, e);
    for (int r = 0; r <= reps && !rc; r++) {
        double gb = 0;
        rc = calib_copy_gbps(be, d, dev2, s->dbuf[0], g->copy_bytes, EX_D2D, &gb, e);
        if (r > 0)
            x[r - 1] = 2 * gb;
    }
    if (!rc)
        calib_figure_of(&g->d2d_gbps, x, reps);
    if (dev2)
        be->dev_free(d, dev2, g->copy_bytes);
    RL_TRY(rc);
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 Adam", s->n + 2, s->n + 3);
    int64_t nb = g->adam_numel * 4;
    for (int i = 0; i < 4 && !rc; i++)
        rc = be->dev_alloc(d, nb, &buf[i], e);
    struct kern_adam_hparams h = kern_adam_hparams_default();
    struct kern_adam_bufs b = {.param = buf[0], .exp_avg = buf[1], .exp_avg_sq = buf[2], .grad = buf[3],
                               .grad_dtype = KERN_F32, .numel = g->adam_numel};
    for (int r = 0; r <= reps && !rc; r++) {
        struct kern_adam_scalars sc;
        double sec = 0;
        if ((rc = kern_adam_scalars_make(&h, r + 1, &sc, e)))
            break;
        be->tag(d, EX_STREAM_COMPUTE, STEP_PH_GPU_ADAM);
        rc = be->adam(d, &sc, &b, EX_STREAM_COMPUTE, e);
        if (!rc)
            rc = timed_seconds(be, d, EX_STREAM_COMPUTE, &sec, e);
        else
            be->tag(d, EX_STREAM_COMPUTE, -1);
        if (!rc && r > 0)
            x[r - 1] = sec > 0 ? (double)g->adam_numel / sec : 0;
    }
    if (!rc)
        calib_figure_of(&g->adam_elems_per_s, x, reps);
    for (int i = 0; i < 4; i++)
        if (buf[i])
            be->dev_free(d, buf[i], nb);
    return rc;
}

int calib_measure_gpu(const struct ex_backend *be, const struct calib_opts *o, struct calib_gpu *g,
                      struct rl_err *e)
{
    memset(g, 0, sizeof *g);
    if (!be)
        return rl_errf(e, RL_EENV, "backend cuda: this ratiolab was built without the CUDA backend "
                       "(nvcc, cuBLAS and NCCL are needed)");
    int n = 0;
    RL_TRY(be->probe(&n, g->model, sizeof g->model, &g->memory_bytes, e));
    if (n <= 0)
        return rl_errf(e, RL_EENV, "backend %s: no GPU visible", be->name);
    g->n_gpus = n > CALIB_MAX_GPUS ? CALIB_MAX_GPUS : n;
    int reps = o->thorough ? 15 : 7;
    g->copy_bytes = o->gpu_bytes > 0 ? o->gpu_bytes : (int64_t)(o->thorough ? 1024 : 256) << 20;
    g->adam_numel = o->gpu_bytes > 0 ? o->gpu_bytes : (int64_t)(o->thorough ? 256 : 64) << 20;
    /* The buffers hold the largest copy by size too (500 MB) unless the size is given (tests). */
    int64_t set_bytes = o->gpu_bytes > 0 || g->copy_bytes >= 500000000 ? g->copy_bytes : 500000000;
    struct gpu_set s;
    int rc = gpu_set_open(be, g->n_gpus, set_bytes, &s, e);
    if (!rc)
        rc = measure_copies(be, o, &s, reps, g, e);
    if (!rc)
        rc = measure_copy_sizes(be, o, &s, reps, g, e);
    if (!rc)
        rc = measure_d2d_adam(be, o, &s, reps, g, e);
    if (!rc && o->progress)
        o->progress(o->progress_ctx, "done", g->n_gpus + 3, g->n_gpus + 3);
    gpu_set_close(be, &s);
    return rc;
}

/* ---- GEMMs at the model's shapes ------------------------------------------------------------------ */

/* The list once, queued on the compute stream while it is tagged; seconds from the first GEMM's
 * start to the last one's end. lowp: 16-bit (bf16) through gemm_lowp. */
static int gemm_pass(const struct ex_backend *be, struct ex_dev *d, const struct calib_run *run, bool lowp,
                     void *a, void *b, void *c, double *sec, struct rl_err *e)
{
    be->tag(d, EX_STREAM_COMPUTE, STEP_PH_FORWARD);
    int rc = 0;
    for (int i = 0; i < run->n_gemm && !rc; i++) {
        const struct calib_gemm_shape *q = &run->gemm[i];
        int64_t times = q->count * (run->layers > 0 && !q->last ? run->layers : 1);
        for (int64_t j = 0; j < times && !rc; j++)
            rc = lowp ? be->gemm_lowp(d, q->m, q->n, q->k, a, b, c, KERN_BF16, EX_STREAM_COMPUTE, e)
                      : be->gemm(d, q->m, q->n, q->k, a, b, c, EX_STREAM_COMPUTE, e);
    }
    if (rc) {
        be->tag(d, EX_STREAM_COMPUTE, -1);
        return rc;
    }
    return timed_seconds(be, d, EX_STREAM_COMPUTE, sec, e);
}

/* Fills `bytes` of device memory at dst with random words that are valid numbers read either way:
 * each 32-bit word is two bf16 values in [-1, 1) (so as fp32 it is one in [-1, 1) too), from a
 * fixed-seed xorshift (the same bytes every run), through a 16 MiB pinned pattern copied H2D. */
static int fill_random(const struct ex_backend *be, struct ex_dev *d, void *dst, int64_t bytes, struct rl_err *e)
{
    const int64_t pat = INT64_C(16) << 20;
    void *h = NULL;
    RL_TRY(be->host_alloc(d, pat, true, &h, e));
    uint32_t *w = h;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int64_t i = 0; i < pat / 4; i++) {
        uint16_t half[2];
        for (int j = 0; j < 2; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            float f = (float)((double)(x >> 11) * 0x1p-52 - 1.0);   /* [-1, 1) */
            uint32_t u;
            memcpy(&u, &f, 4);
            half[j] = (uint16_t)(u >> 16);   /* truncated to bf16: data, not arithmetic */
        }
        w[i] = (uint32_t)half[0] << 16 | half[1];
    }
    int rc = 0;
    for (int64_t at = 0; at < bytes && !rc; at += pat)
        rc = be->copy(d, (char *)dst + at, h, bytes - at < pat ? bytes - at : pat, EX_H2D, EX_STREAM_COPY, e);
    if (!rc)
        rc = be->sync(d, EX_STREAM_COPY, e);
    be->host_free(d, h, pat, true);
    return rc;
}

/* FLOPs of shape q's calls in one pass of run (its layer blocks' times over unless `last`). */
static double gemm_shape_flop(const struct calib_run *run, const struct calib_gemm_shape *q)
{
    return 2.0 * (double)q->m * (double)q->n * (double)q->k * (double)q->count *
           (double)(run->layers > 0 && !q->last ? run->layers : 1);
}

/* The list's largest operands (elements of A, B and C over its shapes, at least 1 each), its
 * FLOPs per pass in *flop, and the list as --gemm takes it in g->gemm_shapes. */
static void gemm_list(const struct calib_run *run, int64_t *ma, int64_t *mb, int64_t *mc, double *flop,
                      struct calib_gpu *g)
{
    *ma = *mb = *mc = 1;
    *flop = 0;
    g->gemm_shapes[0] = 0;
    for (int i = 0; i < run->n_gemm; i++) {
        const struct calib_gemm_shape *q = &run->gemm[i];
        *ma = q->m * q->k > *ma ? q->m * q->k : *ma;
        *mb = q->k * q->n > *mb ? q->k * q->n : *mb;
        *mc = q->m * q->n > *mc ? q->m * q->n : *mc;
        *flop += gemm_shape_flop(run, q);
        size_t l = strlen(g->gemm_shapes);
        snprintf(g->gemm_shapes + l, sizeof g->gemm_shapes - l, "%s%lldx%lldx%lldx%lld", i ? "," : "",
                 (long long)q->m, (long long)q->n, (long long)q->k, (long long)q->count);
    }
}

/* One kind of GEMM (0: fp32, the executor's; 1: bf16 in, fp32 accumulate, the buffers reread as
 * bf16) over a, b, c: the whole pass of `flop` FLOPs, then each of the first g->n_gemm_shapes
 * shapes alone (its calls of one pass); reps counted repeats after a warm-up. */
static int gemm_kind(const struct ex_backend *be, struct ex_dev *d, const struct calib_run *run, int kind,
                     double flop, int reps, void *a, void *b, void *c, struct calib_gpu *g, struct rl_err *e)
{
    double v[64];   /* per repeat: FLOP/s */
    int rc = 0;
    for (int r = 0; r <= reps && !rc; r++) {
        double sec = 0;
        rc = gemm_pass(be, d, run, kind == 1, a, b, c, &sec, e);
        if (!rc && r > 0)
            v[r - 1] = sec > 0 ? flop / sec : 0;
    }
    if (!rc)
        calib_figure_of(kind ? &g->bf16_flops : &g->sgemm_flops, v, reps);
    for (int i = 0; i < g->n_gemm_shapes && !rc; i++) {
        struct calib_run one = {.n_gemm = 1, .layers = run->layers};
        one.gemm[0] = run->gemm[i];
        g->gemm_shape[i] = run->gemm[i];
        double f1 = gemm_shape_flop(run, &run->gemm[i]);
        double w[64];
        for (int r = 0; r <= reps && !rc; r++) {
            double sec = 0;
            rc = gemm_pass(be, d, &one, kind == 1, a, b, c, &sec, e);
            if (!rc && r > 0)
                w[r - 1] = sec > 0 ? f1 / sec : 0;
        }
        if (!rc)
            calib_figure_of(&g->gemm_shape_flops[kind][i], w, reps);
    }
    return rc;
}

int calib_measure_gpu_gemm(const struct ex_backend *be, const struct calib_run *run, bool thorough,
                           struct calib_gpu *g, struct rl_err *e)
{
    if (!be)
        return rl_errf(e, RL_EENV, "backend cuda: this ratiolab was built without the CUDA backend");
    struct calib_run def;
    if (!run || run->n_gemm == 0) {   /* no model given: one large square GEMM */
        memset(&def, 0, sizeof def);
        def.n_gemm = 1;
        def.gemm[0] = (struct calib_gemm_shape){4096, 4096, 4096, 1, false};
        run = &def;
    }
    int64_t ma, mb, mc;
    double flop;
    gemm_list(run, &ma, &mb, &mc, &flop, g);
    static struct ex_comm solo = {.size = 1};
    struct ex_dev *d = NULL;
    void *a = NULL, *b = NULL, *c = NULL;
    int reps = thorough ? 15 : 7;
    int rc = be->open(&d, &solo, 0, 0, e);
    if (!rc)
        rc = be->dev_alloc(d, ma * 4, &a, e);
    if (!rc)
        rc = be->dev_alloc(d, mb * 4, &b, e);
    if (!rc)
        rc = be->dev_alloc(d, mc * 4, &c, e);
    /* Random inputs: zero-filled ones overstate the tensor cores' rate (less power, higher clocks). */
    if (!rc)
        rc = fill_random(be, d, a, ma * 4, e);
    if (!rc)
        rc = fill_random(be, d, b, mb * 4, e);
    /* 0: fp32 (the executor's), 1: bf16 in, fp32 accumulate (where the backend has it) */
    g->n_gemm_shapes = run->n_gemm < 16 ? run->n_gemm : 16;
    for (int kind = 0; kind < 2 && !rc && (kind == 0 || be->gemm_lowp); kind++)
        rc = gemm_kind(be, d, run, kind, flop, reps, a, b, c, g, e);
    if (!rc) {
        g->gemm_flop = flop;
        g->have_gemm = true;
    }
    g->context_bytes = g->cublas_bytes = -1;
    if (!rc && be->mem_overheads)
        be->mem_overheads(d, &g->context_bytes, &g->cublas_bytes);
    if (d) {
        if (a)
            be->dev_free(d, a, ma * 4);
        if (b)
            be->dev_free(d, b, mb * 4);
        if (c)
            be->dev_free(d, c, mc * 4);
        be->close(d);
    }
    return rc;
}

/* ---- collectives under mpirun (NCCL on cuda) ------------------------------------------------------- */

/* One collective of `bytes` per rank, in place on buf, timed by the host clock after a barrier;
 * the slowest rank's seconds. kind 0: all-gather, 1: reduce-scatter (fp32). */
static int collective_seconds(const struct ex_backend *be, struct ex_dev *d, struct ex_comm *comm, char *buf,
                              int64_t bytes, int kind, double *sec, struct rl_err *e)
{
    RL_TRY(ex_comm_barrier(comm, e));
    int64_t t0 = now_ns();
    if (kind == 0) {
        uint64_t req = 0;
        RL_TRY(be->allgather_start(d, buf, bytes, &req, e));
        RL_TRY(be->allgather_wait(d, req, e));
    } else {
        void *out = NULL;
        RL_TRY(be->reduce_scatter(d, buf, bytes / 4, KERN_F32, &out, e));
    }
    int64_t ns = now_ns() - t0;
    RL_TRY(ex_comm_max_i64(comm, &ns, 1, e));
    *sec = (double)ns * 1e-9;
    return 0;
}

int calib_measure_nccl(const struct ex_backend *be, struct ex_comm *comm, bool thorough, struct calib_gpu *g,
                       struct rl_err *e)
{
    if (!be)
        return rl_errf(e, RL_EENV, "backend cuda: this ratiolab was built without the CUDA backend");
    int W = comm->size, reps = thorough ? 15 : 7, rc = 0;
    int64_t max_bytes = (int64_t)(thorough ? 256 : 64) << 20, min_bytes = 4096;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    struct ex_dev *d = NULL;
    char *buf = NULL;
    /* A rank without a device is known to all before any of them waits in the communicator's
     * bootstrap; then every rank opens its device (the backend makes the communicator). */
    int n = 0;
    char model[64];
    int64_t mem = 0;
    int64_t bad = be->probe(&n, model, sizeof model, &mem, e) != 0 || n <= 0;
    RL_TRY(ex_comm_max_i64(comm, &bad, 1, e));
    if (bad)
        return rl_errf(e, RL_EENV, "backend %s: no GPU visible on some rank", be->name);
    RL_TRY(be->open(&d, comm, lr ? atoi(lr) : 0, 0, e));
    rc = be->dev_alloc(d, max_bytes * W, (void **)&buf, e);
    g->n_nccl_sizes = 0;
    double v[2][64], lat[64];   /* per kind (all-gather, reduce-scatter), per repeat: bus GB/s */
    for (int64_t bytes = min_bytes; !rc && bytes <= max_bytes && g->n_nccl_sizes < 16; bytes *= 4) {
        for (int r = 0; r <= reps && !rc; r++)
            for (int kind = 0; kind < 2 && !rc; kind++) {
                double sec = 0;
                rc = collective_seconds(be, d, comm, buf, bytes, kind, &sec, e);
                double bus = (double)bytes * (W - 1);
                v[kind][r] = sec > 0 ? bus / sec * 1e-9 : 0;   /* [0] is the warm-up */
                if (kind == 0)
                    lat[r] = sec * 1e6;
            }
        if (rc)
            break;
        int k = g->n_nccl_sizes++;
        g->nccl_bytes[k] = bytes;
        calib_figure_of(&g->nccl_allgather_busbw_gbps[k], v[0] + 1, reps);
        calib_figure_of(&g->nccl_reduce_scatter_busbw_gbps[k], v[1] + 1, reps);
        if (bytes == min_bytes)
            calib_figure_of(&g->nccl_latency_us, lat + 1, reps);
    }
    if (!rc) {
        g->nccl_ranks = W;
        g->have_nccl = true;
    }
    if (buf)
        be->dev_free(d, buf, max_bytes * W);
    be->close(d);
    return rc;
}

static void setsrc(struct hw_writer *w, const char *key, const char *host, const char *date, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void setsrc(struct hw_writer *w, const char *key, const char *host, const char *date, const char *fmt, ...)
{
    char body[2400], all[2600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", host, date, body);
    hw_source(w, key, all);
}

/* The base profile read through the profile's table (what is kept of it: the topology, the
 * peaks) into *base (malloc'd; free it); RL_EINVAL naming base_profile when it is not one. */
static int gpu_profile_base(const char *base_text, struct hw_profile **base, struct rl_err *e)
{
    *base = malloc(sizeof **base);
    struct rl_err be;
    int rc = *base ? hw_parse(*base, base_text, "base_profile", NULL, &be) : RL_ENOMEM;
    if (rc) {
        free(*base);
        *base = NULL;
        return rc == RL_ENOMEM ? rl_errf(e, RL_ENOMEM, "calibrate: out of memory")
                               : rl_errf(e, RL_EINVAL, "base_profile: not a hardware profile (%s)", be.msg);
    }
    return 0;
}

/* One kind of copy (k: h2d pinned, d2h pinned, h2d pageable, d2h pageable): the slowest GPU's
 * median (the step waits for the slowest), with every GPU's and GPU 0's by size in the source. */
static void gpu_profile_copy(const struct calib *c, const struct calib_gpu *g, int k, struct hw_writer *src)
{
    const char *keys[4] = {"h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps", "d2h_pageable_gbps"};
    const struct calib_figure *arr[4] = {g->h2d_pinned_gbps, g->d2h_pinned_gbps, g->h2d_pageable_gbps, g->d2h_pageable_gbps};
    double lo = arr[k][0].median;
    char per[400] = "";
    for (int d = 0; d < g->n_gpus; d++) {
        lo = arr[k][d].median < lo ? arr[k][d].median : lo;
        size_t l = strlen(per);
        snprintf(per + l, sizeof per - l, "%sGPU %d %.2f (%.2f..%.2f)", d ? ", " : "", d, arr[k][d].median,
                 arr[k][d].min, arr[k][d].max);
    }
    char key[64];
    snprintf(key, sizeof key, "gpu.%s", keys[k]);
    hw_put(src, key, lo);
    char bysize[900] = "";
    for (int z = 0; z < g->n_copy_sizes; z++) {
        size_t l = strlen(bysize);
        const struct calib_figure *f = &g->copy_size_gbps[k][z];
        snprintf(bysize + l, sizeof bysize - l, "%s%lld B %.2f (%.2f..%.2f)", z ? ", " : "",
                 (long long)g->copy_size_bytes[z], f->median, f->min, f->max);
    }
    const struct calib_figure *lt = &g->copy_latency_us[k];
    setsrc(src, key, c->host, c->date, "cudaMemcpyAsync of %lld MiB, one GPU at a time, %d repeats, slowest GPU's "
           "median; GB/s per GPU: %s; GPU 0 at the flush's sizes (median of %d, min..max): %s; a %lld B copy "
           "%.2f us (%.2f..%.2f); each timed by CUDA events around the copy", (long long)(g->copy_bytes >> 20),
           arr[k][0].repeats, per, g->copy_size_gbps[k][0].repeats, g->n_copy_sizes ? bysize : "not measured",
           (long long)g->latency_bytes, lt->median, lt->min, lt->max);
}

/* The copies: each kind's rate, then a copy's latency, the larger of the pinned small copies'
 * times (device side, CUDA events), when measured. */
static void gpu_profile_copies(const struct calib *c, const struct calib_gpu *g, struct hw_writer *src)
{
    for (int k = 0; k < 4; k++)
        gpu_profile_copy(c, g, k, src);
    if (g->copy_latency_us[0].repeats > 0) {
        const struct calib_figure *lh = &g->copy_latency_us[0], *ld = &g->copy_latency_us[1];
        const struct calib_figure *lm = ld->median > lh->median ? ld : lh;
        hw_put(src, "latency_us.pcie_copy", lm->median);
        setsrc(src, "latency_us.pcie_copy", c->host, c->date, "GPU 0, a %lld B pinned cudaMemcpyAsync timed by CUDA "
               "events (the device side; the host's call adds its own microseconds): H2D %.2f us (%.2f..%.2f), "
               "D2H %.2f us (%.2f..%.2f), median of %d; the larger taken", (long long)g->latency_bytes, lh->median,
               lh->min, lh->max, ld->median, ld->min, ld->max, lh->repeats);
    }
}

/* The switches' uplinks and the device memory: the all-at-once figure went through the switches
 * of the GPUs measured (0 .. n - 1), not through every switch of the profile: one GPU's
 * measurement is one switch's uplink. HBM is the D2D copy, GPU Adam its efficiency. */
static void gpu_profile_links(const struct calib *c, const struct calib_gpu *g, const struct hw_profile *base,
                              struct hw_writer *src)
{
    int used = 0;
    for (int i = 0; i < base->n_switches; i++) {
        bool mine = false;
        for (int j = 0; j < base->sw[i].n_gpus; j++)
            mine |= base->sw[i].gpus[j] < g->n_gpus;
        used += mine;
    }
    used = used > 0 ? used : 1;
    double per_switch = g->h2d_all_gbps.median / used;
    for (int i = 0; i < base->n_switches; i++)
        hw_put_at(src, "node.pcie_switches[].uplink_gbps", (size_t)i, per_switch);
    setsrc(src, "node.pcie_switches[].uplink_gbps", c->host, c->date, "all %d GPUs at once, pinned H2D of %lld MiB "
           "each: sum %.2f GB/s (%.2f..%.2f), divided over the %d switch%s of the profile's %zu those GPUs sit "
           "behind", g->n_gpus, (long long)(g->copy_bytes >> 20), g->h2d_all_gbps.median, g->h2d_all_gbps.min,
           g->h2d_all_gbps.max, used, used == 1 ? "" : "es", (size_t)base->n_switches);
    hw_put(src, "gpu.hbm_gbps", g->d2d_gbps.median);
    setsrc(src, "gpu.hbm_gbps", c->host, c->date, "GPU 0 device-to-device cudaMemcpyAsync, read + write bytes: %.1f "
           "GB/s (%.1f..%.1f)", g->d2d_gbps.median, g->d2d_gbps.min, g->d2d_gbps.max);
    double eff = g->adam_elems_per_s.median * 28 / (g->d2d_gbps.median * 1e9);
    hw_put(src, "gpu.hbm_efficiency", eff);
    setsrc(src, "gpu.hbm_efficiency", c->host, c->date, "kernels/ CUDA Adam on GPU 0, %lld elements, fp32 gradient: "
           "%.3g elements/s (%.3g..%.3g) x 28 B over the D2D bandwidth", (long long)g->adam_numel,
           g->adam_elems_per_s.median, g->adam_elems_per_s.min, g->adam_elems_per_s.max);
}

/* Host side from the CPU measurements: the best triad divided over the base's sockets, CPU Adam on
 * one thread, and the host's first touch, memcpy and cast rates (calib_measure with gpu_host). */
static void gpu_profile_host(const struct calib *c, const struct hw_profile *base, struct hw_writer *src)
{
    double best = 0;
    int bt = 0;
    for (int t = 0; t < c->n_threads; t++)
        if (c->dram_gbps[t].median > best)
            best = c->dram_gbps[t].median, bt = t;
    for (int i = 0; i < base->n_sockets; i++)
        hw_put_at(src, "node.sockets[].dram_gbps", (size_t)i, best / base->n_sockets);
    setsrc(src, "node.sockets[].dram_gbps", c->host, c->date, "triad (24 bytes per element over 3 x %lld MiB) on %d of "
           "the %d online cores, the best thread count: %.1f GB/s (median of %d, %.1f..%.1f), divided over the "
           "profile's %zu sockets", (long long)(c->dram_array_bytes >> 20), bt + 1, c->cores, best,
           c->dram_gbps[bt].repeats, c->dram_gbps[bt].min, c->dram_gbps[bt].max, (size_t)base->n_sockets);
    hw_put(src, "cpu_adam.elements_per_s_per_core", c->adam_elems_per_s[0].median);
    setsrc(src, "cpu_adam.elements_per_s_per_core", c->host, c->date, "kernels/ CPU Adam (%s) on one thread, %lld "
           "elements: %.3g elements/s (median of %d, %.3g..%.3g)", c->isa, (long long)c->adam_numel,
           c->adam_elems_per_s[0].median, c->adam_elems_per_s[0].repeats, c->adam_elems_per_s[0].min,
           c->adam_elems_per_s[0].max);
    calib_host_json(&c->host_costs, c->host, c->date, src);
}

/* GEMMs at the model's shapes: the achieved rate over the base profile's peak, per kind (tensor:
 * bf16, fp32) whose peak and rate are both known. Then the CUDA context with cuBLAS loaded:
 * ratiolab's own process, so a lower bound for a PyTorch rank, which loads more kernels. */
static void gpu_profile_gemms(const struct calib *c, const struct calib_gpu *g, const struct hw_profile *base,
                              struct hw_writer *src)
{
    const struct {
        double peak;                   /* the base's peak, TFLOP/s */
        const char *eff;               /* its gpu.* efficiency key */
        const struct calib_figure *f;    /* measured FLOP/s */
        const char *what;              /* the call */
    } k[2] = {{base->tensor_tflops, "tensor_efficiency", &g->bf16_flops, "cublasGemmEx bf16 in, fp32 accumulate"},
              {base->fp32_tflops, "fp32_efficiency", &g->sgemm_flops, "cublasSgemm (fp32, as the executor)"}};
    for (int q = 0; q < 2; q++) {
        double peak = k[q].peak;
        if (!(peak > 0) || !(k[q].f->median > 0))
            continue;
        double ge = k[q].f->median * 1e-12 / peak;
        char key[64], shapes[1200] = "";
        snprintf(key, sizeof key, "gpu.%s", k[q].eff);
        hw_put(src, key, ge);
        const int kind = q == 0 ? 1 : 0;   /* gemm_shape_flops: 0 fp32, 1 bf16 */
        for (int si = 0; si < g->n_gemm_shapes; si++) {
            size_t l = strlen(shapes);
            const struct calib_gemm_shape *sh = &g->gemm_shape[si];
            const struct calib_figure *f = &g->gemm_shape_flops[kind][si];
            snprintf(shapes + l, sizeof shapes - l, "%s%lldx%lldx%lld %.4g (%.4g..%.4g)", si ? ", " : "",
                     (long long)sh->m, (long long)sh->n, (long long)sh->k, f->median * 1e-12, f->min * 1e-12,
                     f->max * 1e-12);
        }
        setsrc(src, key, c->host, c->date, "%s on GPU 0, inputs random (two bf16 in [-1, 1) per 32-bit word, "
               "not zeros), over the GEMMs %s (%.4g GFLOP per pass): %.4g TFLOP/s (%.4g..%.4g, %d repeats) over "
               "the profile's %.4g TFLOP/s peak; TFLOP/s by shape MxNxK alone (median, min..max): %s",
               k[q].what, g->gemm_shapes, g->gemm_flop * 1e-9, k[q].f->median * 1e-12, k[q].f->min * 1e-12,
               k[q].f->max * 1e-12, k[q].f->repeats, peak, g->n_gemm_shapes ? shapes : "not measured");
    }
    if (g->context_bytes > 0 && g->cublas_bytes >= 0) {
        hw_put(src, "gpu.context_bytes", (double)(g->context_bytes + g->cublas_bytes));
        setsrc(src, "gpu.context_bytes", c->host, c->date, "GPU 0 opened alone by ratiolab's cuda backend: "
               "cudaMemGetInfo's used bytes when open finished, %lld (the CUDA context; other processes' memory "
               "too, none on a lent machine), plus %lld that cuBLAS took for itself over the GEMMs above (its "
               "workspace and lazily loaded modules, read around its load and each shape's first call); one "
               "reading, no spread; a PyTorch rank loads more kernels, so this is a lower bound for one",
               (long long)g->context_bytes, (long long)g->cublas_bytes);
    }
}

/* NCCL: bus bandwidth at the largest size (the curve by size in the source), latency at the smallest. */
static void gpu_profile_nccl(const struct calib *c, const struct calib_gpu *g, struct hw_writer *src)
{
    int last = g->n_nccl_sizes - 1;
    char ag[600] = "", rs[600] = "";
    for (int k = 0; k < g->n_nccl_sizes; k++) {
        size_t la = strlen(ag), lr = strlen(rs);
        snprintf(ag + la, sizeof ag - la, "%s%lld B: %.3g", k ? ", " : "", (long long)g->nccl_bytes[k],
                 g->nccl_allgather_busbw_gbps[k].median);
        snprintf(rs + lr, sizeof rs - lr, "%s%lld B: %.3g", k ? ", " : "", (long long)g->nccl_bytes[k],
                 g->nccl_reduce_scatter_busbw_gbps[k].median);
    }
    hw_put(src, "collectives.allgather_busbw_gbps", g->nccl_allgather_busbw_gbps[last].median);
    hw_put(src, "collectives.reduce_scatter_busbw_gbps", g->nccl_reduce_scatter_busbw_gbps[last].median);
    setsrc(src, "collectives.allgather_busbw_gbps", c->host, c->date, "ncclAllGather under mpirun, %d ranks "
           "(one GPU each), bus bandwidth (nccl-tests convention) of the slowest rank at %lld B per rank; "
           "GB/s by size: %s", g->nccl_ranks, (long long)g->nccl_bytes[last], ag);
    setsrc(src, "collectives.reduce_scatter_busbw_gbps", c->host, c->date, "ncclReduceScatter (fp32) under "
           "mpirun, %d ranks, bus bandwidth of the slowest rank at %lld B per rank; GB/s by size: %s",
           g->nccl_ranks, (long long)g->nccl_bytes[last], rs);
    hw_put(src, "latency_us.collective_intra", g->nccl_latency_us.median);
    setsrc(src, "latency_us.collective_intra", c->host, c->date, "ncclAllGather of %lld B per rank, %d "
           "ranks: %.1f us (%.1f..%.1f)", (long long)g->nccl_bytes[0], g->nccl_ranks,
           g->nccl_latency_us.median, g->nccl_latency_us.min, g->nccl_latency_us.max);
}

int calib_gpu_profile(const struct calib *c, const struct calib_gpu *g, const char *base_text,
                          const char *name, char **out, struct rl_err *e)
{
    /* The base is read through the profile's table (what is kept of it: the topology, the peaks),
       and the measured figures are written over it through the same table. */
    struct hw_profile *base;
    int rc = gpu_profile_base(base_text, &base, e);
    if (rc)
        return rc;
    struct hw_writer wr, *src = &wr;
    if ((rc = hw_writer_open(src, base_text, e))) {
        free(base);
        return rc;
    }
    hw_put_str(src, "name", name);
    hw_put_str(src, "gpu.model", g->model);
    hw_put(src, "gpu.memory_bytes", (double)g->memory_bytes);
    setsrc(src, "gpu.memory_bytes", c->host, c->date, "cudaDeviceProp.totalGlobalMem of GPU 0");
    gpu_profile_copies(c, g, src);
    gpu_profile_links(c, g, base, src);
    gpu_profile_host(c, base, src);
    if (g->have_gemm)
        gpu_profile_gemms(c, g, base, src);
    if (g->have_nccl && g->n_nccl_sizes > 0)
        gpu_profile_nccl(c, g, src);
    free(base);
    return hw_writer_close(src, 6, out, e);
}
