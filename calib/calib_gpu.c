/* calib/calib_gpu.c — the GPU part of `ratiolab calibrate --backend cuda` (see calib.h).
 * Built only with CUDA (RL_HAVE_CUDA); scripts/gpu-check.sh runs it on a GPU machine. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam.h"
#include "calib/calib.h"

/* NCCL's in-place reduce-scatter: rank r's result lands in its own block of the send buffer. */
char *calib_nccl_rs_recv(char *buf, int rank, int64_t bytes_per_rank)
{
    return buf + (int64_t)rank * bytes_per_rank;
}

#ifdef RL_HAVE_CUDA
#include <cublas_v2.h>        /* the cuBLAS types; the library is dlopen'ed, as the executor does */
#include <cuda_runtime_api.h>
#include <dlfcn.h>            /* dlopen, dlsym */
#include <time.h>
#ifdef RL_HAVE_NCCL
#include <nccl.h>             /* ncclCommInitRank, ncclAllGather, ncclReduceScatter */
#endif
#include "exec/exec.h"        /* ex_comm: the unique id's broadcast, barriers */
#include "exec/backend.h"     /* ex_gpu_for_rank */

#include "common/rl_api.h"   /* RL_API_CHECK: the one check of CUDA, NCCL and cuBLAS calls */

/* The one check, failing to the function's cleanup (`out:`) with rc set. */
#define CK(call)                                                                                   \
    do {                                                                                           \
        if ((rc = RL_API_CHECK(cuda, call, e)))                                                    \
            goto out;                                                                              \
    } while (0)

static void figure(struct calib_figure *f, const double *v, int n)
{
    f->median = rl_median(v, n);
    f->min = f->max = v[0];
    for (int i = 1; i < n; i++) {
        f->min = v[i] < f->min ? v[i] : f->min;
        f->max = v[i] > f->max ? v[i] : f->max;
    }
    f->repeats = n;
}

/* One copy of `bytes` timed with events on `s`; GB/s. */
static int timed_copy(void *dst, const void *src, int64_t bytes, enum cudaMemcpyKind k, cudaStream_t s,
                      double *gbps, struct rl_err *e)
{
    int rc = 0;
    cudaEvent_t a = NULL, b = NULL;
    float ms = 0;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dst, src, (size_t)bytes, k, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    *gbps = ms > 0 ? (double)bytes / (ms * 1e-3) * 1e-9 : 0;
out:
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    return rc;
}

