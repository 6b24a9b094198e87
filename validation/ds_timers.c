/* validation/ds_timers.c — the timers a DeepSpeed or Megatron-DeepSpeed run logs with wall-clock
 * breakdown against the simulator's windows (see val.h). */
#include <string.h>

#include "sim/step.h"   /* struct sim_step_result: the windows */
#include "validation/val.h"

/* The simulator's windows a logged timer covers: a bit set of forward (1), backward (2), step (4). */
static const struct {
    int windows;           /* bits */
    const char *as;        /* said in the report */
} timer_windows[TRACE_DST_COUNT] = {
    [TRACE_DST_FWD] = {1, "forward"},
    [TRACE_DST_BWD] = {2, "backward"},
    [TRACE_DST_STEP] = {4, "step"},
    [TRACE_DST_MEG_FWD_BWD] = {3, "forward + backward"},
    [TRACE_DST_MEG_OPT] = {4, "step"},
};

static double median_skip_first(const double *v, int n) { return n >= 2 ? rl_median(v + 1, n - 1) : v[0]; }

void val_ds_timers_compare(const struct trace_ds_timers *t, const struct sim_step_result *r, double iteration_ms,
                           struct val_ds_timers *out)
{
    memset(out, 0, sizeof *out);
    double win[3] = {(double)r->window_forward_ns * 1e-6, (double)r->window_backward_ns * 1e-6,
                     (double)r->window_step_ns * 1e-6};
    double measured[TRACE_DST_COUNT] = {0};
    for (int k = 0; k < TRACE_DST_COUNT; k++) {
        if (t->n[k] <= 0)
            continue;
        struct val_ds_timer_row *row = &out->row[out->n_rows++];
        row->timer = k;
        row->n = t->n[k];
        row->measured_ms = measured[k] = median_skip_first(t->ms[k], t->n[k]);
        row->predicted_as = timer_windows[k].as;
        for (int w = 0; w < 3; w++)
            if (timer_windows[k].windows & (1 << w))
                row->predicted_ms += win[w];
        row->error_pct = row->predicted_ms > 0 ? (row->measured_ms - row->predicted_ms) / row->predicted_ms * 100 : 0;
    }
    if (iteration_ms < 0)
        return;
    if (t->n[TRACE_DST_MEG_FWD_BWD] > 0 && t->n[TRACE_DST_MEG_OPT] > 0) {
        out->have_outside = true;
        out->outside_ms = iteration_ms - measured[TRACE_DST_MEG_FWD_BWD] - measured[TRACE_DST_MEG_OPT];
        out->outside_of = "forward-backward + optimizer";
    } else if (t->n[TRACE_DST_FWD] > 0 && t->n[TRACE_DST_BWD] > 0 && t->n[TRACE_DST_STEP] > 0) {
        out->have_outside = true;
        out->outside_ms = iteration_ms - measured[TRACE_DST_FWD] - measured[TRACE_DST_BWD] - measured[TRACE_DST_STEP];
        out->outside_of = "fwd + bwd + step";
    }
}
