/* plan/ds_rules.c — the table of DeepSpeed releases (see ds_rules.h) and its look-ups.
 *
 * Every row was read in DeepSpeed's git history (deepspeedai/DeepSpeed): the commit named in
 * `change` is the first one with the new behaviour, and `git tag --contains <commit>` gives the
 * row's `from` as its oldest release tag. docs/deepspeed-step.md section 4 says where each change is
 * in DeepSpeed's source (file, line, release). */
#include <stdio.h>
#include <string.h>

#include "plan/ds_rules.h"

#define V(a, b, c) ((struct rl_version){a, b, c})
#define HOST_CAST PLAN_DS_GRAD_HOST_CAST
#define HOST_CAST_SYNCED PLAN_DS_GRAD_HOST_CAST_SYNCED
#define GPU_UPCAST PLAN_DS_GRAD_GPU_UPCAST
#define GPU_UPCAST_ASYNC PLAN_DS_GRAD_GPU_UPCAST_ASYNC
#define DS012 PLAN_POLICY_DS012
#define DS018 PLAN_POLICY_DS018
#define L012 PLAN_LEDGER_DS012
#define L013 PLAN_LEDGER_DS013

/* Columns: from, change, policy, ledger, cpu_adam_tiles, norm_sync_per_param, adam_stream_sync,
 * grad_copy, ratio_check_asserts, logs_stages, offload_pin_default.
 *
 * offload_param "cpu" (ZeRO-Infinity) was read at every row's release and at 0.12.4, 0.14.4,
 * 0.16.4, 0.17.6, 0.18.0 and 0.19.5 (plan/README.md "offload_param, release by release"): the
 * pinned flat host buffer of the 16-bit partitions (stage3.py
 * _create_param_groups_fp16_flat_cpu_memory), the blocking `ds_tensor.to(device)` before each
 * all-gather (partition_parameters.py), the optimizer's write-back
 * (_reassign_or_swap_out_partitioned_parameters) and the prefetch (partitioned_param_coordinator.py)
 * are the same code in all of them; only pin_memory's default changes (0.19.5). */
const struct plan_ds_rules plan_ds_rules_table[] = {
    {V(0, 12, 3), "partial offload: offload_optimizer.ratio, sub-group i on the CPU iff i < floor(ratio x N) "
                  "(#4636, b1cb0dfc4)",
     DS012, L012, true, true, true, HOST_CAST, false, true, false},
    {V(0, 13, 0), "the norm loop no longer syncs the host per parameter (#4436, ea0d81143)",
     DS012, L012, true, false, true, HOST_CAST, false, true, false},
    {V(0, 13, 2), "no zero-gradient optimizer step at init: Adam states appear at the first step "
                  "(#5104, 18179807f)",
     DS012, L013, true, false, true, HOST_CAST, false, true, false},
    {V(0, 14, 3), "CPU Adam rewritten: no pinned tile buffers, no stream synchronize (#5409, 69af36116)",
     DS012, L013, false, false, false, HOST_CAST, false, true, false},
    {V(0, 15, 0), "pydantic v2: offload_ratio_check fires, a ratio with stage < 3 asserts (#5167, 0a4457cc4)",
     DS012, L013, false, false, false, HOST_CAST, true, true, false},
    {V(0, 15, 4), "CPU gradients upcast on the GPU and staged through a pinned buffer (fp32 D2H), a device "
                  "synchronize and a host copy per parameter (#6670, ff1c54351)",
     DS012, L013, false, false, false, HOST_CAST_SYNCED, true, true, false},
    {V(0, 16, 3), "explicit GPU upcast, blocking D2H of fp32 gradients (#6962, c17dc33c0)",
     DS012, L013, false, false, false, GPU_UPCAST, true, true, false},
    {V(0, 18, 0), "placement flips: sub-group i on the CPU iff i >= floor((1 - ratio) x N) "
                  "(#7559, af56ed4d3, the SuperOffload release)",
     DS018, L013, false, false, false, GPU_UPCAST, true, true, false},
    {V(0, 18, 8), "see_memory_usage(force=False): the allocation stages are no longer logged "
                  "(#7891, 285cae30f)",
     DS018, L013, false, false, false, GPU_UPCAST, true, false, false},
    {V(0, 19, 5), "the fp32 gradient D2H is non-blocking; offload_param and offload_optimizer pin_memory "
                  "default to true (#8207, 7dfa67aea)",
     DS018, L013, false, false, false, GPU_UPCAST_ASYNC, true, false, true},
};
const int plan_ds_rules_count = (int)RL_COUNT(plan_ds_rules_table);

