/* sim/tune_json.c — tune --json and the config block of a choice (tune_json.h). */
#include <math.h>

#include "sim/step_json.h"
#include "sim/tune_json.h"
#include "traces/schema.h"   /* tune --json's keys: one table for this writer and its readers */

/* A key of tune --json's table (traces/schema.h). */
#define K(x) trace_tune_keys[TRACE_TUNE_##x]

/* A choice ("answer", "best_with_offload", "best_exact"): its settings, speed, memory and prediction. */
static json_t *choice_json(const struct sim_tune_choice *k)
{
    json_t *o = json_object();
    json_object_set_new(o, K(C_OFFLOAD), json_string(k->offload ? "cpu" : "none"));
    json_object_set_new(o, K(C_REQUESTED), json_real(k->ratio));
    json_object_set_new(o, K(C_HONORED), json_real(k->honored));
    json_object_set_new(o, K(C_MICRO_BATCH), json_integer(k->micro_batch));
    json_object_set_new(o, K(C_GRAD_ACCUM), json_integer(k->grad_accum));
    json_object_set_new(o, K(C_CKPT), json_boolean(k->ckpt));
    json_object_set_new(o, K(C_SUB_GROUP_SIZE), json_integer(k->sub_group_size));
    json_object_set_new(o, K(C_SUB_GROUPS), json_integer(k->n_subgroups));
    json_object_set_new(o, K(C_TOKENS_GPU), json_real(k->tokens_per_s_gpu));
    json_object_set_new(o, K(C_TOKENS_NODE), json_real(k->tokens_per_s_node));
    json_object_set_new(o, K(C_FREE_GPU_BYTES), json_integer(k->free_gpu_bytes));
    json_object_set_new(o, K(C_HOST_NODE_BYTES), json_integer(k->r.host_node_bytes));
    json_object_set_new(o, K(C_HOST_TOTAL_NODE_BYTES), json_integer(k->r.host_total_node_bytes));
    json_object_set_new(o, K(C_PREDICTION), sim_step_result_json(&k->r));
    return o;
}

/* A byte figure, or null where none qualifies (0 or INT64_MAX). */
static json_t *bytes_or_null(int64_t v)
{
    return v > 0 && v != INT64_MAX ? json_integer(v) : json_null();
}

/* The per-class facts (docs/json-tune.md "classes"). */
static json_t *classes_json(const struct sim_tune_run *t)
{
    static const char *const keys[] = {"no_offload", "partial_offload", "full_offload"};
    json_t *a = json_array();
    for (int c = 0; c < SIM_TUNE_N_CLASSES; c++) {
        const struct sim_tune_class_stats *k = &t->res.ans.cls[c];
        const struct sim_tune_fix *f = &t->fix[c];
        json_t *o = json_object();
        json_object_set_new(o, K(K_CLASS), json_string(keys[c]));
        json_object_set_new(o, K(K_CANDIDATES), json_integer(k->evaluated));
        json_object_set_new(o, K(K_RATIO_MIN), k->evaluated ? json_real(k->ratio_lo) : json_null());
        json_object_set_new(o, K(K_RATIO_MAX), k->evaluated ? json_real(k->ratio_hi) : json_null());
        json_object_set_new(o, K(K_GPU_FIT), json_integer(k->gpu_fit));
        json_object_set_new(o, K(K_HOST_FIT), json_integer(k->host_fit));
        json_object_set_new(o, K(K_FIT), json_integer(k->fit));
        json_object_set_new(o, K(K_BINDS), json_string(sim_tune_binds(k)));
        json_object_set_new(o, K(K_MIN_GPU_BYTES), bytes_or_null(k->min_gpu_bytes));
        json_object_set_new(o, K(K_MIN_GPU_BYTES_HOST_FITS), bytes_or_null(k->min_gpu_bytes_host_ok));
        json_object_set_new(o, K(K_MIN_HOST_TOTAL), bytes_or_null(k->min_host_any_bytes));
        json_object_set_new(o, K(K_MIN_HOST_TOTAL_GPU_FITS), bytes_or_null(k->min_host_node_bytes));
        json_object_set_new(o, K(K_BEST_TOKENS), k->fit ? json_real(k->best_tokens_per_s_gpu) : json_null());
        if (t->res.found || k->evaluated == 0) {
            json_object_set_new(o, K(K_FITS_WITH), json_null());
        } else {
            json_t *w = json_object();
            json_object_set_new(w, K(F_GPU_MEM_BYTES), bytes_or_null(f->gpu_mem_bytes));
            json_object_set_new(w, K(F_HOST_MEM_BYTES), bytes_or_null(f->host_mem_bytes));
            if (f->both_gpu_mem_bytes) {
                json_t *b = json_object();
                json_object_set_new(b, K(F_GPU_MEM_BYTES), json_integer(f->both_gpu_mem_bytes));
                json_object_set_new(b, K(F_HOST_MEM_BYTES), json_integer(f->both_host_mem_bytes));
                json_object_set_new(w, K(F_BOTH), b);
            } else {
                json_object_set_new(w, K(F_BOTH), json_null());
            }
            json_object_set_new(w, K(F_GPUS), f->gpus ? json_integer(f->gpus) : json_null());
            json_object_set_new(w, K(F_DP), f->gpus ? json_integer(f->dp) : json_null());
            json_object_set_new(w, K(F_NODES), f->gpus ? json_integer(f->nodes) : json_null());
            json_object_set_new(o, K(K_FITS_WITH), w);
        }
        json_array_append_new(a, o);
    }
    return a;
}

