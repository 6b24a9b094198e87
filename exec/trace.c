/* exec/trace.c — the executor's Chrome trace (`ratiolab run --trace FILE[.gz]`) in the layout the
 * simulator and the monitor use (traces/layout.h): a process per rank with a thread per stream,
 * the CPU Adam spans under the host socket's process, and the rank's measured device memory and
 * RSS as counters. Every rank's records are gathered to rank 0, which writes the file. Times are
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
    trace_process_name(t, TRACE_PID_SOCKET(0), "host socket 0");
    for (int q = 0; q < r->W; q++) {
        snprintf(name, sizeof name, "rank %d (%s backend)", q, r->be->name);
        trace_process_name(t, TRACE_PID_RANK(q), name);
        for (int tid = 0; tid < TRACE_TID_COUNT; tid++)
            if (tid != TRACE_TID_CPU_ADAM && tid != TRACE_TID_BUBBLE)
                trace_thread_name(t, TRACE_PID_RANK(q), tid, trace_tid_name(tid));
        snprintf(name, sizeof name, "rank %d CPU Adam", q);
        trace_thread_name(t, TRACE_PID_SOCKET(0), TRACE_TID_POOL(q), name);
    }
    for (int64_t i = 0; i < n; i++) {
        const struct ex__tspan *x = &s[i];
        if (x->phase == -1 && x->value >= 0)
            trace_counter(t, TRACE_PID_RANK(x->rank), TRACE_COUNTER_GPU_MEMORY, x->t0_ns, TRACE_SERIES_MEASURED,
                          (double)x->value);
        else if (x->phase == -2 && x->value >= 0)
            trace_counter(t, TRACE_PID_RANK(x->rank), "host RSS (bytes)", x->t0_ns, TRACE_SERIES_MEASURED,
                          (double)x->value);
        else if (x->phase >= 0) {
            int tid = tid_of(x->phase);
            int pid = tid == TRACE_TID_CPU_ADAM ? TRACE_PID_SOCKET(0) : TRACE_PID_RANK(x->rank);
            trace_span(t, pid, tid == TRACE_TID_CPU_ADAM ? TRACE_TID_POOL(x->rank) : tid, step_phase_name(x->phase),
                       "exec", x->t0_ns, x->t1_ns - x->t0_ns, NULL);
        }
    }
    free(all);
    return trace_close(t, e);
}
