/* validation/probe.c — a ratiolab-probe document against the plan (see probe.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validation/probe.h"

/* ---- reading --------------------------------------------------------------------------------- */

/* The member at a dotted path ("memory.device_after_init_bytes"), NULL when any part is absent. */
static json_t *at(json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *part = buf, *dot; o && part; part = dot ? dot + 1 : NULL) {
        dot = strchr(part, '.');
        if (dot)
            *dot = 0;
        o = json_is_object(o) ? json_object_get(o, part) : NULL;
    }
    return o;
}

/* An integer at path into *v (-1 when absent or null); a present value that is not an integer in
 * 0..max (a real with no fraction is accepted) is RL_EINVAL naming the JSON path: `where` (the
 * object's own path, "" at the root) joined with path, e.g. "steps[3].wall_ns". Every number of a
 * probe is bounded here, where it is read, so the sums and differences the checks take of them
 * stay far inside int64 (the sums are checked on top: see sum_i64). */
static int get_i64(json_t *root, const char *where, const char *path, int64_t max, const char *file, int64_t *v,
                   struct rl_err *e)
{
    json_t *x = at(root, path);
    *v = -1;
    if (!x || json_is_null(x))
        return 0;
    double d = json_is_integer(x) ? (double)json_integer_value(x) : json_is_real(x) ? json_real_value(x) : NAN;
    if (json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= max) {
        *v = (int64_t)json_integer_value(x);
        return 0;
    }
    if (json_is_real(x) && d >= 0 && d <= (double)max && d == floor(d)) {
        *v = (int64_t)d;
        return 0;
    }
    char shown[48];
    if (json_is_integer(x))
        snprintf(shown, sizeof shown, "%lld", (long long)json_integer_value(x));
    else if (json_is_real(x))
        snprintf(shown, sizeof shown, "%.17g", d);
    else
        snprintf(shown, sizeof shown, "%s", json_is_string(x) ? "a string" : json_is_boolean(x) ? "a boolean"
                                            : json_is_array(x) ? "an array" : "an object");
    return rl_errf(e, RL_EINVAL, "%s: %s%s%s: %s; allowed: an integer 0..%lld or null", file, where, where[0] ? "." : "",
                   path, shown, (long long)max);
}

/* *acc += v, or RL_EINVAL naming what was summed when the sum leaves int64 (the bounds of get_i64
 * keep one value small, not a sum over a million sub-groups or steps). */
static int sum_i64(int64_t *acc, int64_t v, const char *file, const char *what, struct rl_err *e)
{
    if (__builtin_add_overflow(*acc, v, acc))
        return rl_errf(e, RL_EINVAL, "%s: %s: the sum passes 2^63; allowed: totals below 2^63", file, what);
    return 0;
}

/* A string at path copied into buf (size n; "" when absent or null); anything else is RL_EINVAL. */
static int get_str(json_t *root, const char *path, const char *file, char *buf, size_t n, struct rl_err *e)
{
    json_t *x = at(root, path);
    buf[0] = 0;
    if (!x || json_is_null(x))
        return 0;
    if (!json_is_string(x))
        return rl_errf(e, RL_EINVAL, "%s: %s: not a string", file, path);
    snprintf(buf, n, "%s", json_string_value(x));
    return 0;
}

/* DeepSpeed's device enum dumps as "cpu", or as "OffloadDeviceEnum.cpu" when str() of the enum. */
static void device_name(const char *s, char *out, size_t n)
{
    const char *dot = strrchr(s, '.');
    snprintf(out, n, "%s", dot ? dot + 1 : s);
}

static int read_zero(json_t *root, const char *file, struct trace_ds_config *c, struct rl_err *e)
{
    json_t *z = at(root, "zero");
    if (!json_is_object(z))
        return rl_errf(e, RL_EINVAL, "%s: zero: missing or not an object (the engine's zero_config)", file);
    c->have_zero = true;
    int64_t v;
    int rc;
    if ((rc = get_i64(z, "zero", "stage", VAL_PROBE_MAX_COUNT, file, &v, e)))
        return rc;
    /* Sub-groups, the CPU optimizer's split and the ledger are ZeRO-3's: a probe of another stage
     * has nothing the checks could compare, and would otherwise pass them vacuously. */
    if (v < 0)
        return rl_errf(e, RL_EINVAL, "%s: zero.stage: missing; allowed: 3 (ratiolab plans ZeRO stage 3)", file);
    if (v != 3)
        return rl_errf(e, RL_EINVAL, "%s: zero.stage: %lld; allowed: 3 (ratiolab plans ZeRO stage 3)", file,
                       (long long)v);
    c->stage = 3;
    if ((rc = get_i64(z, "zero", "sub_group_size", VAL_PROBE_MAX_NUMEL, file, &c->sub_group_size, e)) ||
        (rc = get_i64(z, "zero", "reduce_bucket_size", VAL_PROBE_MAX_NUMEL, file, &c->reduce_bucket_size, e)) ||
        (rc = get_i64(z, "zero", "stage3_prefetch_bucket_size", VAL_PROBE_MAX_NUMEL, file, &c->prefetch_bucket_size,
                      e)))
        return rc;
    if (c->prefetch_bucket_size < 0 &&
        (rc = get_i64(z, "zero", "prefetch_bucket_size", VAL_PROBE_MAX_NUMEL, file, &c->prefetch_bucket_size, e)))
        return rc;
    json_t *off = json_object_get(z, "offload_optimizer");
    if (!off || json_is_null(off)) {
        snprintf(c->offload_device, sizeof c->offload_device, "none");
        return 0;
    }
    if (!json_is_object(off))
        return rl_errf(e, RL_EINVAL, "%s: zero.offload_optimizer: not an object or null", file);
    char dev[32];
    if ((rc = get_str(off, "device", file, dev, sizeof dev, e)))
        return rc;
    device_name(dev, c->offload_device, sizeof c->offload_device);
    json_t *r = json_object_get(off, "ratio");
    if (r && !json_is_null(r)) {
        if (!json_is_number(r) || !(json_number_value(r) >= 0 && json_number_value(r) <= 1))
            return rl_errf(e, RL_EINVAL, "%s: zero.offload_optimizer.ratio: not a number in [0, 1]", file);
        c->have_ratio = true;
        c->ratio = json_number_value(r);
    }
    json_t *pm = json_object_get(off, "pin_memory");
    c->pin_memory = json_is_boolean(pm) ? json_is_true(pm) : -1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* steps[i].timers_ms (optional): each timer's milliseconds in that step, into vals[t * n + i]
 * (NAN where the step has none). */
static int read_step_timers(json_t *step, size_t i, size_t n, const char *file, struct val_probe *p, double *vals,
                            struct rl_err *e)
{
    json_t *tm = json_object_get(step, "timers_ms");
    if (!tm || json_is_null(tm))
        return 0;
    if (!json_is_object(tm))
        return rl_errf(e, RL_EINVAL, "%s: steps[%zu].timers_ms: not an object (timer name -> milliseconds)", file, i);
    const char *k;
    json_t *v;
    json_object_foreach(tm, k, v) {
        if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
            !(json_number_value(v) <= (double)VAL_PROBE_MAX_STEP_NS * 1e-6))
            return rl_errf(e, RL_EINVAL, "%s: steps[%zu].timers_ms.%.60s: not a number of milliseconds in 0..%.0f (a "
                           "day)", file, i, k, (double)VAL_PROBE_MAX_STEP_NS * 1e-6);
        int t = 0;
        while (t < p->n_timers && strncmp(p->timers[t].name, k, sizeof p->timers[t].name - 1) != 0)
            t++;
        if (t == p->n_timers) {
            if (t == VAL_PROBE_TIMERS)
                continue;
            snprintf(p->timers[t].name, sizeof p->timers[t].name, "%s", k);
            for (size_t j = 0; j < n; j++)
                vals[(size_t)t * n + j] = NAN;
            p->n_timers++;
        }
        if (isnan(vals[(size_t)t * n + i]))
            p->timers[t].n++;
        vals[(size_t)t * n + i] = json_number_value(v);
    }
    return 0;
}

