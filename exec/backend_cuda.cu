/* exec/backend_cuda.cu — the `cuda` backend: one GPU per rank (OMPI_COMM_WORLD_LOCAL_RANK picks
 * it among the visible ones), cudaMalloc, pinned host memory from cudaMallocHost, three streams,
 * kernels/adam.cu, cuBLAS GEMMs (libcublas is loaded with dlopen when --compute gemm asks for it:
 * linked, its static initialisers cost every ratiolab invocation half a second), NCCL collectives bootstrapped over MPI (rank 0's unique id is
 * broadcast). Every CUDA, cuBLAS and NCCL call is checked and reports file:line; NCCL's
 * asynchronous errors are polled after each collective. Built only with nvcc, cuBLAS and NCCL. */
#include <cublas_v2.h>      /* the cuBLAS types; the library is dlopen'ed (see load_cublas) */
#include <cuda_runtime.h>
#include <dlfcn.h>          /* dlopen, dlsym */
#include <nccl.h>           /* ncclCommInitRank, ncclReduceScatter, ncclAllGather */
#include <stdlib.h>
#include <string.h>
#include <time.h>           /* clock_gettime */

#include "kernels/adam.h"   /* kern_adam_cuda; includes common/rl.h in extern "C" */

extern "C" {
#include "exec/backend.h"
#include "exec/exec.h"
}
#include "exec/synth.h"     /* ex__share, also device code */
#include "common/rl_api.h"  /* RL_API_TRY: the one check of CUDA, NCCL and cuBLAS calls */

/* The cuBLAS entry points used, resolved from libcublas.so at run time. */
struct cublas_fns {
    void *lib;                                                              /* dlopen handle */
    cublasStatus_t (*create)(cublasHandle_t *);                             /* cublasCreate_v2 */
    cublasStatus_t (*destroy)(cublasHandle_t);                              /* cublasDestroy_v2 */
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);             /* cublasSetStream_v2 */
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *,
                            const float *, int, const float *, int, const float *, float *, int);   /* cublasSgemm_v2 */
    cublasStatus_t (*gemmex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                             const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                             cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);   /* cublasGemmEx */
};

/* One tagged operation: events recorded on its stream before and after it. */
struct cu_timed {
    cudaEvent_t start, end;         /* timing events */
    int phase;                      /* enum step_phase */
};

struct ex_dev {
    struct ex_comm *comm;           /* MPI, for the NCCL bootstrap */
    struct cublas_fns blas_fns;     /* loaded on the first GEMM */
    int device;                     /* CUDA device ordinal */
    cudaStream_t stream[EX_STREAM_COUNT];
    cublasHandle_t blas;            /* on EX_STREAM_COMPUTE */
    ncclComm_t nccl;                /* NULL with one rank */
    int64_t *count_d;               /* device counter for nonfinite */
    cudaEvent_t ev[64];             /* event ring for event_record / event_wait */
    cudaEvent_t *gev;               /* all-gather events: slot i is request handle i + 1 */
    cudaEvent_t *gstart;            /* slot i: recorded before its gather (its busy time is gstart..gev) */
    bool *gev_busy;                 /* slot i marks a started, not yet waited all-gather */
    int cap_gev;                    /* slots allocated (events created on first use) */
    uint64_t n_ev;                  /* events recorded since open */
    int64_t capacity_bytes;         /* 0: the GPU's */
    int64_t used_at_open;           /* the GPU's used bytes when open finished (contexts, NCCL) */
    int64_t lib_bytes;              /* cuBLAS's own: the GPU's used bytes gained across its load and
                                       across each GEMM shape's first call (workspace, lazily loaded
                                       modules); ex_device_used leaves them out */
    int64_t rounding_bytes;         /* live buffers' ex_device_granted - bytes, summed */
    struct { int64_t m, n, k; int lowp; } shape_seen[64];   /* GEMM shapes called so far */
    int n_shape_seen;               /* entries (past 64 a shape is no longer re-read) */
    /* CUDA-event timing of tagged operations (tag, take_spans) */
    int tag[EX_STREAM_COUNT];       /* phase of the next operations per stream, -1: untimed */
    cudaEvent_t t_base;             /* recorded at open: time zero of the device's clock */
    int64_t t_base_host_ns;         /* the host monotonic clock when t_base completed */
    struct cu_timed *timed;         /* tagged operations not yet taken, in issue order */
    int n_timed, cap_timed;         /* used, allocated */
    cudaEvent_t *spare;             /* timing events to reuse */
    int n_spare, cap_spare;         /* used, allocated */
};

