/* calib/calib.h — measures this machine for `ratiolab calibrate` and turns the figures into
 * a hardware profile (sim/README.md format, written through hw/hw.h) whose every number is sourced "measured by ratiolab
 * calibrate" with the method, host, date and spread. Never prints: progress goes through a
 * callback. Wall-clock timing (CLOCK_MONOTONIC) is the point here, so results vary run to run;
 * each figure is the median of its repeats and the spread (min..max) is kept. */
#ifndef RL_VALIDATION_CALIB_H
#define RL_VALIDATION_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "exec/backend.h"   /* struct ex_backend, ex_dev, ex_copy_dir: calibrate measures through the table */
#include "hw/hw.h"         /* struct hw_writer: every profile is written through the profile's key table */

#define CALIB_MAX_THREADS 64

/* One measured figure: median of `repeats` runs and their range. */
struct calib_figure {
    double median;                 /* the figure (unit in the field name that holds it) */
    double min, max;               /* spread over the repeats */
    int repeats;                   /* runs */
    double best;                   /* the undisturbed figure from each thread's fastest repeat where the
                                      measurement takes it (calib_figure_best_of: the host costs); 0 else */
};

typedef void calib_progress_fn(void *ctx, const char *what, int done, int total);

/* f from n >= 1 repeats v: their median, min, max and count (every measurement's figure). */
void calib_figure_of(struct calib_figure *f, const double *v, int n);

/* A rate measured on t threads at once over n repeats, each thread doing `units` of work (bytes,
 * elements) per repeat: sec[r * t + i] is thread i's time in repeat r; base (NULL: none) holds
 * times of the same shape whose fastest per thread is taken off (the first touch's warm write);
 * the first `warmup` repeats are not counted. f->best, the figure, is the sum over threads of
 * units over (thread i's fastest counted time - its fastest base time): interference from other
 * work on the machine only ever adds time, so the fastest repeat is the one it disturbed least.
 * f->median, min and max are those of the per-repeat sums (each thread's time in that repeat less
 * its fastest base), the spread; f->repeats the counted repeats. A difference below 1e-3 of the
 * time is taken as 1e-3 of it (bounded, never negative). Returns 0, or -1 (f untouched) when no
 * repeat is counted or a time is not positive. O(n t). */
int calib_figure_best_of(struct calib_figure *f, const double *sec, const double *base, int n, int t, int warmup,
                         double units);

struct calib_opts {
    bool thorough;                 /* larger arrays, more repeats, more GEMM shapes */
    int max_threads;               /* thread counts 1..max_threads (0: the online cores) */
    int devices;                   /* emulated devices (= ranks per node) the profile describes */
    int device_threads;            /* threads of one emulated device's kernels (0: cores / devices, >= 1) */
    int64_t gpu_bytes;             /* --backend cuda: bytes per copy and Adam elements (0: 256 Mi, 1 Gi thorough) */
    bool gpu_host;                 /* --backend cuda: the host side of a GPU profile only (DRAM triad on
                                      1 and all threads, CPU Adam on one, the host costs on 1, 2, 4, ...
                                      and all threads); none of the emulated device's figures */
    calib_progress_fn *progress;   /* NULL: none */
    void *progress_ctx;            /* passed to progress */
};
void calib_opts_default(struct calib_opts *o);

/* What DeepSpeed's step costs the host beyond DRAM bandwidth (calib/host.c; sim/README.md "Host
 * costs of PyTorch's copies"), each against threads 1..n_threads, all threads together, each
 * thread pinned to its own core, timed on its CPU time; each figure's `best` is the one the
 * profile takes (calib_figure_best_of). */
