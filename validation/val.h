/* validation/val.h — verdicts, as data, on whether predictions hold: a real DeepSpeed log against
 * the plan's ledger and the simulator, two traces phase by phase, and (val_report) the
 * executor's runs against the simulator across ratios. Never prints; cli/ prints and sets the
 * exit code from the verdicts. */
#ifndef RL_VALIDATION_VAL_H
#define RL_VALIDATION_VAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/plan.h"
#include "plan/step.h"
#include "traces/dslog.h"
#include "traces/trace.h"

/* How a caller that judges a real run resolves the setup from the user's inputs and loads the
 * hardware profile (cli/: plan_inputs_resolve with the flags named in its messages, and --hw with
 * its overrides), so that the setup's notes and the profile's overrides stay the command line's.
 * load_hw may change the caller's training settings (a setup with activation checkpointing). */
struct plan_inputs;
struct plan_setup;
struct hw_profile;
typedef int val_resolve_fn(const struct plan_inputs *in, struct plan_setup *c, struct rl_err *e);
typedef int val_load_hw_fn(void *ctx, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e);

/* A verdict. INFO: shown, not gated (nothing to compare, or a figure that cannot be compared). */
enum val_status { VAL_PASS, VAL_FAIL, VAL_INFO };
const char *val_status_name(enum val_status s);   /* "PASS", "FAIL", "info" */

/* ---- a ratiolab monitor CSV (monitor/README.md "Outputs") ------------------------------------ */
struct val_mon_proc {
    int pid;                       /* process id */
    int rank;                      /* RANK / OMPI_COMM_WORLD_RANK of the process, -1 when none */
    char comm[32];                 /* command name */
    int samples;                   /* rows seen */
    int64_t first_rss_bytes;       /* rss at its first sample: the start-up baseline */
    int64_t peak_rss_bytes;        /* max over samples of max(rss, hwm) */
    int64_t first_t_ns;            /* time of the first sample */
};
/* One rank's processes together (those whose rank column carries it: the rank's process and the
 * workers it forks, which inherit its RANK). */
struct val_mon_rank {
    int rank;                      /* the rank */
    int procs;                     /* processes seen with it */
    int64_t peak_sample_rss_bytes; /* max over samples of the rss of its processes alive then, summed */
    int64_t peak_hwm_bytes;        /* the largest VmHWM of one of its processes (peaks between samples) */
    int64_t cur_rss_bytes;         /* the sum at the sample being read (reader's scratch) */
};
struct val_monitor {
    struct val_mon_proc *procs;    /* in order of first appearance */
    int n_procs;                   /* entries */
    struct val_mon_rank *ranks;    /* ranks >= 0 seen, in order of first appearance */
    int n_ranks;                   /* entries */
};
/* Reads the CSV; a missing column in the header, a malformed row or no rows is RL_EINVAL naming
 * the file, line and column. "unavailable" fields are skipped. */
int val_monitor_read(const char *path, struct val_monitor *m, struct rl_err *e);
void val_monitor_free(struct val_monitor *m);
/* A rank's peak resident set: the larger of its processes' summed rss at one sample and the largest
 * VmHWM of one of them. */
int64_t val_monitor_rank_peak(const struct val_mon_rank *r);
/* The process that stands for one rank: the one with `rank` when any process carries a rank,
 * else the one with the largest peak RSS (a launcher-less run). NULL when there is none. */
const struct val_mon_proc *val_monitor_rank(const struct val_monitor *m, int rank);

/* ---- a real DeepSpeed run against the plan ----------------------------------------------------- */
/* The plan stage a see_memory_usage message reports, or -1 for messages that are not one
 * ("Before ..." and any other). Stage names as DeepSpeed (stage3.py) logs them in the releases
 * whose row of plan/ds_rules.h has logs_stages:
 * "After creating fp16 partitions: N", "After creating fp32 partitions", "After initializing
 * optimizer states", "After initializing ZeRO optimizer". *n_subgroups receives N (or -1). */
int val_ds_stage_of(const char *message, int *n_subgroups);

struct val_ds_stage {
    const char *message;           /* the log's message (points into the log, not owned) */
    int file;                      /* which log (index into the logs given) */
    int line;                      /* 1-based line in that log */
    int plan_stage;                /* enum plan_stage, or -1 when the message is not a ledger stage */
    int64_t logged_ma_bytes;       /* MA as logged (2 decimals of GiB), -1 when absent */
    int64_t predicted_gpu_bytes;   /* the ledger's cumulative GPU bytes at plan_stage, -1 when none */
    int64_t diff_bytes;            /* logged - predicted (0 when not compared) */
    int64_t logged_cpu_used_bytes; /* "CPU Virtual Memory: used" (whole machine), -1 when absent */
    int64_t predicted_host_bytes;  /* the ledger's cumulative host bytes per rank, -1 when none */
    int logged_subgroups;          /* N of "After creating fp16 partitions: N", -1 elsewhere */
    enum val_status status;        /* memory within tolerance and N equal to the plan's */
};