/* Every CUDA, NCCL and cuBLAS call goes through common/rl_api.h's one check; a kernel launch is
 * checked with the runtime's last error, named by the kernel. */
#define CU_TRY(call) RL_API_TRY(cuda, call, e)
#define NCCL_TRY(call) RL_API_TRY(nccl, call, e)
/* Every operation first makes its device current: a process may hold several (calibrate opens
 * one per GPU), and allocations, events, cuBLAS handles and launches belong to the current one. */
#define CU_ON(d) CU_TRY(cudaSetDevice((d)->device))
#define CU_LAUNCHED(kernel) rl_api_check_cuda(cudaGetLastError(), "launch of " #kernel, __FILE__, __LINE__, e)

/* NCCL errors raised asynchronously (a peer died, a network failure). */
static int nccl_async_check(struct ex_dev *d, struct rl_err *e)
{
    if (!d->nccl)
        return 0;
    ncclResult_t async = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(d->nccl, &async));
    if (async != ncclSuccess)
        return RL_API_CHECK(nccl, async, e);   /* the asynchronous error, as a failed call */
    return 0;
}

static int grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

static int64_t host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A timing event: a spare one, or a new one (timing enabled). */
static int timing_event(struct ex_dev *d, cudaEvent_t *ev, struct rl_err *e)
{
    if (d->n_spare > 0) {
        *ev = d->spare[--d->n_spare];
        return 0;
    }
    CU_TRY(cudaEventCreate(ev));
    return 0;
}

static void spare_event(struct ex_dev *d, cudaEvent_t ev)
{
    if (d->n_spare == d->cap_spare) {
        int cap = d->cap_spare ? 2 * d->cap_spare : 64;
        cudaEvent_t *n = (cudaEvent_t *)realloc(d->spare, (size_t)cap * sizeof *n);
        if (!n) {
            cudaEventDestroy(ev);
            return;
        }
        d->spare = n;
        d->cap_spare = cap;
    }
    d->spare[d->n_spare++] = ev;
}

/* Before a tagged operation on stream s: records its start event (*start stays NULL when the
 * stream is untimed). */
static int timed_begin(struct ex_dev *d, enum ex_stream s, cudaEvent_t *start, struct rl_err *e)
{
    *start = NULL;
    if (d->tag[s] < 0)
        return 0;
    int rc = timing_event(d, start, e);
    if (rc)
        return rc;
    CU_TRY(cudaEventRecord(*start, d->stream[s]));
    return 0;
}

/* After it: records its end event and keeps the pair for take_spans. */
static int timed_end(struct ex_dev *d, enum ex_stream s, cudaEvent_t start, struct rl_err *e)
{
    if (!start)
        return 0;
    cudaEvent_t end = NULL;
    int rc = timing_event(d, &end, e);
    if (rc)
        return rc;
    CU_TRY(cudaEventRecord(end, d->stream[s]));
    if (d->n_timed == d->cap_timed) {
        int cap = d->cap_timed ? 2 * d->cap_timed : 256;
        struct cu_timed *n = (struct cu_timed *)realloc(d->timed, (size_t)cap * sizeof *n);
        if (!n)
            return rl_errf(e, RL_ENOMEM, "out of host memory for the timing events");
        d->timed = n;
        d->cap_timed = cap;
    }
    d->timed[d->n_timed++] = (struct cu_timed){start, end, d->tag[s]};
    return 0;
}

/* ---- kernels --------------------------------------------------------------------------------- */

__global__ void k_scale(float *x, int64_t n, float c)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = __fmul_rn(x[i], c);
}

__global__ void k_narrow(uint16_t *d, int bf16, const float *s, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        d[i] = bf16 ? kern_f32_to_bf16(s[i]) : kern_f32_to_f16(s[i]);
}

__global__ void k_widen(float *d, int bf16, const uint16_t *s, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        d[i] = bf16 ? kern_bf16_to_f32(s[i]) : kern_f16_to_f32(s[i]);
}

__global__ void k_nonfinite(const float *x, int64_t n, unsigned long long *count)
{
    unsigned long long k = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        k += !isfinite(x[i]);
    if (k)
        atomicAdd(count, k);
}

/* t: 0 fp32, 1 bf16, 2 fp16 (the shares are exact in all three). */
__global__ void k_shares(void *dst, int t, int64_t count, int64_t valid, int64_t gstart, uint64_t base, int q, int W,
                         int64_t nan_at)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < count; j += (int64_t)gridDim.x * blockDim.x) {
        float v = j < valid ? ex__share(base, gstart + j, q, W) : 0.0f;
        if (j < valid && gstart + j == nan_at)
            v = __int_as_float(0x7fc00000);
        if (t == 0)
            ((float *)dst)[j] = v;
        else
            ((uint16_t *)dst)[j] = t == 1 ? kern_f32_to_bf16(v) : kern_f32_to_f16(v);
    }
}

