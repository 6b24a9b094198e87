/* sim/step.h — one training step of ZeRO-3 with partial optimizer offload, simulated on one
 * node's GPUs (every GPU of the node; nodes are symmetric, so other nodes appear only through the
 * network resource), for a plan, a hardware profile and training settings.
 *
 * Both schedules are task graphs on the engine (sim/sim.h), so one breakdown and one trace writer
 * serve both:
 *   deepspeed-0.12  the sequential loop of docs/deepspeed-step.md section 3: gradient round trips during
 *                   backward, then per sub-group (CPU ones first) CPU Adam followed by a blocking
 *                   pageable H2D of the fp32 master; GPU Adam only after all CPU sub-groups;
 *   overlap         ratiolab's executor schedule: GPU Adam on the GPU share while the CPU share
 *                   streams through pinned buffers in chunks (D2H, CPU Adam, H2D), double-buffered.
 * What is modelled and how is written down in sim/README.md. */
#ifndef RL_SIM_STEP_H
#define RL_SIM_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/plan.h"
#include "plan/step.h"
#include "sim/hw.h"

/* The step vocabulary (schedules, phases, breakdown, chunking) is plan/step.h, shared with the
 * executor: the simulator uses its names (STEP_SCHED_*, STEP_PH_*). */
static inline const char *sim_schedule_name(enum step_schedule s) { return step_schedule_name(s); }
static inline const char *sim_phase_name(int phase) { return step_phase_name(phase); }
static inline int sim_schedule_parse(const char *s, enum step_schedule *out, struct rl_err *e)
{
    return step_schedule_parse(s, out, e);
}

/* The CPU optimizer that updates the CPU share. */
enum sim_cpu_optimizer {
    SIM_CPU_OPT_DEEPSPEED,   /* DeepSpeedCPUAdam (vectorized, OpenMP): the profile's cpu_adam rate */
    SIM_CPU_OPT_TORCH,       /* torch.optim.AdamW on the CPU (Megatron-Core optimizer offload, plain
                                PyTorch): the profile's torch rate */
};
#define SIM_CPU_OPT_COUNT (SIM_CPU_OPT_TORCH + 1)

/* How the launcher places a node's ranks on its host cores (sim/cpu_bind.c). */
enum sim_cpu_binding {
    SIM_BIND_NONE,       /* DeepSpeed's launcher's default: no numactl, OMP_NUM_THREADS unset, so every
                            rank's OpenMP team is the node's physical cores and the teams time-share them */
    SIM_BIND_PER_RANK,   /* --bind_cores_to_rank: rank i gets cores [i c, (i + 1) c), c = cores // ranks,
                            and OMP_NUM_THREADS = c */
};
const char *sim_cpu_binding_name(enum sim_cpu_binding b);
int sim_cpu_binding_parse(const char *s, enum sim_cpu_binding *out, struct rl_err *e);
/* DeepSpeed's TILE: DeepSpeedCPUAdam runs one OpenMP parallel-for per tile of this many elements
 * (csrc/includes/simd.h, v0.12.4-v0.19.5). */
#define SIM_CPU_ADAM_TILE (INT64_C(128) * 1024 * 1024)
/* Linux's scheduler slice on a machine of 8 or more CPUs: the 0.75 ms base slice scaled by
 * 1 + ilog2(min(CPUs, 8)) = 4 (kernel/sched/fair.c, sysctl_sched_base_slice / min_granularity with
 * the default logarithmic tunable scaling), 3 ms. */
#define SIM_SCHED_SLICE_NS (INT64_C(3000000))
struct hw_profile;
struct sim_train;
/* The node's physical cores the launcher divides: t->cpu_cores, or every socket's cores. */
int sim_cpu_node_cores(const struct hw_profile *hw, const struct sim_train *t);
/* Threads of one rank's OpenMP team (CPU Adam, PyTorch's intra-op pool): the node's cores
 * unbound, cores // ranks bound (at least 1). */
int sim_cpu_team_threads(const struct hw_profile *hw, const struct sim_train *t, int ranks);
/* Cores one rank's CPU Adam may use: per-rank, cores // ranks; none, the fair share
 * socket_cores / ranks_on_socket of time-sliced teams. */
double sim_cpu_rank_cores(const struct hw_profile *hw, const struct sim_train *t, int ranks, int socket_cores,
                          int ranks_on_socket);