struct val_ds_opts {
    int64_t tol_bytes;             /* |logged - predicted| allowed for memory (GPU, and host with a monitor) */
    double tol_time_pct;           /* |measured - predicted| / predicted x 100 allowed for the step */
    bool ma_is_rss;                /* the log is of DeepSpeed's CPU accelerator, whose MA is the process
                                      RSS: MA is shown against the ledger, not gated (N still is) */
};

struct val_ds_result {
    struct val_ds_stage *stages;   /* every see_memory_usage stage of every log, in order (owned) */
    int n_stages;                  /* entries */
    int compared;                  /* stages compared with the ledger */
    int plan_subgroups;            /* the plan's sub-group count */
    /* time */
    int n_iterations;              /* iteration lines found */
    double measured_step_ms;       /* median of the logged iterations, the first skipped when n >= 2 */
    int64_t predicted_step_ns;     /* the simulator's step */
    double step_error_pct;         /* (measured - predicted) / predicted x 100 */
    enum val_status time_status;   /* INFO when no iteration line was logged */
    /* per-process host memory, from a monitor CSV */
    bool have_monitor;             /* a monitor CSV was given */
    int monitor_pid;               /* the process taken as rank 0 */
    int64_t monitor_baseline_bytes;/* its rss at its first sample */
    int64_t monitor_peak_bytes;    /* its peak rss */
    int64_t predicted_host_peak_bytes; /* plan_peak_cpu_bytes */
    enum val_status host_status;   /* growth (peak - baseline) against the ledger; INFO without a CSV */
    enum val_status overall;       /* FAIL when any gated verdict fails */
};

/* Compares the stages of n_logs logs with the plan's ledger (whose kind follows the DeepSpeed
 * version), the logged iteration times with predicted_step_ns, and, when mon is not NULL, rank
 * 0's per-process host growth with the ledger's host peak. RL_EINVAL when no log holds a ledger
 * stage and no iteration time either (nothing to compare). */
int val_ds_compare(const struct plan *p, const struct trace_ds_log *logs, int n_logs,
                   const double *iter_ms, int n_iter, int64_t predicted_step_ns,
                   const struct val_monitor *mon, const struct val_ds_opts *o,
                   struct val_ds_result *r, struct rl_err *e);
void val_ds_result_free(struct val_ds_result *r);

/* ---- a run's per-iteration timers against the simulator's windows (ds_timers.c) ---------------
 * Each timer the log holds (traces/dslog.h, trace_ds_read_timers): the median of its values (the
 * first skipped when there are two or more: start-up), next to the windows of sim_step_result it
 * covers: DeepSpeed's fwd / bwd / step the forward / backward / step windows, Megatron's
 * forward-backward the forward + backward windows, its optimizer the step window. Shown, not
 * gated. What the iteration pays outside the timers (Megatron's loss reduction and logging, data
 * loading outside forward, the timers' own barriers) is measured as the iteration's median minus
 * the timers that cover it; the simulator does not predict it (sim/README.md). */
struct val_ds_timer_row {
    int timer;                     /* enum trace_ds_timer */
    int n;                         /* values logged */
    double measured_ms;            /* median, the first skipped when n >= 2 */
    double predicted_ms;           /* the simulator's windows it covers */
    double error_pct;              /* (measured - predicted) / predicted x 100; 0 when predicted is 0 */
    const char *predicted_as;      /* which windows ("forward", "forward + backward", ...) */
};
struct val_ds_timers {
    struct val_ds_timer_row row[TRACE_DST_COUNT];   /* the timers logged, in enum order */
    int n_rows;                    /* entries */
    bool have_outside;             /* an iteration time and timers covering it were logged */
    double outside_ms;             /* the iteration's median minus those timers' medians */
    const char *outside_of;        /* which timers ("forward-backward + optimizer", "fwd + bwd + step") */
};
/* iteration_ms < 0: no iteration time logged. */
struct sim_step_result;
void val_ds_timers_compare(const struct trace_ds_timers *t, const struct sim_step_result *r, double iteration_ms,
                           struct val_ds_timers *out);