/* ---- the table ------------------------------------------------------------------------------- */

static void cu_close(struct ex_dev *d);

/* No GPU (or no driver) is a count of 0, not an error; the not-ready state of a failed count is
 * cleared (kern_cuda_device_count). */
static int cu_probe(int *n, char *model, size_t model_len, int64_t *memory_bytes, struct rl_err *e)
{
    *n = kern_cuda_device_count();
    *memory_bytes = -1;
    snprintf(model, model_len, "none");
    if (*n <= 0) {
        *n = 0;
        return 0;
    }
    struct cudaDeviceProp prop;
    CU_TRY(cudaGetDeviceProperties(&prop, 0));
    snprintf(model, model_len, "%s", prop.name);
    *memory_bytes = (int64_t)prop.totalGlobalMem;
    return 0;
}

static int cu_open_(struct ex_dev **dp, struct ex_comm *c, int local_rank, int64_t capacity_bytes, struct rl_err *e)
{
    int n = 0;
    cudaError_t rc0 = cudaGetDeviceCount(&n);
    if (rc0 != cudaSuccess || n < 1)
        return rl_errf(e, RL_EENV, "backend cuda: no GPU is visible (cudaGetDeviceCount: %s)",
                       rc0 != cudaSuccess ? cudaGetErrorString(rc0) : "0 devices");
    struct ex_dev *d = (struct ex_dev *)calloc(1, sizeof *d);
    if (!d)
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    *dp = d;
    d->comm = c;
    /* Under mpirun the node's rank count; a process alone gives the device's index (calibrate). */
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int local_size = ls ? atoi(ls) : 1;
    RL_TRY(ex_gpu_for_rank(local_rank, local_size > local_rank ? local_size : local_rank + 1, n, &d->device, e));
    d->capacity_bytes = capacity_bytes;
    CU_TRY(cudaSetDevice(d->device));
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        CU_TRY(cudaStreamCreateWithFlags(&d->stream[s], cudaStreamNonBlocking));
    CU_TRY(cudaMalloc((void **)&d->count_d, sizeof *d->count_d));
    for (int i = 0; i < 64; i++)
        CU_TRY(cudaEventCreateWithFlags(&d->ev[i], cudaEventDisableTiming));
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        d->tag[s] = -1;
    /* The device clock's zero on the host clock: a timed event, waited for at once. */
    CU_TRY(cudaEventCreate(&d->t_base));
    CU_TRY(cudaEventRecord(d->t_base, d->stream[EX_STREAM_COMPUTE]));
    CU_TRY(cudaEventSynchronize(d->t_base));
    d->t_base_host_ns = host_now_ns();
    /* NCCL for more than one rank; for one rank too when RATIOLAB_NCCL_ONE_RANK=1 (a 1-rank
     * communicator: scripts/gpu-check.sh takes every collective through NCCL on one GPU). */
    const char *one = getenv("RATIOLAB_NCCL_ONE_RANK");
    if (c->size > 1 || (one && strcmp(one, "1") == 0)) {
        struct {
            int ok;              /* rank 0's ncclGetUniqueId succeeded */
            ncclUniqueId id;     /* its answer */
        } boot;
        memset(&boot, 0, sizeof boot);
        /* A failed unique id is broadcast as such: every rank returns the error, none waits in
         * ncclCommInitRank for a rank 0 that never comes. */
        int id_rc = c->rank == 0 ? RL_API_CHECK(nccl, ncclGetUniqueId(&boot.id), e) : 0;
        boot.ok = c->rank != 0 || id_rc == 0;
        if (c->size > 1)
            RL_TRY(ex_comm_bcast(c, &boot, sizeof boot, e));
        if (!boot.ok)
            return c->rank == 0 ? id_rc : rl_errf(e, RL_EENV, "backend cuda: ncclGetUniqueId failed on rank 0");
        NCCL_TRY(ncclCommInitRank(&d->nccl, c->size, boot.id, c->rank));
    }
    size_t fr = 0, total = 0;
    CU_TRY(cudaMemGetInfo(&fr, &total));
    d->used_at_open = (int64_t)(total - fr);
    return 0;
}

/* Opens, or releases what was opened and returns the error. */
static int cu_open(struct ex_dev **dp, struct ex_comm *c, int local_rank, int64_t capacity_bytes, struct rl_err *e)
{
    *dp = NULL;
    int rc = cu_open_(dp, c, local_rank, capacity_bytes, e);
    if (rc) {
        cu_close(*dp);
        *dp = NULL;
    }
    return rc;
}