struct calib_host {
    bool measured;                 /* the figures below were measured */
    int n_threads;                 /* thread counts measured: 1..n_threads */
    char thp[16];                  /* transparent huge pages mode ("madvise", "always", "never") */
    char thp_defrag[24];           /* its defrag mode ("madvise", "defer+madvise", ...) */
    bool huge;                     /* fresh blocks asked for huge pages (MADV_HUGEPAGE: thp "always",
                                      as a plain mmap gets them), else 4 KiB pages (MADV_NOHUGEPAGE) */
    int64_t faults_per_block;      /* minor faults of one thread's last fresh block (its page size check) */
    int warmup;                    /* rounds run first and not counted */
    int64_t fault_bytes;           /* bytes per thread of one fresh allocation */
    struct calib_figure fault_gbps[CALIB_MAX_THREADS];   /* first touch of fresh allocations (mmap,
                                      write, munmap beyond a warm write), GB/s, index = threads - 1 */
    int64_t memcpy_bytes;          /* bytes per thread of one memcpy */
    struct calib_figure memcpy_gbps[CALIB_MAX_THREADS];  /* memcpy between warm pageable buffers, GB/s */
    int64_t cast_numel;            /* elements per thread of one cast */
    struct calib_figure cast_elems_per_s[CALIB_MAX_THREADS];   /* bf16 -> fp32, warm buffers */
    double load_before[3];         /* getloadavg() before the measurement (1, 5, 15 min; -1 unknown) */
    double load_after[3];          /* and after it */
    double wall_s;                 /* the measurement's wall time, seconds */
};

struct calib {
    char host[64];                 /* gethostname */
    char date[32];                 /* UTC, ISO 8601 */
    char cpu_model[96];            /* /proc/cpuinfo "model name" */
    char isa[16];                  /* the CPU Adam kernel's instruction set */
    int cores;                     /* online cores */
    int64_t host_mem_bytes;        /* MemTotal */
    int n_threads;                 /* thread counts measured: 1..n_threads */
    int64_t dram_array_bytes;      /* per array of the triad */
    struct calib_figure dram_gbps[CALIB_MAX_THREADS];        /* triad, 24 bytes per element, index = threads - 1 */
    int64_t adam_numel;            /* elements per Adam run */
    struct calib_figure adam_elems_per_s[CALIB_MAX_THREADS]; /* the project's CPU Adam, index = threads - 1 */
    int64_t copy_bytes;            /* bytes per copy */
    struct calib_figure copy_gbps;   /* one copy thread (memcpy between two host buffers) */
    struct calib_figure copy_all_gbps;   /* `devices` copy threads at once, their sum */
    int device_threads;            /* threads of one emulated device */
    struct calib_figure device_adam_elems_per_s;  /* Adam with device_threads threads */
    int gemm_n;                    /* square sgemm size measured (largest) */
    struct calib_figure gemm_flops;  /* OpenBLAS sgemm, device_threads threads, FLOP/s; median 0 without OpenBLAS */
    struct calib_figure launch_us;   /* an empty parallel region of device_threads threads (the "kernel launch") */
    bool have_mpi;                 /* MPI collectives measured */
    struct calib_figure allgather_busbw_gbps;      /* nccl-tests convention */
    struct calib_figure reduce_scatter_busbw_gbps; /* nccl-tests convention */
    struct calib_figure collective_latency_us;     /* all-gather of the smallest size */
    int coll_ranks;                /* ranks the collectives ran on */
    int64_t coll_max_bytes;        /* largest per-rank message */
    int devices;                   /* as in the options */
    /* Under mpirun, what one rank of the validated run does, every rank at once (have_run) */
    bool have_run;                 /* the figures below were measured */
    int run_ranks;                 /* ranks that ran them at once */
    double run_gemm_flop;          /* FLOPs of the GEMM list (one pass of the model's shapes) */
    int64_t run_gemm_blocks;       /* blocks the pass ran, an all-gather after each (0: one pass, none) */
    int64_t run_gemm_syncs;        /* of which followed by an all-gather (0 on one rank) */
    struct calib_figure run_gemm_flops;        /* that list on every rank at once, FLOP/s of the slowest rank */
    int64_t run_device_adam_numel;           /* elements per device Adam */
    struct calib_figure run_device_adam_elems_per_s;   /* device Adam at that size, slowest rank */
    int64_t run_host_adam_numel;             /* elements per host Adam call (one chunk) */
    struct calib_figure run_host_adam_elems_per_s;     /* host Adam of one chunk, slowest rank */
    int64_t run_copy_bytes;                  /* bytes per copy (one chunk's fp32 gradient) */
    struct calib_figure run_copy_gbps;         /* memcpy of that size, slowest rank */
    int64_t run_triad_bytes;                 /* per rank, the three arrays together */
    struct calib_figure run_mem_gbps;          /* triad over them on every rank at once, the sum */
    int64_t run_allgather_bytes;             /* per-rank all-gather message of the run */
    struct calib_figure run_allgather_us;      /* its time */
    int64_t run_reduce_scatter_bytes;        /* per-rank reduce-scatter message (fp32 output) of the run */
    struct calib_figure run_reduce_scatter_us; /* its time */
    int64_t run_grad_elements;               /* elements of one bucket's synthetic gradient shares */
    struct calib_figure run_grad_elems_per_s;  /* written on the compute stream, slowest rank */
    struct calib_host host_costs;  /* first touch, memcpy and cast against threads (calib/host.c) */
};