static void timer_medians(struct val_probe *p, size_t n, double *vals)
{
    for (int t = 0; t < p->n_timers; t++) {
        double *x = vals + (size_t)t * n;
        size_t m = 0;
        for (size_t j = n > 1 ? 1 : 0; j < n; j++)   /* the first step holds warm-up */
            if (!isnan(x[j]))
                x[m++] = x[j];
        if (m == 0 && !isnan(x[0]))   /* recorded in the first step only */
            x[m++] = x[0];
        qsort(x, m, sizeof *x, cmp_double);
        p->timers[t].median_ms = m == 0 ? NAN : m % 2 ? x[m / 2] : (x[m / 2 - 1] + x[m / 2]) / 2;
    }
}

static int read_steps(json_t *root, const char *file, struct val_probe *p, struct rl_err *e)
{
    json_t *steps = at(root, "steps");
    p->step_median_ns = -1;
    if (!steps || json_is_null(steps))
        return 0;
    if (!json_is_array(steps))
        return rl_errf(e, RL_EINVAL, "%s: steps: not an array", file);
    size_t n = json_array_size(steps);
    int64_t *w = calloc(n ? n : 1, sizeof *w);
    double *tv = calloc((size_t)VAL_PROBE_TIMERS * (n ? n : 1), sizeof *tv);
    if (!w || !tv) {
        free(w);
        free(tv);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", file);
    }
    for (size_t i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof where, "steps[%zu]", i);
        int64_t v, pk;
        int rc = get_i64(json_array_get(steps, i), where, "wall_ns", VAL_PROBE_MAX_STEP_NS, file, &v, e);
        if (!rc)
            rc = get_i64(json_array_get(steps, i), where, "device_peak_bytes", VAL_PROBE_MAX_BYTES, file, &pk, e);
        if (!rc && v < 0)
            rc = rl_errf(e, RL_EINVAL, "%s: %s.wall_ns: missing", file, where);
        if (!rc)
            rc = read_step_timers(json_array_get(steps, i), i, n, file, p, tv, e);
        if (!rc)
            rc = sum_i64(&p->step_total_ns, v, file, "steps[].wall_ns", e);
        if (rc) {
            free(w);
            free(tv);
            return rc;
        }
        w[i] = v;
        if (pk > p->device_peak_bytes)
            p->device_peak_bytes = pk;
    }
    p->n_steps = (int)n;
    if (n == 1) {
        p->step_median_ns = w[0];
    } else if (n > 1) {   /* the first step holds warm-up (allocation, the JIT) */
        qsort(w + 1, n - 1, sizeof *w, cmp_i64);
        size_t m = n - 1;
        p->step_median_ns = m % 2 ? w[1 + m / 2] : (w[m / 2] + w[1 + m / 2]) / 2;
    }
    timer_medians(p, n, tv);
    free(w);
    free(tv);
    return 0;
}

