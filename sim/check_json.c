/* sim/check_json.c — `ratiolab check`'s overall verdict, and `check --json`: the verdict and the
 * hazards as one object (see check_json.h). */
#include "sim/check_json.h"

#include "plan/plan.h"

bool sim_check_passed(const struct sim_check_report *r)
{
    return r->v->ratio_ok && r->v->memory_ok && r->hz->n_fail == 0;
}

json_t *sim_check_json(const struct sim_check_report *r)
{
    const struct plan_setup *c = r->setup;
    const struct sim_check_verdict *v = r->v;
    const struct sim_check_request *q = r->q;
    json_t *o = json_object();
    json_object_set_new(o, "ok", json_boolean(sim_check_passed(r)));
    json_object_set_new(o, "hazards", plan_hazards_json(r->hz, r->written, r->strict));
    json_object_set_new(o, "model", json_string(c->model.name));
    json_object_set_new(o, "policy", json_string(plan_policy_name(c->popt.policy)));
    json_object_set_new(o, "ratio_ok", json_boolean(v->ratio_ok));
    json_object_set_new(o, RL_KEY_REQUESTED_RATIO, json_real(v->requested));
    json_object_set_new(o, RL_KEY_HONORED_RATIO, json_real(v->honored));
    if (c->n_more > 0) {
        json_t *vs = json_array();
        for (int i = -1; i < c->n_more; i++) {
            json_t *x = json_object();
            struct rl_version ver = i < 0 ? c->zero.ds_version : c->more_versions[i];
            json_object_set_new(x, "deepspeed_version", json_string(RL_VERSION_S(ver)));
            json_object_set_new(x, "policy", json_string(plan_policy_name(i < 0 ? c->popt.policy : c->more_policies[i])));
            json_object_set_new(x, RL_KEY_HONORED_RATIO, json_real(i < 0 ? v->honored : v->more_honored[i]));
            json_object_set_new(x, "ratio_ok", json_boolean(v->version_ok[1 + i]));
            if (v->fix_sgs > 0 && !v->ratio_ok)
                json_object_set_new(x, "fix_" RL_KEY_HONORED_RATIO, json_real(v->fix_honored[1 + i]));
            json_array_append_new(vs, x);
        }
        json_object_set_new(o, "versions", vs);
    }
    json_object_set_new(o, "tolerance", json_real(q->tol));
    json_object_set_new(o, "num_subgroups", json_integer(v->n_subgroups));
    json_object_set_new(o, "sub_group_size", json_integer(v->sub_group_size));
    json_object_set_new(o, "memory_checked", json_boolean(q->gpu_mem_bytes > 0));
    json_object_set_new(o, "memory_ok", json_boolean(v->memory_ok));
    json_object_set_new(o, "dtype", json_string(plan_dtype_name(c->zero.dtype)));
    json_object_set_new(o, "dtype_source", json_string(r->dtype_source));
    json_object_set_new(o, "gpu_bytes", json_integer(v->gpu_bytes));
    json_object_set_new(o, "gpu_bytes_counts", json_string(q->states_only || !q->gpu_mem_bytes ? "model states" : "model states, activations, gathered parameters, context/NCCL/allocator"));
    if (q->gpu_mem_bytes && !q->states_only) {
        json_object_set_new(o, "model_states_bytes", json_integer(v->mem.gpu_ledger_bytes));
        json_object_set_new(o, "activation_bytes", json_integer(v->mem.gpu_activation_bytes));
        json_object_set_new(o, "attention", json_string(plan_attention_name(v->mem.attention)));
        json_object_set_new(o, "live_param_bytes", json_integer(v->mem.gpu_live_param_bytes));
        json_object_set_new(o, "reserve_bytes", json_integer(v->mem.gpu_reserve_bytes));
    }
    if (q->gpu_mem_bytes)
        json_object_set_new(o, "gpu_mem_bytes", json_integer(q->gpu_mem_bytes));
    json_t *fix = json_object();
    if (v->fix_sgs > 0)
        json_object_set_new(fix, "sub_group_size", json_integer(v->fix_sgs));
    if (v->fix_ratio >= 0) {
        json_object_set_new(fix, "ratio", json_real(v->fix_ratio));
        json_object_set_new(fix, "gpu_bytes", json_integer(v->fix_gpu_bytes));
    }
    if ((!v->ratio_ok && v->fix_sgs_none) || (!v->memory_ok && !v->fix_fits))
        json_object_set_new(fix, "possible", json_false());
    json_object_set_new(o, "fix", fix);
    return o;
}