/* The GEMMs and sizes of one rank of the run being validated (`ratiolab validate` derives them
 * from the plan; `ratiolab calibrate --gemm ... --adam-numel ...` takes them as options). */
#define CALIB_MAX_GEMMS 64
struct calib_gemm_shape {
    int64_t m, n, k;               /* C[m x n] = A[m x k] B[k x n] */
    int64_t count;                 /* times per pass (per layer block with layers > 0) */
    bool last;                     /* with layers > 0: in the block after the layers (the logits) */
};
struct calib_run {
    int n_gemm;                    /* entries */
    struct calib_gemm_shape gemm[CALIB_MAX_GEMMS];   /* one forward pass's GEMMs, grouped by shape */
    int64_t layers;                /* > 0: the entries not `last` are one layer block's, the pass runs
                                      `layers` of them, then the `last` ones as one more block, each
                                      block followed by the all-gather of allgather_bytes (as the
                                      run's forward: the ranks meet at every block); 0: one pass of
                                      the whole list, no meeting */
    int64_t device_adam_numel;     /* elements of one device Adam (the rank's partition) */
    int64_t host_adam_numel;       /* elements of one host Adam call (a chunk) */
    int64_t allgather_bytes;       /* per-rank message of a typical all-gather (a block's partition) */
    int64_t reduce_scatter_bytes;  /* per-rank fp32 output of a typical reduce-scatter (a flush) */
    int64_t working_set_bytes;     /* per rank: the model states it streams through */
};

/* Runs every measurement (quick: well under a minute on 2 cores). RL_ENOMEM when the arrays cannot
 * be allocated. */
int calib_measure(const struct calib_opts *o, struct calib *c, struct rl_err *e);

/* Collective bandwidth and latency across the ranks of `comm` (a struct ex_comm from exec/, MPI
 * under mpirun): all-gather and reduce-scatter at sizes 4 KiB .. 16 MiB per rank (64 MiB
 * thorough), the median of the repeats per size; bus bandwidth by the nccl-tests convention at the
 * largest size, latency at the smallest. Every rank must call it; c->have_mpi is set on every
 * rank. A one-rank comm measures nothing. */
struct ex_comm;
int calib_measure_collectives(struct ex_comm *comm, bool thorough, struct calib *c, struct rl_err *e);

/* What one rank of the run does, on every rank of `comm` at once (each rank must call it): the
 * GEMM list, device Adam, host Adam of one chunk, a copy of one chunk, a triad over the rank's
 * working set and the collectives at the run's sizes; each figure is the slowest rank's per
 * repeat (the step waits for it), the triad the sum over ranks. Sizes of 0 are skipped. */
int calib_measure_run(struct ex_comm *comm, const struct calib_run *run, bool thorough, struct calib *c,
                      struct rl_err *e);
/* `ratiolab calibrate` across the ranks of comm (every rank calls it; calib/world.c): rank 0
 * measures the node (calib_measure; not with collectives_only) while the others wait, then every
 * rank the collectives (a failure on rank 0 is agreed on first and ends all of them), then, with
 * run, what one rank of it does. Progress (o->progress) on rank 0 only. *c is zeroed first. */