int calib_measure_gpu(const struct calib_opts *o, struct calib_gpu *g, struct rl_err *e)
{
    memset(g, 0, sizeof *g);
    int n = kern_cuda_device_count();
    if (n <= 0)
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: no GPU visible (cudaGetDeviceCount found none)");
    g->n_gpus = n > CALIB_MAX_GPUS ? CALIB_MAX_GPUS : n;
    int reps = o->thorough ? 15 : 7, rc = 0;
    g->copy_bytes = (int64_t)(o->thorough ? 1024 : 256) << 20;
    struct cudaDeviceProp prop;
    void *pinned[CALIB_MAX_GPUS] = {0}, *dev[CALIB_MAX_GPUS] = {0}, *pageable = NULL, *dev2 = NULL;
    cudaStream_t st[CALIB_MAX_GPUS] = {0};
    float *p = NULL, *m = NULL, *v = NULL, *gr = NULL;
    CK(cudaGetDeviceProperties(&prop, 0));
    snprintf(g->model, sizeof g->model, "%s", prop.name);
    g->memory_bytes = (int64_t)prop.totalGlobalMem;
    pageable = malloc((size_t)g->copy_bytes);
    if (!pageable) {
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %lld pageable bytes", (long long)g->copy_bytes);
        goto out;
    }
    memset(pageable, 1, (size_t)g->copy_bytes);
    for (int d = 0; d < g->n_gpus; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamCreate(&st[d]));
        CK(cudaMalloc(&dev[d], (size_t)g->copy_bytes));
        CK(cudaMallocHost(&pinned[d], (size_t)g->copy_bytes));
        memset(pinned[d], 1, (size_t)g->copy_bytes);
    }
    double x[64];
    const struct {
        struct calib_figure *f;      /* per-GPU figure array */
        bool pin, h2d;             /* pinned or pageable, direction */
    } kinds[4] = {{g->h2d_pinned_gbps, true, true}, {g->d2h_pinned_gbps, true, false},
                  {g->h2d_pageable_gbps, false, true}, {g->d2h_pageable_gbps, false, false}};
    for (int d = 0; d < g->n_gpus; d++) {
        if (o->progress) {
            char what[64];
            snprintf(what, sizeof what, "GPU %d copies", d);
            o->progress(o->progress_ctx, what, d, g->n_gpus + 3);
        }
        CK(cudaSetDevice(d));
        for (int k = 0; k < 4; k++) {
            void *host = kinds[k].pin ? pinned[d] : pageable;
            for (int r = 0; r <= reps && !rc; r++) {
                double gb;
                rc = kinds[k].h2d ? timed_copy(dev[d], host, g->copy_bytes, cudaMemcpyHostToDevice, st[d], &gb, e)
                                  : timed_copy(host, dev[d], g->copy_bytes, cudaMemcpyDeviceToHost, st[d], &gb, e);
                if (r > 0)
                    x[r - 1] = gb;
            }
            if (rc)
                goto out;
            figure(&kinds[k].f[d], x, reps);
        }
    }
    /* Every GPU at once: H2D from pinned memory, wall time over all of them. */
    if (o->progress)
        o->progress(o->progress_ctx, "all GPUs at once", g->n_gpus, g->n_gpus + 3);
    for (int r = 0; r <= reps; r++) {
        cudaEvent_t a[CALIB_MAX_GPUS], b[CALIB_MAX_GPUS];
        for (int d = 0; d < g->n_gpus; d++) {
            CK(cudaSetDevice(d));
            CK(cudaEventCreate(&a[d]));
            CK(cudaEventCreate(&b[d]));
            CK(cudaEventRecord(a[d], st[d]));
            CK(cudaMemcpyAsync(dev[d], pinned[d], (size_t)g->copy_bytes, cudaMemcpyHostToDevice, st[d]));
            CK(cudaEventRecord(b[d], st[d]));
        }
        double sum = 0;
        for (int d = 0; d < g->n_gpus; d++) {
            float ms = 0;
            CK(cudaSetDevice(d));
            CK(cudaEventSynchronize(b[d]));
            CK(cudaEventElapsedTime(&ms, a[d], b[d]));
            sum += ms > 0 ? (double)g->copy_bytes / (ms * 1e-3) * 1e-9 : 0;
            cudaEventDestroy(a[d]);
            cudaEventDestroy(b[d]);
        }
        if (r > 0)
            x[r - 1] = sum;
    }
    figure(&g->h2d_all_gbps, x, reps);
    /* HBM: a device-to-device copy on GPU 0, read + write bytes. */
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 device-to-device copy", g->n_gpus + 1, g->n_gpus + 3);
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&dev2, (size_t)g->copy_bytes));
    for (int r = 0; r <= reps; r++) {
        double gb;
        if ((rc = timed_copy(dev2, dev[0], g->copy_bytes, cudaMemcpyDeviceToDevice, st[0], &gb, e)))
            goto out;
        if (r > 0)
            x[r - 1] = 2 * gb;
    }
    figure(&g->d2d_gbps, x, reps);
    /* GPU Adam: kernels/adam.cu on GPU 0 (AdamW, fp32 gradient, bf16 copy). */
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 Adam", g->n_gpus + 2, g->n_gpus + 3);
    g->adam_numel = (int64_t)(o->thorough ? 256 : 64) << 20;
    size_t nb = (size_t)g->adam_numel * 4;
    CK(cudaMalloc((void **)&p, nb));
    CK(cudaMalloc((void **)&m, nb));
    CK(cudaMalloc((void **)&v, nb));
    CK(cudaMalloc((void **)&gr, nb));
    CK(cudaMemset(p, 0, nb));
    CK(cudaMemset(m, 0, nb));
    CK(cudaMemset(v, 0, nb));
    CK(cudaMemset(gr, 0, nb));
    {
        struct kern_adam_hparams h = kern_adam_hparams_default();
        struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = gr, .grad_dtype = KERN_F32,
                                   .numel = g->adam_numel};
        for (int r = 0; r <= reps; r++) {
            struct kern_adam_scalars sc;
            cudaEvent_t a = NULL, z = NULL;
            float ms = 0;
            if ((rc = kern_adam_scalars_make(&h, r + 1, &sc, e)))
                goto out;
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&z));
            CK(cudaEventRecord(a, st[0]));
            if ((rc = kern_adam_cuda(&sc, &b, st[0], e)))
                goto out;
            CK(cudaEventRecord(z, st[0]));
            CK(cudaEventSynchronize(z));
            CK(cudaEventElapsedTime(&ms, a, z));
            cudaEventDestroy(a);
            cudaEventDestroy(z);
            if (r > 0)
                x[r - 1] = ms > 0 ? (double)g->adam_numel / (ms * 1e-3) : 0;
        }
        figure(&g->adam_elems_per_s, x, reps);
    }
    if (o->progress)
        o->progress(o->progress_ctx, "done", g->n_gpus + 3, g->n_gpus + 3);