static void cu_close(struct ex_dev *d)
{
    if (!d)
        return;
    (void)cudaSetDevice(d->device);
    if (d->nccl)
        ncclCommDestroy(d->nccl);
    if (d->blas)
        d->blas_fns.destroy(d->blas);
    if (d->blas_fns.lib)
        dlclose(d->blas_fns.lib);
    cudaFree(d->count_d);
    for (int i = 0; i < 64; i++)
        if (d->ev[i])
            cudaEventDestroy(d->ev[i]);
    for (int i = 0; i < d->cap_gev; i++) {
        if (d->gev[i])
            cudaEventDestroy(d->gev[i]);
        if (d->gstart[i])
            cudaEventDestroy(d->gstart[i]);
    }
    free(d->gev);
    free(d->gstart);
    free(d->gev_busy);
    for (int i = 0; i < d->n_timed; i++) {
        cudaEventDestroy(d->timed[i].start);
        cudaEventDestroy(d->timed[i].end);
    }
    for (int i = 0; i < d->n_spare; i++)
        cudaEventDestroy(d->spare[i]);
    free(d->timed);
    free(d->spare);
    if (d->t_base)
        cudaEventDestroy(d->t_base);
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        if (d->stream[s])
            cudaStreamDestroy(d->stream[s]);
    free(d);
}

/* This process's device memory since open: the GPU's used bytes now less those at open (the CUDA
 * context, NCCL's communicator and any other process on the GPU), so the ledger's buffers are
 * compared with what they took, not with the whole GPU. */
static void cu_mem(struct ex_dev *d, int64_t *used, int64_t *cap)
{
    (void)cudaSetDevice(d->device);
    size_t fr = 0, total = 0;
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) {
        *used = *cap = -1;
        return;
    }
    *used = ex_device_used((int64_t)total, (int64_t)fr, d->used_at_open, d->lib_bytes, d->rounding_bytes);
    *cap = d->capacity_bytes > 0 ? d->capacity_bytes : (int64_t)total;
}

static void cu_mem_overheads(struct ex_dev *d, int64_t *at_open, int64_t *lib)
{
    *at_open = d->used_at_open;
    *lib = d->lib_bytes;
}

static int cu_dev_alloc(struct ex_dev *d, int64_t bytes, void **p, struct rl_err *e)
{
    CU_ON(d);
    cudaError_t rc = cudaMalloc(p, bytes ? (size_t)bytes : 1);
    if (rc != cudaSuccess) {
        size_t fr = 0, total = 0;
        cudaMemGetInfo(&fr, &total);
        return rl_errf(e, RL_ENOMEM, "GPU %d: cudaMalloc of %lld bytes failed (%s), %zu bytes free", d->device,
                       (long long)bytes, cudaGetErrorString(rc), fr);
    }
    /* Zeroed on the compute stream and waited for: the non-blocking streams do not wait for the
     * legacy default stream a plain cudaMemset would use. */
    d->rounding_bytes += ex_device_granted(bytes) - bytes;
    CU_TRY(cudaMemsetAsync(*p, 0, bytes ? (size_t)bytes : 1, d->stream[EX_STREAM_COMPUTE]));
    CU_TRY(cudaStreamSynchronize(d->stream[EX_STREAM_COMPUTE]));
    return 0;
}

static void cu_dev_free(struct ex_dev *d, void *p, int64_t bytes)
{
    (void)cudaSetDevice(d->device);
    if (p)
        d->rounding_bytes -= ex_device_granted(bytes) - bytes;
    cudaFree(p);
}

static int cu_host_alloc(struct ex_dev *d, int64_t bytes, bool pinned, void **p, struct rl_err *e)
{
    CU_ON(d);
    (void)d;
    if (!pinned) {
        *p = calloc(1, bytes ? (size_t)bytes : 1);
        return *p ? 0 : rl_errf(e, RL_ENOMEM, "out of host memory for %lld pageable bytes", (long long)bytes);
    }
    cudaError_t rc = cudaMallocHost(p, bytes ? (size_t)bytes : 1);
    if (rc != cudaSuccess)
        return rl_errf(e, RL_ENOMEM, "cudaMallocHost of %lld pinned bytes failed: %s", (long long)bytes,
                       cudaGetErrorString(rc));
    memset(*p, 0, bytes ? (size_t)bytes : 1);
    return 0;
}

static void cu_host_free(struct ex_dev *d, void *p, int64_t bytes, bool pinned)
{
    (void)cudaSetDevice(d->device);
    (void)d;
    (void)bytes;
    if (pinned)
        cudaFreeHost(p);
    else
        free(p);
}

