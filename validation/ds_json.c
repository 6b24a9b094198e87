/* validation/ds_json.c — the JSON document of `validate --deepspeed-log` (validation/ds_judge.h,
 * docs/json-validate.md). */
#include <math.h>

#include "validation/ds_judge.h"

/* One group's object: the plan it was judged by, its stages, step time, timers and host memory,
 * and the runs it holds. */
static json_t *group_json(const struct val_ds_judge_in *in, const struct val_ds_judge *k, const struct val_ds_judged *gr)
{
    const struct plan *p = &gr->p;
    const struct val_ds_result *r = &gr->r;
    const struct val_ds_timers *vt = &gr->vt;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("ratiolab-validate-deepspeed-log"));
    json_object_set_new(o, "model", json_string(gr->c.model_desc));
    json_object_set_new(o, "hardware", json_string(gr->hw.name));
    json_object_set_new(o, "deepspeed_version", json_string(RL_VERSION_S(p->zero.ds_version)));
    json_object_set_new(o, "ledger", json_string(plan_ledger_name(p->ledger_kind)));
    json_object_set_new(o, "subgroups", json_integer(p->n_subgroups));
    json_object_set_new(o, "tolerance_bytes", json_integer((json_int_t)llround(in->tol_gib * RL_GIB)));
    json_object_set_new(o, "tolerance_time_pct", json_real(in->tol_pct));
    json_t *logs = json_array();
    for (int i = 0; i < in->n_logs; i++)
        json_array_append_new(logs, json_string(in->logs[i]));
    json_object_set_new(o, "logs", logs);
    json_t *st = json_array();
    for (int i = 0; i < r->n_stages; i++) {
        const struct val_ds_stage *s = &r->stages[i];
        json_t *x = json_object();
        json_object_set_new(x, "message", json_string(s->message));
        json_object_set_new(x, "log", json_integer(s->file));
        json_object_set_new(x, "line", json_integer(s->line));
        json_object_set_new(x, "ledger_stage", s->plan_stage >= 0 ? json_string(plan_stage_name(s->plan_stage)) : json_null());
        json_object_set_new(x, "logged_ma_bytes", s->logged_ma_bytes >= 0 ? json_integer(s->logged_ma_bytes) : json_null());
        json_object_set_new(x, "predicted_gpu_bytes", s->predicted_gpu_bytes >= 0 ? json_integer(s->predicted_gpu_bytes) : json_null());
        json_object_set_new(x, "diff_bytes", s->status != VAL_INFO ? json_integer(s->diff_bytes) : json_null());
        json_object_set_new(x, "logged_subgroups", s->logged_subgroups >= 0 ? json_integer(s->logged_subgroups) : json_null());
        json_object_set_new(x, "machine_cpu_used_bytes", s->logged_cpu_used_bytes >= 0 ? json_integer(s->logged_cpu_used_bytes) : json_null());
        json_object_set_new(x, "predicted_host_bytes", s->predicted_host_bytes >= 0 ? json_integer(s->predicted_host_bytes) : json_null());
        json_object_set_new(x, "status", json_string(val_status_name(s->status)));
        json_array_append_new(st, x);
    }
    json_object_set_new(o, "stages", st);
    json_t *t = json_object();
    json_object_set_new(t, "iterations", json_integer(r->n_iterations));
    json_object_set_new(t, "measured_step_ms", r->n_iterations ? json_real(r->measured_step_ms) : json_null());
    json_object_set_new(t, "predicted_step_ns", json_integer(r->predicted_step_ns));
    json_object_set_new(t, "step_error_pct", r->n_iterations ? json_real(r->step_error_pct) : json_null());
    json_object_set_new(t, "status", json_string(val_status_name(r->time_status)));
    json_object_set_new(o, "time", t);
    json_t *tm = json_array();
    for (int i = 0; i < vt->n_rows; i++) {
        const struct val_ds_timer_row *w = &vt->row[i];
        json_t *x = json_object();
        json_object_set_new(x, "timer", json_string(trace_ds_timer_name(w->timer)));
        json_object_set_new(x, "values", json_integer(w->n));
        json_object_set_new(x, "measured_ms", json_real(w->measured_ms));
        json_object_set_new(x, "predicted_ms", json_real(w->predicted_ms));
        json_object_set_new(x, "error_pct", json_real(w->error_pct));
        json_object_set_new(x, "predicted_as", json_string(w->predicted_as));
        json_array_append_new(tm, x);
    }
    json_object_set_new(o, "timers", tm);
    json_object_set_new(o, "outside_timers_ms", vt->have_outside ? json_real(vt->outside_ms) : json_null());
    json_t *h = json_object();
    json_object_set_new(h, "note", json_string("DeepSpeed's CPU Virtual Memory figure is system-wide; per-process "
                                               "figures come from a ratiolab monitor CSV"));
    json_object_set_new(h, "predicted_peak_bytes", json_integer(r->predicted_host_peak_bytes));
    if (r->have_monitor) {
        json_object_set_new(h, "monitor_pid", json_integer(r->monitor_pid));
        json_object_set_new(h, "baseline_bytes", json_integer(r->monitor_baseline_bytes));
        json_object_set_new(h, "peak_bytes", json_integer(r->monitor_peak_bytes));
    }
    json_object_set_new(h, "status", json_string(val_status_name(r->host_status)));
    json_object_set_new(o, "host", h);
    json_object_set_new(o, "verdict", json_string(val_status_name(r->overall)));
    json_t *jr = json_array();
    for (int i = 0; i < gr->g->n; i++) {
        const struct val_ds_unit *u = &k->runs.u[gr->g->units[i]];
        json_array_append_new(jr, json_pack("{s:s,s:i}", "log", in->logs[u->file], "line", u->first_line));
    }
    json_object_set_new(o, "runs", jr);
    return o;
}

json_t *val_ds_judge_json(const struct val_ds_judge_in *in, const struct val_ds_judge *k)
{
    json_t *runs = json_array();
    for (int i = 0; i < k->n_done; i++)
        if (!k->j[i].skipped)
            json_array_append_new(runs, group_json(in, k, &k->j[i]));
    if (k->n_groups == 1) {
        json_t *j = json_incref(json_array_get(runs, 0));
        json_decref(runs);
        return j;
    }
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string("ratiolab-validate-deepspeed-log"));
    json_object_set_new(j, "runs", runs);
    json_object_set_new(j, "verdict", json_string(val_status_name(k->overall)));
    return j;
}
