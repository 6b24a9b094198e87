/* exec/backend.h — the small table one pipeline (exec/run.c) and `ratiolab calibrate
 * --backend cuda` (calib/calib_gpu.c) run on. Two implementations, registered in one array
 * (ex_backends, exec/backends.c): `cpu` (exec/backend_cpu.c: the device is a separately accounted
 * host pool with a capacity) and `cuda` (exec/backend_cuda.cu, when nvcc is found). A further
 * backend is one more file defining its table and one more entry in that array. Pointers called "device" are device
 * memory on cuda and pool memory on cpu; "host" pointers are host memory on both.
 *
 * Streams: EX_STREAM_COMPUTE (forward/backward, device Adam), EX_STREAM_COMM (collectives and
 * the reduce path), EX_STREAM_COPY (host <-> device copies). Operations on one stream run in
 * order, asynchronously; ex_backend.sync waits for a stream. On the cpu backend every stream is
 * a worker thread with a queue (device kernels run on the compute and communication threads,
 * copies on the copy thread); on cuda every stream is a CUDA stream. reduce_scatter is
 * synchronous; an all-gather is started (allgather_start) and waited for (allgather_wait), so
 * the gathers of the next blocks run while a block computes (ZeRO-3 prefetch). Every operation
 * returns 0 or RL_E* with *e filled; an asynchronous failure is returned by the next sync or
 * event_wait of its stream. */
#ifndef RL_EXEC_BACKEND_H
#define RL_EXEC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "kernels/adam.h"
#include "plan/step.h"   /* struct step_span */

struct ex_comm;

enum ex_stream { EX_STREAM_COMPUTE, EX_STREAM_COMM, EX_STREAM_COPY, EX_STREAM_COUNT };
enum ex_copy_dir { EX_H2D, EX_D2H, EX_D2D, EX_H2H };

struct ex_dev;   /* backend state, opaque to the pipeline */