/* What oversubscription adds to one CPU Adam call of `elems` elements, ns: unbound, with o = ranks x
 * team threads / node cores > 1 runnable threads per core, each of the call's ceil(elems / TILE)
 * fork-join regions ends only when its last thread has had its share; that thread waits behind the
 * o - 1 other threads of its core for a slice each while its team's finished threads spin at the
 * barrier: (o - 1) x SIM_SCHED_SLICE_NS per region. 0 when bound or not oversubscribed. */
int64_t sim_cpu_oversub_ns(const struct hw_profile *hw, const struct sim_train *t, int ranks, int64_t elems);
/* PyTorch's smallest parallel chunk (at::internal::GRAIN_SIZE, ATen/Parallel.h): a CPU tensor op
 * over fewer elements runs on the calling thread alone, a longer one in min(threads, ceil(n /
 * grain)) chunks of one at::parallel_for region. */
#define SIM_TORCH_GRAIN_SIZE INT64_C(32768)
/* The same wait for one CPU tensor op of `elems` elements on PyTorch's intra-op pool (`threads` per
 * rank): none below SIM_TORCH_GRAIN_SIZE (no region); otherwise, when the ranks' pools, each
 * running its min(threads, ceil(elems / grain)) chunks, oversubscribe the node's cores, (o - 1) x
 * SIM_SCHED_SLICE_NS, o = ranks x those threads / cores. 0 when bound or not oversubscribed. */
int64_t sim_cpu_intraop_oversub_ns(const struct hw_profile *hw, const struct sim_train *t, int ranks, int threads,
                                   int64_t elems);
const char *sim_cpu_optimizer_name(enum sim_cpu_optimizer o);
int sim_cpu_optimizer_parse(const char *s, enum sim_cpu_optimizer *out, struct rl_err *e);

/* GPU ids of the node: "0,2,5" or ranges "0-3"; RL_EINVAL naming --gpu-ids otherwise. */
int sim_gpu_ids_parse(const char *s, int *ids, int *n, struct rl_err *e);
/* The node's GPU of each of `ranks` ranks (t's gpu_ids when given, else the first ones, as a
 * launcher) into gpu[ranks], and the sockets they sit on as a mask (bit k: socket k); RL_EINVAL
 * naming gpu_ids when the list has another length or names a GPU the profile lacks. What a step
 * is simulated on, so a caller can say which GPUs it modelled without simulating one. */
int sim_place_gpus(const struct hw_profile *hw, const struct sim_train *t, int ranks, int *gpu,
                   unsigned *socket_mask, struct rl_err *e);

/* Micro-steps simulated in full; a longer accumulation repeats the steady-state micro-step. */
#define SIM_MAX_SIMULATED_MICRO_STEPS 8

struct sim_train {
    int64_t micro_batch;             /* sequences per GPU per micro-step; 0: the plan's */
    int64_t seq_len;                 /* tokens per sequence; 0: the model's */
    int64_t grad_accum;              /* micro-steps per step; 0: the plan's */
    bool checkpoint_activations;     /* full activation checkpointing (recompute in backward) */
    enum plan_attention attention;   /* what attention keeps for the backward; PLAN_ATTN_DEFAULT: the
                                        model's framework default (plan_attention_origin) */
    enum step_schedule schedule;     /* how the optimizer step is ordered */
    bool numa_interleave;            /* host buffers and CPU Adam threads spread over all sockets
                                        (no core binding) instead of the GPU's own socket */
    int64_t gpu_reserve_bytes;       /* < 0: the profile's context + NCCL + allocator model */
    enum sim_cpu_optimizer cpu_optimizer;   /* what updates the CPU share */
    int n_gpu_ids;                   /* GPUs of the node given (0: the first ranks, as a launcher) */
    int gpu_ids[HW_MAX_GPUS];    /* the node's GPU index of each rank */
    int max_simulated_micro_steps;   /* 0: SIM_MAX_SIMULATED_MICRO_STEPS (larger: tests compare the
                                        repetition with a full simulation) */
    int intraop_threads;             /* PyTorch intra-op threads of one rank (its CPU casts and copies);
                                        0: PyTorch's default, the node's physical cores, as DeepSpeed's
                                        launcher leaves OMP_NUM_THREADS unset without
                                        --bind_cores_to_rank (sim/README.md) */
    enum sim_cpu_binding cpu_binding;/* how the launcher places the ranks' threads on the host cores:
                                        none (DeepSpeed's launcher without --bind_cores_to_rank, its
                                        default) or per-rank (with it) */
    int cpu_cores;                   /* physical cores the launcher divides among a node's ranks
                                        (--bind_core_list's count); 0: the node's physical cores */
    bool zero3_prefetch_off;         /* DeepSpeed prefetches nothing: its trace is being recorded or was
                                        invalidated ("Invalidate trace cache" in its log), so every
                                        block's gather waits for the previous block's compute */
    int comm_dtype_bytes;            /* bytes per gradient element the reduce-scatter moves
                                        (DeepSpeed's communication_data_type; ratiolab's executor
                                        reduces fp32: 4); 0: the model dtype's */
};
void sim_train_defaults(struct sim_train *t);