json_t *sim_tune_ds_config_json(const struct sim_tune_choice *k, bool with_sgs, enum plan_dtype dtype)
{
    json_t *o = json_object(), *z = json_object();
    if (dtype != PLAN_FP32) {   /* the precision planned: DeepSpeed runs fp32 without its block */
        json_t *d = json_object();
        json_object_set_new(d, "enabled", json_true());
        json_object_set_new(o, dtype == PLAN_BF16 ? "bf16" : "fp16", d);
    }
    json_object_set_new(o, "train_micro_batch_size_per_gpu", json_integer(k->micro_batch));
    json_object_set_new(o, "gradient_accumulation_steps", json_integer(k->grad_accum));
    json_object_set_new(z, "stage", json_integer(3));
    if (k->offload) {
        json_t *off = json_object();
        if (with_sgs)
            json_object_set_new(z, "sub_group_size", json_integer(k->sub_group_size));
        json_object_set_new(off, "device", json_string("cpu"));
        json_object_set_new(off, "pin_memory", json_true());
        json_object_set_new(off, "ratio", json_real(round(k->ratio * 1e6) / 1e6));
        json_object_set_new(z, "offload_optimizer", off);
    }
    json_object_set_new(o, "zero_optimization", z);
    return o;
}

json_t *sim_tune_run_json(const struct plan_setup *c, const struct sim_tune_run *t, const struct sim_train *train,
                          const struct sim_tune_json_text *x)
{
    const bool ds = c->popt.policy != PLAN_POLICY_EXACT;
    json_t *o = json_object();
    json_object_set_new(o, K(MODEL), json_string(c->model_desc));
    json_object_set_new(o, K(SEQ_LEN), json_integer(c->model.arch.seq_len));
    json_object_set_new(o, K(DTYPE), json_string(plan_dtype_name(c->zero.dtype)));
    json_object_set_new(o, K(DTYPE_ORIGIN), json_string(x->dtype_origin));
    json_object_set_new(o, K(HARDWARE), json_string(t->hw.name));
    json_object_set_new(o, K(GPUS_PER_NODE), json_integer(c->layout.gpus_per_node));
    json_object_set_new(o, K(GPU_MEM_BYTES), json_integer(t->hw.gpu_mem_bytes));
    json_object_set_new(o, K(HEADROOM_BYTES), json_integer(t->headroom_bytes));
    json_object_set_new(o, K(RESERVE), json_string(x->reserve_origin));
    json_object_set_new(o, K(SCHEDULE), json_string(sim_schedule_name(train->schedule)));
    json_object_set_new(o, K(POLICY), json_string(plan_policy_name(c->popt.policy)));
    json_object_set_new(o, K(ATTENTION), json_string(plan_attention_name(x->attention)));
    json_object_set_new(o, K(ATTENTION_ORIGIN), json_string(x->attention_origin));
    json_object_set_new(o, K(CANDIDATES), json_integer(t->res.ans.evaluated));
    json_object_set_new(o, K(SIMULATED), json_integer(t->res.ans.simulated));
    const struct sim_tune_best *a = &t->res.ans;
    json_object_set_new(o, K(ANSWER), a->found ? choice_json(&a->best) : json_null());
    json_object_set_new(o, K(DS_CONFIG), a->found ? sim_tune_ds_config_json(&a->best, ds, c->zero.dtype) : json_null());
    json_object_set_new(o, K(BEST_WITH_OFFLOAD), a->offload_found ? choice_json(&a->best_offload) : json_null());
    json_object_set_new(o, K(BEST_EXACT), t->res.exact.found ? choice_json(&t->res.exact.best) : json_null());
    if (ds) {
        json_t *u = json_array();
        for (int i = 0; i < t->res.n_unhonored && i < (int)(sizeof t->res.unhonored / sizeof t->res.unhonored[0]); i++)
            json_array_append_new(u, json_real(t->res.unhonored[i]));
        json_object_set_new(o, K(UNHONORED), u);
    }
    json_object_set_new(o, K(MIN_GPU_BYTES), json_integer(a->min_gpu_bytes == INT64_MAX ? 0 : a->min_gpu_bytes));
    json_object_set_new(o, K(HOST_MEM_BYTES), json_integer(t->hw.host_mem_bytes));
    json_object_set_new(o, K(CLASSES), classes_json(t));
    return o;
}

json_t *sim_tune_json(const struct plan_setup *c, const struct sim_tune_run *runs, int n, const struct sim_train *train,
                      const struct sim_tune_json_text *x)
{
    if (n == 1)
        return sim_tune_run_json(c, &runs[0], train, x);
    json_t *o = json_object(), *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, sim_tune_run_json(c, &runs[i], train, x));
    json_object_set_new(o, K(PROFILES), arr);
    return o;
}