/* ---- per-phase times of a trace, and two traces side by side ----------------------------------
 * The shared layout (sim/step_trace.c; the executor writes the same): a span ("X") belongs to
 * the phase named by its category ("cat" = sim_phase_name(), spans of other categories are
 * ignored) and to a rank: args.rank when present, else pid - 1 for pids 1..99 (one process per
 * GPU), else the thread id for pids 100..199 (host sockets, one CPU Adam track per rank). Per rank
 * and phase, busy = the union of the phase's spans; exposed = the time it was the highest-priority
 * phase running (step_breakdown of plan/step.h, as the simulator and the executor attribute it); idle = the rank's extent
 * (first start to last end) minus the union of all its spans. A trace that marks its steps
 * (traces/layout.h TRACE_CAT_STEP: the executor's) is read for its first step that is not a
 * warm-up only, so a measured run of several steps compares with one predicted step.
 * O(n log n) in spans. */
#define VAL_PHASES STEP_PH_COUNT      /* the phases of plan/step.h */
struct val_rank_times {
    int rank;                        /* rank */
    int64_t busy_ns[VAL_PHASES];     /* per phase */
    int64_t exposed_ns[VAL_PHASES];  /* per phase; exposed + idle add up to extent */
    int64_t extent_ns;               /* first span start to last span end */
    int64_t idle_ns;                 /* nothing running */
    int spans;                       /* spans counted */
};
struct val_trace_times {
    struct val_rank_times *ranks;    /* sorted by rank (owned) */
    int n_ranks;                     /* entries */
};
int val_trace_times(const struct trace_doc *d, struct val_trace_times *t, struct rl_err *e);
void val_trace_times_free(struct val_trace_times *t);
/* The entry of one rank, NULL when the trace has none. */
const struct val_rank_times *val_trace_rank(const struct val_trace_times *t, int rank);
/* The ranks of either trace, ascending, each once (`trace diff` lines them up): *ranks malloc'd
 * (NULL and *n 0 when out of memory or both are empty). O(ranks of a + ranks of b). */
void val_trace_ranks_union(const struct val_trace_times *a, const struct val_trace_times *b, int **ranks, int *n);
/* The per-rank times of the trace file at path (trace_read, then val_trace_times): a trace with no
 * span of a phase category is RL_EINVAL naming the file and the categories looked for (`trace
 * diff` has nothing to line up); t holds nothing to free on an error. */
int val_trace_times_read(const char *path, struct val_trace_times *t, struct rl_err *e);

/* ---- the executor against the simulator (ratiolab validate --ratios) ---------------------------
 * One row per (ratio, schedule, policy): what the simulator predicted and the executor measured,
 * and the figures the checks need. The checks are computed from the rows (val_report_check) and
 * written as DIR/report.json (schema below, read by plots/) and DIR/report.md. */
struct val_side {
    char deepspeed_version[RL_VERSION_STR_MAX];   /* the DeepSpeed release whose step this side ran
                                        (schedule deepspeed: the simulator's prediction, the executor's
                                        run record); "" under overlap */
    int64_t step_ns;                 /* step time (measured: median over the timed steps, slowest rank) */
    int64_t busy_ns[VAL_PHASES];     /* per phase (sim_phase_name order) */
    int64_t exposed_ns[VAL_PHASES];  /* per phase */
};

#define VAL_MAX_RANKS 64
struct val_rank_mem {
    int64_t ledger_device_bytes;     /* measured: device buffers the executor allocated */
    int64_t ledger_host_bytes;       /* measured: host buffers it allocated */
    int64_t host_placed_numel;       /* elements whose Adam ran on the host */
    int64_t per_rank_numel;          /* P as the executor saw it */
    int64_t rss_bytes;               /* peak RSS, -1 unavailable */
    int64_t baseline_rss_bytes;      /* the process without any of its listed buffers, -1 unavailable */
    int64_t pinned_bytes;            /* locked/pinned host bytes, -1 unavailable */
    int64_t device_used_bytes;       /* device memory in use, -1 unavailable */
    int64_t scratch_device_bytes;    /* device buffers outside the ledger (compute scratch) */
    int64_t scratch_host_bytes;      /* host buffers outside the ledger (the deepspeed schedule's
                                        pageable staging) */
};

struct val_row {
    double ratio;                    /* requested */
    char schedule[32];               /* sim_schedule_name */
    char policy[32];                 /* plan_policy_name */
    struct val_side predicted;       /* simulator */
    struct val_side measured;        /* executor (its critical rank) */
    double step_error_pct;           /* (measured - predicted) / predicted x 100 */
    double others_cpu_pct;           /* other processes' share of the machine's cores while the run
                                        ran (/proc/stat busy time minus the run's own), percent; < 0
                                        unknown */
    uint32_t digest;                 /* the executor's digest of the final state */
    /* the plan of this row */
    int64_t plan_cpu_numel;          /* elements the plan puts on the host */
    int64_t plan_per_rank_numel;     /* P */
    double plan_honored_ratio;       /* cpu_numel / P */
    int64_t plan_device_bytes;       /* the exec ledger's device bytes per rank */
    int64_t plan_host_bytes;         /* the exec ledger's host bytes per rank */
    int64_t plan_host_pinned_bytes;  /* of which pinned */
    int n_ranks;                     /* entries in mem */
    struct val_rank_mem mem[VAL_MAX_RANKS];   /* per rank, measured */
};