int calib_measure_world(struct ex_comm *comm, const struct calib_opts *o, const struct calib_run *run,
                        bool collectives_only, struct calib *c, struct rl_err *e);

/* The host costs of calib_host against threads 1..n_threads (quick: a few seconds on 2 cores). */
int calib_measure_host(const struct calib_opts *o, int n_threads, struct calib_host *h, struct rl_err *e);

/* Writes the profile's "host" object (hw/hw.h keys host.fault_gbps_per_thread, fault_gbps_per_socket,
 * thp_mode, page_bytes, memcpy_gbps_per_thread, cast_elements_per_s_per_thread) and their sources,
 * measured on `host` at `date`, in place of what w's base had there; nothing when h was not
 * measured. Errors stay in w (hw_writer_close reports them). */
void calib_host_json(const struct calib_host *h, const char *host, const char *date, struct hw_writer *w);
/* A figure as JSON: {"median", "min", "max", "repeats"}. */
json_t *calib_figure_json(const struct calib_figure *f);

/* What `ratiolab calibrate --collectives-only` prints (without the schema version): the
 * collectives when measured under mpirun, and "run" with the run's figures when measured; and
 * the reader of that text into c's collective fields and run figures. One key table serves both. */
json_t *calib_collectives_json(const struct calib *c);
int calib_read_collectives(const char *json_text, struct calib *c, struct rl_err *e);

/* The profile text (JSON, the format sim_hw_parse reads, written through hw/hw.h's writer) for the emulated device: one socket of
 * `cores` cores at the best triad bandwidth, one "switch" whose uplink is all copy threads at
 * once, devices whose memory is host DRAM (gpu.emulated = 1), GEMM rate as tensor and fp32 rate,
 * Adam rates, and collectives from MPI or, without it, estimated from the copy bandwidth (said so
 * in the source). *out is malloc'd. */
int calib_profile(const struct calib *c, const char *name, char **out, struct rl_err *e);
/* The profile's name and file when --name and --out are not given (NULL): calibrated-<host>, and
 * <name>.json; each copied (truncated) into its buffer. */
void calib_profile_names(const char *name, const char *out, const char *host, char *name_buf, size_t name_size,
                         char *out_buf, size_t out_size);
/* A profile name given (--name): printable (no control character) and not empty; RL_EINVAL naming
 * the field "name", the byte and what is allowed. */
int calib_profile_name_check(const char *name, struct rl_err *e);
/* What `ratiolab calibrate --json` prints (without the schema version): the host, every figure
 * measured with its spread (DRAM triad and CPU Adam per thread count, copies, the emulated
 * device's Adam, GEMM and launch, the host costs per thread count with the THP modes and the load
 * around them) and "profile": out, where the profile was written. The caller owns the object. */
json_t *calib_report_json(const struct calib *c, const char *out);