out:
    for (int d = 0; d < g->n_gpus; d++) {
        cudaSetDevice(d);
        if (dev[d])
            cudaFree(dev[d]);
        if (pinned[d])
            cudaFreeHost(pinned[d]);
        if (st[d])
            cudaStreamDestroy(st[d]);
    }
    cudaSetDevice(0);
    if (dev2)
        cudaFree(dev2);
    if (p)
        cudaFree(p);
    if (m)
        cudaFree(m);
    if (v)
        cudaFree(v);
    if (gr)
        cudaFree(gr);
    free(pageable);
    return rc;
}

/* ---- cuBLAS at the model's shapes ---------------------------------------------------------------- */
typedef cublasStatus_t (*blas_create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*blas_destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*blas_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*blas_sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const float *, const float *, int, const float *, int, const float *, float *,
                                        int);
typedef cublasStatus_t (*blas_gemmex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void *, const void *, cudaDataType, int, const void *, cudaDataType,
                                         int, const void *, void *, cudaDataType, int, cublasComputeType_t,
                                         cublasGemmAlgo_t);

int calib_measure_gpu_gemm(const struct calib_run *run, bool thorough, struct calib_gpu *g,
                           struct rl_err *e)
{
    if (kern_cuda_device_count() <= 0)
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: no GPU visible (cudaGetDeviceCount found none)");
    static const char *const names[] = {"libcublas.so", "libcublas.so.13", "libcublas.so.12"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: cannot load cuBLAS (libcublas.so): %s", dlerror());
    blas_create_fn create = (blas_create_fn)dlsym(lib, "cublasCreate_v2");
    blas_destroy_fn destroy = (blas_destroy_fn)dlsym(lib, "cublasDestroy_v2");
    blas_stream_fn set_stream = (blas_stream_fn)dlsym(lib, "cublasSetStream_v2");
    blas_sgemm_fn sgemm = (blas_sgemm_fn)dlsym(lib, "cublasSgemm_v2");
    blas_gemmex_fn gemmex = (blas_gemmex_fn)dlsym(lib, "cublasGemmEx");
    if (!create || !destroy || !set_stream || !sgemm || !gemmex) {
        dlclose(lib);
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: libcublas lacks cublasCreate_v2/cublasSgemm_v2/cublasGemmEx");
    }
    struct calib_run def;
    if (!run || run->n_gemm == 0) {   /* no model given: one large square GEMM */
        memset(&def, 0, sizeof def);
        def.n_gemm = 1;
        def.gemm[0] = (struct calib_gemm_shape){4096, 4096, 4096, 1, false};
        run = &def;
    }
    int64_t ma = 1, mb = 1, mc = 1;
    double flop = 0;
    g->gemm_shapes[0] = 0;
    for (int i = 0; i < run->n_gemm; i++) {
        const struct calib_gemm_shape *q = &run->gemm[i];
        ma = q->m * q->k > ma ? q->m * q->k : ma;
        mb = q->k * q->n > mb ? q->k * q->n : mb;
        mc = q->m * q->n > mc ? q->m * q->n : mc;
        flop += 2.0 * (double)q->m * (double)q->n * (double)q->k * (double)q->count *
                (double)(run->layers > 0 && !q->last ? run->layers : 1);
        size_t l = strlen(g->gemm_shapes);
        snprintf(g->gemm_shapes + l, sizeof g->gemm_shapes - l, "%s%lldx%lldx%lldx%lld", i ? "," : "",
                 (long long)q->m, (long long)q->n, (long long)q->k, (long long)q->count);
    }
    int rc = 0, reps = thorough ? 15 : 7;
    cublasHandle_t h = NULL;
    cudaStream_t st = NULL;
    float *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double x[64], y[64];
    const float one = 1.0f, zero = 0.0f;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreate(&st));
    CK(cudaMalloc((void **)&a, (size_t)ma * 4));
    CK(cudaMalloc((void **)&b, (size_t)mb * 4));
    CK(cudaMalloc((void **)&c, (size_t)mc * 4));
    CK(cudaMemset(a, 0, (size_t)ma * 4));
    CK(cudaMemset(b, 0, (size_t)mb * 4));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if ((rc = RL_API_CHECK(cublas, create(&h), e)) || (rc = RL_API_CHECK(cublas, set_stream(h, st), e)))
        goto out;
    for (int kind = 0; kind < 2; kind++)   /* 0: fp32 sgemm, 1: bf16 GemmEx (the buffers reread as bf16) */
        for (int r = 0; r <= reps; r++) {
            CK(cudaEventRecord(e0, st));
            for (int i = 0; i < run->n_gemm; i++) {
                const struct calib_gemm_shape *q = &run->gemm[i];
                int m = (int)q->m, n = (int)q->n, k = (int)q->k;
                int64_t times = q->count * (run->layers > 0 && !q->last ? run->layers : 1);
                for (int64_t j = 0; j < times; j++) {
                    rc = kind == 0
                        ? RL_API_CHECK(cublas, sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m), e)
                        : RL_API_CHECK(cublas, gemmex(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, m, b,
                                                      CUDA_R_16BF, k, &zero, c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                                                      CUBLAS_GEMM_DEFAULT), e);
                    if (rc) {
                        rl_err_prefix(e, "calibrate --backend cuda: GEMM %dx%dx%d", m, n, k);
                        goto out;
                    }
                }
            }
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r > 0)
                (kind ? y : x)[r - 1] = ms > 0 ? flop / (ms * 1e-3) : 0;
        }
    figure(&g->sgemm_flops, x, reps);
    figure(&g->bf16_flops, y, reps);
    g->gemm_flop = flop;
    g->have_gemm = true;
