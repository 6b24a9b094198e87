/* exec/trace.c — the executor's Chrome trace (`ratiolab run --trace FILE[.gz]`) in the layout the
 * simulator and the monitor use (traces/layout.h): a process per rank with a thread per stream,
 * the CPU Adam spans under the host socket's process, each span's category its phase (as the
 * simulator writes it, so `trace diff` and `plot timeline` compare the two), a step span per
 * iteration (warm-ups marked), and the rank's measured device memory and RSS as counters. Every rank's records are gathered to rank 0, which writes the file. Times are
 * relative to a barrier at the start of the steps (ranks of one node share CLOCK_MONOTONIC). */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_impl.h"
#include "traces/layout.h"
#include "traces/trace.h"

/* The stream (thread track) a phase's work runs on. */
static int tid_of(int phase)
{
    switch (phase) {
    case STEP_PH_FORWARD:
    case STEP_PH_BACKWARD:
    case STEP_PH_GPU_ADAM: return TRACE_TID_COMPUTE;
    case STEP_PH_ALLGATHER: return TRACE_TID_GATHER;
    case STEP_PH_REDUCE_SCATTER: return TRACE_TID_REDUCE;
    case STEP_PH_GRAD_D2H: return TRACE_TID_D2H;
    case STEP_PH_GRAD_H2D:
    case STEP_PH_PARAM_H2D: return TRACE_TID_H2D;
    case STEP_PH_CPU_ADAM: return TRACE_TID_CPU_ADAM;
    default: return TRACE_TID_HOST;   /* casts, unscale, overflow scan: issued by the host thread */
    }
}

int ex__trace_write(struct ex_run *r, const char *path, struct rl_err *e)
{
    void *all = NULL;
    int64_t bytes = 0;
    int rc = ex_comm_gatherv(r->c, r->tspans, (int64_t)r->n_tspans * (int64_t)sizeof *r->tspans, &all, &bytes, e);
    if (rc || r->k != 0) {
        free(all);
        return rc;
    }
    const struct ex__tspan *s = all;
    int64_t n = bytes / (int64_t)sizeof *s;
    struct trace *t = NULL;
    if ((rc = trace_open(&t, path, e))) {
        free(all);
        return rc;
    }
    char name[64];
    const struct trace_step_about about = {r->p->requested_ratio, r->p->honored_ratio,
                                           step_schedule_name(r->o->schedule), plan_policy_name(r->p->policy)};
    trace_process_name(t, TRACE_PID_SOCKET(0), "host socket 0");
    for (int q = 0; q < r->W; q++) {
        snprintf(name, sizeof name, "rank %d (%s backend)", q, r->be->name);
        trace_process_name(t, TRACE_PID_RANK(q), name);
        for (int tid = 0; tid < TRACE_TID_COUNT; tid++)
            if (tid != TRACE_TID_CPU_ADAM && tid != TRACE_TID_BUBBLE)
                trace_thread_name(t, TRACE_PID_RANK(q), tid, trace_tid_name(tid));
        snprintf(name, sizeof name, TRACE_POOL_NAME_FMT, q);
        trace_thread_name(t, TRACE_PID_SOCKET(0), TRACE_TID_POOL(q), name);
    }
    for (int64_t i = 0; i < n; i++) {
        const struct ex__tspan *x = &s[i];
        if (x->phase == EX_TSPAN_DEVICE_MEMORY && x->value >= 0)
            trace_counter(t, TRACE_PID_RANK(x->rank), TRACE_COUNTER_GPU_MEMORY, x->t0_ns, TRACE_SERIES_MEASURED,
                          (double)x->value);
        else if (x->phase == EX_TSPAN_RSS && x->value >= 0)
            trace_counter(t, TRACE_PID_RANK(x->rank), TRACE_COUNTER_HOST_MEMORY, x->t0_ns, TRACE_SERIES_MEASURED,
                          (double)x->value);
        else if (x->phase == EX_TSPAN_STEP || x->phase == EX_TSPAN_WARMUP_STEP)
            trace_layout_step(t, x->rank, (int)x->value, x->phase == EX_TSPAN_WARMUP_STEP, x->t0_ns,
                              x->t1_ns - x->t0_ns, &about);
        else if (x->phase >= 0)   /* the phase is the category, as the simulator writes it */
            trace_layout_span(t, x->rank, tid_of(x->phase), 0, step_phase_name(x->phase), NULL, x->t0_ns,
                              x->t1_ns - x->t0_ns, NULL);
    }
    free(all);
    return trace_close(t, e);
}
