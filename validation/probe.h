/* validation/probe.h — a ratiolab-probe document (docs/json-probe.md: what probe/ratiolab_probe.py
 * read from a live DeepSpeed ZeRO-3 engine, one rank) against the plan: sub-groups, placement,
 * honored ratio, the bytes of the optimizer's tensors against the ledger, device memory and step
 * time; and the run's configuration (from a probe or a log) against the one validated with.
 * Never prints. */
#ifndef RL_VALIDATION_PROBE_H
#define RL_VALIDATION_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "plan/plan.h"
#include "traces/dsconfig.h"
#include "validation/val.h"

/* The bounds every number of a probe is read under (larger is RL_EINVAL naming its JSON path):
 * far above any real run, and small enough that a difference of two never overflows and a sum
 * overflows only over millions of entries (summed with overflow checks). */
#define VAL_PROBE_MAX_BYTES (INT64_C(1) << 50)     /* 1 PiB: a memory figure or tensor's bytes */
#define VAL_PROBE_MAX_NUMEL (INT64_C(1) << 50)     /* elements of a sub-group, a bucket size */
#define VAL_PROBE_MAX_STEP_NS INT64_C(86400000000000) /* one day: a step's wall time */
#define VAL_PROBE_MAX_TOTAL_NS INT64_C(100000000000000000) /* about 3 years: a total of nanoseconds */
#define VAL_PROBE_MAX_COUNT (1 << 30)              /* a rank, world size, index, step number */

struct val_probe_subgroup {
    int index;                     /* DeepSpeed's sub-group index */
    int param_group;               /* sub_group_to_group_id */
    int64_t numel;                 /* this rank's elements */
    char assigned_device[24];      /* subgroup_to_device ("" when null: no optimizer offload) */
    char fp32_device[24];          /* the fp32 master's device */
    int64_t fp32_bytes;            /* its bytes */
    int64_t state_bytes;           /* optimizer state bytes (Adam m and v) */
    int64_t model_partition_bytes; /* the model-dtype flat partition, -1 when null */
    char optimizer[24];            /* "optimizer", "backup_optimizer", "" when no state was found */
    char optimizer_class[48];      /* its class, "" when unknown */
};

/* One of DeepSpeed's wall-clock-breakdown timers as the probe recorded it per step. */
#define VAL_PROBE_TIMERS 24
struct val_probe_timer {
    char name[40];                 /* DeepSpeed's timer name ("fwd_microstep", "step" ...) */
    double median_ms;              /* median over the steps after the first (the only one when one) */
    int n;                         /* steps that recorded it, the first included */
};

struct val_probe {
    int rank;                      /* the rank that wrote it */
    int world_size;                /* torch.distributed world size */
    int dp;                        /* data-parallel degree (dp_world_size, else world_size) */
    char ds_version_text[32];      /* as DeepSpeed reports it, e.g. "0.19.8" or "0.16.0+abc" */
    char torch_version[32];        /* torch.__version__ */
    char accelerator[24];          /* DeepSpeed's accelerator name: "cuda", "cpu", "cpu:0" ... */
    char device_source[40];        /* "torch.cuda.memory_allocated" or "process_rss" */
    struct trace_ds_config config; /* the zero config and version, in the log reader's terms */
    int64_t device_after_init_bytes; /* device memory after initialisation, -1 when null */
    int64_t device_peak_bytes;     /* the largest per-step peak, -1 when none */
    int64_t host_rss_bytes;        /* VmRSS when written, -1 when null */
    int64_t host_locked_bytes;     /* VmLck, -1 when null */
    int64_t host_pinned_bytes;     /* VmPin, -1 when null */
    int n_steps;                   /* per-step records */
    int64_t step_median_ns;        /* median wall time of the steps after the first (of the only
                                      one when there is one), -1 when none */
    int64_t step_total_ns;         /* sum of the recorded steps' wall times */
    struct val_probe_timer timers[VAL_PROBE_TIMERS]; /* steps[].timers_ms (wall-clock breakdown),
                                      in the order first seen; names past VAL_PROBE_TIMERS dropped */
    int n_timers;                  /* entries */
    int64_t overhead_ns;           /* probe_overhead_ns (wall) */
    int64_t overhead_cpu_ns;       /* probe_overhead_cpu_ns (CPU time), -1 when absent */
    struct val_probe_subgroup *sub;/* placement.subgroups, in order (owned) */
    int n_sub;                     /* entries */
    char optimizer_class[48];      /* placement.optimizer_class, "" when null */
    char backup_class[48];         /* placement.backup_optimizer_class, "" when null */
    int digest_step;               /* digest.step, -1 without a digest */
    char digest[72];               /* digest.sha256 (hex) */
    char digest_full[72];          /* oracle.fp32_full_sha256, "" when absent */
    int grad_accum;                /* gradient_accumulation_steps: micro-steps per optimizer step
                                      (1 when absent, as in files from before it was recorded) */
    int64_t micro_batch;           /* micro_batch_size, -1 when null or absent */
    int64_t micro_steps;           /* engine.step() calls, -1 when absent */
    int64_t optimizer_steps;       /* optimizer steps, -1 when absent */
    struct plan_group_spec groups; /* param_groups[].parameters, every name exact, in group order;
                                      n_groups 0 when the file records none (owned) */
    struct val_probe_group {
        int64_t numel;             /* the group's elements, whole (every rank's) */
        double lr;                 /* its lr at attach (NaN when not recorded) */
        double weight_decay;       /* its weight decay at attach (NaN when not recorded) */
        int n_params;              /* parameters named */
    } group[PLAN_MAX_GROUPS];      /* per param group, [0, groups.n_groups) */
};

