/* plan/step.h — the vocabulary of one training step, shared by the simulator (sim/) and the
 * executor (exec/), so a predicted step and a measured step are described by the same types and
 * reduced by the same breakdown:
 *   - the schedules (how the optimizer step is ordered against the rest of the step);
 *   - the phases of a step, in the priority order that attributes exposed time;
 *   - the busy / exposed / overlapped breakdown of a set of spans;
 *   - the chunking of the CPU share in the overlap schedule;
 *   - the ZeRO-3 prefetch depth and the gather buffers it keeps live.
 * Pure computation: no printing, no clock, no hardware. */
#ifndef RL_PLAN_STEP_H
#define RL_PLAN_STEP_H

#include <stdint.h>

#include "common/rl.h"

/* The schedules of the optimizer step. */
enum step_schedule {
    STEP_SCHED_DS012,     /* "deepspeed": DeepSpeed's step as its version runs it (sequential
                             sub-group loop, gradient round trips; "deepspeed-0.12" is accepted) */
    STEP_SCHED_OVERLAP,   /* "overlap": ratiolab's executor, CPU share streamed in chunks */
    STEP_SCHED_COUNT
};
const char *step_schedule_name(enum step_schedule s);
/* Parses a schedule name; RL_EINVAL naming the value and the allowed names otherwise. */
int step_schedule_parse(const char *s, enum step_schedule *out, struct rl_err *e);

/* Phases of a step, in the priority order used to attribute exposed time: in any interval the
 * running phase with the lowest value is the exposed one. */
enum step_phase {
    STEP_PH_FORWARD,          /* forward compute */
    STEP_PH_BACKWARD,         /* backward compute (with recomputation when checkpointing) */
    STEP_PH_GPU_ADAM,         /* Adam on the GPU share */
    STEP_PH_CPU_ADAM,         /* Adam on the CPU share */
    STEP_PH_TP_ALLREDUCE,     /* Megatron tensor-parallel all-reduces */
    STEP_PH_ALLGATHER,        /* ZeRO-3 parameter all-gather (forward and backward) */
    STEP_PH_REDUCE_SCATTER,   /* gradient reduce-scatter, per bucket */
    STEP_PH_GRAD_D2H,         /* gradients to host */
    STEP_PH_GRAD_H2D,         /* gradients back to the GPU (DeepSpeed round trip) */
    STEP_PH_PARAM_H2D,        /* updated parameters (or fp32 master) to the GPU */
    STEP_PH_PIPELINE_BUBBLE,  /* pipeline-parallel fill and drain (analytical) */
    STEP_PH_GRAD_NORM,        /* gradient norm: per-parameter GPU norms and their host syncs */
    STEP_PH_GRAD_CAST,        /* 16-bit gradient to the fp32 gradient (GPU cast or host cast) */
    STEP_PH_UNSCALE,          /* the unscale pass over the fp32 gradients */
    STEP_PH_PARAM_CAST,       /* fp32 master to the 16-bit parameter (GPU cast or host cast) */
    STEP_PH_OVERFLOW_CHECK,   /* fp16: the host's inf/nan scan of the flat gradient buffer */
    STEP_PH_PAGE_FAULT,       /* first touch of fresh pageable host memory (PyTorch's temporaries) */
    STEP_PH_ZERO3_HOOKS,      /* the host issuing a block under DeepSpeed ZeRO-3: its submodules'
                                 hooks and eager dispatch */
    STEP_PH_COUNT
};
/* The phase's name ("forward", "grad_d2h", ...); "?" outside the enum. */
const char *step_phase_name(int phase);

/* One span of work of one rank: [start_ns, end_ns) in a phase. */
struct step_span {
    int64_t start_ns;    /* when the work started */
    int64_t end_ns;      /* when it ended (spans with end <= start are ignored) */
    int phase;           /* enum step_phase; < 0: not attributed (ignored) */
};

struct step_phase_time {
    int64_t busy_ns;     /* time the phase had any span running */
    int64_t exposed_ns;  /* of which no higher-priority phase was running */
};

struct step_breakdown {
    struct step_phase_time phase[STEP_PH_COUNT];   /* per phase */
    int64_t idle_ns;                               /* no span running */
};

/* Busy, exposed and idle time of `n` spans of one rank over [t0_ns, t1_ns): a sweep over span
 * starts and ends; in each interval every running phase is busy and the highest-priority one
 * (lowest enum value) is exposed; intervals with nothing running are idle. Overlapped time of a
 * phase is busy - exposed. Adds into *out (zero it first). RL_ENOMEM only. */
int step_breakdown(const struct step_span *s, int n, int64_t t0_ns, int64_t t1_ns, struct step_breakdown *out);

/* The CPU share of the overlap schedule streams through pinned buffers in chunks of
 * STEP_CHUNK_DEFAULT_NUMEL elements (a plan's exec_chunk_numel overrides it), at most
 * STEP_MAX_CHUNKS chunks per rank (larger shares get larger chunks). These functions are the one
 * definition of that chunk list: the ledger sizes the staging buffers with it (plan.c), the
 * simulator streams its chunks (sim/step_overlap.c) and the executor runs them (exec/step_overlap.c). The CPU
 * share is one run of cpu_numel elements (the host arrays hold the CPU sub-groups back to back);
 * chunk k covers [k x step_chunk_numel, min((k + 1) x step_chunk_numel, cpu_numel)), whatever
 * sub-groups it spans. */
#define STEP_CHUNK_DEFAULT_NUMEL (INT64_C(4) << 20)
#define STEP_MAX_CHUNKS 256

/* The chunk size used for a CPU share of cpu_numel elements with a requested chunk of
 * chunk_numel (<= 0: the default), after the chunk cap. */
int64_t step_chunk_numel(int64_t cpu_numel, int64_t chunk_numel);
/* Chunks of the CPU share: ceil(cpu_numel / step_chunk_numel(...)); 0 for an empty share. */
int64_t step_chunk_count(int64_t cpu_numel, int64_t chunk_numel);
/* Chunk k (0 <= k < step_chunk_count) of the CPU share: its first element in the share and its
 * elements (the last chunk holds the rest). */
void step_chunk_range(int64_t cpu_numel, int64_t chunk_numel, int64_t k, int64_t *first, int64_t *numel);
/* Elements of the largest chunk, min(step_chunk_numel, cpu_numel): one staging half (0 for an
 * empty share). */
int64_t step_chunk_buffer_numel(int64_t cpu_numel, int64_t chunk_numel);

/* ZeRO-3 prefetch (stage3_prefetch_bucket_size, elements): the blocks gathered ahead of the
 * block being computed, prefetch_bucket_size / max_block_numel and at least 1 (also when
 * max_block_numel <= 0), but never more than the n_blocks - 1 a pass has ahead of its first
 * block (0 for a single block). max_block_numel is the largest block's elements before ZeRO
 * partitioning (a block: the parameters of one transformer layer, or those before / after the
 * layers). */
int64_t step_prefetch_depth(int64_t prefetch_bucket_size, int64_t max_block_numel, int64_t n_blocks);
/* Gather buffers of max_block_numel elements live at once: the block being computed and the
 * `depth` prefetched ones, depth + 1. */
int64_t step_gather_buffers(int64_t depth);

#endif