static int cu_copy(struct ex_dev *d, void *dst, const void *src, int64_t bytes, enum ex_copy_dir dir,
                   enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    (void)dir;
    if (bytes <= 0)
        return 0;
    cudaEvent_t t = NULL;
    int rc = timed_begin(d, s, &t, e);
    if (rc)
        return rc;
    CU_TRY(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, d->stream[s]));
    return timed_end(d, s, t, e);
}

static int cu_adam(struct ex_dev *d, const struct kern_adam_scalars *sc, const struct kern_adam_bufs *b,
                   enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    cudaEvent_t t = NULL;
    int rc = timed_begin(d, s, &t, e);
    if (!rc)
        rc = kern_adam_cuda(sc, b, d->stream[s], e);
    if (!rc)
        rc = timed_end(d, s, t, e);
    return rc;
}

static int cu_scale(struct ex_dev *d, float *x, int64_t n, float c, enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    k_scale<<<grid_for(n), 256, 0, d->stream[s]>>>(x, n, c);
    return CU_LAUNCHED(k_scale);
}

static int cu_narrow(struct ex_dev *d, void *dst, enum kern_dtype t, const float *src, int64_t n, enum ex_stream s,
                     struct rl_err *e)
{
    CU_ON(d);
    k_narrow<<<grid_for(n), 256, 0, d->stream[s]>>>((uint16_t *)dst, t == KERN_BF16, src, n);
    return CU_LAUNCHED(k_narrow);
}

static int cu_widen(struct ex_dev *d, float *dst, const void *src, enum kern_dtype t, int64_t n, enum ex_stream s,
                    struct rl_err *e)
{
    CU_ON(d);
    k_widen<<<grid_for(n), 256, 0, d->stream[s]>>>(dst, t == KERN_BF16, (const uint16_t *)src, n);
    return CU_LAUNCHED(k_widen);
}

static int cu_shares(struct ex_dev *d, void *dst, enum kern_dtype t, int64_t count, int64_t valid, int64_t gstart,
                     uint64_t seed, int64_t it, int q, int W, int64_t nan_at, enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    int tc = t == KERN_F32 ? 0 : t == KERN_BF16 ? 1 : 2;
    k_shares<<<grid_for(count), 256, 0, d->stream[s]>>>(dst, tc, count, valid, gstart, ex_synth_base(seed, it), q, W,
                                                       nan_at);
    return CU_LAUNCHED(k_shares);
}

static int cu_nonfinite(struct ex_dev *d, const float *x, int64_t n, int64_t *count, enum ex_stream s,
                        struct rl_err *e)
{
    CU_ON(d);
    CU_TRY(cudaMemsetAsync(d->count_d, 0, sizeof *d->count_d, d->stream[s]));
    if (n > 0) {
        k_nonfinite<<<grid_for(n), 256, 0, d->stream[s]>>>(x, n, (unsigned long long *)d->count_d);
        int rc = CU_LAUNCHED(k_nonfinite);
        if (rc)
            return rc;
    }
    int64_t h = 0;
    CU_TRY(cudaMemcpyAsync(&h, d->count_d, sizeof h, cudaMemcpyDeviceToHost, d->stream[s]));
    CU_TRY(cudaStreamSynchronize(d->stream[s]));
    *count += h;
    return 0;
}

/* The GPU's used bytes now (total - free), or -1 when cudaMemGetInfo fails. */
static int64_t used_now(void)
{
    size_t fr = 0, total = 0;
    return cudaMemGetInfo(&fr, &total) == cudaSuccess ? (int64_t)(total - fr) : -1;
}

/* Whether this GEMM shape is called for the first time (then recorded): its first call may load
 * a module and grow cuBLAS's workspace, which the caller reads around it. */
static bool shape_first(struct ex_dev *d, int64_t m, int64_t n, int64_t k, int lowp)
{
    for (int i = 0; i < d->n_shape_seen; i++)
        if (d->shape_seen[i].m == m && d->shape_seen[i].n == n && d->shape_seen[i].k == k &&
            d->shape_seen[i].lowp == lowp)
            return false;
    if (d->n_shape_seen == 64)
        return false;
    d->shape_seen[d->n_shape_seen].m = m;
    d->shape_seen[d->n_shape_seen].n = n;
    d->shape_seen[d->n_shape_seen].k = k;
    d->shape_seen[d->n_shape_seen++].lowp = lowp;
    return true;
}

/* Around a shape's first GEMM: the compute stream drained, the GPU's use read (u0 >= 0), then
 * after the call drained again, the gain added to lib_bytes. Only first calls pay the two waits. */