out:
    if (h)
        destroy(h);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (a)
        cudaFree(a);
    if (b)
        cudaFree(b);
    if (c)
        cudaFree(c);
    if (st)
        cudaStreamDestroy(st);
    dlclose(lib);
    return rc;
}

/* ---- NCCL under mpirun --------------------------------------------------------------------------- */
#ifdef RL_HAVE_NCCL
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int calib_measure_nccl(struct ex_comm *comm, bool thorough, struct calib_gpu *g, struct rl_err *e)
{
    int n = kern_cuda_device_count(), rc = 0, W = comm->size, reps = thorough ? 15 : 7;
    int64_t bad = n <= 0;
    if ((rc = ex_comm_max_i64(comm, &bad, 1, e)))
        return rc;
    if (bad)
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: no GPU visible on some rank (cudaGetDeviceCount)");
    int64_t max_bytes = (int64_t)(thorough ? 256 : 64) << 20, min_bytes = 4096;
    struct {
        int ok;              /* rank 0's ncclGetUniqueId succeeded */
        ncclUniqueId id;     /* its answer */
    } boot;
    memset(&boot, 0, sizeof boot);
    ncclComm_t nc = NULL;
    cudaStream_t st = NULL;
    char *buf = NULL;
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE"), *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int dev = 0;
    if ((rc = ex_gpu_for_rank(lr ? atoi(lr) : 0, ls ? atoi(ls) : 1, n, &dev, e)))
        return rc;
    CK(cudaSetDevice(dev));
    /* A failed unique id is broadcast as such: every rank returns the error (none waits in
     * ncclCommInitRank for a rank 0 that will never come). */
    int id_rc = comm->rank == 0 ? RL_API_CHECK(nccl, ncclGetUniqueId(&boot.id), e) : 0;
    boot.ok = comm->rank != 0 || id_rc == 0;
    if ((rc = ex_comm_bcast(comm, &boot, sizeof boot, e)))
        return rc;
    if (!boot.ok)
        return comm->rank == 0 ? id_rc
                               : rl_errf(e, RL_EENV, "calibrate --backend cuda: ncclGetUniqueId failed on rank 0");
    if ((rc = RL_API_CHECK(nccl, ncclCommInitRank(&nc, W, boot.id, comm->rank), e)))
        return rl_err_prefix(e, "calibrate --backend cuda: rank %d", comm->rank);
    CK(cudaStreamCreate(&st));
    CK(cudaMalloc((void **)&buf, (size_t)max_bytes * (size_t)W));
    CK(cudaMemset(buf, 0, (size_t)max_bytes * (size_t)W));
    g->n_nccl_sizes = 0;
    double x[64], y[64], lat[64];
    for (int64_t bytes = min_bytes; bytes <= max_bytes && g->n_nccl_sizes < 16; bytes *= 4) {
        for (int r = 0; r <= reps; r++) {
            for (int kind = 0; kind < 2; kind++) {
                if ((rc = ex_comm_barrier(comm, e)))
                    goto out;
                double t0 = now_s();
                /* Both in place: this rank's block of buf is the all-gather's send buffer and the
                 * reduce-scatter's receive buffer. */
                char *mine = calib_nccl_rs_recv(buf, comm->rank, bytes);
                rc = kind == 0
                    ? RL_API_CHECK(nccl, ncclAllGather(mine, buf, (size_t)bytes, ncclChar, nc, st), e)
                    : RL_API_CHECK(nccl, ncclReduceScatter(buf, mine, (size_t)bytes / 4, ncclFloat, ncclSum, nc, st), e);
                if (rc) {
                    rl_err_prefix(e, "calibrate --backend cuda: %lld bytes per rank", (long long)bytes);
                    goto out;
                }
                CK(cudaStreamSynchronize(st));
                int64_t ns = (int64_t)((now_s() - t0) * 1e9);
                if ((rc = ex_comm_max_i64(comm, &ns, 1, e)))
                    goto out;
                double s = (double)ns * 1e-9, bus = (double)bytes * (W - 1);
                (kind ? y : x)[r] = s > 0 ? bus / s * 1e-9 : 0;   /* [0] is the warm-up */
                if (kind == 0)
                    lat[r] = s * 1e6;
            }
        }
        int k = g->n_nccl_sizes++;
        g->nccl_bytes[k] = bytes;
        figure(&g->nccl_allgather_busbw_gbps[k], x + 1, reps);
        figure(&g->nccl_reduce_scatter_busbw_gbps[k], y + 1, reps);
        if (bytes == min_bytes)
            figure(&g->nccl_latency_us, lat + 1, reps);
    }
    g->nccl_ranks = W;
    g->have_nccl = true;
out:
    if (buf)
        cudaFree(buf);
    if (st)
        cudaStreamDestroy(st);
    if (nc)
        ncclCommDestroy(nc);
    return rc;
}
#else
int calib_measure_nccl(struct ex_comm *comm, bool thorough, struct calib_gpu *g, struct rl_err *e)
{
    (void)comm;
    (void)thorough;
    (void)g;
    return rl_errf(e, RL_EENV, "calibrate --backend cuda: this ratiolab was built without NCCL");
}
#endif
#else
int calib_measure_gpu(const struct calib_opts *o, struct calib_gpu *g, struct rl_err *e)
{
    (void)o;
    memset(g, 0, sizeof *g);
    return rl_errf(e, RL_EENV, "calibrate --backend cuda: this ratiolab was built without CUDA (nvcc not found)");
}
int calib_measure_gpu_gemm(const struct calib_run *run, bool thorough, struct calib_gpu *g,
                           struct rl_err *e)
{
    (void)run;
    (void)thorough;
    (void)g;
    return rl_errf(e, RL_EENV, "calibrate --backend cuda: this ratiolab was built without CUDA (nvcc not found)");
}
int calib_measure_nccl(struct ex_comm *comm, bool thorough, struct calib_gpu *g, struct rl_err *e)
{
    (void)comm;
    (void)thorough;
    (void)g;
    return rl_errf(e, RL_EENV, "calibrate --backend cuda: this ratiolab was built without CUDA (nvcc not found)");
}
#endif

