/* exec/exec.h — the executor: runs the ratio-split ZeRO-3 step for real, one MPI rank per
 * process, on a plan built by plan/ (usually on a model shrunk with ex_scale_model).
 *
 * Use (cli/cmd_run.c):
 *   ex_comm_init(&comm, &e);                       MPI when started by mpirun, else one rank
 *   ex_scale_model(&model, F, &scaled, &e);        same layer structure, F x fewer elements
 *   plan_exec_plan(&setup, &scaled, F, ratio, ...) the settings scaled by F, the exec ledger
 *   struct ex_opts o; ex_opts_default(&o);         schedule, steps, seed, ...
 *   ex_run(&plan, &o, &comm, &result, &e);         allocate, check the ledger, run, digest
 *   ex_reference(&model_scaled, ...)               the expected digest, one process, scalar Adam
 *
 * Numbers are exact by construction (exec/README.md, "Why the bits do not depend on anything"):
 * synthetic gradients are small integers times 2^-10 whose sum over ranks is exact in fp32, and
 * every update is kernels/ Adam, so the final fp32 master, Adam moments and 16-bit parameters
 * depend on the seed, the steps and the model only. The library never prints. */
#ifndef RL_EXEC_EXEC_H
#define RL_EXEC_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "kernels/adam.h"
#include "plan/plan.h"
#include "plan/step.h"   /* enum step_schedule, enum step_phase, step_breakdown: one step vocabulary */

/* Largest data-parallel world size for which the reduced gradient is exact: every rank adds a
 * value of magnitude <= 254 x 2^-10 and any partial sum of W of them stays below 2^24 x 2^-10. */
#define EX_MAX_WORLD 65536

/* ---- ranks ------------------------------------------------------------------------------------ */
struct ex_comm {
    int rank;             /* this process in the data-parallel group */
    int size;             /* data-parallel world size */
    bool mpi;             /* MPI is initialised (started by mpirun); false: one rank, no MPI */
    void *impl;           /* MPI_Comm when mpi */
};
/* MPI_Init when the process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE or PMI_SIZE
 * in the environment), else a one-rank communicator. RL_EENV when MPI is needed but missing. */
int ex_comm_init(struct ex_comm *c, struct rl_err *e);
void ex_comm_finalize(struct ex_comm *c);
/* Ends every rank with exit code `code` (MPI_Abort); returns only without MPI. */
void ex_comm_abort(struct ex_comm *c, int code);
int ex_comm_barrier(struct ex_comm *c, struct rl_err *e);
/* In place: the maximum over ranks of v[0..n). */
int ex_comm_max_i64(struct ex_comm *c, int64_t *v, int n, struct rl_err *e);
/* In place on buf (rank-major: rank q's block is buf[q*count .. q*count+count)): after the call
 * buf[0..count) holds the element-wise fp32 sum of every rank's block `rank`. */
int ex_comm_reduce_scatter_f32(struct ex_comm *c, float *buf, int64_t count, struct rl_err *e);
/* The same in fp32 (KERN_F32, exact for the synthetic shares) or a 16-bit type (KERN_BF16,
 * KERN_F16: elements of 2 bytes, each addition rounded to that type; not exact in general). */
int ex_comm_reduce_scatter(struct ex_comm *c, void *buf, int64_t count, enum kern_dtype t, struct rl_err *e);
/* Gathers `bytes` from each rank into out (rank order) on every rank; out holds size x bytes.
 * in == out: in place, this rank's bytes are already at out + rank x bytes. */
int ex_comm_allgather(struct ex_comm *c, const void *in, void *out, int64_t bytes, struct rl_err *e);
/* The same, in place and non-blocking (MPI_Iallgather): *req names it for ex_comm_wait (NULL
 * when there is nothing to wait for: one rank, no MPI). Progress happens inside MPI calls (this
 * start, other collectives, the wait); call every ex_comm_* from one thread. */
struct ex_comm_req;
int ex_comm_iallgather(struct ex_comm *c, void *buf, int64_t bytes, struct ex_comm_req **req, struct rl_err *e);
/* *done: the started all-gather req has completed (MPI_Test; it also progresses it); req stays
 * valid for ex_comm_wait, which then returns at once. NULL: done. */
int ex_comm_test(struct ex_comm *c, struct ex_comm_req *req, bool *done, struct rl_err *e);
/* Waits for a started all-gather and frees req (NULL: returns 0). */
int ex_comm_wait(struct ex_comm *c, struct ex_comm_req *req, struct rl_err *e);
/* Frees a request not waited for (a failed run; its buffer must outlive the process). */
void ex_comm_req_free(struct ex_comm_req *req);
/* Broadcast of bytes from rank 0 (the NCCL unique id). */
int ex_comm_bcast(struct ex_comm *c, void *buf, int64_t bytes, struct rl_err *e);
/* Variable-size gather to rank 0: out (malloc'd, only on rank 0) receives every rank's bytes in
 * rank order, *out_bytes their total. */
