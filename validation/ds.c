/* validation/ds.c — a real DeepSpeed run (its see_memory_usage stages and Megatron's iteration
 * times) against the plan's ledger and the simulator's step (see val.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validation/val.h"

/* The messages DeepSpeed's stage3.py logs after each allocation stage, in the releases whose row of
 * plan/ds_rules.c has logs_stages (up to 0.18.7; from 0.18.8 they are no longer printed). */
static const struct {
    const char *prefix;            /* message, or its start when followed by ": N" */
    enum plan_stage stage;         /* the ledger stage it reports */
} ds_stages[] = {
    {"After creating fp16 partitions", PLAN_STAGE_FP16_PARTITIONS},
    {"After creating fp32 partitions", PLAN_STAGE_FP32_PARTITIONS},
    {"After initializing optimizer states", PLAN_STAGE_OPTIMIZER_STATES},
    {"After initializing ZeRO optimizer", PLAN_STAGE_ZERO_OPTIMIZER},
};

int val_ds_stage_of(const char *message, int *n_subgroups)
{
    *n_subgroups = -1;
    for (size_t i = 0; i < sizeof ds_stages / sizeof ds_stages[0]; i++) {
        size_t l = strlen(ds_stages[i].prefix);
        if (strncmp(message, ds_stages[i].prefix, l) != 0)
            continue;
        const char *rest = message + l;
        if (*rest == ':') {
            int n, used = 0;
            if (sscanf(rest, ": %d%n", &n, &used) == 1 && rest[used] == 0 && n >= 0)
                *n_subgroups = n;
            else
                continue;   /* "After creating fp16 partitions: x" is not DeepSpeed's line */
        } else if (*rest) {
            continue;
        }
        return (int)ds_stages[i].stage;
    }
    return -1;
}

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

int val_ds_compare(const struct plan *p, const struct trace_ds_log *logs, int n_logs,
                   const double *iter_ms, int n_iter, int64_t predicted_step_ns,
                   const struct val_monitor *mon, const struct val_ds_opts *o,
                   struct val_ds_result *r, struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    int total = 0;
    for (int f = 0; f < n_logs; f++)
        total += logs[f].n_stages;
    r->stages = calloc(total ? (size_t)total : 1, sizeof *r->stages);
    if (!r->stages)
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    r->plan_subgroups = p->n_subgroups;
    r->overall = VAL_PASS;
    for (int f = 0; f < n_logs; f++)
        for (int i = 0; i < logs[f].n_stages; i++) {
            const struct trace_ds_stage *ls = &logs[f].stages[i];
            struct val_ds_stage *s = &r->stages[r->n_stages++];
            s->message = ls->name;
            s->file = f;
            s->line = ls->line;
            s->plan_stage = val_ds_stage_of(ls->name, &s->logged_subgroups);
            s->logged_ma_bytes = ls->ma_bytes;
            s->logged_cpu_used_bytes = ls->cpu_used_bytes;
            s->predicted_gpu_bytes = s->predicted_host_bytes = -1;
            s->status = VAL_INFO;
            if (s->plan_stage < 0)
                continue;
            s->predicted_gpu_bytes = p->stages[s->plan_stage].gpu_bytes;
            s->predicted_host_bytes = p->stages[s->plan_stage].cpu_bytes;
            if (s->logged_ma_bytes < 0 || (o->ma_is_rss && s->logged_subgroups < 0))
                continue;   /* nothing to compare: no MA, or an RSS and no sub-group count */
            r->compared++;
            s->diff_bytes = s->logged_ma_bytes - s->predicted_gpu_bytes;
            bool ok = o->ma_is_rss || abs64(s->diff_bytes) <= o->tol_bytes;
            if (s->logged_subgroups >= 0 && s->logged_subgroups != p->n_subgroups)
                ok = false;
            s->status = ok ? VAL_PASS : VAL_FAIL;
            if (!ok)
                r->overall = VAL_FAIL;
        }
    /* Time: Megatron's first logged interval includes start-up and warm-up, so it is skipped. */
    r->n_iterations = n_iter;
    r->predicted_step_ns = predicted_step_ns;
    r->time_status = VAL_INFO;
    if (n_iter > 0) {
        r->measured_step_ms = n_iter >= 2 ? rl_median(iter_ms + 1, n_iter - 1) : iter_ms[0];
        if (predicted_step_ns > 0) {
            double pred_ms = (double)predicted_step_ns * 1e-6;
            r->step_error_pct = (r->measured_step_ms - pred_ms) / pred_ms * 100;
            r->time_status = fabs(r->step_error_pct) <= o->tol_time_pct ? VAL_PASS : VAL_FAIL;
            if (r->time_status == VAL_FAIL)
                r->overall = VAL_FAIL;
        }
    }
    /* Host: DeepSpeed's figure is the whole machine's; a monitor CSV gives rank 0's process. */
    r->predicted_host_peak_bytes = plan_peak_cpu_bytes(p);
    r->host_status = VAL_INFO;
    if (mon) {
        const struct val_mon_proc *pr = val_monitor_rank(mon, 0);
        if (pr && pr->first_rss_bytes >= 0 && pr->peak_rss_bytes >= 0) {
            r->have_monitor = true;
            r->monitor_pid = pr->pid;
            r->monitor_baseline_bytes = pr->first_rss_bytes;
            r->monitor_peak_bytes = pr->peak_rss_bytes;
            int64_t growth = pr->peak_rss_bytes - pr->first_rss_bytes;
            r->host_status = abs64(growth - r->predicted_host_peak_bytes) <= o->tol_bytes ? VAL_PASS : VAL_FAIL;
            if (r->host_status == VAL_FAIL)
                r->overall = VAL_FAIL;
        }
    }
    if (!r->compared && !n_iter) {
        val_ds_result_free(r);
        return rl_errf(e, RL_EINVAL, "deepspeed_log: no allocation stage ('After creating fp16 "
                       "partitions: N', ...) with an MA line and no 'elapsed time per iteration "
                       "(ms)' line: nothing to compare");
    }
    return 0;
}

void val_ds_result_free(struct val_ds_result *r)
{
    if (!r)
        return;
    free(r->stages);
    r->stages = NULL;
    r->n_stages = 0;
}