/* Parses a probe document; what is missing or malformed is RL_EINVAL naming the file and the JSON
 * path ("probe.json: placement.subgroups[3].numel: ..."). O(size). */
int val_probe_parse(const char *text, size_t len, const char *path, struct val_probe *p, struct rl_err *e);
int val_probe_read(const char *path, struct val_probe *p, struct rl_err *e);
void val_probe_free(struct val_probe *p);

/* The file ratiolab_probe writes for `rank` beside rank 0's `rank0_path`: "<stem>.rank<R><ext>"
 * ("run/probe.json" -> "run/probe.rank1.json"; a name without an extension gets ".json"), rank 0
 * itself being rank0_path. RL_EINVAL when it does not fit in n bytes. */
int val_probe_rank_path(const char *rank0_path, int rank, char *out, size_t n, struct rl_err *e);
/* Whether `b` (read from b_path as rank `rank`'s file) belongs to the run of rank 0's probe `a`:
 * its rank, world and data-parallel size, DeepSpeed release, accelerator, dtype, zero config, the
 * number of steps and the step of the digest must be a's. RL_EINVAL naming the file, the field and
 * both values otherwise. The gathered digest (oracle.fp32_full_sha256) is judged, not refused:
 * see val_probe_ranks_digest. */
int val_probe_same_run(const struct val_probe *a, const struct val_probe *b, const char *b_path, int rank,
                       struct rl_err *e);
/* The gathered digest over the ranks' probes (every parameter whole, the same on every rank of
 * one run): VAL_PASS when all n that carry one agree, VAL_FAIL naming the first rank that differs,
 * VAL_INFO when none carries one; detail (n_detail bytes) says which. */
enum val_status val_probe_ranks_digest(const struct val_probe *pr, int n, char *detail, size_t n_detail);

/* True when DeepSpeed's accelerator is named "cpu": its "is this sub-group offloaded" test
 * (`subgroup_to_device[i] == 'cpu'`) is then true for every sub-group, so the ratio's split is not
 * observable and every sub-group runs the CPU optimizer. */
bool val_probe_stock_cpu(const struct val_probe *p);
/* True when the run's "device" is the host (DeepSpeed's CPU accelerator under any name). */
bool val_probe_cpu_accelerator(const struct val_probe *p);

enum { VAL_PROBE_SUBGROUPS, VAL_PROBE_PLACEMENT, VAL_PROBE_RATIO, VAL_PROBE_LEDGER, VAL_PROBE_DEVICE_MEMORY,
       VAL_PROBE_STEP_TIME, VAL_PROBE_CHECKS };

struct val_probe_check {
    const char *name;              /* "subgroups", "placement", "honored_ratio", "memory_ledger",
                                      "device_memory", "step_time" */
    enum val_status status;        /* PASS / FAIL gated, info shown */
    char detail[320];              /* what was compared, or why it cannot be */
};

struct val_probe_opts {
    int64_t tol_bytes;             /* device memory after init against the ledger */
    double tol_time_pct;           /* step time against the prediction */
    int64_t predicted_step_ns;     /* predict's step for the run (<= 0: none) */
};

struct val_probe_result {
    struct val_probe_check checks[VAL_PROBE_CHECKS]; /* in the enum's order */
    int64_t observed_cpu_numel;    /* elements of the sub-groups DeepSpeed offloaded */
    int64_t observed_numel;        /* elements of every sub-group */
    enum val_status overall;       /* FAIL when a gated check failed */
};

/* Judges a probe against the plan built for the same run (val_facts_apply makes the setup agree). */
void val_probe_compare(const struct plan *p, const struct val_probe *pr, const struct val_probe_opts *o,
                       struct val_probe_result *r);

/* The configuration a run printed (a log) or recorded (a probe), `what` naming it in messages,
 * against the setup resolved from the user's config and flags, by plan/inputs.c's precedence
 * (plan_inputs_apply_facts: a value the user set that differs from the run's is RL_EINVAL, a value
 * nobody set is taken from the run). dp > 0 also sets the data-parallel degree unless the user
 * gave one. */
int val_facts_apply(const struct trace_ds_config *f, int dp, const char *what, const struct plan_inputs *in,
                    struct plan_setup *c, struct rl_err *e);

#endif
