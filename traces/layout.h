/* traces/layout.h — where things go in a ratiolab trace, shared by the simulator, the executor and
 * the monitor so their traces lay over each other in Perfetto:
 *   process TRACE_PID_RANK(g)     GPU rank g of the node: one thread per stream (enum trace_tid);
 *   process TRACE_PID_SOCKET(k)   host socket k: thread TRACE_TID_POOL(g) is rank g's CPU Adam pool;
 *   process TRACE_PID_LINKS       links and shared resources: one load counter per resource, named
 *                                 by the resource ("gpu0.pcie.h2d", "socket1.dram", ...).
 * Counters: TRACE_COUNTER_GPU_MEMORY under a rank, one series per source (TRACE_SERIES_*). */
#ifndef RL_TRACES_LAYOUT_H
#define RL_TRACES_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#define TRACE_PID_RANK(g) (1 + (g))       /* GPU rank g of the node (g < 99) */
#define TRACE_PID_SOCKET(k) (100 + (k))   /* host socket k */
#define TRACE_PID_LINKS 200               /* link and resource load counters */

/* Threads of a rank's process: its streams and copy engines. */
enum trace_tid {
    TRACE_TID_COMPUTE,    /* compute stream: forward, backward, TP all-reduce, GPU Adam */
    TRACE_TID_GATHER,     /* NCCL stream: parameter all-gather */
    TRACE_TID_REDUCE,     /* NCCL reduction stream: reduce-scatter */
    TRACE_TID_D2H,        /* copy engine device to host */
    TRACE_TID_H2D,        /* copy engine host to device */
    TRACE_TID_CPU_ADAM,   /* the rank's CPU Adam threads: drawn under its socket, TRACE_TID_POOL */
    TRACE_TID_BUBBLE,     /* pipeline bubble */
    TRACE_TID_HOST,       /* the rank's host thread: blocking copies, host casts, syncs */
    TRACE_TID_COUNT
};
/* Thread of rank g's CPU Adam pool under its socket's process, and its name (printf format). */
#define TRACE_TID_POOL(g) (g)
#define TRACE_POOL_NAME_FMT "CPU Adam pool, rank %d"

/* The thread's name ("compute stream", "copy engine D2H", ...); "?" outside the enum. */
const char *trace_tid_name(int tid);

#define TRACE_COUNTER_GPU_MEMORY "GPU memory (bytes)"     /* per rank (or process), bytes */
#define TRACE_COUNTER_HOST_MEMORY "host memory (bytes)"   /* per rank (or process), bytes */
#define TRACE_SERIES_PREDICTED "predicted"                /* the simulator's series */
#define TRACE_SERIES_MEASURED "measured"                  /* an executor's or monitor's series */

/* ---- span categories and names ------------------------------------------------------------------
 * A span's category ("cat") is the phase it belongs to, one of the names below (the simulator's
 * and the executor's phases, plan/step.h order: trace_phases[i].name == step_phase_name(i), checked
 * by a test); its name says what it did ("allgather block 3", or the phase name again). A step's
 * extent is a span of category TRACE_CAT_STEP on the rank's host thread, named "step N", with
 * args {"step":N,"warmup":true|false}: readers that compare one step (trace diff, plot timeline)
 * take the first step that is not a warm-up. A trace without step spans is one step. */
#define TRACE_CAT_STEP "step"

/* The groups a figure shows by default: five or six colours a reader can tell apart. */
enum trace_group {
    TRACE_GROUP_COMPUTE,      /* forward, backward */
    TRACE_GROUP_COLLECTIVE,   /* all-gather, reduce-scatter, TP all-reduce */
    TRACE_GROUP_PCIE,         /* copies between host and GPU, and the first touch of their fresh pageable buffers */
    TRACE_GROUP_GPU_OPT,      /* GPU Adam, gradient norm */
    TRACE_GROUP_CPU_OPT,      /* CPU Adam */
    TRACE_GROUP_CAST,         /* casts, unscale, overflow check */
    TRACE_GROUP_BUBBLE,       /* pipeline bubble */
    TRACE_GROUP_IDLE,         /* no phase running */
    TRACE_GROUP_COUNT
};

/* One phase: its name, group and the style every figure draws it with. Phases of one group share
 * the group's colour and differ by fill pattern, so the full list stays apart in colour-blind and
 * grey print too. */
struct trace_phase {
    const char *name;           /* category name, e.g. "grad_d2h" */
    enum trace_group group;     /* its group */
    int pattern;                /* gnuplot fill: 0 solid, else `fs pattern N` in the group's colour */
};
#define TRACE_N_PHASES 19       /* plan/step.h's 18 phases, then "idle" */
extern const struct trace_phase trace_phases[TRACE_N_PHASES];

/* The row of a phase name, NULL for any other name. */
const struct trace_phase *trace_phase_find(const char *name);
/* A group's label ("compute", "PCIe copies", ...) and colour ("#0072B2"; Okabe-Ito). */
const char *trace_group_name(enum trace_group g);
const char *trace_group_color(enum trace_group g);
/* The colour of a name that is no phase (an executor's own category): the i-th of a few colours
 * no group uses. */
const char *trace_other_color(int i);

struct trace;
struct trace_doc;
/* Writes a span where the layout puts it: thread `tid` (enum trace_tid) of rank `rank`'s process,
 * or for TRACE_TID_CPU_ADAM the pool thread of the rank under host socket `socket`; category
 * `phase` (a trace_phases name or TRACE_CAT_STEP), name `name` (NULL: the phase). */
int trace_layout_span(struct trace *t, int rank, int tid, int socket, const char *phase, const char *name,
                      int64_t t0_ns, int64_t dur_ns, const char *args_json);
/* A step's extent (TRACE_CAT_STEP) on rank's host thread; args carry the step, whether it was a
 * warm-up and, when about is not NULL, what was run: "requested_ratio", "honored_ratio",
 * "schedule", "policy" (NULL or empty fields are left out). */
struct trace_step_about {
    double requested_ratio;     /* < 0: not recorded */
    double honored_ratio;       /* < 0: not recorded */
    const char *schedule;       /* step schedule name */
    const char *policy;         /* placement policy name */
};
int trace_layout_step(struct trace *t, int rank, int step, bool warmup, int64_t t0_ns, int64_t dur_ns,
                      const struct trace_step_about *about);
/* The window of one step in a trace read back: the first step span that is not a warm-up, of the
 * lowest rank that has one ([*t0, *t1), returns 1); 0 when the trace has no step spans (then it is
 * one step: the caller takes every span). */
int trace_step_window(const struct trace_doc *d, int64_t *t0_ns, int64_t *t1_ns);

#endif