static int read_subgroups(json_t *root, const char *file, struct val_probe *p, struct rl_err *e)
{
    json_t *subs = at(root, "placement.subgroups");
    if (!json_is_array(subs) || json_array_size(subs) == 0)
        return rl_errf(e, RL_EINVAL, "%s: placement.subgroups: missing or empty (the probe writes it after "
                       "the first step: run at least one step)", file);
    size_t n = json_array_size(subs);
    if (n > 1000000)
        return rl_errf(e, RL_EINVAL, "%s: placement.subgroups: %zu entries; allowed at most 1000000", file, n);
    p->sub = calloc(n, sizeof *p->sub);
    if (!p->sub)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", file);
    p->n_sub = (int)n;
    /* The checks sum these over the sub-groups (and over each side's subset): the totals are
     * taken here once, with overflow checks, so no sum there can overflow. */
    int64_t total[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(subs, i);
        struct val_probe_subgroup *g = &p->sub[i];
        char where[64];
        snprintf(where, sizeof where, "placement.subgroups[%zu]", i);
        if (!json_is_object(s))
            return rl_errf(e, RL_EINVAL, "%s: %s: not an object", file, where);
        int64_t idx, grp;
        int rc;
        if ((rc = get_i64(s, where, "index", VAL_PROBE_MAX_COUNT, file, &idx, e)) ||
            (rc = get_i64(s, where, "param_group", VAL_PROBE_MAX_COUNT, file, &grp, e)) ||
            (rc = get_i64(s, where, "numel", VAL_PROBE_MAX_NUMEL, file, &g->numel, e)) ||
            (rc = get_i64(s, where, "fp32_bytes", VAL_PROBE_MAX_BYTES, file, &g->fp32_bytes, e)) ||
            (rc = get_i64(s, where, "state_bytes", VAL_PROBE_MAX_BYTES, file, &g->state_bytes, e)) ||
            (rc = get_i64(s, where, "model_partition_bytes", VAL_PROBE_MAX_BYTES, file, &g->model_partition_bytes, e)))
            return rc;
        if ((rc = get_str(s, "assigned_device", file, g->assigned_device, sizeof g->assigned_device, e)) ||
            (rc = get_str(s, "fp32_device", file, g->fp32_device, sizeof g->fp32_device, e)) ||
            (rc = get_str(s, "optimizer", file, g->optimizer, sizeof g->optimizer, e)) ||
            (rc = get_str(s, "optimizer_class", file, g->optimizer_class, sizeof g->optimizer_class, e)))
            return rl_err_prefix(e, "%s", where);
        const int64_t add[4] = {g->numel, g->fp32_bytes, g->state_bytes, g->model_partition_bytes};
        static const char *const names[4] = {"placement.subgroups[].numel", "placement.subgroups[].fp32_bytes",
                                             "placement.subgroups[].state_bytes",
                                             "placement.subgroups[].model_partition_bytes"};
        for (int k = 0; k < 4; k++)
            if (add[k] > 0 && (rc = sum_i64(&total[k], add[k], file, names[k], e)))
                return rc;
        if (idx != (int64_t)i || g->numel < 0 || grp < 0 || grp >= PLAN_MAX_GROUPS)
            return rl_errf(e, RL_EINVAL, "%s: %s: index %lld, param_group %lld, numel %lld; allowed: index %zu, "
                           "param_group 0..%d, numel >= 0", file, where, (long long)idx, (long long)grp,
                           (long long)g->numel, i, PLAN_MAX_GROUPS - 1);
        g->index = (int)idx;
        g->param_group = (int)grp;
    }
    return 0;
}

/* param_groups[] (each `index`, `parameters`, `numel`, `lr`, `weight_decay`) into p->groups and
 * p->group; absent or null leaves n_groups 0. Groups must come in index order 0, 1, ... */
static int read_param_groups(json_t *root, const char *file, struct val_probe *p, struct rl_err *e)
{
    json_t *arr = at(root, "param_groups");
    char src[160];
    snprintf(src, sizeof src, "--probe %s", file);
    plan_group_spec_init(&p->groups, src);
    p->groups.ordered = true;   /* the probe lists each group's names in DeepSpeed's packing order */
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > PLAN_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "%s: param_groups: not an array of at most %d groups", file, PLAN_MAX_GROUPS);
    for (size_t g = 0; g < json_array_size(arr); g++) {
        json_t *o = json_array_get(arr, g);
        char where[40];
        snprintf(where, sizeof where, "param_groups[%zu]", g);
        int64_t idx, numel;
        int rc;
        if (!json_is_object(o))
            return rl_errf(e, RL_EINVAL, "%s: %s: not an object", file, where);
        if ((rc = get_i64(o, where, "index", VAL_PROBE_MAX_COUNT, file, &idx, e)) ||
            (rc = get_i64(o, where, "numel", VAL_PROBE_MAX_NUMEL, file, &numel, e)))
            return rc;
        if (idx != (int64_t)g)
            return rl_errf(e, RL_EINVAL, "%s: %s.index: %lld; allowed: %zu (the groups in order)", file, where,
                           (long long)idx, g);
        json_t *names = json_object_get(o, "parameters");
        if (!json_is_array(names) || json_array_size(names) == 0)
            return rl_errf(e, RL_EINVAL, "%s: %s.parameters: not a non-empty array of names", file, where);
        for (size_t k = 0; k < json_array_size(names); k++) {
            json_t *n = json_array_get(names, k);
            if (!json_is_string(n))
                return rl_errf(e, RL_EINVAL, "%s: %s.parameters[%zu]: not a string", file, where, k);
            if ((rc = plan_group_spec_add_name(&p->groups, (int)g, json_string_value(n), e)))
                return rl_err_prefix(e, "%s: %s.parameters[%zu]", file, where, k);
        }
        json_t *lr = json_object_get(o, "lr"), *wd = json_object_get(o, "weight_decay");
        p->group[g] = (struct val_probe_group){
            .numel = numel, .n_params = (int)json_array_size(names),
            .lr = json_is_number(lr) ? json_number_value(lr) : NAN,
            .weight_decay = json_is_number(wd) ? json_number_value(wd) : NAN};
    }
    return 0;
}

/* gradient_accumulation_steps, micro_batch_size, micro_steps and optimizer_steps (absent in older
 * files: accumulation 1, the rest unknown). */
