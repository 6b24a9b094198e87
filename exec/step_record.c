/* exec/step_record.c — what the pipeline (exec/run.c) and the schedules (exec/step_ds.c,
 * exec/step_overlap.c) share of a step: the monotonic clock, the step's record (its spans, the
 * bytes per phase, the --trace records) and the Adam scalars at the run's step. Calls neither
 * side, so no two of them call each other. */
#include <time.h>

#include "exec/exec_impl.h"

int64_t ex__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Keeps a trace record (phase < 0: a memory sample of `value` bytes). */
void ex__trace_add(struct ex_run *r, int64_t t0, int64_t t1, int ph, int64_t value)
{
    if (rl_grow(&r->tspans, &r->cap_tspans, sizeof *r->tspans, r->n_tspans + 1, 1024)) {
        r->span_oom = true;
        return;
    }
    r->tspans[r->n_tspans++] = (struct ex__tspan){.t0_ns = t0 - r->t_origin_ns, .t1_ns = t1 - r->t_origin_ns,
                                                  .phase = ph, .rank = r->k, .value = value};
}

/* Records the span [t0, t1) of phase ph and the bytes it moved. */
void ex__span_add(struct ex_run *r, int ph, int64_t t0, int64_t t1, int64_t bytes)
{
    r->ph_bytes[ph] += bytes;
    if (rl_grow(&r->spans, &r->cap_spans, sizeof *r->spans, r->n_spans + 1, 256)) {
        r->span_oom = true;
        return;
    }
    r->spans[r->n_spans++] = (struct step_span){.start_ns = t0, .end_ns = t1, .phase = ph};
    if (r->o->trace_path)
        ex__trace_add(r, t0, t1, ph, 0);
}

/* Records the span [t0, now) of phase ph and the bytes it moved. */
void ex__phase_add(struct ex_run *r, int ph, int64_t t0, int64_t bytes)
{
    ex__span_add(r, ph, t0, ex__now_ns(), bytes);
}

/* An asynchronous copy's bytes; its time comes from the backend (take_spans) when it has one,
 * else from the span [t0, now) the pipeline measured around it. */
void ex__copy_done(struct ex_run *r, int ph, int64_t t0, int64_t bytes)
{
    if (r->be->take_spans)
        r->ph_bytes[ph] += bytes;
    else
        ex__phase_add(r, ph, t0, bytes);
}

/* The Adam scalars of param group `group` at the run's current Adam step. */
int ex__scalars(struct ex_run *r, int group, struct kern_adam_scalars *s, struct rl_err *e)
{
    struct kern_adam_hparams h = ex_hparams(r->o, group);
    return kern_adam_scalars_make(&h, r->adam_step, s, e);
}