struct ex_backend {
    const char *name;   /* "cpu", "cuda" */
    /* The devices this process sees: their count (0: none, which is no error), the first one's
     * name and memory (-1: unknown). */
    int (*probe)(int *n_devices, char *model, size_t model_len, int64_t *memory_bytes, struct rl_err *e);
    /* How many devices this process sees (0: none, no driver), without touching any: the discovery
     * `run --backend auto` and validate's --backend cuda check ask before anything opens. */
    int (*device_count)(void);
    /* Opens the device for this rank (local rank picks the GPU: the rank's index among this
     * node's ranks, or, for a process that opens several devices itself, as calibrate does, the
     * device's index; c bootstraps the collectives, a 1-rank c has none); capacity_bytes 0:
     * unlimited. */
    int (*open)(struct ex_dev **d, struct ex_comm *c, int local_rank, int64_t capacity_bytes, struct rl_err *e);
    void (*close)(struct ex_dev *d);
    /* Device memory in use by this process and the capacity (-1: unknown). */
    void (*mem)(struct ex_dev *d, int64_t *used_bytes, int64_t *capacity_bytes);
    /* This process's device memory as the driver's management library reports it (cuda: NVML's
     * per-process figure, ex__nvml_process_bytes), -1 unavailable; NULL: the device has no such
     * reading (cpu: the emulated device is this process's heap). */
    int64_t (*process_bytes)(struct ex_dev *d);
    /* What the device holds beside this process's buffers (NULL: nothing, the cpu backend): its use
     * when open finished (the CUDA context, NCCL's buffers, other processes) and what cuBLAS took
     * for itself since (see ex_device_used). */
    void (*mem_overheads)(struct ex_dev *d, int64_t *at_open_bytes, int64_t *lib_bytes);
    int (*dev_alloc)(struct ex_dev *d, int64_t bytes, void **p, struct rl_err *e);
    void (*dev_free)(struct ex_dev *d, void *p, int64_t bytes);
    /* Host memory; pinned: page-locked (cudaMallocHost on cuda, mlock'ed where allowed on cpu). */
    int (*host_alloc)(struct ex_dev *d, int64_t bytes, bool pinned, void **p, struct rl_err *e);
    void (*host_free)(struct ex_dev *d, void *p, int64_t bytes, bool pinned);
    int (*copy)(struct ex_dev *d, void *dst, const void *src, int64_t bytes, enum ex_copy_dir dir,
                enum ex_stream s, struct rl_err *e);
    /* Device Adam (kernels/adam.h on device pointers). */
    int (*adam)(struct ex_dev *d, const struct kern_adam_scalars *sc, const struct kern_adam_bufs *b,
                enum ex_stream s, struct rl_err *e);
    /* dst[i] = src[i] * c on the device (the unscale pass). */
    int (*scale)(struct ex_dev *d, float *x, int64_t n, float c, enum ex_stream s, struct rl_err *e);
    /* fp32 -> 16-bit (RNE, kernels/lowp.h) and back, on the device. */
    int (*narrow)(struct ex_dev *d, void *dst, enum kern_dtype t, const float *src, int64_t n,
                  enum ex_stream s, struct rl_err *e);
    int (*widen)(struct ex_dev *d, float *dst, const void *src, enum kern_dtype t, int64_t n,
                 enum ex_stream s, struct rl_err *e);
    /* The synthetic gradient shares (exec/synth.c) of rank q of W for global elements
     * gstart .. gstart + valid - 1 into dst[0..valid), zeros into dst[valid..count) (padding),
     * as type t (KERN_F32, or KERN_BF16 / KERN_F16: exact, the shares are 16-bit values).
     * nan_at: the global element whose share is NaN (-1: none). */
    int (*shares)(struct ex_dev *d, void *dst, enum kern_dtype t, int64_t count, int64_t valid,
                  int64_t gstart, uint64_t seed, int64_t it, int q, int W, int64_t nan_at,
                  enum ex_stream s, struct rl_err *e);
    /* Number of non-finite values of x[0..n) added to *count (after sync). */
    int (*nonfinite)(struct ex_dev *d, const float *x, int64_t n, int64_t *count, enum ex_stream s,
                     struct rl_err *e);
    /* C[m x n] = A[m x k] B[k x n], row-major, on scratch device buffers (compute time only). */
    int (*gemm)(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                float *c, enum ex_stream s, struct rl_err *e);
    /* Optional (NULL: none): the same with 16-bit A, B and C of type t, fp32 accumulation (cuda:
     * cublasGemmEx; calibrate's tensor rate). */
    int (*gemm_lowp)(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const void *a, const void *b, void *c,
                     enum kern_dtype t, enum ex_stream s, struct rl_err *e);
    int (*sync)(struct ex_dev *d, enum ex_stream s, struct rl_err *e);
    /* Events: record returns a marker of the work queued so far on stream s; wait blocks until
     * that work is done (a double buffer waits for the copy that used its half, not the newest). */
    int (*event_record)(struct ex_dev *d, enum ex_stream s, uint64_t *ev, struct rl_err *e);
    int (*event_wait)(struct ex_dev *d, uint64_t ev, struct rl_err *e);
    /* Phase (enum step_phase) the next operations queued on stream s are timed as, by the
     * backend itself (a thread's clock on cpu, CUDA events on cuda); -1 (the initial tag): not
     * timed by the backend (the pipeline times them around issue and synchronisation). */
    void (*tag)(struct ex_dev *d, enum ex_stream s, int phase);
    /* Moves up to max spans of finished tagged operations into out and returns how many (the
     * pipeline records no span of its own around a tagged operation). */
    int (*take_spans)(struct ex_dev *d, struct step_span *out, int max);
    /* Sum over ranks of buf (rank-major blocks of count elements of type t, device memory):
     * fp32 (KERN_F32) or 16-bit (each addition rounded); *out points at this rank's reduced
     * block inside buf when it returns (synchronous). */
    int (*reduce_scatter)(struct ex_dev *d, void *buf, int64_t count, enum kern_dtype t, void **out,
                          struct rl_err *e);
    /* Starts an all-gather, in place: buf holds size x bytes, this rank's part at rank x bytes,
     * written by operations queued on EX_STREAM_COMM before the call (the start is ordered after
     * them). *req names it for allgather_wait; any number may be outstanding, waited in any
     * order. cpu: the communication stream is synchronised, then MPI_Iallgather on the calling
     * thread (MPI is called from that thread only; it progresses inside MPI calls); cuda:
     * ncclAllGather on the communication stream and an event after it. */
    int (*allgather_start)(struct ex_dev *d, void *buf, int64_t bytes, uint64_t *req, struct rl_err *e);
    /* *done: the all-gather req has arrived in its buffer (cpu: MPI_Test, which also progresses
     * it; cuda: cudaEventQuery); req stays valid for allgather_wait. */
    int (*allgather_test)(struct ex_dev *d, uint64_t req, bool *done, struct rl_err *e);
    /* Returns when the all-gather req has arrived in its buffer (cpu: MPI_Wait; cuda: the
     * event's synchronisation) and releases req. */
    int (*allgather_wait)(struct ex_dev *d, uint64_t req, struct rl_err *e);
    /* Optional (NULL on cpu: the pipeline times a gather from its issue to the host seeing it
     * complete). Right after allgather_wait(req): when the gather itself started and ended on the
     * device, on the host's monotonic clock (cuda: CUDA events around it on the communication
     * stream). */
    int (*allgather_times)(struct ex_dev *d, uint64_t req, int64_t *start_ns, int64_t *end_ns, struct rl_err *e);
};