int ex_comm_gatherv(struct ex_comm *c, const void *in, int64_t bytes, void **out, int64_t *out_bytes,
                    struct rl_err *e);

/* ---- the model, shrunk ------------------------------------------------------------------------- */
/* A copy of *in whose tensors each hold about numel / F elements (the first dimension divided by
 * F, rounded up, at least 1), with the same names, order, layers, flags and param groups, so the
 * layer structure and the param groups are kept. F >= 1. */
int ex_scale_model(const struct plan_model *in, double F, struct plan_model *out, struct rl_err *e);

/* ---- options and results ---------------------------------------------------------------------- */
enum ex_backend_kind { EX_BACKEND_AUTO, EX_BACKEND_CPU, EX_BACKEND_CUDA, EX_BACKEND_COUNT };
const char *ex_backend_name(enum ex_backend_kind k);
int ex_backend_parse(const char *s, enum ex_backend_kind *k, struct rl_err *e);
/* A backend a flag must name itself (cpu or cuda; not auto), for commands that run on the one
 * named: RL_EINVAL "FIELD: 'S' is not allowed; allowed: cpu, cuda" otherwise. The names are
 * ex_backend_name's, the one table of them, so no caller retypes them. */
int ex_backend_parse_named(const char *field, const char *s, enum ex_backend_kind *k, struct rl_err *e);

enum ex_compute { EX_COMPUTE_NONE, EX_COMPUTE_GEMM };

/* Testing (--fail-rank R[:PHASE]): where the failing rank stops, returning an error at once without
 * cleaning up, as a killed process would (the command line then ends every rank). The save
 * phases are the points of the checkpoint protocol (exec/README.md, "Checkpoints"). */
enum ex_fail_phase {
    EX_FAIL_STEP,            /* its first step */
    EX_FAIL_SAVE_PREPARE,    /* the new generation folder exists, nothing written */
    EX_FAIL_SAVE_WRITE,      /* half of its rank file written to the temporary name */
    EX_FAIL_SAVE_WRITTEN,    /* its rank file complete, synced and renamed, before the agreement */
    EX_FAIL_SAVE_SWITCH,     /* every rank agreed; rank 0 has not switched the manifest yet */
    EX_FAIL_SAVE_SWITCHED,   /* the manifest switched, old generations not yet pruned */
    EX_FAIL_PHASE_COUNT
};
const char *ex_fail_phase_name(enum ex_fail_phase p);
int ex_fail_phase_parse(const char *s, enum ex_fail_phase *p, struct rl_err *e);
/* A failure to inject, "R" or "R:PHASE": rank R (0 .. EX_MAX_WORLD - 1) fails at PHASE
 * (ex_fail_phase_parse; default EX_FAIL_STEP, its first step). Errors name the field "fail_rank",
 * or "fail_phase" for the phase. */
int ex_fail_spec_parse(const char *v, int *rank, enum ex_fail_phase *phase, struct rl_err *e);

struct ex_opts {
    enum step_schedule schedule;     /* deepspeed-0.12 or overlap */
    enum ex_backend_kind backend;   /* auto: cuda when a GPU is visible */
    enum ex_compute compute;        /* none or gemm */
    int steps;                      /* timed steps (>= 1) */
    int warmup;                     /* untimed steps before them (>= 0); they update the state too */
    uint64_t seed;                  /* synthetic data seed */
    int64_t inject_nan_step;        /* iteration (1-based, counted over the whole run) whose
                                       gradient holds a NaN; 0: none */
    int64_t device_mem_bytes;       /* cpu backend: emulated device capacity; 0: unlimited */
    int threads;                    /* host Adam threads (>= 1) */
    double weight_decay;            /* AdamW decay of param group 0 (others: 0) */
    double lr;                      /* learning rate */
    int64_t micro_batch, seq_len;   /* tokens per micro-step for --compute gemm */
    bool checkpoint_activations;    /* backward runs the forward GEMMs again */
    const char *save_dir;           /* --save DIR, NULL: none */
    const char *load_dir;           /* --load DIR, NULL: none */
    const char *trace_path;         /* --trace FILE[.gz], NULL: none */
    int fail_rank;                  /* testing: this rank fails at fail_phase (-1: none) */
    enum ex_fail_phase fail_phase;  /* testing: where fail_rank fails (default: its first step) */
    enum kern_dtype comm_dtype;     /* reduce-scatter type: KERN_F32 (default, exact) or the model's
                                       16-bit type (--comm-dtype; rounds partial sums: not exact) */
    enum plan_dtype ref_dtype;      /* ex_reference only: the model dtype of the 16-bit copy */
};
void ex_opts_default(struct ex_opts *o);