static int read_accumulation(json_t *root, const char *file, struct val_probe *p, struct rl_err *e)
{
    int64_t v;
    int rc;
    if ((rc = get_i64(root, "", "gradient_accumulation_steps", VAL_PROBE_MAX_COUNT, file, &v, e)))
        return rc;
    if (v == 0)
        return rl_errf(e, RL_EINVAL, "%s: gradient_accumulation_steps: 0; allowed: 1..%d or null", file,
                       VAL_PROBE_MAX_COUNT);
    p->grad_accum = v > 0 ? (int)v : 1;
    if ((rc = get_i64(root, "", "micro_batch_size", VAL_PROBE_MAX_COUNT, file, &p->micro_batch, e)) ||
        (rc = get_i64(root, "", "micro_steps", VAL_PROBE_MAX_TOTAL_NS, file, &p->micro_steps, e)) ||
        (rc = get_i64(root, "", "optimizer_steps", VAL_PROBE_MAX_TOTAL_NS, file, &p->optimizer_steps, e)))
        return rc;
    if (p->micro_steps >= 0 && p->optimizer_steps >= 0 &&
        (p->optimizer_steps > p->micro_steps || p->micro_steps / p->grad_accum < p->optimizer_steps))
        return rl_errf(e, RL_EINVAL, "%s: micro_steps %lld, optimizer_steps %lld: a run with gradient_accumulation_steps "
                       "%d takes %d micro-steps per optimizer step", file, (long long)p->micro_steps,
                       (long long)p->optimizer_steps, p->grad_accum, p->grad_accum);
    return 0;
}

int val_probe_parse(const char *text, size_t len, const char *path, struct val_probe *p, struct rl_err *e)
{
    memset(p, 0, sizeof *p);
    p->digest_step = -1;
    p->device_peak_bytes = -1;
    p->config.stage = -1;
    p->config.sub_group_size = p->config.reduce_bucket_size = p->config.prefetch_bucket_size = -1;
    p->config.pin_memory = -1;
    p->config.world_size = -1;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    int rc = 0;
    int64_t v;
    char kind[40];
    if (!json_is_object(root)) {
        rc = rl_errf(e, RL_EINVAL, "%s: not a JSON object (a ratiolab-probe document)", path);
        goto out;
    }
    if ((rc = get_i64(root, "", "schema_version", VAL_PROBE_MAX_COUNT, path, &v, e)))
        goto out;
    if (v != 1) {
        rc = rl_errf(e, RL_EINVAL, "%s: schema_version: %lld; allowed: 1", path, (long long)v);
        goto out;
    }
    if ((rc = get_str(root, "kind", path, kind, sizeof kind, e)))
        goto out;
    if (strcmp(kind, "ratiolab-probe") != 0) {
        rc = rl_errf(e, RL_EINVAL, "%s: kind: '%s'; allowed: 'ratiolab-probe'", path, kind);
        goto out;
    }
    int64_t rank;
    if ((rc = get_i64(root, "", "rank", VAL_PROBE_MAX_COUNT, path, &rank, e)))
        goto out;
    if ((rc = get_i64(root, "", "world_size", VAL_PROBE_MAX_COUNT, path, &v, e)))
        goto out;
    if (v < 1 || v > 1 << 20) {
        rc = rl_errf(e, RL_EINVAL, "%s: world_size: %lld; allowed: 1..%d", path, (long long)v, 1 << 20);
        goto out;
    }
    if (rank >= v) {
        rc = rl_errf(e, RL_EINVAL, "%s: rank: %lld; allowed: 0..world_size - 1 (0..%lld)", path, (long long)rank,
                     (long long)v - 1);
        goto out;
    }
    p->rank = rank < 0 ? 0 : (int)rank;
    p->world_size = (int)v;
    p->config.world_size = v;
    if ((rc = get_i64(root, "", "dp_world_size", VAL_PROBE_MAX_COUNT, path, &v, e)))
        goto out;
    if (v > p->world_size || v == 0) {
        rc = rl_errf(e, RL_EINVAL, "%s: dp_world_size: %lld; allowed: 1..world_size (%d)", path, (long long)v,
                     p->world_size);
        goto out;
    }
    p->dp = v > 0 ? (int)v : p->world_size;
    if ((rc = get_str(root, "deepspeed_version", path, p->ds_version_text, sizeof p->ds_version_text, e)) ||
        (rc = get_str(root, "torch_version", path, p->torch_version, sizeof p->torch_version, e)) ||
        (rc = get_str(root, "accelerator.name", path, p->accelerator, sizeof p->accelerator, e)) ||
        (rc = get_str(root, "memory.device_source", path, p->device_source, sizeof p->device_source, e)) ||
        (rc = get_str(root, "dtype", path, p->config.dtype, sizeof p->config.dtype, e)))
        goto out;
    if (!p->accelerator[0]) {
        rc = rl_errf(e, RL_EINVAL, "%s: accelerator.name: missing (DeepSpeed's accelerator name)", path);
        goto out;
    }
    {
        /* "0.16.0+abc123" and "0.19.8" alike: the release is the first three numbers. */
        char ver[32];
        snprintf(ver, sizeof ver, "%s", p->ds_version_text);
        ver[strcspn(ver, "+-")] = 0;
        if (!ver[0]) {
            rc = rl_errf(e, RL_EINVAL, "%s: deepspeed_version: missing", path);
            goto out;
        }
        if ((rc = rl_parse_version("deepspeed_version", ver, &p->config.version, e))) {
            rl_err_prefix(e, "%s", path);   /* the path is data: it may hold '%' */
            goto out;
        }
        p->config.have_version = true;
    }
    if (p->config.dtype[0] && strcmp(p->config.dtype, "bf16") && strcmp(p->config.dtype, "fp16") &&
        strcmp(p->config.dtype, "fp32")) {
        rc = rl_errf(e, RL_EINVAL, "%s: dtype: '%s'; allowed: bf16, fp16, fp32", path, p->config.dtype);
        goto out;
    }
    if ((rc = read_zero(root, path, &p->config, e)) ||
        (rc = get_i64(root, "", "memory.device_after_init_bytes", VAL_PROBE_MAX_BYTES, path,
                      &p->device_after_init_bytes, e)) ||
        (rc = get_i64(root, "", "memory.host_rss_bytes", VAL_PROBE_MAX_BYTES, path, &p->host_rss_bytes, e)) ||
        (rc = get_i64(root, "", "memory.host_locked_bytes", VAL_PROBE_MAX_BYTES, path, &p->host_locked_bytes, e)) ||
        (rc = get_i64(root, "", "memory.host_pinned_bytes", VAL_PROBE_MAX_BYTES, path, &p->host_pinned_bytes, e)) ||
        (rc = get_i64(root, "", "probe_overhead_ns", VAL_PROBE_MAX_TOTAL_NS, path, &p->overhead_ns, e)) ||
        (rc = get_i64(root, "", "probe_overhead_cpu_ns", VAL_PROBE_MAX_TOTAL_NS, path, &p->overhead_cpu_ns, e)) ||
        (rc = read_steps(root, path, p, e)) ||
        (rc = read_subgroups(root, path, p, e)) ||
        (rc = get_str(root, "placement.optimizer_class", path, p->optimizer_class, sizeof p->optimizer_class, e)) ||
        (rc = get_str(root, "placement.backup_optimizer_class", path, p->backup_class, sizeof p->backup_class, e)) ||
        (rc = get_str(root, "digest.sha256", path, p->digest, sizeof p->digest, e)) ||
        (rc = get_i64(root, "", "digest.step", VAL_PROBE_MAX_COUNT, path, &v, e)) ||
        (rc = get_str(root, "oracle.fp32_full_sha256", path, p->digest_full, sizeof p->digest_full, e)) ||
        (rc = read_accumulation(root, path, p, e)) || (rc = read_param_groups(root, path, p, e)))
        goto out;
    p->digest_step = (int)v;
out:
    json_decref(root);
    if (rc)
        val_probe_free(p);
    return rc;
}