extern const struct ex_backend ex_backend_cpu;
#ifdef RL_EX_CUDA
extern const struct ex_backend ex_backend_cuda;
#endif
/* Every backend of this build, cpu first; the one named `name`, or NULL. */
extern const struct ex_backend *const ex_backends[];
extern const int ex_n_backends;
const struct ex_backend *ex_backend_named(const char *name);

/* The GPU of local rank `local_rank` of `local_size` ranks on this node with `n_gpus` visible:
 * one GPU per rank (NCCL refuses two ranks on one GPU). More ranks than GPUs: RL_EENV (exit 3)
 * naming both counts and the largest rank count per node that works. */
int ex_gpu_for_rank(int local_rank, int local_size, int n_gpus, int *device, struct rl_err *e);

/* A GPU's memory this process's buffers take, as the ledger counts them: total - free now, less
 * used_at_open (total - free when open finished: its CUDA context, NCCL, other processes), less
 * lib_bytes (what cuBLAS took for itself once loaded: its handle's workspace and the modules the
 * driver loads lazily at each GEMM shape's first call, read before and after each), less
 * rounding_bytes (the allocator's rounding of the live buffers, ex_device_granted - bytes each);
 * never below 0. */
int64_t ex_device_used(int64_t total, int64_t free_now, int64_t used_at_open, int64_t lib_bytes,
                       int64_t rounding_bytes);
/* The device allocator's granule: cudaMalloc takes large buffers in 2 MiB pages. */
#define EX_DEVICE_GRANULE (INT64_C(2) << 20)
/* What cudaMalloc takes for a buffer of `bytes` (0 counts as 1): a whole number of granules. */
int64_t ex_device_granted(int64_t bytes);

/* This process's GPU memory per NVML (monitor/'s reader, dlopen'ed), bytes; -1 when NVML is
 * missing or lists no memory of this process. */
int64_t ex__nvml_process_bytes(struct ex_dev *d);

/* Host-side helpers shared by the backends and the pipeline. */
void ex__narrow_host(void *dst, enum kern_dtype t, const float *src, int64_t n);
void ex__widen_host(float *dst, const void *src, enum kern_dtype t, int64_t n);

#endif