/* One buffer as allocated, next to what the ledger says. */
struct ex_buf_report {
    char name[48];                  /* ledger buffer name */
    enum plan_device device;        /* where it lives */
    int64_t bytes;                  /* allocated by the executor */
    int64_t ledger_bytes;           /* the plan's ledger (-1: not in the ledger) */
};
#define EX_MAX_BUFS 24

/* A memory reading; MON-style: -1 means unavailable (never reported as 0). */
struct ex_mem {
    int64_t rss_bytes;              /* VmRSS at the end of the run */
    int64_t peak_rss_bytes;         /* VmHWM */
    int64_t locked_bytes;           /* VmLck */
    int64_t pinned_bytes;           /* VmPin */
    int64_t device_used_bytes;      /* device pool in use (cpu backend) or cudaMemGetInfo's use since
                                       open less cuBLAS's own and the allocator's rounding (cuda) */
    int64_t device_capacity_bytes;  /* --device-mem or the GPU's; -1 unlimited/unknown */
    int64_t gpu_process_bytes;      /* cuda: this process's GPU memory as NVML reports it; -1
                                       unavailable (cpu backend, no NVML, or NVML cannot tell) */
};

struct ex_phase_stat {
    int64_t busy_ns;                /* median over timed steps: time the phase was running */
    int64_t exposed_ns;             /* of which no higher-priority phase was running */
    int64_t bytes;                  /* bytes moved (copies, collectives) or touched (Adam) per step */
};

struct ex_rank_result {
    int rank;                       /* data-parallel rank */
    int64_t step_ns;                /* median step time over the timed steps */
    struct ex_phase_stat phase[STEP_PH_COUNT];
    int64_t ledger_device_bytes;    /* sum of the device buffers allocated */
    int64_t ledger_host_bytes;      /* sum of the host buffers allocated */
    int64_t host_placed_numel;      /* elements whose Adam ran on the host */
    int64_t per_rank_numel;         /* P */
    int64_t bytes_moved;            /* copies + collectives per step (bytes) */
    struct ex_mem mem;
    int n_bufs;
    struct ex_buf_report bufs[EX_MAX_BUFS];
};

struct ex_result {
    enum ex_backend_kind backend;   /* as resolved */
    int world;                      /* ranks */
    int64_t iterations;             /* iterations run in total (steps counted from a checkpoint) */
    int64_t adam_step;              /* Adam steps applied (skipped steps not counted) */
    int64_t skipped;                /* steps skipped for a non-finite gradient in this run */
    int64_t total_numel;            /* global elements (model, unpadded) */
    uint32_t digest;                /* crc32 of master | m | v | 16-bit params in global order */
    bool ledger_ok;                 /* every buffer equals the ledger to the byte */
    int64_t prefetch_depth;         /* ZeRO-3 prefetch: blocks gathered ahead of the compute */
    int gather_buffers;             /* gather buffers of the largest block allocated: depth + 1 */
    int critical_rank;              /* the rank with the longest step */
    bool ds_step;                   /* the deepspeed schedule ran: DeepSpeed's step of ds_version */
    struct rl_version ds_version;   /* that release (the plan's zero.ds_version), whose row of
                                       plan/ds_rules.c chose the step's gradient copy, its stream
                                       syncs and the flat buffer's pinning; unset under overlap */
    struct ex_rank_result *ranks;   /* world entries, filled on rank 0 only (NULL elsewhere) */
    struct ex_rank_result self;     /* this rank */
};
void ex_result_free(struct ex_result *r);

/* Runs the whole thing on this rank: allocation (checked against the plan's `exec` ledger:
 * RL_ECHECK on a mismatch), optional checkpoint load, warmup + steps, digest, optional save.
 * p must be built with ledger PLAN_LEDGER_EXEC and layout.dp == c->size. RL_ENOMEM (exit 3)
 * when the emulated device is too small: the message gives the bytes needed and free. */
int ex_run(const struct plan *p, const struct ex_opts *o, struct ex_comm *c, struct ex_result *r,
           struct rl_err *e);

/* The runs of one launch (exec/matrix.c): every ratio x policy x schedule of a setup, in that
 * order, each the executor's plan (plan_exec_plan: the setup's element counts divided by scale,
 * the model already scaled) run with the options o on every rank. */
