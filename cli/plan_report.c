/* cli/plan_report.c — a plan as JSON and as human text, shared by `plan` and `check`. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/plan_report.h"

json_t *cli_plan_json(const struct plan *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(p->model->name));
    json_object_set_new(o, "requested_ratio", json_real(p->requested_ratio));
    json_object_set_new(o, "honored_ratio", json_real(p->honored_ratio));
    json_object_set_new(o, "policy", json_string(plan_policy_name(p->policy)));
    json_object_set_new(o, "ledger", json_string(plan_ledger_name(p->ledger_kind)));
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", p->zero.ds_version.major, p->zero.ds_version.minor, p->zero.ds_version.patch);
    json_object_set_new(o, "deepspeed_version", json_string(v));
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
        json_object_set_new(j, "device", json_string(cli_subgroup_device(s)));
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

const char *cli_subgroup_device(const struct plan_subgroup *s)
{
    return s->cpu_numel == 0 ? "gpu" : s->cpu_numel == s->numel ? "cpu" : "split";
}

/* The rule as a sentence, with the numbers of this plan. */
void cli_rule_sentence(const struct plan *p, char *buf, size_t n)
{
    int N = p->n_subgroups;
    double r = p->requested_ratio;
    switch (p->policy) {
    case PLAN_POLICY_DS012:
        snprintf(buf, n, "DeepSpeed 0.12-0.17 puts sub-group i on the CPU iff i < floor(ratio x N) = floor(%g x %d) = %d",
                 r, N, (int)floor(r * N));
        break;
    case PLAN_POLICY_DS018:
        snprintf(buf, n, "DeepSpeed >= 0.18 puts sub-group i on the CPU iff i >= floor((1 - ratio) x N) = floor(%.17g x %d) = %d",
                 1.0 - r, N, (int)floor((1.0 - r) * N));
        break;
    default:
        snprintf(buf, n, "the exact policy splits at element granularity (granule %d elements)", PLAN_EXACT_GRANULE);
        break;
    }
}

int cli_honor_advice(const struct plan *p, double tol, char *buf, size_t n)
{
    if (plan_honors(p, tol)) {
        buf[0] = 0;
        return 0;
    }
    char rule[256];
    cli_rule_sentence(p, rule, sizeof rule);
    int64_t sgs = p->policy == PLAN_POLICY_EXACT ? 0 : plan_max_honoring_sub_group_size(p, tol);
    int used = snprintf(buf, n, "honored ratio %.4f differs from requested %.4f by %.1f points: %d sub-group%s "
                        "(sub_group_size %lld); %s.",
                        p->honored_ratio, p->requested_ratio, 100 * fabs(p->honored_ratio - p->requested_ratio),
                        p->n_subgroups, p->n_subgroups == 1 ? "" : "s", (long long)p->zero.sub_group_size, rule);
    if ((size_t)used >= n)
        return 1;
    if (sgs > 0) {
        double h;
        int k;
        plan_honored_for(p, sgs, p->requested_ratio, &h, &k);
        snprintf(buf + used, n - (size_t)used,
                 " Fix: sub_group_size %lld (the largest found) gives %d sub-groups and honored ratio %.4f.",
                 (long long)sgs, k, h);
    } else if (p->policy != PLAN_POLICY_EXACT) {
        double h;
        int64_t c = plan_closest_sub_group_size(p, &h);
        snprintf(buf + used, n - (size_t)used,
                 " No sub_group_size honors it within %.1f points: the rule counts sub-groups, not elements, and "
                 "tensors are never split; the closest is sub_group_size %lld (honored %.4f), or use a ratio "
                 "the sub-groups allow.", 100 * tol, (long long)c, h);
    }
    return 1;
}