static int lib_read_begin(struct ex_dev *d, int64_t *u0, struct rl_err *e)
{
    CU_TRY(cudaStreamSynchronize(d->stream[EX_STREAM_COMPUTE]));
    *u0 = used_now();
    return 0;
}
static int lib_read_end(struct ex_dev *d, int64_t u0, struct rl_err *e)
{
    CU_TRY(cudaStreamSynchronize(d->stream[EX_STREAM_COMPUTE]));
    int64_t u1 = used_now();
    if (u0 >= 0 && u1 > u0)
        d->lib_bytes += u1 - u0;
    return 0;
}

/* Loads libcublas and creates the handle on the compute stream. */
static int load_cublas_(struct ex_dev *d, struct rl_err *e)
{
    struct cublas_fns *f = &d->blas_fns;
    static const char *const names[] = {"libcublas.so", "libcublas.so.13", "libcublas.so.12"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !f->lib; i++)
        f->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!f->lib)
        return rl_errf(e, RL_EENV, "compute gemm: cannot load cuBLAS (libcublas.so): %s", dlerror());
    f->create = (cublasStatus_t(*)(cublasHandle_t *))dlsym(f->lib, "cublasCreate_v2");
    f->destroy = (cublasStatus_t(*)(cublasHandle_t))dlsym(f->lib, "cublasDestroy_v2");
    f->set_stream = (cublasStatus_t(*)(cublasHandle_t, cudaStream_t))dlsym(f->lib, "cublasSetStream_v2");
    f->sgemm = (cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *,
                                  const float *, int, const float *, int, const float *, float *, int))
        dlsym(f->lib, "cublasSgemm_v2");
    f->gemmex = (cublasStatus_t(*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                   const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
                                   void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t))
        dlsym(f->lib, "cublasGemmEx");
    if (!f->create || !f->destroy || !f->set_stream || !f->sgemm || !f->gemmex)
        return rl_errf(e, RL_EENV, "compute gemm: libcublas lacks cublasCreate_v2/cublasSgemm_v2/cublasGemmEx");
    RL_API_TRY(cublas, f->create(&d->blas), e);
    RL_API_TRY(cublas, f->set_stream(d->blas, d->stream[EX_STREAM_COMPUTE]), e);
    return 0;
}

/* load_cublas_, and what the GPU's use gained meanwhile
 * is cuBLAS's own (lib_bytes). */
static int load_cublas(struct ex_dev *d, struct rl_err *e)
{
    int64_t u0 = 0;
    RL_TRY(lib_read_begin(d, &u0, e));
    RL_TRY(load_cublas_(d, e));
    return lib_read_end(d, u0, e);
}