int val_probe_read(const char *path, struct val_probe *p, struct rl_err *e)
{
    memset(p, 0, sizeof *p);
    char *text;
    size_t len;
    int rc = rl_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = val_probe_parse(text, len, path, p, e);
    free(text);
    return rc;
}

void val_probe_free(struct val_probe *p)
{
    if (!p)
        return;
    free(p->sub);
    p->sub = NULL;
    p->n_sub = 0;
    plan_group_spec_free(&p->groups);
}

int val_probe_rank_path(const char *rank0_path, int rank, char *out, size_t n, struct rl_err *e)
{
    const char *slash = strrchr(rank0_path, '/');
    const char *base = slash ? slash + 1 : rank0_path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)   /* "probe" and ".probe" have no extension, as Python's splitext says */
        dot = base + strlen(base);
    int k = snprintf(out, n, "%.*s.rank%d%s", (int)(dot - rank0_path), rank0_path, rank, *dot ? dot : ".json");
    if (k < 0 || (size_t)k >= n)
        return rl_errf(e, RL_EINVAL, "%s: the rank %d file's name is longer than %zu bytes", rank0_path, rank, n - 1);
    return 0;
}

int val_probe_same_run(const struct val_probe *a, const struct val_probe *b, const char *b_path, int rank,
                       struct rl_err *e)
{
    const char *more = "; a rank file of another run (or an older file) lies beside rank 0's: every rank's file "
                       "comes from one launch";
    if (b->rank != rank)
        return rl_errf(e, RL_EINVAL, "%s: rank: %d; allowed: %d (the file ratiolab_probe names for rank %d)", b_path,
                       b->rank, rank, rank);
    const struct trace_ds_config *x = &a->config, *y = &b->config;
    const struct {
        const char *field;   /* the JSON path */
        long long mine, r0;  /* this rank's value and rank 0's */
    } ints[] = {
        {"world_size", b->world_size, a->world_size},
        {"dp_world_size", b->dp, a->dp},
        {"zero.sub_group_size", (long long)y->sub_group_size, (long long)x->sub_group_size},
        {"zero.reduce_bucket_size", (long long)y->reduce_bucket_size, (long long)x->reduce_bucket_size},
        {"zero.stage3_prefetch_bucket_size", (long long)y->prefetch_bucket_size, (long long)x->prefetch_bucket_size},
        {"zero.offload_optimizer.pin_memory", y->pin_memory, x->pin_memory},
        {"steps (the number of step records)", b->n_steps, a->n_steps},
        {"digest.step", b->digest_step, a->digest_step},
    };
    for (size_t i = 0; i < RL_COUNT(ints); i++)
        if (ints[i].mine != ints[i].r0)
            return rl_errf(e, RL_EINVAL, "%s: %s: %lld, rank 0's file says %lld%s", b_path, ints[i].field, ints[i].mine,
                           ints[i].r0, more);
    const struct {
        const char *field;   /* the JSON path */
        const char *mine, *r0; /* this rank's value and rank 0's */
    } strs[] = {
        {"deepspeed_version", b->ds_version_text, a->ds_version_text},
        {"torch_version", b->torch_version, a->torch_version},
        {"accelerator.name", b->accelerator, a->accelerator},
        {"dtype", y->dtype, x->dtype},
        {"zero.offload_optimizer.device", y->offload_device, x->offload_device},
    };
    char m[128], r0[128];
    for (size_t i = 0; i < RL_COUNT(strs); i++)
        if (strcmp(strs[i].mine, strs[i].r0) != 0)
            return rl_errf(e, RL_EINVAL, "%s: %s: '%s', rank 0's file says '%s'%s", b_path, strs[i].field,
                           rl_text_data(m, sizeof m, strs[i].mine), rl_text_data(r0, sizeof r0, strs[i].r0), more);
    if (x->have_ratio != y->have_ratio || (x->have_ratio && x->ratio != y->ratio))
        return rl_errf(e, RL_EINVAL, "%s: zero.offload_optimizer.ratio: %.6g, rank 0's file says %.6g%s", b_path,
                       y->have_ratio ? y->ratio : -1.0, x->have_ratio ? x->ratio : -1.0, more);
    return 0;
}