struct val_check {
    char name[32];                   /* bitwise, honored_ratio, memory_ledger, memory_process, time */
    enum val_status status;          /* PASS / FAIL; INFO when not gated */
    bool gated;                      /* a FAIL makes validate exit 1 */
    char detail[1024];               /* one paragraph: what was compared, the worst case */
};

/* RSS differences up to this are accepted whatever the percentage: malloc arenas, thread stacks
 * and library buffers vary by a few MiB between otherwise equal runs. */
#define VAL_MEM_FLOOR_BYTES (INT64_C(4) << 20)
#define VAL_MAX_ROWS 64
#define VAL_MAX_CHECKS 8
struct val_report {
    char model[160];                 /* model description */
    char hardware[160];              /* profile name (and how its GEMM rate is used) */
    char hardware_path[256];         /* profile file or catalog name */
    char backend[16];                /* cpu / cuda */
    char policy[32];                 /* placement policy of the runs */
    int ranks;                       /* MPI ranks per run */
    int steps;                       /* timed steps per run */
    double scale;                    /* model shrink factor given to the executor */
    uint32_t reference_digest;       /* the single-process scalar reference's */
    bool have_reference;             /* reference_digest is set */
    double mem_tol_pct;              /* process memory tolerance, percent of prediction + baseline */
    double gate_time_pct;            /* < 0: time reported, not gated */
    char time_skipped[256];          /* non-empty: step times are not compared, and why (the prediction
                                        is of another machine than the one measured): the time check is
                                        information, the text and report.md print no error (report.json
                                        keeps the arithmetic beside this reason) */
    bool device_in_rss;              /* the emulated device's memory is host memory (cpu backend) */
    bool baseline_before_run;        /* the baseline is each rank's RSS right before its run (validate
                                        ran under mpirun, the executor in its processes), not a
                                        baseline launch's */
    int n_rows;                      /* entries */
    struct val_row rows[VAL_MAX_ROWS];
    int n_checks;                    /* entries */
    struct val_check checks[VAL_MAX_CHECKS];
    double step_mape_pct;            /* mean absolute percentage error of the step over the rows */
    double phase_mape_pct[VAL_PHASES];   /* per phase, over rows where the phase was predicted busy; -1 none */
    double phase_exposed_error_ms[VAL_PHASES];   /* per phase, measured minus predicted exposed time,
                                                    mean over the rows: its share of the step error */
};

/* Fills r->checks and the MAPEs from the rows: bitwise (every digest equal, and equal to the
 * reference), honored_ratio (host-placed elements == the plan's on every rank; under exact, the
 * plan within one granule of the request), memory_ledger (every rank's allocations == the plan's
 * exec ledger, to the byte), memory_process (RSS - baseline within mem_tol_pct of the ledger's
 * host bytes (and, on the emulated device, its device bytes) plus the baseline, or within
 * VAL_MEM_FLOOR_BYTES; device use within it of the device bytes plus compute scratch), time (step MAPE,
 * gated when gate_time_pct >= 0). */
void val_report_check(struct val_report *r);
/* Which DeepSpeed release's step each side ran, as one line for the reports: "simulator 0.19.5,
 * executor 0.19.5" from the rows of schedule deepspeed (each distinct pair once, in row order,
 * joined by "; "; a side without a release reads "none"); "" when no row has one. */
void val_report_deepspeed_text(const struct val_report *r, char *buf, size_t n);
/* true when a gated check failed. */
bool val_report_failed(const struct val_report *r);
/* report.json, schema_version 1: {"schema_version":1,"kind":"ratiolab-validate-report","model",
 * "hardware","backend","policy","ranks","rows":[{"ratio","schedule","policy","predicted":{"step_ns",
 * "phases":{name:{"busy_ns","exposed_ns"}}},"measured":{...},"step_error_pct"}],"checks":[{"name",
 * "status","detail"}], ...}. *out is malloc'd. */
int val_report_json(const struct val_report *r, char **out, struct rl_err *e);
/* report.md: the same as a Markdown document. *out is malloc'd. */
int val_report_md(const struct val_report *r, char **out, struct rl_err *e);

#endif
