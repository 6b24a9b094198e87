/* validation/ds_judge.c — `validate --deepspeed-log`'s analysis: the logs' runs grouped and each
 * group judged against its plan (validation/ds_judge.h). */
#include "validation/ds_judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Judges one group into *x: the setup from the user's inputs and the runs' configuration, the
 * plan, the prediction and the comparison. An error is returned with x->failed saying its step; a
 * contradiction between a run and the user's settings is RL_EINVAL from VAL_DSJ_FACTS. */
static int judge_group(const struct val_ds_judge_in *in, const struct val_ds_runs *runs, struct val_ds_judged *x,
                       struct rl_err *e)
{
    const struct val_ds_group *g = x->g;
    struct trace_ds_log logs[VAL_DS_GROUP_MAX];
    double *ms = NULL;
    int n_ms = 0, rc;
    struct val_monitor mon = {0};
    struct sim_step_result sr;
    struct trace_ds_timers tm = {0};
    x->failed = VAL_DSJ_SETUP;
    if ((rc = in->resolve(in->in, &x->c, e)))
        goto out;
    x->failed = VAL_DSJ_FACTS;
    if ((rc = val_ds_group_facts(runs, g, in->in, &x->c, &x->logged, e)))
        goto out;
    x->failed = VAL_DSJ_JOIN;
    if ((rc = val_ds_group_join(runs, g, logs, &ms, &n_ms, &tm, e)))
        goto out;
    x->failed = VAL_DSJ_PREDICT;
    if ((rc = in->load_hw(in->ctx, &x->c, &x->hw, e)) || (rc = plan_setup_plan(&x->c, -1, &x->p, e)) ||
        (rc = sim_step_run(&x->p, &x->hw, in->train, NULL, &sr, e)) ||
        (in->monitor && (rc = val_monitor_read(in->monitor, &mon, e)))) {
        rc = rc ? rc : RL_EINVAL;
        goto out;
    }
    x->ma_is_rss = strcmp(x->logged.accelerator, "cpu") == 0;
    struct val_ds_opts o = {.tol_bytes = (int64_t)llround(in->tol_gib * RL_GIB), .tol_time_pct = in->tol_pct,
                            .ma_is_rss = x->ma_is_rss};
    x->failed = VAL_DSJ_COMPARE;
    if ((rc = val_ds_compare(&x->p, logs, g->n, ms, n_ms, sr.step_ns, in->monitor ? &mon : NULL, &o, &x->r, e)))
        goto out;
    x->failed = VAL_DSJ_OK;
    for (int i = 0; i < x->r.n_stages; i++)   /* the stage's log among those given, not among the group's */
        x->r.stages[i].file = val_ds_group_file(runs, g, x->r.stages[i].file);
    val_ds_timers_compare(&tm, &sr, x->r.n_iterations ? x->r.measured_step_ms : -1, &x->vt);
out:
    trace_ds_timers_free(&tm);
    val_monitor_free(&mon);
    free(ms);
    return rc;
}

/* The logs split into runs (trace_ds_split_runs). When every run printed one configuration (or
 * only one did), they are judged together as one run, stages from one log and iterations from
 * another. When they differ (two logs of two ratios, a log with two runs appended), each run is
 * judged against its own configuration, named by its log and first line; a run that contradicts a
 * setting the user gave (--ratio, --ds-config) is not judged, unless every run does (then that is
 * the error). Logs with no configuration at all cannot be told which run they belong to: refused. */
int val_ds_judge_run(const struct val_ds_judge_in *in, struct val_ds_judge *k, struct rl_err *e)
{
    int rc;
    k->failed = VAL_DSJ_READ;
    k->overall = VAL_PASS;
    if (!(k->groups = calloc(VAL_DS_GROUP_MAX, sizeof *k->groups)))
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    if ((rc = val_ds_runs_read(&k->runs, in->logs, in->n_logs, e)) ||
        (rc = val_ds_runs_group(&k->runs, k->groups, VAL_DS_GROUP_MAX, &k->n_groups, &k->differ, e)))
        return rc;
    if (k->differ && in->monitor) {
        k->failed = VAL_DSJ_MONITOR;
        return rl_errf(e, RL_EINVAL, "monitor_csv: the logs hold %d runs of different configurations; a monitor CSV "
                       "is of one run: validate that run's log with it alone", k->n_groups);
    }
    if (!(k->j = calloc((size_t)k->n_groups, sizeof *k->j)))
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    k->failed = VAL_DSJ_OK;
    for (; k->n_done < k->n_groups; k->n_done++) {
        struct val_ds_judged *x = &k->j[k->n_done];
        x->g = &k->groups[k->n_done];
        int grc = judge_group(in, &k->runs, x, &x->err);
        /* With several runs, one whose configuration contradicts the user's is left out; any other
         * error ends the judgement. */
        if (grc && k->n_groups > 1 && grc == RL_EINVAL && strstr(x->err.msg, ": the run used ")) {
            x->skipped = true;
            if (!k->first_skip.code) {
                k->first_skip = x->err;
                k->failed = x->failed;   /* the error's step, should no group be judged */
            }
            continue;
        }
        if (grc) {
            *e = x->err;
            k->failed = x->failed;
            return grc;
        }
        k->judged++;
        if (x->r.overall != VAL_PASS)
            k->overall = VAL_FAIL;
    }
    if (!k->judged) {
        *e = k->first_skip;
        return e->code;
    }
    k->failed = VAL_DSJ_OK;
    return 0;
}

void val_ds_judge_free(struct val_ds_judge *k)
{
    for (int i = 0; k->j && i < k->n_groups; i++) {
        val_ds_result_free(&k->j[i].r);
        plan_free(&k->j[i].p);
        plan_setup_free(&k->j[i].c);
    }
    free(k->j);
    free(k->groups);
    val_ds_runs_free(&k->runs);
    memset(k, 0, sizeof *k);
}