enum val_status val_probe_ranks_digest(const struct val_probe *pr, int n, char *detail, size_t n_detail)
{
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!pr[i].digest_full[0])
            continue;
        if (first < 0) {
            first = i;
        } else if (strcmp(pr[i].digest_full, pr[first].digest_full) != 0) {
            snprintf(detail, n_detail, "the gathered fp32 digest of rank %d differs from rank %d's: the ranks did not "
                     "hold one model", pr[i].rank, pr[first].rank);
            return VAL_FAIL;
        }
    }
    int with = 0;
    for (int i = 0; i < n; i++)
        with += pr[i].digest_full[0] != 0;
    if (first < 0) {
        snprintf(detail, n_detail, "no rank recorded a gathered digest (oracle.fp32_full_sha256)");
        return VAL_INFO;
    }
    snprintf(detail, n_detail, "the gathered fp32 digest is the same on the %d of %d ranks that recorded it", with, n);
    return VAL_PASS;
}

bool val_probe_stock_cpu(const struct val_probe *p) { return strcmp(p->accelerator, "cpu") == 0; }

bool val_probe_cpu_accelerator(const struct val_probe *p)
{
    return strcmp(p->device_source, "process_rss") == 0 || strncmp(p->accelerator, "cpu", 3) == 0;
}

/* ---- judging --------------------------------------------------------------------------------- */

static struct val_probe_check *check(struct val_probe_result *r, int k, const char *name, enum val_status s)
{
    struct val_probe_check *c = &r->checks[k];
    c->name = name;
    c->status = s;
    if (s == VAL_FAIL)
        r->overall = VAL_FAIL;
    return c;
}

static int64_t ledger_bytes(const struct plan *p, const char *name)
{
    for (int i = 0; i < p->n_buffers; i++)
        if (strcmp(p->buffers[i].name, name) == 0)
            return p->buffers[i].bytes;
    return 0;
}

static double gib(int64_t b) { return (double)b / RL_GIB; }

/* The sub-group DeepSpeed offloaded: its own test, subgroup_to_device[i] == 'cpu'. */
static bool offloaded(const struct val_probe_subgroup *g) { return strcmp(g->assigned_device, "cpu") == 0; }

static void check_subgroups(const struct plan *p, const struct val_probe *pr, struct val_probe_result *r)
{
    int bad = -1;
    for (int i = 0; i < pr->n_sub && i < p->n_subgroups && bad < 0; i++)
        if (pr->sub[i].numel != p->subgroups[i].numel || pr->sub[i].param_group != p->subgroups[i].group)
            bad = i;
    struct val_probe_check *c;
    /* The run's param groups: the largest sub-group's group + 1 (an empty group has no sub-group). */
    int run_groups = 0;
    for (int i = 0; i < pr->n_sub; i++)
        if (pr->sub[i].param_group + 1 > run_groups)
            run_groups = pr->sub[i].param_group + 1;
    char groups[160] = "";
    if (run_groups != p->n_groups)
        snprintf(groups, sizeof groups, " (the run has %d param groups, the plan %d: give the run's grouping with "
                 "--param-groups FILE, or a probe that records the groups' names)", run_groups, p->n_groups);
    if (pr->n_sub != p->n_subgroups) {
        c = check(r, VAL_PROBE_SUBGROUPS, "subgroups", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "DeepSpeed made %d sub-groups, the plan %d%s", pr->n_sub, p->n_subgroups,
                 groups);
    } else if (bad >= 0) {
        c = check(r, VAL_PROBE_SUBGROUPS, "subgroups", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "sub-group %d: DeepSpeed %lld elements in param group %d, the plan %lld "
                 "in group %d%s", bad, (long long)pr->sub[bad].numel, pr->sub[bad].param_group,
                 (long long)p->subgroups[bad].numel, p->subgroups[bad].group, groups);
    } else {
        c = check(r, VAL_PROBE_SUBGROUPS, "subgroups", VAL_PASS);
        snprintf(c->detail, sizeof c->detail, "%d sub-groups, every size and param group equal to the plan's",
                 pr->n_sub);
    }
}