struct plan_setup;
struct ex_matrix {
    const struct plan_setup *setup;      /* the resolved setup */
    const struct plan_model *scaled;     /* its model shrunk by scale */
    double scale;                        /* >= 1 */
    const double *ratios;                /* each run's ratio (< 0: the setup's own) */
    size_t n_ratios;                     /* entries */
    const enum plan_policy *policies;    /* each run's policy (PLAN_POLICY_AUTO: the setup's) */
    int n_policies;                      /* entries */
    const enum step_schedule *schedules; /* each run's schedule (o->schedule is replaced) */
    int n_schedules;                     /* entries */
};
/* What the executor refuses of a setup before it runs anything: pipeline parallelism (field "pp":
 * it runs the data-parallel ZeRO-3 dimension only) and a failure injected on a rank the launch
 * does not have ("fail_rank"). */
int ex_launch_check(const struct plan_setup *c, const struct ex_opts *o, const struct ex_comm *comm,
                    struct rl_err *e);
/* One run's plan, options and result (rank 0's figures of every rank), before the next starts. */
typedef void ex_matrix_fn(void *ctx, const struct plan *p, const struct ex_opts *o, const struct ex_result *r);
/* Runs the matrix; stops at the first run that fails (its error in *e: the caller ends the world,
 * as a failed ex_run leaves the other ranks waiting). */
int ex_run_matrix(const struct ex_matrix *m, const struct ex_opts *o, struct ex_comm *comm, ex_matrix_fn *each,
                  void *ctx, struct rl_err *e);

/* The expected digest of a run: one process, the scalar reference Adam over the whole model in
 * global element order, `iterations` steps (minus the NaN step). Memory: 14 bytes per element. */
int ex_reference(const struct plan_model *m, const struct ex_opts *o, int64_t iterations,
                 uint32_t *digest, int64_t *adam_step, struct rl_err *e);

/* ---- building blocks (exposed for tests and the reference) -------------------------------- */
/* Initial fp32 master value of global element i. */
float ex_synth_param(uint64_t seed, int64_t i);
/* The reduced gradient of global element i at iteration `it` (the sum of every rank's share). */
float ex_synth_grad(uint64_t seed, int64_t it, int64_t i);
/* Rank q's share of it for world size W: sums over q = 0..W-1 to ex_synth_grad exactly. */
float ex_synth_grad_share(uint64_t seed, int64_t it, int64_t i, int q, int W);
/* The same with the iteration's key hoisted out of a loop: base = ex_synth_base(seed, it). */
uint64_t ex_synth_base(uint64_t seed, int64_t it);
float ex_synth_share(uint64_t base, int64_t i, int q, int W);
/* dst[j] = ex_synth_share(base, gstart + j, q, W) for j in [0, n): the same bits, vectorised (the
 * synthetic backward writes a whole bucket with it). */
void ex_synth_shares(float *dst, int64_t n, uint64_t base, int64_t gstart, int q, int W);
/* ---- --compute gemm (exec/compute.c) ---------------------------------------------------------- */
/* The executor's blocks: maximal runs of tensors (model order) with one layer index. first must
 * hold n_tensors + 1 entries; first[b] is block b's first tensor, first[nblocks] = n_tensors.
 * Returns nblocks. */
int ex_model_blocks(const struct plan_model *m, int *first);
/* One GEMM shape: C[m x n] = A[m x k] B[k x n], run `count` times. */
struct ex_gemm {
    int64_t m, n, k;                /* rows of A and C, columns of B and C, the inner dimension */
    int64_t count;                  /* how many times */
};
/* The GEMMs of block b's forward pass on micro_batch sequences of seq tokens, whose FLOPs equal
 * the simulator's charge for the block (sim/step.c): a layer's weights (2 x tokens x elements)
 * and attention (4 x micro_batch x seq^2 x heads/TP x head_dim), the logits after the layers
 * (2 x tokens x hidden x vocab/TP), nothing before them. Fills out[0..max) and returns how many
 * there are (call again with more room when that exceeds max). */
int ex_block_gemms(const struct plan_model *m, const int *first, int nblocks, int b, int64_t micro_batch,
                   int64_t seq, struct ex_gemm *out, int max);
/* How many times block b's backward runs its forward GEMMs: 2, or 3 for a layer with activation
 * checkpointing (recomputation), as the simulator counts. */
int ex_block_backward_passes(const struct plan_model *m, const int *first, int b, bool checkpoint_activations);
/* Sum of 2 m n k count. */
int64_t ex_gemm_flops(const struct ex_gemm *g, int n);

/* The Adam hyper-parameters of param group g. */
struct kern_adam_hparams ex_hparams(const struct ex_opts *o, int group);

#endif