/* ---- GPUs (--backend cuda; built with CUDA, run by scripts/gpu-check.sh) --------------------- */
#define CALIB_MAX_GPUS 16
struct calib_gpu {
    int n_gpus;                                          /* devices measured (the backend's probe) */
    char model[64];                                      /* device 0's name (cuda: cudaDeviceProp.name) */
    int64_t memory_bytes;                                /* device 0's memory (cuda: totalGlobalMem), -1 unknown */
    int64_t copy_bytes;                                  /* bytes per copy */
    struct calib_figure h2d_pinned_gbps[CALIB_MAX_GPUS];   /* per GPU, alone */
    struct calib_figure d2h_pinned_gbps[CALIB_MAX_GPUS];
    struct calib_figure h2d_pageable_gbps[CALIB_MAX_GPUS];
    struct calib_figure d2h_pageable_gbps[CALIB_MAX_GPUS];
    struct calib_figure h2d_all_gbps;                      /* every GPU at once, pinned, the sum */
    /* GPU 0's copies at the sizes the executor's flush moves (one parameter's gradient, 1-64 MiB;
       a 500 MB bucket) and a 4 KiB copy's time, per kind: h2d pinned, d2h pinned, h2d pageable,
       d2h pageable (the order of CALIB_COPY_KINDS) */
#define CALIB_COPY_KINDS 4
#define CALIB_MAX_COPY_SIZES 8
    int n_copy_sizes;                                    /* entries of copy_size_bytes */
    int64_t copy_size_bytes[CALIB_MAX_COPY_SIZES];       /* the sizes, ascending */
    struct calib_figure copy_size_gbps[CALIB_COPY_KINDS][CALIB_MAX_COPY_SIZES];   /* GB/s by kind and size */
    int64_t latency_bytes;                               /* the small copy's size (4 KiB) */
    struct calib_figure copy_latency_us[CALIB_COPY_KINDS]; /* its time by kind, microseconds (CUDA
                                                            events around it: the device side only) */
    struct calib_figure d2d_gbps;                          /* GPU 0 device-to-device copy, read + write bytes */
    int64_t adam_numel;                                  /* elements per GPU Adam run */
    struct calib_figure adam_elems_per_s;                  /* kern_adam_cuda on GPU 0 */
    /* cuBLAS at the model's shapes (calib_measure_gpu_gemm) */
    bool have_gemm;                                      /* measured */
    double gemm_flop;                                    /* FLOPs of the list */
    char gemm_shapes[160];                               /* the list, as --gemm takes it (truncated) */
    struct calib_figure sgemm_flops;                       /* cublasSgemm (fp32, the executor's), FLOP/s */
    struct calib_figure bf16_flops;                        /* cublasGemmEx bf16 in, fp32 accumulate, FLOP/s */
    int64_t context_bytes;                               /* GPU 0 opened alone: its use when open finished
                                                            (the CUDA context; other processes' memory too),
                                                            -1 unknown */
    int64_t cublas_bytes;                                /* what cuBLAS took for itself over these GEMMs
                                                            (workspace, modules), -1 unknown */
    int n_gemm_shapes;                                   /* shapes timed one by one below */
    struct calib_gemm_shape gemm_shape[16];              /* the first 16 of the list */
    struct calib_figure gemm_shape_flops[2][16];         /* per shape (its calls of one pass), fp32 and
                                                            bf16, FLOP/s; inputs random, not zero */
    /* NCCL under mpirun (calib_measure_nccl) */
    bool have_nccl;                                      /* measured */
    int nccl_ranks;                                      /* ranks (one GPU each) */
    int n_nccl_sizes;                                    /* entries below */
    int64_t nccl_bytes[16];                              /* per-rank message */
    struct calib_figure nccl_allgather_busbw_gbps[16];     /* bus bandwidth (nccl-tests convention), slowest rank */
    struct calib_figure nccl_reduce_scatter_busbw_gbps[16];
    struct calib_figure nccl_latency_us;                   /* all-gather of the smallest size */
};
/* Measures the devices of backend be (calibrate --backend cuda: the cuda backend; NULL when
 * this build has none: RL_EENV) through the backend table: copies per device and all at once,
 * D2D and the device Adam on device 0, each timed by the backend. RL_EENV without a device. */
int calib_measure_gpu(const struct ex_backend *be, const struct calib_opts *o, struct calib_gpu *g,
                      struct rl_err *e);
/* be's GEMMs on device 0 over the run's GEMM list (or 4096^3 when run has none): fp32 (gemm) and
 * bf16 (gemm_lowp, where the backend has it; cuBLAS on cuda, loaded with dlopen). */
int calib_measure_gpu_gemm(const struct ex_backend *be, const struct calib_run *run, bool thorough,
                           struct calib_gpu *g, struct rl_err *e);
/* be's all-gather and reduce-scatter (fp32; NCCL on cuda) across the ranks of `comm` (mpirun;
 * one device per rank), per-rank sizes 4 KiB .. 64 MiB (256 MiB thorough) by 4x: bus bandwidth
 * of the slowest rank per repeat, median; every rank must call it. */