static void check_placement(const struct plan *p, const struct val_probe *pr, struct val_probe_result *r)
{
    struct val_probe_check *c;
    if (val_probe_stock_cpu(pr)) {
        /* Every sub-group passes DeepSpeed's CPU test: what can be checked is that every one of them
         * ran the CPU optimizer, as DeepSpeed's code says it must under this accelerator. */
        int other = -1;
        for (int i = 0; i < pr->n_sub && other < 0; i++)
            if (pr->sub[i].optimizer[0] && strcmp(pr->sub[i].optimizer, "optimizer") != 0)
                other = i;
        c = check(r, VAL_PROBE_PLACEMENT, "placement", other < 0 ? VAL_PASS : VAL_FAIL);
        if (other < 0)
            snprintf(c->detail, sizeof c->detail, "CPU accelerator named \"cpu\": DeepSpeed's offload test is true for "
                     "every sub-group, all %d ran %s; the ratio's split (the plan: %d of %d on the CPU) is not "
                     "observable here (a device name other than \"cpu\" shows it)", pr->n_sub,
                     pr->optimizer_class[0] ? pr->optimizer_class : "the CPU optimizer", p->cpu_subgroups, p->n_subgroups);
        else
            snprintf(c->detail, sizeof c->detail, "CPU accelerator named \"cpu\", yet sub-group %d's state is held by "
                     "%s", other, pr->sub[other].optimizer);
        return;
    }
    int bad = -1, holder = -1;
    for (int i = 0; i < pr->n_sub && i < p->n_subgroups; i++) {
        bool plan_cpu = p->subgroups[i].cpu_numel > 0;
        if (offloaded(&pr->sub[i]) != plan_cpu && bad < 0)
            bad = i;
        const char *want = offloaded(&pr->sub[i]) ? "optimizer" : "backup_optimizer";
        if (pr->sub[i].optimizer[0] && strcmp(pr->sub[i].optimizer, want) != 0 && holder < 0)
            holder = i;
    }
    if (pr->n_sub != p->n_subgroups) {
        c = check(r, VAL_PROBE_PLACEMENT, "placement", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "not compared: the sub-groups differ");
    } else if (bad >= 0) {
        c = check(r, VAL_PROBE_PLACEMENT, "placement", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "sub-group %d: DeepSpeed put it on '%s', the plan (%s) on the %s", bad,
                 pr->sub[bad].assigned_device[0] ? pr->sub[bad].assigned_device : "(no offload)",
                 plan_policy_name(p->policy), p->subgroups[bad].cpu_numel > 0 ? "CPU" : "device");
    } else if (holder >= 0) {
        c = check(r, VAL_PROBE_PLACEMENT, "placement", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "sub-group %d is assigned '%s' but its state is held by %s (%s)", holder,
                 pr->sub[holder].assigned_device, pr->sub[holder].optimizer, pr->sub[holder].optimizer_class);
    } else {
        c = check(r, VAL_PROBE_PLACEMENT, "placement", VAL_PASS);
        snprintf(c->detail, sizeof c->detail, "%d of %d sub-groups on the CPU (%s), as the plan's %s rule says; "
                 "each one's state held by the optimizer its device calls for", p->cpu_subgroups, p->n_subgroups,
                 pr->optimizer_class[0] ? pr->optimizer_class : "CPU optimizer", plan_policy_name(p->policy));
    }
}

static void check_ratio(const struct plan *p, const struct val_probe *pr, struct val_probe_result *r)
{
    r->observed_cpu_numel = r->observed_numel = 0;
    for (int i = 0; i < pr->n_sub; i++) {
        r->observed_numel += pr->sub[i].numel;
        if (offloaded(&pr->sub[i]))
            r->observed_cpu_numel += pr->sub[i].numel;
    }
    double obs = r->observed_numel ? (double)r->observed_cpu_numel / (double)r->observed_numel : 0;
    struct val_probe_check *c;
    if (val_probe_stock_cpu(pr)) {
        c = check(r, VAL_PROBE_RATIO, RL_KEY_HONORED_RATIO, VAL_INFO);
        snprintf(c->detail, sizeof c->detail, "requested %.4g; on a GPU the plan honors %.4f (%lld of %lld elements); "
                 "this run updated every element on the CPU (CPU accelerator named \"cpu\")", p->requested_ratio,
                 p->honored_ratio, (long long)p->cpu_numel, (long long)p->per_rank_numel);
        return;
    }
    bool ok = r->observed_cpu_numel == p->cpu_numel && r->observed_numel == p->per_rank_numel;
    c = check(r, VAL_PROBE_RATIO, RL_KEY_HONORED_RATIO, ok ? VAL_PASS : VAL_FAIL);
    snprintf(c->detail, sizeof c->detail, "requested %.4g, DeepSpeed honored %.4f (%lld of %lld elements), the plan "
             "%.4f (%lld of %lld)", p->requested_ratio, obs, (long long)r->observed_cpu_numel,
             (long long)r->observed_numel, p->honored_ratio, (long long)p->cpu_numel, (long long)p->per_rank_numel);
}

/* The optimizer's own tensors, summed by side, against the ledger's buffers of the same name. */
static void check_ledger(const struct plan *p, const struct val_probe *pr, struct val_probe_result *r)
{
    struct val_probe_check *c;
    if (p->ledger_kind == PLAN_LEDGER_EXEC) {
        c = check(r, VAL_PROBE_LEDGER, "memory_ledger", VAL_INFO);
        snprintf(c->detail, sizeof c->detail, "the exec ledger describes ratiolab's executor, not DeepSpeed");
        return;
    }
    int64_t fp32[2] = {0, 0}, state[2] = {0, 0}, model = 0;
    bool have_model = true, stock = val_probe_stock_cpu(pr);
    for (int i = 0; i < pr->n_sub; i++) {
        int side = offloaded(&pr->sub[i]);
        fp32[side] += pr->sub[i].fp32_bytes;
        state[side] += pr->sub[i].state_bytes;
        if (pr->sub[i].model_partition_bytes < 0)
            have_model = false;
        else
            model += pr->sub[i].model_partition_bytes;
    }
    int64_t l_fp32[2] = {ledger_bytes(p, "fp32_partitions_gpu"), ledger_bytes(p, "fp32_partitions_cpu")};
    int64_t l_state[2] = {ledger_bytes(p, "adam_m_gpu") + ledger_bytes(p, "adam_v_gpu"),
                          ledger_bytes(p, "adam_m_cpu") + ledger_bytes(p, "adam_v_cpu")};
    int64_t l_model = ledger_bytes(p, "fp16_partitions");
    bool ok;
    if (stock)   /* one side only: the totals */
        ok = fp32[0] + fp32[1] == l_fp32[0] + l_fp32[1] && state[0] + state[1] == l_state[0] + l_state[1];
    else
        ok = fp32[0] == l_fp32[0] && fp32[1] == l_fp32[1] && state[0] == l_state[0] && state[1] == l_state[1];
    if (have_model && model != l_model)
        ok = false;
    c = check(r, VAL_PROBE_LEDGER, "memory_ledger", ok ? VAL_PASS : VAL_FAIL);
    int n = snprintf(c->detail, sizeof c->detail, "fp32 master %lld+%lld B (device+CPU) vs ledger %lld+%lld; Adam "
                     "state %lld+%lld vs %lld+%lld", (long long)fp32[0], (long long)fp32[1], (long long)l_fp32[0],
                     (long long)l_fp32[1], (long long)state[0], (long long)state[1], (long long)l_state[0],
                     (long long)l_state[1]);
    if (n > 0 && (size_t)n < sizeof c->detail)
        snprintf(c->detail + n, sizeof c->detail - (size_t)n, "; model partition %s%lld vs %lld%s",
                 have_model ? "" : "not recorded, ", (long long)model, (long long)l_model,
                 stock ? " (CPU accelerator named \"cpu\": totals compared)" : "");
}

