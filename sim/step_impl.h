/* sim/step_impl.h — the step model's internal state (step.c) and the read-only record of a
 * finished run that the trace writer (step_trace.c) consumes. */
#ifndef RL_SIM_STEP_IMPL_H
#define RL_SIM_STEP_IMPL_H

#include "sim/hw.h"
#include "sim/sim.h"
#include "sim/step.h"
#include "traces/layout.h"

/* Tracks of a task: the trace layout's thread ids (traces/layout.h). */
#define SIM_TR_COMPUTE TRACE_TID_COMPUTE
#define SIM_TR_GATHER TRACE_TID_GATHER
#define SIM_TR_REDUCE TRACE_TID_REDUCE
#define SIM_TR_D2H TRACE_TID_D2H
#define SIM_TR_H2D TRACE_TID_H2D
#define SIM_TR_CPU_ADAM TRACE_TID_CPU_ADAM
#define SIM_TR_BUBBLE TRACE_TID_BUBBLE
#define SIM_TR_HOST TRACE_TID_HOST

/* A memory change on one rank at a task's end, for the trace's counters. */
struct sim__mem_ev {
    int task;            /* applied when this task ends */
    int64_t delta_bytes; /* + allocated, - freed */
};

struct sim__step {
    const struct plan *p;          /* not owned */
    const struct hw_profile *hw;   /* not owned */
    struct sim_train t;            /* resolved settings */
    struct sim s;                  /* engine */
    struct sim_flow f;             /* flow model */
    struct sim_graph g;            /* task graph */
    int ranks;                     /* GPUs simulated (one node) */
    int gpu[HW_MAX_GPUS];          /* the node's GPU index of each rank */
    /* resource indices */
    int r_sm[HW_MAX_GPUS], r_hbm[HW_MAX_GPUS], r_h2d[HW_MAX_GPUS],
        r_d2h[HW_MAX_GPUS], r_nvl[HW_MAX_GPUS];
    int r_up_h2d[HW_MAX_SWITCHES], r_up_d2h[HW_MAX_SWITCHES];
    int r_dram[HW_MAX_SOCKETS], r_cores[HW_MAX_SOCKETS];
    int r_fault[HW_MAX_SOCKETS];       /* first touch of fresh pageable memory, bytes/s per socket */
    int r_isl;                     /* inter-socket link, -1 with one socket */
    int r_net;                     /* node network, -1 on one node */
    /* per micro-step and rank, the tasks that end its forward and its backward (the windows) */
    int n_mb;                      /* micro-steps recorded */
    int *fwd_tail;                 /* [n_mb x ranks] the forward's last compute task */
    int *bwd_tail;                 /* [n_mb x ranks x 4] the backward's compute, reduce, copy and
                                      host tails (-1: none) */
    /* memory counters for the trace */
    struct sim__mem_ev *mem;
    int n_mem, cap_mem;
    int64_t mem_base_bytes;        /* ledger + reserve: the counter's floor */
    /* link load samples for the trace: per recomputation, the load of every resource */
    bool record_links;
    int64_t *link_t_ns;            /* sample times */
    double *link_load;             /* n_link_samples x n_res loads, units per second */
    int n_link_samples, cap_link_samples;
};

/* Where a task's span starts: a pure delay (no resources: a pipeline bubble) spans its latency,
 * anything else starts when its work starts. */
static inline int64_t sim__task_span_start(const struct sim_task *t)
{
    return t->req.n_res == 0 && !(t->req.rate_cap > 0) ? t->t_ready_ns : t->t_start_ns;
}

/* A finished run, as the trace writer sees it: nothing here is modified by the writer and it
 * never sees the builder. */
struct sim__run_record {
    const struct hw_profile *hw;            /* the profile */
    int ranks;                              /* GPUs simulated */
    const int *gpu;                         /* the node's GPU index of each rank */
    bool numa_interleave;                   /* CPU Adam pools on every socket */
    const struct sim_task *task;            /* finished tasks, in graph order */
    int n_task;
    const struct sim__mem_ev *mem;          /* memory changes at task ends */
    int n_mem;
    const struct sim_resource *res;         /* resources (names for the load counters) */
    int n_res;
    const int64_t *link_t_ns;               /* load sample times */
    const double *link_load;                /* n_link_samples x n_res loads, units per second */
    int n_link_samples;
};

/* Writes the Chrome trace of a finished run. */
int sim__step_trace(const struct sim__run_record *rec, const struct sim_step_result *r, const char *path,
                    struct rl_err *e);

#endif
