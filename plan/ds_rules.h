/* plan/ds_rules.h — what ratiolab knows about each DeepSpeed release, as one table.
 *
 * One row per range of releases: the first release it describes (`from`; it holds until the next
 * row's `from`), what changed there (with DeepSpeed's PR and commit), and the complete set of
 * behaviours ratiolab models under that range: the placement rule, the memory ledger, the CPU-Adam
 * tile buffers, the step flags the simulator's `deepspeed` schedule follows, the config validator
 * the hazards depend on, and what DeepSpeed's log prints. Every other part of ratiolab asks this
 * table (plan_ds_rules_for) instead of comparing versions itself: the planner's policy and ledger,
 * the simulator's step, the hazards' version ranges, the help texts and the accepted values.
 * Adding a DeepSpeed release is one row here (a copy of the previous row with what changed) plus
 * its tests. Pure data: nothing here prints. */
#ifndef RL_PLAN_DS_RULES_H
#define RL_PLAN_DS_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/plan.h"

/* The release whose rules apply when nobody names one (deepspeed_version), as numbers and text. */
#define PLAN_DS_DEFAULT_MAJOR 0
#define PLAN_DS_DEFAULT_MINOR 12
#define PLAN_DS_DEFAULT_PATCH 4
#define PLAN_DS__STR(x) #x
#define PLAN_DS__XSTR(x) PLAN_DS__STR(x)
#define PLAN_DS_DEFAULT_VERSION_STR                                                               \
    PLAN_DS__XSTR(PLAN_DS_DEFAULT_MAJOR) "." PLAN_DS__XSTR(PLAN_DS_DEFAULT_MINOR) "."             \
        PLAN_DS__XSTR(PLAN_DS_DEFAULT_PATCH)
#define PLAN_DS_DEFAULT_VERSION                                                                   \
    ((struct rl_version){PLAN_DS_DEFAULT_MAJOR, PLAN_DS_DEFAULT_MINOR, PLAN_DS_DEFAULT_PATCH})

/* How the fp32 gradients of the CPU sub-groups are formed (docs/deepspeed-step.md 2.4, 4), each kind a
 * set of pieces of PyTorch's copy_ that the simulator models as their own tasks (sim/README.md
 * "What copy_ does"). */
enum plan_ds_grad_copy {
    PLAN_DS_GRAD_HOST_CAST,         /* copy_(16-bit GPU -> fp32 pinned host), blocking, per parameter
                                       inside the backward hook: PyTorch allocates a pageable 16-bit
                                       host temporary (fresh memory from 32 MiB), D2H into it
                                       synchronously, casts on the host's intra-op threads */
    PLAN_DS_GRAD_HOST_CAST_SYNCED,  /* .to(fp32) on the GPU, blocking D2H of fp32 into a pinned
                                       staging buffer, a full device synchronize, then a host copy
                                       into the fp32 gradient, per parameter; no host temporary */
    PLAN_DS_GRAD_GPU_UPCAST,        /* upcast on the GPU, blocking D2H of fp32 (4 B/element) */
    PLAN_DS_GRAD_GPU_UPCAST_ASYNC,  /* the same, non-blocking: the backward is not stalled */
};

/* Bytes DeepSpeed's CPU Adam pins as tile buffers while cpu_adam_tiles holds: two tiles of
 * 128 Mi floats (csrc/includes/cpu_adam.h _doubled_buffer, cudaMallocHost). */
#define PLAN_DS_CPU_ADAM_TILE_NUMEL (INT64_C(128) * 1024 * 1024)
#define PLAN_DS_CPU_ADAM_TILES 2

struct plan_ds_rules {
    struct rl_version from;          /* first release of the range; it lasts until the next row's */
    const char *change;              /* what changed at `from`, with DeepSpeed's PR and commit */
    enum plan_policy policy;         /* placement rule of the ratio (DS012 or DS018) */
    enum plan_ledger_kind ledger;    /* DS012: Adam states at init (zero-gradient step); DS013: at
                                        the first real step */
    bool cpu_adam_tiles;             /* DeepSpeedCPUAdam pins its two tile buffers (1 GiB) */
    bool norm_sync_per_param;        /* the norm loop syncs the host once per parameter (.item()) */
    bool adam_stream_sync;           /* CPU Adam ends with SynchronizeStreams */
    enum plan_ds_grad_copy grad_copy;/* how the CPU sub-groups' fp32 gradients are formed */
    bool ratio_check_asserts;        /* offload_ratio_check fires (a ratio with stage < 3 asserts);
                                        false: the validator never fires and the ratio is ignored */
    bool logs_stages;                /* stage3.py's see_memory_usage allocation stages are printed
                                        (force=True), so `validate --deepspeed-log` has lines to read */
    bool offload_pin_default;        /* offload_param.pin_memory (and offload_optimizer's) when the
                                        config does not set it (offload_config.py `pin_memory: bool`) */
};

/* The table, oldest row first (ds_rules.c), and its number of rows. Rows are sorted by `from`,
 * the first one is the release that brought partial offload (offload_optimizer.ratio). */
extern const struct plan_ds_rules plan_ds_rules_table[];
extern const int plan_ds_rules_count;

/* The row that holds for release v: the last row whose `from` <= v. A release newer than the last
 * row gets the last row; one older than the first row gets the first row (callers that need a
 * release with partial offload check it with plan_ds_version_check). O(rows). */
const struct plan_ds_rules *plan_ds_rules_for(struct rl_version v);

/* 0 when v has offload_optimizer.ratio (v >= the first row); RL_EINVAL naming deepspeed_version,
 * the value and the first release otherwise. */
int plan_ds_version_check(struct rl_version v, struct rl_err *e);

/* Which rows a fact holds for: a predicate over a row. */
typedef bool plan_ds_rows_fn(const struct plan_ds_rules *r);

/* The releases whose rows satisfy `holds`, as text: ">= 0.15.0", ">= 0.12.3, < 0.15.0", several
 * such ranges joined by "; " when the rows are not contiguous, "none" when no row is. */
void plan_ds_rows_versions(plan_ds_rows_fn *holds, char *buf, size_t n);

/* The same in release lines for prose: "0.12-0.17" for rows from 0.12.x up to a row starting at
 * 0.18.0, ">= 0.18" for rows to the end (a range ending at a patch release x.y.z, z > 0, keeps
 * "< x.y.z"); ranges joined by "; ", "none" when no row is. */
void plan_ds_rows_lines(plan_ds_rows_fn *holds, char *buf, size_t n);

/* "0.13.0, 0.13.2, ..." : the releases where the rules change (every row's `from` but the
 * first), for help texts. */
void plan_ds_changes_text(char *buf, size_t n);

/* "0.12.3": the first release with partial offload (the first row's `from`). */
struct rl_version plan_ds_first_version(void);

#endif
