/* plan/plan_json.c — a plan as JSON (plan_json.h). */
#include <stdio.h>

#include "plan/plan_json.h"

void plan_json_ratio(json_t *o, const struct plan *p)
{
    json_object_set_new(o, RL_KEY_REQUESTED_RATIO, json_real(p->requested_ratio));
    json_object_set_new(o, RL_KEY_HONORED_RATIO, json_real(p->honored_ratio));
}

json_t *plan_json(const struct plan *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(p->model->name));
    plan_json_ratio(o, p);
    json_object_set_new(o, "policy", json_string(plan_policy_name(p->policy)));
    json_object_set_new(o, "ledger", json_string(plan_ledger_name(p->ledger_kind)));
    json_object_set_new(o, "deepspeed_version", json_string(RL_VERSION_S(p->zero.ds_version)));
    json_object_set_new(o, "sub_group_size", json_integer(p->zero.sub_group_size));
    json_object_set_new(o, "num_subgroups", json_integer(p->n_subgroups));
    json_object_set_new(o, "cpu_subgroups", json_integer(p->cpu_subgroups));
    json_object_set_new(o, "num_param_groups", json_integer(p->n_groups));
    json_object_set_new(o, "per_rank_numel", json_integer(p->per_rank_numel));
    json_object_set_new(o, "cpu_numel", json_integer(p->cpu_numel));
    json_object_set_new(o, "gpu_numel", json_integer(p->gpu_numel));
    json_t *lay = json_object();
    json_object_set_new(lay, "world", json_integer(p->layout.world));
    json_object_set_new(lay, "tp", json_integer(p->layout.tp));
    json_object_set_new(lay, "pp", json_integer(p->layout.pp));
    json_object_set_new(lay, "dp", json_integer(p->layout.dp));
    json_object_set_new(lay, "nodes", json_integer(p->layout.nodes));
    json_object_set_new(lay, "gpus_per_node", json_integer(p->layout.gpus_per_node));
    json_object_set_new(o, "layout", lay);
    json_t *sgs = json_array();
    for (int i = 0; i < p->n_subgroups; i++) {
        const struct plan_subgroup *s = &p->subgroups[i];
        json_t *j = json_object();
        json_object_set_new(j, "index", json_integer(s->index));
        json_object_set_new(j, "group", json_integer(s->group));
        json_object_set_new(j, "numel", json_integer(s->numel));
        json_object_set_new(j, "cpu_numel", json_integer(s->cpu_numel));
        json_object_set_new(j, "tensors", json_integer(s->n_tensors));
        json_object_set_new(j, "device", json_string(plan_subgroup_device(s)));
        json_array_append_new(sgs, j);
    }
    json_object_set_new(o, "subgroups", sgs);
    json_t *st = json_array();
    for (int s = 0; s < PLAN_STAGE_COUNT; s++) {
        json_t *j = json_object();
        json_object_set_new(j, "name", json_string(plan_stage_name((enum plan_stage)s)));
        json_object_set_new(j, "gpu_bytes", json_integer(p->stages[s].gpu_bytes));
        json_object_set_new(j, "cpu_bytes", json_integer(p->stages[s].cpu_bytes));
        json_object_set_new(j, "cpu_pinned_bytes", json_integer(p->stages[s].cpu_pinned_bytes));
        json_array_append_new(st, j);
    }
    json_object_set_new(o, "stages", st);
    json_t *bufs = json_array();
    for (int i = 0; i < p->n_buffers; i++) {
        const struct plan_buffer *b = &p->buffers[i];
        json_t *j = json_object();
        json_object_set_new(j, "name", json_string(b->name));
        json_object_set_new(j, "device", json_string(plan_device_name(b->device)));
        json_object_set_new(j, "dtype", json_string(plan_dtype_name(b->dtype)));
        json_object_set_new(j, "numel", json_integer(b->numel));
        json_object_set_new(j, "bytes", json_integer(b->bytes));
        json_object_set_new(j, "stage", json_string(plan_stage_name(b->stage)));
        json_array_append_new(bufs, j);
    }
    json_object_set_new(o, "buffers", bufs);
    return o;
}

const char *plan_subgroup_device(const struct plan_subgroup *s)
{
    return s->cpu_numel == 0 ? "gpu" : s->cpu_numel == s->numel ? "cpu" : "split";
}