/* GEMMs run on the compute stream (the handle's); a tagged compute stream times each with events. */
static int cu_gemm(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c,
                   enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    (void)s;
    if (!d->blas)
        RL_TRY(load_cublas(d, e));
    int64_t u0 = -1;
    bool first = shape_first(d, m, n, k, 0);
    if (first)
        RL_TRY(lib_read_begin(d, &u0, e));
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t t = NULL;
    RL_TRY(timed_begin(d, EX_STREAM_COMPUTE, &t, e));
    /* Row-major C = A B is column-major C^T = B^T A^T. */
    int rc = RL_API_CHECK(cublas, d->blas_fns.sgemm(d->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                                    (int)n, a, (int)k, &zero, c, (int)n), e);
    if (rc)
        return rl_err_prefix(e, "GEMM %lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
    RL_TRY(timed_end(d, EX_STREAM_COMPUTE, t, e));
    return first ? lib_read_end(d, u0, e) : 0;
}

static int cu_gemm_lowp(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const void *a, const void *b, void *c,
                        enum kern_dtype t, enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    (void)s;
    if (!d->blas)
        RL_TRY(load_cublas(d, e));
    int64_t u0 = -1;
    bool first = shape_first(d, m, n, k, 1);
    if (first)
        RL_TRY(lib_read_begin(d, &u0, e));
    const float one = 1.0f, zero = 0.0f;
    cudaDataType dt = t == KERN_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    cudaEvent_t ev = NULL;
    RL_TRY(timed_begin(d, EX_STREAM_COMPUTE, &ev, e));
    int rc = RL_API_CHECK(cublas, d->blas_fns.gemmex(d->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                                     dt, (int)n, a, dt, (int)k, &zero, c, dt, (int)n,
                                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), e);
    if (rc)
        return rl_err_prefix(e, "16-bit GEMM %lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
    RL_TRY(timed_end(d, EX_STREAM_COMPUTE, ev, e));
    return first ? lib_read_end(d, u0, e) : 0;
}

static int cu_sync(struct ex_dev *d, enum ex_stream s, struct rl_err *e)
{
    CU_ON(d);
    CU_TRY(cudaStreamSynchronize(d->stream[s]));
    return 0;
}

static int cu_reduce_scatter(struct ex_dev *d, void *buf, int64_t count, enum kern_dtype t, void **out,
                             struct rl_err *e)
{
    CU_ON(d);
    if (!d->nccl) {
        *out = buf;
        return 0;
    }
    ncclDataType_t nt = t == KERN_F32 ? ncclFloat32 : t == KERN_BF16 ? ncclBfloat16 : ncclFloat16;
    int64_t eb = t == KERN_F32 ? 4 : 2;
    /* NCCL in place: the result lands in this rank's block. */
    char *mine = (char *)buf + (int64_t)d->comm->rank * count * eb;
    NCCL_TRY(ncclReduceScatter(buf, mine, (size_t)count, nt, ncclSum, d->nccl, d->stream[EX_STREAM_COMM]));
    CU_TRY(cudaStreamSynchronize(d->stream[EX_STREAM_COMM]));
    *out = mine;
    return nccl_async_check(d, e);
}

/* NCCL in place on the communication stream, after this rank's part was written there; an
 * event after it, waited for by cu_allgather_wait (the compute stream is synchronised per block,
 * so the host waiting for the event orders the block's compute after its gather), and one before
 * it, so that the gather's busy time is read off the device (cu_allgather_times), not off the
 * host's next poll. */
static int cu_allgather_start(struct ex_dev *d, void *buf, int64_t bytes, uint64_t *req, struct rl_err *e)
{
    CU_ON(d);
    int i = 0;
    while (i < d->cap_gev && d->gev_busy[i])
        i++;
    if (i == d->cap_gev) {
        int cap = d->cap_gev, cap2 = d->cap_gev;
        if (rl_grow(&d->gev, &cap, sizeof *d->gev, i + 1, 8) || rl_grow(&d->gstart, &cap2, sizeof *d->gstart, i + 1, 8) ||
            rl_grow(&d->gev_busy, &d->cap_gev, sizeof *d->gev_busy, i + 1, 8))
            return rl_errf(e, RL_ENOMEM, "out of host memory for an all-gather event");
        for (int j = i; j < d->cap_gev; j++) {
            d->gev[j] = NULL;
            d->gstart[j] = NULL;
            d->gev_busy[j] = false;
        }
    }
    if (!d->gev[i])
        CU_TRY(cudaEventCreate(&d->gev[i]));
    if (!d->gstart[i])
        CU_TRY(cudaEventCreate(&d->gstart[i]));
    CU_TRY(cudaEventRecord(d->gstart[i], d->stream[EX_STREAM_COMM]));
    if (d->nccl) {
        char *mine = (char *)buf + (int64_t)d->comm->rank * bytes;
        NCCL_TRY(ncclAllGather(mine, buf, (size_t)bytes, ncclUint8, d->nccl, d->stream[EX_STREAM_COMM]));
    }
    CU_TRY(cudaEventRecord(d->gev[i], d->stream[EX_STREAM_COMM]));
    d->gev_busy[i] = true;
    *req = (uint64_t)i + 1;
    return 0;
}

static int cu_allgather_test(struct ex_dev *d, uint64_t req, bool *done, struct rl_err *e)
{
    CU_ON(d);
    if (req < 1 || req > (uint64_t)d->cap_gev || !d->gev_busy[req - 1])
        return rl_errf(e, RL_EINTERNAL, "cuda backend: all-gather request %llu was not started",
                       (unsigned long long)req);
    /* Not ready (the usual answer: a gather in flight) is no error and is cleared from the
     * runtime's last error, which the next kernel launch's check reads. */
    return RL_API_CHECK(cuda_query, cudaEventQuery(d->gev[req - 1]), e, done);
}

static int cu_allgather_wait(struct ex_dev *d, uint64_t req, struct rl_err *e)
{
    CU_ON(d);
    if (req < 1 || req > (uint64_t)d->cap_gev || !d->gev_busy[req - 1])
        return rl_errf(e, RL_EINTERNAL, "cuda backend: all-gather request %llu was not started",
                       (unsigned long long)req);
    d->gev_busy[req - 1] = false;
    CU_TRY(cudaEventSynchronize(d->gev[req - 1]));
    return d->nccl ? nccl_async_check(d, e) : 0;
}

/* After cu_allgather_wait: the gather's start and end on the communication stream, on the host
 * clock (the slot keeps its events until a new gather takes it). */
static int cu_allgather_times(struct ex_dev *d, uint64_t req, int64_t *start_ns, int64_t *end_ns, struct rl_err *e)
{
    CU_ON(d);
    if (req < 1 || req > (uint64_t)d->cap_gev || d->gev_busy[req - 1])
        return rl_errf(e, RL_EINTERNAL, "cuda backend: all-gather request %llu was not waited for",
                       (unsigned long long)req);
    float ms0 = 0, ms1 = 0;
    CU_TRY(cudaEventElapsedTime(&ms0, d->t_base, d->gstart[req - 1]));
    CU_TRY(cudaEventElapsedTime(&ms1, d->t_base, d->gev[req - 1]));
    *start_ns = d->t_base_host_ns + (int64_t)((double)ms0 * 1e6);
    *end_ns = d->t_base_host_ns + (int64_t)((double)ms1 * 1e6);
    return 0;
}

/* Event ids are 1-based counts; the ring keeps the last 64, enough for a double buffer. */
static int cu_event_record(struct ex_dev *d, enum ex_stream s, uint64_t *ev, struct rl_err *e)
{
    CU_ON(d);
    CU_TRY(cudaEventRecord(d->ev[d->n_ev % 64], d->stream[s]));
    *ev = ++d->n_ev;
    return 0;
}

static int cu_event_wait(struct ex_dev *d, uint64_t ev, struct rl_err *e)
{
    CU_ON(d);
    if (ev == 0 || ev + 64 <= d->n_ev)
        return 0;   /* nothing recorded, or older than the ring: long done (the ring is synced in order) */
    CU_TRY(cudaEventSynchronize(d->ev[(ev - 1) % 64]));
    return 0;
}

/* Copies and Adam are timed with CUDA events while their stream is tagged (the pipeline tags
 * the asynchronous gradient D2H, parameter H2D and the overlap schedule's device Adam). */
static void cu_tag(struct ex_dev *d, enum ex_stream s, int phase)
{
    d->tag[s] = phase;
}

/* The oldest timed operations, once finished, as spans on the host clock: the elapsed time of
 * each event from t_base, added to the host time t_base was seen complete. A failing event
 * query stops here; the stream's next synchronisation reports the error. */
static int cu_take_spans(struct ex_dev *d, struct step_span *out, int max)
{
    (void)cudaSetDevice(d->device);
    int n = 0;
    while (n < max && n < d->n_timed) {
        struct cu_timed *x = &d->timed[n];
        float ms0 = 0, ms1 = 0;
        if (cudaEventSynchronize(x->end) != cudaSuccess ||
            cudaEventElapsedTime(&ms0, d->t_base, x->start) != cudaSuccess ||
            cudaEventElapsedTime(&ms1, d->t_base, x->end) != cudaSuccess)
            break;
        out[n] = (struct step_span){.start_ns = d->t_base_host_ns + (int64_t)((double)ms0 * 1e6),
                                    .end_ns = d->t_base_host_ns + (int64_t)((double)ms1 * 1e6),
                                    .phase = x->phase};
        spare_event(d, x->start);
        spare_event(d, x->end);
        n++;
    }
    if (n > 0) {   /* timed is NULL until the first tagged operation */
        memmove(d->timed, d->timed + n, (size_t)(d->n_timed - n) * sizeof *d->timed);
        d->n_timed -= n;
    }
    return n;
}

/* In the order of backend.h's fields. */
extern "C" const struct ex_backend ex_backend_cuda = {
    .name = "cuda",
    .probe = cu_probe,
    .device_count = kern_cuda_device_count,
    .open = cu_open,
    .close = cu_close,
    .mem = cu_mem,
    .process_bytes = ex__nvml_process_bytes,
    .mem_overheads = cu_mem_overheads,
    .dev_alloc = cu_dev_alloc,
    .dev_free = cu_dev_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .copy = cu_copy,
    .adam = cu_adam,
    .scale = cu_scale,
    .narrow = cu_narrow,
    .widen = cu_widen,
    .shares = cu_shares,
    .nonfinite = cu_nonfinite,
    .gemm = cu_gemm,
    .gemm_lowp = cu_gemm_lowp,
    .sync = cu_sync,
    .event_record = cu_event_record,
    .event_wait = cu_event_wait,
    .tag = cu_tag,
    .take_spans = cu_take_spans,
    .reduce_scatter = cu_reduce_scatter,
    .allgather_start = cu_allgather_start,
    .allgather_test = cu_allgather_test,
    .allgather_wait = cu_allgather_wait,
    .allgather_times = cu_allgather_times,
};