static void check_device(const struct plan *p, const struct val_probe *pr, const struct val_probe_opts *o,
                         struct val_probe_result *r)
{
    struct val_probe_check *c;
    int64_t led = p->stages[PLAN_STAGE_ZERO_OPTIMIZER].gpu_bytes;
    if (val_probe_cpu_accelerator(pr)) {
        c = check(r, VAL_PROBE_DEVICE_MEMORY, "device_memory", VAL_INFO);
        snprintf(c->detail, sizeof c->detail, "CPU accelerator: \"device\" memory is the process RSS (%.3f GiB after "
                 "init, peak %.3f GiB in a step), interpreter, torch and host buffers included: not comparable with "
                 "the ledger's %.3f GiB of GPU memory", gib(pr->device_after_init_bytes), gib(pr->device_peak_bytes),
                 gib(led));
        return;
    }
    if (pr->device_after_init_bytes < 0) {   /* a GPU run's probe always records it: a missing figure fails */
        c = check(r, VAL_PROBE_DEVICE_MEMORY, "device_memory", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "the probe recorded no device memory (memory.device_after_init_bytes "
                 "is null) on a GPU run: nothing to hold against the ledger's %.3f GiB", gib(led));
        return;
    }
    int64_t d = pr->device_after_init_bytes - led;
    bool ok = (d < 0 ? -d : d) <= o->tol_bytes;
    c = check(r, VAL_PROBE_DEVICE_MEMORY, "device_memory", ok ? VAL_PASS : VAL_FAIL);
    snprintf(c->detail, sizeof c->detail, "after init %.3f GiB (%s) vs ledger %.3f GiB at %s, diff %+.3f GiB "
             "(tolerance %.3f); peak in a step %.3f GiB", gib(pr->device_after_init_bytes), pr->device_source,
             gib(led), plan_stage_name(PLAN_STAGE_ZERO_OPTIMIZER), gib(d), gib(o->tol_bytes), gib(pr->device_peak_bytes));
}

static void check_time(const struct val_probe *pr, const struct val_probe_opts *o, struct val_probe_result *r)
{
    struct val_probe_check *c;
    double meas = (double)pr->step_median_ns * 1e-6, pred = (double)o->predicted_step_ns * 1e-6;
    if (pr->step_median_ns < 0 && !val_probe_cpu_accelerator(pr)) {   /* a GPU run's probe times every step */
        c = check(r, VAL_PROBE_STEP_TIME, "step_time", VAL_FAIL);
        snprintf(c->detail, sizeof c->detail, "no step recorded (steps is empty or null) on a GPU run: nothing to "
                 "hold against the predicted %.1f ms", pred);
        return;
    }
    if (pr->step_median_ns < 0 || o->predicted_step_ns <= 0) {
        c = check(r, VAL_PROBE_STEP_TIME, "step_time", VAL_INFO);
        snprintf(c->detail, sizeof c->detail, "%s", pr->step_median_ns < 0 ? "no step recorded" : "no prediction");
        return;
    }
    double err = (meas - pred) / pred * 100;
    if (val_probe_cpu_accelerator(pr)) {
        c = check(r, VAL_PROBE_STEP_TIME, "step_time", VAL_INFO);
        snprintf(c->detail, sizeof c->detail, "measured %.1f ms on the CPU accelerator, predicted %.1f ms for the "
                 "hardware profile: a CPU run's step is not the GPU step predict models", meas, pred);
        return;
    }
    bool ok = fabs(err) <= o->tol_time_pct;
    c = check(r, VAL_PROBE_STEP_TIME, "step_time", ok ? VAL_PASS : VAL_FAIL);
    snprintf(c->detail, sizeof c->detail, "measured %.1f ms (median of %d step%s), predicted %.1f ms, error %+.1f %% "
             "(tolerance %.1f %%)", meas, pr->n_steps > 1 ? pr->n_steps - 1 : 1,
             pr->n_steps > 2 ? "s after the first" : "", pred, err, o->tol_time_pct);
}

void val_probe_compare(const struct plan *p, const struct val_probe *pr, const struct val_probe_opts *o,
                       struct val_probe_result *r)
{
    memset(r, 0, sizeof *r);
    r->overall = VAL_PASS;
    check_subgroups(p, pr, r);
    check_placement(p, pr, r);
    check_ratio(p, pr, r);
    check_ledger(p, pr, r);
    check_device(p, pr, o, r);
    check_time(pr, o, r);
}

/* ---- the run's configuration against the one validated with ------------------------------------ */

/* The precedence is plan/inputs.c's (plan_inputs_apply_facts); this hands it the run's facts. */
int val_facts_apply(const struct trace_ds_config *f, int dp, const char *what, const struct plan_inputs *in,
                    struct plan_setup *c, struct rl_err *e)
{
    struct plan_run_facts r = {.have_version = f->have_version, .version = f->version, .stage = f->stage,
                               .have_ratio = f->have_ratio, .ratio = f->ratio, .sub_group_size = f->sub_group_size,
                               .reduce_bucket_size = f->reduce_bucket_size,
                               .prefetch_bucket_size = f->prefetch_bucket_size, .pin_memory = f->pin_memory,
                               .dp = dp};
    snprintf(r.offload_device, sizeof r.offload_device, "%s", f->offload_device);
    snprintf(r.dtype, sizeof r.dtype, "%s", f->dtype);
    return plan_inputs_apply_facts(in, &r, what, c, e);
}
