/* traces/dslog.h — DeepSpeed `see_memory_usage` logs, parsed into stages and written as trace
 * events, so what DeepSpeed logged lines up with a simulated, executed or monitored trace.
 *
 * DeepSpeed (runtime/utils.py) logs, on rank 0, three lines per stage through its logger
 * (`[time] [INFO] [utils.py:N:see_memory_usage] message`):
 *   <stage message>                       e.g. "After creating fp16 partitions: 1"
 *   MA 1.23 GB  Max_MA 1.5 GB  CA 2.0 GB  Max_CA 2 GB     (torch allocator, GiB = 1024^3)
 *   CPU Virtual Memory:  used = 30.5 GB, percent = 12.1%  (psutil, the whole machine)
 * MA, Max_MA and CA are rounded to 2 decimals (+-0.005 GiB); Max_CA to a whole GiB (+-0.5 GiB).
 * Any text before the time stamp (a launcher's "[default0]:" prefix) is ignored. */
#ifndef RL_TRACES_DSLOG_H
#define RL_TRACES_DSLOG_H

#include <stdint.h>

#include "common/rl.h"
#include "traces/trace.h"

struct trace_ds_stage {
    char *name;              /* the stage message, owned */
    int line;                /* 1-based line of the message in the log */
    int64_t t_ns;            /* log time since the first stage's, or -1 without a time stamp */
    int64_t ma_bytes;        /* torch memory_allocated, or -1 when not logged */
    int64_t max_ma_bytes;    /* max_memory_allocated since the previous stage, or -1 */
    int64_t ca_bytes;        /* memory_reserved (caching allocator), or -1 */
    int64_t max_ca_bytes;    /* max_memory_reserved (whole GiB), or -1 */
    int64_t cpu_used_bytes;  /* psutil total - available of the whole machine, or -1 */
    double cpu_percent;      /* psutil percent, or -1 */
};

struct trace_ds_log {
    struct trace_ds_stage *stages;  /* in log order */
    int n_stages;                   /* entries */
};

/* Parses a log (plain or gzip). A log without any see_memory_usage line is RL_EINVAL naming the
 * file; lines of other loggers are skipped. O(log size). */
int trace_ds_read(const char *path, struct trace_ds_log *log, struct rl_err *e);
/* trace_ds_read on text in memory (len bytes, NUL bytes allowed); path names it in errors. A
 * time stamp outside the years 1970..2261 or a figure above 4e9 GB is RL_EINVAL naming file and
 * line. */
int trace_ds_parse(const char *text, size_t len, const char *path, struct trace_ds_log *log, struct rl_err *e);
void trace_ds_free(struct trace_ds_log *log);
/* Writes each stage as an instant event named by its message on process pid (at its log time
 * plus t0_ns; stages without a time get t0_ns), and counter "deepspeed memory" with series
 * ma_bytes, max_ma_bytes, ca_bytes, max_ca_bytes, cpu_used_bytes (figures not logged are
 * skipped). Returns 0 or the writer's error. */
int trace_ds_write(struct trace *t, const struct trace_ds_log *log, int pid, int64_t t0_ns);

/* Megatron's per-iteration log lines (training.py training_log):
 *   " iteration       10/     100 | consumed samples: ... | elapsed time per iteration (ms): 1234.5 | ..."
 * (newer versions print "1234.5/1200.3", the last value and a running mean; the first is taken).
 * *ms receives the logged times in log order (malloc'd, NULL when none), *iters the iteration
 * numbers (malloc'd, -1 where the line has none) and *n their count, which may be 0. Plain or
 * gzip. Lines without a finite, non-negative time are skipped. O(log size). Declared here, defined
 * in traces/dslog_iter.c. */
int trace_ds_read_iterations(const char *path, double **ms, int64_t **iters, int *n, struct rl_err *e);
/* The same on text in memory (modified: lines are cut at their newlines); path names it. */
int trace_ds_parse_iterations(char *text, size_t len, const char *path, double **ms, int64_t **iters, int *n,
                              struct rl_err *e);

/* The per-iteration timers of a run with wall-clock breakdown (defined in traces/dslog_timers.c):
 *   DeepSpeed's engine, `wall_clock_breakdown: true`, at every accumulation boundary
 *   (deepspeed/runtime/engine.py, SynchronizedWallClockTimer.log in deepspeed/utils/timer.py):
 *     "[Rank 0] time (ms) | fwd: 123.45 | bwd: 234.56 | bwd_inner: ... | bwd_allreduce: ... | step: 345.67"
 *   (fwd, bwd and step summed over the step's micro-steps; the *_microstep lines are skipped);
 *   Megatron-DeepSpeed's Timers.log every log interval (megatron/timers.py, --timing-log-option
 *   minmax or max, the default minmax), per iteration (normalised by the interval):
 *     "(min, max) time across ranks (ms):"
 *     "    forward-backward ...............................: (1234.56, 1240.01)"
 *     "    optimizer ......................................: (456.78, 460.00)"
 *   (the max is taken: the iteration waits for the slowest rank). */
enum trace_ds_timer {
    TRACE_DST_FWD,           /* DeepSpeed "fwd" */
    TRACE_DST_BWD,           /* DeepSpeed "bwd" */
    TRACE_DST_STEP,          /* DeepSpeed "step" */
    TRACE_DST_MEG_FWD_BWD,   /* Megatron "forward-backward" */
    TRACE_DST_MEG_OPT,       /* Megatron "optimizer" */
    TRACE_DST_COUNT
};
struct trace_ds_timers {
    double *ms[TRACE_DST_COUNT];   /* per timer, the logged values in log order (malloc'd) */
    int n[TRACE_DST_COUNT];        /* values per timer */
    int cap[TRACE_DST_COUNT];      /* allocated entries */
};
/* The timer's name as logged ("fwd", "forward-backward", ...); "?" outside the enum. */
const char *trace_ds_timer_name(int k);
/* Reads every timer line of a log (plain or gzip); a log without any gives all counts 0.
 * Lines without a finite, non-negative value are skipped. O(log size). */
int trace_ds_read_timers(const char *path, struct trace_ds_timers *t, struct rl_err *e);
/* The same on text in memory (modified: lines are cut at their newlines); path names it. */
int trace_ds_parse_timers(char *text, size_t len, const char *path, struct trace_ds_timers *t, struct rl_err *e);
void trace_ds_timers_free(struct trace_ds_timers *t);

#endif
