/* sim/step_impl.h — the step model's internal state, shared by step.c and step_trace.c. */
#ifndef RL_SIM_STEP_IMPL_H
#define RL_SIM_STEP_IMPL_H

#include "sim/hw.h"
#include "sim/sim.h"
#include "sim/step.h"

/* Trace tracks of one GPU rank (thread ids under the rank's process). */
enum sim__track {
    SIM_TR_COMPUTE,      /* compute stream: forward, backward, TP all-reduce, GPU Adam */
    SIM_TR_GATHER,       /* NCCL stream: parameter all-gather */
    SIM_TR_REDUCE,       /* NCCL reduction stream: reduce-scatter */
    SIM_TR_D2H,          /* copy engine device to host */
    SIM_TR_H2D,          /* copy engine host to device */
    SIM_TR_CPU_ADAM,     /* the rank's CPU Adam threads (shown under its host socket) */
    SIM_TR_BUBBLE,       /* pipeline bubble */
    SIM_TR_COUNT
};

/* A memory change on one rank at a task's end, for the trace's counters. */
struct sim__mem_ev {
    int task;            /* applied when this task ends */
    int64_t delta_bytes; /* + allocated, - freed */
};

struct sim__step {
    const struct plan *p;          /* not owned */
    const struct sim_hw *hw;       /* not owned */
    struct sim_train t;            /* resolved settings */
    struct sim s;                  /* engine */
    struct sim_flow f;             /* flow model */
    struct sim_graph g;            /* task graph */
    int ranks;                     /* GPUs simulated (one node) */
    /* resource indices */
    int r_sm[SIM_HW_MAX_GPUS], r_hbm[SIM_HW_MAX_GPUS], r_h2d[SIM_HW_MAX_GPUS],
        r_d2h[SIM_HW_MAX_GPUS], r_nvl[SIM_HW_MAX_GPUS];
    int r_up_h2d[SIM_HW_MAX_SWITCHES], r_up_d2h[SIM_HW_MAX_SWITCHES];
    int r_dram[SIM_HW_MAX_SOCKETS], r_cores[SIM_HW_MAX_SOCKETS];
    int r_isl;                     /* inter-socket link, -1 with one socket */
    int r_net;                     /* node network, -1 on one node */
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

/* Writes the Chrome trace of a finished run. */
int sim__step_trace(struct sim__step *b, const struct sim_step_result *r, const char *path,
                    struct rl_err *e);

#endif