const struct plan_ds_rules *plan_ds_rules_for(struct rl_version v)
{
    const struct plan_ds_rules *r = &plan_ds_rules_table[0];
    for (int i = 1; i < plan_ds_rules_count; i++)
        if (rl_version_cmp(v, plan_ds_rules_table[i].from) >= 0)
            r = &plan_ds_rules_table[i];
    return r;
}

struct rl_version plan_ds_first_version(void) { return plan_ds_rules_table[0].from; }

int plan_ds_version_check(struct rl_version v, struct rl_err *e)
{
    struct rl_version f = plan_ds_first_version();
    if (rl_version_cmp(v, f) >= 0)
        return 0;
    return rl_errf(e, RL_EINVAL,
                   "deepspeed_version: %s has no offload_optimizer.ratio (partial offload "
                   "arrived in %s); allowed: %s or later", RL_VERSION_S(v), RL_VERSION_S(f), RL_VERSION_S(f));
}

/* Appends to buf (capacity n, used *o) with snprintf's truncation. */
static void put(char *buf, size_t n, size_t *o, const char *s)
{
    int w = snprintf(buf + *o, n - *o, "%s", s);
    if (w > 0)
        *o = *o + (size_t)w < n ? *o + (size_t)w : n - 1;
}

/* One contiguous range of rows [i, end) as text: full versions, or release lines (`lines`). */
static void range_text(int i, int end, bool lines, char *t, size_t n)
{
    const struct rl_version a = plan_ds_rules_table[i].from;
    if (lines && end == plan_ds_rules_count) {
        snprintf(t, n, ">= %d.%d", a.major, a.minor);
    } else if (end == plan_ds_rules_count) {
        snprintf(t, n, ">= %s", RL_VERSION_S(a));
    } else {
        const struct rl_version b = plan_ds_rules_table[end].from;
        if (!lines)
            snprintf(t, n, ">= %s, < %s", RL_VERSION_S(a), RL_VERSION_S(b));
        else if (b.patch == 0 && b.minor > 0)
            snprintf(t, n, "%d.%d-%d.%d", a.major, a.minor, b.major, b.minor - 1);
        else
            snprintf(t, n, "%d.%d-<%s", a.major, a.minor, RL_VERSION_S(b));
    }
}

static void rows_text(plan_ds_rows_fn *holds, bool lines, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < plan_ds_rules_count; i++) {
        if (!holds(&plan_ds_rules_table[i]) || (i > 0 && holds(&plan_ds_rules_table[i - 1])))
            continue;
        int end = i;
        while (end < plan_ds_rules_count && holds(&plan_ds_rules_table[end]))
            end++;
        char t[64];
        range_text(i, end, lines, t, sizeof t);
        if (o)
            put(buf, n, &o, "; ");
        put(buf, n, &o, t);
    }
    if (!o)
        snprintf(buf, n, "none");
}

void plan_ds_rows_versions(plan_ds_rows_fn *holds, char *buf, size_t n) { rows_text(holds, false, buf, n); }
void plan_ds_rows_lines(plan_ds_rows_fn *holds, char *buf, size_t n) { rows_text(holds, true, buf, n); }

void plan_ds_changes_text(char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 1; i < plan_ds_rules_count; i++) {
        const struct rl_version v = plan_ds_rules_table[i].from;
        char t[RL_VERSION_STR_MAX + 2];
        snprintf(t, sizeof t, "%s%s", i > 1 ? ", " : "", RL_VERSION_S(v));
        put(buf, n, &o, t);
    }
}