static void setsrc(json_t *sources, const char *key, const char *host, const char *date, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void setsrc(json_t *sources, const char *key, const char *host, const char *date, const char *fmt, ...)
{
    char body[800], all[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", host, date, body);
    json_object_set_new(sources, key, json_string(all));
}

int calib_gpu_profile(const struct calib *c, const struct calib_gpu *g, const char *base_text,
                          const char *name, char **out, struct rl_err *e)
{
    json_error_t je;
    json_t *root = json_loads(base_text, 0, &je);
    if (!root || !json_is_object(json_object_get(root, "gpu")) || !json_is_object(json_object_get(root, "sources"))) {
        json_decref(root);
        return rl_errf(e, RL_EINVAL, "base_profile: not a hardware profile (line %d: %s)", je.line, je.text);
    }
    json_t *gpu = json_object_get(root, "gpu"), *node = json_object_get(root, "node"),
           *src = json_object_get(root, "sources");
    json_object_set_new(root, "name", json_string(name));
    json_object_set_new(gpu, "model", json_string(g->model));
    json_object_set_new(gpu, "memory_bytes", json_integer(g->memory_bytes));
    setsrc(src, "gpu.memory_bytes", c->host, c->date, "cudaDeviceProp.totalGlobalMem of GPU 0");
    /* Copies: the slowest GPU's median (the step waits for the slowest). */
    const char *keys[4] = {"h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps", "d2h_pageable_gbps"};
    const struct calib_figure *arr[4] = {g->h2d_pinned_gbps, g->d2h_pinned_gbps, g->h2d_pageable_gbps, g->d2h_pageable_gbps};
    for (int k = 0; k < 4; k++) {
        double lo = arr[k][0].median;
        char per[400] = "";
        for (int d = 0; d < g->n_gpus; d++) {
            lo = arr[k][d].median < lo ? arr[k][d].median : lo;
            size_t l = strlen(per);
            snprintf(per + l, sizeof per - l, "%sGPU %d %.2f (%.2f..%.2f)", d ? ", " : "", d, arr[k][d].median,
                     arr[k][d].min, arr[k][d].max);
        }
        json_object_set_new(gpu, keys[k], json_real(lo));
        char key[64];
        snprintf(key, sizeof key, "gpu.%s", keys[k]);
        setsrc(src, key, c->host, c->date, "cudaMemcpyAsync of %lld MiB, one GPU at a time, %d repeats, slowest GPU's "
               "median; GB/s per GPU: %s", (long long)(g->copy_bytes >> 20), arr[k][0].repeats, per);
    }
    /* The all-at-once figure went through the switches of the GPUs measured (0 .. n - 1), not
     * through every switch of the profile: one GPU's measurement is one switch's uplink. */
    json_t *sws = json_object_get(node, "pcie_switches");
    size_t i;
    json_t *sw;
    int used = 0;
    json_array_foreach(sws, i, sw) {
        size_t j;
        json_t *gi;
        bool mine = false;
        json_array_foreach(json_object_get(sw, "gpus"), j, gi)
            mine |= json_is_integer(gi) && json_integer_value(gi) < g->n_gpus;
        used += mine;
    }
    used = used > 0 ? used : 1;
    double per_switch = g->h2d_all_gbps.median / used;
    json_array_foreach(sws, i, sw)
        json_object_set_new(sw, "uplink_gbps", json_real(per_switch));
    setsrc(src, "node.pcie_switches[].uplink_gbps", c->host, c->date, "all %d GPUs at once, pinned H2D of %lld MiB "
           "each: sum %.2f GB/s (%.2f..%.2f), divided over the %d switch%s of the profile's %zu those GPUs sit "
           "behind", g->n_gpus, (long long)(g->copy_bytes >> 20), g->h2d_all_gbps.median, g->h2d_all_gbps.min,
           g->h2d_all_gbps.max, used, used == 1 ? "" : "es", json_array_size(sws));
    json_object_set_new(gpu, "hbm_gbps", json_real(g->d2d_gbps.median));
    setsrc(src, "gpu.hbm_gbps", c->host, c->date, "GPU 0 device-to-device cudaMemcpyAsync, read + write bytes: %.1f "
           "GB/s (%.1f..%.1f)", g->d2d_gbps.median, g->d2d_gbps.min, g->d2d_gbps.max);
    double eff = g->adam_elems_per_s.median * 28 / (g->d2d_gbps.median * 1e9);
    eff = eff < 0.01 ? 0.01 : eff > 1 ? 1 : eff;
    json_object_set_new(gpu, "hbm_efficiency", json_real(eff));
    setsrc(src, "gpu.hbm_efficiency", c->host, c->date, "kernels/ CUDA Adam on GPU 0, %lld elements, fp32 gradient: "
           "%.3g elements/s (%.3g..%.3g) x 28 B over the D2D bandwidth", (long long)g->adam_numel,
           g->adam_elems_per_s.median, g->adam_elems_per_s.min, g->adam_elems_per_s.max);
    /* Host side from the CPU measurements. */
    json_t *sockets = json_object_get(node, "sockets");
    double best = 0;
    for (int t = 0; t < c->n_threads; t++)
        best = c->dram_gbps[t].median > best ? c->dram_gbps[t].median : best;
    json_array_foreach(sockets, i, sw)
        json_object_set_new(sw, "dram_gbps", json_real(best / (double)json_array_size(sockets)));
    setsrc(src, "node.sockets[].dram_gbps", c->host, c->date, "triad over all %d online cores: %.1f GB/s, divided over "
           "the profile's %zu sockets", c->cores, best, json_array_size(sockets));
    json_object_set_new(json_object_get(root, "cpu_adam"), "elements_per_s_per_core", json_real(c->adam_elems_per_s[0].median));
    setsrc(src, "cpu_adam.elements_per_s_per_core", c->host, c->date, "kernels/ CPU Adam (%s) on one thread: %.3g "
           "elements/s (%.3g..%.3g)", c->isa, c->adam_elems_per_s[0].median, c->adam_elems_per_s[0].min,
           c->adam_elems_per_s[0].max);
    /* GEMMs at the model's shapes: the achieved rate over the base profile's peak. */
    if (g->have_gemm) {
        const struct {
            const char *peak, *eff;        /* gpu.* keys */
            const struct calib_figure *f;    /* measured FLOP/s */
            const char *what;              /* the call */
        } k[2] = {{"tensor_tflops", "tensor_efficiency", &g->bf16_flops, "cublasGemmEx bf16 in, fp32 accumulate"},
                  {"fp32_tflops", "fp32_efficiency", &g->sgemm_flops, "cublasSgemm (fp32, as the executor)"}};
        for (int q = 0; q < 2; q++) {
            double peak = json_number_value(json_object_get(gpu, k[q].peak));
            if (!(peak > 0) || !(k[q].f->median > 0))
                continue;
            double ge = k[q].f->median * 1e-12 / peak;
            ge = ge < 0.01 ? 0.01 : ge > 1 ? 1 : ge;
            json_object_set_new(gpu, k[q].eff, json_real(ge));
            char key[64];
            snprintf(key, sizeof key, "gpu.%s", k[q].eff);
            setsrc(src, key, c->host, c->date, "%s on GPU 0 over the GEMMs %s (%.4g GFLOP per pass): %.4g TFLOP/s "
                   "(%.4g..%.4g, %d repeats) over the profile's %.4g TFLOP/s peak", k[q].what, g->gemm_shapes,
                   g->gemm_flop * 1e-9, k[q].f->median * 1e-12, k[q].f->min * 1e-12, k[q].f->max * 1e-12,
                   k[q].f->repeats, peak);
        }
    }
    /* NCCL bus bandwidth at the largest size, latency at the smallest. */
    if (g->have_nccl && g->n_nccl_sizes > 0) {
        json_t *co = json_object_get(root, "collectives"), *lat = json_object_get(root, "latency_us");
        int last = g->n_nccl_sizes - 1;
        char ag[600] = "", rs[600] = "";
        for (int k = 0; k < g->n_nccl_sizes; k++) {
            size_t la = strlen(ag), lr = strlen(rs);
            snprintf(ag + la, sizeof ag - la, "%s%lld B: %.3g", k ? ", " : "", (long long)g->nccl_bytes[k],
                     g->nccl_allgather_busbw_gbps[k].median);
            snprintf(rs + lr, sizeof rs - lr, "%s%lld B: %.3g", k ? ", " : "", (long long)g->nccl_bytes[k],
                     g->nccl_reduce_scatter_busbw_gbps[k].median);
        }
        if (json_is_object(co)) {
            json_object_set_new(co, "allgather_busbw_gbps", json_real(g->nccl_allgather_busbw_gbps[last].median));
            json_object_set_new(co, "reduce_scatter_busbw_gbps",
                                json_real(g->nccl_reduce_scatter_busbw_gbps[last].median));
            setsrc(src, "collectives.allgather_busbw_gbps", c->host, c->date, "ncclAllGather under mpirun, %d ranks "
                   "(one GPU each), bus bandwidth (nccl-tests convention) of the slowest rank at %lld B per rank; "
                   "GB/s by size: %s", g->nccl_ranks, (long long)g->nccl_bytes[last], ag);
            setsrc(src, "collectives.reduce_scatter_busbw_gbps", c->host, c->date, "ncclReduceScatter (fp32) under "
                   "mpirun, %d ranks, bus bandwidth of the slowest rank at %lld B per rank; GB/s by size: %s",
                   g->nccl_ranks, (long long)g->nccl_bytes[last], rs);
        }
        if (json_is_object(lat)) {
            json_object_set_new(lat, "collective_intra", json_real(g->nccl_latency_us.median));
            setsrc(src, "latency_us.collective_intra", c->host, c->date, "ncclAllGather of %lld B per rank, %d "
                   "ranks: %.1f us (%.1f..%.1f)", (long long)g->nccl_bytes[0], g->nccl_ranks,
                   g->nccl_latency_us.median, g->nccl_latency_us.min, g->nccl_latency_us.max);
        }
    }
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    return *out ? 0 : rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
}
