/* sim/sweep.c — a sweep's runs, its CSV and its JSON, row by row (sweep.h). */
#include <stdlib.h>
#include <string.h>

#include "sim/step_json.h"
#include "sim/sweep.h"
#include "traces/schema.h"   /* the sweep's columns and keys: one table for these writers and plots/' reader */

/* A key of the sweep's table (traces/schema.h). */
#define K(x) trace_sweep_keys[TRACE_SWEEP_K_##x]

int sim_sweep_run(const struct sim_sweep_request *q, struct sim_sweep_table *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    t->rows = calloc(q->n_ratios && !q->stream_only ? q->n_ratios : 1, sizeof *t->rows);
    if (!t->rows)
        return rl_errf(e, RL_ENOMEM, "sweep: out of memory for %zu rows", q->n_ratios);
    for (size_t i = 0; i < q->n_ratios; i++) {
        struct plan p;
        struct sim_sweep_row *w = &t->rows[q->stream_only ? 0 : i];
        memset(&p, 0, sizeof p);
        int rc = plan_setup_plan(q->setup, q->ratios[i], &p, e);
        if (!rc)
            rc = sim_step_run(&p, q->hw, q->train, NULL, &w->r, e);
        if (rc) {
            rl_err_prefix(e, "ratio %g", q->ratios[i]);
            plan_free(&p);
            return rc;
        }
        if (i == 0) {
            t->policy = p.policy;
            t->ds_version = p.zero.ds_version;
            t->offload = p.zero.offload;
        }
        w->requested = q->ratios[i];
        w->honored = p.honored_ratio;
        w->cpu_numel = p.cpu_numel;
        t->n_rows = q->stream_only ? 1 : i + 1;
        plan_free(&p);
        if (q->on_row && (rc = q->on_row(q->ctx, t, i, e)))
            return rc;
    }
    return 0;
}

void sim_sweep_free(struct sim_sweep_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n_rows = 0;
}

void sim_sweep_csv_head(FILE *f, const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                        const struct sim_sweep_text *x)
{
    const struct hw_profile *hw = q->hw;
    const struct sim_step_result *r0 = &t->rows[0].r;
    char dsv[RL_VERSION_STR_MAX];
    rl_version_str(t->ds_version, dsv, sizeof dsv);
    /* A comment header (readers skip lines starting with '#'): what the rows are of. */
    fprintf(f, "# ratiolab %s sweep\n", x->version);
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(MODEL), q->setup->model_desc);
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(SEQ_LEN), x->seq);
    fprintf(f, TRACE_SWEEP_COMMENT "%s: %d x %s per node, %.2f GiB each\n", K(HARDWARE), hw->name, hw->gpus,
            hw->gpu_model, (double)hw->gpu_mem_bytes / RL_GIB);
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(POLICY), plan_policy_name(t->policy));
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(DS_VERSION), dsv);
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(OFFLOAD), plan_offload_name(t->offload));
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(SCHEDULE), sim_schedule_name(q->train->schedule));
    fprintf(f, TRACE_SWEEP_COMMENT "%lld\n", K(MICRO_BATCH), (long long)r0->micro_batch);
    fprintf(f, TRACE_SWEEP_COMMENT "%s (%s)\n", K(ATTENTION), plan_attention_name(r0->attention), x->attention_origin);
    fprintf(f, TRACE_SWEEP_COMMENT "%s\n", K(SETTINGS), x->settings);
    /* The columns of traces/schema.h, then two per phase, then idle. */
    for (int k = 0; k < TRACE_SWEEP_N; k++)
        fprintf(f, "%s%s", k ? "," : "", trace_sweep_cols[k]);
    for (int ph = 0; ph < STEP_PH_COUNT; ph++) {
        fprintf(f, "," TRACE_SWEEP_PHASE_BUSY, sim_phase_name(ph));
        fprintf(f, "," TRACE_SWEEP_PHASE_EXPOSED, sim_phase_name(ph));
    }
    fprintf(f, ",%s\n", TRACE_SWEEP_IDLE);
}

void sim_sweep_csv_row(FILE *f, const struct sim_sweep_row *w)
{
    const struct sim_step_result *r = &w->r;
    fprintf(f, "%.4f,%.6f,%lld,%.2f,%lld,%.2f,%.6f,%s,%.1f", w->requested, w->honored,
            (long long)r->gpu_total_bytes, (double)r->gpu_total_bytes / RL_GIB,
            (long long)r->host_node_bytes, (double)r->host_node_bytes / RL_GIB,
            (double)r->step_ns * 1e-9, r->fits_gpu && r->fits_host ? "yes" : "no", r->tokens_per_s);
    /* Per phase of the critical GPU: busy and exposed seconds (predict's breakdown). */
    for (int ph = 0; ph < STEP_PH_COUNT; ph++)
        fprintf(f, ",%.6f,%.6f", (double)r->phase[ph].busy_ns * 1e-9, (double)r->phase[ph].exposed_ns * 1e-9);
    fprintf(f, ",%.6f\n", (double)r->idle_ns * 1e-9);
}

json_t *sim_sweep_json_head(const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                            const struct sim_sweep_text *x)
{
    const struct plan_setup *c = q->setup;
    char dsv[RL_VERSION_STR_MAX];
    rl_version_str(t->ds_version, dsv, sizeof dsv);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, K(MODEL), json_string(c->model_desc));
    json_object_set_new(o, K(HARDWARE), json_string(q->hw->name));
    json_object_set_new(o, K(SCHEDULE), json_string(sim_schedule_name(q->train->schedule)));
    json_object_set_new(o, K(POLICY), json_string(plan_policy_name(t->policy)));
    json_object_set_new(o, K(DS_VERSION), json_string(dsv));
    json_object_set_new(o, K(OFFLOAD), json_string(plan_offload_name(t->offload)));
    json_object_set_new(o, K(ATTENTION), json_string(plan_attention_name(t->rows[0].r.attention)));
    json_object_set_new(o, K(ATTENTION_ORIGIN), json_string(x->attention_origin));
    /* Layout and size, for plots across sweeps (ratiolab plot scaling). */
    json_object_set_new(o, K(GPUS), json_integer(c->layout.world));
    json_object_set_new(o, K(TP), json_integer(c->layout.tp));
    json_object_set_new(o, K(PP), json_integer(c->layout.pp));
    json_object_set_new(o, K(RANK_NUMEL), json_integer(c->model.total_numel));
    return o;
}

json_t *sim_sweep_json_row(const struct sim_sweep_row *w)
{
    json_t *row = json_object();
    if (!row)
        return NULL;
    json_object_set_new(row, K(REQUESTED), json_real(w->requested));
    json_object_set_new(row, K(HONORED), json_real(w->honored));
    json_object_set_new(row, K(CPU_NUMEL), json_integer(w->cpu_numel));
    json_object_set_new(row, K(PREDICTION), sim_step_result_json(&w->r));
    return row;
}