struct sim_step_result {
    int64_t step_ns;                 /* all ranks of the node done */
    int critical_rank;               /* the GPU that finished last (lowest index on ties) */
    struct step_phase_time phase[STEP_PH_COUNT];   /* per phase, on the critical rank */
    int64_t idle_ns;                 /* nothing running on the critical rank */
    /* The critical rank's step cut as DeepSpeed's timers cut it (fwd, bwd, step), summed over the
       micro-steps: forward from the micro-step's start (the previous backward's end) to its last
       forward kernel's end; backward from there to the end of its last backward kernel, flush or
       blocking copy; the optimizer from the last backward's end to the rank's end. */
    int64_t window_forward_ns;       /* forward */
    int64_t window_backward_ns;      /* backward (with the gradient flushes) */
    int64_t window_step_ns;          /* the optimizer step (pipeline bubble included) */
    /* GPU memory per rank */
    int64_t gpu_ledger_bytes;        /* model states from the plan's ledger (peak stage) */
    int64_t gpu_activation_bytes;    /* activations (+ logits), from arch, micro-batch, seq, TP */
    int64_t gpu_live_param_bytes;    /* ZeRO-3 gathered + prefetched parameters */
    int64_t gpu_allocated_bytes;     /* the three above: what the allocator reports as allocated */
    int64_t gpu_reserve_bytes;       /* CUDA context, NCCL, caching allocator: the three below
                                        (or --reserve as given, the three then 0) */
    int64_t gpu_context_bytes;       /* CUDA context (the profile's) */
    int64_t gpu_nccl_bytes;          /* NCCL buffers: communicators x the profile's per-communicator */
    int64_t gpu_allocator_bytes;     /* caching allocator: 2 MiB rounding of the ledger's GPU buffers
                                        + fragmentation of activations and gathered parameters */
    int nccl_communicators;          /* NCCL communicators a rank holds (world, DP, TP, PP groups) */
    int64_t gpu_total_bytes;         /* NVML-visible: allocated + reserve */
    int64_t gpu_capacity_bytes;      /* from the profile */
    bool fits_gpu;                   /* gpu_total <= capacity */
    /* host memory */
    int64_t host_rank_bytes;         /* the ledger's host bytes per rank */
    int64_t host_node_bytes;         /* x ranks per node */
    int64_t host_baseline_node_bytes;/* the processes: ranks per node x the profile's per-rank baseline */
    int64_t host_os_reserve_bytes;   /* the profile's OS reserve */
    int64_t host_total_node_bytes;   /* node + baseline + OS reserve: what must fit */
    int64_t host_capacity_bytes;     /* from the profile */
    bool fits_host;                  /* host_total_node_bytes <= capacity */
    /* throughput and cost of the simulation */
    double tokens_per_s;             /* per GPU: micro_batch x seq x grad_accum / step / (TP x PP),
                                        the replica's tokens shared by its TP x PP ranks */
    uint64_t events;                 /* engine events run */
    int tasks;                       /* tasks in the graph */
    int64_t micro_batch, seq_len, grad_accum;   /* as resolved */
    enum plan_attention attention;   /* as resolved: flash or materialized */
    int simulated_micro_steps;       /* micro-steps simulated in full (<= SIM_MAX_SIMULATED_MICRO_STEPS);
                                        the rest repeat the steady-state one */
    struct rl_version ds_version;    /* DeepSpeed whose step the deepspeed schedule follows */
    /* which part of the node is modelled */
    int ranks;                       /* GPUs simulated (one node's ranks) */
    int gpu_ids[HW_MAX_GPUS];    /* the node's GPU index of each rank */
    int sockets_used;                /* distinct host sockets of those GPUs */
    unsigned socket_mask;            /* bit k: socket k holds a simulated GPU */
};

/* Simulates one step. trace_path (NULL: none) writes a Chrome trace (.gz: gzip). */
int sim_step_run(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t,
                 const char *trace_path, struct sim_step_result *r, struct rl_err *e);

/* Memory prediction alone (no simulation), as filled into r by sim_step_run. */
int sim_step_memory(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t,
                    struct sim_step_result *r, struct rl_err *e);

#endif