int calib_measure_nccl(const struct ex_backend *be, struct ex_comm *comm, bool thorough, struct calib_gpu *g,
                       struct rl_err *e);
/* `ratiolab calibrate --backend cuda` across the ranks of comm (calib/world.c): rank 0 measures the
 * devices (calib_measure_gpu), be's GEMMs over run's list (calib_measure_gpu_gemm) and the host
 * (calib_measure, into *c), then under mpirun every rank NCCL (calib_measure_nccl), unless rank 0
 * failed (agreed on first). */
int calib_measure_gpu_world(const struct ex_backend *be, struct ex_comm *comm, const struct calib_opts *o,
                            const struct calib_run *run, struct calib *c, struct calib_gpu *g, struct rl_err *e);
/* One `ratiolab calibrate` in this process, across the ranks mpirun started. */
struct calib_world_request {
    const struct calib_opts *o;    /* the options; progress is reported by rank 0 only */
    const struct calib_run *run;   /* what one rank of a run does (--gemm, ...); NULL: none */
    bool collectives_only;         /* the collectives (and run) only, not the node (cpu) */
    bool cuda;                     /* the GPUs (calib_measure_gpu_world through the cuda backend, RL_EENV
                                      when this build has none) instead of the emulated device */
};
/* Opens the ranks (ex_comm_init; one rank without mpirun), measures (calib_measure_gpu_world with
 * cuda, else calib_measure_world, whose o->devices left at the default 2 becomes the ranks under
 * mpirun, at most HW_MAX_GPUS) and closes them. *rank0: this process is rank 0, whose *c and *g
 * hold the figures; the other ranks return 0 with it false. A rank's failure is its return. */
int calib_calibrate(const struct calib_world_request *q, struct calib *c, struct calib_gpu *g, bool *rank0,
                    struct rl_err *e);
/* One copy of `bytes` on device d's copy stream, timed by the backend (CUDA events on cuda, the
 * copy thread's clock on cpu), as GB/s; for anyone measuring copies at other sizes. */
int calib_copy_gbps(const struct ex_backend *be, struct ex_dev *d, void *dst, const void *src, int64_t bytes,
                    enum ex_copy_dir dir, double *gbps, struct rl_err *e);
/* The receive buffer of rank `rank`'s in-place NCCL reduce-scatter (and the send buffer of its
 * in-place all-gather) in buf, with bytes_per_rank per rank: its own block. */
char *calib_nccl_rs_recv(char *buf, int rank, int64_t bytes_per_rank);
/* A profile for real GPUs: the measured figures (copies per GPU, the PCIe uplink as all GPUs at
 * once, HBM as the D2D copy, GPU Adam as its efficiency, host DRAM and CPU Adam from c) written
 * over `base_text`, a catalog profile of the same machine type that supplies what is not
 * measured (tensor rate, collectives, topology), whose sources are kept for those. */
int calib_gpu_profile(const struct calib *c, const struct calib_gpu *g, const char *base_text,
                          const char *name, char **out, struct rl_err *e);
/* calib_gpu_profile over the file of `base` (--base: a path when it holds '/' or ends in ".json",
 * else <catalog_dir>/hardware/<base>.json, which sim_hw_load checked to load); a file that cannot
 * be read is an error beginning "base: ". */
int calib_gpu_profile_over(const struct calib *c, const struct calib_gpu *g, const char *catalog_dir,
                           const char *base, const char *name, char **out, struct rl_err *e);

struct plan;
/* What one rank of the run of plan p does, as the simulator charges it and the executor's
 * --compute gemm runs it (exec/compute.c): per layer a GEMM per weight on micro_batch x seq
 * tokens (2-D weights as they are, other tensors rank-1), attention scores and values per
 * sequence and local head, the logits once after the layers, nothing for the embedding lookup;
 * grouped by shape (at most CALIB_MAX_GEMMS). Then the rank's partition (device Adam), the
 * host chunk, a layer's all-gather, a flush's reduce-scatter and the rank's model states. */
void calib_run_of_plan(const struct plan *p, int64_t micro_batch, int64_t seq, struct calib_run *r);

#endif
