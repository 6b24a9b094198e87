/* sim/step_json.c — a prediction as JSON (step_json.h). */
#include "sim/step_json.h"

json_t *sim_step_result_json(const struct sim_step_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "step_ns", json_integer(r->step_ns));
    json_object_set_new(o, "critical_rank", json_integer(r->critical_rank));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(r->tokens_per_s));
    json_t *ph = json_object();
    for (int i = 0; i < STEP_PH_COUNT; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "busy_ns", json_integer(r->phase[i].busy_ns));
        json_object_set_new(x, "exposed_ns", json_integer(r->phase[i].exposed_ns));
        json_object_set_new(x, "overlapped_ns", json_integer(r->phase[i].busy_ns - r->phase[i].exposed_ns));
        json_object_set_new(ph, sim_phase_name(i), x);
    }
    json_object_set_new(o, "phases", ph);
    json_object_set_new(o, "idle_ns", json_integer(r->idle_ns));
    json_t *wd = json_object();
    json_object_set_new(wd, "forward_ns", json_integer(r->window_forward_ns));
    json_object_set_new(wd, "backward_ns", json_integer(r->window_backward_ns));
    json_object_set_new(wd, "step_ns", json_integer(r->window_step_ns));
    json_object_set_new(o, "windows", wd);
    json_t *m = json_object();
    json_object_set_new(m, "ledger_bytes", json_integer(r->gpu_ledger_bytes));
    json_object_set_new(m, "activation_bytes", json_integer(r->gpu_activation_bytes));
    json_object_set_new(m, "live_param_bytes", json_integer(r->gpu_live_param_bytes));
    json_object_set_new(m, "allocated_bytes", json_integer(r->gpu_allocated_bytes));
    json_object_set_new(m, "reserve_bytes", json_integer(r->gpu_reserve_bytes));
    json_object_set_new(m, "cuda_context_bytes", json_integer(r->gpu_context_bytes));
    json_object_set_new(m, "nccl_bytes", json_integer(r->gpu_nccl_bytes));
    json_object_set_new(m, "nccl_communicators", json_integer(r->nccl_communicators));
    json_object_set_new(m, "allocator_bytes", json_integer(r->gpu_allocator_bytes));
    json_object_set_new(m, "total_bytes", json_integer(r->gpu_total_bytes));
    json_object_set_new(m, "capacity_bytes", json_integer(r->gpu_capacity_bytes));
    json_object_set_new(m, "fits", json_boolean(r->fits_gpu));
    json_object_set_new(o, "gpu_memory_per_rank", m);
    json_t *h = json_object();
    json_object_set_new(h, "rank_bytes", json_integer(r->host_rank_bytes));
    json_object_set_new(h, "node_bytes", json_integer(r->host_node_bytes));
    json_object_set_new(h, "capacity_bytes", json_integer(r->host_capacity_bytes));
    json_object_set_new(h, "fits", json_boolean(r->fits_host));
    json_object_set_new(o, "host_memory", h);
    json_object_set_new(o, "micro_batch", json_integer(r->micro_batch));
    json_object_set_new(o, "seq_len", json_integer(r->seq_len));
    json_object_set_new(o, "grad_accum", json_integer(r->grad_accum));
    json_object_set_new(o, "attention", json_string(plan_attention_name(r->attention)));
    json_object_set_new(o, "simulated_micro_steps", json_integer(r->simulated_micro_steps));
    json_t *ids = json_array();
    for (int g = 0; g < r->ranks; g++)
        json_array_append_new(ids, json_integer(r->gpu_ids[g]));
    json_object_set_new(o, "gpu_ids", ids);
    json_object_set_new(o, "sockets_used", json_integer(r->sockets_used));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "tasks", json_integer(r->tasks));
    return o;
}
